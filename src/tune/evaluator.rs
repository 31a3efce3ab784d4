//! The tune's "problem" in argmin's terms: measuring one trial (a setting: every load of the
//! policy, `runs` times each, run-major) and turning its runs into a cost.
//!
//! - Cost of a trial: `ln` of the policy's objective, oriented so smaller is better:
//!   `ln(geomean Ratio)` for `minimize = "ratio"`, `−ln(Loads)` for `maximize = "loads"`,
//!   `∓ln(mean figure)` for a user benchmark (`[benchmark]`, no no_load pairing).
//!   A trial's Ratio divides each load's mean Time by the same trial's mean no_load Time
//!   (contest's definition, DESIGN.md), so trials are independent repeats.
//! - Guard rails compare a setting's mean metric with the default setting's mean. A trial that
//!   breaks one gets a penalty added to its cost (`GUARD_PENALTY` plus 4 × the log-scale
//!   violation), so the model learns where the rails are; `Evaluator::feasible` is the final
//!   word on a setting, from all its trials.
//! - A failed run (a load that completed no work) makes the trial failed: it never counts as a
//!   clean number ([`Trial::failed`]).
//!
//! Ctrl-C/SIGTERM ([`crate::signals`]) is polled before every run: the tune stops after the
//! run in progress, with [`Error::Interrupted`]. Each finished run goes to the [`Recorder`]
//! (the SQLite store) at once.

use crate::bench::{Load, Run, Testbed};
use crate::knob::Setting;
use crate::stats;
use crate::tune::policy::{Objective, Policy};
use crate::tune::space::Space;
use crate::{Error, Result};
use std::cell::RefCell;
use std::collections::BTreeMap;

/// Cost added to a trial that breaks a guard rail (ln units: ×1.65), plus 4 × the violation.
pub(crate) const GUARD_PENALTY: f64 = 0.5;

/// Which of a policy's loads one trial runs (the screen of [`crate::tune::solver`] measures
/// parts; every other trial is [`Part::Full`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// Every load of the policy: the objective itself (a Ratio divides by this trial's own
    /// no_load).
    #[default]
    Full,
    /// The policy's loads other than no_load. Cost: for a Ratio objective the mean over its
    /// loads of ln(mean Time), guard penalties added (no Ratio: no no_load in the trial; its
    /// `value` is NaN); for Loads the objective itself.
    Loaded,
    /// no_load alone. Cost ln(mean no_load Time); `value` NaN.
    NoLoad,
}

impl Part {
    /// The loads of `policy` that this part runs, in the policy's order.
    pub(crate) fn loads(self, policy: &Policy) -> Vec<Load> {
        policy
            .loads
            .iter()
            .copied()
            .filter(|&l| match self {
                Part::Full => true,
                Part::Loaded => l != Load::NoLoad,
                Part::NoLoad => l == Load::NoLoad,
            })
            .collect()
    }
}

/// Where finished trials and runs go (the store, or nowhere for the shoot-out).
pub trait Recorder {
    /// A trial of `setting` starts; returns its id (0 if not stored).
    fn trial_started(&mut self, setting: &Setting) -> Result<i64>;
    /// Run `index` of trial `trial` finished.
    fn run_finished(&mut self, trial: i64, index: usize, run: &Run) -> Result<()>;
    /// Every run of trial `trial` finished (a trial stopped between its runs never gets this).
    fn trial_finished(&mut self, _trial: i64) -> Result<()> {
        Ok(())
    }
    /// One run of a judge of the policy finished (`judge`, e.g. `startup`, at `setting`):
    /// [`crate::tune::judge`]. Stored as a judge trial of one run; not stored by default.
    fn judge_run(&mut self, _judge: &str, _setting: &Setting, _run: &Run) -> Result<()> {
        Ok(())
    }
}

/// Records nothing.
pub struct NoRecord;

impl Recorder for NoRecord {
    fn trial_started(&mut self, _: &Setting) -> Result<i64> {
        Ok(0)
    }
    fn run_finished(&mut self, _: i64, _: usize, _: &Run) -> Result<()> {
        Ok(())
    }
}

