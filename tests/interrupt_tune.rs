//! Ctrl-C during a tune's run: the run in progress finishes and is recorded, no new run
//! starts, the trial it belonged to is not finished, and the optimiser stops with
//! `Error::Interrupted`; a second signal asks to abandon a run at once. Its own test binary
//! (own process), because the signal count is process-wide.
#![allow(clippy::unwrap_used)]

use sweetspot::bench::{Load, Run, SimDevice, SpaceKnob, TargetInfo, Testbed};
use sweetspot::knob::Setting;
use sweetspot::tune::evaluator::Recorder;
use sweetspot::tune::{Options, optimise, policy, space::Space};
use sweetspot::{Error, Result, signals};

/// A simulated device that raises SIGINT at itself in the middle of run `during` (after the
/// run has started, before it returns), like a user's Ctrl-C while a run is measured.
struct CtrlCDuring {
    sim: SimDevice,
    during: usize,
    started: usize,
    /// What `signals::abort_run` said right after the signal, inside the run.
    abort_seen: Option<bool>,
}

impl Testbed for CtrlCDuring {
    fn target(&self) -> TargetInfo {
        self.sim.target()
    }
    fn space(&self) -> Vec<SpaceKnob> {
        self.sim.space()
    }
    fn apply(&mut self, s: &Setting) -> Result<()> {
        self.sim.apply(s)
    }
    fn run(&mut self, load: Load) -> Result<Run> {
        self.started += 1;
        if self.started == self.during {
            nix::sys::signal::raise(nix::sys::signal::Signal::SIGINT).unwrap();
            self.abort_seen = Some(signals::abort_run());
        }
        self.sim.run(load)
    }
    fn restore(&mut self) -> Result<()> {
        self.sim.restore()
    }
}

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
    signals::install();
    signals::finish_current_run(true);
    let sim = SimDevice::open(
        std::path::Path::new("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml"),
        7,
    )
    .unwrap();
    // Run 5 is the no_load run of trial 3 (two runs per trial under `quick`).
    let mut tb = CtrlCDuring {
        sim,
        during: 5,
        started: 0,
        abort_seen: None,
    };
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
    assert_eq!(tb.started, 5, "no run started after the signal");
    assert_eq!(rec.runs, 5, "the run in progress was finished and recorded");
    assert_eq!(rec.trials, 3);
    assert_eq!(rec.finished, [1, 2], "trial 3 stopped before its last run");

    // A second signal abandons whatever run is in progress.
    nix::sys::signal::raise(nix::sys::signal::Signal::SIGINT).unwrap();
    assert!(signals::abort_run());
}
