//! `sweetspot daemon` as a process on a fake sysfs tree: it applies the stored sweet spot at
//! start, gives a disk attached later its values, keeps its config on a bad SIGHUP, and exits
//! 0 on SIGTERM; `status` shows the device managed while it runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use serde_json::json;
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

/// `dir/d.db` with the sweet spots of two WWID disks: sda read_ahead_kb 128 → 256, sdb
/// fifo_batch 16 → 4.
fn db_with_two_sweet_spots(dir: &std::path::Path) -> std::path::PathBuf {
    let db = dir.join("d.db");
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
    db
}

#[test]
fn the_daemon_applies_profiles_as_disks_appear_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let (sys, proc_) = (dir.path().join("sys"), dir.path().join("proc"));
    put(&proc_.join("sys/vm/dirty_ratio"), "20");
    disk(&sys, "sda", "8:0", "naa.5000c500a1b2c3d4");
    let db = db_with_two_sweet_spots(dir.path());
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
    assert_eq!(sda["state"]["kind"], "managed", "{v}");
    assert_eq!(
        sda["sweet_spot_knobs"],
        json!({"read_ahead_kb": 256}),
        "{v}"
    );

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

/// An enrolled "identity" that no device can have (no `kind:` prefix, or a kernel name, which
/// changes across boots) is refused at start with the file, line and index, exit 2: it would
/// otherwise stay "absent" in `status` for ever. `status` reads the same config and refuses it
/// too.
#[test]
fn an_enrolled_name_that_is_no_identity_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("daemon.toml");
    for (id, line) in [("nosuchidentity", 2), ("loop1", 2)] {
        std::fs::write(&cfg, format!("poll_s = 5\nenroll = [\"{id}\"]\n")).unwrap();
        for cmd in ["daemon", "status"] {
            let out = Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
                .arg("--db")
                .arg(dir.path().join("d.db"))
                .args([cmd, "--config"])
                .arg(&cfg)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{cmd} {id}: {err}");
            assert!(
                err.contains(&format!(
                    "{}:{line}: enroll[0]: '{id}' is not a device identity, so no device would \
                     ever be enrolled by it: give one as `sweetspot devices` shows it \
                     (wwid:WWID, model-serial:MODEL:SERIAL, by-path:PATH, loop:BACKING_FILE, \
                     virtual:NAME); a kernel name (sda, loop1) changes across boots",
                    cfg.display()
                )),
                "{cmd} {id}: {err}"
            );
        }
    }
}

/// `sweetspot status --json` on the fake tree, with `db` on the command line, in
/// `SWEETSPOT_DB`, or neither; returns the JSON and the exit code's stderr.
fn status_json(
    sys: &Path,
    cfg: &Path,
    db: Option<&Path>,
    env_db: Option<&Path>,
) -> serde_json::Value {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("sweetspot"));
    c.env_remove("SWEETSPOT_DB");
    if let Some(e) = env_db {
        c.env("SWEETSPOT_DB", e);
    }
    if let Some(d) = db {
        c.arg("--db").arg(d);
    }
    let out = c
        .arg("--sysfs-root")
        .arg(sys)
        .args(["status", "--json", "--config"])
        .arg(cfg)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn status_takes_db_from_the_command_line_over_the_config_and_needs_no_database_file() {
    let dir = tempfile::tempdir().unwrap();
    let sys = dir.path().join("sys");
    disk(&sys, "sda", "8:0", "naa.5000c500a1b2c3d4");
    let id = "wwid:naa.5000c500a1b2c3d4";
    let a = dir.path().join("a.db");
    common::store_sweet_spot(
        &a,
        id,
        "sda",
        "6.18.0",
        &[("read_ahead_kb", "256")],
        &[("read_ahead_kb", "128")],
        1.5,
    );
    let b = dir.path().join("b.db");
    let cfg = dir.path().join("daemon.toml");
    let spots = |v: &serde_json::Value| -> Vec<String> {
        v["devices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                sweetspot::types::setting_label(
                    &serde_json::from_value(d["sweet_spot_knobs"].clone()).unwrap(),
                )
            })
            .collect()
    };
    // The config names b.db (absent); --db and SWEETSPOT_DB name a.db and win over it.
    std::fs::write(&cfg, format!("db = {:?}\n", b.display().to_string())).unwrap();
    let v = status_json(&sys, &cfg, Some(&a), None);
    assert_eq!(spots(&v), ["read_ahead_kb=256"], "--db: {v}");
    let v = status_json(&sys, &cfg, None, Some(&a));
    assert_eq!(spots(&v), ["read_ahead_kb=256"], "SWEETSPOT_DB: {v}");
    // --db wins over SWEETSPOT_DB too.
    let v = status_json(&sys, &cfg, Some(&b), Some(&a));
    assert_eq!(spots(&v), Vec::<String>::new(), "--db over the env: {v}");
    // Neither given: the config's db wins over the built-in default.
    std::fs::write(&cfg, format!("db = {:?}\n", a.display().to_string())).unwrap();
    let v = status_json(&sys, &cfg, None, None);
    assert_eq!(spots(&v), ["read_ahead_kb=256"], "the config's db: {v}");

    // Enrolled identities with no database file yet: listed as never tuned, and status
    // (a reader) does not create the file.
    std::fs::write(
        &cfg,
        format!(
            "db = {:?}\nenroll = [\"{id}\", \"wwid:naa.gone\"]\n",
            b.display().to_string()
        ),
    )
    .unwrap();
    let v = status_json(&sys, &cfg, None, None);
    let rows: Vec<(String, Option<String>, String, serde_json::Value)> = v["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["identity"].as_str().unwrap().to_string(),
                d["device"].as_str().map(String::from),
                d["state"]["kind"].as_str().unwrap().to_string(),
                d["sweet_spot_knobs"].clone(),
            )
        })
        .collect();
    // Never tuned: no sweet spot (`null`); the one not present has no device.
    assert_eq!(
        rows,
        [
            (
                id.to_string(),
                Some("sda".to_string()),
                "never_tuned".to_string(),
                serde_json::Value::Null
            ),
            (
                "wwid:naa.gone".to_string(),
                None,
                "never_tuned".to_string(),
                serde_json::Value::Null
            )
        ],
        "{v}"
    );
    assert!(!b.exists(), "status created {}", b.display());
    let out = Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
        .env_remove("SWEETSPOT_DB")
        .arg("--sysfs-root")
        .arg(&sys)
        .args(["status", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let txt = String::from_utf8_lossy(&out.stdout);
    assert!(txt.contains(&format!("sda ({id})")), "{txt}");
    assert!(!txt.contains("no enrolled device"), "{txt}");
    assert!(!b.exists());
}

/// A daemon child stopped with SIGTERM (and reaped) on drop, also when an assertion fails.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let _ = self.0.wait();
    }
}

