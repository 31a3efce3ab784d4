//! The tune's progress bar counts load runs against the run budget (issue #32 item 4): it
//! showed `22/12 trials` and was full for the last ~45% of a tune. Whole `--sim` tunes, the
//! screen's (trials of some loads only) and the GP search's (full trials, a guard rail),
//! watched through the log's hook after every trial: the count never passes the budget, the
//! budget never has to grow, and the count ends at the runs the tune made.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use sweetspot::bench::{SimDevice, Testbed};
use sweetspot::tune::{self, evaluator::NoRecord, observe::TrialLog, policy, space::Space};

fn root(p: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(p)
}

/// (runs done, run budget) after each trial of one tune, and the tune's outcome.
fn watch(surface: &str, pol: &policy::Policy, seed: u64) -> (Vec<(u64, u64)>, tune::TuneOutcome) {
    let mut sim = SimDevice::open(&root(surface), seed).unwrap();
    let space = Space::build(&sim.space(), pol, None).unwrap();
    let steps = Rc::new(RefCell::new(Vec::new()));
    let seen = Rc::clone(&steps);
    let budget = tune::run_budget(pol, None, false);
    let log = TrialLog::new(vec![], "Ratio".into(), budget, true)
        .on_step(move |p| seen.borrow_mut().push((p.done(), p.total())));
    let out = tune::optimise(
        &mut sim,
        &space,
        pol,
        &mut NoRecord,
        tune::Options {
            seed,
            budget: None,
            log: Some(log),
            ..Default::default()
        },
    )
    .unwrap();
    let steps = steps.borrow().clone();
    (steps, out)
}

fn check(surface: &str, pol: &policy::Policy, seeds: std::ops::Range<u64>) {
    let budget = tune::run_budget(pol, None, false);
    for seed in seeds {
        let (steps, out) = watch(surface, pol, seed);
        assert_eq!(steps.len(), out.trials.len(), "one step a trial");
        let mut last = 0;
        let mut made = 0;
        for (&(done, total), trial) in steps.iter().zip(&out.trials) {
            assert!(done <= total, "seed {seed}: {done}/{total} in {steps:?}");
            assert_eq!(total, budget, "seed {seed}: the budget grew: {steps:?}");
            // It counts load runs (a trial of loaded runs only is one), not trials.
            made += trial.runs.len() as u64;
            assert_eq!(done, made, "seed {seed}: {steps:?}");
            assert!(
                done > last,
                "seed {seed}: every trial makes a run: {steps:?}"
            );
            last = done;
        }
        assert_eq!(
            last, out.runs,
            "seed {seed}: the bar ends at the tune's runs"
        );
    }
}

#[test]
fn the_screens_count_of_load_runs_never_passes_the_run_budget() {
    let quick = policy::builtin("quick").unwrap().unwrap();
    // quick: budget 8 full trials of no_load + io_load, 1 run each.
    assert_eq!(tune::run_budget(&quick, None, false), 16);
    assert_eq!(tune::run_budget(&quick, Some(30), false), 60);
    check("data/surfaces/synthetic-2d-deadline.toml", &quick, 1..9);
    // The screen lists more trials than the budget's 8 (loaded runs alone are trials), the
    // count the bar used to show.
    let (_, out) = watch("data/surfaces/synthetic-2d-deadline.toml", &quick, 1);
    assert!(out.trials.len() > 8, "{}", out.trials.len());
}

#[test]
fn a_judged_tune_stays_within_the_run_budget_with_its_judges_most() {
    let quick = policy::builtin("quick").unwrap().unwrap();
    // quick's judge: 6 pairs (12 runs); a fallback's screen (4), check (3 pairs of 2 full
    // trials of 2 runs: 12) and judge (12).
    assert_eq!(tune::judge_runs(&quick), 40);
    assert_eq!(tune::run_budget(&quick, None, true), 56);
    for (surface, seeds) in [
        ("data/surfaces/startup-hurts-fifo_batch.toml", 1..6),
        ("data/surfaces/startup-holds-fifo_batch.toml", 1..6),
    ] {
        for seed in seeds {
            let (_, out) = watch(surface, &quick, seed);
            assert!(
                !out.judges.is_empty(),
                "{surface} seed {seed}: the judge ran"
            );
            assert!(out.runs <= 64, "{surface} seed {seed}: {} runs", out.runs);
        }
    }
}

#[test]
fn the_gp_searchs_count_of_load_runs_never_passes_the_run_budget() {
    let text = std::fs::read_to_string(root("tests/policies/guarded.toml")).unwrap();
    let pol = policy::parse(&text, Path::new("guarded.toml"), "guarded", "test").unwrap();
    assert!(!pol.guards.is_empty(), "guard rails keep the GP search");
    check("data/surfaces/synthetic-2d-deadline.toml", &pol, 1..5);
}
