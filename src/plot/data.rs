//! What a plot shows, read from the store: a tune's trials as points of its objective, each
//! setting's mean and 95% CI, the default, the sweet spot and the final check's pairs.
//!
//! - **Objective.** A user benchmark's trials name it in their `sizes`; otherwise the stored
//!   sweet spot's report names it (`objective.name`, e.g. `io_load Ratio`), else the tune's
//!   built-in policy does; a tune with none of these is read as the geometric mean Ratio of
//!   the loads it measured, and the plot's title says the objective was not stored.
//! - **Loaded-only trials** (the screen's and the race's, and a check's pairs when no_load was
//!   found flat) have no Ratio of their own. They are read as the tune's report reads them
//!   ([`crate::tune::report`]'s pooled no_load): their loaded Time ÷ the mean Time of every
//!   no_load run of the tune, and drawn hollow. A no_load-only trial (the flatness test's) has
//!   no objective at all: it is a tick on the trial-order panel's axis.
//! - **The check's pairs** are the last `k` trials of the best and, for each, the default's
//!   trial just before it (its partner; a split check alternates two candidates), `k` the
//!   trials the report's per-load figures were taken from (so the plot shows what the
//!   report's verdict rests on); a tune that stored no sweet spot has no check.

use crate::store::Store;
use crate::store::tunes::{SweetSpotRow, TuneRow};
use crate::types::{KnobValue, Load, Run, Setting};
use crate::{Error, Result};

/// What a tune's trials are plotted as: its objective.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Measure {
    /// The geometric mean of these loads' Ratio (loaded Time ÷ no_load Time); smaller better.
    Ratio(Vec<Load>),
    /// This load's Loads (work units completed); larger better.
    Loads(Load),
    /// A user benchmark's figure (its no_load runs' `loads`), labelled `name (unit)`.
    Figure {
        /// `name (unit)`.
        label: String,
        /// True when larger is better.
        maximize: bool,
    },
}

impl Measure {
    /// The axis label, e.g. `io_load Ratio` or `Requests per second (req/s)`.
    pub(crate) fn label(&self) -> String {
        match self {
            Measure::Ratio(l) if l.len() == 1 => format!("{} Ratio", l[0]),
            Measure::Ratio(l) => format!(
                "geomean Ratio ({})",
                l.iter().map(|l| l.name()).collect::<Vec<_>>().join(", ")
            ),
            Measure::Loads(l) => format!("{l} Loads"),
            Measure::Figure { label, .. } => label.clone(),
        }
    }

    /// True when a smaller value is better.
    pub(crate) fn minimize(&self) -> bool {
        match self {
            Measure::Ratio(_) => true,
            Measure::Loads(_) => false,
            Measure::Figure { maximize, .. } => !maximize,
        }
    }

    /// The value of one trial with (successful) `runs`, and whether it was read against the
    /// pooled no_load (a loaded-only trial of a Ratio); `None` when the trial measures no
    /// objective (a no_load-only trial of a contest objective).
    fn value(&self, runs: &[Run], pooled: Option<&Run>) -> Option<(f64, bool)> {
        use crate::tune::evaluator::{objective_value, trial_metrics};
        use crate::tune::policy::Objective;
        let mut with = runs.to_vec();
        let pooled_used = matches!(self, Measure::Ratio(_))
            && crate::tune::report::loaded_only(runs)
            && pooled.is_some();
        if let (true, Some(p)) = (pooled_used, pooled) {
            with.push(p.clone());
        }
        let m = trial_metrics(&with);
        let v = match self {
            Measure::Ratio(l) => objective_value(&Objective::MinRatio { loads: l.clone() }, &m),
            Measure::Loads(l) => objective_value(&Objective::MaxLoads { load: *l }, &m),
            Measure::Figure { .. } => m
                .get(&(Load::NoLoad, "loads"))
                .copied()
                .filter(|x| x.is_finite()),
        };
        v.map(|v| (v, pooled_used))
    }

