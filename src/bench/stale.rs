//! Leftovers of runs that were killed with SIGKILL: a `--scratch` run's mount, loop device and
//! `$TMPDIR/sweetspot-scratch-*` directory with its backing file (and, for `--emulate`, the
//! FUSE mount on its `fuse/`, whose server died with the run), and any run's
//! `$TMPDIR/sweetspot-run-*` directory (load counter and stderr logs), and a run's work
//! directory `.sweetspot-bench-*` on the measured filesystem (the job's files and the loads'
//! data, hundreds of MiB: [`sweep_work`]).
//!
//! Each live [`crate::bench::scratch::Scratch`] and [`crate::bench::contest_run::Bencher`] holds an exclusive `flock(2)` on
//! `<dir>/owner.lock` for its whole life; the kernel drops the lock when the process dies,
//! however it dies. [`sweep`] takes that lock without waiting: only a directory whose lock it
//! gets is a leftover. Directories without a lock file (made by an older sweetspot, or by
//! something else) and directories whose owner is alive are never touched. Loop devices are
//! detached only when their `loop/backing_file` is the leftover's own `backing.img`, so no
//! loop device that is not ours is ever detached.
//!
//! A run directory records the path of its run's work directory (`WORK_RECORD`, written by
//! [`record_work`] once both exist), so `sweep_runs` removes a killed run's work directory
//! wherever it is (a `--dir`, a filesystem no device lists): the record only says where to
//! look; the work directory is removed only when it is named `.sweetspot-bench-*`, is a
//! directory (not a symlink), belongs to the run directory's owner and is reached through no
//! symbolic link (`$TMPDIR` is anyone's), and its own owner lock is free, as in
//! [`sweep_work`]. Only
//! [`sweep`]'s scratch part touches devices (unmount, `losetup -d`): it reads the real
//! `/sys/block`, so `restore` runs it only on the real sysfs;
//! `sweep_runs` and [`sweep_work`] only remove dead directories.
//!
//! A leftover whose knobs are still open in the journal of the database that journaled it
//! (the `--db` of the killed run, recorded in its directory: [`journal_db`]) is left alone,
//! also by a sweep run with another `--db`: its loop queue outlives `losetup -d`, so only
//! that database's `restore` can put it back, and it then removes the leftover.

use crate::bench::journal_db::{self, LeftoverVerdict};
use crate::bench::mounts::{kill_users, mounted, tool, unmount};
use crate::lock::{self, DeviceLock, Holder, Taken};
use crate::sysroot::SysRoot;
use nix::fcntl::{Flock, FlockArg};
use std::fs::File;
use std::path::{Path, PathBuf};

/// Prefix of a scratch directory's name under `$TMPDIR`.
pub const DIR_PREFIX: &str = "sweetspot-scratch-";
/// Prefix of a run's small working directory (counter, logs) under `$TMPDIR`.
pub const RUN_PREFIX: &str = "sweetspot-run-";
/// Prefix of a run's work directory (job files, load data) on the measured filesystem.
pub(crate) const WORK_PREFIX: &str = ".sweetspot-bench-";
/// The owner's lock file inside a scratch, run or work directory.
pub const LOCK_FILE: &str = "owner.lock";
/// The `--emulate` FUSE mount point inside a scratch directory.
pub(crate) const FUSE_DIR: &str = "fuse";
/// The file inside a run directory that names its run's work directory ([`record_work`]).
pub(crate) const WORK_RECORD: &str = "work-dir";

/// Writes the absolute path of `work`, the run's work directory, into `run`'s
/// `WORK_RECORD` (under a temporary name, then renamed), so that `sweep_runs` finds the
/// work directory after a SIGKILL. Call it with both directories' owner locks held. Errors:
/// the I/O error of any step.
pub fn record_work(run: &Path, work: &Path) -> std::io::Result<()> {
    let work = std::path::absolute(work)?;
    let tmp = run.join(format!("{WORK_RECORD}.new"));
    std::fs::write(&tmp, work.as_os_str().as_encoded_bytes())?;
    std::fs::rename(&tmp, run.join(WORK_RECORD))
}

/// The work directory run directory `run` records, if it records an absolute path.
fn recorded_work(run: &Path) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let bytes = std::fs::read(run.join(WORK_RECORD)).ok()?;
    Some(PathBuf::from(std::ffi::OsString::from_vec(bytes))).filter(|p| p.is_absolute())
}

/// True when the work directory `work` a run directory `run` records belongs to the run's
/// owner: both owned by one uid, and `work` reached without a symbolic link (its canonical
/// path is itself). `$TMPDIR` is world-writable, so a run directory may be anyone's; `restore`
/// as root removes only what that one user could have removed.
fn same_owner(run: &Path, work: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let uid = |p: &Path| std::fs::symlink_metadata(p).ok().map(|m| m.uid());
    std::fs::canonicalize(work).is_ok_and(|c| c == work)
        && uid(run).is_some()
        && uid(run) == uid(work)
}

