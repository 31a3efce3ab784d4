//! One writer per device: an exclusive `flock(2)` on a lock file per device identity, held by
//! every command that writes a device's knobs (`set`, `bench --device`, `tune`, `restore`) for
//! as long as it may write them. A second writer is refused (exit 2) with the holder named:
//! the holder writes its command, pid, tune id (once it has one) and start time into the file.
//! The host-wide knobs have one lock of their own ([`HOST`]), taken besides the device's by a
//! command whose setting or policy has one.
//!
//! Lock files live in `/run/sweetspot/locks/` for a real device as root (so every database on
//! the host shares them, and a reboot empties them), else in `<db dir>/locks/` (a simulated
//! device, a fake sysfs tree, or not root: private to the database).
//!
//! A [`DeviceLock`] removes its file when it is dropped, while it still holds the lock and only
//! when the path still names its own file; a writer that opened the old file just before sees,
//! once it has the lock, that the path no longer names it, and starts again. So lock files do
//! not pile up (a scratch device's identity names a new backing file each time). A file left
//! by a killed holder is taken over by the next writer, or removed by [`sweep`].
//!
//! This module imports only [`crate::sysroot`] and [`crate::error`]: `store`'s level.

use crate::sysroot::SysRoot;
use crate::{Error, Result};
use nix::fcntl::{Flock, FlockArg};
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The identity of the host-wide knobs (vm, kernel: files under `/proc/sys`): they have one
/// writer at a time too, whichever device it measures, since two tunes that both write
/// `dirty_ratio` would each journal the other's value as the original.
pub const HOST: &str = "host";

/// The identity of the daemon's own lock: one `sweetspot daemon` per machine (per database on
/// a fake tree, [`path`]).
pub const DAEMON: &str = "daemon";

/// How a refusal names the host lock: `the host (dirty_ratio, swappiness)`, `knobs` being the
/// host-wide knobs the refused command wanted to write.
pub fn host_label(knobs: &[&str]) -> String {
    format!("the host ({})", knobs.join(", "))
}

/// Where lock files of real devices live as root.
pub const RUN_DIR: &str = "/run/sweetspot/locks";

/// The lock directory for `identity`: [`RUN_DIR`] as root for what is real, else
/// `<db dir>/locks`. Real: for [`HOST`] the real `/proc` (its knobs live there), for
/// [`DAEMON`] both the real `/sys` and `/proc`, for a device the real `/sys` (and not a
/// `sim:` identity).
pub fn dir(db: &Path, root: &SysRoot, identity: &str) -> PathBuf {
    let real = match identity {
        HOST => root.is_real_proc(),
        DAEMON => root.is_real() && root.is_real_proc(),
        _ => root.is_real() && !identity.starts_with("sim:"),
    };
    if nix::unistd::geteuid().is_root() && real {
        PathBuf::from(RUN_DIR)
    } else {
        db.parent().unwrap_or_else(|| Path::new(".")).join("locks")
    }
}

/// The lock file of `identity`: its name is the identity with every character but ASCII
/// letters, digits, `-` and `.` replaced by `_`.
pub fn path(db: &Path, root: &SysRoot, identity: &str) -> PathBuf {
    let safe: String = identity
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir(db, root, identity).join(format!("{safe}.lock"))
}

/// Who holds a lock, as written into its file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    /// The command, e.g. `set`, `tune`, `bench`, `restore`.
    pub command: String,
    /// Its process.
    pub pid: u32,
    /// The tune's id, once a tune has one.
    pub tune: Option<i64>,
    /// When it took the lock, Unix seconds.
    pub started: i64,
}

impl Holder {
    /// This process running `command`, now.
    pub fn me(command: &str) -> Holder {
        Holder {
            command: command.to_string(),
            pid: std::process::id(),
            tune: None,
            started: unix_now(),
        }
    }

    fn to_text(&self) -> String {
        let mut s = format!("command={}\npid={}\n", self.command, self.pid);
        if let Some(t) = self.tune {
            s += &format!("tune={t}\n");
        }
        s + &format!("started={}\n", self.started)
    }

