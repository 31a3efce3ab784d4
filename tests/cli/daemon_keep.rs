//! Issue 36 item 7, "a retune never silently throws a better sweet spot away", as a user met
//! it: `tune --policy fio-readahead.toml --apply` found read_ahead_kb 16 → 256 (1.54×,
//! significant); the daemon (`enroll = "tuned"`, `default_policy = "quick"`) retuned with
//! `quick`, whose "keep the default" then ruled the device (read_ahead_kb put back) and
//! `verify` said "nothing to verify". Here on a fake sysfs tree, the daemon as a process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const ID: &str = "wwid:naa.5000c500a1b2c3d4";

fn put(p: &Path, v: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, format!("{v}\n")).unwrap();
}

fn read_ahead(sys: &Path) -> String {
    std::fs::read_to_string(sys.join("block/sda/queue/read_ahead_kb"))
        .unwrap()
        .trim()
        .to_string()
}

fn wait_for(what: &str, f: impl Fn() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The daemon process, stopped (SIGTERM) when dropped.
struct Daemon(std::process::Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let _ = self.0.wait();
    }
}

/// A sweet spot of sda stored as a tune of `policy` stores it: read_ahead_kb 16 → `ra`.
fn store(db: &Path, policy: &str, ra: i64, significant: bool, ratio: f64) {
    let s = sweetspot::store::Store::open(db).unwrap();
    let target = sweetspot::types::TargetInfo {
        label: "sda".into(),
        identity: ID.into(),
        kernel: sweetspot::device::kernel_release(),
    };
    let set =
        |v: i64| -> sweetspot::types::Setting { [("read_ahead_kb".to_string(), v.into())].into() };
    let ev = serde_json::json!({"target": {"label": "sda"}, "runs": 20,
        "objective": {"name": "sequential read bandwidth",
                      "improvement": {"ratio": ratio, "ci95": [ratio * 0.9, ratio * 1.1]}}});
    let tune = s.insert_tune(&target, Some("sda"), policy).unwrap();
    s.insert_sweet_spot(
        &target,
        policy,
        Some(tune),
        &set(ra),
        &set(16),
        significant,
        &ev,
    )
    .unwrap();
    s.finish_tune(tune, sweetspot::types::TuneStatus::Done)
        .unwrap();
}

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

/// A fake sda (read_ahead_kb 16) with a filesystem in the fake mountinfo that does not
/// exist (a retune there fails at once): (sys, proc).
fn tree(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (sys, proc_) = (dir.join("sys"), dir.join("proc"));
    put(&proc_.join("sys/vm/dirty_ratio"), "20");
    let b = sys.join("block/sda");
    put(&b.join("dev"), "8:0");
    put(&b.join("size"), "2097152");
    put(&b.join("device/wwid"), &ID["wwid:".len()..]);
    for (k, v) in [
        ("scheduler", "none [mq-deadline] kyber bfq"),
        ("nr_requests", "64"),
        ("read_ahead_kb", "16"),
        ("rotational", "1"),
    ] {
        put(&b.join("queue").join(k), v);
    }
    // A filesystem for a retune's loads (it need not exist: a retune there fails at once).
    put(
        &proc_.join("self/mountinfo"),
        &format!(
            "27 1 8:0 / {} rw,relatime - ext4 /dev/sda rw",
            dir.join("nomnt").display()
        ),
    );
    (sys, proc_)
}

