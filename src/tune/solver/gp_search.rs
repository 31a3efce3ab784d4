//! [`GpSearch`]: the search of [`super::BayesOpt`] when the objective may not be measured in
//! parts (every trial a full one): a Latin-hypercube design, then [`crate::tune::gp`]'s
//! expected improvement with SMAC's intensification, then the final check
//! (`solver/check.rs`). The phases and their rules: `docs/solver.md`.

use super::core::{Core, dist};
use super::{ASSUMED_NOISE, CHECK_SHARE, PENALTY, RACE_CAP, RESERVE_DIV, SEPARATE_CAP, TOL_DIV};
use crate::tune::evaluator::Part;
use crate::tune::gp;
use serde::{Deserialize, Serialize};

/// The GP search's own state.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct GpSearch {
    /// The setting racing the incumbent, while a race (intensification) is on.
    challenger: Option<usize>,
}

impl GpSearch {
    /// Queues the first trials: the default (the reference), then the initial design.
    pub(super) fn init(&mut self, core: &mut Core) {
        // A confirm that did not hold has measured the default already.
        if core.costs(core.default).is_empty() {
            core.push(
                core.default,
                Part::Full,
                "the default setting: reference for guards and the final check",
            );
        }
        let dims = core.coords.first().map_or(1, Vec::len);
        let n = (dims + 2).min(core.coords.len()).saturating_sub(1);
        let n = n.min(core.search_budget().saturating_sub(1));
        for p in core.design(n) {
            core.push(p, Part::Full, "initial design (Latin hypercube)");
        }
    }

    /// Forgets a failed setting as the challenger.
    pub(super) fn observe_failure(&mut self, point: usize) {
        if self.challenger == Some(point) {
            self.challenger = None;
        }
    }

    /// Decides what to measure next when the queue is empty. `feasible` says whether a
    /// measured setting keeps the guard rails.
    pub(super) fn plan(&mut self, core: &mut Core, feasible: &dyn Fn(usize) -> bool) {
        // Keep enough budget for a final check with 90% power at the current estimate, capped
        // (RESERVE_DIV) and floored (CHECK_SHARE); every trial the search leaves goes to the
        // check.
        let reserve = 2 * core
            .check_size()
            .min(core.cfg.budget / RESERVE_DIV)
            .max(core.cfg.check_pairs)
            .max((core.cfg.budget as f64 * CHECK_SHARE / 2.0) as usize);
        if core.trials >= core.search_budget() || core.trials + reserve >= core.cfg.budget {
            core.pick_incumbent(feasible);
            core.start_check("search budget spent", feasible);
            return;
        }
        let measured = core.measured();
        let pred = core.predict();
        let prev = core.incumbent;
        let cand = core.pick_incumbent(feasible);
        if self.race(core, prev, cand) {
            return;
        }
        self.challenger = None;
        match pred {
            Some(pred) => Self::improve(core, &measured, &pred, feasible),
            None => Self::farthest(core, &measured, feasible),
        }
    }

    /// Intensification: a new best candidate `cand` with a single trial is re-measured,
    /// interleaved with the previous incumbent `prev`, unless it is clearly better (2 noise
    /// sds on the difference). True when queued.
    fn race(&mut self, core: &mut Core, prev: usize, cand: usize) -> bool {
        if cand == prev || core.costs(cand).len() >= 2 {
            return false;
        }
        // Until two replicates exist, assume 10% per-trial noise (DESIGN.md: above 10%
        // is common on real disks); the early GP's noise term is too unsure to use.
        let noise = core
            .pooled_sd()
            .filter(|(_, df)| *df >= 2.0)
            .map(|(s, _)| s)
            .unwrap_or(ASSUMED_NOISE);
        let gap = core.mean_cost(prev).unwrap_or(f64::INFINITY)
            - core.mean_cost(cand).unwrap_or(f64::INFINITY);
        let left = core.search_budget().saturating_sub(core.trials);
        let close = gap < 2.0 * noise * 2f64.sqrt();
        if !close || left < 1 {
            return false;
        }
        core.incumbent = prev;
        if core.costs(prev).len() < RACE_CAP && left >= 2 {
            core.push(prev, Part::Full, "race: incumbent re-measured");
        }
        core.push(cand, Part::Full, "race: challenger re-measured");
        self.challenger = Some(cand);
        true
    }

