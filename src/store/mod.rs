//! The SQLite store (rusqlite): devices, the undo journal, trials, runs and sweet spots.
//!
//! The database runs in WAL mode with `synchronous=FULL`, so a journal row that
//! [`Store`] has written survives a crash or power loss before the knob write that follows it.
//! Migrations are versioned (rusqlite_migration, tracked in `PRAGMA user_version`). A file that
//! is not ours (another application id, or not SQLite at all) is refused and never overwritten.

mod devices;
pub mod journal;
mod schema;
pub mod trials;
pub mod tunes;

use crate::trust::Origin;
use crate::{Error, Result};
use rusqlite::{Connection, OpenFlags};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// `PRAGMA application_id` of a sweetspot database: ASCII "SWSP".
pub(crate) const APPLICATION_ID: i32 = 0x5357_5350;

/// An open sweetspot database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// The private copy [`Store::open_read_only`] reads a read-only WAL database from
    /// (removed when the store is dropped, after `conn` is closed: fields drop in order).
    _copy: Option<tempfile::TempDir>,
}

impl Store {
    /// The default database path: `/var/lib/sweetspot/sweetspot.db` for root, else
    /// `$XDG_STATE_HOME/sweetspot/sweetspot.db` (default `~/.local/state`). `--db` and
    /// `SWEETSPOT_DB` override it (handled by the CLI).
    pub(crate) fn default_path() -> PathBuf {
        if nix::unistd::geteuid().is_root() {
            return PathBuf::from("/var/lib/sweetspot/sweetspot.db");
        }
        let state = std::env::var_os("XDG_STATE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
            .unwrap_or_else(|| PathBuf::from("."));
        state.join("sweetspot/sweetspot.db")
    }

    /// Opens (creating if needed) the database at `path` and brings it to the latest schema.
    /// It does not check who may have written it: callers with an origin do, first
    /// (`Store::check_trusted`).
    ///
    /// Errors: [`Error::Store`] with `bad_path: true` (exit 2), before anything is created,
    /// when `path` exists and is not a regular file (directory, device, fifo, socket), when
    /// its directory cannot be created or written (read-only, no permission, /proc), when the
    /// file itself cannot be written (its mode, owner, an immutable attribute), when the
    /// file is not a sweetspot database or is corrupt, or its schema is newer than this
    /// release's (the file is left untouched), and when another process holds its open-lock
    /// longer than `crate::lock::WAIT` (named).
    pub fn open(path: &Path) -> Result<Store> {
        let err = |msg: String, bad_path: bool| store_error(path, msg, bad_path);
        if let Ok(meta) = std::fs::metadata(path)
            && !meta.is_file()
        {
            let kind = file_kind(&meta.file_type());
            return Err(err(
                format!("is a {kind}, not a regular file; give a database file"),
                true,
            ));
        }
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        // Directories it creates are its user's alone (0700), like /var/lib/sweetspot.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| {
                err(
                    format!("cannot create its directory {}: {e}", dir.display()),
                    unusable_place(&e),
                )
            })?;
        // Two processes opening a new database at once would both see user_version 0 and
        // both create the schema: an exclusive lock on its open-lock ([`open_lock_path`],
        // held until this function returns) makes check and migration one step. It lives in
        // the lock directory (0700, files 0600: nobody else can open it, so nobody else can
        // hold it), and a wait longer than [`crate::lock::WAIT`] gives up naming the holder.
        Self::writable_lock_dir(path, dir)?;
        let _lock = crate::lock::acquire_waiting(
            &open_lock_path(path),
            "opening the database",
            crate::lock::Holder::me("open"),
            crate::lock::WAIT,
        )
        .map_err(|e| match e {
            Error::BadInput(m) => err(m, true),
            other => err(other.to_string(), false),
        })?;
        let existed = path.metadata().map(|m| m.len() > 0).unwrap_or(false);
        // A new database is its user's alone (0600): it names the machine's disks and holds
        // the journal. SQLite gives its -wal and -shm the database file's mode.
        if !existed && let Err(e) = create_private(path) {
            return Err(err(format!("cannot be created: {e}"), unusable_place(&e)));
        }
        let mut conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
        )
        .map_err(|e| err(e.to_string(), false))?;
        // SQLite falls back to read-only when the file cannot be written (mode, owner, an
        // immutable attribute): every later write would fail with a bare "readonly database".
        if conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) {
            return Err(err(
                "cannot be written (check its mode, owner and `lsattr`); give a writable \
                 database file"
                    .into(),
                true,
            ));
        }
        // Wait for another sweetspot process that is writing (e.g. creating the schema)
        // rather than mistaking its lock for a foreign file.
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(|e| err(e.to_string(), false))?;
        if existed {
            Self::check_ours(&conn).map_err(|msg| err(msg, true))?;
            Self::check_not_newer(&conn).map_err(|msg| err(msg, true))?;
        }
        Self::set_up(&mut conn, path)?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
            _copy: None,
        })
    }

    /// Creates the lock directory `locks` under `dir` (0700), the directory of the database
    /// at `path`, unless it is there, and checks files can be written in it: errors name
    /// `dir`.
    fn writable_lock_dir(path: &Path, dir: &Path) -> Result<()> {
        let err = |msg: String, bad_path: bool| store_error(path, msg, bad_path);
        let locks = dir.join("locks");
        if let Err(e) = std::fs::DirBuilder::new().mode(0o700).create(&locks) {
            let is_dir = std::fs::symlink_metadata(&locks).is_ok_and(|m| m.is_dir());
            if e.kind() != std::io::ErrorKind::AlreadyExists || !is_dir {
                let what = if is_dir || e.kind() != std::io::ErrorKind::AlreadyExists {
                    e.to_string()
                } else {
                    format!("{} is in the way, not a directory ({e})", locks.display())
                };
                return Err(err(
                    format!("cannot create or write files in {}: {what}", dir.display()),
                    unusable_place(&e),
                ));
            }
        }
        // Root too is refused by a read-only file system (EROFS), where the lock directory
        // already exists.
        if let Err(e) = nix::unistd::access(&locks, nix::unistd::AccessFlags::W_OK) {
            let e = std::io::Error::from(e);
            return Err(err(
                format!("cannot create or write files in {}: {e}", dir.display()),
                unusable_place(&e),
            ));
        }
        Ok(())
    }

    /// Sets up the freshly opened connection `conn` to the database at `path`: WAL, full
    /// sync and foreign keys on, and the schema migrated to the latest version.
    fn set_up(conn: &mut Connection, path: &Path) -> Result<()> {
        let err = |msg: String, bad_path: bool| store_error(path, msg, bad_path);
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| err(format!("cannot enable WAL: {e}"), false))?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(|e| err(e.to_string(), false))?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(|e| err(e.to_string(), false))?;
        schema::migrations()
            .to_latest(conn)
            .map_err(|e| err(format!("migration failed: {e}"), false))?;
        Ok(())
    }

    /// Checks that the database at `path` (or the directory it will be created in), its
    /// directories and its `-wal`, `-shm` and `-journal` files when present obey
    /// [`crate::trust`]'s rule for `origin`: [`Origin::System`] for the default path and the
    /// daemon config's `db`, [`Origin::Named`] for `--db` or `SWEETSPOT_DB`. The database
    /// chooses which knobs root writes and to what (the journal, the sweet spots), so it is
    /// checked before SQLite opens it. Errors: [`Error::BadInput`] (exit 2) naming the file,
    /// its owner and mode and the fix.
    pub(crate) fn check_trusted(path: &Path, origin: Origin) -> Result<()> {
        crate::trust::check_path(path, "database", origin)?;
        Self::check_own_directory(path)?;
        for suffix in ["-wal", "-shm", "-journal"] {
            let side = sibling(path, suffix);
            if std::fs::symlink_metadata(&side).is_ok() {
                crate::trust::check_path(&side, "database", origin)?;
            }
        }
        Ok(())
    }

    /// Refuses (as root) a database whose own directory others may create files in (a sticky
    /// `/tmp`, which the trust rule allows above a file): the database, its `-wal` or its
    /// `-journal` may not exist yet when they are checked, and another user could create one
    /// (or a symbolic link) there before SQLite opens it. Errors: [`Error::BadInput`] (exit
    /// 2) naming the directory and the fix.
    fn check_own_directory(path: &Path) -> Result<()> {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        if !crate::trust::is_root() {
            return Ok(());
        }
        let abs =
            std::path::absolute(path).map_err(|e| Error::io(path.display().to_string(), e))?;
        let Some(dir) = abs.parent() else {
            return Ok(());
        };
        let Ok(meta) = std::fs::metadata(dir) else {
            return Ok(()); // Not there yet: created by sweetspot, 0700 (`Store::open`).
        };
        let mode = meta.permissions().mode();
        if mode & 0o002 != 0 || (mode & 0o020 != 0 && meta.gid() != 0) {
            return Err(Error::BadInput(format!(
                "database {}: its directory {} lets others create files in it (mode {:04o}): \
                 another user could put their own file or link where the database, its -wal or \
                 its -journal will be opened; fix: keep the database in a directory only its owner \
                 can write (e.g. --db {}/sweetspot/sweetspot.db)",
                path.display(),
                dir.display(),
                mode & 0o7777,
                dir.display()
            )));
        }
        Ok(())
    }

    /// Refuses a database whose schema is newer than this sweetspot's ([`schema::latest`]):
    /// its tables may mean what this release cannot know.
    fn check_not_newer(conn: &Connection) -> std::result::Result<(), String> {
        let v: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| e.to_string())?;
        let known = schema::latest();
        if v > known {
            return Err(format!(
                "written by a newer sweetspot (schema {v}, this one knows {known}); use that \
                 sweetspot with it, or give another --db"
            ));
        }
        Ok(())
    }

    /// Opens the database at `path` for a command that only reads it (`history`, `status`,
    /// `profile export`): as [`Store::open`] where it and its directory can be written, else
    /// (a read-only mount, another user's state directory, a read-only file) read-only,
    /// without creating, locking or migrating anything. A WAL database whose `-shm` file
    /// cannot be created is opened `immutable` (SQLite's URI parameter: no locks, so a writer
    /// active at that moment is not seen) when its `-wal` is empty or absent, else read from
    /// a private copy of both (`immutable` would ignore what the WAL committed).
    ///
    /// Errors: those of [`Store::open`]; in the read-only case also [`Error::Store`] when
    /// the file is not a sweetspot database, its schema is newer than this release's (exit
    /// 2), or older (a write command must migrate it first), or its WAL cannot be copied.
    pub fn open_read_only(path: &Path) -> Result<Store> {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let writable = nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK).is_ok()
            && !nix::sys::statvfs::statvfs(dir)
                .is_ok_and(|v| v.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY));
        // A file that cannot be written (its mode, owner, an immutable attribute) is read
        // like one in a read-only directory.
        let file_writable = nix::unistd::access(path, nix::unistd::AccessFlags::W_OK).is_ok();
        if (writable && file_writable) || !path.is_file() {
            return Store::open(path);
        }
        let err = |msg: String| Error::Store {
            path: path.to_path_buf(),
            msg,
            bad_path: true,
        };
        let ro = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
        let usable = |conn: Connection| -> std::result::Result<Connection, String> {
            Self::check_ours(&conn)?;
            // A read-only WAL database fails here, at the first read, without its -shm.
            conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                r.get::<_, i64>(0)
            })
            .map_err(|e| e.to_string())?;
            Ok(conn)
        };
        let mut copy = None;
        let conn = match Connection::open_with_flags(path, ro)
            .map_err(|e| e.to_string())
            .and_then(usable)
        {
            Ok(conn) => conn,
            // `immutable` reads the database file alone: the transactions committed to a
            // `-wal` that no checkpoint has copied back would be silently missed. So a
            // non-empty WAL is read from a private copy of both files (opened read-write,
            // SQLite replays the WAL into it); the original is never written.
            Err(_) if sibling(path, "-wal").metadata().is_ok_and(|m| m.len() > 0) => {
                let (dir, conn) = private_copy(path).map_err(err)?;
                copy = Some(dir);
                usable(conn).map_err(|e| err(format!("cannot open read-only: {e}")))?
            }
            Err(_) => {
                let uri = format!("file:{}?immutable=1", uri_path(path));
                Connection::open_with_flags(uri, ro)
                    .map_err(|e| e.to_string())
                    .and_then(usable)
                    .map_err(|e| err(format!("cannot open read-only: {e}")))?
            }
        };
        Self::check_not_newer(&conn).map_err(err)?;
        let pending = schema::migrations()
            .pending_migrations(&conn)
            .map_err(|e| err(e.to_string()))?;
        if pending != 0 {
            return Err(err(format!(
                "its schema is {pending} version(s) behind this sweetspot and its directory is \
                 read-only; open it once where it can be written (any sweetspot command) \
                 to migrate it"
            )));
        }
        Ok(Store {
            conn,
            path: path.to_path_buf(),
            _copy: copy,
        })
    }

    /// Unix seconds as `YYYY-MM-DD HH:MM:SS` (UTC), by SQLite's `datetime()`.
    pub(crate) fn utc(&self, secs: i64) -> Result<String> {
        Ok(self
            .conn()
            .query_row("SELECT datetime(?1, 'unixepoch')", [secs], |r| r.get(0))?)
    }

    /// Refuses files that are not SQLite, or are SQLite but belong to someone else.
    fn check_ours(conn: &Connection) -> std::result::Result<(), String> {
        let app: i32 = conn
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .map_err(|e| format!("not a sweetspot database ({e}); refusing to touch it"))?;
        if app == APPLICATION_ID {
            return Ok(());
        }
        let tables: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .map_err(|e| format!("not a sweetspot database ({e}); refusing to touch it"))?;
        // application_id 0 with our six tables: a database another sweetspot process is
        // creating right now (seen when two processes open a new file at once), not a
        // foreign one.
        let ours: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN \
                 ('devices', 'journal', 'tunes', 'trials', 'runs', 'sweet_spots')",
                [],
                |r| r.get(0),
            )
            .map_err(|e| format!("not a sweetspot database ({e}); refusing to touch it"))?;
        if app == 0 && ours == 6 {
            return Ok(());
        }
        if app != 0 || tables > 0 {
            return Err(format!(
                "not a sweetspot database (application_id {app:#x}, {tables} schema objects); \
                 refusing to touch it"
            ));
        }
        Ok(())
    }

    /// The underlying connection, for the per-table modules.
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The underlying connection, mutably (transactions).
    pub(crate) fn conn_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// Where this database lives.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// An [`Error::Store`] naming the database at `path`; `bad_path` when the path cannot hold a