#[test]
fn a_retune_under_another_policy_keeps_the_significant_sweet_spot_and_a_drop_is_a_warn() {
    let dir = tempfile::tempdir().unwrap();
    let (sys, proc_) = tree(dir.path());
    let db = dir.path().join("d.db");
    store(&db, "fio-readahead", 256, true, 1.54);
    let kernel = sweetspot::device::kernel_release();
    let cfg = dir.path().join("daemon.toml");
    let config = "poll_s = 1\nretune_interval_s = 1\ndefault_policy = \"quick\"\n\
                  [idle]\nload_avg_max = 1000\ncpu_busy_pct_max = 100\n\
                  device_kib_per_s_max = 1000000\nfor_s = 0\n";
    std::fs::write(&cfg, config).unwrap();
    let log = dir.path().join("daemon.log");
    let mut daemon = Daemon(
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
    wait_for("sda at fio-readahead's sweet spot", || {
        read_ahead(&sys) == "256"
    });
    // Due (the interval is 1 s), but not retuned with default_policy: the policy that found
    // the sweet spot is kept, and a retune cannot run a user benchmark's policy.
    let kept = || {
        let (out, _, _) = cli(
            &db,
            &sys,
            &proc_,
            &["status", "--json", "--config", &cfg.to_string_lossy()],
        );
        serde_json::from_str::<serde_json::Value>(&out).unwrap()["devices"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|d| d["waiting"] == "kept")
    };
    wait_for("sda kept, not retuned", kept);
    let (status, _, _) = cli(
        &db,
        &sys,
        &proc_,
        &["status", "--json", "--config", &cfg.to_string_lossy()],
    );
    assert!(
        status.contains(&format!(
            "at its sweet spot (policy fio-readahead on {kernel}: read_ahead_kb 16 → 256, \
             1.54× better), not retuned"
        )),
        "{status}"
    );
    // JSON is typed (docs/json.md): the retune's kind, not the text table's sentence.
    let v: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(v["devices"][0]["retune"]["kind"], "kept", "{status}");
    assert_eq!(v["devices"][0]["waiting"], "kept", "{status}");
    let err = std::fs::read_to_string(&log).unwrap();
    assert!(!err.contains("retuning with policy quick"), "{err}");
    // A retune of quick (by hand, or an older daemon's) answers "keep the default": it does
    // not rule the device, which stays at 256, and verify checks fio-readahead's sweet spot.
    store(&db, "quick", 16, false, 1.0);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(read_ahead(&sys), "256");
    let (out, verr, code) = cli(&db, &sys, &proc_, &["verify"]);
    assert_eq!(code, Some(0), "{out}{verr}");
    assert!(!verr.contains("nothing to verify"), "{verr}");
    assert!(
        out.lines().any(|l| l.split_whitespace().collect::<Vec<_>>()
            == ["sda", "read_ahead_kb", "256", "256", "ok"]),
        "{out}"
    );
    assert!(
        verr.contains(&format!(
            "verify: {ID}: using the sweet spot of policy fio-readahead on {kernel}: \
             read_ahead_kb 16 → 256, 1.54× better; the newer answer of policy quick on \
             {kernel}: keep the default (not significant) does not replace it (an answer that \
             is not significant never replaces another policy's significant sweet spot)"
        )),
        "{verr}"
    );
    // Another policy's significant sweet spot replaces it: said at WARN, with what was
    // dropped and how to get it back.
    store(&db, "desktop", 1024, true, 1.2);
    wait_for("sda at desktop's sweet spot", || read_ahead(&sys) == "1024");
    let err = std::fs::read_to_string(&log).unwrap();
    let warn = format!(
        "WARN {ID}: using the sweet spot of policy desktop on {kernel}: read_ahead_kb 16 → \
         1024, 1.20× better and DROPPING the sweet spot of policy fio-readahead on {kernel}: \
         read_ahead_kb 16 → 256, 1.54× better; to get it back, add `\"{ID}\" = \
         \"fio-readahead\"` under [keep] in /etc/sweetspot/daemon.toml and reload the daemon \
         (`systemctl reload sweetspot`), or without the daemon `sweetspot profile export \
         --device {ID} --policy fio-readahead --out fio-readahead.toml && sweetspot profile \
         apply fio-readahead.toml`"
    );
    assert!(err.contains(&warn), "{err}");
    // Following it: the user's decision, made once in the config, brings it back.
    std::fs::write(
        &cfg,
        format!("{config}[keep]\n\"{ID}\" = \"fio-readahead\"\n"),
    )
    .unwrap();
    let pid = nix::unistd::Pid::from_raw(daemon.0.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
    wait_for("sda back at fio-readahead's sweet spot", || {
        read_ahead(&sys) == "256"
    });
    // verify reads the running daemon's config: it checks the sweet spot the daemon keeps.
    let (out, verr, code) = cli(&db, &sys, &proc_, &["verify"]);
    assert_eq!(code, Some(0), "{out}{verr}");
    assert!(
        verr.contains("the daemon's config names its policy"),
        "{verr}"
    );
    let _ = &mut daemon;
}

/// Without a policy named for the device, the daemon retunes with the policy that found its
/// significant sweet spot (`desktop`), not `default_policy` (`quick`).
#[test]
fn the_daemon_retunes_with_the_policy_that_found_the_sweet_spot() {
    let dir = tempfile::tempdir().unwrap();
    let (sys, proc_) = tree(dir.path());
    let db = dir.path().join("d.db");
    store(&db, "desktop", 256, true, 1.3);
    let cfg = dir.path().join("daemon.toml");
    std::fs::write(
        &cfg,
        "poll_s = 1\nretune_interval_s = 1\ndefault_policy = \"quick\"\n[idle]\n\
         load_avg_max = 1000\ncpu_busy_pct_max = 100\ndevice_kib_per_s_max = 1000000\n\
         for_s = 0\n",
    )
    .unwrap();
    let log = dir.path().join("daemon.log");
    let _daemon = Daemon(
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
    wait_for("a retune", || {
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("sda: retuning with policy")
    });
    let err = std::fs::read_to_string(&log).unwrap();
    assert!(
        err.contains("sda: retuning with policy desktop (the retune interval (1 s) elapsed)"),
        "{err}"
    );
    assert!(!err.contains("retuning with policy quick"), "{err}");
}
