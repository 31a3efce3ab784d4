//! A tune stopped by Ctrl-C or SIGTERM, read back from the store once it is recorded as
//! `interrupted`: what `tune --json` prints then (exit 130) instead of the final report.
//!
//! Its figures are the durable record's, the ones `tune --resume` goes on from
//! (`crate::tune::resume::Resume::find_or_why`): the finished trials (a trial stopped
//! between its runs is no measurement, and is not replayed), every load run stored under the
//! tune, its seed and budget. Only the search's incumbent is not in the store: the trial log
//! (`crate::tune::observe::TrialLog::incumbent`) hands it over; its objective is then read
//! from the stored runs.

use crate::bench::{Run, TargetInfo};
use crate::knob::Setting;
use crate::store::Store;
use crate::tune::evaluator::{objective_value, trial_metrics};
use crate::tune::policy::{Objective, Policy};
use crate::tune::report::{loaded_only, pooled_no_load};
use crate::tune::resume::Resumed;
use crate::tune::space::Space;
use crate::{Error, Result};
use serde::Serialize;

/// The objective, by name, at the default and at the search's incumbent, so far: what the
/// final report's `objective` gives as `default` and `candidate` (same names, same units).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct StoppedObjective {
    /// What it is, e.g. `io_load Ratio` ([`Objective::label`]).
    pub name: String,
    /// Geometric mean over the default's finished trials (its unit: a Ratio, Loads, or the
    /// benchmark's figure); `None` when none measured it.
    pub default: Option<f64>,
    /// The same over [`Stopped::candidate`]'s finished trials; `None` without a candidate,
    /// or when none of its trials measured the objective.
    pub candidate: Option<f64>,
}

/// A tune that Ctrl-C or SIGTERM stopped: the device was restored and the tune recorded as
/// `interrupted`, its finished trials kept for `tune --resume`. Field names are those of the
/// final report ([`crate::tune::report::Report`]) where the meaning is the same; there is no
/// `best`, `significant` or `p_value`, since no final check ran.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Stopped {
    /// The tune's row id (`history`'s `#N`).
    pub tune_id: i64,
    /// What was tuned, as its `tunes` row has it.
    pub target: TargetInfo,
    /// Policy name.
    pub policy: String,
    /// The optimiser's seed (also a `--sim` device's noise): a resumed tune runs under it.
    pub seed: u64,
    /// The trial budget it ran with: only a `--resume` with this budget resumes it.
    pub budget: u32,
    /// The default setting, knob → value.
    pub default: Setting,
    /// The search's incumbent when it stopped, knob → value: the best setting so far, not
    /// checked against the default (the final report's `candidate`); `None` when no trial
    /// had finished.
    pub candidate: Option<Setting>,
    /// The objective at the default and at the candidate.
    pub objective: StoppedObjective,
    /// Distinct settings among the finished trials.
    pub evaluations: usize,
    /// Finished trials (every load of the trial run), those of a tune it resumed included:
    /// what `tune --resume` replays.
    pub trials: usize,
    /// Load runs made, no_load included, those of the trial it stopped in and of a tune it
    /// resumed too: the cost so far.
    pub runs: u64,
    /// The interrupted tune this one resumed, and the trials and runs of it reused
    /// (included in `trials` and `runs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumed: Option<Resumed>,
}

impl Stopped {
    /// Reads tune `tune_id` back from `store` once it is recorded as stopped; `policy` and
    /// `space` are the tune's, `incumbent` the search's incumbent (a grid index into
    /// `space.points`) when it stopped, `resumed` what it reused of a tune it resumed.
    /// Errors: the store's; [`Error::Failed`] when the tune or its seed and budget are not
    /// stored.
    pub(crate) fn read(
        store: &Store,
        tune_id: i64,
        policy: &Policy,
        space: &Space,
        incumbent: Option<usize>,
        resumed: Option<Resumed>,
    ) -> Result<Stopped> {
        let (Some(row), Some((seed, budget))) = (store.tune(tune_id)?, store.tune_plan(tune_id)?)
        else {
            return Err(Error::Failed(format!(
                "database: tune #{tune_id} or its seed and budget are not stored"
            )));
        };
        let mut trials = Vec::new();
        let mut runs = 0;
        // Counted as `tune --resume` counts them: only the last trial can be unfinished.
        let mut finished = true;
        for t in store.trials_of_tune(tune_id)? {
            let r: Vec<Run> = store.runs(t.id)?.into_iter().map(|r| r.run).collect();
            runs += r.len() as u64;
            finished &= t.finished_at.is_some();
            if finished {
                trials.push((t.setting, r));
            }
        }
        let default = space.points[space.default].clone();
        let candidate = incumbent.and_then(|i| space.points.get(i)).cloned();
        let mut distinct: Vec<&Setting> = trials.iter().map(|(s, _)| s).collect();
        distinct.sort();
        distinct.dedup();
        Ok(Stopped {
            tune_id,
            target: TargetInfo {
                label: row.target,
                identity: row.identity,
                kernel: row.kernel,
            },
            policy: row.policy,
            seed,
            budget,
            objective: StoppedObjective {
                name: policy.objective.label(),
                default: objective_at(&policy.objective, &trials, &default),
                candidate: candidate
                    .as_ref()
                    .and_then(|c| objective_at(&policy.objective, &trials, c)),
            },
            default,
            candidate,
            evaluations: distinct.len(),
            trials: trials.len(),
            runs,
            resumed,
        })
    }
}

