//! The daemon's event loop ([`run`]): the poll, the uevent socket, signals, retunes in their
//! thread (the `daemon` feature: tokio and sysinfo).

use super::idle::Sample;
use super::{
    config, db_path, due, idle, manage, metrics, profile, retune, state_path, status, trim, uevent,
};
use crate::device::Device;
use crate::store::Store;
use crate::store::tunes::SweetSpotRow;
use crate::sysroot::SysRoot;
use crate::{Error, Result};
use std::path::Path;

#[cfg(test)]
mod tests;

/// What the loop keeps between polls.
#[derive(Default)]
struct State {
    manager: manage::Manager,
    tracker: idle::Tracker,
    probe: idle::Probe,
    job: Option<retune::Job>,
    /// Per identity: no retune before this (Unix s) after a failure.
    failed: std::collections::BTreeMap<String, i64>,
    waits: std::collections::BTreeMap<String, due::Wait>,
    /// The profile and the enrolled devices' sweet spots, rebuilt only when a sweet spot was
    /// stored (its newest row id changed) or the config was reloaded.
    cache: Option<(i64, crate::profile::Profile, due::Spots)>,
    /// The disks of the last listing of `/sys/block` and when it was made ([`disks`]).
    disks: Option<(std::time::Instant, Vec<crate::device::Device>)>,
    /// True while the uevent socket is open and the tree is the real `/sys`: disks are then
    /// listed afresh only when an event says one came or went, or after [`RESCAN_S`];
    /// otherwise at every poll.
    watching: bool,
    /// What the state file holds: a poll that changes nothing writes nothing.
    written: status::Written,
    /// The metrics file's writer and the contest counter.
    metrics: metrics::Exporter,
}

/// With the uevent socket open, the disks are listed afresh at least this often, s: a
/// safety net (a lost event) and what notices a filesystem mounted on an enrolled disk (a
/// mount sends no disk uevent; a retune about to start reads its disk afresh in any case).
pub(crate) const RESCAN_S: u64 = 300;