    /// No model yet: queues the unmeasured point farthest from every measured one, or starts
    /// the check when every setting is measured.
    fn farthest(core: &mut Core, measured: &[usize], feasible: &dyn Fn(usize) -> bool) {
        let p = (0..core.coords.len())
            .filter(|p| !measured.contains(p) && !core.failed.contains(p))
            .max_by(|&a, &b| {
                let f = |x: usize| {
                    measured
                        .iter()
                        .map(|&q| dist(&core.coords[x], &core.coords[q]))
                        .fold(f64::INFINITY, f64::min)
                };
                f(a).total_cmp(&f(b))
            });
        match p {
            Some(p) => core.push(
                p,
                Part::Full,
                "no model yet: the farthest unmeasured setting",
            ),
            None => core.start_check("every setting measured", feasible),
        }
    }

    /// With a model: queues the setting of the largest expected improvement, or, once none
    /// is expected to improve, separates the top two or starts the check.
    ///
    /// Unmeasured settings: the GP's expected improvement below the GP's mean at the
    /// incumbent. Measured ones that keep the rails on their means, with fewer than
    /// [`SEPARATE_CAP`] trials: the augmented one of their own posterior, below the effective
    /// best of those posteriors (one model for both sides of each comparison).
    fn improve(
        core: &mut Core,
        measured: &[usize],
        pred: &gp::Prediction,
        feasible: &dyn Fn(usize) -> bool,
    ) {
        let best = pred.mean[core.incumbent];
        let noise = core
            .pooled_sd()
            .filter(|(_, df)| *df >= 2.0)
            .map_or(ASSUMED_NOISE, |(s, _)| s);
        let eff = Self::effective_best(core, measured, feasible);
        let ei: Vec<f64> = (0..core.coords.len())
            .map(|p| {
                if core.failed.contains(&p) {
                    0.0
                } else if measured.contains(&p) {
                    let room = core.costs(p).len() < SEPARATE_CAP;
                    match eff {
                        Some(b) if room && (p == core.default || feasible(p)) => {
                            Self::augmented_ei(core, p, b, noise)
                        }
                        _ => 0.0,
                    }
                } else {
                    pred.expected_improvement(p, best)
                }
            })
            .collect();
        let Some(p) = (0..core.coords.len()).max_by(|&a, &b| ei[a].total_cmp(&ei[b])) else {
            core.start_check("nothing to measure", feasible);
            return;
        };
        let tol = (1.0 + core.cfg.min_effect).ln() / TOL_DIV;
        if ei[p] < tol {
            if Self::separate_top_two(core, feasible) {
                return;
            }
            core.start_check("converged: no setting is expected to improve", feasible);
            return;
        }
        let why = if measured.contains(&p) {
            let (m, v) = core.posterior(p);
            let n = core.costs(p).len();
            format!(
                "measured again (after {n} trial{}): {}",
                if n == 1 { "" } else { "s" },
                ei_why(ei[p], m, v.sqrt(), eff.unwrap_or(best))
                    .replace("the model predicts", "its posterior says")
                    .replace("the best", "the best's upper bound")
            )
        } else {
            ei_why(ei[p], pred.mean[p], pred.sd[p], best)
        };
        core.push(p, Part::Full, why);
    }

    /// The effective best of the measured settings that keep the rails (the default always
    /// counts): the lowest posterior mean + 1 posterior sd ([`Core::posterior`]; Huang et
    /// al. 2006's effective best with c = 1). `None` when none is measured.
    pub(super) fn effective_best(
        core: &Core,
        measured: &[usize],
        feasible: &dyn Fn(usize) -> bool,
    ) -> Option<f64> {
        measured
            .iter()
            .filter(|&&p| core.eligible(p, feasible))
            .map(|&p| {
                let (m, v) = core.posterior(p);
                m + v.sqrt()
            })
            .filter(|x| x.is_finite())
            .min_by(f64::total_cmp)
    }

