//! The database and its locks as root sees them (issue 31, items 2, 4, 7, 9 and 12), on a fake
//! sysfs and procfs (the machine's knobs untouched): a database anyone may write is refused
//! (exit 2) before SQLite opens it, by `history`, `restore` and the daemon alike; a process
//! holding the database's open-lock or planting a symlink as a lock file cannot make root hang
//! or create a file; a read-only database whose `-shm` is gone shows what its WAL committed; a
//! database from a newer sweetspot is refused naming both schemas; and one rule for a read-only
//! database: commands that only read work, commands that journal refuse it with exit 2.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// `nobody`'s uid and gid on Debian (base-passwd: 65534).
const NOBODY: u32 = 65534;

/// A fake host: `common::Env`'s procfs and a sysfs with the mq-deadline disk sdz (fifo_batch
/// 16).
struct Host {
    env: common::Env,
    sys: PathBuf,
}

impl Host {
    fn new() -> Host {
        let env = common::Env::new();
        let sys = env.dir.path().join("sys");
        let d = sys.join("block/sdz");
        std::fs::create_dir_all(d.join("queue/iosched")).unwrap();
        std::fs::create_dir_all(d.join("device")).unwrap();
        for (file, v) in [
            ("dev", "8:240"),
            ("device/model", "FAKE"),
            ("device/serial", "Z1"),
            ("queue/scheduler", "none [mq-deadline]"),
            ("queue/nr_requests", "64"),
            ("queue/iosched/fifo_batch", "16"),
        ] {
            std::fs::write(d.join(file), format!("{v}\n")).unwrap();
        }
        Host { env, sys }
    }

    /// `sweetspot --db <db> --sysfs-root … --procfs-root … <args>`.
    fn cmd(&self, db: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(assert_cmd::cargo::cargo_bin("sweetspot"));
        c.arg("--db")
            .arg(db)
            .arg("--sysfs-root")
            .arg(&self.sys)
            .arg("--procfs-root")
            .arg(self.env.proc())
            .args(args);
        c
    }

    /// [`Host::cmd`] run to its end: exit code, stdout, stderr.
    fn run(&self, db: &Path, args: &[&str]) -> (Option<i32>, String, String) {
        text(self.cmd(db, args).output().unwrap())
    }

    fn fifo_batch(&self) -> String {
        std::fs::read_to_string(self.sys.join("block/sdz/queue/iosched/fifo_batch"))
            .unwrap()
            .trim()
            .to_string()
    }

