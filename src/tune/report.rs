//! The tune's final report: human text and the JSON of DESIGN.md (`target`, `policy`,
//! `default`, `best`, `candidate`, `objective{default, best, improvement{ratio, ci95},
//! candidate, candidate_improvement}`, `significant`,
//! `evaluations`, `trials`, `runs`), plus per-load means, knob changes and the reason.

use crate::bench::{Load, TargetInfo};
use crate::knob::{KnobValue, Setting};
use crate::stats;
use crate::tune::TuneOutcome;
use crate::tune::evaluator::{Trial, objective_value, trial_metrics};
use crate::tune::policy::Policy;
use crate::tune::solver::Verdict;
use crate::tune::space::Space;
use serde::Serialize;
use std::collections::BTreeMap;

mod explain;
mod text;
pub(crate) use explain::{Dropped, Excluded, Refused, is_host_wide};
pub use text::{WIDTH, text, wrap};

/// One knob's change from the default to the sweet spot.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SpotChange {
    /// Knob name.
    pub knob: String,
    /// Default value (`None`: the knob does not exist under the default scheduler).
    pub from: Option<KnobValue>,
    /// Sweet-spot value (`None`: it does not exist under the chosen scheduler).
    pub to: Option<KnobValue>,
}

/// Per-load means of one setting (contest's columns).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoadMeans {
    /// The load.
    pub load: Load,
    /// Trials averaged.
    pub trials: usize,
    /// Mean job wall time, s.
    pub time_s: Option<f64>,
    /// Mean job CPU%.
    pub cpu_pct: Option<f64>,
    /// Mean Loads.
    pub loads: Option<f64>,
    /// Mean LCPU%.
    pub lcpu_pct: Option<f64>,
    /// Geometric mean Ratio (the arithmetic mean if a Ratio is not positive).
    pub ratio: Option<f64>,
}

/// The improvement ratio (> 1 better) with its 95% CI.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Improvement {
    /// default ÷ best for Ratio, best ÷ default for Loads.
    pub ratio: f64,
    /// 95% CI of the ratio.
    pub ci95: [f64; 2],
}

impl From<(f64, f64, f64)> for Improvement {
    /// The solver's `(ratio, 95% CI low, 95% CI high)`.
    fn from((ratio, lo, hi): (f64, f64, f64)) -> Improvement {
        Improvement {
            ratio,
            ci95: [lo, hi],
        }
    }
}

/// The objective at the default, at the sweet spot ([`Report::best`]) and at the search's
/// best setting ([`Report::candidate`]). `best` and `improvement` describe `Report::best`
/// always, so `default / best` (Ratio) or `best / default` (Loads) reads as `improvement`:
/// when the verdict keeps the default, `best` is the default's figure and `improvement` is
/// `None` (the sweet spot is the default). What the default was compared with, and the
/// check's result, are `candidate` and `candidate_improvement`, whatever the verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ObjectiveReport {
    /// What it is, e.g. `io_load Ratio`.
    pub name: String,
    /// Geometric mean at the default (check trials when the check ran, else all trials).
    pub default: Option<f64>,
    /// Geometric mean at the sweet spot, [`Report::best`]: the candidate's when it is
    /// significant, else the default's (the same as `default`).
    pub best: Option<f64>,
    /// The sweet spot's improvement over the default with its CI: the final check's when
    /// the candidate is significant; `None` when the default is kept (or no check ran).
    pub improvement: Option<Improvement>,
    /// Geometric mean at the search's best setting, [`Report::candidate`] (the same kind of
    /// trials as `default`), whether or not it is significant.
    pub candidate: Option<f64>,
    /// The candidate's ratio over the default with its CI, when the final check ran, whatever
    /// its verdict: `default / candidate` (Ratio) or `candidate / default` (Loads).
    pub candidate_improvement: Option<Improvement>,
}

