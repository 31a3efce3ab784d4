//! Knobs: one tunable file each (`queue/scheduler`, `queue/iosched/fifo_batch`,
//! `queue/read_ahead_kb`, `/proc/sys/vm/dirty_ratio`, ...).
//!
//! - [`catalogue`]: what the kernel sources say about known knobs (unit, safe bounds, caps).
//! - [`discover`]: which knobs a device offers right now (iosched/ is listed, not hard-coded).
//! - [`sched`]: the host-wide CPU-scheduler knobs (`/proc/sys/kernel/sched_*`, debugfs
//!   `sched/` and its feature flags), and whether debugfs lets them be read.
//! - [`features`]: the scheduler's feature flags the catalogue knows, and how `sched/features`
//!   reads and writes them.
//! - [`zoned`]: the `scheduler` domain of a host-managed zoned disk (zone-aware schedulers only
//!   before Linux 6.10).
//! - [`apply`]: the journaled write path. Every knob change in sweetspot goes through it.
//! - [`restore`]: puts journaled originals back; [`vet`] re-validates every journal row
//!   against the catalogue before it is written.
//! - `write`: one knob write read back and checked, and whether a knob holds a value, used by
//!   both; `apply` imports `restore` (to settle foreign entries first), never the reverse.
//!
//! Knob names are the file's base name (`fifo_batch`, `read_ahead_kb`, `dirty_ratio`); the
//! active scheduler is the knob `scheduler`.

pub mod apply;
pub mod catalogue;
pub mod discover;
pub mod features;
pub mod io;
pub mod restore;
pub mod sched;
mod validate;
pub mod vet;
mod write;
pub mod zoned;

pub use crate::types::{ApplyOrder, Domain, KnobValue, Setting, setting_label};
use serde::Serialize;
use std::path::PathBuf;

/// One knob as offered by a device right now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Knob {
    /// Base name, e.g. `fifo_batch`.
    pub name: String,
    /// Absolute path of the file (under the configured sysfs/procfs root).
    pub path: PathBuf,
    /// Apply/restore order, which also says where it lives.
    pub order: ApplyOrder,
    /// Accepted values.
    pub domain: Domain,
    /// Unit, e.g. `ms`, `KiB`, `requests`, `%`, `bytes`, `µs`, or empty.
    pub unit: String,
    /// The scheduler this knob belongs to (iosched/ files), if any.
    pub scheduler: Option<String>,
    /// Value read now.
    pub current: KnobValue,
    /// True when the catalogue knows this knob; unknown iosched files are still listed.
    pub known: bool,
    /// Where the catalogue's facts come from (a kernel source file), if known.
    pub source: Option<String>,
}

#[cfg(test)]
mod restore_tests;
#[cfg(test)]
mod sched_tests;
#[cfg(test)]
mod tests;