/// One measured trial.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Trial {
    /// Store id (0 when not stored).
    pub id: i64,
    /// Grid index of the setting.
    pub point: usize,
    /// The raw runs, in the order they ran.
    pub runs: Vec<Run>,
    /// The objective in its own unit (geomean Ratio, or Loads); NaN if failed.
    pub value: f64,
    /// Cost: ln objective oriented to minimise, plus any guard penalty; +∞ if failed.
    pub cost: f64,
    /// The guard penalty included in `cost` (ln units, `GUARD_PENALTY` plus 4 × the
    /// violation per rail this trial broke; 0 when it broke none). A ranking device for the
    /// search: the final check tests `cost − penalty`, the objective alone, and the guard
    /// rails judge the answer on its mean metrics (`Evaluator::feasible`).
    pub penalty: f64,
    /// Why the trial failed, if it did.
    pub failed: Option<String>,
    /// The kernel refused the setting (the error, with its errno): nothing was measured.
    pub refused: Option<String>,
    /// The guard rails this trial broke, with the figures, e.g. `io_load loads 3 < 0.5 ×
    /// default 12 (= 6)`; empty when it kept them (or is the default).
    pub guards_broken: Vec<String>,
}

/// The error of an apply that the kernel refused for this setting only (it is marked
/// infeasible and the search goes on): a write refused with EINVAL, ERANGE, EOPNOTSUPP or
/// ENOENT (an `iosched/` file this kernel lacks), or a value not honoured. `None` for errors
/// that would hit every setting (EACCES, EROFS, a store error, bad input): those end the tune.
pub(crate) fn refusal(e: &Error) -> Option<String> {
    match e {
        Error::KnobWrite { source, .. } => {
            let raw = source.raw_os_error()?;
            [libc::EINVAL, libc::ERANGE, libc::EOPNOTSUPP, libc::ENOENT]
                .contains(&raw)
                .then(|| e.to_string())
        }
        Error::NotHonoured { .. } => Some(e.to_string()),
        _ => None,
    }
}

