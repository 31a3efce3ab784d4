//! `sweetspot tune --resume`: the newest interrupted tune of the same target, kernel and
//! policy goes on from its finished trials (replayed from the database, not run again); with
//! none, a fresh tune starts and stderr says so.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use sweetspot::bench::{Load, Run, SpaceKnob, TargetInfo, Testbed};
use sweetspot::knob::Setting;
use sweetspot::lock::{DeviceLock, Holder};
use sweetspot::store::Store;
use sweetspot::sysroot::SysRoot;
use sweetspot::tune::run::{Request, tune};
use sweetspot::{Error, Result};

const SURFACE: &str = "data/surfaces/seed-2.5.39-mm1-fifo_batch.toml";

/// The seed surface, stopped (as by Ctrl-C) before its run `stop_at`.
struct StopAt {
    sim: sweetspot::bench::SimDevice,
    runs: usize,
    stop_at: usize,
}

impl Testbed for StopAt {
    fn target(&self) -> TargetInfo {
        self.sim.target()
    }
    fn space(&self) -> Vec<SpaceKnob> {
        self.sim.space()
    }
    fn lacks(&self, load: Load, metric: &str) -> Option<String> {
        self.sim.lacks(load, metric)
    }
    fn apply(&mut self, s: &Setting) -> Result<()> {
        self.sim.apply(s)
    }
    fn run(&mut self, load: Load) -> Result<Run> {
        if self.runs == self.stop_at {
            return Err(Error::Interrupted);
        }
        self.runs += 1;
        self.sim.run(load)
    }
    fn sizes(&self) -> serde_json::Value {
        self.sim.sizes()
    }
    fn restore(&mut self) -> Result<()> {
        self.sim.restore()
    }
}

fn cli_tune(db: &Path, extra: &[&str]) -> (serde_json::Value, String) {
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
        .arg("--db")
        .arg(db)
        .args(["tune", "--sim", SURFACE, "--json"])
        .args(extra)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    (serde_json::from_slice(&out.stdout).unwrap(), err)
}

#[test]
fn resume_goes_on_from_an_interrupted_tune_and_says_when_there_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    // A tune of the CLI's own --sim target, stopped before its 9th run (a --sim tune's seed
    // is also its noise's).
    let (from, k, k_runs) = {
        let store = Store::open(&db).unwrap();
        let sim = sweetspot::bench::SimDevice::open(Path::new(SURFACE), 41).unwrap();
        let target = sim.target();
        let mut bed = StopAt {
            sim,
            runs: 0,
            stop_at: 8,
        };
        let policy = sweetspot::tune::policy::builtin("quick").unwrap().unwrap();
        let lock = DeviceLock::acquire(
            &sweetspot::lock::path(&db, &SysRoot::default(), &target.identity),
            &target.label,
            Holder::me("tune"),
        )
        .unwrap();
        let req = Request {
            policy: &policy,
            budget: None,
            seed: 41,
            apply: false,
            quiet: true,
            lock: &lock,
            resume: None,
        };
        let e = tune(&store, &db, &mut bed, &req).unwrap_err();
        assert!(matches!(e, Error::Interrupted), "{e:?}");
        let t = store.tunes(None).unwrap();
        assert_eq!(t[0].status, "interrupted");
        let done: Vec<_> = store
            .trials_of_tune(t[0].id)
            .unwrap()
            .into_iter()
            .filter(|t| t.finished_at.is_some())
            .collect();
        let runs: usize = done.iter().map(|t| store.runs(t.id).unwrap().len()).sum();
        (t[0].id, done.len(), runs)
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

    // The stopped tune is taken over: a second --resume has nothing to go on with.
    let (rep, err) = cli_tune(&db, &["--resume"]);
    assert!(
        err.contains(
            "nothing to resume for sim:seed-2.5.39-mm1-fifo_batch (policy quick, budget 12"
        ),
        "{err}"
    );
    assert!(rep.get("resumed").is_none(), "{rep}");

    // --resume picks its seed itself.
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
        .arg("--db")
        .arg(&db)
        .args(["tune", "--sim", SURFACE, "--resume", "--seed", "3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
