//! Recovery and restore around a tune: what a killed tune or benchmark left, and what
//! `restore` puts back, each writer's knobs under its lock.
//!
//! 1. [`recover`]: an unfinished tune (a `tunes` row still `running` whose process is gone,
//!    e.g. after SIGKILL) has its device restored from its own journal entries
//!    (owner `tune:<id>`) before anything else, each device under its lock and the host-wide
//!    knobs under the host's. `tune`, `bench` (on a device), `restore` and `daemon` call it
//!    first.
//! 2. [`recover_benches`]: the same for the entries of a killed `bench` or `tune --scratch`
//!    (owner `bench`), which no `tunes` row names.
//! 3. [`restore_idle`]: `restore`'s work, every open entry whose writer is gone, leaving
//!    alone what a live writer's lock guards.

use super::hostwide;
use crate::knob::vet::{Refused, Verdict, vet};
use crate::lock::{self, DeviceLock, Holder, Taken};
use crate::store::Store;
use crate::sysroot::SysRoot;
use crate::types::Owner;
use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// The identity of the lock that a running tune of target `identity` (its `tunes` row's)
/// holds as its target's, as far as the identity tells: [`lock::HOST`] for the host's own tune
/// (`tune --host`, stored as `host:<hostname>`, [`crate::bench::userbed::host_identity`]),
/// whose target is the host-wide knobs; otherwise `identity` itself (a device's, a
/// simulation's). Not so for a `--scratch` tune, which holds the lock of `$TMPDIR`'s disk
/// whatever its identity (`scratch:emulate:<spec>` with `--emulate`): a tune records the
/// lock file it holds in its row ([`crate::store::tunes::TuneRow::lock_file`]), and
/// [`alive`] asks this only of a row that has none (stored by an older sweetspot).
pub fn tune_lock(identity: &str) -> &str {
    if crate::bench::userbed::is_host_identity(identity) {
        lock::HOST
    } else {
        identity
    }
}

/// True when tune `t` of database `db` is still running: a process with its pid exists (not
/// this one) and holds the lock the tune holds: the lock file its row records
/// ([`crate::store::tunes::TuneRow::lock_file`], its target's lock as the tune took it), or
/// for a row without one the lock its identity maps to ([`tune_lock`], [`crate::lock`]).
///
/// The lock matters: after a power loss, or long after a SIGKILL, the pid may belong to
/// another process. That the lock is held is not enough either: another writer may have
/// taken it since (a later `--scratch` run takes the `$TMPDIR` disk's; a device's tune or a
/// `set` of host-wide knobs the host's). So the holder its file names ([`lock::holder`])
/// must be the tune's process, and its tune id, once the tune wrote it
/// ([`lock::DeviceLock::set_tune`], just after inserting the row), the row's: every tune's
/// row is inserted by the process that holds its lock (the CLI's `tune`, the daemon, whose
/// retune thread inserts it under the lock the daemon took), and a lock's holder names only
/// the tune that took it. A holder that cannot be read (the file is empty for a moment while
/// its holder rewrites it, or in a form this sweetspot does not read) leaves the judgement
/// to the lock being held, as before.
pub fn alive(db: &Path, root: &SysRoot, t: &crate::store::tunes::TuneRow) -> bool {
    let pid_exists = t.pid > 0
        && t.pid as u32 != std::process::id()
        && nix::sys::signal::kill(nix::unistd::Pid::from_raw(t.pid as i32), None).is_ok();
    if !pid_exists {
        return false;
    }
    let file = held_lock(db, root, t);
    match lock::holder(&file) {
        Some(h) => i64::from(h.pid) == t.pid && h.tune.is_none_or(|id| id == t.id),
        None => lock::held(&file),
    }
}

/// The lock file whose lock running tune `t` holds: the one its row records when that is a
/// lock file's place ([`lock::is_lock_path`]: the row is not trusted to name what root
/// opens), else the one its identity maps to ([`tune_lock`]).
fn held_lock(db: &Path, root: &SysRoot, t: &crate::store::tunes::TuneRow) -> PathBuf {
    t.lock_file
        .clone()
        .filter(|f| lock::is_lock_path(db, f))
        .unwrap_or_else(|| lock::path(db, root, tune_lock(&t.identity)))
}

