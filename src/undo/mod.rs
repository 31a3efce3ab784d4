//! Undo: putting journaled knobs back once the writer that changed them is gone.
//!
//! Every knob write goes through [`crate::knob::apply`], which journals the original in the
//! store ([`crate::store::journal`], owners [`crate::types::Owner`]) durably before it writes;
//! [`crate::knob::restore`] writes originals back. This module decides *whose* entries may be
//! written back *when*: a writer holds its device's lock ([`crate::lock`]) while it runs, so an
//! entry is put back only under that lock, once its writer is gone.
//!
//! - `recover`: a killed tune (a `tunes` row still `running` whose lock is free) or a killed
//!   `bench` has its own entries restored and the tune is marked `recovered`
//!   (`recover`, `recover_benches`); `tune`, `bench`, `restore` and the daemon call it
//!   first.
//! - `idle`: `restore`'s own work, every open entry whose writer is gone (`restore_idle`);
//!   `left`: what it left alone, by writer and file (`left_alone`).
//! - `writers`: who writes a knob now, a running tune's lock (`alive`, `tune_lock`), and
//!   the lock a restore takes before it writes.
//! - `command`: the `sweetspot restore` command line messages name (`undo_command`).
//! - `other_roots`: open entries journaled under other `--sysfs-root`/`--procfs-root` than
//!   this run's, which `restore` names by tree (`other_roots`).
//! - `leftovers`: what killed runs left on disk, swept by `restore` (`sweep_leftovers`).
//! - [`hostwide`]: which host-wide knobs (vm, CPU scheduler) `restore <DEVICE>` puts back, and
//!   which stay changed because another command journaled them too.
//! - [`killed_bench`]: the knobs a killed `bench` or `tune --scratch` left open, for `status`
//!   and `history` to name.
//!
//! It sits above [`crate::bench`] (a host tune's identity, the leftovers sweep) and below
//! [`crate::tune`], [`crate::daemon`] and the command line (`src/cli/`), which call it. The
//! sweep itself, [`crate::bench::stale`] with [`crate::bench::journal_db`] (which database
//! journals a scratch device), stays in `bench`: `bench` runs it before every scratch run,
//! so here it would make `bench` import `undo`.

mod command;
pub mod hostwide;
mod idle;
pub mod killed_bench;
mod left;
mod leftovers;
mod other_roots;
mod recover;
mod writers;

pub(crate) use command::undo_command;
pub(crate) use idle::{Restored, restore_idle};
pub(crate) use killed_bench::{OpenKnob, killed_bench_knobs, note};
pub(crate) use left::{LeftAlone, counted, left_alone};
pub(crate) use leftovers::sweep_leftovers;
pub(crate) use other_roots::other_roots;
pub(crate) use recover::recover;
#[cfg(test)]
pub(crate) use recover::{Recovered, recover_benches, recover_with};
pub(crate) use writers::alive;
#[cfg(test)]
pub(crate) use writers::tune_lock;

#[cfg(test)]
mod tests;
