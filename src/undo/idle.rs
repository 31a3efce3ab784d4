//! `restore`'s work: every open journal entry whose writer is gone, after killed tunes are
//! recovered, each device under its lock and the host-wide knobs under the host's; what a live
//! writer holds is left alone and named.

use super::hostwide;
use super::recover::recover_with;
use super::writers::{live_tunes, tune_lock};
use crate::knob::vet::{Refused, VetVerdict, vet};
use crate::lock::{self, DeviceLock, Holder, Taken};
use crate::store::Store;
use crate::sysroot::SysRoot;
use crate::types::Owner;
use crate::{Error, Result};
use std::path::PathBuf;

/// What [`restore_idle`] did.
#[derive(Debug, Default)]
pub(crate) struct Restored {
    /// Knobs written back: those of killed tunes ([`fn@super::recover`]) and the rest.
    pub knobs: usize,
    /// Killed tunes recovered first.
    pub recovered: usize,
    /// The knobs put back by finishing them: device, knob, value.
    pub recovered_put: Vec<crate::knob::apply::PutBack>,
    /// Tunes still running, whose devices and knobs were left alone.
    pub busy: Vec<crate::store::tunes::TuneRow>,
    /// The knobs put back besides those of killed tunes: device, knob, value.
    pub put: Vec<crate::knob::apply::PutBack>,
    /// Devices left alone because another writer holds their lock, with the holder when its
    /// lock file names it.
    pub held: Vec<(String, Option<Holder>)>,
    /// Open host-wide entries left alone, and why.
    pub host_left: Option<HostLeft>,
    /// With a device: the host-wide knobs that stay changed, their open entries not its
    /// `set`'s alone to put back ([`hostwide::still_changed`]), sorted; `restore` of
    /// everything puts them back.
    pub host_changed: Vec<String>,
    /// Journal rows refused and left open ([`crate::knob::vet`], or unreadable), by id, each
    /// reported on stderr: `restore` counts them among what it left changed (exit 1).
    pub refused: Vec<Refused>,
}

/// Host-wide knobs (vm, CPU scheduler) [`restore_idle`] left open.
#[derive(Debug)]
pub(crate) struct HostLeft {
    /// Their names, sorted.
    pub knobs: Vec<String>,
    /// Why, as a clause: `` `sweetspot bench` (pid 42, for 3 s) writes sdb, and they act on
    /// every device `` or `` `sweetspot tune` (pid 42, tune 7, for 35 s) holds the host-wide
    /// knobs' lock ``.
    pub why: String,
}

/// `sweetspot restore`: recovers killed tunes ([`fn@super::recover`]), then restores every open journal
/// entry (with `device`: its own, and the host-wide ones that its `set` or `tune --apply`
/// alone journaled, [`hostwide::device_alone`]; the rest it lists in
/// [`Restored::host_changed`]) through `io`, except what a tune that is still running works on: its device, every file it journaled,
/// and the host-wide knobs while it tunes a real device or the host (`tune --host`). Writing
/// those would change a setting in the middle of its measurement. The tune restores its own
/// changes when it ends (Ctrl-C or SIGTERM stop it); other owners' entries there wait for the
/// next `restore`.
///
/// One writer per device: every device restored is locked ([`crate::lock`]) while it is
/// written, and the host-wide knobs under the host's lock ([`lock::HOST`]). A device whose
/// lock another writer holds (a `set`, `bench --device`, or a tune) is left alone, and so are
/// the host-wide knobs then (they act on that device too), or when another writer holds the
/// host's lock; [`Restored::host_left`] says which and why.
///
/// Errors: [`Error::BadInput`] when `device` itself is being tuned or its lock is held; those
/// of the restore.
pub(crate) fn restore_idle(
    io: &dyn crate::knob::io::KnobIo,
    store: &mut Store,
    root: &SysRoot,
    device: Option<&str>,
) -> Result<Restored> {
    let rec = recover_with(io, store, root)?;
    let busy = live_tunes(store, root)?;
    refuse_tuned(&busy, device)?;
    let db = store.path().to_path_buf();
    let (_locks, held) = lock_devices(store, root, &db, device)?;
    let owners: Vec<Owner> = busy.iter().map(|t| Owner::Tune(t.id)).collect();
    let paths = journaled_by(store, &owners)?;
    let devices: Vec<&str> = busy
        .iter()
        .filter_map(|t| t.device.as_deref())
        .chain(held.iter().map(|(d, _)| d.as_str()))
        .collect();
    // Host-wide knobs act on every device, the busy ones too: left alone while a real device
    // is being tuned or written (a measurement there would see them change). Otherwise they
    // are written under the host's own lock, and left alone when another writer holds it.
    // With a device, only those its `set` or `tune --apply` alone journaled are its to put
    // back.
    let dev_id = device
        .and_then(|d| crate::device::find(root, d).ok())
        .map(|d| d.identity);
    let host_knobs = host_knobs_of(store, root, device, dev_id.as_deref(), &paths)?;
    let (host_left, host_lock) = lock_host(store, root, &db, device, &busy, &held, host_knobs)?;
    let host_busy = host_left.is_some();
    let skip = |e: &crate::store::journal::JournalEntry| {
        e.device.as_deref().is_some_and(|d| devices.contains(&d))
            || paths.contains(&e.path)
            || (e.device.is_none() && host_busy)
    };
    let done = crate::knob::restore::restore_vetted(io, store, root, device, None, &skip)?;
    let mut refused = rec.refused;
    refused.extend(done.refused);
    let mut put = done.put;
    if let (Some(_), Some(id)) = (&host_lock, &dev_id) {
        let host = device_host_knobs(io, store, root, id)?;
        put.extend(host.put);
        refused.extend(host.refused);
    }
    refused.sort_by_key(|r| r.id);
    refused.dedup_by_key(|r| r.id);
    let host_changed = match (device, &host_left) {
        (None, _) => Vec::new(),
        (Some(_), left) => {
            let left = left.as_ref().map(|h| h.knobs.clone()).unwrap_or_default();
            hostwide::still_changed(io, store, root, &owners, &left)?
        }
    };
    Ok(Restored {
        knobs: rec.knobs + put.len(),
        recovered: rec.tunes,
        recovered_put: rec.put,
        busy,
        put,
        held,
        host_left,
        host_changed,
        refused,
    })
}