    /// Augmented expected improvement of measuring setting `p` once more, adapted from
    /// Huang, Allen, Notz & Zeng 2006 ("Global optimization of stochastic black-box systems
    /// via sequential kriging meta-models", J. Global Optim. 34): the expected improvement of
    /// its posterior ([`Core::posterior`]: its trials shrunk toward its kin, mean m and
    /// sd s, ln cost) below `best` ([`GpSearch::effective_best`]), times
    /// `1 − noise / √(s² + noise²)`, which falls toward 0 as its trials pile up. `noise` is
    /// one trial's sd (ln units). Unlike Huang's, the posterior is not the GP's, and the
    /// unmeasured settings keep the GP's plain expected improvement. So a setting measured
    /// once that may still beat the incumbent (a scheduler with no kin to lean on, an
    /// unlucky draw) is measured again by the search itself, not only by a race it may never
    /// enter; [`GpSearch::plan`] stops this at [`SEPARATE_CAP`] trials of a setting.
    pub(super) fn augmented_ei(core: &Core, p: usize, best: f64, noise: f64) -> f64 {
        let (m, v) = core.posterior(p);
        if !m.is_finite() {
            return 0.0;
        }
        gp::expected_improvement(m, v.sqrt(), best) * (1.0 - noise / (v + noise * noise).sqrt())
    }

    /// After the model converged: while the challenger (of the other settings, the lowest
    /// lower bound, posterior mean − [`PENALTY`] sds, as LUCB picks it: Kalyanakrishnan,
    /// Tewari, Auer & Stone 2012) is within noise of the incumbent (posterior means less than
    /// 2 sds of their difference apart, and that sd above the minimum effect), measure both
    /// once more, interleaved. (The second-best score would be a near-twin of the incumbent
    /// whenever a child knob is flat: eleven `fifo_batch` values of one mq-deadline.)
    /// [`GpSearch::plan`] stops this when the search's share of the budget is spent; it also
    /// stops once the incumbent or the challenger has [`SEPARATE_CAP`] trials.
    /// True when queued.
    pub(super) fn separate_top_two(core: &mut Core, feasible: &dyn Fn(usize) -> bool) -> bool {
        let left = core.search_budget().saturating_sub(core.trials);
        if left < 2 {
            return false;
        }
        let inc = core.incumbent;
        let Some(r) = Self::challenger_of(core, inc, feasible) else {
            return false;
        };
        // The incumbent takes part in every round, whichever challenger: its trials bound them.
        if core.costs(inc).len() >= SEPARATE_CAP || core.costs(r).len() >= SEPARATE_CAP {
            return false;
        }
        let (mi, vi) = core.posterior(inc);
        let (mr, vr) = core.posterior(r);
        // Separated, or too close for the difference to matter (below the minimum effect).
        let sd = (vi + vr).sqrt();
        if mr - mi > 2.0 * sd || 2.0 * sd < (1.0 + core.cfg.min_effect).ln() {
            return false;
        }
        for p in [inc, r] {
            core.push(
                p,
                Part::Full,
                "intensify: the incumbent and its challenger are within noise",
            );
        }
        true
    }

    /// The challenger of incumbent `inc`: of the other measured, feasible settings, the one
    /// with the lowest lower bound (posterior mean − [`PENALTY`] posterior sds; LUCB's rule).
    pub(super) fn challenger_of(
        core: &Core,
        inc: usize,
        feasible: &dyn Fn(usize) -> bool,
    ) -> Option<usize> {
        core.measured()
            .into_iter()
            .filter(|&p| p != inc && core.eligible(p, feasible))
            .map(|p| {
                let (m, v) = core.posterior(p);
                (m - PENALTY * v.sqrt(), p)
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, p)| p)
    }
}

/// The `why` of a setting picked by expected improvement `ei` (ln units), from the model's
/// mean and sd of its cost and the incumbent's predicted cost `best`, in figures people can
/// read: the predicted gain when the model expects it to be better, else the chance that it
/// is (exploration).
pub(super) fn ei_why(ei: f64, mean: f64, sd: f64, best: f64) -> String {
    let gain = 100.0 * ei.exp_m1();
    if mean < best {
        return format!(
            "expected improvement {gain:.1}%: the model predicts {:.1}% better than the best",
            100.0 * -(mean - best).exp_m1()
        );
    }
    let chance = statrs::distribution::Normal::new(0.0, 1.0)
        .ok()
        .filter(|_| sd > 1e-12)
        .map_or(0.0, |n| {
            statrs::distribution::ContinuousCDF::cdf(&n, (best - mean) / sd)
        });
    format!(
        "expected improvement {gain:.1}%: exploring, a {:.0}% chance to beat the best",
        100.0 * chance
    )
}
