//! A trial's runs summarised per load, in contest's columns: Time, CPU%, Loads, LCPU%, Ratio.
//!
//! - Failed runs (`Run::failed`) are excluded from every number and listed in
//!   [`LoadSummary::failed`] and the warnings.
//! - Ratio = Time ÷ the same setting's mean no_load Time (contest). Per run it is
//!   `time_i / mean(no_load Time)`; its [`Summary`] has mean, sd, min, max and median of those,
//!   but its 95% CI comes from [`stats::ratio_ci`]`(load Times, no_load Times)`, which also
//!   counts no_load's own noise (paired by run index when both have the same number of runs, as
//!   interleaved runs do). With one run of either, the CI is the degenerate `(mean, mean)`.
//!   Without any successful no_load run, Ratio is `None` (shown as `n/a`) with a warning.
//! - Outliers are flagged by MAD (`stats::mad_outliers`) on Time, with a warning.

use crate::bench::{Load, Run};
use crate::knob::{Setting, setting_label};
use crate::stats::{self, Summary};
use serde::Serialize;

/// A run that failed, excluded from the numbers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FailedRun {
    /// 1-based repeat number of the load within the trial.
    pub run: usize,
    /// Why it failed.
    pub reason: String,
}

/// One load of a trial, summarised.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoadSummary {
    /// The load.
    pub load: Load,
    /// Successful runs counted in the numbers (contest's `[runs]`).
    pub runs: usize,
    /// Time, s. `None` when no run succeeded.
    pub time_s: Option<Summary>,
    /// CPU%, %.
    pub cpu_pct: Option<Summary>,
    /// Loads (work units); `None` when no run reports it (no_load, cacherun).
    pub loads: Option<Summary>,
    /// LCPU%, %; `None` when no run reports it.
    pub lcpu_pct: Option<Summary>,
    /// Ratio (dimensionless); `None` without no_load.
    pub ratio: Option<Summary>,
    /// Every run of this load in order, failed ones included (raw values).
    pub raw: Vec<Run>,
    /// Per-run Ratio aligned with `raw` (`None` for failed runs or without no_load).
    pub raw_ratio: Vec<Option<f64>>,
    /// The failed runs.
    pub failed: Vec<FailedRun>,
}

/// A whole trial, summarised.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrialSummary {
    /// The setting measured.
    pub setting: Setting,
    /// Its label for the table's first column, e.g. `fifo_batch=8`.
    pub label: String,
    /// One entry per load, in the order the loads were first run.
    pub loads: Vec<LoadSummary>,
    /// Human warnings: no no_load for Ratio, failed runs, outliers.
    pub warnings: Vec<String>,
}

impl TrialSummary {
    /// The summary of one load, if it ran.
    pub(crate) fn load(&self, load: Load) -> Option<&LoadSummary> {
        self.loads.iter().find(|l| l.load == load)
    }
}

fn ok_values(runs: &[&Run], f: impl Fn(&Run) -> Option<f64>) -> Vec<f64> {
    runs.iter()
        .filter(|r| r.failed.is_none())
        .filter_map(|r| f(r))
        .collect()
}