/// One knob the final check's best changed, after the step that tests whether each is needed
/// (`src/tune/solver/reduce.rs`): whether it carries the effect or was left at its default,
/// with the figures of its test (the best with it at its default against the default).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KnobReport {
    /// Knob name.
    pub knob: String,
    /// `carries`, `left_at_default` or `not_tested`.
    pub finding: crate::tune::solver::KnobFinding,
    /// Why, in words.
    pub why: String,
    /// Its value at the default.
    pub from: Option<KnobValue>,
    /// Its value at the final check's best (the sweet spot keeps it only if it carries the
    /// effect).
    pub to: Option<KnobValue>,
    /// The improvement over the default without it (with it at its default), with its 95% CI;
    /// for the last knob left, the sweet spot's own.
    pub improvement: Option<Improvement>,
    /// One-sided p-value of its test.
    pub p_value: Option<f64>,
    /// Interleaved (default, without it) pairs of its test.
    pub pairs: Option<usize>,
    /// The level its test was judged at: alpha / m, m the knobs the check's best changed.
    pub level: f64,
}

/// The whole report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// The tune's row id, when stored.
    pub tune_id: Option<i64>,
    /// What was tuned.
    pub target: TargetInfo,
    /// Policy name.
    pub policy: String,
    /// The default setting.
    pub default: Setting,
    /// The sweet spot: the best setting if significant, else the default.
    pub best: Setting,
    /// The best setting the search found (whether or not significant).
    pub candidate: Setting,
    /// Objective values and improvement.
    pub objective: ObjectiveReport,
    /// True when the sweet spot beat the default significantly and by the minimum effect.
    pub significant: bool,
    /// Why, in one sentence.
    pub reason: String,
    /// One-sided p-value of the final check, if it ran.
    pub p_value: Option<f64>,
    /// The level the final check's test ran at: `p_value` below it is significant (the
    /// policy's alpha, its share after a confirm, half of that after a split check).
    pub alpha: f64,
    /// True when the final check was split between two finalists, each tested at half the
    /// level (`solver/split_check.rs`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub split_check: bool,
    /// The policy's minimum effect, a fraction (0.03: the sweet spot must be more than 3%
    /// better than the default).
    pub min_effect: f64,
    /// Wall time of the tune, s: its trials and final check, not the building of a
    /// `--scratch` device before it (`None` in a report not built by a run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_s: Option<f64>,
    /// Bytes the tune wrote to its device, from the device's own `stat` counters before and
    /// after (`device::stat::WriteMeter`); `None` for a simulated device or one
    /// whose counters could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_written: Option<u64>,
    /// Distinct settings measured (DESIGN.md's JSON contract: "settings measured").
    pub evaluations: usize,
    /// Trials measured, repeats included (a setting's trial: one run of each of its loads).
    pub trials: usize,
    /// Load runs in total, no_load included: the cost of the tune.
    pub runs: u64,
    /// Knobs that differ between default and sweet spot.
    pub changes: Vec<SpotChange>,
    /// Per-load means at the default and at the candidate.
    pub loads: BTreeMap<String, [LoadMeans; 2]>,
    /// True when the sweet spot was left applied (`--apply`).
    pub applied: bool,
    /// Tuned knobs that are host-wide (`/proc/sys/vm`): they act on every device.
    pub host_wide: Vec<String>,
    /// Policy knobs the tune dropped, with the reason.
    pub dropped: Vec<Dropped>,
    /// Settings the kernel refused (EINVAL, a missing file): infeasible.
    pub refused: Vec<Refused>,
    /// Measured settings a guard rail excluded.
    pub excluded: Vec<Excluded>,
    /// What the figures need said to be read right, e.g. that a Ratio improved only because
    /// no_load got slower.
    pub notes: Vec<String>,
    /// The command that undoes an applied sweet spot, e.g. `sweetspot restore loop0`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undo: Option<String>,
    /// The user benchmark the objective came from (command, figure, nice, CPUs), if any; its
    /// figure is the `loads` of its no_load runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub benchmark: Option<crate::bench::user_job::UserJob>,
    /// Knobs the tune could not touch at all, each group once with the reason (e.g. debugfs
    /// locked down: its CPU-scheduler knobs were left out of the search).
    pub not_touched: Vec<String>,
    /// The device's scheduler, active and not tuned, whose `iosched/` knobs were tuned
    /// ([`crate::tune::space::Space::fixed_scheduler`]): those knobs exist only under it, so
    /// `profile export` pins it with them. Absent when the scheduler was tuned (it is in
    /// `best`) or no iosched knob was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed_scheduler: Option<String>,
    /// The seed the tune ran with (`tune --seed N` repeats it; a resumed tune's own), when
    /// the report was built by a run ([`crate::tune::run`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The interrupted tune this one resumed, and the trials and runs of it reused
    /// ([`crate::tune::resume`]); `runs`, `trials` and `evaluations` above include them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumed: Option<crate::tune::resume::Resumed>,
    /// Each judge of the policy on the candidate ([`crate::tune::judge`]), when the
    /// objective's check found it significant; a judge that fails keeps the default.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub judges: Vec<crate::tune::judge::JudgeVerdict>,
    /// The confirm of a known sweet spot before the search (`tune --confirm`, the daemon's
    /// retune; `solver/confirm.rs`), when the tune had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirm: Option<ConfirmReport>,
    /// Each knob the final check's best changed, when it changed two or more and the check
    /// was significant: whether it carries the effect or was left at its default, with
    /// figures (`src/tune/solver/reduce.rs`). Absent otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub knobs: Vec<KnobReport>,
}