/// Per-(load, metric) means of one trial; Ratio included for loads other than no_load.
pub(crate) fn trial_metrics(runs: &[Run]) -> BTreeMap<(Load, &'static str), f64> {
    let mut by: BTreeMap<(Load, &'static str), Vec<f64>> = BTreeMap::new();
    for r in runs {
        by.entry((r.load, "time_s")).or_default().push(r.time_s);
        by.entry((r.load, "cpu_pct")).or_default().push(r.cpu_pct);
        if let Some(l) = r.loads {
            by.entry((r.load, "loads")).or_default().push(l);
        }
        if let Some(l) = r.lcpu_pct {
            by.entry((r.load, "lcpu_pct")).or_default().push(l);
        }
    }
    let mut m: BTreeMap<(Load, &'static str), f64> =
        by.into_iter().map(|(k, v)| (k, stats::mean(&v))).collect();
    if let Some(&t0) = m.get(&(Load::NoLoad, "time_s")) {
        let ratios: Vec<(Load, f64)> = m
            .iter()
            .filter(|((l, f), _)| *f == "time_s" && *l != Load::NoLoad)
            .map(|((l, _), t)| (*l, t / t0))
            .collect();
        for (l, r) in ratios {
            m.insert((l, "ratio"), r);
        }
    }
    m
}

/// The objective of one trial in its own unit (geomean Ratio, Loads, or the user benchmark's
/// mean figure).
pub(crate) fn objective_value(
    obj: &Objective,
    m: &BTreeMap<(Load, &'static str), f64>,
) -> Option<f64> {
    match obj {
        Objective::MinRatio { loads } => {
            let rs: Option<Vec<f64>> = loads
                .iter()
                .map(|l| m.get(&(*l, "ratio")).copied())
                .collect();
            let rs = rs?;
            Some(stats::geomean(&rs)).filter(|g| g.is_finite() && *g > 0.0)
        }
        Objective::MaxLoads { load } => m.get(&(*load, "loads")).copied().filter(|x| *x > 0.0),
        // A user benchmark's figure rides in its no_load runs' `loads` (bench::user_job); the
        // ln-scale cost needs it positive.
        Objective::Benchmark(_) => m
            .get(&(Load::NoLoad, "loads"))
            .copied()
            .filter(|x| x.is_finite() && *x > 0.0),
    }
}

/// (value, cost before guard penalties) of a part of a trial with means `m`; `None` when the
/// part does not measure what it needs (or the objective has no such part).
pub(crate) fn part_value(
    obj: &Objective,
    part: Part,
    m: &BTreeMap<(Load, &'static str), f64>,
) -> Option<(f64, f64)> {
    let ln_time = |l: Load| {
        m.get(&(l, "time_s"))
            .copied()
            .filter(|t| t.is_finite() && *t > 0.0)
            .map(f64::ln)
    };
    match (part, obj) {
        (Part::Full, _) => objective_value(obj, m).map(|v| (v, cost_of(obj, v))),
        (Part::Loaded, Objective::MinRatio { loads }) => {
            let c: Option<Vec<f64>> = loads.iter().map(|&l| ln_time(l)).collect();
            let c = c?;
            (!c.is_empty()).then(|| (f64::NAN, stats::mean(&c)))
        }
        (Part::Loaded, Objective::MaxLoads { .. }) => {
            objective_value(obj, m).map(|v| (v, cost_of(obj, v)))
        }
        (Part::NoLoad, _) => ln_time(Load::NoLoad).map(|c| (f64::NAN, c)),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// The cost (smaller is better, ln scale) of an objective value.
pub(crate) fn cost_of(obj: &Objective, value: f64) -> f64 {
    if obj.minimize() {
        value.ln()
    } else {
        -value.ln()
    }
}

/// The measuring side of a tune: testbed, space, policy, recorder, and every trial so far.
/// Interior mutability because argmin hands problems out by `&`.
pub struct Evaluator<'a> {
    inner: RefCell<Inner<'a>>,
}

struct Inner<'a> {
    testbed: &'a mut dyn Testbed,
    space: &'a Space,
    policy: &'a Policy,
    recorder: &'a mut dyn Recorder,
    applied: Option<usize>,
    trials: Vec<Trial>,
    runs: u64,
}

impl<'a> Evaluator<'a> {
    /// A new evaluator; nothing is applied until the first trial.
    pub(crate) fn new(
        testbed: &'a mut dyn Testbed,
        space: &'a Space,
        policy: &'a Policy,
        recorder: &'a mut dyn Recorder,
    ) -> Self {
        Evaluator {
            inner: RefCell::new(Inner {
                testbed,
                space,
                policy,
                recorder,
                applied: None,
                trials: Vec::new(),
                runs: 0,
            }),
        }
    }

    /// Measures one trial of grid point `point`: apply (if not applied already), then every
    /// load `runs` times, run-major. Errors: the testbed's (apply refused, run failed to
    /// start), the store's, or [`Error::Interrupted`] between runs.
    pub(crate) fn trial(&self, point: usize) -> Result<Trial> {
        self.trial_part(point, Part::Full)
    }

    /// [`Evaluator::trial`] running only `part` of the policy's loads ([`Part`] says what its
    /// value and cost are). Guard penalties apply to [`Part::Full`] and [`Part::Loaded`].
    pub(crate) fn trial_part(&self, point: usize, part: Part) -> Result<Trial> {
        let mut g = self.inner.borrow_mut();
        let inner = &mut *g;
        let setting = inner
            .space
            .points
            .get(point)
            .ok_or_else(|| Error::Failed(format!("internal: no grid point {point}")))?
            .clone();
        if crate::signals::interrupted() {
            return Err(Error::Interrupted);
        }
        if inner.applied != Some(point) {
            inner.applied = None;
            match inner.testbed.apply(&setting) {
                Ok(()) => inner.applied = Some(point),
                Err(e) if point != inner.space.default => {
                    let Some(why) = refusal(&e) else {
                        return Err(e);
                    };
                    // The trial log names it (a second line of its own); -vv repeats it here.
                    tracing::debug!(
                        "setting {} refused, marked infeasible: {why}",
                        crate::knob::setting_label(&setting)
                    );
                    let t = Trial {
                        id: 0,
                        point,
                        runs: Vec::new(),
                        value: f64::NAN,
                        cost: f64::INFINITY,
                        penalty: 0.0,
                        failed: Some(format!("refused: {why}")),
                        refused: Some(why),
                        guards_broken: Vec::new(),
                    };
                    inner.trials.push(t.clone());
                    return Ok(t);
                }
                Err(e) => return Err(e),
            }
        }
        let id = inner.recorder.trial_started(&setting)?;
        let mut runs = Vec::new();
        let mut index = 0;
        let loads = part.loads(inner.policy);
        for _ in 0..inner.policy.runs {
            for &load in &loads {
                if crate::signals::interrupted() {
                    return Err(Error::Interrupted);
                }
                let run = inner.testbed.run(load)?;
                inner.runs += 1;
                inner.recorder.run_finished(id, index, &run)?;
                index += 1;
                runs.push(run);
            }
        }
        inner.recorder.trial_finished(id)?;
        let failed = runs
            .iter()
            .find_map(|r| r.failed.as_ref().map(|f| format!("{}: {f}", r.load)));
        let m = trial_metrics(&runs);
        let value = part_value(&inner.policy.objective, part, &m);
        let mut guards_broken = Vec::new();
        let mut pen = 0.0;
        let (value, cost, failed) = match (failed, value) {
            (Some(f), _) => (f64::NAN, f64::INFINITY, Some(f)),
            (None, None) => (
                f64::NAN,
                f64::INFINITY,
                Some(format!("no {} measured", inner.policy.objective.label())),
            ),
            (None, Some((v, mut c))) => {
                if point != inner.space.default && part != Part::NoLoad {
                    pen = penalty(inner, &m);
                    c += pen;
                    guards_broken = broken(
                        inner.policy,
                        &m,
                        &mean_metrics(&inner.trials, inner.space.default),
                    );
                }
                (v, c, None)
            }
        };
        let t = Trial {
            id,
            point,
            runs,
            value,
            cost,
            penalty: pen,
            failed,
            refused: None,
            guards_broken,
        };
        inner.trials.push(t.clone());
        Ok(t)
    }

    /// Load runs so far (no_load included): the cost of the tune.
    pub(crate) fn runs(&self) -> u64 {
        self.inner.borrow().runs
    }

    /// True when `point`'s mean metrics satisfy every guard rail against the default's means
    /// (true for the default itself and when nothing is measured yet), and none of its trials
    /// failed.
    pub(crate) fn feasible(&self, point: usize) -> bool {
        let g = self.inner.borrow();
        if g.trials
            .iter()
            .any(|t| t.point == point && t.failed.is_some())
        {
            return false;
        }
        if point == g.space.default {
            return true;
        }
        let mine = mean_metrics(&g.trials, point);
        let def = mean_metrics(&g.trials, g.space.default);
        g.policy.guards.iter().all(|gr| {
            let key = (gr.load, gr.metric.name());
            match (mine.get(&key), def.get(&key)) {
                (Some(&x), Some(&d)) => gr.holds(x, d),
                _ => true,
            }
        })
    }

    /// Removes the evaluator, giving back the trials.
    pub(crate) fn into_trials(self) -> Vec<Trial> {
        self.inner.into_inner().trials
    }
}

/// Means over all trials of `point` of each (load, metric).
pub(crate) fn mean_metrics(trials: &[Trial], point: usize) -> BTreeMap<(Load, &'static str), f64> {
    let mut acc: BTreeMap<(Load, &'static str), Vec<f64>> = BTreeMap::new();
    for t in trials
        .iter()
        .filter(|t| t.point == point && t.failed.is_none())
    {
        for (k, v) in trial_metrics(&t.runs) {
            acc.entry(k).or_default().push(v);
        }
    }
    acc.into_iter().map(|(k, v)| (k, stats::mean(&v))).collect()
}

/// The guard rails that means `m` break against the default's means `def`, each with its
/// figures: `io_load loads 3 < 0.5 × default 12 (= 6)`.
pub(crate) fn broken(
    policy: &Policy,
    m: &BTreeMap<(Load, &'static str), f64>,
    def: &BTreeMap<(Load, &'static str), f64>,
) -> Vec<String> {
    policy
        .guards
        .iter()
        .filter_map(|g| {
            let key = (g.load, g.metric.name());
            let (&x, &d) = (m.get(&key)?, def.get(&key)?);
            if g.holds(x, d) {
                return None;
            }
            let op = if g.at_least { "<" } else { ">" };
            Some(format!(
                "{} {} {} {op} {} × default {} (= {})",
                g.load,
                g.metric.name(),
                figure(x),
                g.factor,
                figure(d),
                figure(g.factor * d)
            ))
        })
        .collect()
}

/// A metric as people read it: 3 significant digits, whole numbers above 100 (`0.0042`,
/// `1.23`, `12.3`, `1234`), so a small figure never reads as a zero.
pub(crate) fn figure(x: f64) -> String {
    if (x.fract() == 0.0 && x.abs() < 1e15) || x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else if x.abs() >= 1.0 || !x.is_finite() {
        format!("{x:.2}")
    } else if x.abs() >= 1e-9 {
        let decimals = 2 - x.abs().log10().floor() as i32;
        format!("{x:.0$}", decimals.max(2) as usize)
    } else {
        format!("{x:.2e}")
    }
}

fn penalty(inner: &Inner, m: &BTreeMap<(Load, &'static str), f64>) -> f64 {
    let def = mean_metrics(&inner.trials, inner.space.default);
    let mut p = 0.0;
    for g in &inner.policy.guards {
        let key = (g.load, g.metric.name());
        let (Some(&x), Some(&d)) = (m.get(&key), def.get(&key)) else {
            continue;
        };
        if x <= 0.0 || d <= 0.0 || g.holds(x, d) {
            continue;
        }
        let bound = (g.factor * d).ln();
        let v = if g.at_least {
            bound - x.ln()
        } else {
            x.ln() - bound
        };
        p += GUARD_PENALTY + 4.0 * v.max(0.0);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_has_three_significant_digits_and_a_small_one_is_no_zero() {
        let shown: Vec<String> = [0.0, 0.0042, 0.0132, 0.5, 4.5678, 12.34, 1234.4, 7.0]
            .into_iter()
            .map(figure)
            .collect();
        assert_eq!(
            shown,
            [
                "0", "0.00420", "0.0132", "0.500", "4.57", "12.3", "1234", "7"
            ]
        );
        assert_eq!(figure(2e-12), "2.00e-12");
    }

    #[test]
    fn a_part_of_a_trial_costs_what_it_measured() {
        let m: BTreeMap<(Load, &'static str), f64> = [
            ((Load::NoLoad, "time_s"), 60.0),
            ((Load::IoLoad, "time_s"), 120.0),
            ((Load::IoLoad, "loads"), 50.0),
            ((Load::IoLoad, "ratio"), 2.0),
        ]
        .into_iter()
        .collect();
        let ratio = Objective::MinRatio {
            loads: vec![Load::IoLoad],
        };
        let (v, c) = part_value(&ratio, Part::Full, &m).unwrap();
        assert_eq!((v, c), (2.0, 2f64.ln()));
        // The loaded runs alone: no Ratio (NaN), cost ln io_load Time.
        let (v, c) = part_value(&ratio, Part::Loaded, &m).unwrap();
        assert!(v.is_nan() && (c - 120f64.ln()).abs() < 1e-12);
        let (v, c) = part_value(&ratio, Part::NoLoad, &m).unwrap();
        assert!(v.is_nan() && (c - 60f64.ln()).abs() < 1e-12);
        // Loads do not involve no_load: the loaded part is the objective itself.
        let loads = Objective::MaxLoads { load: Load::IoLoad };
        assert_eq!(
            part_value(&loads, Part::Loaded, &m),
            Some((50.0, -50f64.ln()))
        );
        // A loaded part without its Time measures nothing.
        let none: BTreeMap<(Load, &'static str), f64> =
            [((Load::NoLoad, "time_s"), 60.0)].into_iter().collect();
        assert_eq!(part_value(&ratio, Part::Loaded, &none), None);
    }

    #[test]
    fn refusals_are_the_errors_of_one_setting_only() {
        let write = |errno| Error::KnobWrite {
            knob: "nr_requests".into(),
            value: "2048".into(),
            path: "/sys/block/loop0/queue/nr_requests".into(),
            source: std::io::Error::from_raw_os_error(errno),
        };
        let r = refusal(&write(libc::EINVAL)).unwrap();
        assert_eq!(
            r,
            "nr_requests: writing '2048' to /sys/block/loop0/queue/nr_requests failed: EINVAL \
             (Invalid argument)"
        );
        assert!(refusal(&write(libc::ENOENT)).is_some());
        assert!(refusal(&write(libc::ERANGE)).is_some());
        let nh = Error::NotHonoured {
            knob: "nr_requests".into(),
            wrote: "2".into(),
            read: "4".into(),
        };
        assert!(refusal(&nh).is_some());
        // These would hit every setting: the tune ends.
        assert!(refusal(&write(libc::EACCES)).is_none());
        assert!(refusal(&write(libc::EROFS)).is_none());
        assert!(refusal(&Error::BadInput("x".into())).is_none());
        assert!(refusal(&Error::Interrupted).is_none());
    }
}
