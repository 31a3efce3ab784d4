//! `sweetspot tune --device` on a real scratch loop device (root): a small tune stores a sweet
//! spot and leaves the device as it found it; SIGKILL mid-tune, then `restore`, brings the
//! knobs back, and the next tune marks the killed one recovered.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use sweetspot::bench::scratch::Scratch;

const FAST: [&str; 6] = ["--job-scale", "0.02", "--lead", "0.3", "--load-mib", "32"];

fn knobs(dev: &str) -> Vec<(String, String)> {
    let q = Path::new("/sys/block").join(dev).join("queue");
    let mut out = Vec::new();
    for k in ["scheduler", "nr_requests", "read_ahead_kb", "wbt_lat_usec"] {
        let v = std::fs::read_to_string(q.join(k)).unwrap_or_default();
        out.push((k.to_string(), v.trim().to_string()));
    }
    if let Ok(rd) = std::fs::read_dir(q.join("iosched")) {
        let mut v: Vec<_> = rd
            .flatten()
            .map(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                let s = std::fs::read_to_string(e.path()).unwrap_or_default();
                (format!("iosched/{n}"), s.trim().to_string())
            })
            .collect();
        v.sort();
        out.extend(v);
    }
    out
}

#[test]
fn small_real_tune_stores_a_sweet_spot_and_restores_the_device() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let scratch =
        Scratch::create(512, std::path::Path::new("/nonexistent/sweetspot-test.db")).unwrap();
    let dev = scratch.device_name();
    let before = knobs(&dev);
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let out = common::ok_stdout(
        assert_cmd::Command::cargo_bin("sweetspot")
            .unwrap()
            .arg("--db")
            .arg(&db)
            .args(["tune", "--device", &dev, "--budget", "6", "--json"])
            .args(FAST)
            .output()
            .unwrap(),
    );
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert!(v["significant"].is_boolean());
    // quick names no CPU-scheduler knob: nothing about debugfs, mounted or not.
    assert_eq!(v["not_touched"], serde_json::json!([]), "{v}");
    assert!(v["runs"].as_u64().unwrap() >= 4, "{v}");
    assert!(v["trials"].as_u64().unwrap() <= 6, "{v}");
    assert_eq!(knobs(&dev), before, "the device is back as it was");
    let store = sweetspot::store::Store::open(&db).unwrap();
    let spots = store.sweet_spots(None).unwrap();
    assert_eq!(spots.len(), 1);
    assert_eq!(spots[0].policy, "quick");
    let row = &store.tunes(None).unwrap()[0];
    assert_eq!(row.status, "done");
    // What it wrote to the loop device, by the device's own counters: io_load's writes at
    // least, in whole 512-byte sectors, the report's figure the stored one.
    let written = v["bytes_written"]
        .as_u64()
        .expect("bytes_written in the report");
    assert!(written > 0 && written.is_multiple_of(512), "{v}");
    assert_eq!(row.bytes_written, Some(written));
    let history = common::ok_stdout(
        assert_cmd::Command::cargo_bin("sweetspot")
            .unwrap()
            .arg("--db")
            .arg(&db)
            .arg("history")
            .output()
            .unwrap(),
    );
    let history = String::from_utf8(history).unwrap();
    // Its lines wrap at the terminal's width.
    let words = history.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("B written to the device"), "{history}");
    // Nothing of this tune is left open in the journal.
    let open: i64 = store
        .conn()
        .query_row(
            "SELECT count(*) FROM journal WHERE restored_at IS NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(open, 0);
}

#[test]
fn sigkill_mid_tune_then_restore_brings_the_knobs_back() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let scratch =
        Scratch::create(512, std::path::Path::new("/nonexistent/sweetspot-test.db")).unwrap();
    let dev = scratch.device_name();
    let before = knobs(&dev);
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sweetspot"))
        .arg("--db")
        .arg(&db)
        .args(["tune", "--device", &dev, "--budget", "12", "-q"])
        .args(FAST)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    // Killed once the third trial started: two settings other than the start were applied.
    kill_at_trial(&mut child, &db, 3);
    let out = common::ok_stdout(
        assert_cmd::Command::cargo_bin("sweetspot")
            .unwrap()
            .arg("--db")
            .arg(&db)
            .args(["restore", &dev])
            .output()
            .unwrap(),
    );
    assert_eq!(knobs(&dev), before, "restore brings every knob back");
    // It says which knobs finishing the killed tune put back, each with its value.
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains("by finishing 1 killed tune first, marked below"),
        "{out}"
    );
    let marked: Vec<&str> = out
        .lines()
        .filter(|l| l.ends_with(" (a killed tune's)"))
        .collect();
    assert!(!marked.is_empty(), "{out}");
    assert!(
        marked
            .iter()
            .all(|l| l.trim_start().starts_with(&format!("{dev} "))),
        "{out}"
    );

    // The next tune finds the killed one and marks it recovered before it starts.
    let sim = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/surfaces/flat-fifo_batch.toml");
    common::ok_stdout(
        assert_cmd::Command::cargo_bin("sweetspot")
            .unwrap()
            .arg("--db")
            .arg(&db)
            .args(["tune", "--sim"])
            .arg(&sim)
            .args(["--seed", "1", "-q"])
            .output()
            .unwrap(),
    );
    let store = sweetspot::store::Store::open(&db).unwrap();
    assert_eq!(store.tunes(None).unwrap()[0].status, "recovered");
}

