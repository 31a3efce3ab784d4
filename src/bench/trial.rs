//! Measuring a trial: apply a setting, run every load `runs` times run-major
//! (`no_load io_load no_load io_load ...`, so drift hits every load alike), write each run to
//! the store as soon as it finishes, and stop between runs on Ctrl-C/SIGTERM.
//!
//! [`measure_trial`] is what `bench` and the tuner call for one setting. To interleave the runs
//! of competing settings (A B A B), use `OpenTrial` directly: begin one per setting, then apply
//! and `OpenTrial::run` them in turn.

use crate::bench::summary::{TrialSummary, summarize_trial};
use crate::bench::{Load, Run, Testbed};
use crate::knob::Setting;
use crate::store::Store;
use crate::{Error, Result, signals};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

/// A trial being measured: its store row and the runs so far.
#[derive(Clone, Debug)]
pub(crate) struct OpenTrial {
    /// The trial's id in the store.
    pub id: i64,
    /// The setting it measures.
    pub setting: Setting,
    /// The runs so far, in order (failed ones included).
    pub runs: Vec<Run>,
}

/// What [`measure_trial`] returns: the trial's id, its raw runs and their summary.
#[derive(Clone, Debug)]
pub struct TrialResult {
    /// The trial's id in the store.
    pub trial_id: i64,
    /// The setting measured.
    pub setting: Setting,
    /// Every run in the order it ran.
    pub runs: Vec<Run>,
    /// Per-load summary (contest's columns, statistics).
    pub summary: TrialSummary,
}

impl OpenTrial {
    /// Records a new trial of `setting` on `tb` (device row, trial row with the testbed's
    /// sizes, and `tune_id`). Applies nothing.
    pub(crate) fn begin(
        tb: &dyn Testbed,
        store: &Store,
        setting: &Setting,
        tune_id: Option<i64>,
    ) -> Result<OpenTrial> {
        let target = tb.target();
        store.touch_device(
            &target,
            &serde_json::to_value(tb.space()).unwrap_or_default(),
        )?;
        let id = store.insert_trial(&target, setting, &tb.sizes(), tune_id)?;
        Ok(OpenTrial {
            id,
            setting: setting.clone(),
            runs: Vec::new(),
        })
    }

    /// One run of `load` on `tb` at whatever setting is applied now, written to the store at
    /// once. Errors: [`Error::Interrupted`] (before starting) once Ctrl-C/SIGTERM arrived, or
    /// the testbed's error (the run is then not recorded).
    pub(crate) fn run(&mut self, tb: &mut dyn Testbed, store: &Store, load: Load) -> Result<&Run> {
        if signals::interrupted() {
            return Err(Error::Interrupted);
        }
        let run = tb.run(load)?;
        store.insert_run(self.id, self.runs.len(), &run)?;
        if let Some(why) = &run.failed {
            tracing::warn!("{load} run failed: {why}");
        }
        let i = self.runs.len();
        self.runs.push(run);
        Ok(&self.runs[i])
    }

    /// The per-load summary of the runs so far.
    pub(crate) fn summary(&self) -> TrialSummary {
        summarize_trial(&self.setting, &self.runs)
    }
}

/// Measures one setting: applies `setting` on `tb` (an empty setting applies nothing), then
/// `measure_applied`. Does not restore: the caller restores the testbed, also on error.
/// Errors: the testbed's (a refused knob: nothing is recorded then), and those of
/// `measure_applied`.
pub fn measure_trial(
    tb: &mut dyn Testbed,
    store: &Store,
    setting: &Setting,
    loads: &[Load],
    runs: u32,
    tune_id: Option<i64>,
    progress: &ProgressBar,
) -> Result<TrialResult> {
    if signals::interrupted() {
        return Err(Error::Interrupted);
    }
    if !setting.is_empty() {
        tb.apply(setting)?;
    }
    measure_applied(tb, store, setting, loads, runs, tune_id, progress)
}

/// Measures the setting already in force on `tb` (`setting` names it for the store and the
/// report; nothing is applied): records a trial (with `tune_id`), runs each of `loads` `runs`
/// times run-major, writes every run to `store` as it finishes, and advances `progress` by
/// one per run.
///
/// Errors: the testbed's (e.g. an unavailable load), the store's, or [`Error::Interrupted`]
/// between runs after Ctrl-C/SIGTERM (the runs done so far are already stored).
pub(crate) fn measure_applied(
    tb: &mut dyn Testbed,
    store: &Store,
    setting: &Setting,
    loads: &[Load],
    runs: u32,
    tune_id: Option<i64>,
    progress: &ProgressBar,
) -> Result<TrialResult> {
    let mut trial = OpenTrial::begin(tb, store, setting, tune_id)?;
    for i in 0..runs {
        for &load in loads {
            progress.set_message(format!("{} run {}/{runs}: {load}", trial.id, i + 1));
            trial.run(tb, store, load)?;
            progress.inc(1);
        }
    }
    store.finish_trial(trial.id)?;
    Ok(TrialResult {
        trial_id: trial.id,
        summary: trial.summary(),
        setting: trial.setting,
        runs: trial.runs,
    })
}

/// A progress bar of `total` runs on stderr, or a hidden one when stderr is not a TTY or
/// `quiet` is set.
pub(crate) fn progress_bar(total: u64, quiet: bool) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    if let Ok(style) =
        ProgressStyle::with_template("{bar:30} {pos}/{len} runs  {elapsed}  trial {msg}")
    {
        bar.set_style(style);
    }
    bar
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::SimDevice;
    use crate::knob::KnobValue;
    use std::path::Path;

    #[test]
    fn runs_run_major_stores_each_run_and_applies_the_setting() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db")).unwrap();
        let mut tb = SimDevice::open(
            Path::new("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml"),
            7,
        )
        .unwrap();
        let setting = Setting::from([("fifo_batch".to_string(), KnobValue::Int(8))]);
        let loads = [Load::NoLoad, Load::IoLoad];
        let r = measure_trial(
            &mut tb,
            &store,
            &setting,
            &loads,
            3,
            None,
            &ProgressBar::hidden(),
        )
        .unwrap();
        let order: Vec<Load> = r.runs.iter().map(|r| r.load).collect();
        assert_eq!(order, [Load::NoLoad, Load::IoLoad].repeat(3));
        assert_eq!(tb.current(), setting);
        let stored = store.runs(r.trial_id).unwrap();
        assert_eq!(
            stored.iter().map(|s| s.run.clone()).collect::<Vec<_>>(),
            r.runs
        );
        let t = store.trial(r.trial_id).unwrap().unwrap();
        assert_eq!(t.setting, setting);
        assert_eq!(t.identity, "sim:seed-2.5.39-mm1-fifo_batch");
        assert_eq!(t.sizes["seed"], 7);
        let io = r.summary.load(Load::IoLoad).unwrap();
        assert_eq!(io.runs, 3);
        // 109.1 / 67.7 = 1.61 (the thread's figure at fifo_batch 8), within noise.
        let ratio = io.ratio.as_ref().unwrap().mean;
        assert!((ratio - 1.61).abs() < 0.25, "{ratio}");
        // A refused value stores nothing.
        let bad = Setting::from([("fifo_batch".to_string(), KnobValue::Int(0))]);
        let e = measure_trial(
            &mut tb,
            &store,
            &bad,
            &loads,
            1,
            None,
            &ProgressBar::hidden(),
        );
        assert!(e.is_err());
        assert_eq!(store.trials(None).unwrap().len(), 1);
    }
}