    /// sdz's identity, as `devices --json` gives it.
    fn identity(&self) -> String {
        let (code, out, err) = self.run(&self.env.db(), &["devices", "--json"]);
        assert_eq!(code, Some(0), "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let devs = v
            .as_array()
            .cloned()
            .or_else(|| v["devices"].as_array().cloned())
            .unwrap();
        devs[0]["identity"].as_str().unwrap().to_string()
    }
}

fn text(out: Output) -> (Option<i32>, String, String) {
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// A child in a process group of its own, killed (the whole group) and reaped on drop.
struct Child(std::process::Child);

impl Child {
    fn spawn(cmd: &mut Command) -> Child {
        use std::os::unix::process::CommandExt;
        Child(cmd.process_group(0).spawn().unwrap())
    }

    /// Waits `secs` at most for the child to exit: its output, or `None` when still running.
    fn wait(&mut self, secs: u64) -> Option<Output> {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(secs) {
            if self.0.try_wait().unwrap().is_some() {
                let mut out = Output {
                    status: self.0.wait().unwrap(),
                    stdout: Vec::new(),
                    stderr: Vec::new(),
                };
                use std::io::Read;
                if let Some(mut e) = self.0.stderr.take() {
                    e.read_to_end(&mut out.stderr).unwrap();
                }
                if let Some(mut o) = self.0.stdout.take() {
                    o.read_to_end(&mut out.stdout).unwrap();
                }
                return Some(out);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.0.id()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.0.wait();
    }
}

#[test]
fn a_database_anyone_may_write_is_refused_by_history_restore_and_the_daemon() {
    let Some(_gate) = common::root::needs_root("chown") else {
        return;
    };
    let h = Host::new();
    let db = h.env.db();
    let (code, _, err) = h.run(&db, &["set", "sdz", "fifo_batch=8"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(h.fifo_batch(), "8");
    std::os::unix::fs::chown(&db, Some(NOBODY), Some(NOBODY)).unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o666)).unwrap();
    let before = common::names(h.env.dir.path());
    let want = format!(
        "sweetspot: error: database {}: it is world-writable (owner nobody (uid 65534), group \
         nogroup (gid 65534), mode 0666): whoever can write it could make root write kernel \
         knobs or run commands; fix: chmod o-w {}\n",
        db.display(),
        db.display()
    );
    for args in [&["history"][..], &["restore"], &["restore", "sdz"]] {
        let (code, out, err) = h.run(&db, args);
        assert_eq!(
            (code, out.as_str(), err.as_str()),
            (Some(2), "", &*want),
            "{args:?}"
        );
    }
    // The daemon: refused at start, before it opens the database (it would run forever).
    let etc = tempfile::tempdir().unwrap();
    let config = etc.path().join("daemon.toml");
    std::fs::write(&config, "# every key optional\n").unwrap();
    let mut daemon = Child::spawn(
        h.cmd(&db, &["daemon", "--config", config.to_str().unwrap()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped()),
    );
    let out = daemon.wait(30).expect("the daemon refused the database");
    let (code, _, err) = text(out);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(want.trim_end()), "{err}");
    // No knob changed, and SQLite never opened it (no -wal, -shm or lock file made).
    assert_eq!(h.fifo_batch(), "8");
    assert_eq!(common::names(h.env.dir.path()), before);
    // Owned by root and written by root alone, the same database restores.
    std::os::unix::fs::chown(&db, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, _, err) = h.run(&db, &["restore"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(h.fifo_batch(), "16");
}

#[test]
fn a_held_open_lock_makes_history_and_restore_give_up_naming_the_holder() {
    let h = Host::new();
    let db = h.env.db();
    let (code, _, err) = h.run(&db, &["set", "sdz", "fifo_batch=8"]);
    assert_eq!(code, Some(0), "{err}");
    let lock = h.env.dir.path().join("locks/s.db.open.lock");
    assert!(!lock.exists(), "removed after each open");
    std::fs::write(&lock, "").unwrap();
    let mut flock = Command::new("flock");
    flock.arg("-x").arg(&lock).args(["sleep", "30"]);
    let holder = Child::spawn(&mut flock);
    common::wait_for("flock holds the open-lock", 5, || {
        std::fs::read_to_string("/proc/locks")
            .unwrap()
            .contains(&format!(" {} ", holder.0.id()))
    });
    for args in [&["history"][..], &["restore"]] {
        let start = Instant::now();
        let mut c = Child::spawn(
            h.cmd(&db, args)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped()),
        );
        let out = c.wait(15).expect("gave up instead of hanging");
        let took = start.elapsed();
        let (code, _, err) = text(out);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(took < Duration::from_secs(7), "{args:?} took {took:?}");
        assert_eq!(
            err,
            format!(
                "sweetspot: error: database {}: opening the database: gave up after waiting 5 s \
                 for lock {}, held by pid {} (`flock -x {} sleep 30`); wait for it to finish or \
                 stop it, then try again\n",
                db.display(),
                lock.display(),
                holder.0.id(),
                lock.display()
            ),
            "{args:?}"
        );
    }
    assert_eq!(h.fifo_batch(), "8", "restore wrote nothing");
    drop(holder);
    let (code, _, err) = h.run(&db, &["restore"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(h.fifo_batch(), "16");
}

#[test]
fn a_symlink_planted_as_a_device_lock_is_refused_and_its_target_not_created() {
    let h = Host::new();
    let db = h.env.db();
    let (code, _, err) = h.run(&db, &["set", "sdz", "fifo_batch=8"]);
    assert_eq!(code, Some(0), "{err}");
    let id = h.identity();
    let safe: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let lock = h.env.dir.path().join("locks").join(format!("{safe}.lock"));
    let victim = h.env.dir.path().join("victim");
    std::os::unix::fs::symlink(&victim, &lock).unwrap();
    let (code, _, err) = h.run(&db, &["set", "sdz", "fifo_batch=4"]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err,
        format!(
            "sweetspot: error: lock file {}: is a symbolic link; refusing to use it (it could \
             make root create or lock another file); remove it\n",
            lock.display()
        )
    );
    assert!(!victim.exists(), "the symlink's target was created");
    assert_eq!(h.fifo_batch(), "8");
}

/// A database in `dir` with an older sweet spot checkpointed into it and a newer one only in
/// its `-wal` (no `-shm`): the state a crash or a copy leaves, read through a read-only mount.
fn database_with_a_newer_sweet_spot_in_its_wal(dir: &Path, identity: &str) {
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("s.db");
    let spot = |fifo: &str| {
        common::store_sweet_spot(
            &db,
            identity,
            "sdz",
            "6.18.0",
            &[("fifo_batch", fifo)],
            &[("fifo_batch", "16")],
            1.8,
        )
    };
    spot("8");
    // A reader keeps the database open, so the writer's close checkpoints nothing.
    let reader = rusqlite::Connection::open(&db).unwrap();
    reader
        .query_row("SELECT count(*) FROM sweet_spots", [], |r| {
            r.get::<_, i64>(0)
        })
        .unwrap();
    spot("32");
    let wal = work.path().join("s.db-wal");
    assert!(
        wal.metadata().unwrap().len() > 0,
        "the newer sweet spot is in the WAL"
    );
    std::fs::copy(&db, dir.join("s.db")).unwrap();
    std::fs::copy(&wal, dir.join("s.db-wal")).unwrap();
    drop(reader);
}

#[test]
fn a_read_only_database_without_its_shm_shows_what_its_wal_committed() {
    let Some(_gate) = common::root::needs_root("a read-only bind mount") else {
        return;
    };
    let h = Host::new();
    let id = h.identity();
    let src = tempfile::tempdir().unwrap();
    database_with_a_newer_sweet_spot_in_its_wal(src.path(), &id);
    let before = common::names(src.path());
    assert_eq!(before, ["s.db", "s.db-wal"]);
    let mnt = tempfile::tempdir().unwrap();
    let ro = common::BindMount::read_only(src.path(), &mnt.path().join("ro"));
    let db = ro.target.join("s.db");

    let (code, out, err) = h.run(&db, &["history", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let spots = v["sweet_spots"].as_array().unwrap();
    assert_eq!(spots.len(), 2, "{v}");
    let (code, out, err) = h.run(&db, &["profile", "export", "--format", "udev"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("ATTR{queue/iosched/fifo_batch}=\"32\""),
        "{out}"
    );
    assert!(!out.contains("\"8\""), "{out}");
    drop(ro);
    assert_eq!(
        common::names(src.path()),
        before,
        "the original is untouched"
    );
}

#[test]
fn a_database_from_a_newer_sweetspot_is_refused_naming_both_schemas() {
    let h = Host::new();
    let db = h.env.db();
    let (code, _, err) = h.run(&db, &["set", "sdz", "fifo_batch=8"]);
    assert_eq!(code, Some(0), "{err}");
    let c = rusqlite::Connection::open(&db).unwrap();
    // The schema this sweetspot migrated the new database to: the newest it knows.
    let knows: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert!(knows >= 9, "{knows}");
    c.execute_batch("PRAGMA user_version = 99;").unwrap();
    drop(c);
    let want = format!(
        "sweetspot: error: database {}: written by a newer sweetspot (schema 99, this one knows \
         {knows}); use that sweetspot with it, or give another --db\n",
        db.display()
    );
    for args in [
        &["history"][..],
        &["restore"],
        &["set", "sdz", "fifo_batch=4"],
    ] {
        let (code, _, err) = h.run(&db, args);
        assert_eq!((code, err.as_str()), (Some(2), want.as_str()), "{args:?}");
    }
    assert_eq!(h.fifo_batch(), "8");
}

#[test]
fn a_read_only_database_is_read_by_a_dry_run_and_refused_by_set_and_restore() {
    let Some(_gate) = common::root::needs_root("a read-only bind mount") else {
        return;
    };
    let h = Host::new();
    let id = h.identity();
    let src = tempfile::tempdir().unwrap();
    common::store_sweet_spot(
        &src.path().join("s.db"),
        &id,
        "sdz",
        "6.18.0",
        &[("fifo_batch", "32")],
        &[("fifo_batch", "16")],
        1.8,
    );
    let mnt = tempfile::tempdir().unwrap();
    let ro = common::BindMount::read_only(src.path(), &mnt.path().join("ro"));
    let db = ro.target.join("s.db");

    let (code, out, err) = h.run(&db, &["profile", "apply", "--dry-run"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("fifo_batch"), "{out}");
    for args in [&["set", "sdz", "fifo_batch=4"][..], &["restore"]] {
        let (code, _, err) = h.run(&db, args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with(&format!(
                "sweetspot: error: database {}: cannot create or write files in {}: ",
                db.display(),
                ro.target.display()
            )),
            "{args:?}: {err}"
        );
    }
    assert_eq!(h.fifo_batch(), "16");
}
