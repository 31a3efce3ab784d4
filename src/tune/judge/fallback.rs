//! When the search's best fails a judge: one more candidate, so that a tune keeps "the best
//! candidate that passes, or the default" (issue #36), at a bounded price.
//!
//! 1. **Candidates**: the settings the search measured whose mean objective cost beats the
//!    default's by at least the minimum effect (the search's own point estimates), the refused
//!    one left out, at most `SCREENED` of them, best mean first.
//! 2. **Screen**: one start-up run per candidate under each judge's background. The first
//!    candidate (best mean first) whose runs are all within the tolerance of the default's
//!    mean start-up Time (from the refused candidate's pairs) is the fallback. A screen, not a
//!    test: it only picks which candidate the tests below get.
//! 3. **Objective check on fresh pairs**: `max(check_pairs, 3)` interleaved (default,
//!    fallback) full trials; a one-sided paired t-test on their costs (H0 "at most
//!    `min_effect` better", as the final check's, but its variance from these pairs alone),
//!    at `alpha`; the guard rails must hold on the fresh trials' means.
//! 4. **The judges**, as for the search's best (`super::check`).
//!
//! Only if all three pass is the fallback kept; otherwise the default. One fallback at most:
//! each try costs a check and the judges again, and every extra test tried is another chance
//! of a false "significant" (measured in `examples/judge_rates.rs`).

use super::{Bed, JudgeVerdict, Judges};
use crate::Result;
use crate::stats;
use crate::tune::evaluator::{Evaluator, Trial};
use crate::tune::policy::Policy;
use crate::tune::space::Space;

/// Candidates screened at most.
pub(crate) const SCREENED: usize = 4;

/// A fallback that passed the objective's check and every judge.
#[derive(Clone, Debug)]
pub(crate) struct Kept {
    /// Its grid index.
    pub point: usize,
    /// Improvement over the default (> 1 better) with its 95% CI, from the fresh pairs.
    pub improvement: (f64, f64, f64),
    /// The check's one-sided p-value.
    pub p_value: f64,
    /// Fresh pairs in its check.
    pub pairs: usize,
    /// Its judges' verdicts.
    pub judges: Vec<JudgeVerdict>,
    /// Every full trial of the fallback's check (default and fallback).
    pub trials: Vec<Trial>,
}

/// What the fallback found: `kept` when one passed; `runs` made either way; `why` in a
/// sentence when none was kept.
pub(crate) struct Found {
    /// The fallback kept, if any.
    pub kept: Option<Kept>,
    /// Runs made.
    pub runs: u64,
    /// Why nothing was kept (empty when one was).
    pub why: String,
}

/// Tries one fallback after `refused` failed a judge whose pairs measured the default's mean
/// start-up Time per judge as `default_s` (in `judges.startup` order). `trials` are the
/// search's and check's. Errors: the testbed's and the recorder's.
pub(crate) fn try_one(
    bed: &mut Bed,
    space: &Space,
    policy: &Policy,
    judges: &Judges,
    trials: &[Trial],
    refused: usize,
    default_s: &[f64],
) -> Result<Found> {
    let mut runs = 0u64;
    let none = |why: &str, runs: u64| Found {
        kept: None,
        runs,
        why: why.to_string(),
    };
    let cands = candidates(space, policy, trials, refused);
    if cands.is_empty() {
        return Ok(none(
            "no other setting measured better than the default",
            runs,
        ));
    }
    let Some(c) = screen(bed, space, judges, &cands, default_s, &mut runs)? else {
        return Ok(none(
            "no other candidate's start-up screen run was within the tolerance",
            runs,
        ));
    };
    let (fresh, feasible) = fresh_pairs(bed, space, policy, c, &mut runs)?;
    let cost = |p: usize| -> Vec<f64> {
        fresh
            .iter()
            .filter(|t| t.point == p)
            .map(|t| t.cost - t.penalty)
            .collect()
    };
    let (cd, cc) = (cost(space.default), cost(c));
    let margin = (1.0 + policy.min_effect).ln();
    let shifted: Vec<f64> = cc.iter().map(|x| x + margin).collect();
    let label = crate::knob::setting_label(&space.points[c]);
    let test = stats::paired_less(&shifted, &cd);
    let p = test.map_or(1.0, |t| t.p_value);
    if !feasible || p >= policy.alpha || cd.len() != cc.len() {
        return Ok(none(
            &format!(
                "the next candidate, {label}, was not shown better on fresh pairs (p {p:.3}{})",
                if feasible {
                    ""
                } else {
                    "; it broke a guard rail"
                }
            ),
            runs,
        ));
    }
    let d: Vec<f64> = cd.iter().zip(&cc).map(|(a, b)| a - b).collect();
    let m = stats::mean(&d);
    let h = stats::t_quantile(0.975, (d.len() - 1) as f64).unwrap_or(f64::INFINITY)
        * (stats::variance(&d) / d.len() as f64).sqrt();
    let verdicts = super::check(
        bed,
        &space.points[space.default],
        &space.points[c],
        judges,
        policy.alpha,
    )?;
    runs += verdicts.iter().map(|v| 2 * v.pairs as u64).sum::<u64>();
    if verdicts.iter().any(|v| !v.holds) {
        return Ok(none(
            &format!("the next candidate, {label}, failed a judge too"),
            runs,
        ));
    }
    Ok(Found {
        kept: Some(Kept {
            point: c,
            improvement: (m.exp(), (m - h).exp(), (m + h).exp()),
            p_value: p,
            pairs: d.len(),
            judges: verdicts,
            trials: fresh,
        }),
        runs,
        why: String::new(),
    })
}

