//! A killed `--scratch` run's leftover loop device belongs to the database that journaled its
//! knobs: a sweep run with another `--db` (`restore`, the next `--scratch` run) leaves it
//! alone and names that database, whose `restore` then puts the queue back and removes it.
//! Leftovers of older versions (no record of their database) are left alone unless this
//! sweep's database knows them. As root, on real loop devices.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{active_scheduler, offered_schedulers};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use sweetspot::bench::stale;

/// `sweetspot --db <db> restore` with `$TMPDIR` = `tmp`; its stdout (exit 0 asserted).
fn restore(tmp: &Path, db: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_sweetspot"))
        .env("TMPDIR", tmp)
        .arg("--db")
        .arg(db)
        .arg("restore")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// On drop (pass or fail): restores the killed run's knobs with its own database, then
/// removes whatever is left under the test's `$TMPDIR`.
struct Cleanup {
    tmp: tempfile::TempDir,
    db: PathBuf,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = Command::new(env!("CARGO_BIN_EXE_sweetspot"))
            .env("TMPDIR", self.tmp.path())
            .arg("--db")
            .arg(&self.db)
            .arg("restore")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        stale::sweep_regardless(self.tmp.path());
    }
}

/// Kernel names of the loop devices backed by a file under `dir`.
fn loops_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/sys/block").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let b = std::fs::read_to_string(e.path().join("loop/backing_file")).unwrap_or_default();
        if name.starts_with("loop") && Path::new(b.trim()).starts_with(dir) {
            out.push(name);
        }
    }
    out
}

/// The scheduler the killed bench sets: one no kernel makes a loop device's default (kyber,
/// else bfq, as this kernel offers them: both are build options), so seeing it on the queue
/// means the bench set it; mq-deadline only on a kernel with neither.
fn detour() -> &'static str {
    let line = std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("loop"))
        .find_map(|e| std::fs::read_to_string(e.path().join("queue/scheduler")).ok())
        .unwrap_or_default();
    let offered = offered_schedulers(&line);
    ["kyber", "bfq"]
        .into_iter()
        .find(|s| offered.iter().any(|o| o == s))
        .unwrap_or("mq-deadline")
}

fn scheduler(dev: &str) -> String {
    active_scheduler(&std::fs::read_to_string(format!("/sys/block/{dev}/queue/scheduler")).unwrap())
}

#[test]
fn a_restore_with_another_db_leaves_a_killed_scratch_run_to_its_own_db() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().to_path_buf();
    let (db, other) = (tmp.join("kb2.db"), tmp.join("other.db"));
    let guard = Cleanup {
        tmp: dir,
        db: db.clone(),
    };
    let sched = detour();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sweetspot"))
        .env("TMPDIR", &tmp)
        .arg("--db")
        .arg(&db)
        .args([
            "-q",
            "bench",
            "--scratch",
            "--set",
            &format!("scheduler={sched}"),
        ])
        .args(["--loads", "no_load", "--runs", "50"])
        .args(["--job-scale", "0.02", "--lead", "0.3", "--load-mib", "32"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once `sched` is on its loop queue (journaled before it was written).
    let deadline = Instant::now() + Duration::from_secs(120);
    let dev = loop {
        if let Some(d) = loops_under(&tmp).pop()
            && scheduler(&d) == sched
        {
            break d;
        }
        assert!(Instant::now() < deadline, "bench never set {sched}");
        assert!(child.try_wait().unwrap().is_none(), "bench ended early");
        std::thread::sleep(Duration::from_millis(50));
    };
    child.kill().unwrap();
    child.wait().unwrap();

    // Another database: nothing of it is torn down, and it says whose it is, once.
    let out = restore(&tmp, &other);
    let cmd = format!("`sweetspot --db {} restore`", db.display());
    assert_eq!(out.matches(&cmd).count(), 1, "{out}");
    assert!(
        out.contains(&format!("journaled in {}", db.display())),
        "{out}"
    );
    // (The run's own directory and its job files may go: no knob is in them.)
    assert!(
        !out.contains("detached") && !out.contains("unmounted"),
        "{out}"
    );
    assert_eq!(loops_under(&tmp), vec![dev.clone()], "{out}");
    assert_eq!(scheduler(&dev), sched);
    // The sweep a `--scratch` run with the other database does first: the same.
    let swept = stale::sweep(&tmp, &other);
    assert!(swept.removed.is_empty(), "{swept:?}");
    assert_eq!(swept.left.len(), 1, "{swept:?}");
    assert_eq!(loops_under(&tmp), vec![dev.clone()]);

    // Its own database puts the queue back, then removes the leftover.
    let store = sweetspot::store::Store::open(&db).unwrap();
    let original = store
        .journal_open(Some(&dev), None)
        .unwrap()
        .into_iter()
        .find(|e| e.knob == "scheduler")
        .expect("scheduler journaled")
        .original;
    drop(store);
    let out = restore(&tmp, &db);
    assert!(out.contains("leftover of a killed run"), "{out}");
    assert!(!out.contains("restored 0 knobs"), "{out}");
    assert!(!out.contains("left alone"), "{out}");
    assert!(loops_under(&tmp).is_empty(), "{out}");
    let want = original
        .split(['[', ']'])
        .nth(1)
        .unwrap_or(&original)
        .trim();
    assert_eq!(scheduler(&dev), want, "{out}");
    drop(guard);
}

/// A dead scratch directory under `tmp` as a killed run leaves it: owner lock free, a loop
/// device attached to its `backing.img`, and `record` as its database record, if any.
fn leftover(tmp: &Path, name: &str, record: Option<&Path>) -> (PathBuf, String) {
    let dir = tmp.join(format!("{}{name}", stale::DIR_PREFIX));
    std::fs::create_dir(&dir).unwrap();
    drop(stale::own(&dir).unwrap());
    if let Some(db) = record {
        sweetspot::bench::journal_db::record(&dir, db).unwrap();
    }
    let img = dir.join("backing.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let out = Command::new("losetup")
        .args(["-f", "--show"])
        .arg(&img)
        .output()
        .unwrap();
    assert!(out.status.success());
    let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (dir, dev.trim_start_matches("/dev/").to_string())
}

#[test]
fn leftovers_without_an_open_entry_go_and_unknown_old_ones_stay() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let _guard = Cleanup {
        db: tmp.path().join("none.db"),
        tmp,
    };
    let tmp = _guard.tmp.path();
    let own = tmp.join("own.db");
    // Its recorded database is gone: nothing can be put back, so it is removed.
    let (gone, _) = leftover(tmp, "gone", Some(&tmp.join("deleted.db")));
    // An older sweetspot's (no record), unknown to this sweep's database: left alone.
    let (old, old_dev) = leftover(tmp, "old", None);
    let swept = stale::sweep(tmp, &own);
    assert_eq!(swept.removed.len(), 1, "{swept:?}");
    assert!(!gone.exists());
    assert_eq!(swept.left.len(), 1, "{swept:?}");
    assert!(swept.left[0].contains("older sweetspot"), "{swept:?}");
    assert!(old.exists());
    assert_eq!(loops_under(&old), vec![old_dev]);
}
