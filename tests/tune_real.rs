//! `sweetspot tune --device` on a real scratch loop device (root): a small tune stores a sweet
//! spot and leaves the device as it found it; SIGKILL mid-tune, then `restore`, brings the
//! knobs back, and the next tune marks the killed one recovered.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

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
    let scratch = Scratch::create(512).unwrap();
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
    assert!(v["runs"].as_u64().unwrap() >= 4, "{v}");
    assert!(v["evaluations"].as_u64().unwrap() <= 6, "{v}");
    assert_eq!(knobs(&dev), before, "the device is back as it was");
    let store = sweetspot::store::Store::open(&db).unwrap();
    let spots = store.sweet_spots(None).unwrap();
    assert_eq!(spots.len(), 1);
    assert_eq!(spots[0].policy, "quick");
    assert_eq!(store.tunes(None).unwrap()[0].status, "done");
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
    let scratch = Scratch::create(512).unwrap();
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
    // Wait until the third trial started: two settings other than the start were applied.
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let n: i64 = sweetspot::store::Store::open(&db)
            .ok()
            .and_then(|s| {
                s.conn()
                    .query_row("SELECT count(*) FROM trials", [], |r| r.get(0))
                    .ok()
            })
            .unwrap_or(0);
        if n >= 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "tune never reached its third trial"
        );
        assert!(child.try_wait().unwrap().is_none(), "tune ended early");
        std::thread::sleep(Duration::from_millis(100));
    }
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    common::ok_stdout(
        assert_cmd::Command::cargo_bin("sweetspot")
            .unwrap()
            .arg("--db")
            .arg(&db)
            .args(["restore", &dev])
            .output()
            .unwrap(),
    );
    assert_eq!(knobs(&dev), before, "restore brings every knob back");

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