/// Locks every device with open journal entries (`device` alone when given) for the
/// restore. With `device`, waits for its lock; without, a device another writer holds is
/// returned in the second list with its holder, and left alone. A device that is gone is
/// skipped (its entries are only marked).
#[allow(clippy::type_complexity)]
fn lock_devices(
    store: &Store,
    root: &SysRoot,
    db: &std::path::Path,
    device: Option<&str>,
) -> Result<(Vec<DeviceLock>, Vec<(String, Option<Holder>)>)> {
    let mut names: Vec<String> = store
        .journal_open(device, None)?
        .into_iter()
        .filter_map(|e| e.device)
        .collect();
    names.sort();
    names.dedup();
    let mut locks: Vec<DeviceLock> = Vec::new();
    let mut held: Vec<(String, Option<Holder>)> = Vec::new();
    for name in names {
        // A device that is gone has nothing to write (its entries are only marked).
        let Ok(d) = crate::device::find(root, &name) else {
            continue;
        };
        let path = lock::path(db, root, &d.identity);
        if device.is_some() {
            locks.push(DeviceLock::acquire(&path, &name, Holder::me("restore"))?);
            continue;
        }
        match DeviceLock::try_acquire(&path, Holder::me("restore"))? {
            Taken::Ours(l) => locks.push(l),
            Taken::Held(h) => held.push((name, h)),
        }
    }
    Ok((locks, held))
}

/// Refuses (exit 2) to restore `device` while one of the `busy` tunes is tuning it.
fn refuse_tuned(busy: &[crate::store::tunes::TuneRow], device: Option<&str>) -> Result<()> {
    if let Some(t) = device.and_then(|d| busy.iter().find(|t| t.device.as_deref() == Some(d))) {
        return Err(Error::BadInput(format!(
            "{} is being tuned (tune {}, pid {}); stop that tune with Ctrl-C or SIGTERM and it \
             restores the device itself",
            device.unwrap_or_default(),
            t.id,
            t.pid
        )));
    }
    Ok(())
}

/// The files of the open journal entries of `owners` (the running tunes).
fn journaled_by(store: &Store, owners: &[Owner]) -> Result<Vec<PathBuf>> {
    Ok(store
        .journal_open(None, None)?
        .into_iter()
        .filter(|e| owners.contains(&e.owner))
        .map(|e| e.path)
        .collect())
}

