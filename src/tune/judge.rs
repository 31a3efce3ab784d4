//! The second judges: before a tune keeps a sweet spot, it is tested against the default on
//! every judge of its policy (`[judge]`, `Judges`), so that a setting that wins contest's
//! Ratio by making the machine slower elsewhere is not kept.
//!
//! Why: Jens Axboe's warning in the 2002 thread ("the sweet spot for this particular benchmark
//! may be 8, that may not be the sweet spot for some other benchmark"), and TUNA (EuroSys'25:
//! up to 63% of configurations a tuner calls best lose 30% or more when deployed). The judge
//! today is the start-up judge ([`crate::bench::Testbed::run_startup`], `docs/judges.md`):
//! the cold start-up of an application under a background, after the BFQ team's S suite.
//!
//! What it computes, exactly (DESIGN.md: name a test for what it computes), per judge:
//! - **Runs**: `pairs` interleaved pairs of one start-up run at the default and one at the
//!   sweet spot, in counterbalanced order (default first in even pairs, the sweet spot first
//!   in odd ones: A B B A …), so a linear drift hits both alike.
//! - **d** = ln Time(sweet spot) − ln Time(default) per pair.
//! - **Test**: a one-sided **paired t-test for non-inferiority** (Student 1908; the margin as
//!   in Schuirmann 1987): H0 mean d ≥ ln(1 + tolerance) (the sweet spot is at least
//!   `tolerance` slower) against H1 mean d < ln(1 + tolerance), at the policy's `alpha`,
//!   df = pairs − 1. The judge holds when H0 is rejected.
//! - **Several judges**: the sweet spot is kept only when every judge holds, an
//!   intersection–union test (Berger 1982), which is level `alpha` with no correction.
//! - **What the report says**: the ratio exp(mean d) (> 1: slower) with its two-sided 95% CI,
//!   and the effect: *helped* (holds, CI below 1), *changed nothing* (holds, CI reaches 1),
//!   *hurt* (fails, CI above 1), *unclear* (fails, CI reaches 1: too noisy to show it is
//!   within the tolerance). Any failure keeps the default.
//!
//! Budget: the judge runs (2 × `pairs` per judge, and a fallback's when the best fails) come
//! on top of the policy's `budget` of trials, and only when the objective's check found a
//! sweet spot; the run budget the progress bar counts against includes the most they may
//! take ([`crate::tune::judge_runs`]), and the report's `runs` counts those made.

use crate::Result;
use crate::bench::{Load, Testbed};
use crate::knob::Setting;
use crate::stats;
use crate::tune::evaluator::Recorder;
pub(crate) use crate::tune::policy::Judges;
use serde::{Deserialize, Serialize};

/// Where the judges' progress lines go: the line and the load runs it reports
/// ([`crate::tune::observe::TrialLog::printer`]).
pub(crate) type LineLog = dyn Fn(&str, u64);

/// What the judges measure with: the testbed, where runs are recorded, where lines go.
pub(crate) struct Bed<'a> {
    /// The device (or simulation) measured.
    pub testbed: &'a mut dyn Testbed,
    /// Where each run is recorded ([`Recorder::judge_run`]; trials for a fallback's check).
    pub recorder: &'a mut dyn Recorder,
    /// Progress lines.
    pub log: &'a LineLog,
}

/// The start-up judge's name in the store and the JSON.
pub(crate) const STARTUP: &str = "startup";

/// What one judge found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Non-inferior, and faster: the 95% CI of the ratio lies below 1.
    Helped,
    /// Non-inferior; the CI reaches 1.
    Unchanged,
    /// Not non-inferior, and slower: the CI lies above 1.
    Hurt,
    /// Not non-inferior, but the CI reaches 1: too noisy to tell (or a run failed).
    Unclear,
}

impl Effect {
    /// In plain words, e.g. `changed nothing`.
    pub(crate) fn words(self) -> &'static str {
        match self {
            Effect::Helped => "helped",
            Effect::Unchanged => "changed nothing",
            Effect::Hurt => "hurt",
            Effect::Unclear => "unclear",
        }
    }
}