/// Tunes marked `running` that are alive (see `alive`): their devices are theirs until they
/// end, and they restore their own changes then.
fn live_tunes(store: &Store, root: &SysRoot) -> Result<Vec<crate::store::tunes::TuneRow>> {
    let db = store.path().to_path_buf();
    Ok(store
        .running_tunes()?
        .into_iter()
        .filter(|t| alive(&db, root, t))
        .collect())
}

/// What [`recover`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Killed tunes marked `recovered`.
    pub tunes: usize,
    /// Knobs written back from their journal entries.
    pub knobs: usize,
    /// The killed tunes' knobs among them: device, knob, value (not those of killed
    /// `bench` runs, which [`recover`] counts in `knobs` only).
    pub put: Vec<crate::knob::apply::PutBack>,
    /// Journal rows of killed tunes refused and left open ([`crate::knob::vet`]; each
    /// reported on stderr): such a tune stays `running`.
    pub refused: Vec<Refused>,
}

/// Finds tunes left `running` by a process that is gone (SIGKILL, power loss) and restores
/// their devices from their own journal entries (owner `tune:<id>`) first, each under its
/// device lock ([`crate::lock`]) and their host-wide knobs under the host's ([`lock::HOST`]);
/// what another writer's lock guards now is left for a later call; marks them `recovered`.
/// Call it at the start of `tune`, `bench` (on a device), `restore` and `daemon`. A tune
/// whose process is alive is left alone.
///
/// Errors: those of the journaled restore (the tune stays `running`, so the next call retries);
/// [`Error::Failed`] when it refused journal rows ([`crate::knob::vet`]: each reported on
/// stderr, skipped, the rest restored).
pub fn recover(store: &mut Store, root: &SysRoot) -> Result<Recovered> {
    let io = crate::knob::io::RealIo;
    let mut n = recover_with(&io, store, root)?;
    n.knobs += benches(&io, store, root, &mut n.refused)?;
    match n.refused.len() {
        0 => Ok(n),
        k => Err(crate::knob::restore::refused_error(k)),
    }
}

/// The lock that guards the knobs of `device` (a kernel name; `None`: the host-wide knobs, whose
/// lock is [`lock::HOST`]): the identity of the disk under that name now, or `None` when it is
/// gone (a detached scratch loop device), so there is no lock to take and nothing is written
/// there (its entries are closed unwritten, [`crate::knob::apply::restore_except`]).
pub(super) fn writer_identity(root: &SysRoot, device: Option<&str>) -> Option<String> {
    match device {
        Some(d) => crate::device::find(root, d).ok().map(|d| d.identity),
        None => Some(lock::HOST.to_string()),
    }
}

/// What [`take_writer`] found.
enum Writer {
    /// Ours to write while this lives; `None` when the device is gone (no lock to take).
    Ours(Option<DeviceLock>),
    /// Another writer holds the lock: who, when its lock file says so.
    Held(Option<Holder>),
}

/// One writer per device: takes, without waiting, the lock of `device`'s knobs (`None`: the
/// host-wide knobs') for a restore, or says who holds it. Errors: those of
/// [`DeviceLock::try_acquire`].
fn take_writer(db: &Path, root: &SysRoot, device: Option<&str>) -> Result<Writer> {
    let Some(id) = writer_identity(root, device) else {
        return Ok(Writer::Ours(None));
    };
    Ok(
        match DeviceLock::try_acquire(&lock::path(db, root, &id), Holder::me("restore"))? {
            Taken::Ours(l) => Writer::Ours(Some(l)),
            Taken::Held(h) => Writer::Held(h),
        },
    )
}

/// The devices (kernel names; `None` for the host-wide knobs, last) of `owner`'s open entries,
/// in the order a restore writes them.
pub(super) fn open_devices(store: &Store, owner: &Owner) -> Result<Vec<Option<String>>> {
    let mut names: Vec<Option<String>> = store
        .journal_open(None, Some(owner))?
        .into_iter()
        .map(|e| e.device)
        .collect();
    names.sort_by(|a, b| (a.is_none(), a).cmp(&(b.is_none(), b)));
    names.dedup();
    Ok(names)
}