    /// The load whose per-load figures in a stored report were taken from the check's trials.
    fn report_load(&self) -> Load {
        match self {
            Measure::Ratio(l) => l.first().copied().unwrap_or(Load::IoLoad),
            Measure::Loads(l) => *l,
            Measure::Figure { .. } => Load::NoLoad,
        }
    }
}

/// One finished trial of the tune.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Point {
    /// The trial's row id (`history`'s #N).
    pub trial_id: i64,
    /// 1-based position in the order the tune ran its trials.
    pub order: usize,
    /// Knob → value.
    pub setting: Setting,
    /// The objective, `None` for a no_load-only trial.
    pub value: Option<f64>,
    /// True when `value` divides by the tune's pooled no_load (a loaded-only trial).
    pub pooled: bool,
    /// Unix seconds it started.
    pub started_at: i64,
}

/// One setting's trials summarised.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SettingSummary {
    /// The setting.
    pub setting: Setting,
    /// Mean, sd and t-based 95% CI of its trials' values ([`crate::stats::summarize`]).
    pub summary: crate::stats::Summary,
}

/// The final check: the default's and the best's values on its pairs, and the verdict.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Check {
    /// The default's values the verdict rests on, in the order they ran.
    pub default: Vec<f64>,
    /// The best's values the verdict rests on, in the order they ran.
    pub best_values: Vec<f64>,
    /// True when they are interleaved pairs (as many of each); false for the arms test of a
    /// Loads objective, which takes every trial of the two.
    pub paired: bool,
    /// The best setting the search found (the report's `candidate`).
    pub best: Setting,
    /// The report's verdict: significant (kept) or not (the default kept).
    pub significant: bool,
    /// Improvement ratio (> 1 better) and its 95% CI, when the check ran.
    pub improvement: Option<(f64, f64, f64)>,
    /// One-sided p-value of the check, when it ran.
    pub p_value: Option<f64>,
    /// The order (1-based, as [`Point::order`]) of the first trial the verdict rests on: the
    /// check's start (a split check's other finalist's trials after it are the check's too).
    pub first_order: usize,
}

/// Everything one plot of a tune shows.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TuneData {
    /// The tune.
    pub tune: TuneRow,
    /// Its objective.
    pub measure: Measure,
    /// False when no record named the objective and it was guessed (see the module doc).
    pub measure_known: bool,
    /// Knobs whose value differs between trials (scheduler first), or every knob when all
    /// trials have one setting.
    pub knobs: Vec<String>,
    /// Finished trials, in the order they ran (failed runs left out of their values).
    pub points: Vec<Point>,
    /// The mean no_load Time the loaded-only trials were read against, s.
    pub pooled_no_load_s: Option<f64>,
    /// The default setting, when known (the sweet spot's record, else the first trial's).
    pub default: Option<Setting>,
    /// The stored sweet spot of this tune, if it stored one.
    pub sweet_spot: Option<SweetSpotRow>,
    /// The final check, if the tune stored its verdict.
    pub check: Option<Check>,
}

impl TuneData {
    /// Each setting's summary, in the order each was first measured; settings without a
    /// value (no_load-only) are left out.
    pub(crate) fn summaries(&self) -> Vec<SettingSummary> {
        summarize_where(&self.points, |_| true)
    }

    /// The summaries of the settings that agree with `at` on every knob but `knob` they have
    /// (the slice of the response through `at`; a knob a setting lacks, such as fifo_batch
    /// under `none`, does not count), in the order first measured.
    pub(crate) fn slice(&self, knob: &str, at: &Setting) -> Vec<SettingSummary> {
        summarize_where(&self.points, |s| {
            s.contains_key(knob)
                && s.iter()
                    .filter(|(k, _)| k.as_str() != knob)
                    .all(|(k, v)| at.get(k) == Some(v))
        })
    }

