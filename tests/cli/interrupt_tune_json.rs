//! `tune --json` stopped by SIGTERM: exit 130, and on stdout one JSON object that says so,
//! with the figures the database recorded of the stopped tune and the command that resumes
//! it, which does. The `--sim` runs are made slow ([`sweetspot::bench::sim::RUN_MS_ENV`]) so
//! that the signal lands in the middle of the tune.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use sweetspot::store::Store;

const SURFACE: &str = "data/surfaces/seed-2.5.39-mm1-fifo_batch.toml";

/// A tune this test started: killed and reaped if the test fails before it ends.
struct Running(Option<Child>);

impl Running {
    fn child(&self) -> &Child {
        self.0.as_ref().unwrap()
    }

    /// Its exit status and output, once it ends.
    fn wait(mut self) -> std::process::Output {
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `sweetspot --db <db> tune --sim SURFACE --json <extra>`, each load run taking 300 ms.
fn slow_tune(db: &Path, extra: &[&str]) -> Running {
    Running(Some(
        Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
            .arg("--db")
            .arg(db)
            .args(["tune", "--sim", SURFACE, "--json"])
            .args(extra)
            .env(sweetspot::bench::sim::RUN_MS_ENV, "300")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ))
}

/// `sql`'s count in `db` (0 while the database or its tables do not exist yet).
fn count(db: &Path, sql: &str) -> i64 {
    if !db.exists() {
        return 0;
    }
    Store::open_read_only(db)
        .ok()
        .and_then(|s| s.conn().query_row(sql, [], |r| r.get(0)).ok())
        .unwrap_or(0)
}

/// Waits (at most 60 s) until `sql` counts at least `n` in `db`.
fn wait_for(db: &Path, sql: &str, n: i64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while count(db, sql) < n {
        assert!(
            Instant::now() < deadline,
            "the tune never got to {n}: {sql}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (at most 60 s) until `sql` counts at least `n` in `db`, then sends `child` SIGTERM.
fn sigterm_at(child: &Child, db: &Path, sql: &str, n: i64) {
    wait_for(db, sql, n);
    sigterm(child);
}

/// Sends `child` SIGTERM.
fn sigterm(child: &Child) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
}

#[test]
fn a_stopped_tune_prints_what_the_database_has_of_it_and_the_command_that_resumes_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let child = slow_tune(&db, &[]);
    sigterm_at(
        child.child(),
        &db,
        "SELECT count(*) FROM trials WHERE finished_at IS NOT NULL",
        3,
    );
    let out = child.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        err.contains(
            "sweetspot: tune stopped; the same command with --resume goes on from its finished \
             trials"
        ),
        "{err}"
    );
    let rep: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert!(rep.is_object(), "{rep}");
    assert_eq!(rep["interrupted"], true, "{rep}");

    // The figures are the database's.
    let store = Store::open(&db).unwrap();
    let tunes = store.tunes(None).unwrap();
    assert_eq!(tunes.len(), 1);
    assert_eq!(tunes[0].status, "interrupted");
    let id = tunes[0].id;
    assert_eq!(rep["tune_id"], id, "{rep}");
    let trials = store.trials_of_tune(id).unwrap();
    let done: Vec<_> = trials.iter().filter(|t| t.finished_at.is_some()).collect();
    let runs: usize = trials.iter().map(|t| store.runs(t.id).unwrap().len()).sum();
    assert!(done.len() >= 3, "{} trials", done.len());
    assert_eq!(rep["trials"], done.len(), "{rep}");
    assert_eq!(rep["runs"], runs, "{rep}");
    let mut settings: Vec<_> = done.iter().map(|t| &t.setting).collect();
    settings.sort();
    settings.dedup();
    assert_eq!(rep["evaluations"], settings.len(), "{rep}");
    let label = "sim:seed-2.5.39-mm1-fifo_batch";
    assert_eq!(
        rep["target"],
        serde_json::json!({"label": label, "identity": label, "kernel": "sim"})
    );
    assert_eq!(rep["policy"], "quick");
    assert_eq!(rep["budget"], 8);
    let seed = rep["seed"].as_u64().unwrap();
    assert!(
        err.contains(&format!("seed {seed} (repeat this run with --seed {seed})")),
        "{err}"
    );
    assert_eq!(rep["default"], serde_json::json!({"fifo_batch": 32}));
    // The incumbent: one of the finished trials' settings, with its Ratio (> 1: io_load slows
    // the job down on this surface), as is the default's.
    let cand: sweetspot::knob::Setting = serde_json::from_value(rep["candidate"].clone()).unwrap();
    assert!(settings.contains(&&cand), "{rep}");
    assert_eq!(rep["objective"]["name"], "io_load Ratio");
    for k in ["default", "candidate"] {
        assert!(rep["objective"][k].as_f64().unwrap() > 1.0, "{rep}");
    }
    for k in ["best", "significant", "resumed"] {
        assert!(rep.get(k).is_none(), "{k}: {rep}");
    }

    // The command given is the stopped one with --resume, and it resumes the stopped tune.
    let bin = assert_cmd::cargo::cargo_bin("sweetspot");
    let want = format!(
        "{} --db {} tune --sim {SURFACE} --json --resume",
        bin.display(),
        db.display()
    );
    assert_eq!(rep["resume"], want, "{rep}");
    let words: Vec<&str> = want.split(' ').collect();
    let out = Command::new(words[0]).args(&words[1..]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "resuming tune #{id} of {label} (seed {seed}): its {} finished trials are reused",
            done.len()
        )),
        "{err}"
    );
    let fin: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(fin["resumed"]["from_tune"], id, "{fin}");
    assert_eq!(fin["resumed"]["trials"], done.len(), "{fin}");
    assert!(fin.get("interrupted").is_none(), "{fin}");
}

