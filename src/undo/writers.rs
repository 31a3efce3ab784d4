//! Who writes a knob now: a running tune's lock and whether its process holds it, and the
//! lock a restore takes before it writes a device's (or the host-wide) knobs back. A writer
//! holds its target's lock ([`crate::lock`]) for its whole life; the kernel drops it when the
//! process dies, however it dies, so a free lock is a gone writer.

use crate::Result;
use crate::lock::{self, DeviceLock, Holder, Taken};
use crate::store::Store;
use crate::sysroot::SysRoot;
use crate::types::Owner;
use std::path::{Path, PathBuf};

/// The identity of the lock that a running tune of target `identity` (its `tunes` row's)
/// holds as its target's, as far as the identity tells: [`lock::HOST`] for the host's own tune
/// (`tune --host`, stored as `host:<hostname>`, [`crate::bench::user_testbed::host_identity`]),
/// whose target is the host-wide knobs; otherwise `identity` itself (a device's, a
/// simulation's). Not so for a `--scratch` tune, which holds the lock of `$TMPDIR`'s disk
/// whatever its identity (`scratch:emulate:<spec>` with `--emulate`): a tune records the
/// lock file it holds in its row ([`crate::store::tunes::TuneRow::lock_file`]), and
/// [`alive`] asks this only of a row that has none (stored by an older sweetspot).
pub(crate) fn tune_lock(identity: &str) -> &str {
    if crate::bench::user_testbed::is_host_identity(identity) {
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
pub(crate) fn alive(db: &Path, root: &SysRoot, t: &crate::store::tunes::TuneRow) -> bool {
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
pub(super) fn held_lock(db: &Path, root: &SysRoot, t: &crate::store::tunes::TuneRow) -> PathBuf {
    t.lock_file
        .clone()
        .filter(|f| lock::is_lock_path(db, f))
        .unwrap_or_else(|| lock::path(db, root, tune_lock(&t.identity)))
}

/// Tunes marked `running` that are alive (see `alive`): their devices are theirs until they
/// end, and they restore their own changes then.
pub(super) fn live_tunes(
    store: &Store,
    root: &SysRoot,
) -> Result<Vec<crate::store::tunes::TuneRow>> {
    let db = store.path().to_path_buf();
    Ok(store
        .running_tunes()?
        .into_iter()
        .filter(|t| alive(&db, root, t))
        .collect())
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
pub(super) enum Writer {
    /// Ours to write while this lives; `None` when the device is gone (no lock to take).
    Ours(Option<DeviceLock>),
    /// Another writer holds the lock: who, when its lock file says so.
    Held(Option<Holder>),
}

/// One writer per device: takes, without waiting, the lock of `device`'s knobs (`None`: the
/// host-wide knobs') for a restore, or says who holds it. Errors: those of
/// [`DeviceLock::try_acquire`].
pub(super) fn take_writer(db: &Path, root: &SysRoot, device: Option<&str>) -> Result<Writer> {
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
pub(super) fn restore_owned(
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