/// What the confirm of a known sweet spot found ([`Report::confirm`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConfirmReport {
    /// Where the known sweet spot came from (`crate::tune::known::Known::source`).
    pub source: String,
    /// The setting confirmed, every tuned knob (knob → value).
    pub setting: Setting,
    /// True when it beat the default by more than the minimum effect at `alpha`: the tune
    /// ended there. False: the search ran, with the confirm's trials in hand.
    pub held: bool,
    /// Its improvement over the default in the confirm's pairs, with the 95% CI.
    pub improvement: Option<Improvement>,
    /// One-sided p-value of the paired test.
    pub p_value: Option<f64>,
    /// Interleaved (default, known) pairs.
    pub pairs: usize,
    /// The test's level: its share of the policy's alpha (Bonferroni over the confirm and
    /// the search's check, `solver/confirm.rs`).
    pub alpha: f64,
    /// Load runs the confirm took, no_load included.
    pub runs: usize,
}

/// The level the verdict's test ran at: the policy's alpha, or after a confirm
/// (`solver/confirm.rs`) its share when it held and the rest (the search's check) when not;
/// half of that after a split check.
fn level_of(policy: &Policy, v: Option<&Verdict>) -> f64 {
    let level = match v.and_then(|v| v.confirm.as_ref()) {
        Some(c) if c.held => c.alpha,
        Some(c) => policy.alpha - c.alpha,
        None => policy.alpha,
    };
    // A split check (`solver/split_check.rs`) tested its answer at half the level.
    let level = if v.is_some_and(|v| v.split) {
        level / 2.0
    } else {
        level
    };
    (level * 1e9).round() / 1e9
}

/// The report's view of the verdict's confirm; `source` is filled in by the caller.
fn confirm_report(v: Option<&Verdict>, space: &Space) -> Option<ConfirmReport> {
    let c = v?.confirm.as_ref()?;
    Some(ConfirmReport {
        source: String::new(),
        setting: space.points.get(c.point)?.clone(),
        held: c.held,
        improvement: c.improvement.map(Improvement::from),
        p_value: c.p_value,
        pairs: c.pairs,
        alpha: c.alpha,
        runs: c.runs,
    })
}