/// sweetspot database (exit 2).
fn store_error(path: &Path, msg: String, bad_path: bool) -> Error {
    Error::Store {
        path: path.to_path_buf(),
        msg,
        bad_path,
    }
}

/// Creates the empty file `path` with mode 0600 (not following a symlink), or does nothing
/// when it exists. Errors: the I/O error of the create.
fn create_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
    {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        r => r.map(drop),
    }
}

/// The open-lock of the database at `path` ([`Store::open`]):
/// `<db dir>/locks/<db file name>.open.lock`, beside the device locks of its simulated and
/// fake-tree devices ([`crate::lock::dir`]).
pub(crate) fn open_lock_path(path: &Path) -> PathBuf {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or_else(|| "db".into(), |n| n.to_string_lossy().into_owned());
    dir.join("locks")
        .join(format!("{}.open.lock", crate::lock::file_name_of(&name)))
}

/// `<path><suffix>`: SQLite's `-wal`, `-shm` and `-journal` files of a database.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Copies the database at `path` and its `-wal` into a private temporary directory (0700)
/// and opens the copy (read-write: SQLite replays the WAL into it), for
/// [`Store::open_read_only`]. Errors: the copy's I/O or SQLite error, as text.
fn private_copy(path: &Path) -> std::result::Result<(tempfile::TempDir, Connection), String> {
    let what = |e: std::io::Error| format!("cannot copy it to read its WAL: {e}");
    let dir = tempfile::Builder::new()
        .prefix("sweetspot-db-")
        .tempdir()
        .map_err(what)?;
    let copy = dir.path().join("copy.db");
    std::fs::copy(path, &copy).map_err(what)?;
    std::fs::copy(sibling(path, "-wal"), sibling(&copy, "-wal")).map_err(what)?;
    let conn = Connection::open_with_flags(&copy, OpenFlags::SQLITE_OPEN_READ_WRITE)
        .map_err(|e| format!("cannot open a copy to read its WAL: {e}"))?;
    Ok((dir, conn))
}

