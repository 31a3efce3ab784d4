//! Prometheus metrics on a fake sysfs tree: the daemon's node_exporter textfile (`metrics_dir`)
//! and `status --format prometheus` pass `promtool check metrics`, a real node_exporter
//! (Debian's `prometheus-node-exporter`, on a loopback port) serves them, an idle daemon
//! does not rewrite its file, and a stopped one removes it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn put(p: &Path, v: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, format!("{v}\n")).unwrap();
}

/// A fake sda on mq-deadline (read_ahead_kb 128) with a WWID.
fn disk(sys: &Path) {
    let b = sys.join("block/sda");
    put(&b.join("dev"), "8:0");
    put(&b.join("size"), "2097152");
    put(&b.join("device/wwid"), "naa.5000c500a1b2c3d4");
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

/// Kills the process (SIGKILL) and reaps it when dropped, so that a failing test leaves no
/// daemon or node_exporter running.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `promtool check metrics` on `text`: its exit code and output (problems, one a line).
fn promtool(text: &str) -> (Option<i32>, String) {
    let mut c = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package; scripts/test-deps installs it)");
    c.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = c.wait_with_output().unwrap();
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// A free loopback port (bound, then released for node_exporter).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET /metrics` over plain TCP: the body, or `None` while nothing answers.
fn scrape(port: u16) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.0 200")
        .then(|| body.to_string())
        .or_else(|| head.starts_with("HTTP/1.1 200").then(|| body.to_string()))
}

/// The sample lines of `text`, without the families only the daemon knows.
fn common_samples(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| {
            !l.starts_with("sweetspot_contested_total") && !l.starts_with("sweetspot_daemon_")
        })
        .collect()
}

struct Tree {
    _dir: tempfile::TempDir,
    db: PathBuf,
    sys: PathBuf,
    proc_: PathBuf,
    cfg: PathBuf,
    textfile: PathBuf,
}

/// sda with a sweet spot (read_ahead_kb 128 → 256, ratio 1.5) and a config with
/// `metrics_dir`, polling every second.
fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let (sys, proc_) = (dir.path().join("sys"), dir.path().join("proc"));
    put(&proc_.join("sys/vm/dirty_ratio"), "20");
    disk(&sys);
    let db = dir.path().join("d.db");
    common::store_sweet_spot(
        &db,
        "wwid:naa.5000c500a1b2c3d4",
        "sda",
        "6.18.0",
        &[("read_ahead_kb", "256")],
        &[("read_ahead_kb", "128")],
        1.5,
    );
    let textfile = dir.path().join("textfile");
    std::fs::create_dir(&textfile).unwrap();
    let cfg = dir.path().join("daemon.toml");
    std::fs::write(
        &cfg,
        format!("poll_s = 1\nmetrics_dir = \"{}\"\n", textfile.display()),
    )
    .unwrap();
    Tree {
        _dir: dir,
        db,
        sys,
        proc_,
        cfg,
        textfile,
    }
}

fn sweetspot(t: &Tree, args: &[&str]) -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("sweetspot"));
    c.arg("--db")
        .arg(&t.db)
        .arg("--sysfs-root")
        .arg(&t.sys)
        .arg("--procfs-root")
        .arg(&t.proc_)
        .args(args)
        .arg("--config")
        .arg(&t.cfg);
    c
}