fn load_means(trials: &[&Trial], load: Load) -> LoadMeans {
    let ms: Vec<BTreeMap<(Load, &'static str), f64>> =
        trials.iter().map(|t| trial_metrics(&t.runs)).collect();
    let col = |f: &str| -> Option<f64> {
        let v: Vec<f64> = ms
            .iter()
            .filter_map(|m| m.get(&(load, f)).copied())
            .collect();
        match f {
            // Ratios average geometrically, as the objective and its improvement do.
            "ratio" if v.iter().all(|x| *x > 0.0) => (!v.is_empty()).then(|| stats::geomean(&v)),
            _ => (!v.is_empty()).then(|| stats::mean(&v)),
        }
    };
    LoadMeans {
        load,
        trials: trials.len(),
        time_s: col("time_s"),
        cpu_pct: col("cpu_pct"),
        loads: col("loads"),
        lcpu_pct: col("lcpu_pct"),
        ratio: col("ratio"),
    }
}

/// The trials `ts`, each loaded-only trial of a Ratio objective (the screen's check pairs
/// after its flatness test found no_load flat) read with the pooled no_load its test used: a
/// run at the mean Time of every no_load run of the tune joins its runs, so its Ratio and
/// value are its loaded Time / that pooled no_load Time. Other trials as they are.
fn with_pooled_no_load(out: &TuneOutcome, policy: &Policy, ts: Vec<&Trial>) -> Vec<Trial> {
    let ratio = matches!(
        policy.objective,
        crate::tune::policy::Objective::MinRatio { .. }
    );
    let pooled = pooled_no_load(
        out.trials
            .iter()
            .filter(|t| t.failed.is_none())
            .flat_map(|t| &t.runs),
    );
    ts.into_iter()
        .map(|t| {
            let mut t = t.clone();
            if let (true, Some(p)) = (ratio, &pooled)
                && loaded_only(&t.runs)
            {
                t.runs.push(p.clone());
                if let Some(v) = objective_value(&policy.objective, &trial_metrics(&t.runs)) {
                    t.value = v;
                }
            }
            t
        })
        .collect()
}

/// True when `runs` are a trial of the loaded runs only (some runs, no no_load among them).
pub(crate) fn loaded_only(runs: &[crate::bench::Run]) -> bool {
    !runs.is_empty() && runs.iter().all(|r| r.load != Load::NoLoad)
}

/// One no_load run at the mean Time and CPU% of the successful no_load runs among `runs`
/// (`None` when there is none): what a Ratio objective's loaded-only trial is read against.
pub(crate) fn pooled_no_load<'a>(
    runs: impl IntoIterator<Item = &'a crate::bench::Run>,
) -> Option<crate::bench::Run> {
    let no_load: Vec<&crate::bench::Run> = runs
        .into_iter()
        .filter(|r| r.load == Load::NoLoad && r.failed.is_none())
        .collect();
    (!no_load.is_empty()).then(|| crate::bench::Run {
        load: Load::NoLoad,
        time_s: stats::mean(&no_load.iter().map(|r| r.time_s).collect::<Vec<_>>()),
        cpu_pct: stats::mean(&no_load.iter().map(|r| r.cpu_pct).collect::<Vec<_>>()),
        loads: None,
        lcpu_pct: None,
        failed: None,
        io: None,
    })
}

/// Builds the report of an outcome.
pub fn build(
    target: &TargetInfo,
    policy: &Policy,
    space: &Space,
    out: &TuneOutcome,
    tune_id: Option<i64>,
    applied: bool,
) -> Report {
    let dropped = space
        .skipped
        .iter()
        .map(|k| Dropped {
            knob: k.clone(),
            reason: format!("not on {}", target.label),
        })
        .collect();
    build_with(target, policy, space, out, tune_id, applied, dropped)
}