/// `directory`, `character device`, ... for a message.
fn file_kind(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "directory"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_fifo() {
        "fifo"
    } else if t.is_socket() {
        "socket"
    } else {
        "special file"
    }
}

/// True when an error creating a file or directory means the place itself cannot hold a
/// database (bad input: read-only, no permission, no such directory, a file in the way, a
/// pseudo filesystem like /proc), not that the job failed (a full disk, an I/O error).
/// `path` made absolute and percent-encoded for a SQLite `file:` URI (`%`, `?`, `#` and
/// space escaped, as RFC 3986 requires of a path).
fn uri_path(path: &Path) -> String {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = String::new();
    for c in abs.to_string_lossy().chars() {
        match c {
            '%' | '?' | '#' | ' ' => out.push_str(&format!("%{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

fn unusable_place(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            libc::EACCES
                | libc::EPERM
                | libc::EROFS
                | libc::ENOENT
                | libc::ENOTDIR
                | libc::EISDIR
                | libc::EEXIST
                | libc::EINVAL
                | libc::ENAMETOOLONG
                | libc::ELOOP
        )
    )
}

/// Seconds since the Unix epoch, for `*_at` columns.
pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uri_path_escapes_what_a_file_uri_would_read_as_syntax() {
        assert_eq!(
            uri_path(Path::new("/a b/c?d#e%f.db")),
            "/a%20b/c%3Fd%23e%25f.db"
        );
    }

    #[test]
    fn creates_migrates_and_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b/s.db");
        drop(Store::open(&p).unwrap());
        let s = Store::open(&p).unwrap();
        let v: i64 = s
            .conn()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert!(v >= 1);
        let sync: i64 = s
            .conn()
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap();
        assert_eq!(sync, 2, "synchronous=FULL");
    }

    #[test]
    fn concurrent_opens_of_a_new_database_all_succeed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("new.db");
        let handles: Vec<_> = (0..6)
            .map(|_| {
                let p = p.clone();
                std::thread::spawn(move || Store::open(&p).map(|_| ()).map_err(|e| e.to_string()))
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), Ok(()));
        }
        let s = Store::open(&p).unwrap();
        let app: i32 = s
            .conn()
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .unwrap();
        assert_eq!(app, APPLICATION_ID);
    }

    #[test]
    fn refuses_foreign_and_garbage_files_without_touching_them() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("garbage.db");
        std::fs::write(
            &garbage,
            b"this is not sqlite at all, just text\n".repeat(200),
        )
        .unwrap();
        let before = std::fs::read(&garbage).unwrap();
        let e = Store::open(&garbage).err().unwrap();
        assert_eq!(e.exit_code(), 2, "{e}");
        assert_eq!(std::fs::read(&garbage).unwrap(), before);

        let foreign = dir.path().join("foreign.db");
        let c = Connection::open(&foreign).unwrap();
        c.execute_batch("CREATE TABLE photos(id INTEGER); INSERT INTO photos VALUES (1);")
            .unwrap();
        drop(c);
        let e = Store::open(&foreign).err().unwrap();
        assert!(e.to_string().contains("not a sweetspot database"), "{e}");
        let c = Connection::open(&foreign).unwrap();
        let n: i64 = c
            .query_row("SELECT count(*) FROM photos", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
    }

    #[test]
    fn a_fifo_is_refused_before_anything_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.db");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let e = Store::open(&fifo).err().unwrap();
        assert_eq!(e.exit_code(), 2, "{e}");
        assert_eq!(
            e.to_string(),
            format!(
                "database {}: is a fifo, not a regular file; give a database file",
                fifo.display()
            )
        );
        // No fifo.db-journal, fifo.db.open-lock, -wal or -shm.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("fifo.db")]);
    }

    #[test]
    fn a_file_in_the_way_of_its_directory_is_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("plain"), "x").unwrap();
        let db = dir.path().join("plain/s.db");
        let e = Store::open(&db).err().unwrap();
        assert_eq!(e.exit_code(), 2, "{e}");
        let want = format!(
            "database {}: cannot create its directory {}",
            db.display(),
            dir.path().join("plain").display()
        );
        assert!(e.to_string().starts_with(&want), "{e}");
    }

    #[test]
    fn a_new_database_and_the_directories_made_for_it_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("new/sub/s.db");
        let mut store = Store::open(&db).unwrap();
        store
            .conn_mut()
            .execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
            .unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&db), 0o600);
        assert_eq!(mode(&dir.path().join("new/sub/s.db-wal")), 0o600);
        assert_eq!(mode(&dir.path().join("new")), 0o700);
        assert_eq!(mode(&dir.path().join("new/sub")), 0o700);
        // An existing database keeps the mode its admin gave it.
        drop(store);
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o640)).unwrap();
        Store::open(&db).unwrap();
        assert_eq!(mode(&db), 0o640);
    }

    #[test]
    fn a_full_disk_is_a_failure_not_bad_input() {
        let enospc = std::io::Error::from_raw_os_error(libc::ENOSPC);
        assert!(!unusable_place(&enospc));
        assert!(unusable_place(&std::io::Error::from_raw_os_error(
            libc::EROFS
        )));
    }

    #[test]
    fn a_directory_is_bad_input_not_a_failure() {
        let dir = tempfile::tempdir().unwrap();
        let e = Store::open(dir.path()).err().unwrap();
        assert_eq!(e.exit_code(), 2, "{e}");
        assert!(e.to_string().contains("is a directory"), "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
    #[test]
    fn a_database_from_a_newer_schema_is_refused_naming_both_versions() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.db");
        drop(Store::open(&p).unwrap());
        Connection::open(&p)
            .unwrap()
            .execute_batch("PRAGMA user_version = 99;")
            .unwrap();
        let want = format!(
            "database {}: written by a newer sweetspot (schema 99, this one knows {}); use that \
             sweetspot with it, or give another --db",
            p.display(),
            super::schema::latest()
        );
        let e = Store::open(&p).err().unwrap();
        assert_eq!((e.exit_code(), e.to_string()), (2, want.clone()));
        // The read-only path too (here a file that cannot be written: chmod as non-root, an
        // immutable attribute's stand-in is the read-only open of a 0444 file below).
        let e = Store::open_read_only(&p).err().unwrap();
        assert_eq!((e.exit_code(), e.to_string()), (2, want));
        // Nothing migrated or changed.
        let v: i64 = Connection::open(&p)
            .unwrap()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, 99);
    }

    #[test]
    fn the_open_lock_is_private_and_gone_once_open() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.db");
        let s = Store::open(&p).unwrap();
        assert_eq!(open_lock_path(&p), dir.path().join("locks/s.db.open.lock"));
        assert!(
            !open_lock_path(&p).exists(),
            "removed once the database is open"
        );
        let locks = std::fs::metadata(dir.path().join("locks")).unwrap();
        assert_eq!(locks.permissions().mode() & 0o7777, 0o700);
        drop(s);
    }

    #[test]
    fn as_root_a_database_right_in_a_sticky_world_writable_directory_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        if !crate::trust::is_root() {
            eprintln!("skipped: needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let e = Store::check_trusted(&tmp.join("s.db"), Origin::Named).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string().contains(&format!(
                "its directory {} lets others create files in it (mode 1777)",
                tmp.display()
            )),
            "{e}"
        );
        // One level down, in a directory of its own: fine (the sticky one is above it).
        let own = tmp.join("sweetspot");
        std::fs::create_dir(&own).unwrap();
        assert!(Store::check_trusted(&own.join("s.db"), Origin::Named).is_ok());
    }

    #[test]
    fn as_root_a_database_owned_by_nobody_fails_the_system_rule_and_world_write_both() {
        use std::os::unix::fs::PermissionsExt;
        if !crate::trust::is_root() {
            eprintln!("skipped: needs root (chown)");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.db");
        drop(Store::open(&p).unwrap());
        assert!(Store::check_trusted(&p, Origin::System).is_ok());
        std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
        let e = Store::check_trusted(&p, Origin::System).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string().starts_with(&format!(
                "database {}: it is owned by nobody (uid 65534), not root",
                p.display()
            )),
            "{e}"
        );
        // Named by root (no SUDO_UID): another user's database is refused too.
        assert!(Store::check_trusted(&p, Origin::Named).is_err());
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = Store::check_trusted(&p, Origin::Named).unwrap_err();
        assert!(e.to_string().contains("mode 0666"), "{e}");
        // A -wal anyone may write is refused as the database is.
        std::os::unix::fs::chown(&p, Some(0), Some(0)).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let wal = sibling(&p, "-wal");
        std::fs::write(&wal, "").unwrap();
        std::fs::set_permissions(&wal, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = Store::check_trusted(&p, Origin::System).unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("database {}: it is world-writable", wal.display())),
            "{e}"
        );
    }
}
