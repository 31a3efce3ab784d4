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
//! by a killed holder is taken over by the next writer, or removed by `sweep`.
//!
//! A lock file decides who may write a device, so nobody but the running user may create,
//! replace or even open one: lock directories are created 0700 and one that the running user
//! does not own, or that others may write, is refused (`ensure_dir`); lock files are
//! created 0600 and opened with `O_NOFOLLOW` (a symlink planted at a lock file's path would
//! make root create or lock the file it points to) and `O_CLOEXEC`. (`flock(2)` needs only a
//! read descriptor: a lock file others can read is one they can hold forever.)
//!
//! A command that waits for a lock (`acquire_waiting`, the database's open-lock) gives up
//! after `WAIT` with exit 2, naming the holder: from the file, else from `/proc/locks`.
//!
//! This module imports only [`crate::sysroot`], [`crate::trust`] and [`crate::error`]:
//! `store`'s level.

use crate::sysroot::SysRoot;
use crate::{Error, Result};
use nix::fcntl::{Flock, FlockArg};
use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long [`acquire_waiting`] waits for a lock another process holds before it gives up
/// (exit 2, naming the holder). Opening the database holds its open-lock for the time a
/// schema check or migration takes: milliseconds, seconds on a slow disk; a wait longer than
/// this is someone holding it on purpose or a hung process, and a command of root's must not
/// hang behind either.
pub(crate) const WAIT: Duration = Duration::from_secs(5);

/// The identity of the host-wide knobs (vm, kernel: files under `/proc/sys`): they have one
/// writer at a time too, whichever device it measures, since two tunes that both write
/// `dirty_ratio` would each journal the other's value as the original.
pub const HOST: &str = "host";

/// The identity of the daemon's own lock: one `sweetspot daemon` per machine (per database on
/// a fake tree, [`path`]).
pub(crate) const DAEMON: &str = "daemon";

/// How a refusal names the host lock: `the host (dirty_ratio, swappiness)`, `knobs` being the
/// host-wide knobs the refused command wanted to write.
pub(crate) fn host_label(knobs: &[&str]) -> String {
    format!("the host ({})", knobs.join(", "))
}

/// Where lock files of real devices live as root.
pub const RUN_DIR: &str = "/run/sweetspot/locks";

/// The lock directory for `identity`: [`RUN_DIR`] as root for what is real, else
/// `<db dir>/locks`. Real: for [`HOST`] the real `/proc` (its knobs live there), for
/// [`DAEMON`] both the real `/sys` and `/proc`, for a device the real `/sys` (and not a
/// `sim:` identity).
pub(crate) fn dir(db: &Path, root: &SysRoot, identity: &str) -> PathBuf {
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
    dir(db, root, identity).join(format!("{}.lock", file_name_of(identity)))
}