/// One judge's verdict on the sweet spot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JudgeVerdict {
    /// The judge, e.g. `startup`.
    pub judge: String,
    /// Its background load.
    pub load: Load,
    /// Interleaved (default, sweet spot) pairs measured.
    pub pairs: usize,
    /// Mean Time at the default, s.
    pub default_s: f64,
    /// Mean Time at the sweet spot, s.
    pub best_s: f64,
    /// exp(mean d): the sweet spot's Time over the default's (> 1: slower), with its
    /// two-sided 95% CI (low, high); `None` when fewer than 2 pairs measured.
    pub ratio: Option<(f64, f64, f64)>,
    /// The margin: at most this fraction slower (the policy's `tolerance`).
    pub tolerance: f64,
    /// One-sided p-value of the non-inferiority test; `None` when it could not run.
    pub p_value: Option<f64>,
    /// True when the test rejected "at least `tolerance` slower" at the policy's alpha.
    pub holds: bool,
    /// What it found, in one word.
    pub effect: Effect,
    /// Why it does not hold, when a run failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

impl JudgeVerdict {
    /// `start-up under light_io_load`.
    pub(crate) fn label(&self) -> String {
        format!("start-up under {}", self.load)
    }

    /// One line for the report, e.g. `start-up under light_io_load: changed nothing (1.02×
    /// the default's 1.66 s, 95% CI 0.97–1.07; within 10%: p 0.01)`.
    pub(crate) fn line(&self) -> String {
        if let Some(why) = &self.failed {
            return format!("{}: unclear (a run failed: {why})", self.label());
        }
        let ci = self
            .ratio
            .map(|(r, lo, hi)| {
                format!(
                    "{r:.2}× the default's {:.3} s, 95% CI {lo:.2}–{hi:.2}",
                    self.default_s
                )
            })
            .unwrap_or_else(|| "no ratio".into());
        let p = match self.p_value {
            Some(p) if p < 0.001 => format!("p {p:.1e}"),
            Some(p) => format!("p {p:.3}"),
            None => "no test".into(),
        };
        format!(
            "{}: {} ({ci}; at most {:.0}% slower: {p})",
            self.label(),
            self.effect.words(),
            100.0 * self.tolerance
        )
    }
}

/// Runs every judge of `judges` on `testbed`: `pairs` counterbalanced pairs of the default
/// and `best`, each run given to `recorder` as it finishes. The testbed is left at whichever
/// setting ran last. Errors: the testbed's (a refused setting, an interrupted run).
pub(crate) fn check(
    bed: &mut Bed,
    default: &Setting,
    best: &Setting,
    judges: &Judges,
    alpha: f64,
) -> Result<Vec<JudgeVerdict>> {
    let mut out = Vec::new();
    for &load in &judges.startup {
        let (mut at_default, mut at_best, mut failed) = (Vec::new(), Vec::new(), None);
        for i in 0..judges.pairs as usize {
            let order = if i % 2 == 0 {
                [(default, false), (best, true)]
            } else {
                [(best, true), (default, false)]
            };
            for (setting, is_best) in order {
                bed.testbed.apply(setting)?;
                let run = bed.testbed.run_startup(load)?;
                bed.recorder.judge_run(STARTUP, setting, &run)?;
                (bed.log)(
                    &format!(
                        "judge  start-up under {load}  {}  {:.3} s  pair {} of {}",
                        crate::knob::setting_label(setting),
                        run.time_s,
                        i + 1,
                        judges.pairs
                    ),
                    1,
                );
                if let Some(why) = &run.failed {
                    failed.get_or_insert_with(|| why.clone());
                }
                if is_best {
                    at_best.push(run.time_s);
                } else {
                    at_default.push(run.time_s);
                }
            }
        }
        out.push(verdict(
            load,
            &at_default,
            &at_best,
            judges.tolerance,
            alpha,
            failed,
        ));
    }
    Ok(out)
}

