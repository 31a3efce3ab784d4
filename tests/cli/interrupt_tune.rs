//! Ctrl-C during a tune's run: the run in progress finishes and is recorded, no new run
//! starts, the trial it belonged to is not finished, and the optimiser stops with
//! `Error::Interrupted`; a second signal asks to abandon a run at once. In a process of its
//! own (`common::alone`), because the signal count is process-wide.
#![allow(clippy::unwrap_used)]

use crate::common;

use sweetspot::bench::{Run, Testbed};
use sweetspot::knob::Setting;
use sweetspot::tune::evaluator::Recorder;
use sweetspot::tune::{Options, optimise, policy, space::Space};
use sweetspot::{Error, Result, signals};

/// Counts what the evaluator records.
#[derive(Default)]
struct Count {
    trials: i64,
    runs: usize,
    finished: Vec<i64>,
}

impl Recorder for Count {
    fn trial_started(&mut self, _: &Setting) -> Result<i64> {
        self.trials += 1;
        Ok(self.trials)
    }
    fn run_finished(&mut self, _: i64, _: usize, _: &Run) -> Result<()> {
        self.runs += 1;
        Ok(())
    }
    fn trial_finished(&mut self, trial: i64) -> Result<()> {
        self.finished.push(trial);
        Ok(())
    }
}

#[test]
fn the_run_in_progress_finishes_then_the_tune_stops() {
    if !common::alone::in_own_process() {
        return;
    }
    signals::install();
    signals::finish_current_run(true);
    // Run 1 is the no_load run of trial 1, the default's full trial (no_load, io_load); the
    // screen's next trials are one run each, so this is the trial with a run left after the
    // signal.
    let mut tb = common::CtrlC::seed_surface(Some(1), None);
    let pol = policy::builtin("quick").unwrap().unwrap();
    let space = Space::build(&tb.space(), &pol, None).unwrap();
    let mut rec = Count::default();
    let e = optimise(&mut tb, &space, &pol, &mut rec, Options::default()).unwrap_err();
    assert!(matches!(e, Error::Interrupted), "{e}");
    assert_eq!(
        tb.abort_seen,
        Some(false),
        "the first signal let the run go on"
    );
    assert_eq!(tb.started, 1, "no run started after the signal");
    assert_eq!(rec.runs, 1, "the run in progress was finished and recorded");
    assert_eq!(rec.trials, 1);
    assert!(
        rec.finished.is_empty(),
        "trial 1 stopped before its last run"
    );

    // A second signal abandons whatever run is in progress.
    nix::sys::signal::raise(nix::sys::signal::Signal::SIGINT).unwrap();
    assert!(signals::abort_run());
}