/// [`build`] with the dropped policy knobs and their reasons given.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_with(
    target: &TargetInfo,
    policy: &Policy,
    space: &Space,
    out: &TuneOutcome,
    tune_id: Option<i64>,
    applied: bool,
    dropped: Vec<Dropped>,
) -> Report {
    let v = out.verdict.clone();
    let cand = v.as_ref().map_or(out.incumbent, |v| v.best);
    let significant = v.as_ref().is_some_and(|v| v.significant);
    let default = space.points[space.default].clone();
    let candidate = space.points[cand].clone();
    let best = if significant {
        candidate.clone()
    } else {
        default.clone()
    };
    let (dt, bt) = (
        figure_trials(out, policy, space.default, Some(cand)),
        figure_trials(out, policy, cand, None),
    );
    let (dt, bt): (Vec<&Trial>, Vec<&Trial>) = (dt.iter().collect(), bt.iter().collect());
    let changes = changes_of(&default, &candidate, &best);
    let mut loads = BTreeMap::new();
    for &l in &policy.loads {
        loads.insert(
            l.name().to_string(),
            [load_means(&dt, l), load_means(&bt, l)],
        );
    }
    let mut distinct: Vec<usize> = out.trials.iter().map(|t| t.point).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let explain::Explained {
        refused,
        excluded,
        notes,
    } = explain::explain(&explain::Inputs {
        policy,
        space,
        out,
        cand,
        concluded: v.is_some(),
        loads: &loads,
    });
    let host_wide = space
        .knobs
        .iter()
        .filter(|k| is_host_wide(k))
        .cloned()
        .collect();
    Report {
        tune_id,
        target: target.clone(),
        policy: policy.name.clone(),
        default,
        best,
        candidate,
        objective: objective_report(policy, v.as_ref(), &dt, &bt),
        significant,
        reason: v
            .as_ref()
            .map_or_else(|| "interrupted".to_string(), |v| v.reason.clone()),
        p_value: v.as_ref().and_then(|v| v.p_value),
        alpha: level_of(policy, v.as_ref()),
        split_check: v.as_ref().is_some_and(|v| v.split),
        min_effect: policy.min_effect,
        elapsed_s: None,
        bytes_written: None,
        evaluations: distinct.len(),
        trials: out.trials.len(),
        runs: out.runs,
        changes,
        loads,
        applied,
        host_wide,
        dropped,
        refused,
        excluded,
        notes,
        undo: None,
        benchmark: match &policy.objective {
            crate::tune::policy::Objective::Benchmark(job) => Some(job.clone()),
            _ => None,
        },
        not_touched: Vec::new(),
        fixed_scheduler: space.fixed_scheduler.clone(),
        seed: None,
        resumed: None,
        judges: out.judges.clone(),
        confirm: confirm_report(v.as_ref(), space),
        knobs: v.as_ref().map_or_else(Vec::new, |v| knob_reports(&v.knobs)),
    }
}

/// The verdict's knob records as the report gives them.
fn knob_reports(records: &[crate::tune::solver::KnobRecord]) -> Vec<KnobReport> {
    records
        .iter()
        .map(|r| KnobReport {
            knob: r.knob.clone(),
            finding: r.finding,
            why: r.why.clone(),
            from: r.from.clone(),
            to: r.to.clone(),
            improvement: r.improvement.map(Improvement::from),
            p_value: r.p_value,
            pairs: r.pairs,
            level: r.level,
        })
        .collect()
}

/// The objective's figures at the default (`dt`'s trials) and the candidate (`bt`'s), and
/// at the sweet spot kept: the candidate's when the check found it significant, else the
/// default's. Geometric means, as the improvement is a ratio of geometric means over the
/// same check pairs: "3.54 → 1.61 (2.20× better)" then divides as it reads.
fn objective_report(
    policy: &Policy,
    v: Option<&crate::tune::solver::Verdict>,
    dt: &[&Trial],
    bt: &[&Trial],
) -> ObjectiveReport {
    let significant = v.is_some_and(|v| v.significant);
    let mean_val = explain::geomean_value;
    let improvement = v.and_then(|v| v.improvement).map(Improvement::from);
    ObjectiveReport {
        name: policy.objective.label(),
        default: mean_val(dt),
        best: if significant {
            mean_val(bt)
        } else {
            mean_val(dt)
        },
        improvement: improvement.clone().filter(|_| significant),
        candidate: mean_val(bt),
        candidate_improvement: improvement,
    }
}

/// The knobs whose value in `best` differs from `default`'s, by name (keys of `default`
/// and `candidate`), each from → to.
fn changes_of(default: &Setting, candidate: &Setting, best: &Setting) -> Vec<SpotChange> {
    let mut keys: Vec<&String> = default.keys().chain(candidate.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| default.get(*k) != best.get(*k))
        .map(|k| SpotChange {
            knob: k.clone(),
            from: default.get(k).cloned(),
            to: best.get(k).cloned(),
        })
        .collect()
}