#[test]
fn sighup_applies_the_profile_of_a_newly_enrolled_device_present_now() {
    let dir = tempfile::tempdir().unwrap();
    let (sys, proc_) = (dir.path().join("sys"), dir.path().join("proc"));
    put(&proc_.join("sys/vm/dirty_ratio"), "20");
    disk(&sys, "sda", "8:0", "naa.5000c500a1b2c3d4");
    disk(&sys, "sdb", "8:16", "naa.5000c500eeeeeeee");
    let db = db_with_two_sweet_spots(dir.path());
    let cfg = dir.path().join("daemon.toml");
    std::fs::write(
        &cfg,
        "poll_s = 1\nenroll = [\"wwid:naa.5000c500a1b2c3d4\"]\n",
    )
    .unwrap();
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
    let child = Child(
        cmd.args(["daemon", "--config"])
            .arg(&cfg)
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for("sda's profile", || {
        read(&sys, "sda", "queue/read_ahead_kb") == "256"
    });
    // Let a few polls go by: sdb is not enrolled, so it keeps its value.
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(read(&sys, "sdb", "queue/iosched/fifo_batch"), "16");

    // sdb enrolled by a reload: its sweet spot is applied now, without a re-attach.
    std::fs::write(
        &cfg,
        "poll_s = 1\nenroll = [\"wwid:naa.5000c500a1b2c3d4\", \"wwid:naa.5000c500eeeeeeee\"]\n",
    )
    .unwrap();
    let pid = nix::unistd::Pid::from_raw(child.0.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
    wait_for("sdb's profile after SIGHUP", || {
        read(&sys, "sdb", "queue/iosched/fifo_batch") == "4"
    });
    let status = || -> serde_json::Value {
        let mut st = Command::new(&bin);
        base(&mut st);
        let out = st
            .args(["status", "--json", "--config"])
            .arg(&cfg)
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let state_of = |v: &serde_json::Value, dev: &str| -> String {
        v["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["device"] == dev)
            .map(|d| d["state"]["kind"].as_str().unwrap().to_string())
            .unwrap_or_default()
    };
    wait_for("status to call sdb managed", || {
        state_of(&status(), "sdb") == "managed"
    });
    assert_eq!(state_of(&status(), "sda"), "managed");
    // sda no longer enrolled: left as it is, no longer managed.
    std::fs::write(
        &cfg,
        "poll_s = 1\nenroll = [\"wwid:naa.5000c500eeeeeeee\"]\n",
    )
    .unwrap();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
    wait_for("status to drop sda", || {
        let v = status();
        state_of(&v, "sda").is_empty() && state_of(&v, "sdb") == "managed"
    });
    assert_eq!(read(&sys, "sda", "queue/read_ahead_kb"), "256");
    drop(child);
}

/// A second tune of the same disk, kernel and policy supersedes the first sweet spot (kept as
/// history): the profile the daemon rebuilds carries the newest, and its log has no
/// "exporting ... over ..." line (there is nothing to choose between).
#[test]
fn a_retuned_sweet_spot_supersedes_its_predecessor_and_the_profile_names_no_choice() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_with_two_sweet_spots(dir.path());
    let id = "wwid:naa.5000c500a1b2c3d4";
    common::store_sweet_spot(
        &db,
        id,
        "sda",
        "6.18.0",
        &[("read_ahead_kb", "512")],
        &[("read_ahead_kb", "128")],
        1.6,
    );
    let store = sweetspot::store::Store::open(&db).unwrap();
    assert_eq!(
        store.sweet_spots(Some(id)).unwrap().len(),
        2,
        "history is kept"
    );
    let sys = dir.path().join("sys");
    std::fs::create_dir_all(sys.join("block")).unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
        .arg("--db")
        .arg(&db)
        .arg("--sysfs-root")
        .arg(&sys)
        .args(["-v", "profile", "export"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let txt = String::from_utf8_lossy(&common::ok_stdout(out.clone())).into_owned();
    assert!(txt.contains("read_ahead_kb = 512"), "{txt}");
    assert!(!txt.contains("read_ahead_kb = 256"), "{txt}");
    assert!(!err.contains(" over policy "), "{err}");
    // Another policy's sweet spot of the same disk is a choice, and is named.
    drop(store);
    let other = sweetspot::store::Store::open(&db).unwrap();
    let target = sweetspot::types::TargetInfo {
        label: "sda".into(),
        identity: id.into(),
        kernel: "6.18.0".into(),
    };
    let ra = |v: i64| -> sweetspot::types::Setting {
        [("read_ahead_kb".to_string(), v.into())]
            .into_iter()
            .collect()
    };
    other
        .insert_sweet_spot(
            &target,
            "desktop",
            None,
            &ra(1024),
            &ra(128),
            true,
            &serde_json::json!({}),
        )
        .unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
        .arg("--db")
        .arg(&db)
        .arg("--sysfs-root")
        .arg(&sys)
        .args(["-v", "profile", "export"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // A significant sweet spot replaced is a warning naming what is dropped (issue 36).
    assert!(
        err.contains(&format!(
            "sweetspot: warning: {id}: exporting the sweet spot of policy desktop on 6.18.0: \
             read_ahead_kb \
             128 → 1024 and DROPPING the sweet spot of policy quick on 6.18.0: read_ahead_kb \
             128 → 512, 1.60× better; to get it back, add `\"{id}\" = \"quick\"` under [keep]"
        )),
        "{err}"
    );
    assert_eq!(err.matches("DROPPING").count(), 1, "{err}");
}

/// A retune stopped by SIGTERM leaves its device at its sweet spot, not at the kernel's
/// values the retune started from: the daemon applies the sweet spot again (journaled) before
/// it exits. The fake sda has a filesystem (a temporary directory, by a fake mountinfo) for
/// the retune's loads, and a sweet spot of another kernel release, so a retune is due at once.
#[test]
fn sigterm_mid_retune_leaves_the_device_at_its_sweet_spot() {
    let dir = tempfile::tempdir().unwrap();
    let (sys, proc_) = (dir.path().join("sys"), dir.path().join("proc"));
    put(&proc_.join("sys/vm/dirty_ratio"), "20");
    disk(&sys, "sda", "8:0", "naa.5000c500a1b2c3d4");
    let mnt = dir.path().join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    put(
        &proc_.join("self/mountinfo"),
        &format!(
            "27 1 8:0 / {} rw,relatime - ext4 /dev/sda rw",
            mnt.display()
        ),
    );
    let id = "wwid:naa.5000c500a1b2c3d4";
    let db = dir.path().join("d.db");
    tuned_on_another_kernel(&db, id);
    let policy = dir.path().join("ra.toml");
    write_long_read_ahead_policy(&policy);
    let cfg = dir.path().join("daemon.toml");
    std::fs::write(
        &cfg,
        format!(
            "poll_s = 1\ndefault_policy = \"{}\"\n[retune]\njob_scale = 0.02\nload_mib = 32\n\
             lead_s = 0.3\n[idle]\nload_avg_max = 1000\ncpu_busy_pct_max = 100\n\
             device_kib_per_s_max = 1000000\nfor_s = 0\n",
            policy.display()
        ),
    )
    .unwrap();
    let log = dir.path().join("daemon.log");
    let mut child = Child(
        Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
            .arg("--db")
            .arg(&db)
            .arg("--sysfs-root")
            .arg(&sys)
            .arg("--procfs-root")
            .arg(&proc_)
            .args(["-v", "daemon", "--config"])
            .arg(&cfg)
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let tune_running = || {
        sweetspot::store::Store::open(&db)
            .unwrap()
            .tunes(Some(id))
            .unwrap()
            .iter()
            .any(|t| t.status == "running")
    };
    wait_for("the retune", || {
        tune_running()
            && std::fs::read_to_string(&log)
                .unwrap()
                .contains("retuning with policy")
    });
    // The retune starts from the kernel's value, not the sweet spot.
    assert_eq!(read(&sys, "sda", "queue/read_ahead_kb"), "128");

    let pid = nix::unistd::Pid::from_raw(child.0.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "not stopped within 30 s of SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // The README quotes this figure (`--nocapture` shows it).
    eprintln!("the daemon stopped {:?} after SIGTERM", t.elapsed());
    let err = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    let (_, after) = err
        .split_once("sda: retune stopped (the daemon is stopping)")
        .unwrap_or_else(|| panic!("no retune stopped: {err}"));
    assert!(
        after.contains("sda: applied its profile: read_ahead_kb 128 → 256"),
        "{err}"
    );
    assert_eq!(
        read(&sys, "sda", "queue/read_ahead_kb"),
        "256",
        "at its sweet spot: {err}"
    );
    let tunes = sweetspot::store::Store::open(&db)
        .unwrap()
        .tunes(Some(id))
        .unwrap();
    assert_eq!(tunes.last().unwrap().status, "interrupted", "{err}");
    // Applied through the journal: `restore` puts the kernel's value back.
    let out = Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
        .arg("--db")
        .arg(&db)
        .arg("--sysfs-root")
        .arg(&sys)
        .arg("--procfs-root")
        .arg(&proc_)
        .arg("restore")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(read(&sys, "sda", "queue/read_ahead_kb"), "128");
}

/// Stores `id` (the fake sda) with the sweet spot read_ahead_kb 256 (default 128), tuned on
/// another kernel release: a retune of it is due at once.
fn tuned_on_another_kernel(db: &Path, id: &str) {
    common::store_sweet_spot(
        db,
        id,
        "sda",
        "2.6.0-another",
        &[("read_ahead_kb", "256")],
        &[("read_ahead_kb", "128")],
        1.5,
    );
}

/// A retune policy over read_ahead_kb (a plain file honours it) that runs far beyond a test.
fn write_long_read_ahead_policy(policy: &Path) {
    std::fs::write(
        policy,
        "loads = [\"no_load\", \"io_load\"]\nruns = 1\nbudget = 400\ncheck_pairs = 2\n\
         [objective]\nminimize = \"ratio\"\nloads = [\"io_load\"]\n\
         [knobs.read_ahead_kb]\nmin = 16\nmax = 4096\n",
    )
    .unwrap();
}

/// `sweetspot` on the fake tree: its output, stderr and exit code.
fn cli(db: &Path, sys: &Path, proc_: &Path, args: &[&str]) -> (String, String, Option<i32>) {
    let out = Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
        .arg("--db")
        .arg(db)
        .arg("--sysfs-root")
        .arg(sys)
        .arg("--procfs-root")
        .arg(proc_)
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

/// A fake sda (fifo_batch 16) with a filesystem in the fake mountinfo at `mnt` (which need
/// not exist: a retune there fails at once), and the daemon's config in `dir/daemon.toml`:
/// poll 1 s, retunes every `interval_s` with `policy`, always idle; returns (sys, proc, cfg).
fn retune_tree(
    dir: &Path,
    mnt: &Path,
    interval_s: u32,
    policy: &str,
) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let (sys, proc_) = (dir.join("sys"), dir.join("proc"));
    put(&proc_.join("sys/vm/dirty_ratio"), "20");
    disk(&sys, "sda", "8:0", "naa.5000c500a1b2c3d4");
    put(
        &proc_.join("self/mountinfo"),
        &format!(
            "27 1 8:0 / {} rw,relatime - ext4 /dev/sda rw",
            mnt.display()
        ),
    );
    let cfg = dir.join("daemon.toml");
    std::fs::write(
        &cfg,
        format!(
            "poll_s = 1\nretune_interval_s = {interval_s}\ndefault_policy = \"{policy}\"\n\
             [retune]\njob_scale = 0.02\nload_mib = 32\nlead_s = 0.3\n[idle]\n\
             load_avg_max = 1000\ncpu_busy_pct_max = 100\ndevice_kib_per_s_max = 1000000\n\
             for_s = 0\n"
        ),
    )
    .unwrap();
    (sys, proc_, cfg)
}

/// The daemon on the fake tree, its stderr in `log`.
fn spawn_daemon(db: &Path, sys: &Path, proc_: &Path, cfg: &Path, log: &Path) -> Child {
    Child(
        Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
            .arg("--db")
            .arg(db)
            .arg("--sysfs-root")
            .arg(sys)
            .arg("--procfs-root")
            .arg(proc_)
            .args(["-v", "daemon", "--config"])
            .arg(cfg)
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap(),
    )
}

/// SIGTERM, and the exit code once it is gone (within 30 s).
fn stop(child: &mut Child) -> Option<i32> {
    let pid = nix::unistd::Pid::from_raw(child.0.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let t = Instant::now();
    loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            return s.code();
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "not stopped within 30 s of SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The undo journal is sacred: after a full `restore`, a knob is back at its value from
/// before sweetspot first touched it. The daemon applies sda's sweet spot (fifo_batch
/// 16 → 8, journaled under `profile`), an admin's `set` journals 8 and writes 4 (the daemon
/// puts 8 back once); then a retune is due. It must not start while the admin's change is
/// journaled: it would restore the profile's entry alone (16, closing the entry that holds
/// the true original), and after the retune the profile's 8 was journaled again, so
/// `restore` wrote `set`'s 8. Now the retune waits (`contested`, said once in the log) and
/// `restore` puts the kernel's 16 back.
#[test]
fn a_retune_does_not_start_over_an_admins_journaled_set_and_restore_finds_the_true_original() {
    let dir = tempfile::tempdir().unwrap();
    let (sys, proc_, cfg) = retune_tree(dir.path(), &dir.path().join("nomnt"), 4, "quick");
    let id = "wwid:naa.5000c500a1b2c3d4";
    let db = dir.path().join("d.db");
    common::store_sweet_spot(
        &db,
        id,
        "sda",
        &sweetspot::device::kernel_release(),
        &[("fifo_batch", "8")],
        &[("fifo_batch", "16")],
        1.5,
    );
    let log = dir.path().join("daemon.log");
    let mut child = spawn_daemon(&db, &sys, &proc_, &cfg, &log);
    wait_for("sda's profile", || {
        read(&sys, "sda", "queue/iosched/fifo_batch") == "8"
    });
    let (_, err, code) = cli(&db, &sys, &proc_, &["set", "sda", "fifo_batch=4"]);
    assert_eq!(code, Some(0), "{err}");
    wait_for("the retune's refusal", || {
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("sda: retune due, not started: fifo_batch (`sweetspot set`)")
    });
    // Said once, not at every poll; and `status` says what it waits for.
    std::thread::sleep(Duration::from_millis(2500));
    let (out, err, _) = cli(
        &db,
        &sys,
        &proc_,
        &["status", "--json", "--config", cfg.to_str().unwrap()],
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_eq!(v["devices"][0]["waiting"], "contested", "{v}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        text.matches("retune due, not started: fifo_batch").count(),
        1,
        "{text}"
    );
    assert!(!text.contains("retuning with policy"), "{text}");
    assert_eq!(read(&sys, "sda", "queue/iosched/fifo_batch"), "8", "{text}");
    assert_eq!(stop(&mut child), Some(0), "{text}");

    let (out, err, code) = cli(&db, &sys, &proc_, &["restore"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        read(&sys, "sda", "queue/iosched/fifo_batch"),
        "16",
        "the kernel's value: {out}"
    );
    let store = sweetspot::store::Store::open(&db).unwrap();
    assert!(store.journal_open(None, None).unwrap().is_empty());
}

/// A retune that ends between two polls (here it fails at once: its filesystem is gone) left
/// its device at the kernel's values its restore put back, and the next poll's manager ran
/// before the finished retune was reaped: it took them for another writer's ("contested by
/// another writer: profile 256, found 128; re-applied once"), which pushed the daemon to back
/// off at the next change. Now the finished retune is reaped first, the device is the
/// retune's until then, and no "contested" line is logged.
#[test]
fn a_retune_that_ends_is_reaped_before_the_manager_looks_and_is_no_contest() {
    let dir = tempfile::tempdir().unwrap();
    let (sys, proc_, cfg) = retune_tree(dir.path(), &dir.path().join("gone"), 86_400, "quick");
    let id = "wwid:naa.5000c500a1b2c3d4";
    let db = dir.path().join("d.db");
    tuned_on_another_kernel(&db, id);
    let log = dir.path().join("daemon.log");
    let mut child = spawn_daemon(&db, &sys, &proc_, &cfg, &log);
    wait_for("the retune to fail", || {
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("sda: retune failed")
    });
    wait_for("sda's sweet spot again", || {
        read(&sys, "sda", "queue/read_ahead_kb") == "256"
    });
    // A few polls more: nothing takes the retune's restore for another writer.
    std::thread::sleep(Duration::from_millis(3500));
    assert_eq!(stop(&mut child), Some(0));
    let text = std::fs::read_to_string(&log).unwrap();
    let (_, after) = text.split_once("sda: retune failed").unwrap();
    assert!(
        after.contains("sda: applied its profile: read_ahead_kb 128 → 256"),
        "{text}"
    );
    assert!(!text.contains("contested"), "{text}");
    assert_eq!(read(&sys, "sda", "queue/read_ahead_kb"), "256", "{text}");
}

/// A `restore` while the daemon runs is the admin's explicit choice: the daemon sees in the
/// journal that its entries were closed by someone else and stops managing the disk (it was
/// re-applied within one poll, as "contested by another writer", so only a second restore
/// stuck). `restore` says so, `status` shows it, the other disk stays managed, and SIGHUP
/// takes the disk back.
#[test]
fn a_restore_while_the_daemon_runs_is_honoured_until_a_reload() {
    let dir = tempfile::tempdir().unwrap();
    let (sys, proc_) = (dir.path().join("sys"), dir.path().join("proc"));
    put(&proc_.join("sys/vm/dirty_ratio"), "20");
    disk(&sys, "sda", "8:0", "naa.5000c500a1b2c3d4");
    disk(&sys, "sdb", "8:16", "naa.5000c500eeeeeeee");
    let db = db_with_two_sweet_spots(dir.path());
    let cfg = dir.path().join("daemon.toml");
    std::fs::write(&cfg, "poll_s = 1\n").unwrap();
    let log = dir.path().join("daemon.log");
    let mut child = spawn_daemon(&db, &sys, &proc_, &cfg, &log);
    wait_for("both profiles", || {
        read(&sys, "sda", "queue/read_ahead_kb") == "256"
            && read(&sys, "sdb", "queue/iosched/fifo_batch") == "4"
    });
    // A poll that finds them as applied (the daemon writes its state file every poll).
    std::thread::sleep(Duration::from_millis(1500));
    let (out, err, code) = cli(&db, &sys, &proc_, &["restore", "sda"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("restored 1 knob on sda\n"), "{out}");
    assert!(
        out.contains(&format!(
            "note: the running daemon (pid {}) managed sda: it leaves it alone now, neither \
             re-applying its sweet spot nor retuning it, until it restarts or reloads its \
             config (SIGHUP)",
            child.0.id()
        )),
        "{out}"
    );
    assert_eq!(read(&sys, "sda", "queue/read_ahead_kb"), "128");
    wait_for("the daemon to see the restore", || {
        std::fs::read_to_string(&log).unwrap().contains(
            "sda: restored by `sweetspot restore` (read_ahead_kb 128 (profile 256)): no longer \
             managed until the daemon restarts or reloads its config (SIGHUP)",
        )
    });
    // Several polls: left alone, no contest.
    std::thread::sleep(Duration::from_millis(3000));
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(read(&sys, "sda", "queue/read_ahead_kb"), "128", "{text}");
    assert!(!text.contains("contested"), "{text}");
    let status = || -> serde_json::Value {
        let (out, err, _) = cli(
            &db,
            &sys,
            &proc_,
            &["status", "--json", "--config", cfg.to_str().unwrap()],
        );
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"))
    };
    let of = |v: &serde_json::Value, dev: &str, field: &str| -> String {
        v["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["device"] == dev)
            // A typed value's `kind` (`state`), else the string.
            .map(|d| {
                let x = &d[field];
                x["kind"]
                    .as_str()
                    .or(x.as_str())
                    .unwrap_or_default()
                    .to_string()
            })
            .unwrap_or_default()
    };
    let v = status();
    assert_eq!(of(&v, "sda", "state"), "restored", "{v}");
    let sda = v["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["device"] == "sda")
        .unwrap();
    assert_eq!(
        sda["state"]["at"],
        sweetspot::types::time::rfc3339(sda["state"]["at_epoch_s"].as_i64().unwrap()),
        "{v}"
    );
    assert_eq!(of(&v, "sda", "waiting"), "restored", "{v}");
    assert_eq!(of(&v, "sdb", "state"), "managed", "{v}");
    assert_eq!(read(&sys, "sdb", "queue/iosched/fifo_batch"), "4");

    // A reload takes it back.
    let pid = nix::unistd::Pid::from_raw(child.0.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
    wait_for("sda's profile after SIGHUP", || {
        read(&sys, "sda", "queue/read_ahead_kb") == "256"
    });
    wait_for("status to call sda managed", || {
        of(&status(), "sda", "state") == "managed"
    });
    assert_eq!(stop(&mut child), Some(0));
}

/// A sweet spot with a host-wide knob (dirty_ratio 20 → 10 beside read_ahead_kb 128 → 256):
/// the daemon applied only the disk's knobs (its apply named the disk, which leaves `[host]`
/// out), while `status` said "managed". Now it applies the profile's host-wide knobs too,
/// journaled under the host's lock, watches them, and `restore` puts 20 back.
#[test]
fn the_daemon_applies_a_sweet_spots_host_wide_knobs_and_status_is_true() {
    let dir = tempfile::tempdir().unwrap();
    let (sys, proc_) = (dir.path().join("sys"), dir.path().join("proc"));
    put(&proc_.join("sys/vm/dirty_ratio"), "20");
    put(&proc_.join("sys/vm/dirty_bytes"), "0");
    disk(&sys, "sda", "8:0", "naa.5000c500a1b2c3d4");
    let db = dir.path().join("d.db");
    common::store_sweet_spot(
        &db,
        "wwid:naa.5000c500a1b2c3d4",
        "sda",
        "6.18.0",
        &[("read_ahead_kb", "256"), ("dirty_ratio", "10")],
        &[("read_ahead_kb", "128"), ("dirty_ratio", "20")],
        1.5,
    );
    let cfg = dir.path().join("daemon.toml");
    std::fs::write(&cfg, "poll_s = 1\n").unwrap();
    let log = dir.path().join("daemon.log");
    let dirty = || {
        std::fs::read_to_string(proc_.join("sys/vm/dirty_ratio"))
            .unwrap()
            .trim()
            .to_string()
    };
    let mut child = spawn_daemon(&db, &sys, &proc_, &cfg, &log);
    wait_for("sda's profile", || {
        read(&sys, "sda", "queue/read_ahead_kb") == "256"
    });
    wait_for("the host-wide knob", || dirty() == "10");
    let v: serde_json::Value = {
        let (out, err, _) = cli(
            &db,
            &sys,
            &proc_,
            &["status", "--json", "--config", cfg.to_str().unwrap()],
        );
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"))
    };
    assert_eq!(v["devices"][0]["state"]["kind"], "managed", "{v}");
    assert_eq!(
        v["devices"][0]["sweet_spot_knobs"],
        json!({"dirty_ratio": 10, "read_ahead_kb": 256}),
        "{v}"
    );
    // Another writer: re-applied once, as a disk's knob is.
    put(&proc_.join("sys/vm/dirty_ratio"), "30");
    wait_for("dirty_ratio re-applied", || dirty() == "10");
    assert_eq!(stop(&mut child), Some(0));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("host-wide knobs: applied the profile's: dirty_ratio 20 → 10"),
        "{text}"
    );
    assert!(
        text.contains(
            "host-wide: dirty_ratio contested by another writer: profile 10, found 30; \
             re-applied once"
        ),
        "{text}"
    );
    // Journaled: `restore` puts the kernel's values back.
    let (out, err, code) = cli(&db, &sys, &proc_, &["restore"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(dirty(), "20", "{out}");
    assert_eq!(read(&sys, "sda", "queue/read_ahead_kb"), "128", "{out}");
}

/// SIGTERM is a clean stop (exit 0) even when the daemon's last poll fails. A retune runs
/// on sda; `/sys/block` goes away and SIGTERM comes: putting sda back at its sweet spot
/// cannot list the disks. The daemon exited 1; now it says so as a warning and exits 0, and
/// the journal still holds the kernel's value: `restore` puts 128 back.
#[test]
fn sigterm_exits_0_when_the_last_poll_fails() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let policy = dir.path().join("ra.toml");
    write_long_read_ahead_policy(&policy);
    let (sys, proc_, cfg) = retune_tree(dir.path(), &mnt, 1, policy.to_str().unwrap());
    let id = "wwid:naa.5000c500a1b2c3d4";
    let db = dir.path().join("d.db");
    tuned_on_another_kernel(&db, id);
    let log = dir.path().join("daemon.log");
    let mut child = spawn_daemon(&db, &sys, &proc_, &cfg, &log);
    wait_for("the retune", || {
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("retuning with policy")
    });
    let (block, away) = (sys.join("block"), sys.join("block.away"));
    std::fs::rename(&block, &away).unwrap();
    let code = stop(&mut child);
    std::fs::rename(&away, &block).unwrap();
    let err = std::fs::read_to_string(&log).unwrap();
    assert_eq!(code, Some(0), "{err}");
    let (_, after) = err
        .split_once("sweetspot daemon stopping")
        .unwrap_or_else(|| panic!("not stopped by SIGTERM: {err}"));
    assert!(
        after.contains("stopping: the last poll failed (listing ")
            && after.contains("the retuned device may be left at the kernel's values"),
        "{err}"
    );
    assert!(!sweetspot::daemon::state_path(&db).exists(), "{err}");
    let (out, e, code) = cli(&db, &sys, &proc_, &["restore"]);
    assert_eq!(code, Some(0), "{e}");
    assert_eq!(
        read(&sys, "sda", "queue/read_ahead_kb"),
        "128",
        "{out}{err}"
    );
}

/// Of two policies' sweet spots of one disk, the daemon applies one and says which in its
/// log: it uses that sweet spot, it does not export it (only `profile export` exports).
#[test]
fn the_daemon_says_it_uses_the_sweet_spot_it_chose_not_that_it_exports_it() {
    let dir = tempfile::tempdir().unwrap();
    let (sys, proc_) = (dir.path().join("sys"), dir.path().join("proc"));
    put(&proc_.join("sys/vm/dirty_ratio"), "20");
    disk(&sys, "sda", "8:0", "naa.5000c500a1b2c3d4");
    let db = db_with_two_sweet_spots(dir.path());
    let id = "wwid:naa.5000c500a1b2c3d4";
    let store = sweetspot::store::Store::open(&db).unwrap();
    let target = sweetspot::types::TargetInfo {
        label: "sda".into(),
        identity: id.into(),
        kernel: "6.18.0".into(),
    };
    let ra = |v: i64| -> sweetspot::types::Setting {
        [("read_ahead_kb".to_string(), v.into())]
            .into_iter()
            .collect()
    };
    store
        .insert_sweet_spot(
            &target,
            "desktop",
            None,
            &ra(1024),
            &ra(128),
            true,
            &serde_json::json!({}),
        )
        .unwrap();
    drop(store);
    let cfg = dir.path().join("daemon.toml");
    std::fs::write(&cfg, "poll_s = 1\n").unwrap();
    let log = dir.path().join("daemon.log");
    let mut child = spawn_daemon(&db, &sys, &proc_, &cfg, &log);
    wait_for("sda at the chosen sweet spot", || {
        read(&sys, "sda", "queue/read_ahead_kb") == "1024"
    });
    assert_eq!(stop(&mut child), Some(0));
    let err = std::fs::read_to_string(&log).unwrap();
    assert!(
        err.contains(&format!(
            "{id}: using the sweet spot of policy desktop on 6.18.0: read_ahead_kb 128 → 1024 \
             and DROPPING the sweet spot of policy quick on 6.18.0"
        )),
        "{err}"
    );
    assert!(!err.contains("exporting"), "{err}");
}

/// `status` without `--config` shows the running daemon's config (read from its command
/// line), not the default one: its retune interval, and a line naming the file. With the
/// daemon stopped it names the default it falls back to.
#[test]
fn status_without_config_shows_the_running_daemons_interval_and_names_its_config() {
    let dir = tempfile::tempdir().unwrap();
    let (sys, proc_) = (dir.path().join("sys"), dir.path().join("proc"));
    put(&proc_.join("sys/vm/dirty_ratio"), "20");
    disk(&sys, "sda", "8:0", "naa.5000c500a1b2c3d4");
    // Tuned on the running kernel: due by the interval alone.
    let db = dir.path().join("d.db");
    common::store_sweet_spot(
        &db,
        "wwid:naa.5000c500a1b2c3d4",
        "sda",
        &sweetspot::device::kernel_release(),
        &[("read_ahead_kb", "256")],
        &[("read_ahead_kb", "128")],
        1.5,
    );
    let cfg = dir.path().join("daemon.toml");
    std::fs::write(&cfg, "poll_s = 1\nretune_interval_days = 3\n").unwrap();
    let log = dir.path().join("daemon.log");
    let mut child = spawn_daemon(&db, &sys, &proc_, &cfg, &log);
    wait_for("sda at its sweet spot", || {
        read(&sys, "sda", "queue/read_ahead_kb") == "256"
    });
    let status = || {
        let (out, err, code) = cli(&db, &sys, &proc_, &["status"]);
        assert_eq!(code, Some(0), "{err}");
        out
    };
    wait_for("status to see the daemon", || {
        status().contains("daemon: running")
    });
    let out = status();
    assert!(
        out.contains(&format!(
            "config: {} (the running daemon's)\n",
            cfg.display()
        )),
        "{out}"
    );
    let retune = out
        .lines()
        .find(|l| l.trim_start().starts_with("retune:"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(retune.ends_with("(every 3 days)"), "{out}");
    assert_eq!(stop(&mut child), Some(0));
    let out = status();
    assert!(
        out.contains("config: /etc/sweetspot/daemon.toml: absent, built-in defaults (the default)")
            || out.contains("config: /etc/sweetspot/daemon.toml (the default)"),
        "{out}"
    );
}

/// A flash device's write budget: the fake sda made non-rotational (class `ssd`) with a
/// budget of 3 MiB a day (at most 90 MiB saved up), whose last tune wrote 64 MiB just now,
/// leaving 26 MiB. A retune is due (another kernel), but it writes about 64 MiB: it waits,
/// `status` says why and until when (38 MiB more: 12⅔ days), and no tune starts.
#[test]
fn a_retune_over_a_flash_devices_write_budget_waits_and_status_says_until_when() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    let (sys, proc_, cfg) = retune_tree(dir.path(), &mnt, 1, "quick");
    put(&sys.join("block/sda/queue/rotational"), "0");
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text.push_str("[max_write_mib_per_day]\nssd = 3\n");
    std::fs::write(&cfg, text).unwrap();
    let db = dir.path().join("d.db");
    let id = "wwid:naa.5000c500a1b2c3d4";
    common::store_sweet_spot(
        &db,
        id,
        "sda",
        "6.18.0",
        &[("fifo_batch", "8")],
        &[("fifo_batch", "16")],
        1.5,
    );
    let (tune, started) = {
        let store = sweetspot::store::Store::open(&db).unwrap();
        let t = store.tunes(None).unwrap()[0].clone();
        store.set_tune_bytes_written(t.id, 64 << 20).unwrap();
        (t.id, t.started_at)
    };
    let log = dir.path().join("daemon.log");
    let mut child = spawn_daemon(&db, &sys, &proc_, &cfg, &log);
    let sda = || {
        let v = status_json(&sys, &cfg, Some(&db), None);
        v["devices"][0].clone()
    };
    wait_for("the write-budget wait", || {
        sda()["waiting"] == "write budget"
    });
    let d = sda();
    let detail = d["waiting_detail"].as_str().unwrap();
    assert!(
        detail.starts_with(
            "its tunes left 26.0 MiB of its write budget (3 MiB a day, at most 90.0 MiB saved \
             up) and a retune writes about 64.0 MiB"
        ),
        "{d}"
    );
    assert_eq!(d["last_tune_id"], tune, "{d}");
    assert_eq!(d["last_tune_bytes_written"], 64 << 20, "{d}");
    assert_eq!(d["retune"]["kind"], "write_budget", "{d}");
    assert_eq!(d["retune"]["at_epoch_s"], started + 38 * 86_400 / 3, "{d}");
    assert_eq!(stop(&mut child), Some(0));
    let store = sweetspot::store::Store::open(&db).unwrap();
    assert_eq!(store.tunes(None).unwrap().len(), 1, "no retune started");
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains("retune due, deferred: its tunes left 26.0 MiB"),
        "{log}"
    );
}
