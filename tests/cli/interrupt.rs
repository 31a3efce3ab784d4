//! Ctrl-C between runs: the runner stops before the next run with `Error::Interrupted`, and the
//! runs that finished are already in the store. In a process of its own (`common::alone`),
//! because the interrupted flag is process-wide.
#![allow(clippy::unwrap_used)]

use crate::common;

use sweetspot::Error;
use sweetspot::bench::Load;
use sweetspot::bench::trial::measure_trial;
use sweetspot::knob::Setting;
use sweetspot::store::Store;

#[test]
fn stops_between_runs_and_keeps_finished_runs() {
    if !common::alone::in_own_process() {
        return;
    }
    sweetspot::signals::install();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    let mut tb = common::CtrlC::seed_surface(None, Some(3));
    let bar = indicatif::ProgressBar::hidden();
    let loads = [Load::NoLoad, Load::IoLoad];
    let e = measure_trial(&mut tb, &store, &Setting::new(), &loads, 5, None, &bar).unwrap_err();
    assert!(matches!(e, Error::Interrupted), "{e}");
    assert_eq!(e.exit_code(), 130);
    assert_eq!(tb.started, 3, "no run started after the signal");
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