/// Restores `owner`'s open entries of `device` (`None`: its host-wide ones only) through `io`;
/// the caller holds the lock ([`take_writer`]). Returns the knobs put back and the rows
/// refused ([`crate::knob::restore::restore_vetted`]).
fn restore_owned(
    io: &dyn crate::knob::io::KnobIo,
    store: &mut Store,
    root: &SysRoot,
    device: Option<&str>,
    owner: &Owner,
) -> Result<crate::knob::restore::Restore> {
    let host = device.is_none();
    crate::knob::restore::restore_vetted(io, store, root, device, Some(owner), &|e| {
        host && e.device.is_some()
    })
}

/// "1 knob", "2 knobs": a count of knobs for a message.
fn knobs(n: usize) -> String {
    if n == 1 {
        "1 knob".to_string()
    } else {
        format!("{n} knobs")
    }
}

/// Restores the open entries of owner `bench` ([`Owner::Bench`]) whose writer is
/// gone: a killed `bench`, or a killed `tune --scratch`, whose loop device's baseline is
/// journaled under `bench` before the tune has an id. No `tunes` row names them, so
/// [`recover_with`] leaves them. Each device (the host for vm knobs) is written only under its
/// lock; a bench that is still running holds it and is left alone. Entries of a device that
/// is gone are closed with one line saying so ([`crate::knob::apply::restore_with`]).
/// `restore` does not call this: it restores every idle entry itself and lists them.
/// Returns how many knobs were written back. Errors: those of the restore; [`Error::Failed`]
/// when it refused journal rows (each reported on stderr, skipped, the rest restored).
pub fn recover_benches(
    io: &dyn crate::knob::io::KnobIo,
    store: &mut Store,
    root: &SysRoot,
) -> Result<usize> {
    let mut refused = Vec::new();
    let n = benches(io, store, root, &mut refused)?;
    match refused.len() {
        0 => Ok(n),
        k => Err(crate::knob::restore::refused_error(k)),
    }
}

/// [`recover_benches`], adding the rows it refused to `refused`.
fn benches(
    io: &dyn crate::knob::io::KnobIo,
    store: &mut Store,
    root: &SysRoot,
    refused: &mut Vec<Refused>,
) -> Result<usize> {
    let owner = &Owner::Bench;
    let db = store.path().to_path_buf();
    let mut n = 0;
    for name in open_devices(store, owner)? {
        let _lock = match take_writer(&db, root, name.as_deref())? {
            Writer::Ours(l) => l,
            Writer::Held(_) => continue,
        };
        let done = restore_owned(io, store, root, name.as_deref(), owner)?;
        refused.extend(done.refused);
        let put = done.put;
        if !put.is_empty() {
            tracing::warn!(
                "a killed `sweetspot bench` or `tune --scratch` left {} of {} changed; \
                 restored them",
                knobs(put.len()),
                name.as_deref().unwrap_or("the host")
            );
        }
        n += put.len();
    }
    Ok(n)
}