/// The trials of setting `p` the report's figures come from: the check's fresh ones (the
/// last `pairs` of it) when a check ran; every trial of it when the arms test decided
/// (Loads after the screen, which used them all) or nothing was checked. For the default
/// (`pair_of` the candidate) after a check, the default's trial just before each of those
/// of the candidate: its partner in that pair (a split check alternates two candidates, so
/// the default's last trials are not all the answer's partners). Failed trials are left
/// out; no_load pooled as [`with_pooled_no_load`] says.
fn figure_trials(
    out: &TuneOutcome,
    policy: &Policy,
    p: usize,
    pair_of: Option<usize>,
) -> Vec<Trial> {
    let v = out.verdict.as_ref();
    let ran_check = v.is_some_and(|v| v.pairs.unwrap_or(0) >= 1 && !v.every_trial);
    let ok = |t: &Trial, q: usize| t.point == q && t.failed.is_none();
    let of = |q: usize| -> Vec<usize> {
        (0..out.trials.len())
            .filter(|&i| ok(&out.trials[i], q))
            .collect()
    };
    let last = |q: usize| -> Vec<usize> {
        let all = of(q);
        let k = v.and_then(|v| v.pairs).unwrap_or(0).min(all.len());
        if ran_check && all.len() > 1 && k >= 1 {
            all[all.len() - k..].to_vec()
        } else {
            all
        }
    };
    let picked: Vec<usize> = match pair_of {
        Some(c) if ran_check && c != p => {
            let partners: Vec<usize> = last(c)
                .into_iter()
                .filter_map(|i| (0..i).rev().find(|&j| ok(&out.trials[j], p)))
                .collect();
            if partners.is_empty() {
                last(p)
            } else {
                partners
            }
        }
        _ => last(p),
    };
    let all: Vec<&Trial> = picked.into_iter().map(|i| &out.trials[i]).collect();
    with_pooled_no_load(out, policy, all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Run;
    use crate::tune::solver::Verdict;

    fn trial(point: usize, io: f64, loads: f64) -> Trial {
        let run = |load, time_s, loads| Run {
            load,
            time_s,
            cpu_pct: 50.0,
            loads,
            lcpu_pct: None,
            failed: None,
            io: None,
        };
        let runs = vec![
            run(Load::NoLoad, 10.0, None),
            run(Load::IoLoad, io, Some(loads)),
        ];
        Trial {
            id: 0,
            point,
            value: io / 10.0,
            cost: (io / 10.0).ln(),
            penalty: 0.0,
            runs,
            failed: None,
            refused: None,
            guards_broken: Vec::new(),
        }
    }

    #[test]
    fn a_kept_default_says_what_measured_better_and_what_a_guard_excluded() {
        let text = "loads = [\"no_load\", \"io_load\"]\nbudget = 12\n[objective]\n\
                    minimize = \"ratio\"\nloads = [\"io_load\"]\n[knobs.fifo_batch]\n\
                    values = [4, 8]\n[[guard]]\nload = \"io_load\"\nmetric = \"loads\"\n\
                    min_vs_default = 0.5\n";
        let pol =
            crate::tune::policy::parse(text, std::path::Path::new("p.toml"), "p", "p").unwrap();
        let knob = crate::bench::SpaceKnob {
            name: "fifo_batch".into(),
            domain: crate::knob::Domain::Int { min: 1, max: 256 },
            default: KnobValue::Int(32),
            schedulers: None,
        };
        let space = Space::build(&[knob], &pol, None).unwrap();
        let at = |v: i64| {
            space
                .points
                .iter()
                .position(|p| p["fifo_batch"] == KnobValue::Int(v))
                .unwrap()
        };
        // 32 (default): Ratio 1.54; 8: 1.12 with enough Loads; 4: 0.9 but starving io_load.
        let out = TuneOutcome {
            trials: vec![
                trial(at(32), 15.4, 100.0),
                trial(at(8), 11.2, 90.0),
                trial(at(4), 9.0, 3.0),
            ],
            verdict: Some(Verdict {
                best: space.default,
                significant: false,
                improvement: None,
                p_value: None,
                pairs: None,
                reason: "keep the default: no significant improvement (search budget spent; \
                         nothing beat the default)"
                    .into(),
                every_trial: false,
                confirm: None,
                knobs: Vec::new(),
                split: false,
            }),
            runs: 6,
            incumbent: space.default,
            judges: Vec::new(),
        };
        let target = TargetInfo {
            label: "sim:x".into(),
            identity: "sim:x".into(),
            kernel: "sim".into(),
        };
        let r = build(&target, &pol, &space, &out, None, false);
        assert_eq!(r.excluded.len(), 1);
        assert_eq!(
            r.excluded[0].guards,
            vec!["io_load loads 3 < 0.5 × default 100 (= 50)".to_string()]
        );
        assert_eq!(r.notes.len(), 2, "{:?}", r.notes);
        assert!(
            r.notes[0].starts_with(
                "fifo_batch=4 measured io_load Ratio 0.90 against the \
                                         default's 1.54, but a guard rail excludes it"
            ),
            "{}",
            r.notes[0]
        );
        assert!(
            r.notes[1].starts_with(
                "1 setting measured better than the default but was not chosen (best: \
                 fifo_batch=8 at 1.12 over 1 trial, the default 1.54 over 1)"
            ),
            "{}",
            r.notes[1]
        );
        let t = super::text(&r);
        assert!(t.contains("\n  excluded by a guard rail:\n    fifo_batch=4  io_load Ratio 0.90: io_load loads 3 < 0.5 × default 100 (= 50)\n"), "{t}");
        assert!(
            t.contains("\n  undo       nothing to undo: the device is back as it was\n"),
            "{t}"
        );
        // A host tune (no device) says what it put back.
        let host = TargetInfo {
            label: "host".into(),
            identity: "host:box".into(),
            kernel: "6.1".into(),
        };
        let t = super::text(&build(&host, &pol, &space, &out, None, false));
        assert!(
            t.contains("\n  undo       nothing to undo: the host's knobs are back as they were\n"),
            "{t}"
        );
    }
    #[test]
    fn after_a_split_check_the_defaults_figure_is_from_the_answers_pairs() {
        let text = "loads = [\"no_load\", \"io_load\"]\nbudget = 12\n[objective]\n\
                    minimize = \"ratio\"\nloads = [\"io_load\"]\n[knobs.fifo_batch]\n\
                    values = [1, 8]\n";
        let pol =
            crate::tune::policy::parse(text, std::path::Path::new("p.toml"), "p", "p").unwrap();
        let out = |best: usize| TuneOutcome {
            // A split check of one pair each: (default 30, point 1 at 12), (default 40,
            // point 2 at 11), after a search trial of each.
            trials: vec![
                trial(0, 35.0, 100.0),
                trial(1, 12.5, 100.0),
                trial(2, 11.5, 100.0),
                trial(0, 30.0, 100.0),
                trial(1, 12.0, 100.0),
                trial(0, 40.0, 100.0),
                trial(2, 11.0, 100.0),
            ],
            verdict: Some(Verdict {
                best,
                significant: true,
                improvement: Some((2.5, 2.0, 3.0)),
                p_value: Some(0.001),
                pairs: Some(1),
                reason: "significant".into(),
                every_trial: false,
                confirm: None,
                knobs: Vec::new(),
                split: false,
            }),
            runs: 14,
            incumbent: best,
            judges: Vec::new(),
        };
        // Each default figure is the partner of the answer's check trial; the last default
        // trial (40 s) belongs to point 2's pair.
        for (best, default_s, best_s) in [(1, 30.0, 12.0), (2, 40.0, 11.0)] {
            let o = out(best);
            let dt = figure_trials(&o, &pol, 0, Some(best));
            let bt = figure_trials(&o, &pol, best, None);
            let io = |t: &[Trial]| -> Vec<f64> { t.iter().map(|t| t.runs[1].time_s).collect() };
            assert_eq!(
                (io(&dt), io(&bt)),
                (vec![default_s], vec![best_s]),
                "best {best}"
            );
        }
    }
}