/// Stopped before its first trial finished: nothing for `--resume` to go on with (`resume`
/// null, no candidate). With `-q` the object is printed all the same (it is the output, not
/// a message), and stderr has no "tune stopped" line.
#[test]
fn a_tune_stopped_before_its_first_trial_finished_has_nothing_to_resume() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let child = slow_tune(&db, &["-q", "--seed", "5"]);
    // The tune's row is there: its first trial (no_load then io_load) has at most begun.
    sigterm_at(child.child(), &db, "SELECT count(*) FROM tunes", 1);
    let out = child.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(!err.contains("tune stopped"), "{err}");
    let rep: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let store = Store::open(&db).unwrap();
    let id = store.tunes(None).unwrap()[0].id;
    let runs: usize = store
        .trials_of_tune(id)
        .unwrap()
        .iter()
        .map(|t| store.runs(t.id).unwrap().len())
        .sum();
    assert!(runs <= 1, "{runs}");
    assert_eq!(rep["interrupted"], true, "{rep}");
    assert_eq!(rep["tune_id"], id, "{rep}");
    assert_eq!(rep["seed"], 5, "{rep}");
    assert_eq!(
        (&rep["trials"], &rep["evaluations"]),
        (&0.into(), &0.into())
    );
    assert_eq!(rep["runs"], runs, "{rep}");
    assert!(rep["candidate"].is_null(), "{rep}");
    assert!(rep["objective"]["candidate"].is_null(), "{rep}");
    assert!(rep["objective"]["default"].is_null(), "{rep}");
    assert!(rep["resume"].is_null(), "{rep}");
}

/// A reader that went away before the signal (`tune --json | true`) does not turn the stop
/// into a clean exit: the JSON's write fails with EPIPE, and the exit stays 130.
#[test]
fn a_stopped_tune_whose_reader_went_away_still_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let mut child = slow_tune(&db, &[]);
    drop(child.0.as_mut().unwrap().stdout.take());
    sigterm_at(
        child.child(),
        &db,
        "SELECT count(*) FROM trials WHERE finished_at IS NOT NULL",
        2,
    );
    let out = child.wait();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The signal came first, and only then did stderr's reader turn out gone (`2> >(head -1)`,
/// `2>&1 | tee log` whose reader died, then Ctrl-C): the "tune stopped" line's write fails
/// with EPIPE after the stop, so the exit stays 130, and stdout, still read, gets its JSON.
#[test]
fn a_signal_before_a_closed_stderr_keeps_exit_130_and_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let mut child = slow_tune(&db, &[]);
    // Mid-run, away from the lines stderr gets between runs: a run of 300 ms was just
    // recorded, so the next one is under way and the process writes nothing for a while.
    wait_for(&db, "SELECT count(*) FROM runs", 3);
    std::thread::sleep(Duration::from_millis(100));
    drop(child.0.as_mut().unwrap().stderr.take());
    sigterm(child.child());
    let out = child.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{stdout}");
    let rep: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(rep["interrupted"], true, "{rep}");
    let store = Store::open(&db).unwrap();
    let tunes = store.tunes(None).unwrap();
    assert_eq!(tunes.len(), 1);
    assert_eq!(tunes[0].status, "interrupted");
    assert_eq!(rep["tune_id"], tunes[0].id, "{rep}");
}

/// stderr's reader went away first (`2> >(head -0)`): its first line's EPIPE stops the tune,
/// which ends quietly (exit 0, as `| head` does); stdout, still read, gets the stopped tune's
/// JSON all the same.
#[test]
fn a_closed_stderr_stops_the_tune_with_0_and_stdout_still_gets_its_json() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let mut child = slow_tune(&db, &[]);
    drop(child.0.as_mut().unwrap().stderr.take());
    let out = child.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let rep: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(rep["interrupted"], true, "{rep}");
    let store = Store::open(&db).unwrap();
    let tunes = store.tunes(None).unwrap();
    assert_eq!(tunes.len(), 1);
    assert_eq!(tunes[0].status, "interrupted");
    assert_eq!(rep["tune_id"], tunes[0].id, "{rep}");
}