/// [`recover`] through `io`. Every open entry of the tune is restored: its device's knobs
/// (marked restored unwritten when the device is gone, e.g. a scratch loop device) and the
/// host-wide vm knobs it changed. One writer per device: each device's entries are written
/// only under its lock, and the host-wide ones only under the host's ([`lock::HOST`]). When
/// another writer holds one of those, its entries are left open and the tune stays `running`,
/// so a later call finishes it; one warning says what was restored and what waits for whom.
pub fn recover_with(
    io: &dyn crate::knob::io::KnobIo,
    store: &mut Store,
    root: &SysRoot,
) -> Result<Recovered> {
    let mut n = Recovered::default();
    let db = store.path().to_path_buf();
    for t in store.running_tunes()? {
        if alive(&db, root, &t) {
            continue;
        }
        let owner = Owner::Tune(t.id);
        let mut k = 0;
        let mut left: Vec<String> = Vec::new();
        for name in open_devices(store, &owner)? {
            let _lock = match take_writer(&db, root, name.as_deref())? {
                Writer::Ours(l) => l,
                Writer::Held(h) => {
                    let who = h.map_or_else(|| "another sweetspot".to_string(), |h| h.to_string());
                    left.push(match &name {
                        Some(d) => {
                            format!("its device {d} is in use by {who}, so it is restored later")
                        }
                        None => {
                            let mut knobs: Vec<String> = store
                                .journal_open(None, Some(&owner))?
                                .into_iter()
                                .filter(|e| e.device.is_none())
                                .map(|e| e.knob)
                                .collect();
                            knobs.sort();
                            knobs.dedup();
                            format!(
                                "{who} holds the host-wide knobs' lock, so {} {} restored later",
                                knobs.join(", "),
                                if knobs.len() == 1 { "is" } else { "are" }
                            )
                        }
                    });
                    continue;
                }
            };
            let done = restore_owned(io, store, root, name.as_deref(), &owner)?;
            k += done.put.len();
            n.put.extend(done.put);
            if !done.refused.is_empty() {
                left.push(format!(
                    "{} of its journal rows {} refused (see above), so it stays running",
                    done.refused.len(),
                    if done.refused.len() == 1 { "is" } else { "are" }
                ));
                n.refused.extend(done.refused);
            }
        }
        n.knobs += k;
        if !left.is_empty() {
            // Still `running`: the next call restores the rest, then marks it recovered.
            tracing::warn!(
                "tune {} on {} was killed (pid {}); {}{}",
                t.id,
                t.target,
                t.pid,
                if k == 0 {
                    String::new()
                } else {
                    format!(
                        "restored {k} knob{} it changed; ",
                        if k == 1 { "" } else { "s" }
                    )
                },
                left.join("; ")
            );
            continue;
        }
        tracing::warn!(
            "tune {} on {} was killed (pid {}); {}",
            t.id,
            t.target,
            t.pid,
            match &t.device {
                _ if k == 0 => "nothing of it was left to restore".to_string(),
                Some(d) if crate::device::find(root, d).is_err() => {
                    format!("restored {} ({d} is gone: a scratch device?)", knobs(k))
                }
                Some(d) => format!("restored {} it changed (on {d} or host-wide)", knobs(k)),
                None => format!("restored {}", knobs(k)),
            }
        );
        store.finish_tune(t.id, crate::types::TuneStatus::Recovered)?;
        n.tunes += 1;
    }
    Ok(n)
}