    /// The setting a knob's response is sliced through: the best found when it has every
    /// tuned knob, else the best mean among the settings that have them all (so that the
    /// scheduler's slice holds its other values, and fifo_batch's the scheduler it lives
    /// under), else the best found.
    pub(crate) fn anchor(&self) -> Setting {
        let full = |s: &Setting| self.knobs.iter().all(|k| s.contains_key(k));
        let best = self
            .best()
            .or_else(|| self.default.clone())
            .unwrap_or_default();
        if full(&best) {
            return best;
        }
        let sign = if self.measure.minimize() { 1.0 } else { -1.0 };
        self.summaries()
            .into_iter()
            .filter(|s| full(&s.setting))
            .min_by(|a, b| (sign * a.summary.mean).total_cmp(&(sign * b.summary.mean)))
            .map_or(best, |s| s.setting)
    }

    /// The setting the plot marks as the sweet spot: the stored one (the default when the
    /// tune found nothing significant), else the best mean measured.
    pub(crate) fn marked(&self) -> Option<Setting> {
        if let Some(s) = &self.sweet_spot {
            return Some(s.setting.clone());
        }
        let sums = self.summaries();
        let key = |s: &SettingSummary| {
            if self.measure.minimize() {
                s.summary.mean
            } else {
                -s.summary.mean
            }
        };
        sums.into_iter()
            .min_by(|a, b| key(a).total_cmp(&key(b)))
            .map(|s| s.setting)
    }

    /// The best setting the search found: the check's, else [`TuneData::marked`].
    pub(crate) fn best(&self) -> Option<Setting> {
        self.check
            .as_ref()
            .map(|c| c.best.clone())
            .or_else(|| self.marked())
    }
}

fn summarize_where(points: &[Point], keep: impl Fn(&Setting) -> bool) -> Vec<SettingSummary> {
    let mut order: Vec<(Setting, Vec<f64>)> = Vec::new();
    for p in points.iter().filter(|p| keep(&p.setting)) {
        let Some(v) = p.value else { continue };
        match order.iter_mut().find(|(s, _)| *s == p.setting) {
            Some((_, vs)) => vs.push(v),
            None => order.push((p.setting.clone(), vec![v])),
        }
    }
    order
        .into_iter()
        .filter_map(|(setting, vs)| {
            crate::stats::summarize(&vs).map(|summary| SettingSummary { setting, summary })
        })
        .collect()
}

/// The tune a `plot` argument names: a tune id (`history`'s #N), or a device (a kernel name
/// such as `loop0`, an identity, or a target label), whose newest tune is taken. Errors:
/// [`Error::BadInput`] for an id or device with no tune in the store.
pub(crate) fn find_tune(store: &Store, arg: &str) -> Result<TuneRow> {
    let db = store.path().display();
    if let Ok(id) = arg.trim_start_matches('#').parse::<i64>() {
        return store.tune(id)?.ok_or_else(|| {
            Error::BadInput(format!(
                "no tune #{id} in {db} (`sweetspot history` lists the tunes)"
            ))
        });
    }
    let is = |t: &TuneRow| {
        t.identity == arg
            || t.target == arg
            || t.device.as_deref() == Some(arg)
            || t.target.starts_with(&format!("{arg} "))
    };
    store
        .tunes(None)?
        .into_iter()
        .rev()
        .find(is)
        .ok_or_else(|| {
            Error::BadInput(format!(
                "no tune of device '{arg}' in {db} (give a tune id or a device, identity or \
                 target label that `sweetspot history` lists)"
            ))
        })
}