#[test]
fn the_daemons_textfile_passes_promtool_is_scraped_by_node_exporter_and_rests_when_idle() {
    let t = tree();
    let mut daemon = Guard(
        sweetspot(&t, &["daemon"])
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let file = t.textfile.join("sweetspot.prom");
    wait_for("the metrics of sda at its sweet spot", || {
        std::fs::read_to_string(&file)
            .is_ok_and(|s| s.contains("sweetspot_drift{device=\"sda\"} 0\n"))
    });
    let text = std::fs::read_to_string(&file).unwrap();
    for want in [
        "sweetspot_knob_value{device=\"sda\",knob=\"read_ahead_kb\"} 256\n",
        "sweetspot_knob_target{device=\"sda\",knob=\"read_ahead_kb\"} 256\n",
        "sweetspot_scheduler_info{device=\"sda\",scheduler=\"mq-deadline\"} 1\n",
        "sweetspot_contested_total{device=\"sda\"} 0\n",
        "sweetspot_retunes_total{device=\"sda\",result=\"done\"} 1\n",
        "sweetspot_improvement_ratio{device=\"sda\"} 1.5\n",
        "# TYPE sweetspot_daemon_resident_bytes gauge\n",
    ] {
        assert!(text.contains(want), "{want} not in\n{text}");
    }
    // Readable by the `prometheus` user; no timestamps (a sample line is `name value`).
    assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o777, 0o644);
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let after_name = l.rsplit_once('}').map_or(l, |(_, rest)| rest);
        let fields = after_name.split_whitespace().count();
        let want = if l.contains('}') { 1 } else { 2 };
        assert_eq!(fields, want, "a timestamp or stray field: {l}");
    }
    let (code, out) = promtool(&text);
    assert_eq!(
        code,
        Some(0),
        "promtool on the daemon's file:\n{out}\n{text}"
    );

    // Idle polls (one a second) write nothing: the same inode and mtime after 3 s.
    std::thread::sleep(Duration::from_secs(2));
    let before = std::fs::metadata(&file).unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let after = std::fs::metadata(&file).unwrap();
    assert_eq!(
        (after.ino(), after.mtime(), after.mtime_nsec()),
        (before.ino(), before.mtime(), before.mtime_nsec()),
        "an idle daemon rewrote its metrics"
    );

    // `status --format prometheus` prints the same series, less the daemon's own.
    let out = sweetspot(&t, &["status", "--format", "prometheus"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let status = String::from_utf8(out.stdout).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(common_samples(&status), common_samples(&text));
    assert!(
        !status.contains("sweetspot_daemon_resident_bytes"),
        "{status}"
    );
    let (code, out) = promtool(&status);
    assert_eq!(code, Some(0), "promtool on status:\n{out}\n{status}");

    // A real node_exporter serves the file.
    let port = free_port();
    let _exporter = Guard(
        Command::new("prometheus-node-exporter")
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg(format!(
                "--collector.textfile.directory={}",
                t.textfile.display()
            ))
            .args(["--collector.disable-defaults", "--collector.textfile"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus-node-exporter (scripts/test-deps installs it)"),
    );
    wait_for("node_exporter", || scrape(port).is_some());
    let body = scrape(port).unwrap();
    for want in [
        "sweetspot_knob_target{device=\"sda\",knob=\"read_ahead_kb\"} 256\n",
        "sweetspot_retunes_total{device=\"sda\",result=\"done\"} 1\n",
        "node_textfile_scrape_error 0\n",
    ] {
        assert!(body.contains(want), "{want} not scraped:\n{body}");
    }
    assert!(
        body.contains("sweetspot_build_info{version=\""),
        "not scraped:\n{body}"
    );

    // A stopped daemon removes its file (no stale values); status still prints them.
    let pid = nix::unistd::Pid::from_raw(daemon.0.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let code = daemon.0.wait().unwrap().code();
    assert_eq!(code, Some(0));
    assert!(!file.exists(), "the stopped daemon left its metrics");
    let out = sweetspot(&t, &["status", "--format", "prometheus"])
        .output()
        .unwrap();
    let status = String::from_utf8(out.stdout).unwrap();
    assert!(
        status.contains("sweetspot_knob_value{device=\"sda\",knob=\"read_ahead_kb\"} 256\n"),
        "{status}"
    );
    assert_eq!(promtool(&status).0, Some(0));
}

#[test]
fn status_refuses_json_and_format_together_and_a_bad_metrics_dir() {
    let t = tree();
    let out = sweetspot(&t, &["status", "--json", "--format", "prometheus"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    std::fs::write(&t.cfg, "poll_s = 1\nmetrics_dir = \"textfile\"\n").unwrap();
    let out = sweetspot(&t, &["daemon"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "{}:2: metrics_dir: 'textfile': give an absolute path",
            t.cfg.display()
        )),
        "{err}"
    );
}