/// The verdict of one judge from its paired Times, s (`at_default[i]` and `at_best[i]` are
/// pair i).
pub(crate) fn verdict(
    load: Load,
    at_default: &[f64],
    at_best: &[f64],
    tolerance: f64,
    alpha: f64,
    failed: Option<String>,
) -> JudgeVerdict {
    let ln = |xs: &[f64]| xs.iter().map(|x| x.ln()).collect::<Vec<f64>>();
    let margin = (1.0 + tolerance).ln();
    let shifted: Vec<f64> = ln(at_best).iter().map(|x| x - margin).collect();
    let test = stats::paired_less(&shifted, &ln(at_default));
    let d: Vec<f64> = ln(at_best)
        .iter()
        .zip(ln(at_default))
        .map(|(b, a)| b - a)
        .collect();
    let ratio = (d.len() >= 2).then(|| {
        let n = d.len() as f64;
        let m = stats::mean(&d);
        let h = stats::t_quantile(0.975, n - 1.0).unwrap_or(f64::INFINITY)
            * (stats::variance(&d) / n).sqrt();
        (m.exp(), (m - h).exp(), (m + h).exp())
    });
    let p_value = test.map(|t| t.p_value);
    let holds = failed.is_none() && p_value.is_some_and(|p| p < alpha);
    let effect = match (holds, ratio) {
        (_, _) if failed.is_some() => Effect::Unclear,
        (true, Some((_, _, hi))) if hi < 1.0 => Effect::Helped,
        (true, _) => Effect::Unchanged,
        (false, Some((_, lo, _))) if lo > 1.0 => Effect::Hurt,
        (false, _) => Effect::Unclear,
    };
    JudgeVerdict {
        judge: STARTUP.into(),
        load,
        pairs: d.len(),
        default_s: stats::mean(at_default),
        best_s: stats::mean(at_best),
        ratio,
        tolerance,
        p_value,
        holds,
        effect,
        failed,
    }
}

/// The judges' part of a tune's end, after the objective's check ([`crate::tune::optimise`]):
/// when `v` is significant and the policy has judges, runs them on `v.best`; when one fails,
/// tries one fallback ([`fallback`]). Updates `v` (the setting kept, its figures, the reason),
/// appends the fallback's check trials to `trials` and every run made to `runs`. Returns the
/// verdicts of the setting kept, or of the refused one when the default is kept; empty when
/// no judge ran. Errors: the testbed's and the recorder's.
pub(crate) fn conclude(
    bed: &mut Bed,
    space: &crate::tune::space::Space,
    policy: &crate::tune::policy::Policy,
    trials: &mut Vec<crate::tune::evaluator::Trial>,
    v: &mut crate::tune::solver::Verdict,
    runs: &mut u64,
) -> Result<Vec<JudgeVerdict>> {
    let Some(j) = policy.judges.as_ref().filter(|_| v.significant) else {
        return Ok(Vec::new());
    };
    let default = &space.points[space.default];
    let verdicts = check(bed, default, &space.points[v.best], j, policy.alpha)?;
    *runs += verdicts.iter().map(|x| 2 * x.pairs as u64).sum::<u64>();
    let failed: Vec<&JudgeVerdict> = verdicts.iter().filter(|x| !x.holds).collect();
    if failed.is_empty() {
        return Ok(verdicts);
    }
    let label = crate::knob::setting_label(&space.points[v.best]);
    let traded = refusal(
        &policy.objective.label(),
        v.improvement.map(|i| i.0),
        &failed,
    );
    let default_s: Vec<f64> = verdicts.iter().map(|x| x.default_s).collect();
    let found = fallback::try_one(bed, space, policy, j, trials, v.best, &default_s)?;
    *runs += found.runs;
    // The step's record of the search's best's knobs no longer describes the answer.
    v.knobs.clear();
    let Some(k) = found.kept else {
        v.significant = false;
        v.reason = format!("keep the default: {label} {traded}; {}", found.why);
        return Ok(verdicts);
    };
    trials.extend(k.trials);
    v.best = k.point;
    v.improvement = Some(k.improvement);
    v.p_value = Some(k.p_value);
    v.pairs = Some(k.pairs);
    v.every_trial = false;
    v.reason = format!(
        "significant: the next candidate, {}, is more than {:.0}% better than the default on \
         {} fresh interleaved pairs (one-sided p = {:.2e} < {}) and holds on every judge; \
         the search's best, {label}, {traded}",
        crate::knob::setting_label(&space.points[k.point]),
        100.0 * policy.min_effect,
        k.pairs,
        k.p_value,
        policy.alpha,
    );
    Ok(k.judges)
}

/// What a setting refused by its judges would have traded, to follow its label, e.g. `is
/// 1.85× better on io_load Ratio but fails a judge of the policy: start-up under
/// light_io_load: hurt (1.20× …)`.
pub(crate) fn refusal(
    objective: &str,
    improvement: Option<f64>,
    failed: &[&JudgeVerdict],
) -> String {
    let gain = improvement
        .map(|r| format!("is {r:.2}× better on {objective} but "))
        .unwrap_or_default();
    let lines: Vec<String> = failed.iter().map(|v| v.line()).collect();
    format!("{gain}fails a judge of the policy: {}", lines.join("; "))
}

pub mod fallback;

#[cfg(test)]
mod tests;