/// What [`restore_idle`] did.
#[derive(Debug, Default)]
pub struct Restored {
    /// Knobs written back: those of killed tunes ([`recover`]) and the rest.
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
pub struct HostLeft {
    /// Their names, sorted.
    pub knobs: Vec<String>,
    /// Why, as a clause: `` `sweetspot bench` (pid 42, for 3 s) writes sdb, and they act on
    /// every device `` or `` `sweetspot tune` (pid 42, tune 7, for 35 s) holds the host-wide
    /// knobs' lock ``.
    pub why: String,
}

/// `sweetspot restore`: recovers killed tunes ([`recover`]), then restores every open journal
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
pub fn restore_idle(
    io: &dyn crate::knob::io::KnobIo,
    store: &mut Store,
    root: &SysRoot,
    device: Option<&str>,
) -> Result<Restored> {
    let rec = recover_with(io, store, root)?;
    let busy = live_tunes(store, root)?;
    if let Some(t) = device.and_then(|d| busy.iter().find(|t| t.device.as_deref() == Some(d))) {
        return Err(Error::BadInput(format!(
            "{} is being tuned (tune {}, pid {}); stop that tune with Ctrl-C or SIGTERM and it \
             restores the device itself",
            device.unwrap_or_default(),
            t.id,
            t.pid
        )));
    }
    let db = store.path().to_path_buf();
    let mut names: Vec<String> = store
        .journal_open(device, None)?
        .into_iter()
        .filter_map(|e| e.device)
        .collect();
    names.sort();
    names.dedup();
    let mut _locks: Vec<DeviceLock> = Vec::new();
    let mut held: Vec<(String, Option<Holder>)> = Vec::new();
    for name in names {
        // A device that is gone has nothing to write (its entries are only marked).
        let Ok(d) = crate::device::find(root, &name) else {
            continue;
        };
        let path = lock::path(&db, root, &d.identity);
        if device.is_some() {
            _locks.push(DeviceLock::acquire(&path, &name, Holder::me("restore"))?);
            continue;
        }
        match DeviceLock::try_acquire(&path, Holder::me("restore"))? {
            Taken::Ours(l) => _locks.push(l),
            Taken::Held(h) => held.push((name, h)),
        }
    }
    let owners: Vec<Owner> = busy.iter().map(|t| Owner::Tune(t.id)).collect();
    let paths: Vec<PathBuf> = store
        .journal_open(None, None)?
        .into_iter()
        .filter(|e| owners.contains(&e.owner))
        .map(|e| e.path)
        .collect();
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
    let mine = match &dev_id {
        Some(id) => hostwide::device_alone(store, root, id)?,
        None => Vec::new(),
    };
    let mut host_knobs: Vec<String> = if device.is_none() {
        store
            .journal_open(None, None)?
            .into_iter()
            .filter(|e| e.device.is_none() && !paths.contains(&e.path))
            .filter(|e| matches!(vet(root, e), Verdict::Here(_)))
            .map(|e| e.knob)
            .collect()
    } else {
        mine.iter().map(|e| e.knob.clone()).collect()
    };
    host_knobs.sort();
    host_knobs.dedup();
    let who = |h: &Option<Holder>| {
        h.as_ref()
            .map_or_else(|| "another sweetspot".to_string(), Holder::to_string)
    };
    let mut host_left = None;
    let mut host_lock = None;
    if !host_knobs.is_empty() {
        // `restore <device>` locks that device only: another writer of a journaled one?
        let elsewhere = match device {
            Some(d) => hostwide::held_elsewhere(store, &db, root, d)?,
            None => None,
        };
        let why = if let Some(t) = busy.iter().find(|t| t.device.is_some()) {
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
        } else if let Some((d, h)) = held.first().or(elsewhere.as_ref()) {
            Some(format!(
                "{} writes {d}, and they act on every device",
                who(h)
            ))
        } else {
            match DeviceLock::try_acquire(
                &lock::path(&db, root, lock::HOST),
                Holder::me("restore"),
            )? {
                Taken::Ours(l) => {
                    host_lock = Some(l);
                    None
                }
                Taken::Held(h) => Some(format!("{} holds the host-wide knobs' lock", who(&h))),
            }
        };
        host_left = why.map(|why| HostLeft {
            knobs: host_knobs,
            why,
        });
    }
    let host_busy = host_left.is_some();
    let skip = |e: &crate::store::journal::Entry| {
        e.device.as_deref().is_some_and(|d| devices.contains(&d))
            || paths.contains(&e.path)
            || (e.device.is_none() && host_busy)
    };
    let done = crate::knob::restore::restore_vetted(io, store, root, device, None, &skip)?;
    let mut refused = rec.refused;
    refused.extend(done.refused);
    let mut put = done.put;
    if let (Some(_), Some(id)) = (&host_lock, &dev_id) {
        // Asked again under the host's lock: no other writer journals a host-wide knob now.
        let mine = hostwide::device_alone(store, root, id)?;
        let ids: Vec<i64> = mine.iter().map(|e| e.id).collect();
        let not_mine = |e: &crate::store::journal::Entry| !ids.contains(&e.id);
        let host = crate::knob::restore::restore_vetted(io, store, root, None, None, &not_mine)?;
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

/// `sweetspot restore <device>`, with `--db` when `db` is not the default database and
/// `--sysfs-root`/`--procfs-root` when `root`'s are not the real `/sys`/`/proc`: a command
/// that works when pasted.
pub fn undo_command(db: &Path, root: &SysRoot, device: Option<&str>) -> String {
    let mut c = "sweetspot".to_string();
    if db != Store::default_path() {
        c += &format!(" --db {}", shell_arg(&db.to_string_lossy()));
    }
    if !root.is_real() {
        c += &format!(" --sysfs-root {}", shell_arg(&root.sys.to_string_lossy()));
    }
    if !root.is_real_proc() {
        c += &format!(" --procfs-root {}", shell_arg(&root.proc.to_string_lossy()));
    }
    c += " restore";
    if let Some(d) = device {
        c += &format!(" {}", shell_arg(d));
    }
    c
}

/// `s` quoted for a POSIX shell when it needs it (`shlex`), with control characters escaped
/// first so the command stays on one line: a path read back from the database (a journal
/// row's roots) can carry `$(…)` or a newline, and the admin pastes this command as root.
fn shell_arg(s: &str) -> String {
    use crate::types::text;
    let s = if s.chars().any(text::is_control) {
        text::shown(s)
    } else {
        s.to_string()
    };
    // After `shown` no NUL is left, the one thing `try_quote` refuses.
    shlex::try_quote(&s).map_or(s.clone(), |q| q.into_owned())
}

#[cfg(test)]
mod tests;
