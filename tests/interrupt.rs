//! Ctrl-C between runs: the runner stops before the next run with `Error::Interrupted`, and the
//! runs that finished are already in the store. Its own test binary (own process), because the
//! interrupted flag is process-wide.
#![allow(clippy::unwrap_used)]

use sweetspot::bench::runner::measure_trial;
use sweetspot::bench::{Load, Run, SimDevice, SpaceKnob, TargetInfo, Testbed};
use sweetspot::knob::Setting;
use sweetspot::store::Store;
use sweetspot::{Error, Result};

/// A simulated device that raises SIGINT at itself after `after` runs, like a user's Ctrl-C.
struct CtrlCAfter {
    sim: SimDevice,
    after: usize,
    done: usize,
}

impl Testbed for CtrlCAfter {
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
        let r = self.sim.run(load)?;
        self.done += 1;
        if self.done == self.after {
            nix::sys::signal::raise(nix::sys::signal::Signal::SIGINT).unwrap();
        }
        Ok(r)
    }
    fn restore(&mut self) -> Result<()> {
        self.sim.restore()
    }
}

#[test]
fn stops_between_runs_and_keeps_finished_runs() {
    sweetspot::signals::install();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    let sim = SimDevice::open(
        std::path::Path::new("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml"),
        7,
    )
    .unwrap();
    let mut tb = CtrlCAfter {
        sim,
        after: 3,
        done: 0,
    };
    let bar = indicatif::ProgressBar::hidden();
    let loads = [Load::NoLoad, Load::IoLoad];
    let e = measure_trial(&mut tb, &store, &Setting::new(), &loads, 5, None, &bar).unwrap_err();
    assert!(matches!(e, Error::Interrupted), "{e}");
    assert_eq!(e.exit_code(), 130);
    assert_eq!(tb.done, 3, "no run started after the signal");
    assert!(
        sweetspot::signals::abort_run(),
        "bench abandons a run in progress on the first signal"
    );
    let trials = store.trials(None).unwrap();
    assert_eq!(trials.len(), 1);
    assert_eq!(trials[0].finished_at, None, "stopped before its last run");
    let runs = store.runs(trials[0].id).unwrap();
    let loads: Vec<Load> = runs.iter().map(|r| r.run.load).collect();
    assert_eq!(loads, [Load::NoLoad, Load::IoLoad, Load::NoLoad]);
}