/// True when `dir` itself (not a symlink's target) belongs to this process's effective uid.
fn owned_by_me(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(dir).is_ok_and(|m| m.uid() == nix::unistd::geteuid().as_raw())
}

/// Takes the owner lock of a new scratch directory `dir`: the file is created and locked under
/// a temporary name, then renamed into place, so [`sweep`] never sees an unlocked lock file of
/// a live owner. Errors: the I/O error of creating, locking or renaming the file.
pub fn own(dir: &Path) -> std::io::Result<Flock<File>> {
    let tmp = dir.join(format!("{LOCK_FILE}.new"));
    let f = File::create(&tmp)?;
    let lock = Flock::lock(f, FlockArg::LockExclusiveNonblock)
        .map_err(|(_, e)| std::io::Error::from(e))?;
    std::fs::rename(&tmp, dir.join(LOCK_FILE))?;
    Ok(lock)
}

/// What a [`sweep`] did: one line per leftover removed, and one per leftover left alone
/// (with why, and the command that removes it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Swept {
    /// What was removed, one line per directory.
    pub removed: Vec<String>,
    /// What was left alone and why, one line per directory.
    pub left: Vec<String>,
}

/// Removes the leftovers of dead runs under `tmp` (normally `std::env::temp_dir()`) that a
/// sweep with database `db` may remove (`journal_db::verdict`: none whose loop device has
/// open journal entries in the database that journaled it): kills processes still using the
/// mount, unmounts it, detaches the loop devices backed by its `backing.img`, and removes the
/// directory. One writer per device: a loop device whose lock ([`crate::lock`]) another
/// process holds is left alone too. Failures are logged and the directory is left for the
/// next sweep; a directory is removed only once nothing is mounted on it.
/// Then the dead run directories (`sweep_runs`).
pub fn sweep(tmp: &Path, db: &Path) -> Swept {
    let mut out = sweep_scratch(tmp, db);
    out.removed.extend(sweep_runs(tmp));
    out
}

/// The scratch part of [`sweep`]: dead `sweetspot-scratch-*` directories under `tmp`, their
/// mounts and loop devices (found in the real `/sys/block`, whatever `--sysfs-root` says).
pub(crate) fn sweep_scratch(tmp: &Path, db: &Path) -> Swept {
    let mut out = Swept::default();
    let root = SysRoot::default();
    // `$TMPDIR` is anyone's: another user's directory, however it looks, is not our leftover.
    for (dir, _lock) in dead(tmp, &[DIR_PREFIX])
        .into_iter()
        .filter(|(d, _)| owned_by_me(d))
    {
        let loops = attached(&dir);
        if let LeftoverVerdict::Keep(why) = journal_db::verdict(&dir, &loops, db) {
            out.left.push(why);
            continue;
        }
        let mut writers = Vec::new();
        let mut busy = None;
        for name in &loops {
            let id = crate::device::identity::identity(&root, name);
            match DeviceLock::try_acquire(&lock::path(db, &root, &id), Holder::me("sweep")) {
                Ok(Taken::Ours(l)) => writers.push(l),
                Ok(Taken::Held(h)) => {
                    busy = Some(format!(
                        "{name} is written by {}",
                        h.map_or_else(|| "another sweetspot".to_string(), |h| h.to_string())
                    ));
                    break;
                }
                Err(e) => {
                    busy = Some(format!("{name}: {e}"));
                    break;
                }
            }
        }
        if let Some(why) = busy {
            out.left.push(format!(
                "left alone: {}, while {why}; `restore` again once it is done",
                dir.display()
            ));
            continue;
        }
        match clean(&dir) {
            Ok(what) => out.removed.push(what),
            Err(msg) => tracing::warn!("leftover scratch {}: {msg}", dir.display()),
        }
    }
    out
}

/// [`sweep`] without asking any journal or lock: removes every dead leftover under `tmp`.
/// Only for a test's cleanup guard on its own private `$TMPDIR`, whose leftovers are its own
/// whatever their journal says. Returns one line per directory removed.
pub fn sweep_regardless(tmp: &Path) -> Vec<String> {
    let mut done = Vec::new();
    for (dir, _lock) in dead(tmp, &[DIR_PREFIX, RUN_PREFIX]) {
        match clean(&dir) {
            Ok(what) => done.push(what),
            Err(msg) => tracing::warn!("leftover scratch {}: {msg}", dir.display()),
        }
    }
    done
}