/// The disks present: the last listing while it holds ([`State::disks`]), else listed now.
fn disks(st: &mut State, root: &SysRoot) -> Result<Vec<crate::device::Device>> {
    let fresh = |at: &std::time::Instant| {
        st.watching && at.elapsed() < std::time::Duration::from_secs(RESCAN_S)
    };
    match &st.disks {
        Some((at, d)) if fresh(at) => Ok(d.clone()),
        _ => {
            let d = crate::device::list(root)?;
            st.disks = Some((std::time::Instant::now(), d.clone()));
            Ok(d)
        }
    }
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Logs a finished retune (done, stopped or failed) and puts its device back at its sweet
/// spot at once: the retune started from the kernel's values (the profile's were put back
/// first, [`retune::Job::start`]) and a stopped or failed one leaves the device there, so
/// the manager forgets the device and applies its profile now ([`manage_now`], the journaled
/// path of every poll): the new sweet spot after a tune that stored one, else the old. Also
/// when the daemon is stopping, so that it does not exit with the device at the kernel's
/// values.
fn finished(
    st: &mut State,
    job: retune::Job,
    store: &mut Store,
    root: &SysRoot,
    db: &Path,
    cfg: &config::DaemonConfig,
) -> Result<()> {
    let (id, dev, stopping, host) = (
        job.identity.clone(),
        job.device.clone(),
        job.stopping.clone(),
        job.host,
    );
    match job.join() {
        Ok(rep) => tracing::info!(
            "{dev}: retuned (tune #{}, policy {}{}): {}",
            rep.tune_id.unwrap_or_default(),
            rep.policy,
            rep.resumed.map_or_else(String::new, |r| format!(
                ", resumed tune #{}: {} trials reused, {} new runs of {}",
                r.from_tune,
                r.trials,
                rep.runs.saturating_sub(r.runs),
                rep.runs
            )),
            if rep.significant {
                format!("sweet spot {}", crate::types::setting_label(&rep.best))
            } else {
                "keep the default (no setting beat it significantly)".to_string()
            }
        ),
        Err(Error::Interrupted) => tracing::warn!(
            "{dev}: retune stopped ({}); the device is restored and the finished trials are \
             kept",
            stopping.as_deref().unwrap_or("interrupted")
        ),
        Err(e) => {
            tracing::warn!("{dev}: retune failed: {e}");
            let wait = due::FAILED_BACKOFF_S.min(cfg.interval_s().ceil() as i64);
            st.failed.insert(id.clone(), unix_now() + wait);
        }
    }
    st.manager.forget(&id);
    if host {
        // Its policy's host-wide knobs were put back too: the profile's `[host]` again.
        st.manager.forget(manage::HOST);
    }
    crate::signals::clear_stop();
    st.disks = None;
    manage_now(st, store, root, db, cfg)
}

/// The manager's poll ([`manage::Manager::poll`]: profiles for disks it has not handled,
/// drift of managed knobs) with the current profile, logged: applied values at info,
/// failures, drift and busy disks at warn.
fn manage_now(
    st: &mut State,
    store: &mut Store,
    root: &SysRoot,
    db: &Path,
    cfg: &config::DaemonConfig,
) -> Result<()> {
    let (profile, _) = cached(st, store, root, cfg)?;
    let busy = busy(st);
    let present = disks(st, root)?;
    for e in st
        .manager
        .poll_disks(store, root, db, &profile, &busy, &present)?
    {
        st.metrics.saw(&e);
        match e {
            manage::Event::Applied(..) | manage::Event::Restored(..) => {
                tracing::info!("{}", manage::describe(&e))
            }
            _ => tracing::warn!("{}", manage::describe(&e)),
        }
    }
    Ok(())
}

/// What the retune in progress owns ([`manage::Busy`]): the manager leaves it alone.
fn busy(st: &State) -> manage::Busy {
    manage::Busy {
        device: st.job.as_ref().map(|j| j.identity.clone()),
        host: st.job.as_ref().is_some_and(|j| j.host),
    }
}

/// The profile and sweet spots, from the cache when no sweet spot was stored since.
fn cached(
    st: &mut State,
    store: &Store,
    root: &SysRoot,
    cfg: &config::DaemonConfig,
) -> Result<(crate::profile::Profile, due::Spots)> {
    let id = store.sweet_spot_max_id()?;
    match &st.cache {
        Some((at, p, s)) if *at == id => Ok((p.clone(), s.clone())),
        _ => {
            let p = profile(store, root, cfg)?;
            let s = due::latest_spots(store, cfg)?;
            // A device whose sweet spot is new (a tune by hand, another daemon's) gets it at
            // this poll, even if the manager has seen the device already.
            if let Some((_, old_p, old)) = &st.cache {
                for (identity, spot) in &s {
                    if old.get(identity).is_none_or(|o| o.id != spot.id) {
                        st.manager.forget(identity);
                    }
                }
                if manage::host_setting(old_p) != manage::host_setting(&p) {
                    st.manager.forget(manage::HOST);
                }
            }
            st.cache = Some((id, p.clone(), s.clone()));
            Ok((p, s))
        }
    }
}

/// One poll: profiles and drift, the end of a retune, idleness, and a retune to start.
fn poll(
    st: &mut State,
    store: &mut Store,
    root: &SysRoot,
    db: &Path,
    cfg: &config::DaemonConfig,
) -> Result<()> {
    // A retune that ended since the last poll is reaped first: its device is at the
    // kernel's values its restore put back, which the manager would take for another
    // writer's (contested, and backed off at the next). `finished` forgets the device and
    // applies its (new) sweet spot now, not a poll later.
    if st.job.as_ref().is_some_and(|j| j.is_finished())
        && let Some(j) = st.job.take()
    {
        finished(st, j, store, root, db, cfg)?;
    } else {
        manage_now(st, store, root, db, cfg)?;
    }
    let (_, spots) = cached(st, store, root, cfg)?;
    let devices = due::enrolled_of(disks(st, root)?, cfg, &spots);
    let names: Vec<String> = devices.iter().map(|(d, _)| d.name.clone()).collect();
    let sample = st.probe.sample(root, &names, st.job.is_some());
    stop_if_busy(st, &sample, cfg);
    st.tracker.update(sample, &cfg.idle);
    let now = unix_now();
    // Last poll's, so that a wait that stays the same is logged once, not at every poll.
    let before = std::mem::take(&mut st.waits);
    let changed = |w: &due::Wait| {
        before
            .values()
            .find(|b| b.device == w.device)
            .is_none_or(|b| b.kind != w.kind || b.detail != w.detail)
    };
    for (dev, spot) in &devices {
        if let Some(j) = st.job.as_ref().filter(|j| j.identity == dev.identity) {
            st.waits.insert(
                dev.identity.clone(),
                due::Wait {
                    device: dev.name.clone(),
                    kind: "tuning",
                    detail: format!("retuning with policy {} ({})", j.policy, j.why),
                    due_at: None,
                },
            );
            continue;
        }
        // `sweetspot restore` put it back: the admin's choice, left alone (not retuned).
        if let Some(r) = st.manager.released.get(&dev.identity) {
            st.waits.insert(
                dev.identity.clone(),
                due::Wait {
                    device: dev.name.clone(),
                    kind: "restored",
                    detail: format!(
                        "`sweetspot restore` put it back at {}: not managed nor retuned until \
                         the daemon restarts or reloads its config (SIGHUP)",
                        crate::types::time::rfc3339(r.at)
                    ),
                    due_at: None,
                },
            );
            continue;
        }
        let mut w = due::wait_of(
            dev,
            spot.as_ref(),
            cfg,
            &st.tracker,
            &st.manager.contested(&dev.identity),
            st.failed.get(&dev.identity).copied(),
            now,
        );
        // Another writer's own loads keep the device from looking idle: its lock says why
        // the retune waits better than the I/O figure that writer causes.
        if w.kind == "not idle"
            && let Some(who) = held_by_another(db, root, dev)
        {
            w.kind = "busy";
            w.detail = who;
        }
        if w.kind == "due"
            && let Some(j) = st.job.as_ref()
        {
            w.kind = "busy";
            w.detail = format!("waiting for the retune of {} in progress", j.device);
        }
        // Another owner's change of its knobs is journaled (an admin's `set`): the retune
        // would start from it and the journal's stack would lose the true original.
        if w.kind == "due"
            && let Some(why) = retune::contested(store, cfg, dev, spot.as_ref())?
        {
            w.kind = "contested";
            w.detail = why;
            if changed(&w) {
                tracing::warn!("{}: retune due, not started: {}", dev.name, w.detail);
            }
        }
        // A flash device whose retunes would write more than its budget waits.
        if w.kind == "due"
            && let Some((why, until)) = super::write_budget::over(store, cfg, dev, now)?
        {
            w.kind = "write budget";
            w.detail = why;
            w.due_at = Some(until);
            if changed(&w) {
                tracing::info!("{}: retune due, deferred: {}", dev.name, w.detail);
            }
        }
        if w.kind == "due" {
            start_due(st, store, root, db, cfg, dev, spot.as_ref(), &mut w);
        }
        st.waits.insert(dev.identity.clone(), w);
    }
    let dir = cfg.metrics_dir.as_deref();
    st.metrics.update(dir, store, root, &devices, &st.manager);
    status::write_state(&state_path(db), &st.manager, &st.waits, &mut st.written);
    Ok(())
}

/// `dev is in use by \`sweetspot tune\` (pid 42, tune 7, for 35 s)` when another writer (a CLI
/// `tune`, or any process) holds its lock ([`crate::lock::held`]), else `None`. The
/// daemon's own retune holds it too: the caller asks only for a device it is not retuning.
fn held_by_another(db: &Path, root: &SysRoot, dev: &Device) -> Option<String> {
    let path = crate::lock::path(db, root, &dev.identity);
    crate::lock::held(&path).then(|| {
        format!(
            "{} is in use by {}; a retune waits for it",
            dev.name,
            crate::lock::describe(&path, crate::lock::holder(&path))
        )
    })
}

/// Starts the retune of `dev`, due (`w`): from the disk as it is now (the listing may be
/// minutes old, [`RESCAN_S`]), if it is still the same disk. `w` says what happened: tuning,
/// or busy with the reason it did not start.
#[allow(clippy::too_many_arguments)]
fn start_due(
    st: &mut State,
    store: &mut Store,
    root: &SysRoot,
    db: &Path,
    cfg: &config::DaemonConfig,
    dev: &Device,
    spot: Option<&SweetSpotRow>,
    w: &mut due::Wait,
) {
    // The listing may be minutes old ([`RESCAN_S`]): the retune starts from the disk
    // as it is now (its mounts), if it is still the same disk.
    let now_dev = crate::device::find(root, &dev.name)
        .ok()
        .filter(|d| d.identity == dev.identity);
    let started = match &now_dev {
        Some(d) => retune::Job::start(store, db, root, d, cfg, spot, w.detail.clone()),
        None => {
            st.disks = None;
            Err(Error::BadInput(format!(
                "{} is not the disk it was: looked at again at the next poll",
                dev.name
            )))
        }
    };
    match started {
        Ok(j) => {
            tracing::info!(
                "{}: retuning with policy {} ({})",
                dev.name,
                j.policy,
                j.why
            );
            w.kind = "tuning";
            w.detail = format!("retuning with policy {} ({})", j.policy, j.why);
            st.job = Some(j);
        }
        Err(e) => {
            tracing::info!("{}: retune due, not started: {e}", dev.name);
            w.kind = "busy";
            w.detail = e.to_string();
        }
    }
}

/// Stops the retune in progress (once) when this poll's `sample` says the machine is not
/// idle any more, with the reason in the log and in the job.
fn stop_if_busy(st: &mut State, sample: &Sample, cfg: &config::DaemonConfig) {
    if let (Some(job), Some(prev)) = (st.job.as_mut(), st.tracker.last.as_ref())
        && job.stopping.is_none()
        && let Some(why) = sample.busy_mid_run(prev, &cfg.idle)
    {
        tracing::warn!(
            "{}: the machine is not idle any more ({why}): stopping the retune",
            job.device
        );
        crate::signals::request_stop();
        job.stopping = Some(format!("not idle: {why}"));
    }
}

/// Disks that the kernel says appeared (`add`, or `change` of a loop device: its attach):
/// each is looked at afresh (a disk seen before under this identity gets its profile again),
/// then profiles are applied as at a poll. The disk a retune works on is left to it.
fn appeared(
    st: &mut State,
    store: &mut Store,
    root: &SysRoot,
    db: &Path,
    cfg: &config::DaemonConfig,
    events: &[uevent::Event],
) -> Result<()> {
    // Any disk event (a removal too): the next look lists the disks afresh.
    st.disks = None;
    for e in events {
        let new = e.action == "add" || (e.action == "change" && e.name.starts_with("loop"));
        if !new {
            continue;
        }
        tracing::debug!("uevent: {} {}", e.action, e.name);
        if let Ok(d) = crate::device::find(root, &e.name)
            && st.job.as_ref().is_none_or(|j| j.identity != d.identity)
        {
            st.manager.forget(&d.identity);
        }
    }
    manage_now(st, store, root, db, cfg)
}

/// After a config reload: disks whose profile entries changed (newly enrolled ones
/// among them) are forgotten and get their new profile now ([`manage::Manager::reconcile`]).
fn reloaded(
    st: &mut State,
    store: &mut Store,
    root: &SysRoot,
    db: &Path,
    cfg: &config::DaemonConfig,
) -> Result<()> {
    st.disks = None;
    let (profile, _) = cached(st, store, root, cfg)?;
    st.manager.reconcile(root, &profile, &busy(st))?;
    manage_now(st, store, root, db, cfg)?;
    status::write_state(&state_path(db), &st.manager, &st.waits, &mut st.written);
    Ok(())
}

/// Tells systemd the daemon is ready (`READY=1` on `$NOTIFY_SOCKET`, sd_notify(3)'s
/// protocol: one datagram); nothing when the variable is unset (not under `Type=notify`).
fn notify_ready() {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let sock = match std::os::unix::net::UnixDatagram::unbound() {
        Ok(s) => s,
        Err(e) => return tracing::warn!("sd_notify: {e}"),
    };
    let bytes = path.as_encoded_bytes();
    let r = if let Some(abstract_name) = bytes.strip_prefix(b"@") {
        use std::os::linux::net::SocketAddrExt;
        std::os::unix::net::SocketAddr::from_abstract_name(abstract_name)
            .and_then(|a| sock.send_to_addr(b"READY=1", &a))
    } else {
        sock.send_to(b"READY=1", &path)
    };
    if let Err(e) = r {
        tracing::warn!("sd_notify READY=1 to {}: {e}", path.to_string_lossy());
    }
}

/// Runs the daemon until SIGTERM/SIGINT. `db` is the command line's database, `db_given`
/// true when `--db` or `SWEETSPOT_DB` named it ([`db_path`]). Errors: a bad config or
/// another daemon on the database ([`Error::BadInput`]); the database, sysfs or the event
/// loop failing while it runs. Once SIGTERM/SIGINT asked it to stop, a failure of its last
/// poll (putting a stopped retune's device back) is logged as a warning, not returned: a
/// stop asked for exits 0.
pub(crate) fn run(
    config_path: &Path,
    explicit: bool,
    root: &SysRoot,
    db: &Path,
    db_given: bool,
) -> Result<()> {
    let mut cfg = config::load(config_path, explicit, crate::trust::Origin::System)?;
    let db = db_path(cfg.db.as_deref(), db, db_given);
    // The daemon reads its database unattended, for as long as it runs: root's alone, also
    // when `--db` names it (SECURITY.md).
    Store::check_trusted(&db, crate::trust::Origin::System)?;
    // One daemon at a time: a second would retune and re-apply beside the first.
    let _daemon = crate::lock::DeviceLock::acquire(
        &crate::lock::path(&db, root, crate::lock::DAEMON),
        "the daemon's role",
        crate::lock::Holder::me("daemon"),
    )
    .map_err(|e| match e {
        Error::BadInput(m) => Error::BadInput(format!("another daemon runs: {m}")),
        other => other,
    })?;
    let mut store = Store::open(&db)?;
    crate::undo::recover(&mut store, root)?;
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
        let mut st = State::default();
        let mut watch = match uevent::Watch::open() {
            Ok(w) => {
                tracing::info!("watching for disks by the kernel's uevents");
                Some(w)
            }
            Err(e) => {
                tracing::warn!(
                    "cannot open the kernel's uevent socket ({e}): new disks are found by \
                     listing /sys/block every {} s",
                    cfg.poll_s
                );
                None
            }
        };
        // The kernel's uevents name the real disks: a fake tree (`--sysfs-root`) is listed at
        // every poll, as without the socket.
        st.watching = watch.is_some() && root.is_real();
        tracing::info!(
            "sweetspot daemon started (database {}, poll {} s, retune every {})",
            db.display(),
            cfg.poll_s,
            cfg.interval_label()
        );
        let mut ready = false;
        loop {
            poll(&mut st, &mut store, root, &db, &cfg)?;
            if !ready {
                notify_ready();
                ready = true;
                // The start-up code and data are not needed again: their pages leave the RSS.
                let n = trim::drop_start_up_pages();
                tracing::debug!(
                    "dropped the resident pages of {} KiB of read-only mappings",
                    n >> 10
                );
            }
            // While a retune runs, idleness is checked every 2 s (to stop it soon).
            let every = if st.job.is_some() {
                cfg.poll_s.min(2)
            } else {
                cfg.poll_s
            };
            let tick = tokio::time::sleep(std::time::Duration::from_secs(every));
            tokio::pin!(tick);
            // Disk events until the tick: each batch handled at once.
            let mut lost = None;
            let stop = loop {
                tokio::select! {
                    _ = &mut tick => break false,
                    ev = uevent::next(&watch) => match ev {
                        Ok(evs) => {
                            // The device's attributes (a loop device's backing file) settle.
                            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                            appeared(&mut st, &mut store, root, &db, &cfg, &evs)?;
                        }
                        Err(e) => {
                            lost = Some(e);
                            break false;
                        }
                    },
                    _ = term.recv() => break true,
                    _ = int.recv() => break true,
                    _ = hup.recv() => match config::load(config_path, explicit, crate::trust::Origin::System) {
                        Ok(c) => {
                            tracing::info!("config reloaded from {}", config_path.display());
                            cfg = c;
                            st.cache = None;
                            // Newly enrolled devices present now get their profile at once,
                            // as at start-up (not only when re-attached).
                            reloaded(&mut st, &mut store, root, &db, &cfg)?;
                        }
                        Err(e) => tracing::warn!("config not reloaded, keeping the old one: {e}"),
                    },
                }
            };
            if let Some(e) = lost {
                tracing::warn!(
                    "the uevent socket failed ({e}): new disks are found by listing /sys/block \
                     every {} s",
                    cfg.poll_s
                );
                watch = None;
                st.watching = false;
            }
            if stop {
                break;
            }
        }
        tracing::info!("sweetspot daemon stopping");
        // A retune in progress is stopped (its device restored to the kernel's values), and
        // the device goes back to its sweet spot before the daemon exits.
        if let Some(mut j) = st.job.take() {
            crate::signals::request_stop();
            j.stopping = Some("the daemon is stopping".into());
            // A stop asked for is a clean stop (exit 0) even when this last poll fails: said,
            // and the device is left as the journal has it (`restore` puts it back).
            if let Err(e) = finished(&mut st, j, &mut store, root, &db, &cfg) {
                tracing::warn!(
                    "stopping: the last poll failed ({e}); the retuned device may be left at \
                     the kernel's values until the daemon starts again"
                );
            }
        }
        let _ = std::fs::remove_file(state_path(&db));
        metrics::Exporter::remove(cfg.metrics_dir.as_deref());
        Ok(())
    })
}
