//! End-to-end tunes with the user's own benchmark (root; .ci/run installs fio, lighttpd and
//! apache2-utils):
//!
//! - `tune --device <loop> --job 'fio ...' --metric json:/jobs/0/read/iops` on a real scratch
//!   loop device: the figure is tuned, recorded with the trials, and the device is put back;
//! - `tune --host` against a lighttpd on 127.0.0.1 benchmarked by `ab` (bounded request
//!   counts), tuning the real `kernel.sched_autogroup_enabled`, which a guard also restores;
//! - a benchmark that fails at the default setting fails the tune (exit 1) with its stderr;
//! - a benchmark that measures a small figure fast shows that figure in the report, the trial
//!   log and `history`, never a `Time 0.0 s` or `Loads 0`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use sweetspot::bench::scratch::Scratch;

/// A `/proc/sys` value put back on drop, also when the test fails.
struct ProcGuard {
    path: PathBuf,
    original: String,
}

impl ProcGuard {
    fn save(path: &str) -> ProcGuard {
        let path = PathBuf::from(path);
        let original = std::fs::read_to_string(&path).unwrap().trim().to_string();
        ProcGuard { path, original }
    }
    fn now(&self) -> String {
        std::fs::read_to_string(&self.path)
            .unwrap()
            .trim()
            .to_string()
    }
}

impl Drop for ProcGuard {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.path, format!("{}\n", self.original));
    }
}

/// lighttpd bound to 127.0.0.1 on a free port, serving one small file; stopped on drop.
struct Lighttpd {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Lighttpd {
    fn start() -> Lighttpd {
        let dir = tempfile::tempdir().unwrap();
        let www = dir.path().join("www");
        std::fs::create_dir(&www).unwrap();
        std::fs::write(www.join("index.html"), "hello from sweetspot's test\n").unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let conf = dir.path().join("lighttpd.conf");
        std::fs::write(
            &conf,
            format!(
                "server.document-root = \"{}\"\nserver.bind = \"127.0.0.1\"\n\
                 server.port = {port}\nserver.errorlog = \"{}\"\n",
                www.display(),
                dir.path().join("error.log").display()
            ),
        )
        .unwrap();
        let child = Command::new("lighttpd")
            .arg("-D")
            .arg("-f")
            .arg(&conf)
            .stdout(Stdio::null())
            .spawn()
            .expect("lighttpd (apt-get install lighttpd)");
        let server = Lighttpd {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "lighttpd did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }
}

impl Drop for Lighttpd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sweetspot(db: &Path) -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("sweetspot").unwrap();
    c.arg("--db").arg(db);
    c
}

#[test]
fn a_fio_benchmark_is_tuned_on_a_loop_device_and_recorded_with_its_trials() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let scratch =
        Scratch::create(512, std::path::Path::new("/nonexistent/sweetspot-test.db")).unwrap();
    let dev = scratch.device_name();
    let sched = Path::new("/sys/block").join(&dev).join("queue/scheduler");
    let before = std::fs::read_to_string(&sched).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let fio = "fio --name=r --filename=fio.dat --size=8M --rw=randread --bs=4k --direct=1 \
               --runtime=1 --time_based --output-format=json";
    let out = common::ok_stdout(
        sweetspot(&db)
            .args([
                "tune", "--device", &dev, "--budget", "6", "--json", "--seed", "3",
            ])
            .args(["--job", fio, "--metric", "json:/jobs/0/read/iops"])
            .args(["--maximize", "IOPS", "--unit", "IOPS", "--nice", "2"])
            .args(["--job-scale", "0.02"])
            .output()
            .unwrap(),
    );
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["objective"]["name"], "IOPS (IOPS)", "{v}");
    assert!(v["objective"]["default"].as_f64().unwrap() > 0.0, "{v}");
    assert_eq!(v["benchmark"]["nice"], 2);
    assert_eq!(
        v["benchmark"]["extract"]["json_pointer"],
        "/jobs/0/read/iops"
    );
    // Budget 6 with quick's 2 check pairs leaves 2 search trials; the check runs only when a
    // setting measured better than the default.
    assert!(v["runs"].as_u64().unwrap() >= 2, "{v}");
    assert_eq!(v["runs"], v["trials"], "one run per trial: {v}");
    assert_eq!(std::fs::read_to_string(&sched).unwrap(), before, "put back");
    // Every run's figure is stored (in `loads`), and the benchmark with every trial.
    let store = sweetspot::store::Store::open(&db).unwrap();
    let (n, with_figure): (i64, i64) = store
        .conn()
        .query_row(
            "SELECT count(*), count(loads) FROM runs WHERE failed IS NULL",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(
        n >= 2 && n == with_figure,
        "{n} runs, {with_figure} with a figure"
    );
    let sizes: String = store
        .conn()
        .query_row("SELECT sizes FROM trials LIMIT 1", [], |r| r.get(0))
        .unwrap();
    assert!(sizes.contains("\"command\":\"fio --name=r"), "{sizes}");
}

/// A user benchmark runs neither the built-in job nor contest's loads, so a filesystem too
/// small for them (85 MiB; the quick policy's contest tune needs 319 MiB) is enough for it.
#[test]
fn a_user_benchmark_asks_no_free_space_for_contest_loads_it_never_runs() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let mut l = common::LoopDev::new(96);
    let _queue = common::QueueBackup::save(
        &l.name,
        &["scheduler", "nr_requests", "read_ahead_kb", "wbt_lat_usec"],
    );
    l.mount_ext4();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let out = sweetspot(&db)
        .args(["tune", "--device", &l.name, "--budget", "6", "--seed", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("not enough free space for the job and its loads"),
        "{err}"
    );
    common::ok_stdout(
        sweetspot(&db)
            .args(["tune", "--device", &l.name, "--budget", "6", "--seed", "1"])
            .args(["--job", "echo 7", "--metric", "regex:([0-9]+)"])
            .args(["--maximize", "sevens", "-q"])
            .output()
            .unwrap(),
    );
    let store = sweetspot::store::Store::open(&db).unwrap();
    assert_eq!(store.tunes(None).unwrap().last().unwrap().status, "done");
}

#[test]
fn a_host_tune_of_autogroup_against_ab_and_lighttpd_on_loopback() {
    let Some(_gate) = common::root::needs_root("the real /proc/sys") else {
        return;
    };
    let auto = ProcGuard::save("/proc/sys/kernel/sched_autogroup_enabled");
    let server = Lighttpd::start();
    let tmp = tempfile::tempdir().unwrap();
    let policy = tmp.path().join("http.toml");
    std::fs::write(
        &policy,
        format!(
            "description = \"ab against lighttpd on loopback\"\nruns = 1\nbudget = 6\n\
             check_pairs = 2\n[knobs.sched_autogroup_enabled]\n[knobs.NEXT_BUDDY]\n\
             [benchmark]\ncommand = \"ab -q -n 300 -c 4 http://127.0.0.1:{}/index.html\"\n\
             regex = 'Requests per second:\\s+([0-9.]+)'\nmaximize = \"Requests per second\"\n\
             unit = \"req/s\"\n",
            server.port
        ),
    )
    .unwrap();
    let db = tmp.path().join("s.db");
    let out = sweetspot(&db)
        .args(["tune", "--host", "--json", "--seed", "5", "--policy"])
        .arg(&policy)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["target"]["label"], "host");
    assert_eq!(v["objective"]["name"], "Requests per second (req/s)");
    assert!(v["objective"]["default"].as_f64().unwrap() > 0.0, "{v}");
    // debugfs is unmounted or locked down here: said once, and NEXT_BUDDY dropped for it.
    let debugfs = sweetspot::knob::sched::debugfs(&sweetspot::sysroot::SysRoot::default());
    if let Some(why) = debugfs.why() {
        assert_eq!(v["not_touched"], serde_json::json!([why]), "{v}");
        assert_eq!(v["dropped"][0]["knob"], "NEXT_BUDDY");
        assert_eq!(stderr.matches(&why).count(), 1, "{stderr}");
    }
    assert_eq!(auto.now(), auto.original, "the tune restored it");
    drop(server);
}

