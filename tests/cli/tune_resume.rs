//! `sweetspot tune --resume`: the newest interrupted tune of the same target, kernel and
//! policy goes on from its finished trials (replayed from the database, not run again); with
//! none, a fresh tune starts and stderr says so.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use sweetspot::Error;
use sweetspot::bench::Testbed;
use sweetspot::lock::{DeviceLock, Holder};
use sweetspot::store::Store;
use sweetspot::sysroot::SysRoot;
use sweetspot::tune::run::{Request, tune};

const SURFACE: &str = "data/surfaces/seed-2.5.39-mm1-fifo_batch.toml";

fn cli_tune(db: &Path, extra: &[&str]) -> (serde_json::Value, String) {
    cli_tune_on(Path::new(SURFACE), db, extra)
}

fn cli_tune_on(surface: &Path, db: &Path, extra: &[&str]) -> (serde_json::Value, String) {
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
        .arg("--db")
        .arg(db)
        .args(["tune", "--sim"])
        .arg(surface)
        .arg("--json")
        .args(extra)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    (serde_json::from_slice(&out.stdout).unwrap(), err)
}

/// Stores in `db` a quick-policy tune of the CLI's own --sim target (seed `seed`, which a
/// --sim tune also gives its noise) stopped after `runs` load runs; its id.
fn stopped_tune(db: &Path, seed: u64, runs: usize) -> i64 {
    stopped_tune_on(Path::new(SURFACE), db, seed, runs)
}

fn stopped_tune_on(surface: &Path, db: &Path, seed: u64, runs: usize) -> i64 {
    let store = Store::open(db).unwrap();
    let mut bed = sweetspot::bench::SimDevice::open(surface, seed)
        .unwrap()
        .stop_after(runs);
    let target = bed.target();
    let policy = sweetspot::tune::policy::builtin("quick").unwrap().unwrap();
    let lock = DeviceLock::acquire(
        &sweetspot::lock::path(db, &SysRoot::default(), &target.identity),
        &target.label,
        Holder::me("tune"),
    )
    .unwrap();
    let req = Request {
        policy: &policy,
        budget: None,
        seed,
        apply: false,
        quiet: true,
        lock: &lock,
        resume: None,
        confirm: None,
    };
    let e = tune(&store, db, &mut bed, &req).unwrap_err();
    assert!(matches!(e, Error::Interrupted), "{e:?}");
    store
        .tunes(None)
        .unwrap()
        .iter()
        .map(|t| t.id)
        .max()
        .unwrap()
}