/// Step 2: one start-up run of each candidate in `cands` under each judge's background; the
/// first whose runs are all within the tolerance of `default_s`, if any. `runs` counts them.
fn screen(
    bed: &mut Bed,
    space: &Space,
    judges: &Judges,
    cands: &[usize],
    default_s: &[f64],
    runs: &mut u64,
) -> Result<Option<usize>> {
    for &c in cands {
        let setting = &space.points[c];
        bed.testbed.apply(setting)?;
        let mut ok = true;
        for (i, &load) in judges.startup.iter().enumerate() {
            let run = bed.testbed.run_startup(load)?;
            *runs += 1;
            bed.recorder.judge_run(super::STARTUP, setting, &run)?;
            (bed.log)(
                &format!(
                    "judge  start-up under {load}  {}  {:.3} s  screen",
                    crate::knob::setting_label(setting),
                    run.time_s
                ),
                1,
            );
            ok &= run.failed.is_none() && run.time_s <= (1.0 + judges.tolerance) * default_s[i];
        }
        if ok {
            return Ok(Some(c));
        }
    }
    Ok(None)
}

/// Step 3's trials: max(`check_pairs`, 3) interleaved (default, `c`) pairs of full trials,
/// and whether `c` keeps the guard rails on their means. `runs` counts their load runs.
fn fresh_pairs(
    bed: &mut Bed,
    space: &Space,
    policy: &Policy,
    c: usize,
    runs: &mut u64,
) -> Result<(Vec<Trial>, bool)> {
    let n = policy.check_pairs.max(3) as usize;
    let eval = Evaluator::new(&mut *bed.testbed, space, policy, &mut *bed.recorder);
    for i in 0..n {
        for p in [space.default, c] {
            let t = eval.trial(p)?;
            (bed.log)(
                &format!(
                    "check  {}  {} {:.3}  the next candidate's check, pair {} of {n}",
                    crate::knob::setting_label(&space.points[p]),
                    policy.objective.label(),
                    t.value,
                    i + 1
                ),
                t.runs.len() as u64,
            );
        }
    }
    *runs += eval.runs();
    let feasible = eval.feasible(c);
    Ok((eval.into_trials(), feasible))
}

/// The candidates of step 1: measured, not failed, not `refused`, mean ranking cost
/// ([`rank_cost`]) at least `min_effect` below the default's; best mean first, at most
/// [`SCREENED`].
fn candidates(space: &Space, policy: &Policy, trials: &[Trial], refused: usize) -> Vec<usize> {
    let mean = |p: usize| -> Option<f64> {
        let c: Vec<f64> = trials
            .iter()
            .filter(|t| t.point == p && t.failed.is_none() && t.refused.is_none())
            .filter_map(|t| rank_cost(policy, t))
            .collect();
        (!c.is_empty()).then(|| stats::mean(&c))
    };
    let Some(def) = mean(space.default) else {
        return Vec::new();
    };
    let bar = def - (1.0 + policy.min_effect).ln();
    let mut out: Vec<(f64, usize)> = (0..space.len())
        .filter(|&p| p != space.default && p != refused)
        .filter(|&p| !trials.iter().any(|t| t.point == p && t.failed.is_some()))
        .filter_map(|p| mean(p).filter(|&m| m < bar).map(|m| (m, p)))
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out.into_iter().take(SCREENED).map(|(_, p)| p).collect()
}

/// A cost every trial of the search has, full or a screen's part, to rank candidates by: for
/// a Ratio objective the mean over its loads of ln(mean Time) of the loaded runs (the
/// screen's own ranking), for Loads −ln(mean Loads); `None` for a trial without those runs or
/// another objective.
fn rank_cost(policy: &Policy, t: &Trial) -> Option<f64> {
    use crate::tune::policy::Objective;
    let m = crate::tune::evaluator::trial_metrics(&t.runs);
    let c = match &policy.objective {
        Objective::MinRatio { loads } => {
            let ts: Option<Vec<f64>> = loads
                .iter()
                .map(|l| m.get(&(*l, "time_s")).map(|x| x.ln()))
                .collect();
            stats::mean(&ts?)
        }
        Objective::MaxLoads { load } => -m.get(&(*load, "loads"))?.ln(),
        Objective::Benchmark(_) => return None,
    };
    c.is_finite().then_some(c)
}