#[test]
fn a_benchmark_failing_at_the_default_fails_the_tune_with_its_stderr() {
    let t = tempfile::tempdir().unwrap();
    // A contest policy: --job --metric replace its objective and loads.
    let (sys, proc_, policy) = common::autogroup_host(t.path());
    let count = t.path().join("runs");
    let job = format!(
        "echo run >> {}; echo 'no space left' >&2; exit 28",
        count.display()
    );
    sweetspot(&t.path().join("s.db"))
        .arg("--sysfs-root")
        .arg(&sys)
        .arg("--procfs-root")
        .arg(&proc_)
        .args(["tune", "--host", "-q", "--policy"])
        .arg(&policy)
        .args(["--job", &job])
        .args(["--metric", r"regex:rate: (\d+)", "--maximize", "rate"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "failed at the default setting, so there is nothing to tune against",
        ))
        .stderr(predicates::str::contains(
            "exit status 28; stderr: no space left",
        ));
    // It stopped at the failed reference: no other setting was run against nothing.
    let runs = std::fs::read_to_string(&count).unwrap();
    assert_eq!(runs.lines().count(), 1, "{runs}");
}

#[test]
fn a_fast_benchmarks_rows_show_its_figure_not_a_zero_time() {
    let t = tempfile::tempdir().unwrap();
    let (sys, proc_, policy) = common::autogroup_host(t.path());
    let db = t.path().join("s.db");
    let with_roots = |c: &mut assert_cmd::Command| {
        c.arg("--sysfs-root")
            .arg(&sys)
            .arg("--procfs-root")
            .arg(&proc_);
    };
    let mut tune = sweetspot(&db);
    with_roots(&mut tune);
    let out = tune
        .args(["tune", "--host", "--seed", "3", "--policy"])
        .arg(&policy)
        .args(["--job", "echo 'rate: 0.0042'"])
        .args(["--metric", r"regex:rate: ([0-9.]+)", "--maximize", "rate"])
        .args(["--unit", "MB/s"])
        .output()
        .unwrap();
    let (code, stderr) = common::code_and_stderr(out.clone());
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        report.contains("rate (MB/s)\n             0.00420 → 0.00420 (no change"),
        "{report}"
    );
    // The benchmark's row is named so, not no_load (its runs are stored as no_load's).
    let row = report
        .lines()
        .find(|l| l.starts_with("  benchmark ") && !l.contains('`'))
        .unwrap();
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>().join(" "),
        "benchmark rate (MB/s) 0.00420 rate (MB/s) 0.00420",
        "{report}"
    );
    assert!(
        !report.contains("Time 0.0 s") && !report.contains("Loads 0"),
        "{report}"
    );
    assert!(stderr.contains("=1  rate (MB/s) 0.00420  "), "{stderr}");
    let mut history = sweetspot(&db);
    with_roots(&mut history);
    let h = String::from_utf8(common::ok_stdout(
        history.args(["history", "--tune", "1"]).output().unwrap(),
    ))
    .unwrap();
    assert_eq!(
        h.matches("\n             rate (MB/s) 0.00420\n").count(),
        6,
        "{h}"
    );
    assert!(!h.contains(" 0.0 s"), "{h}");
}