/// When there are `host_knobs` to put back: the host's lock for writing them, or, when a
/// `busy` tune, a `held` device, another writer of a journaled one (with `device`) or the
/// holder of the host's lock is in the way, the knobs left alone and why. The lock is
/// [`lock::HOST`] of the database `db`, held until the caller drops it.
fn lock_host(
    store: &Store,
    root: &SysRoot,
    db: &std::path::Path,
    device: Option<&str>,
    busy: &[crate::store::tunes::TuneRow],
    held: &[(String, Option<Holder>)],
    host_knobs: Vec<String>,
) -> Result<(Option<HostLeft>, Option<DeviceLock>)> {
    let mut host_left = None;
    let mut host_lock = None;
    if !host_knobs.is_empty() {
        // `restore <device>` locks that device only: another writer of a journaled one?
        let elsewhere = match device {
            Some(d) => hostwide::held_elsewhere(store, db, root, d)?,
            None => None,
        };
        let why = match host_busy_why(busy, held, elsewhere.as_ref()) {
            Some(why) => Some(why),
            None => match DeviceLock::try_acquire(
                &lock::path(db, root, lock::HOST),
                Holder::me("restore"),
            )? {
                Taken::Ours(l) => {
                    host_lock = Some(l);
                    None
                }
                Taken::Held(h) => Some(format!("{} holds the host-wide knobs' lock", who(&h))),
            },
        };
        host_left = why.map(|why| HostLeft {
            knobs: host_knobs,
            why,
        });
    }
    Ok((host_left, host_lock))
}

/// Why the host-wide knobs are left alone before their lock is even tried: a tune of a real
/// device or of the host is running, or another writer holds a device (`held`, or
/// `elsewhere` for `restore <device>`). `None`: nothing in their way but the host's lock.
fn host_busy_why(
    busy: &[crate::store::tunes::TuneRow],
    held: &[(String, Option<Holder>)],
    elsewhere: Option<&(String, Option<Holder>)>,
) -> Option<String> {
    if let Some(t) = busy.iter().find(|t| t.device.is_some()) {
        Some(format!(
            "tune {} (pid {}) is tuning {}, and they act on every device",
            t.id,
            t.pid,
            t.device.as_deref().unwrap_or_default()
        ))
    } else if let Some(t) = busy.iter().find(|t| tune_lock(&t.identity) == lock::HOST) {
        // The host's own tune holds the host's lock: its knobs are its, and the others'
        // wait for it too.
        Some(format!(
            "tune {} (pid {}) is tuning the host-wide knobs",
            t.id, t.pid
        ))
    } else {
        held.first()
            .or(elsewhere)
            .map(|(d, h)| format!("{} writes {d}, and they act on every device", who(h)))
    }
}

/// Who holds a lock, for a message: its holder, or "another sweetspot" when unknown.
fn who(h: &Option<Holder>) -> String {
    h.as_ref()
        .map_or_else(|| "another sweetspot".to_string(), Holder::to_string)
}

/// The host-wide knobs this restore would put back: with a `device` (`dev_id`, its identity
/// when it is present), those its `set` or `tune --apply` alone journaled; without, every
/// open host-wide entry written here, except a running tune's (`busy_paths`). Sorted, each
/// once.
fn host_knobs_of(
    store: &Store,
    root: &SysRoot,
    device: Option<&str>,
    dev_id: Option<&str>,
    busy_paths: &[PathBuf],
) -> Result<Vec<String>> {
    let mut host_knobs: Vec<String> = match (device, dev_id) {
        (None, _) => store
            .journal_open(None, None)?
            .into_iter()
            .filter(|e| e.device.is_none() && !busy_paths.contains(&e.path))
            .filter(|e| matches!(vet(root, e), VetVerdict::Here(_)))
            .map(|e| e.knob)
            .collect(),
        (Some(_), Some(id)) => hostwide::device_alone(store, root, id)?
            .iter()
            .map(|e| e.knob.clone())
            .collect(),
        // A device that is gone has journaled nothing here that is its alone.
        (Some(_), None) => Vec::new(),
    };
    host_knobs.sort();
    host_knobs.dedup();
    Ok(host_knobs)
}

/// `restore <device>`'s host-wide knobs, under the host's lock (held by the caller): those
/// the device's own `set` or `tune --apply` alone journaled (`id`, its identity), asked
/// again now that no other writer journals a host-wide knob.
fn device_host_knobs(
    io: &dyn crate::knob::io::KnobIo,
    store: &mut Store,
    root: &SysRoot,
    id: &str,
) -> Result<crate::knob::restore::Restore> {
    let mine = hostwide::device_alone(store, root, id)?;
    let ids: Vec<i64> = mine.iter().map(|e| e.id).collect();
    let not_mine = |e: &crate::store::journal::JournalEntry| !ids.contains(&e.id);
    crate::knob::restore::restore_vetted(io, store, root, None, None, &not_mine)
}