/// Kernel names of the loop devices still attached to leftover `dir`'s backing file or its
/// `--emulate` FUSE file.
fn attached(dir: &Path) -> Vec<String> {
    let fuse = dir.join(FUSE_DIR).join(crate::bench::emulate::FILE_NAME);
    loops_backed_by(&dir.join("backing.img"))
        .into_iter()
        .chain(loops_backed_by(&fuse))
        .filter_map(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect()
}

/// The dead `sweetspot-scratch-*` directories under `tmp`, left as they are: what a sweep that
/// may not touch devices (a fake `--sysfs-root`) names instead of removing.
pub(crate) fn dead_scratch(tmp: &Path) -> Vec<PathBuf> {
    dead(tmp, &[DIR_PREFIX])
        .into_iter()
        .map(|(d, _)| d)
        .collect()
}

/// Removes the dead run directories (`sweetspot-run-*`) under `tmp` that the running user
/// (its effective uid) owns, each with the work directory it records ([`record_work`]) when
/// that one is dead too: named `.sweetspot-bench-*`, a directory, its owner lock free, and
/// the same owner's. `$TMPDIR` is anyone's: another user's run directory, live or dead, is
/// theirs to remove, not root's (a `restore` under any roots runs this). Touches no device (a
/// run directory holds no mount or backing file). Returns one line per directory removed.
pub(crate) fn sweep_runs(tmp: &Path) -> Vec<String> {
    let mut done = Vec::new();
    for (dir, _lock) in dead(tmp, &[RUN_PREFIX])
        .into_iter()
        .filter(|(d, _)| owned_by_me(d))
    {
        let mut what = Vec::new();
        if let Some(work) = recorded_work(&dir)
            && same_owner(&dir, &work)
            && let Some(_work_lock) = dead_dir(&work, &[WORK_PREFIX])
        {
            match std::fs::remove_dir_all(&work) {
                Ok(()) => what.push(format!("removed {}", work.display())),
                Err(e) => tracing::warn!("leftover work directory {}: {e}", work.display()),
            }
        }
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => what.push(format!("removed {}", dir.display())),
            Err(e) => tracing::warn!("leftover run directory {}: {e}", dir.display()),
        }
        if !what.is_empty() {
            done.push(what.join(", "));
        }
    }
    done
}

/// Removes the work directories of dead runs (`.sweetspot-bench-*` with an owner lock nobody
/// holds) directly under `target`, the measured filesystem's directory. Returns one line per
/// directory removed. Like [`sweep`], a directory without a lock file, whose owner is alive,
/// or that another user owns, is never touched.
pub fn sweep_work(target: &Path) -> Vec<String> {
    let mut done = Vec::new();
    for (dir, _lock) in dead(target, &[WORK_PREFIX])
        .into_iter()
        .filter(|(d, _)| owned_by_me(d))
    {
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => done.push(format!("removed {}", dir.display())),
            Err(e) => tracing::warn!("leftover work directory {}: {e}", dir.display()),
        }
    }
    done
}

/// The directories under `parent` named with one of `prefixes` whose owner lock this process
/// could take (their owner is dead), each with the lock, held while it is cleaned. A symlink
/// named like ours, or a directory without a lock file, is skipped.
fn dead(parent: &Path, prefixes: &[&str]) -> Vec<(PathBuf, Flock<File>)> {
    let Ok(rd) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let dir = e.path();
            dead_dir(&dir, prefixes).map(|lock| (dir, lock))
        })
        .collect()
}

/// The owner lock of `dir` when it is a dead run's directory: named with one of `prefixes`,
/// a directory (not a symlink), with a lock file this process could lock (its owner is
/// dead); `None` otherwise.
fn dead_dir(dir: &Path, prefixes: &[&str]) -> Option<Flock<File>> {
    let name = dir.file_name()?.to_string_lossy().into_owned();
    // symlink_metadata does not follow symlinks.
    if !prefixes.iter().any(|p| name.starts_with(p))
        || !std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir())
    {
        return None;
    }
    let f = File::open(dir.join(LOCK_FILE)).ok()?;
    // Not taken: its owner is alive (or another sweep is cleaning it).
    Flock::lock(f, FlockArg::LockExclusiveNonblock).ok()
}