    fn parse(text: &str) -> Option<Holder> {
        let mut h = Holder {
            command: String::new(),
            pid: 0,
            tune: None,
            started: 0,
        };
        for line in text.lines() {
            match line.split_once('=') {
                Some(("command", v)) => h.command = v.to_string(),
                Some(("pid", v)) => h.pid = v.parse().ok()?,
                Some(("tune", v)) => h.tune = Some(v.parse().ok()?),
                Some(("started", v)) => h.started = v.parse().ok()?,
                _ => {}
            }
        }
        (h.pid > 0 && !h.command.is_empty()).then_some(h)
    }

    fn alive(&self) -> bool {
        i32::try_from(self.pid)
            .is_ok_and(|p| nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), None).is_ok())
    }
}

impl std::fmt::Display for Holder {
    /// `` `sweetspot tune` (pid 4242, tune 7, for 35 s) ``.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`sweetspot {}` (pid {}", self.command, self.pid)?;
        if let Some(t) = self.tune {
            write!(f, ", tune {t}")?;
        }
        write!(f, ", for {} s)", (unix_now() - self.started).max(0))
    }
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// An exclusive per-device lock, held while the value lives; its file is removed on drop.
#[derive(Debug)]
pub struct DeviceLock {
    file: Flock<File>,
    path: PathBuf,
    /// (st_dev, st_ino) of the locked file.
    id: (u64, u64),
    holder: std::cell::RefCell<Holder>,
}

/// What [`DeviceLock::try_acquire`] found.
#[derive(Debug)]
pub enum Taken {
    /// The lock is ours.
    Ours(DeviceLock),
    /// Someone else holds it: who, when the file says so.
    Held(Option<Holder>),
}

impl DeviceLock {
    /// Takes the lock at `path` (from [`path`]) for `holder` without waiting. Errors:
    /// [`Error::BadInput`] (exit 2) naming the device (`label`) and the holder when another
    /// writer holds it; the I/O error of creating or locking the file.
    pub fn acquire(path: &Path, label: &str, holder: Holder) -> Result<DeviceLock> {
        match DeviceLock::try_acquire(path, holder)? {
            Taken::Ours(l) => Ok(l),
            Taken::Held(h) => Err(Error::BadInput(format!(
                "{label} is in use by {}; one writer at a time: wait for it to finish or \
                 stop it (Ctrl-C or SIGTERM); lock {}",
                h.map_or_else(|| "another sweetspot".to_string(), |h| h.to_string()),
                path.display()
            ))),
        }
    }