/// The objective a stored report names (`objective.name`: `io_load Ratio`, `geomean Ratio
/// (io_load, read_load)`, `io_load Loads`); `None` for any other name.
fn measure_of_report(name: &str) -> Option<Measure> {
    if let Some(l) = name.strip_suffix(" Loads") {
        return l.parse().ok().map(Measure::Loads);
    }
    if let Some(l) = name.strip_suffix(" Ratio") {
        return l.parse().ok().map(|l| Measure::Ratio(vec![l]));
    }
    let inner = name
        .strip_prefix("geomean Ratio (")?
        .strip_suffix(')')?
        .split(", ")
        .map(|l| l.parse().ok())
        .collect::<Option<Vec<Load>>>()?;
    Some(Measure::Ratio(inner))
}

/// The objective of `tune` (see the module doc) and whether a record named it.
fn measure_of(
    tune: &TuneRow,
    sizes: Option<&serde_json::Value>,
    sweet: Option<&SweetSpotRow>,
    runs: &[Run],
) -> (Measure, bool) {
    if let Some(b) = sizes.map(|s| &s["benchmark"]).filter(|b| b.is_object()) {
        let name = b["name"].as_str().unwrap_or("figure");
        let label = match b["unit"].as_str().filter(|u| !u.is_empty()) {
            Some(u) => format!("{name} ({u})"),
            None => name.to_string(),
        };
        let maximize = b["maximize"].as_bool().unwrap_or(true);
        return (Measure::Figure { label, maximize }, true);
    }
    if let Some(m) = sweet
        .and_then(|s| s.evidence["objective"]["name"].as_str())
        .and_then(measure_of_report)
    {
        return (m, true);
    }
    if let Some(Ok(p)) = crate::tune::policy::builtin(&tune.policy) {
        use crate::tune::policy::Objective;
        match p.objective {
            Objective::MinRatio { loads } => return (Measure::Ratio(loads), true),
            Objective::MaxLoads { load } => return (Measure::Loads(load), true),
            Objective::Benchmark(_) => {}
        }
    }
    let mut loads: Vec<Load> = runs
        .iter()
        .map(|r| r.load)
        .filter(|l| *l != Load::NoLoad)
        .collect();
    loads.sort();
    loads.dedup();
    (Measure::Ratio(loads), false)
}

/// Reads tune `tune` and its trials for a plot. Errors: the store's.
pub(crate) fn load(store: &Store, tune: TuneRow) -> Result<TuneData> {
    let trials: Vec<_> = store
        .trials_of_tune(tune.id)?
        .into_iter()
        .filter(|t| t.finished_at.is_some())
        .collect();
    let mut runs = Vec::with_capacity(trials.len());
    for t in &trials {
        let r: Vec<Run> = store
            .runs(t.id)?
            .into_iter()
            .map(|r| r.run)
            .filter(|r| r.failed.is_none())
            .collect();
        runs.push(r);
    }
    let sweet = store
        .sweet_spots(Some(&tune.identity))?
        .into_iter()
        .rev()
        .find(|s| s.tune_id == Some(tune.id));
    let all_runs: Vec<Run> = runs.iter().flatten().cloned().collect();
    let (measure, measure_known) = measure_of(
        &tune,
        trials.first().map(|t| &t.sizes),
        sweet.as_ref(),
        &all_runs,
    );
    let pooled = crate::tune::report::pooled_no_load(&all_runs);
    let points: Vec<Point> = trials
        .iter()
        .zip(&runs)
        .enumerate()
        .map(|(i, (t, r))| {
            let v = measure.value(r, pooled.as_ref());
            Point {
                trial_id: t.id,
                order: i + 1,
                setting: t.setting.clone(),
                value: v.map(|v| v.0),
                pooled: v.is_some_and(|v| v.1),
                started_at: t.started_at,
            }
        })
        .collect();
    let knobs = tuned_knobs(&points);
    let default = sweet
        .as_ref()
        .map(|s| s.default_setting.clone())
        .or_else(|| points.first().map(|p| p.setting.clone()));
    let check = sweet.as_ref().and_then(|s| check_of(s, &measure, &points));
    Ok(TuneData {
        pooled_no_load_s: pooled
            .filter(|_| points.iter().any(|p| p.pooled))
            .map(|r| r.time_s),
        tune,
        measure,
        measure_known,
        knobs,
        points,
        default,
        sweet_spot: sweet,
        check,
    })
}

