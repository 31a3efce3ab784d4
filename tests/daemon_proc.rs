//! `sweetspot daemon` as a process on a fake sysfs tree: it applies the stored sweet spot at
//! start, gives a disk attached later its values, keeps its config on a bad SIGHUP, and exits
//! 0 on SIGTERM; `status` shows the device managed while it runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn put(p: &Path, v: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, format!("{v}\n")).unwrap();
}

/// A disk as the kernel shows it (enough of it for sweetspot's discovery).
fn disk(sys: &Path, name: &str, dev: &str, wwid: &str) {
    let b = sys.join("block").join(name);
    put(&b.join("dev"), dev);
    put(&b.join("size"), "2097152");
    put(&b.join("device/wwid"), wwid);
    for (k, v) in [
        ("scheduler", "none [mq-deadline] kyber bfq"),
        ("nr_requests", "64"),
        ("read_ahead_kb", "128"),
        ("rotational", "1"),
        ("iosched/fifo_batch", "16"),
        ("iosched/read_expire", "500"),
        ("iosched/write_expire", "5000"),
        ("iosched/writes_starved", "2"),
        ("iosched/front_merges", "1"),
    ] {
        put(&b.join("queue").join(k), v);
    }
}

fn read(sys: &Path, name: &str, rel: &str) -> String {
    std::fs::read_to_string(sys.join("block").join(name).join(rel))
        .unwrap()
        .trim()
        .to_string()
}

fn wait_for(what: &str, f: impl Fn() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_daemon_applies_profiles_as_disks_appear_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let (sys, proc_) = (dir.path().join("sys"), dir.path().join("proc"));
    put(&proc_.join("sys/vm/dirty_ratio"), "20");
    disk(&sys, "sda", "8:0", "naa.5000c500a1b2c3d4");
    let db = dir.path().join("d.db");
    for (label, wwid, knob, best, default) in [
        ("sda", "naa.5000c500a1b2c3d4", "read_ahead_kb", "256", "128"),
        ("sdb", "naa.5000c500eeeeeeee", "fifo_batch", "4", "16"),
    ] {
        let id = format!("wwid:{wwid}");
        common::store_sweet_spot(
            &db,
            &id,
            label,
            "6.18.0",
            &[(knob, best)],
            &[(knob, default)],
            1.5,
        );
    }
    let cfg = dir.path().join("daemon.toml");
    std::fs::write(&cfg, "poll_s = 1\n").unwrap();
    let bin = assert_cmd::cargo::cargo_bin("sweetspot");
    let base = |c: &mut Command| {
        c.arg("--db")
            .arg(&db)
            .arg("--sysfs-root")
            .arg(&sys)
            .arg("--procfs-root")
            .arg(&proc_);
    };
    let mut cmd = Command::new(&bin);
    base(&mut cmd);
    let mut child = cmd
        .args(["-v", "daemon", "--config"])
        .arg(&cfg)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("sda's profile", || {
        read(&sys, "sda", "queue/read_ahead_kb") == "256"
    });

    // A disk that appears after the start gets its values.
    disk(&sys, "sdb", "8:16", "naa.5000c500eeeeeeee");
    wait_for("sdb's profile", || {
        read(&sys, "sdb", "queue/iosched/fifo_batch") == "4"
    });

    // One daemon at a time: a second on the same database is refused, naming the first.
    let mut second = Command::new(&bin);
    base(&mut second);
    let out = second
        .args(["daemon", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("another daemon runs") && err.contains(&format!("pid {}", child.id())),
        "{err}"
    );

    let mut st = Command::new(&bin);
    base(&mut st);
    let out = st
        .args(["status", "--json", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["daemon_running"], true, "{v}");
    let sda = v["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["device"] == "sda")
        .unwrap();
    assert_eq!(sda["state"], "managed", "{v}");
    assert_eq!(sda["sweet_spot"], "read_ahead_kb=256", "{v}");

    // A bad config on SIGHUP keeps the old one; SIGTERM ends with exit 0.
    std::fs::write(&cfg, "poll_s = \"soon\"\n").unwrap();
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "still running after a bad SIGHUP"
    );
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "not stopped within 10 s of SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(
        err.contains("config not reloaded, keeping the old one") && err.contains("poll_s"),
        "{err}"
    );
    assert!(
        err.contains("sdb: applied its profile: fifo_batch 16 → 4"),
        "{err}"
    );
}

#[test]
fn a_bad_config_names_file_line_and_field_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("daemon.toml");
    std::fs::write(&cfg, "poll_s = 5\n\n[retune]\nlead_s = 90\n").unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
        .arg("--db")
        .arg(dir.path().join("d.db"))
        .args(["daemon", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "{}:4: retune.lead_s: '90': must be 0–60 s",
            cfg.display()
        )),
        "{err}"
    );
}