/// `name` as a lock file's name: every character but ASCII letters, digits, `-` and `.`
/// replaced by `_`.
pub(crate) fn file_name_of(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
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
                describe(path, h),
                path.display()
            ))),
        }
    }

    /// [`DeviceLock::acquire`], returning [`Taken::Held`] instead of an error when another
    /// writer holds the lock. Errors: the I/O error of creating or locking the file.
    pub fn try_acquire(path: &Path, holder: Holder) -> Result<Taken> {
        if let Some(d) = path.parent() {
            ensure_dir(d)?;
        }
        let mut last = None;
        // A few short retries: the path was unlinked by the previous holder after we opened it,
        // or a probe ([`held`]) or a holder that is just starting (its info not yet written)
        // has it for a moment.
        for _ in 0..50 {
            let f = open_lock_file(path)?;
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
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn write_holder(&self) -> Result<()> {
        let text = self.holder.borrow().to_text();
        self.file
            .set_len(0)
            .and_then(|()| self.file.write_all_at(text.as_bytes(), 0))
            .map_err(|e| Error::io(format!("writing {}", self.path.display()), e))
    }
}

/// [`DeviceLock::acquire`], waiting up to `wait` (usually [`WAIT`]) while another process
/// holds the lock. Errors: [`Error::BadInput`] (exit 2) once `wait` has passed, naming what
/// waited (`label`), the lock file and its holder ([`describe`]); those of
/// [`DeviceLock::try_acquire`].
pub(crate) fn acquire_waiting(
    path: &Path,
    label: &str,
    holder: Holder,
    wait: Duration,
) -> Result<DeviceLock> {
    let start = Instant::now();
    loop {
        match DeviceLock::try_acquire(path, holder.clone())? {
            Taken::Ours(l) => return Ok(l),
            Taken::Held(h) if start.elapsed() >= wait => {
                return Err(Error::BadInput(format!(
                    "{label}: gave up after waiting {} s for lock {}, held by {}; wait for it \
                     to finish or stop it, then try again",
                    wait.as_secs(),
                    path.display(),
                    describe(path, h)
                )));
            }
            Taken::Held(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Who holds the lock at `path`, for a message: `h` (what its file says) when that process
/// lives, else the process `/proc/locks` names (`pid 4242 (`flock -x … sleep 30`)`: any
/// process that opened the file can hold it, not only sweetspot), else `another process`.
pub(crate) fn describe(path: &Path, h: Option<Holder>) -> String {
    if let Some(h) = h.filter(Holder::alive) {
        return h.to_string();
    }
    match proc_locks_pid(path) {
        Some(pid) => {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|b| {
                    let words: Vec<String> = b
                        .split(|&c| c == 0)
                        .filter(|w| !w.is_empty())
                        .map(|w| String::from_utf8_lossy(w).into_owned())
                        .collect();
                    words.join(" ")
                })
                .unwrap_or_default();
            let cmd: String = cmd.chars().filter(|c| !c.is_control()).take(200).collect();
            if cmd.is_empty() {
                format!("pid {pid}")
            } else {
                format!("pid {pid} (`{cmd}`)")
            }
        }
        None => "another process".to_string(),
    }
}

/// The pid holding a lock on the file at `path`, from `/proc/locks` (proc(5): `1: FLOCK
/// ADVISORY WRITE <pid> <major>:<minor>:<inode> 0 EOF`, the device as `%02x:%02x` of the
/// inode's superblock, fs/locks.c `lock_get_status`; a waiter's line has `->` after the
/// id). An overlay or btrfs file's `st_dev` may not be its superblock's: then the inode alone
/// decides.
fn proc_locks_pid(path: &Path) -> Option<u32> {
    let m = std::fs::symlink_metadata(path).ok()?;
    let dev = format!(
        "{:02x}:{:02x}:{}",
        libc::major(m.dev()),
        libc::minor(m.dev()),
        m.ino()
    );
    let text = std::fs::read_to_string("/proc/locks").ok()?;
    let holders: Vec<(u32, &str)> = text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.get(1) == Some(&"->") {
                return None;
            }
            Some((f.get(4)?.parse().ok()?, *f.get(5)?))
        })
        .collect();
    let inode = format!(":{}", m.ino());
    holders
        .iter()
        .find(|(_, d)| *d == dev)
        .or_else(|| holders.iter().find(|(_, d)| d.ends_with(&inode)))
        .map(|(pid, _)| *pid)
}

/// Creates lock directory `d` (and its missing parents) mode 0700 when it is absent, and
/// checks it: a directory (not a symlink to one), owned by the running user, writable by
/// no one else; and the directory it is in obeys [`crate::trust`]'s rule for a file named on
/// the command line (the database's own check, with its origin, is the caller's). Errors:
/// [`Error::BadInput`] (exit 2) naming the directory, its owner and mode and the fix, or
/// why it cannot be created (a read-only file system, no permission).
pub(crate) fn ensure_dir(d: &Path) -> Result<()> {
    if let Err(e) = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(d)
    {
        let context = format!("creating lock directory {}", d.display());
        return Err(match e.raw_os_error() {
            Some(libc::EROFS | libc::EACCES | libc::EPERM | libc::ENOTDIR | libc::EEXIST) => {
                Error::BadInput(format!(
                    "{context}: {e}; commands that write knobs need a database in a writable \
                     directory"
                ))
            }
            _ => Error::io(context, e),
        });
    }
    let meta = std::fs::symlink_metadata(d)
        .map_err(|e| Error::io(format!("reading {}", d.display()), e))?;
    let me = nix::unistd::geteuid().as_raw();
    let mode = meta.permissions().mode() & 0o7777;
    let why = if !meta.is_dir() {
        Some("is not a directory (a symlink?)".to_string())
    } else if meta.uid() != me {
        Some(format!(
            "is owned by {}, not {}",
            user(meta.uid()),
            user(me)
        ))
    } else if mode & 0o022 != 0 {
        Some("is writable by others".to_string())
    } else {
        None
    };
    if let Some(why) = why {
        return Err(Error::BadInput(format!(
            "lock directory {}: {why} (owner {}, mode {mode:04o}): whoever can write it \
             could plant a symlink there or hold a lock forever; fix: rm -r {0} (sweetspot \
             makes it again, mode 0700), or chown {} {0} && chmod 0700 {0}",
            d.display(),
            user(meta.uid()),
            user_login(me),
        )));
    }
    if let Some(parent) = d.parent().filter(|p| !p.as_os_str().is_empty()) {
        crate::trust::check_path(
            parent,
            "lock directory's parent",
            crate::trust::Origin::Named,
        )?;
    }
    Ok(())
}

/// `name (uid N)`, or `uid N`.
fn user(uid: u32) -> String {
    match nix::unistd::User::from_uid(uid.into()) {
        Ok(Some(u)) => format!("{} (uid {uid})", u.name),
        _ => format!("uid {uid}"),
    }
}

/// `name`, or the uid, for a `chown` command.
fn user_login(uid: u32) -> String {
    match nix::unistd::User::from_uid(uid.into()) {
        Ok(Some(u)) => u.name,
        _ => uid.to_string(),
    }
}

/// Opens (creating it mode 0600 if needed) the lock file at `path` to lock it: with
/// `O_NOFOLLOW` and `O_CLOEXEC`; a file another user owns is refused, a wider mode left by an
/// older sweetspot is narrowed to 0600. Errors: [`Error::BadInput`] (exit 2) for a symlink, a
/// file that is not a regular file or is another user's; the I/O error of opening it.
fn open_lock_file(path: &Path) -> Result<File> {
    let refuse = |why: &str| {
        Error::BadInput(format!(
            "lock file {}: {why}; refusing to use it (it could make root create or lock \
             another file); remove it",
            path.display()
        ))
    };
    let f = File::options()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => refuse("is a symbolic link"),
            Some(libc::EROFS | libc::EACCES | libc::EPERM) => Error::BadInput(format!(
                "lock file {}: {e}; commands that write knobs need a database in a writable \
                 directory",
                path.display()
            )),
            _ => Error::io(format!("opening {}", path.display()), e),
        })?;
    let meta = f
        .metadata()
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    if !meta.is_file() {
        return Err(refuse("is not a regular file"));
    }
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(refuse(&format!(
            "is owned by {}, not {}",
            user(meta.uid()),
            user(me)
        )));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        f.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| Error::io(format!("chmod 0600 {}", path.display()), e))?;
    }
    Ok(f)
}