/// Sweeps what a SIGKILLed `--scratch` run left under a test's own `$TMPDIR` on drop (its
/// mount, loop device and backing file), whether the test passed or not.
struct Leftovers(tempfile::TempDir);

impl Drop for Leftovers {
    fn drop(&mut self) {
        sweetspot::bench::stale::sweep_regardless(self.0.path());
    }
}

#[test]
fn a_killed_scratch_tune_leaves_no_open_journal_entry_after_the_next_tune() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let tmp = Leftovers(tempfile::tempdir().unwrap());
    let db = tmp.0.path().join("s.db");
    let open = || -> i64 {
        sweetspot::store::Store::open(&db)
            .unwrap()
            .conn()
            .query_row(
                "SELECT count(*) FROM journal WHERE restored_at IS NULL",
                [],
                |r| r.get(0),
            )
            .unwrap()
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_sweetspot"))
        .env("TMPDIR", tmp.0.path())
        .arg("--db")
        .arg(&db)
        .args(["tune", "--scratch", "--budget", "12", "-q"])
        .args(FAST)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    // Killed once the second trial started: the baseline (owner `bench`) and a trial setting
    // (owner `tune:1`) are journaled.
    kill_at_trial(&mut child, &db, 2);
    assert!(open() > 0, "the killed tune left open entries");
    // The next scratch tune (refused for its budget after its device was made) recovers the
    // killed one's entries, the baseline's too, on the leftover loop device before sweeping it.
    // (The baseline, owner `bench`, is journaled only where it changed a knob: a loop queue
    // keeps its last user's values, so whether `recover_benches` has anything to say depends
    // on what used this loop number before.)
    let out = Command::new(env!("CARGO_BIN_EXE_sweetspot"))
        .env("TMPDIR", tmp.0.path())
        .arg("--db")
        .arg(&db)
        .args(["tune", "--scratch", "--budget", "1"])
        .args(FAST)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("tune 1 on loop"), "{err}");
    assert!(!err.contains("closed without writing"), "{err}");
    assert_eq!(open(), 0, "{err}");
    let store = sweetspot::store::Store::open(&db).unwrap();
    assert_eq!(store.tunes(None).unwrap()[0].status, "recovered");
}

/// Puts a queue attribute of a loop device back on drop (a loop queue outlives `losetup -d`).
struct QueueValue {
    path: std::path::PathBuf,
    value: String,
}

impl QueueValue {
    fn save(dev: &str, knob: &str) -> QueueValue {
        let path = Path::new("/sys/block").join(dev).join("queue").join(knob);
        let value = std::fs::read_to_string(&path).unwrap().trim().to_string();
        QueueValue { path, value }
    }
    fn now(&self) -> String {
        std::fs::read_to_string(&self.path)
            .unwrap()
            .trim()
            .to_string()
    }
}

impl Drop for QueueValue {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.path, format!("{}\n", self.value));
    }
}

/// A real device whose knobs are real (journaled writes to a loop device's sysfs, the same
/// `RealDevice` a `tune --device` uses) but whose runs are synthetic: the job's time under
/// io_load depends on the device's real `read_ahead_kb` (best at 512 KiB), with 1% noise. On a
/// fast loop device no knob makes a significant difference, so this is how a tune can honestly
/// reach "significant" and take the `--apply` path.
struct ReadAheadMatters {
    real: sweetspot::bench::device_testbed::RealDevice,
    ra: std::path::PathBuf,
    rng: u64,
}