    /// [`DeviceLock::acquire`], returning [`Taken::Held`] instead of an error when another
    /// writer holds the lock. Errors: the I/O error of creating or locking the file.
    pub fn try_acquire(path: &Path, holder: Holder) -> Result<Taken> {
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d)
                .map_err(|e| Error::io(format!("creating {}", d.display()), e))?;
        }
        let mut last = None;
        // A few short retries: the path was unlinked by the previous holder after we opened it,
        // or a probe ([`held`]) or a holder that is just starting (its info not yet written)
        // has it for a moment.
        for _ in 0..50 {
            let f = File::options()
                .create(true)
                .truncate(false)
                .read(true)
                .write(true)
                .open(path)
                .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
            match attempt(path, f, &holder)? {
                Attempt::Ours(l) => return Ok(Taken::Ours(l)),
                Attempt::Unlinked => {}
                Attempt::Busy(h) if h.as_ref().is_some_and(Holder::alive) => {
                    return Ok(Taken::Held(h));
                }
                Attempt::Busy(h) => {
                    last = Some(h);
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
        Ok(Taken::Held(last.flatten()))
    }

    /// Records the tune's id in the lock file, for the message a second writer gets.
    /// Errors: the I/O error of writing the file.
    pub fn set_tune(&self, id: i64) -> Result<()> {
        self.holder.borrow_mut().tune = Some(id);
        self.write_holder()
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Who holds it (this process).
    pub fn holder(&self) -> Holder {
        self.holder.borrow().clone()
    }

    fn write_holder(&self) -> Result<()> {
        let text = self.holder.borrow().to_text();
        self.file
            .set_len(0)
            .and_then(|()| self.file.write_all_at(text.as_bytes(), 0))
            .map_err(|e| Error::io(format!("writing {}", self.path.display()), e))
    }
}

/// One try of [`DeviceLock::try_acquire`] with `f`, the file opened at `path`.
enum Attempt {
    Ours(DeviceLock),
    /// Locked, but `path` no longer names `f`: its holder unlinked it when it let go.
    Unlinked,
    /// Held, by the holder its contents name if any.
    Busy(Option<Holder>),
}

fn attempt(path: &Path, f: File, holder: &Holder) -> Result<Attempt> {
    match Flock::lock(f, FlockArg::LockExclusiveNonblock) {
        Ok(file) => {
            let fd = file
                .metadata()
                .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
            let id = (fd.dev(), fd.ino());
            let now = std::fs::symlink_metadata(path).ok();
            if now.is_none_or(|m| (m.dev(), m.ino()) != id) {
                return Ok(Attempt::Unlinked);
            }
            let l = DeviceLock {
                file,
                path: path.to_path_buf(),
                id,
                holder: std::cell::RefCell::new(holder.clone()),
            };
            l.write_holder()?;
            Ok(Attempt::Ours(l))
        }
        Err((f, nix::errno::Errno::EWOULDBLOCK)) => {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut &f, &mut text);
            Ok(Attempt::Busy(Holder::parse(&text)))
        }
        Err((_, e)) => Err(Error::io(
            format!("locking {}", path.display()),
            std::io::Error::from(e),
        )),
    }
}

impl Drop for DeviceLock {
    /// Removes the lock file while the lock is still held, when the path still names it.
    fn drop(&mut self) {
        if std::fs::symlink_metadata(&self.path).is_ok_and(|m| (m.dev(), m.ino()) == self.id) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// True unless the lock file at `path` is missing or can be locked now (it is released again
/// at once). An unexpected error counts as held, so nothing is written under a live writer.
pub fn held(path: &Path) -> bool {
    let f = match File::options().read(true).write(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return false,
        Err(_) => return true,
    };
    Flock::lock(f, FlockArg::LockExclusiveNonblock).is_err()
}

/// Who holds the lock at `path`, when it is held and its file says so.
pub fn holder(path: &Path) -> Option<Holder> {
    if !held(path) {
        return None;
    }
    Holder::parse(&std::fs::read_to_string(path).ok()?)
}

/// Removes the lock files in `dir` that nobody holds (left by writers killed with SIGKILL),
/// each while holding its lock and only when the path still names the file locked. Returns
/// how many were removed.
pub fn sweep(dir: &Path) -> usize {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut n = 0;
    for e in rd.flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "lock") {
            continue;
        }
        // Not through `try_acquire`: that writes a holder into the file, and a writer that
        // meets the lock held for this moment would be refused naming it. A dead holder's
        // name makes it retry.
        let Ok(f) = File::options().read(true).write(true).open(&p) else {
            continue;
        };
        let Ok(l) = Flock::lock(f, FlockArg::LockExclusiveNonblock) else {
            continue;
        };
        let same = match (l.metadata(), std::fs::symlink_metadata(&p)) {
            (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
            _ => false,
        };
        if same && std::fs::remove_file(&p).is_ok() {
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock_at(dir: &tempfile::TempDir) -> PathBuf {
        dir.path().join("locks/loop_x.lock")
    }

    #[test]
    fn the_host_lock_is_the_machines_when_proc_is_real_and_a_device_lock_when_sys_is() {
        let db = Path::new("/tmp/x/sweetspot.db");
        let local = PathBuf::from("/tmp/x/locks");
        let run = if nix::unistd::geteuid().is_root() {
            PathBuf::from(RUN_DIR)
        } else {
            local.clone()
        };
        let fake_sys = SysRoot::new("/tmp/x/sys", "/proc");
        let fake_proc = SysRoot::new("/sys", "/tmp/x/proc");
        assert_eq!(dir(db, &fake_sys, HOST), run);
        assert_eq!(dir(db, &fake_sys, "loop0"), local);
        assert_eq!(dir(db, &fake_sys, DAEMON), local);
        assert_eq!(dir(db, &fake_proc, HOST), local);
        assert_eq!(dir(db, &fake_proc, "loop0"), run);
        assert_eq!(dir(db, &fake_proc, DAEMON), local);
        assert_eq!(dir(db, &SysRoot::default(), DAEMON), run);
        assert_eq!(dir(db, &SysRoot::default(), "sim:seed"), local);
    }

    #[test]
    fn a_second_writer_is_refused_naming_the_holder() {
        let d = tempfile::tempdir().unwrap();
        let p = lock_at(&d);
        let l = DeviceLock::acquire(&p, "loop9", Holder::me("tune")).unwrap();
        l.set_tune(42).unwrap();
        assert!(held(&p));
        assert_eq!(holder(&p).unwrap().tune, Some(42));
        let e = DeviceLock::acquire(&p, "loop9", Holder::me("set")).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, Error::BadInput(_)), "{e:?}");
        assert!(
            msg.contains("loop9 is in use by `sweetspot tune` (pid ")
                && msg.contains(&format!("pid {}, tune 42, for ", std::process::id())),
            "{msg}"
        );
    }

    #[test]
    fn the_lock_file_is_removed_when_the_guard_drops() {
        let d = tempfile::tempdir().unwrap();
        let p = lock_at(&d);
        for _ in 0..3 {
            let l = DeviceLock::acquire(&p, "loop9", Holder::me("set")).unwrap();
            assert!(p.exists());
            drop(l);
            assert!(!p.exists(), "lock file left behind");
        }
        assert!(!held(&p));
        assert_eq!(std::fs::read_dir(p.parent().unwrap()).unwrap().count(), 0);
    }

    #[test]
    fn a_file_left_by_a_killed_holder_is_taken_over_or_swept() {
        let d = tempfile::tempdir().unwrap();
        let p = lock_at(&d);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        // A holder that died: its file says who, but nobody holds the flock.
        std::fs::write(&p, "command=tune\npid=2147483646\nstarted=1\n").unwrap();
        assert!(!held(&p));
        let l = DeviceLock::acquire(&p, "loop9", Holder::me("set")).unwrap();
        assert_eq!(holder(&p).unwrap().command, "set");
        drop(l);
        assert!(!p.exists());
        std::fs::write(&p, "").unwrap();
        std::fs::write(p.with_file_name("other.txt"), "").unwrap();
        assert_eq!(sweep(p.parent().unwrap()), 1);
        assert!(!p.exists() && p.with_file_name("other.txt").exists());
    }

    #[test]
    fn a_handle_on_an_unlinked_lock_file_does_not_count() {
        // A writer opened the file just before its holder dropped the guard (and unlinked it):
        // the flock it then gets is on a file nobody else will ever lock, so it must not count.
        let d = tempfile::tempdir().unwrap();
        let p = lock_at(&d);
        let first = DeviceLock::acquire(&p, "loop9", Holder::me("set")).unwrap();
        let old = File::options().read(true).write(true).open(&p).unwrap();
        assert!(matches!(
            attempt(&p, old.try_clone().unwrap(), &Holder::me("x")).unwrap(),
            Attempt::Busy(Some(_))
        ));
        drop(first);
        assert!(matches!(
            attempt(&p, old, &Holder::me("tune")).unwrap(),
            Attempt::Unlinked
        ));
        // A new holder gets a new file at the path; a second writer is refused.
        let second = DeviceLock::acquire(&p, "loop9", Holder::me("tune")).unwrap();
        assert!(held(&p));
        assert_eq!(holder(&p).unwrap().command, "tune");
        assert!(DeviceLock::acquire(&p, "loop9", Holder::me("set")).is_err());
        drop(second);
        assert!(!p.exists());
    }
}
