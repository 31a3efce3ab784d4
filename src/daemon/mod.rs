//! `sweetspot daemon`: a small service that keeps devices at their sweet spot.
//!
//! - [`config`]: the TOML config (`/etc/sweetspot/daemon.toml`, defaults when absent).
//! - [`manage`]: per poll, profiles for disks seen for the first time (also ones attached after
//!   start) and drift of managed values ("contested by another writer": re-applied once, then
//!   left alone).
//! - [`metrics`]: Prometheus metrics for node_exporter's textfile collector (`metrics_dir`).
//! - [`due`]: per poll, whether an enrolled device is due for a retune and what it waits
//!   for (quiet hours, [`idle`]ness, a contested knob, another writer).
//! - [`retune`]: a retune in a thread of its own, stopped when the machine stops being idle.
//! - [`status`]: what `sweetspot status` shows per enrolled device.
//! - [`log`]: log lines for journald (`<N>` priority prefixes).
//! - [`trim`]: the start-up code's pages leave the resident set after the first poll.
//! - `run` (the `daemon` feature: tokio, sysinfo): the event loop. The state file `status`
//!   reads ([`state_path`]) is written only when what it says changes: idle, nothing is
//!   written.
//! - [`uevent`]: disks appearing, from the kernel's netlink uevents: a disk attached after
//!   the start gets its profile at once, not at the next poll.
//!
//! It runs on tokio's current-thread runtime (one thread: small enough for an SD-card
//! board): a timer every `poll_s` seconds (drift, idleness, retunes; disks too when the uevent
//! socket cannot be opened, else every `RESCAN_S`), the kernel's uevents for disks that come
//! and go, SIGTERM/SIGINT to
//! stop (exit 0), SIGHUP to reload
//! the config (a bad one keeps the old and says why). At start it first finishes what an
//! interrupted tune left in the journal (`crate::undo::recover`).
//!
//! A retune runs in a second thread (the tune is blocking work); the loop polls every
//! `poll_s` seconds, every 2 s while a retune runs, and stops the retune
//! (`crate::signals::request_stop`) when other processes' CPU use rises above the idle
//! threshold or SIGTERM arrives. Until it ends, its device is the retune's: the manager
//! neither applies nor checks it (`manage::Busy`), and a retune that ended is reaped before
//! the manager looks, so its restore is never taken for another writer. However a retune
//! ends (done, stopped, failed), its device goes back to its sweet spot at once through the
//! manager's journaled path, also when the daemon is stopping: it never exits with the
//! device at the kernel's values the retune started from.

// Without the `daemon` feature only `status` is built on this module: the daemon's own
// runtime (the manager, idleness, metrics, the retune's wait) is compiled but dead there.
#![cfg_attr(not(feature = "daemon"), allow(dead_code))]

pub mod config;
pub mod due;
pub mod idle;
pub mod log;
pub mod manage;
pub mod metrics;
pub mod retune;
pub mod status;
#[cfg(feature = "daemon")]
pub mod trim;
#[cfg(feature = "daemon")]
pub mod uevent;
pub mod write_budget;

#[cfg(feature = "daemon")]
mod run;
#[cfg(feature = "daemon")]
pub(crate) use run::run;

use crate::Result;
use crate::profile::build::{self, MatchBy, Select};
use crate::store::Store;
use crate::sysroot::SysRoot;
use std::path::{Path, PathBuf};

/// Where the daemon writes its state for `status`: beside the database,
/// `<db>.daemon.json`.
pub fn state_path(db: &Path) -> PathBuf {
    let mut s = db.as_os_str().to_owned();
    s.push(".daemon.json");
    PathBuf::from(s)
}

/// The database the daemon and `status` use: an explicit `--db` or `SWEETSPOT_DB`
/// (`given`) wins over the config's `db`, which wins over the built-in default (`cli_db`
/// when not `given`): the usual command line > environment > config file > default order.
pub(crate) fn db_path(config_db: Option<&Path>, cli_db: &Path, given: bool) -> PathBuf {
    match config_db {
        Some(c) if !given => c.to_path_buf(),
        _ => cli_db.to_path_buf(),
    }
}

/// The profile the daemon keeps: the database's latest sweet spots of enrolled devices, and
/// `[host]` as `profile apply` applies it: the host-wide knobs of those sweet spots and of the
/// host's own (`tune --host`), which wins.
pub(crate) fn profile(
    store: &Store,
    root: &SysRoot,
    cfg: &config::DaemonConfig,
) -> Result<crate::profile::Profile> {
    let only = match &cfg.enroll {
        config::Enroll::Identities(ids) => Some(ids.as_slice()),
        config::Enroll::Tuned(_) => None,
    };
    let keep = cfg.ruling_policies();
    let sel = Select {
        device: None,
        policy: None,
        by: MatchBy::Identity,
        only,
        export: false,
        keep: Some(&keep),
    };
    build::build(store, root, &sel)
}