#[test]
fn resume_goes_on_from_an_interrupted_tune_and_says_when_there_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    // A tune of the CLI's own --sim target, stopped before its 9th run (a --sim tune's seed
    // is also its noise's).
    let (from, k, k_runs) = {
        let id = stopped_tune(&db, 41, 8);
        let store = Store::open(&db).unwrap();
        let t = store.tunes(None).unwrap();
        assert_eq!(t[0].status, "interrupted");
        let done: Vec<_> = store
            .trials_of_tune(id)
            .unwrap()
            .into_iter()
            .filter(|t| t.finished_at.is_some())
            .collect();
        let runs: usize = done.iter().map(|t| store.runs(t.id).unwrap().len()).sum();
        (id, done.len(), runs)
    };
    assert!(k >= 2 && k_runs == 8, "{k} trials, {k_runs} runs");

    let (rep, err) = cli_tune(&db, &["--resume"]);
    assert!(
        err.contains(&format!(
            "resuming tune #{from} of sim:seed-2.5.39-mm1-fifo_batch (seed 41): its {k} \
             finished trials are reused"
        )),
        "{err}"
    );
    assert!(!err.contains("repeat this run with --seed"), "{err}");
    assert_eq!(rep["resumed"]["from_tune"], from, "{rep}");
    assert_eq!(rep["resumed"]["trials"], k, "{rep}");
    assert_eq!(rep["resumed"]["runs"], k_runs, "{rep}");
    assert!(rep["runs"].as_u64().unwrap() > k_runs as u64, "{rep}");
    // history says where the stopped tune's trials went, not "resumed 0 trials".
    let out = assert_cmd::Command::cargo_bin("sweetspot")
        .unwrap()
        .arg("--db")
        .arg(&db)
        .arg("history")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with(&format!("  #{from:<4} ")));
    let (line, verdict) = (lines.next().unwrap(), lines.next().unwrap_or_default());
    assert!(line.contains(" resumed "), "{text}");
    assert!(
        verdict
            .trim_start()
            .starts_with("→ its finished trials moved to the tune that resumed it"),
        "{text}"
    );

    // The stopped tune is taken over: a second --resume has nothing to go on with.
    let (rep, err) = cli_tune(&db, &["--resume"]);
    assert!(
        err.contains(
            "nothing to resume for sim:seed-2.5.39-mm1-fifo_batch (policy quick, budget 8"
        ),
        "{err}"
    );
    assert!(rep.get("resumed").is_none(), "{rep}");

    // A tune killed mid-way (SIGKILL, OOM, power loss) is `recovered` by the next command;
    // it resumes as well.
    let from = {
        let id = stopped_tune(&db, 42, 6);
        let store = Store::open(&db).unwrap();
        store
            .finish_tune(id, sweetspot::types::TuneStatus::Recovered)
            .unwrap();
        id
    };
    let (rep, err) = cli_tune(&db, &["--resume"]);
    assert!(
        err.contains(&format!(
            "resuming tune #{from} of sim:seed-2.5.39-mm1-fifo_batch (seed 42)"
        )),
        "{err}"
    );
    assert_eq!(rep["resumed"]["from_tune"], from, "{rep}");

    // --resume runs under the stopped tune's seed: another --seed is refused (exit 2, naming
    // both), the same one is the stopped command plus --resume and resumes it.
    let from = stopped_tune(&db, 43, 6);
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
        .arg("--db")
        .arg(&db)
        .args(["tune", "--sim", SURFACE, "--resume", "--seed", "3"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "--seed 3 with --resume: tune #{from} to resume ran with seed 43; drop --seed"
        )),
        "{err}"
    );
    let (rep, _) = cli_tune(&db, &["--resume", "--seed", "43"]);
    assert_eq!(rep["resumed"]["from_tune"], from, "{rep}");
}

/// A stopped tune that `--resume` does not resume is named, with why and what resumes it:
/// another budget (give it), or a newer tune of the device came after it (none does).
#[test]
fn resume_says_which_stopped_tune_it_does_not_resume_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let from = stopped_tune(&db, 45, 8);
    let k = {
        let store = Store::open(&db).unwrap();
        let t = store.trials_of_tune(from).unwrap();
        t.iter().filter(|t| t.finished_at.is_some()).count()
    };
    assert!(k >= 2, "{k}");
    let head = "nothing to resume for sim:seed-2.5.39-mm1-fifo_batch (policy quick";
    let (rep, err) = cli_tune(&db, &["--resume", "--budget", "20"]);
    let want = format!(
        "{head}, budget 20, kernel sim): tune #{from} (interrupted, {k} finished trials) was \
         made with budget 8, not 20: a fresh tune; give --budget 8 to resume it"
    );
    assert!(err.contains(&want), "want '{want}' in {err}");
    assert!(rep.get("resumed").is_none(), "{rep}");
    // That fresh tune is now the newest of the device and policy: the stopped one is not
    // resumed with its own budget either.
    let fresh = rep["tune_id"].as_i64().unwrap();
    let (rep, err) = cli_tune(&db, &["--resume", "--budget", "8"]);
    let want = format!(
        "{head}, budget 8, kernel sim): tune #{from} (interrupted, {k} finished trials) is not \
         the newest tune of sim:seed-2.5.39-mm1-fifo_batch with policy quick (tune #{fresh}, \
         done, came after it): a fresh tune; only the newest one is resumed"
    );
    assert!(err.contains(&want), "want '{want}' in {err}");
    assert!(rep.get("resumed").is_none(), "{rep}");
}