/// Knobs whose value differs between `points` (every knob when none does), the scheduler
/// first, then by name.
fn tuned_knobs(points: &[Point]) -> Vec<String> {
    let mut all: Vec<&String> = points.iter().flat_map(|p| p.setting.keys()).collect();
    all.sort();
    all.dedup();
    let first = points
        .first()
        .map(|p| p.setting.clone())
        .unwrap_or_default();
    let varies = |k: &String| points.iter().any(|p| p.setting.get(k) != first.get(k));
    let mut knobs: Vec<String> = all
        .iter()
        .filter(|k| varies(k))
        .map(|k| (*k).clone())
        .collect();
    if knobs.is_empty() {
        knobs = all.into_iter().cloned().collect();
    }
    knobs.sort_by_key(|k| (k != "scheduler", k.clone()));
    knobs
}

/// The check of a stored sweet spot (see the module doc); `None` when its report names no
/// candidate or its pairs cannot be found among the trials.
fn check_of(s: &SweetSpotRow, measure: &Measure, points: &[Point]) -> Option<Check> {
    let ev = &s.evidence;
    let best: Setting = serde_json::from_value(ev["candidate"].clone()).ok()?;
    let figures = &ev["loads"][measure.report_load().name()];
    let kd = figures[0]["trials"].as_u64()? as usize;
    let kb = figures[1]["trials"].as_u64()? as usize;
    let mut by_order: Vec<&Point> = points.iter().filter(|p| p.value.is_some()).collect();
    by_order.sort_by_key(|p| p.order);
    let of = |set: &Setting| -> Vec<usize> {
        (0..by_order.len())
            .filter(|&i| by_order[i].setting == *set)
            .collect()
    };
    let (d, b) = (of(&s.default_setting), of(&best));
    if best == s.default_setting || kd == 0 || kb == 0 || d.len() < kd || b.len() < kb {
        return None;
    }
    let b = &b[b.len() - kb..];
    // The default's trials the report's figures came from: the one just before each of the
    // best's (its pair's partner: a split check alternates two candidates), as
    // `tune::report`'s figure trials are chosen; the default's last `kd` if none precede.
    let partners: Vec<usize> = b
        .iter()
        .filter_map(|&i| {
            (0..i)
                .rev()
                .find(|&j| by_order[j].setting == s.default_setting)
        })
        .collect();
    let d = if partners.len() == kd {
        partners
    } else {
        d[d.len() - kd..].to_vec()
    };
    let value = |i: &usize| by_order[*i].value.unwrap_or(f64::NAN);
    let first_order = d.iter().chain(b).map(|&i| by_order[i].order).min()?;
    // A kept default's report has no `improvement`: the candidate's is what the check measured.
    let imp = match &ev["objective"]["improvement"] {
        serde_json::Value::Null => &ev["objective"]["candidate_improvement"],
        i => i,
    };
    let improvement = imp["ratio"]
        .as_f64()
        .and_then(|r| Some((r, imp["ci95"][0].as_f64()?, imp["ci95"][1].as_f64()?)));
    Some(Check {
        default: d.iter().map(value).collect(),
        best_values: b.iter().map(value).collect(),
        first_order,
        paired: kd == kb,
        best,
        significant: s.significant,
        improvement,
        p_value: ev["p_value"].as_f64(),
    })
}

/// The value of `knob` in `s` as shown on an axis (`–` when the setting lacks it).
pub(crate) fn value_text(s: &Setting, knob: &str) -> String {
    match s.get(knob) {
        Some(KnobValue::Int(i)) => i.to_string(),
        Some(KnobValue::Name(n)) => n.clone(),
        None => "–".into(),
    }
}
