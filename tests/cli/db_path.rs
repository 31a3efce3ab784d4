//! `--db` paths that cannot hold a database: exit 2 with a message naming the database path
//! and why, before anything is created (no `-journal`, `.open-lock`, `-wal` or `-shm` file).
#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::{Path, PathBuf};

const FLAT: &str = "data/surfaces/flat-fifo_batch.toml";

/// `sweetspot --db <db> tune --sim flat-fifo_batch.toml`: exit code and stderr.
fn tune_with_db(db: &Path) -> (Option<i32>, String) {
    let out = assert_cmd::Command::cargo_bin("sweetspot")
        .unwrap()
        .arg("--db")
        .arg(db)
        .args(["tune", "--sim", FLAT, "--budget", "8"])
        .output()
        .unwrap();
    assert!(out.stdout.is_empty(), "no report");
    common::code_and_stderr(out)
}

#[test]
fn a_fifo_or_socket_as_db_is_refused_and_nothing_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let sock = dir.path().join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    for (p, kind) in [(&fifo, "fifo"), (&sock, "socket")] {
        let (code, err) = tune_with_db(p);
        assert_eq!(code, Some(2), "{err}");
        let want = format!(
            "sweetspot: error: database {}: is a {kind}, not a regular file; give a database file\n",
            p.display()
        );
        assert_eq!(err, want);
    }
    assert_eq!(common::names(dir.path()), vec!["pipe", "sock"]);
}

#[test]
fn a_db_in_proc_is_bad_input_naming_the_database() {
    // Creating a file directly in /proc always fails (ENOENT); nothing is written anywhere.
    let (code, err) = tune_with_db(Path::new("/proc/nope.db"));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.starts_with(
            "sweetspot: error: database /proc/nope.db: cannot create or write files in /proc: "
        ),
        "{err}"
    );
    assert!(!err.contains("open-lock"), "{err}");
}

#[test]
fn a_db_in_a_read_only_directory_is_bad_input_naming_the_database() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let ro: PathBuf = tmp.path().join("ro");
    // Root ignores directory modes, so as root the directory is a read-only bind mount.
    let _guard = if nix::unistd::geteuid().is_root() {
        Some(common::BindMount::read_only(&src, &ro))
    } else {
        std::fs::create_dir(&ro).unwrap();
        let mode = std::os::unix::fs::PermissionsExt::from_mode(0o555);
        std::fs::set_permissions(&ro, mode).unwrap();
        None
    };
    let db = ro.join("s.db");
    let (code, err) = tune_with_db(&db);
    assert_eq!(code, Some(2), "{err}");
    let want = format!(
        "sweetspot: error: database {}: cannot create or write files in {}: ",
        db.display(),
        ro.display()
    );
    assert!(err.starts_with(&want), "{err}");
    assert!(common::names(&ro).is_empty());
}

/// Makes `path` immutable (`chattr +i`: even root cannot write it) until dropped.
struct Immutable(PathBuf);

impl Immutable {
    fn new(path: &Path) -> Immutable {
        let ok = std::process::Command::new("chattr")
            .arg("+i")
            .arg(path)
            .status()
            .unwrap()
            .success();
        assert!(ok, "chattr +i {}", path.display());
        Immutable(path.to_path_buf())
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&self.0)
            .status();
    }
}

#[test]
fn a_db_file_that_cannot_be_written_is_bad_input_naming_it_and_still_readable() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    drop(sweetspot::store::Store::open(&db).unwrap());
    let before = std::fs::read(&db).unwrap();
    // Root ignores file modes, so as root the file is made immutable.
    let _guard = if nix::unistd::geteuid().is_root() {
        Some(Immutable::new(&db))
    } else {
        let mode = std::os::unix::fs::PermissionsExt::from_mode(0o444);
        std::fs::set_permissions(&db, mode).unwrap();
        None
    };
    let (code, err) = tune_with_db(&db);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err,
        format!(
            "sweetspot: error: database {}: cannot be written (check its mode, owner and \
             `lsattr`); give a writable database file\n",
            db.display()
        )
    );
    assert_eq!(std::fs::read(&db).unwrap(), before, "nothing lost");
    // A command that only reads it still does.
    let out = common::sweetspot(&db, &["history"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn restore_with_a_database_that_does_not_exist_creates_nothing_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("typo/x.db");
    let out = common::sweetspot(&db, &["restore"]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().next().unwrap(),
        format!(
            "restored 0 knobs: {} does not exist (nothing was journaled with this --db)",
            db.display()
        )
    );
    assert!(common::names(dir.path()).is_empty(), "nothing created");
    // An unknown device is still bad input.
    let out = common::sweetspot(&db, &["restore", "nosuchdev9"]);
    assert_eq!(out.status.code(), Some(2));
}