/// Summarises the runs of one trial at `setting`.
pub(crate) fn summarize_trial(setting: &Setting, runs: &[Run]) -> TrialSummary {
    let mut order: Vec<Load> = Vec::new();
    for r in runs {
        if !order.contains(&r.load) {
            order.push(r.load);
        }
    }
    let of = |l: Load| runs.iter().filter(|r| r.load == l).collect::<Vec<_>>();
    let no_load = ok_values(&of(Load::NoLoad), |r| Some(r.time_s));
    let base = (!no_load.is_empty()).then(|| stats::mean(&no_load));
    let mut warnings = Vec::new();
    if base.is_none() && !runs.is_empty() {
        warnings.push("Ratio n/a: no successful no_load run at this setting".to_string());
    }
    let loads = order
        .into_iter()
        .map(|load| {
            let rs = of(load);
            let times = ok_values(&rs, |r| Some(r.time_s));
            let failed: Vec<FailedRun> = rs
                .iter()
                .enumerate()
                .filter_map(|(i, r)| {
                    r.failed.as_ref().map(|why| FailedRun {
                        run: i + 1,
                        reason: why.clone(),
                    })
                })
                .collect();
            for f in &failed {
                warnings.push(format!("{load} run {} failed: {}", f.run, f.reason));
            }
            let time_s = stats::summarize(&times);
            if let Some(t) = time_s.as_ref().filter(|t| !t.outliers.is_empty()) {
                let list: Vec<String> = t
                    .outliers
                    .iter()
                    .map(|i| format!("{:.2} s", times[*i]))
                    .collect();
                warnings.push(format!(
                    "{load}: Time outlier(s) by MAD (modified z-score > 3.5): {}",
                    list.join(", ")
                ));
            }
            let raw_ratio: Vec<Option<f64>> = rs
                .iter()
                .map(|r| base.filter(|_| r.failed.is_none()).map(|b| r.time_s / b))
                .collect();
            let ratio = base.and_then(|_| {
                let per_run: Vec<f64> = raw_ratio.iter().flatten().copied().collect();
                let mut s = stats::summarize(&per_run)?;
                if let Some((_, lo, hi)) = stats::ratio_ci(&times, &no_load) {
                    s.ci95 = (lo, hi);
                }
                Some(s)
            });
            LoadSummary {
                load,
                runs: times.len(),
                time_s,
                cpu_pct: stats::summarize(&ok_values(&rs, |r| Some(r.cpu_pct))),
                loads: stats::summarize(&ok_values(&rs, |r| r.loads)),
                lcpu_pct: stats::summarize(&ok_values(&rs, |r| r.lcpu_pct)),
                ratio,
                raw: rs.into_iter().cloned().collect(),
                raw_ratio,
                failed,
            }
        })
        .collect();
    TrialSummary {
        setting: setting.clone(),
        label: setting_label(setting),
        loads,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(load: Load, t: f64) -> Run {
        Run {
            load,
            time_s: t,
            cpu_pct: 50.0,
            loads: (load != Load::NoLoad).then_some(10.0),
            lcpu_pct: None,
            failed: None,
            io: None,
        }
    }

    #[test]
    fn ratio_is_time_over_mean_no_load_time_and_failures_are_excluded() {
        let mut bad = run(Load::IoLoad, 1000.0);
        bad.failed = Some("the load completed no work".into());
        let runs = vec![
            run(Load::NoLoad, 60.0),
            run(Load::IoLoad, 120.0),
            run(Load::NoLoad, 62.0),
            bad,
            run(Load::NoLoad, 64.0),
            run(Load::IoLoad, 180.0),
        ];
        let s = summarize_trial(&Setting::new(), &runs);
        assert_eq!(s.label, "default");
        assert_eq!(s.loads[0].load, Load::NoLoad);
        let io = s.load(Load::IoLoad).unwrap();
        assert_eq!(io.runs, 2);
        assert_eq!(io.raw.len(), 3);
        assert_eq!(io.time_s.as_ref().unwrap().mean, 150.0);
        let r = io.ratio.as_ref().unwrap();
        assert!((r.mean - 150.0 / 62.0).abs() < 1e-12);
        assert_eq!(io.raw_ratio[1], None);
        assert!((io.raw_ratio[0].unwrap() - 120.0 / 62.0).abs() < 1e-12);
        // Unpaired (2 vs 3 runs): the CI comes from ratio_ci and contains the ratio.
        let (_, lo, hi) = stats::ratio_ci(&[120.0, 180.0], &[60.0, 62.0, 64.0]).unwrap();
        assert_eq!(r.ci95, (lo, hi));
        assert_eq!(
            io.failed,
            vec![FailedRun {
                run: 2,
                reason: "the load completed no work".into()
            }]
        );
        assert!(
            s.warnings
                .iter()
                .any(|w| w.contains("io_load run 2 failed"))
        );
        assert_eq!(io.loads.as_ref().unwrap().mean, 10.0);
        assert!(s.load(Load::NoLoad).unwrap().loads.is_none());
        assert!(io.lcpu_pct.is_none());
    }

    #[test]
    fn no_no_load_means_ratio_na_with_a_warning() {
        let s = summarize_trial(&Setting::new(), &[run(Load::IoLoad, 100.0)]);
        assert!(s.loads[0].ratio.is_none());
        assert_eq!(s.loads[0].raw_ratio, vec![None]);
        assert!(s.warnings[0].starts_with("Ratio n/a"));
    }

    #[test]
    fn outliers_are_flagged() {
        let times = [60.0, 61.0, 59.0, 60.0, 60.5, 95.0];
        let runs: Vec<Run> = times.iter().map(|&t| run(Load::NoLoad, t)).collect();
        let s = summarize_trial(&Setting::new(), &runs);
        assert_eq!(s.loads[0].time_s.as_ref().unwrap().outliers, vec![5]);
        assert!(
            s.warnings.iter().any(|w| w.contains("95.00 s")),
            "{:?}",
            s.warnings
        );
    }
}