/// Opens an existing lock file to probe or read it: read-write (a probe locks it), no symlink
/// followed.
fn open_existing(path: &Path) -> std::io::Result<File> {
    // O_NONBLOCK: a FIFO at the path must not hang the probe; only a regular file is one of
    // our lock files.
    let f = File::options()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(f)
}

/// True when `path` can be a lock file sweetspot made for database `db`: a `*.lock` file
/// right in [`RUN_DIR`] or in `<db dir>/locks` ([`dir`]), with no `.` or `..` component. A
/// lock path read back from the database (a tune's row) is used only then: the database is
/// not trusted to name what root opens (SECURITY.md).
pub(crate) fn is_lock_path(db: &Path, path: &Path) -> bool {
    use std::path::Component;
    let db = std::path::absolute(db).unwrap_or_else(|_| db.to_path_buf());
    let local = db.parent().unwrap_or_else(|| Path::new(".")).join("locks");
    path.extension().is_some_and(|x| x == "lock")
        && path
            .parent()
            .is_some_and(|p| p == Path::new(RUN_DIR) || p == local)
        && path
            .file_name()
            .is_some_and(|n| !n.to_string_lossy().starts_with('.'))
        && !path
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
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
pub(crate) fn held(path: &Path) -> bool {
    let f = match open_existing(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return false,
        Err(_) => return true,
    };
    Flock::lock(f, FlockArg::LockExclusiveNonblock).is_err()
}

/// Who holds the lock at `path`, when it is held and its file says so.
pub(crate) fn holder(path: &Path) -> Option<Holder> {
    if !held(path) {
        return None;
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut open_existing(path).ok()?, &mut text).ok()?;
    Holder::parse(&text)
}

/// Removes the lock files in `dir` that nobody holds (left by writers killed with SIGKILL),
/// each while holding its lock and only when the path still names the file locked. Returns
/// how many were removed.
pub(crate) fn sweep(dir: &Path) -> usize {
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
        let Ok(f) = open_existing(&p) else {
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
mod tests;