/// `--seed` is compared only with a stopped tune that `--resume` would resume: one made with
/// another budget is not resumed anyway, so `--resume --seed 3` says why and runs a fresh tune
/// under seed 3 (it was refused, exit 2, for the stopped tune's seed 43).
#[test]
fn a_seed_refuses_only_a_tune_that_would_be_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let (db, db2) = (dir.path().join("s.db"), dir.path().join("u.db"));
    let from = stopped_tune(&db, 43, 8);
    let k = {
        let store = Store::open(&db).unwrap();
        let t = store.trials_of_tune(from).unwrap();
        t.iter().filter(|t| t.finished_at.is_some()).count()
    };
    let (rep, err) = cli_tune(&db, &["--resume", "--seed", "3", "--budget", "20"]);
    let want = format!(
        "nothing to resume for sim:seed-2.5.39-mm1-fifo_batch (policy quick, budget 20, kernel \
         sim): tune #{from} (interrupted, {k} finished trials) was made with budget 8, not 20: \
         a fresh tune; give --budget 8 to resume it"
    );
    assert!(err.contains(&want), "want '{want}' in {err}");
    assert!(!err.contains("--seed 3 with --resume"), "{err}");
    assert!(rep.get("resumed").is_none(), "{rep}");
    // The fresh tune ran under the seed given: as the same tune without --resume does.
    let (fresh, _) = cli_tune(&db2, &["--seed", "3", "--budget", "20"]);
    for key in ["best", "candidate", "objective", "p_value", "runs", "loads"] {
        assert_eq!(rep[key], fresh[key], "{key}");
    }
}

/// A budget the policy cannot use is refused (exit 2) before `--resume` looks anything up:
/// no "nothing to resume" line ahead of the error.
#[test]
fn a_resume_with_a_budget_too_small_is_refused_before_it_says_anything_else() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
        .arg("--db")
        .arg(dir.path().join("s.db"))
        .args(["tune", "--sim", SURFACE, "--resume", "--budget", "3"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty());
    assert_eq!(
        err.lines().collect::<Vec<_>>(),
        [
            "sweetspot: error: --budget 3 is too small for policy 'quick': the final check alone \
          needs 2 × check_pairs = 4 trials, plus at least 2 for the search"
        ]
    );
}

/// A resumed --sim tune ends as the uninterrupted one with the same seed: the replayed runs
/// draw (and drop) the simulator's noise they drew first, so the live part goes on with the
/// same stream (it restarted the stream, and a resumed tune measured other values).
#[test]
fn a_resumed_sim_tune_ends_as_the_uninterrupted_one() {
    let dir = tempfile::tempdir().unwrap();
    let (db, db2) = (dir.path().join("r.db"), dir.path().join("u.db"));
    for stop in [5, 11] {
        let from = stopped_tune(&db, 44, stop);
        let (resumed, _) = cli_tune(&db, &["--resume"]);
        assert_eq!(resumed["resumed"]["from_tune"], from, "{resumed}");
        let (whole, _) = cli_tune(&db2, &["--seed", "44"]);
        for key in ["best", "candidate", "objective", "p_value", "runs", "loads"] {
            assert_eq!(resumed[key], whole[key], "stopped after {stop} runs: {key}");
        }
    }
}

/// A surface with no point at the default warns that the default's figures are interpolated,
/// once, on a resumed tune too (which opens the surface twice).
#[test]
fn a_surface_without_its_default_warns_once_on_a_resumed_tune_too() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(SURFACE).unwrap();
    let kept: Vec<&str> = text
        .split("[[point]]")
        .filter(|b| !b.contains("fifo_batch = 32 }"))
        .collect();
    assert_eq!(kept.len(), text.split("[[point]]").count() - 1);
    let surface = dir.path().join("no-default.toml");
    std::fs::write(&surface, kept.join("[[point]]")).unwrap();
    let db = dir.path().join("s.db");
    let warning = "no point lists the default setting";
    let (_, err) = cli_tune_on(&surface, &db, &["--seed", "2"]);
    assert_eq!(err.matches(warning).count(), 1, "{err}");
    stopped_tune_on(&surface, &db, 3, 6);
    let (rep, err) = cli_tune_on(&surface, &db, &["--resume"]);
    assert!(rep["resumed"]["from_tune"].is_i64(), "{rep}");
    assert_eq!(err.matches(warning).count(), 1, "{err}");
}