/// Cleans one leftover whose lock we hold. Returns what was done, or why it stopped.
fn clean(dir: &Path) -> Result<String, String> {
    let mnt = dir.join("mnt");
    let backing = dir.join("backing.img");
    let mut what = Vec::new();
    if mounted(&mnt) {
        kill_users(&mnt);
        unmount(&mnt).map_err(|e| e.to_string())?;
        what.push(format!("unmounted {}", mnt.display()));
    }
    let fuse = dir.join(FUSE_DIR);
    let emulated = fuse.join(crate::bench::emulate::FILE_NAME);
    let disks = loops_backed_by(&emulated);
    for dev in &disks {
        // A disk model marked its queue rotational; a FUSE file gives 0 (loop sets it only
        // for a backing file on a rotational block device), and the queue outlives the detach.
        let name = dev.file_name().unwrap_or_default().to_string_lossy();
        let attr = PathBuf::from(format!("/sys/block/{name}/queue/rotational"));
        if std::fs::read_to_string(&attr).is_ok_and(|v| v.trim() == "1") {
            std::fs::write(&attr, "0\n").map_err(|e| format!("{}: {e}", attr.display()))?;
            what.push(format!("put back {} = 0", attr.display()));
        }
    }
    for dev in loops_backed_by(&backing).into_iter().chain(disks) {
        tool("losetup", &["-d".as_ref(), dev.as_os_str()]).map_err(|e| e.to_string())?;
        what.push(format!("detached {}", dev.display()));
    }
    // The FUSE server died with its run, so the kernel has aborted the connection: nothing
    // under it is read (no stat, no readdir) before it is gone.
    if mounted(&fuse) {
        crate::bench::emulate::unmount(&fuse).map_err(|e| e.to_string())?;
        what.push(format!("unmounted {}", fuse.display()));
    }
    if mounted(&mnt) || mounted(&fuse) {
        return Err("still mounted; left in place".into());
    }
    std::fs::remove_dir_all(dir).map_err(|e| format!("removing it: {e}"))?;
    what.push(format!("removed {}", dir.display()));
    Ok(what.join(", "))
}

/// `/dev/loopN` of every loop device whose backing file is exactly `backing` (also when the
/// file was deleted: the kernel then appends ` (deleted)`).
fn loops_backed_by(backing: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    let want = backing.to_string_lossy();
    let mut out = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("loop") {
            continue;
        }
        let Ok(b) = std::fs::read_to_string(e.path().join("loop/backing_file")) else {
            continue; // not attached
        };
        let b = b.trim_end_matches('\n');
        if b == want || b.strip_suffix(" (deleted)") == Some(&*want) {
            out.push(PathBuf::from("/dev").join(name));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A dead run directory and the dead work directory it records, both under `tmp`; the
    /// work directory owned by `uid`.
    fn killed_run(tmp: &Path, n: u32, work_parent: &Path, uid: u32) -> (PathBuf, PathBuf) {
        let run = tmp.join(format!("{RUN_PREFIX}{n}"));
        let work = work_parent.join(format!("{WORK_PREFIX}{n}"));
        for d in [&run, &work] {
            std::fs::create_dir_all(d).unwrap();
            std::fs::write(d.join(LOCK_FILE), "").unwrap();
        }
        record_work(&run, &work).unwrap();
        nix::unistd::chown(&work, Some(nix::unistd::Uid::from_raw(uid)), None).unwrap();
        (run, work)
    }

    /// `restore` (as root) removes a killed run's recorded work directory only when the run
    /// directory's owner owns it and no symbolic link leads there: `$TMPDIR` is anyone's.
    #[test]
    fn a_recorded_work_directory_is_removed_only_for_its_own_owner() {
        if !crate::testkit::needs_root("chown") {
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let fs = tempfile::tempdir().unwrap();
        let (run_a, work_a) = killed_run(tmp.path(), 1, fs.path(), 0);
        let (run_b, work_b) = killed_run(tmp.path(), 2, fs.path(), 65534);
        // A path through a symbolic link to a directory of the same owner.
        std::os::unix::fs::symlink(fs.path(), tmp.path().join("link")).unwrap();
        let (run_c, work_c) = killed_run(tmp.path(), 3, &tmp.path().join("link"), 0);
        let done = sweep_runs(tmp.path());
        assert_eq!(done.len(), 3, "{done:?}");
        assert!(!run_a.exists() && !work_a.exists(), "{done:?}");
        assert!(
            !run_b.exists() && work_b.exists(),
            "another user's: {done:?}"
        );
        assert!(
            !run_c.exists() && work_c.exists(),
            "through a link: {done:?}"
        );
    }

    /// `restore` (as root) under any roots removed every dead `sweetspot-run-*` in `$TMPDIR`,
    /// other users' too; now only those the running user owns.
    #[test]
    fn another_users_run_directory_is_left_alone() {
        if !crate::testkit::needs_root("chown") {
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let fs = tempfile::tempdir().unwrap();
        let (mine, my_work) = killed_run(tmp.path(), 1, fs.path(), 0);
        let (theirs, their_work) = killed_run(tmp.path(), 2, fs.path(), 65534);
        let nobody = Some(nix::unistd::Uid::from_raw(65534));
        nix::unistd::chown(&theirs, nobody, None).unwrap();
        let done = sweep_runs(tmp.path());
        assert_eq!(done.len(), 1, "{done:?}");
        assert!(!mine.exists() && !my_work.exists(), "{done:?}");
        assert!(theirs.exists() && their_work.exists(), "{done:?}");
        assert!(theirs.join(LOCK_FILE).exists());
    }
}
