//! `sweetspot daemon`: a small service that keeps devices at their sweet spot.
//!
//! - [`config`]: the TOML config (`/etc/sweetspot/daemon.toml`, defaults when absent).
//! - [`manage`]: per poll, profiles for disks seen for the first time (also ones attached after
//!   start) and drift of managed values ("contested by another writer": re-applied once, then
//!   left alone).
//! - [`status`]: what `sweetspot status` shows per enrolled device.
//!
//! It runs on tokio's current-thread runtime (one thread: small enough for an SD-card
//! board): a timer every `poll_s` seconds, SIGTERM/SIGINT to stop (exit 0), SIGHUP to reload
//! the config (a bad one keeps the old and says why). At start it first finishes what an
//! interrupted tune left in the journal ([`crate::tune::recover`]).
//!
//! Not in this version: retuning in idle windows. `status` says when a retune is due; run
//! `sweetspot tune --device D` for it.

pub mod config;
pub mod manage;
pub mod status;

use crate::profile::build::{self, MatchBy, Select};
use crate::store::Store;
use crate::sysroot::SysRoot;
use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// Where the daemon writes its state for `status`: beside the database,
/// `<db>.daemon.json`.
pub fn state_path(db: &Path) -> PathBuf {
    let mut s = db.as_os_str().to_owned();
    s.push(".daemon.json");
    PathBuf::from(s)
}

/// The profile the daemon keeps: the database's latest sweet spots of enrolled devices.
pub fn profile(
    store: &Store,
    root: &SysRoot,
    cfg: &config::Config,
) -> Result<crate::profile::Profile> {
    let sel = Select {
        device: None,
        policy: None,
        by: MatchBy::Identity,
    };
    let mut p = build::build(store, root, &sel)?;
    if let config::Enroll::Identities(ids) = &cfg.enroll {
        let wanted: Vec<crate::profile::Match> = ids
            .iter()
            .filter_map(|i| crate::profile::Match::from_identity(i))
            .collect();
        p.devices.retain(|d| wanted.contains(&d.matches));
    }
    Ok(p)
}

/// Runs the daemon until SIGTERM/SIGINT.
pub fn run(config_path: &Path, explicit: bool, root: &SysRoot, db: &Path) -> Result<()> {
    let mut cfg = config::load(config_path, explicit)?;
    let db = cfg.db.clone().unwrap_or_else(|| db.to_path_buf());
    let mut store = Store::open(&db)?;
    crate::tune::recover(&mut store, root)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .enable_io()
        .build()
        .map_err(|e| Error::io("starting the runtime", e))?;
    rt.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        let sig = |k| signal(k).map_err(|e| Error::io("installing signal handlers", e));
        let (mut term, mut int, mut hup) = (
            sig(SignalKind::terminate())?,
            sig(SignalKind::interrupt())?,
            sig(SignalKind::hangup())?,
        );
        let mut manager = manage::Manager::default();
        tracing::info!(
            "sweetspot daemon started (database {}, poll {} s)",
            db.display(),
            cfg.poll_s
        );
        loop {
            let profile = profile(&store, root, &cfg)?;
            for e in manager.poll(&mut store, root, &db, &profile)? {
                match e {
                    manage::Event::Contested(..)
                    | manage::Event::Failed(..)
                    | manage::Event::Busy(..) => {
                        tracing::warn!("{}", manage::describe(&e));
                    }
                    manage::Event::Applied(..) => tracing::info!("{}", manage::describe(&e)),
                }
            }
            status::write_state(&state_path(&db), &manager);
            let tick = tokio::time::sleep(std::time::Duration::from_secs(cfg.poll_s));
            tokio::select! {
                _ = tick => {}
                _ = term.recv() => break,
                _ = int.recv() => break,
                _ = hup.recv() => match config::load(config_path, explicit) {
                    Ok(c) => {
                        tracing::info!("config reloaded from {}", config_path.display());
                        cfg = c;
                    }
                    Err(e) => tracing::warn!("config not reloaded, keeping the old one: {e}"),
                },
            }
        }
        tracing::info!("sweetspot daemon stopping");
        let _ = std::fs::remove_file(state_path(&db));
        Ok(())
    })
}