impl sweetspot::bench::Testbed for ReadAheadMatters {
    fn target(&self) -> sweetspot::bench::TargetInfo {
        self.real.target()
    }
    fn space(&self) -> Vec<sweetspot::bench::SpaceKnob> {
        self.real.space()
    }
    fn apply(&mut self, s: &sweetspot::knob::Setting) -> sweetspot::Result<()> {
        self.real.apply(s)
    }
    fn run(&mut self, load: sweetspot::bench::Load) -> sweetspot::Result<sweetspot::bench::Run> {
        let ra: f64 = std::fs::read_to_string(&self.ra)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        self.rng = self
            .rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let noise = 1.0 + ((self.rng >> 33) as f64 / (1u64 << 31) as f64 - 0.5) * 0.02;
        let io = load == sweetspot::bench::Load::IoLoad;
        let time_s = if io {
            10.0 * (1.0 + 0.5 * (ra / 512.0).log2().abs())
        } else {
            5.0
        } * noise;
        Ok(sweetspot::bench::Run {
            load,
            time_s,
            cpu_pct: 90.0,
            loads: io.then_some(10.0),
            lcpu_pct: io.then_some(20.0),
            failed: None,
            io: None,
        })
    }
    fn restore(&mut self) -> sweetspot::Result<()> {
        self.real.restore()
    }
    fn keep(&mut self) {
        self.real.keep();
    }
    fn set_owner(&mut self, owner: &sweetspot::types::Owner) {
        self.real.set_owner(owner);
    }
    fn device_name(&self) -> Option<String> {
        self.real.device_name()
    }
    fn zoned(&self) -> Option<String> {
        self.real.zoned()
    }
}

#[test]
fn tune_apply_leaves_the_sweet_spot_on_the_device_and_restore_undoes_it() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    use sweetspot::bench::Testbed;
    let scratch =
        Scratch::create(512, std::path::Path::new("/nonexistent/sweetspot-test.db")).unwrap();
    let dev = scratch.device_name();
    let ra = QueueValue::save(&dev, "read_ahead_kb");
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let pol = tmp.path().join("ra.toml");
    std::fs::write(
        &pol,
        "loads = [\"no_load\", \"io_load\"]\nruns = 1\nbudget = 12\ncheck_pairs = 2\n\
         [objective]\nminimize = \"ratio\"\nloads = [\"io_load\"]\n\
         [knobs.read_ahead_kb]\nmin = 16\nmax = 4096\n",
    )
    .unwrap();
    let policy = sweetspot::tune::policy::load_file(&pol, sweetspot::trust::Origin::Named).unwrap();
    let root = sweetspot::sysroot::SysRoot::default();
    let real = sweetspot::bench::device_testbed::RealDevice::device(
        sweetspot::store::Store::open(&db).unwrap(),
        &root,
        &dev,
        None,
        sweetspot::bench::contest_run::BenchOptions::new().unwrap(),
    )
    .unwrap();
    let mut tb = ReadAheadMatters {
        real,
        ra: ra.path.clone(),
        rng: 7,
    };
    let store = sweetspot::store::Store::open(&db).unwrap();
    let lock = sweetspot::lock::DeviceLock::acquire(
        &sweetspot::lock::path(&db, &root, &tb.target().identity),
        &dev,
        sweetspot::lock::Holder::me("tune"),
    )
    .unwrap();
    let req = sweetspot::tune::run::Request {
        policy: &policy,
        budget: None,
        seed: 3,
        apply: true,
        quiet: true,
        lock: &lock,
        resume: None,
        confirm: None,
    };
    let rep = sweetspot::tune::run::tune(&store, &db, &mut tb, &req).unwrap();
    assert!(rep.significant && rep.applied, "{rep:?}");
    let best = rep.best["read_ahead_kb"].to_string();
    assert_ne!(best, ra.value, "the sweet spot differs from the default");
    assert!(
        rep.undo
            .as_deref()
            .unwrap()
            .ends_with(&format!("restore {dev}")),
        "{:?}",
        rep.undo
    );
    assert!(
        sweetspot::tune::report::text(&rep).contains(&format!("restore {dev}`")),
        "{}",
        sweetspot::tune::report::text(&rep)
    );
    assert!(tb.target().identity.starts_with("loop:"));
    drop(tb);
    drop(store);
    drop(lock);
    assert_eq!(ra.now(), best, "the sweet spot stays on the device");
    // Its journal entry is still open: `restore` undoes it from a new process.
    let out = common::ok_stdout(
        assert_cmd::Command::cargo_bin("sweetspot")
            .unwrap()
            .arg("--db")
            .arg(&db)
            .args(["restore", &dev])
            .output()
            .unwrap(),
    );
    assert!(String::from_utf8_lossy(&out).contains("restored 1 knob"));
    assert_eq!(ra.now(), ra.value, "restore puts the original back");
}

/// Waits (at most 300 s) until the tune `child` writing `db` has `n` trials in its database,
/// then kills it with SIGKILL (no chance to restore anything) and reaps it.
fn kill_at_trial(child: &mut std::process::Child, db: &Path, n: i64) {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let have: i64 = sweetspot::store::Store::open(db)
            .ok()
            .and_then(|s| {
                s.conn()
                    .query_row("SELECT count(*) FROM trials", [], |r| r.get(0))
                    .ok()
            })
            .unwrap_or(0);
        if have >= n {
            break;
        }
        assert!(Instant::now() < deadline, "tune never reached trial {n}");
        assert!(child.try_wait().unwrap().is_none(), "tune ended early");
        std::thread::sleep(Duration::from_millis(100));
    }
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    child.wait().unwrap();
}
