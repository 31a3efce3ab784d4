//! `sweetspot restore` with a journal someone else wrote to: rows inserted with rusqlite behind
//! sweetspot's back (the reproductions) name a file outside the fake tree and
//! `core_pattern`; others have columns of the wrong type. Each is reported on stderr with its
//! row id, skipped and left open; the admin's own `set` is restored; the exit status is 1.
//! A fake sysfs and procfs only: no loop device, the host's knobs untouched.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

/// `<dir>/tree/{sys,proc}` with the mq-deadline disk sdz (fifo_batch 16, nr_requests 64),
/// swappiness 60 and a `core_pattern`, and `<dir>/victim/passwd` beside the tree.
struct Tree {
    dir: tempfile::TempDir,
    tmp: tempfile::TempDir,
}

impl Tree {
    fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("tree");
        let d = t.join("sys/block/sdz");
        for (file, v) in [
            ("dev", "8:240"),
            ("device/model", "FAKE"),
            ("device/serial", "Z1"),
            ("queue/scheduler", "none [mq-deadline]"),
            ("queue/nr_requests", "64"),
            ("queue/iosched/fifo_batch", "16"),
        ] {
            put(&d.join(file), v);
        }
        put(&t.join("proc/sys/vm/swappiness"), "60");
        put(&t.join("proc/sys/kernel/core_pattern"), "core");
        put(
            &dir.path().join("victim/passwd"),
            "root:x:0:0::/root:/bin/sh",
        );
        Tree {
            dir,
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    fn sys(&self) -> PathBuf {
        self.dir.path().join("tree/sys")
    }

    fn proc(&self) -> PathBuf {
        self.dir.path().join("tree/proc")
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("s.db")
    }

    /// `sweetspot --db … --sysfs-root … --procfs-root … <args>`, with its own `$TMPDIR` (the
    /// sweep of leftovers looks there): exit code, stdout, stderr.
    fn run(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let out = assert_cmd::Command::cargo_bin("sweetspot")
            .unwrap()
            .env("TMPDIR", self.tmp.path())
            .arg("--db")
            .arg(self.db())
            .arg("--sysfs-root")
            .arg(self.sys())
            .arg("--procfs-root")
            .arg(self.proc())
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(rel))
            .unwrap()
            .trim()
            .to_string()
    }

    /// Inserts a journal row: (device, knob, path, original, apply_order, recorded_at) with
    /// owner `set`. Returns its id.
    fn insert(&self, device: Option<&str>, knob: &str, path: &Path, original: &str) -> i64 {
        let c = rusqlite::Connection::open(self.db()).unwrap();
        c.execute(
            "INSERT INTO journal (device, knob, path, original, apply_order, owner, recorded_at) \
             VALUES (?1, ?2, ?3, ?4, 0, 'set', 1)",
            rusqlite::params![device, knob, path.to_str().unwrap(), original],
        )
        .unwrap();
        c.last_insert_rowid()
    }
}

fn put(path: &Path, v: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("{v}\n")).unwrap();
}

/// The two rows: before, `restore` exited 0 with `pwned::0:0::/:/bin/sh` in the file
/// beside the tree and `|/tmp/evil %p` in `core_pattern`.
#[test]
fn restore_refuses_rows_outside_the_catalogue_and_restores_the_rest() {
    let t = Tree::new();
    let (code, _, err) = t.run(&["set", "sdz", "fifo_batch=4"]);
    assert_eq!(code, Some(0), "{err}");
    let climb = t.proc().join("../../victim/passwd");
    let passwd = t.insert(None, "passwd", &climb, "pwned::0:0::/:/bin/sh");
    let core = t.proc().join("sys/kernel/core_pattern");
    let core_row = t.insert(None, "core_pattern", &core, "|/tmp/evil %p");

    let (code, out, err) = t.run(&["restore"]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert_eq!(t.read("victim/passwd"), "root:x:0:0::/root:/bin/sh");
    assert_eq!(t.read("tree/proc/sys/kernel/core_pattern"), "core");
    assert_eq!(t.read("tree/sys/block/sdz/queue/iosched/fifo_batch"), "16");
    assert!(out.starts_with("restored 1 knob\n"), "{out}");
    assert!(
        err.contains(&format!(
            "journal row {passwd} (knob 'passwd') refused, not written: its path '{}' has '.' \
             or '..' components",
            climb.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "journal row {core_row} (knob 'core_pattern') refused, not written: device knob \
             core_pattern is journaled without a device"
        )),
        "{err}"
    );
    assert!(
        err.ends_with(
            "sweetspot: error: 2 journal rows refused, not written (not a knob file or value \
             the catalogue allows, or unreadable); see above\n"
        ),
        "{err}"
    );
    // Still refused on the next run, never written.
    let (code, _, _) = t.run(&["restore"]);
    assert_eq!(code, Some(1));
    assert_eq!(t.read("tree/proc/sys/kernel/core_pattern"), "core");
}

/// Before, one row with `recorded_at` as text or a BLOB `original` made `set` and `restore`
/// fail on every run, and the admin's changed knobs stayed changed.
#[test]
fn a_malformed_row_neither_stops_set_nor_restore() {
    let t = Tree::new();
    let (code, _, err) = t.run(&["set", "sdz", "fifo_batch=4"]);
    assert_eq!(code, Some(0), "{err}");
    let c = rusqlite::Connection::open(t.db()).unwrap();
    let q = t.sys().join("block/sdz/queue");
    c.execute(
        "INSERT INTO journal (device, knob, path, original, apply_order, owner, recorded_at) \
         VALUES ('sdz', 'nr_requests', ?1, '64', 1, 'tune:7', 'yesterday')",
        [q.join("nr_requests").to_str().unwrap()],
    )
    .unwrap();
    let text = c.last_insert_rowid();
    c.execute(
        "INSERT INTO journal (device, knob, path, original, apply_order, owner, recorded_at) \
         VALUES (NULL, 'swappiness', ?1, x'00ff', 4, 'set', 1)",
        [t.proc().join("sys/vm/swappiness").to_str().unwrap()],
    )
    .unwrap();
    let blob = c.last_insert_rowid();
    drop(c);
    let (code, _, err) = t.run(&["set", "sdz", "nr_requests=32"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(t.read("tree/sys/block/sdz/queue/nr_requests"), "32");

    let (code, out, err) = t.run(&["restore"]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert_eq!(t.read("tree/sys/block/sdz/queue/iosched/fifo_batch"), "16");
    assert_eq!(t.read("tree/sys/block/sdz/queue/nr_requests"), "64");
    assert!(out.starts_with("restored 2 knobs\n"), "{out}");
    for (id, knob, why) in [
        (text, "nr_requests", "recorded_at is Text, not an integer"),
        (blob, "swappiness", "original is Blob, not text"),
    ] {
        assert!(
            err.contains(&format!(
                "journal row {id} (knob '{knob}') refused, not written: {why}"
            )),
            "{err}"
        );
    }
    assert!(err.contains("error: 2 journal rows refused"), "{err}");
}