/// The objective at `setting` over the finished `trials` (setting, runs) of a tune without a
/// verdict, as the final report reads a trial: the geometric mean of each successful trial's
/// value, a Ratio objective's trial of the loaded runs only read against the pooled no_load
/// of every successful trial. `None` when no trial of `setting` measured it.
fn objective_at(obj: &Objective, trials: &[(Setting, Vec<Run>)], setting: &Setting) -> Option<f64> {
    let ok = |runs: &[Run]| runs.iter().all(|r| r.failed.is_none());
    let ratio = matches!(obj, Objective::MinRatio { .. });
    let pooled = pooled_no_load(
        trials
            .iter()
            .filter(|(_, r)| ok(r))
            .flat_map(|(_, r)| r.iter()),
    );
    let values: Vec<f64> = trials
        .iter()
        .filter(|(s, r)| s == setting && ok(r))
        .filter_map(|(_, r)| {
            let mut runs = r.clone();
            if let (true, Some(p)) = (ratio, &pooled)
                && loaded_only(&runs)
            {
                runs.push(p.clone());
            }
            objective_value(obj, &trial_metrics(&runs))
        })
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    (!values.is_empty()).then(|| crate::stats::geomean(&values))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Load, SimDevice, Testbed};
    use crate::lock::{DeviceLock, Holder};
    use crate::tune::run::{Ended, Request, tune_or_stop};
    use std::path::Path;

    fn run(load: Load, time_s: f64) -> Run {
        Run {
            load,
            time_s,
            cpu_pct: 90.0,
            loads: None,
            lcpu_pct: None,
            failed: None,
            io: None,
        }
    }

    fn fifo(v: i64) -> Setting {
        [("fifo_batch".to_string(), crate::knob::KnobValue::Int(v))].into()
    }

    /// A Ratio objective: full trials divide by their own no_load, loaded-only ones by the
    /// pooled no_load of every successful trial; failed trials count for nothing.
    #[test]
    fn the_objective_reads_trials_as_the_final_report_does() {
        let obj = Objective::MinRatio {
            loads: vec![Load::IoLoad],
        };
        let failed = Run {
            failed: Some("died".into()),
            ..run(Load::IoLoad, 1.0)
        };
        let trials = vec![
            (
                fifo(16),
                vec![run(Load::NoLoad, 10.0), run(Load::IoLoad, 20.0)],
            ),
            (fifo(64), vec![run(Load::IoLoad, 15.0)]),
            (
                fifo(64),
                vec![run(Load::NoLoad, 30.0), run(Load::IoLoad, 60.0)],
            ),
            (fifo(8), vec![run(Load::NoLoad, 1.0), failed]),
        ];
        // Pooled no_load: (10 + 30) / 2 = 20 (the failed trial's 1 left out).
        assert_eq!(objective_at(&obj, &trials, &fifo(16)), Some(2.0));
        let want = (0.75f64 * 2.0).sqrt();
        let got = objective_at(&obj, &trials, &fifo(64)).unwrap();
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        assert_eq!(objective_at(&obj, &trials, &fifo(8)), None);
        assert_eq!(objective_at(&obj, &trials, &fifo(32)), None);
    }

    /// A sim tune stopped before its 9th run: the figures are the store's (finished trials,
    /// every run stored), the incumbent a setting of its finished trials with its objective.
    #[test]
    fn a_stopped_tune_is_read_back_from_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.db");
        let store = Store::open(&db).unwrap();
        let surface = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml");
        let policy = crate::tune::policy::resolve(
            "quick",
            Path::new("/nonexistent"),
            crate::trust::Origin::Named,
        )
        .unwrap();
        let mut bed = SimDevice::open(&surface, 11).unwrap().stop_after(8);
        let lock = DeviceLock::acquire(
            &crate::lock::path(&db, &crate::sysroot::SysRoot::default(), "sim:x"),
            "sim",
            Holder::me("tune"),
        )
        .unwrap();
        let req = Request {
            policy: &policy,
            budget: None,
            seed: 5,
            apply: false,
            quiet: true,
            lock: &lock,
            resume: None,
            confirm: None,
        };
        let Ended::Stopped(s) = tune_or_stop(&store, &db, &mut bed, &req).unwrap() else {
            panic!("the tune was not stopped");
        };
        let rows = store.trials_of_tune(s.tune_id).unwrap();
        let done: Vec<_> = rows.iter().filter(|t| t.finished_at.is_some()).collect();
        let runs: usize = rows.iter().map(|t| store.runs(t.id).unwrap().len()).sum();
        assert_eq!(
            store.tunes(None).unwrap()[0].status,
            crate::types::TuneStatus::Interrupted
        );
        assert_eq!((s.trials, s.runs), (done.len(), 8));
        assert_eq!(runs, 8);
        assert!(s.trials >= 2, "{s:?}");
        assert_eq!((s.seed, s.budget), (5, policy.budget));
        assert_eq!(s.target, bed.target());
        assert_eq!(s.policy, "quick");
        assert_eq!(s.default.get("fifo_batch"), fifo(32).get("fifo_batch"));
        assert_eq!(s.objective.name, "io_load Ratio");
        assert!(s.objective.default.is_some_and(|v| v > 1.0), "{s:?}");
        let cand = s.candidate.clone().expect("an incumbent");
        assert!(done.iter().any(|t| t.setting == cand), "{s:?}");
        assert!(s.objective.candidate.is_some_and(|v| v > 1.0), "{s:?}");
        let mut settings: Vec<_> = done.iter().map(|t| &t.setting).collect();
        settings.sort();
        settings.dedup();
        assert_eq!(s.evaluations, settings.len());
        assert_eq!(s.resumed, None);
    }
}
