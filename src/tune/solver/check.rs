//! The final check (the last phase of [`super::BayesOpt`]): the incumbent against the default on fresh
//! interleaved pairs, and the [`Verdict`].
//!
//! What it computes, exactly (DESIGN.md: name a test for what it computes):
//! - **Mean**: the mean over the n fresh pairs of d = ln cost(best) − ln cost(default), each
//!   pair a default trial then a best trial, measured after the search. Here and below a
//!   cost is the objective's alone: the guard penalty a trial carries in the search
//!   ([`crate::tune::evaluator::Trial::penalty`], for one noisy trial over a rail) is taken
//!   out; the rails judge the answer on its mean metrics over all its trials, the check's
//!   included, when the check ends ([`Core::conclude_if_feasible`],
//!   [`crate::tune::evaluator::Evaluator::feasible`]).
//! - **Variance** of one pair's d: pooled by df from (a) the n differences themselves and (b)
//!   every trial of the two settings, the search's included (their variances summed, Welch df)
//!   ([`stats::paired_variance`]); never from other settings. The df is the larger of the
//!   two sources' (they share trials). So the search trials that selected the best inform the
//!   variance, not the mean. After the screen, whose search trials are mostly parts, (b) is
//!   the sum of each setting's ln loaded Time variance and ln no_load Time variance over all
//!   its trials, search and check (a Ratio's ln is their difference), df by
//!   Welch–Satterthwaite over the four ([`stats::paired_variance_arms`]); for Loads, the two
//!   settings' own costs.
//! - **Pairs**: full trials (each Ratio divided by its own trial's no_load), except after
//!   the screen: there, for a Ratio whose no_load its flatness test found flat, the loaded
//!   runs only, d = ln loaded Time(best) − ln loaded Time(default) (no_load pooled: it
//!   cancels; the screen falls back to full pairs when the test fails), the variance from
//!   the two settings' loaded runs only; for Loads, the arms test below.
//! - **Test**: one-sided t-test of H0 "the best is at most `min_effect` better", i.e.
//!   mean d ≥ −ln(1 + min_effect), against H1 mean d < −ln(1 + min_effect), at `alpha`. The
//!   minimum effect is inside the test, not a separate check of the point estimate.
//!
//! **The arms test** (the screen on a Loads objective, [`super::screen::Screen::arms_test`]) is another
//! test, named for what it is: a one-sided **Welch two-sample t-test on every trial of the
//! best and of the default**, search and check alike (H0 as above: the best at most
//! `min_effect` better; df by Welch–Satterthwaite), not fresh pairs. There the race keeps
//! re-measuring the default as it goes ([`super::screen::DEFAULT_SHARE`]) and the runs it
//! leaves become interleaved pairs (maybe none), whose trials join the two samples. Why: a
//! Loads trial is one run, and 24 runs could not buy both a pick between settings 7% apart
//! at 9% noise and enough fresh pairs for the check (the scheduler surface: 78% of held-out
//! seeds with fresh pairs). The price: the best's sample includes the trials that selected it
//! (a winner's curse), and drift is not paired away. Measured, not argued: on the flat
//! 4-scheduler surfaces, with and without drift, 3–4% false "significant" (held-out seeds
//! 10001..10400, `examples/shootout-results.md`).

use super::core::Core;
use super::{Phase, Step};
use crate::stats;
use crate::tune::evaluator::Part;
use serde::{Deserialize, Serialize};

/// The check takes at most this many times `check_pairs` pairs, unless 90% power needs more
/// (`check_size`: 90% power at the search's estimated effect).
pub(crate) const CHECK_CAP: usize = 8;

/// The final check's outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Grid index of the best setting found (the default when none was better).
    pub best: usize,
    /// True when `best` beat the default significantly and by at least min_effect.
    pub significant: bool,
    /// Improvement ratio (> 1 better) with its 95% CI, from the check pairs.
    pub improvement: Option<(f64, f64, f64)>,
    /// One-sided p-value of the paired test, if it ran.
    pub p_value: Option<f64>,
    /// Interleaved (default, best) pairs in the final check, if it ran.
    pub pairs: Option<usize>,
    /// Why, in one sentence.
    pub reason: String,
    /// True when the test used every trial of the two settings (the arms test), not the
    /// check pairs only: the report's figures then do too.
    #[serde(default)]
    pub every_trial: bool,
    /// The confirm of a known sweet spot that ran before the search (`solver/confirm.rs`),
    /// if the tune had one: held (this verdict is its) or not (the search's verdict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<super::confirm::ConfirmOutcome>,
    /// After a significant check of a best that changed two or more knobs, what became of
    /// each (`solver/reduce.rs`): carries the effect, left at its default, or not tested;
    /// empty otherwise.
    #[serde(default)]
    pub knobs: Vec<super::KnobRecord>,
    /// True when the check was split between two finalists (`solver/split_check.rs`): this
    /// verdict's test ran at half the check's level.
    #[serde(default)]
    pub split: bool,
}

impl Verdict {
    /// "Keep the default": not significant, no test ran; `best` is what the search found.
    pub(super) fn keep_default(best: usize, reason: impl Into<String>) -> Verdict {
        Verdict {
            best,
            significant: false,
            improvement: None,
            p_value: None,
            pairs: None,
            reason: reason.into(),
            every_trial: false,
            confirm: None,
            knobs: Vec::new(),
            split: false,
        }
    }
}

/// The variance and df of one pair's difference (ln units), as the screen's arms give it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct VarianceDf {
    /// Variance of one pair's difference, ln units squared.
    pub variance: f64,
    /// Its degrees of freedom (Welch–Satterthwaite over the arms).
    pub df: f64,
}

/// Where the variance of a check pair's difference comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum PairVariance {
    /// The GP search: the pairs and every full trial of the two settings
    /// ([`stats::paired_variance`]).
    FullTrials,
    /// The screen: the pairs and the variances of the two settings' parts, summed
    /// ([`stats::paired_variance_arms`]); `None` when they have too few trials.
    Arms(Option<VarianceDf>),
}

/// The arms test's samples: every loaded cost of the best and of the default, search and
/// check, in the order measured.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ArmsSamples {
    /// The best's costs.
    pub best: Vec<f64>,
    /// The default's costs.
    pub default: Vec<f64>,
}

/// What the search that ran tells the final check about its evidence.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CheckBasis {
    /// Where the variance of a pair's difference comes from.
    pub variance: PairVariance,
    /// The arms test's samples when the check is the arms test (the screen on Loads).
    pub arms_test: Option<ArmsSamples>,
    /// True when the pairs are loaded runs, no_load pooled (a Ratio whose no_load the
    /// screen's flatness test found flat).
    pub loaded_pairs: bool,
}

impl CheckBasis {
    /// The GP search's: full pairs, the variance from every full trial.
    pub(crate) fn full_trials() -> Self {
        CheckBasis {
            variance: PairVariance::FullTrials,
            arms_test: None,
            loaded_pairs: false,
        }
    }
}

impl Core {
    /// Queues the check of the incumbent against the default. When the default itself
    /// scores best but another feasible setting measured better on its own trials (a lower
    /// mean cost), that setting (the best-scoring such) is checked instead: the score's
    /// shrinkage and penalty are a ranking, not a test, and only the check may say "keep the
    /// default" then. "No setting measured better" is said only when none did.
    pub(super) fn start_check(&mut self, why: &str, feasible: &dyn Fn(usize) -> bool) {
        let mut why = why.to_string();
        if self.incumbent == self.default {
            let own = self.mean_cost(self.default).unwrap_or(f64::INFINITY);
            let better = self
                .measured()
                .into_iter()
                .filter(|&p| p != self.default && !self.failed.contains(&p) && feasible(p))
                .filter(|&p| self.mean_cost(p).is_some_and(|c| c < own))
                .map(|p| (self.score(p), p))
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, p)| p);
            match better {
                Some(p) => {
                    self.incumbent = p;
                    why.push_str(
                        "; the default had the best score, but this setting's mean beats the \
                         default's, so it goes to the check",
                    );
                }
                None => {
                    self.finish(Verdict::keep_default(
                        self.default,
                        format!(
                            "keep the default: no significant improvement ({why}; no setting \
                             measured better than the default)"
                        ),
                    ));
                    return;
                }
            }
        }
        let best = self.incumbent;
        let left = self.cfg.budget.saturating_sub(self.trials) / 2;
        // The trials left go to the check (power is what separates a real sweet spot from
        // noise, and the search has converged or spent its share), up to what 90% power
        // needs or CHECK_CAP × check_pairs, whichever is more: a budget of 1000 is a bound,
        // not a target, and 485 pairs would cost hours on a real disk for nothing.
        let n = left.min(self.check_size().max(CHECK_CAP * self.cfg.check_pairs));
        if n < self.cfg.check_pairs.max(1) {
            self.finish(Verdict::keep_default(
                best,
                "keep the default: no budget left for the final check",
            ));
            return;
        }
        self.queue_pairs(best, n, &why, Part::Full);
    }

    /// Queues `n` fresh interleaved (default, `best`) pairs of `part` trials and enters the
    /// check phase.
    pub(super) fn queue_pairs(&mut self, best: usize, n: usize, why: &str, part: Part) {
        self.incumbent = best;
        self.phase = Phase::Check;
        for i in 0..n {
            self.queue.push_back(Step {
                point: self.default,
                why: if i == 0 {
                    format!("final check: default, pair 1 of {n} ({why})")
                } else {
                    format!("final check: default, pair {} of {n}", i + 1)
                },
                check: true,
                part,
            });
            self.queue.push_back(Step {
                point: best,
                why: format!("final check: best, pair {} of {n}", i + 1),
                check: true,
                part,
            });
        }
    }

    /// Pairs needed for 90% power at the search's estimated effect (shrunk by a quarter for
    /// the winner's curse) and the pooled within-setting sd; `check_pairs` if unknown.
    pub(super) fn check_size(&self) -> usize {
        let mean = |p: usize| {
            let c = self.objective_costs(p);
            (!c.is_empty()).then(|| stats::mean(&c))
        };
        let (Some(md), Some(mb)) = (mean(self.default), mean(self.incumbent)) else {
            return self.cfg.check_pairs;
        };
        let delta = 0.75 * (md - mb);
        if delta <= (1.0 + self.cfg.min_effect).ln() {
            return self.cfg.check_pairs;
        }
        let Some((sd, _)) = self.pooled_sd() else {
            return self.cfg.check_pairs;
        };
        let sd_d = sd * 2f64.sqrt();
        for n in self.cfg.check_pairs..=64 {
            // The test's df (see stats::paired_variance): at least n, as each of the two
            // settings has its n check trials and one or more from the search.
            let df = n as f64;
            let t = stats::t_quantile(1.0 - self.cfg.alpha, df).unwrap_or(f64::INFINITY);
            if (t + 1.2816) * sd_d / (n as f64).sqrt() <= delta {
                return n;
            }
        }
        64
    }

    /// Ends the check: [`Core::conclude`]'s test when the best still keeps the guard rails
    /// on its mean metrics over all its trials, the check's included (`feasible`); else keep
    /// the default. The test itself sees no guard penalties (module docs), so the rails are
    /// judged here, once more, with every trial.
    pub(super) fn conclude_if_feasible(&mut self, feasible: bool, basis: &CheckBasis) {
        if feasible {
            self.conclude(basis);
        } else {
            self.finish(Verdict::keep_default(
                self.incumbent,
                "keep the default: the best breaks a guard rail on its mean metrics over all \
                 its trials, the check's included",
            ));
        }
    }

    /// Tests the incumbent against the default on the check's pairs (module docs) and ends
    /// the tune with the [`Verdict`].
    pub(super) fn conclude(&mut self, basis: &CheckBasis) {
        let best = self.incumbent;
        let dc = self.check_costs(self.default);
        let bc = self.check_costs(best);
        let v = self.pair_test(best, &dc, &bc, basis, self.cfg.alpha);
        self.finish(v);
    }

    /// The check's test of `best` against the default at level `alpha` (module docs), as a
    /// [`Verdict`]: `dc` and `bc` are the default's and the best's check costs, paired in
    /// order (the first min(len) of each); `basis` where the variance comes from.
    pub(super) fn pair_test(
        &self,
        best: usize,
        dc: &[f64],
        bc: &[f64],
        basis: &CheckBasis,
        alpha: f64,
    ) -> Verdict {
        let n = dc.len().min(bc.len());
        let (dc, bc) = (&dc[..n], &bc[..n]);
        // The sd of a pair's difference: from the check pairs and from every trial of the two
        // settings (search included), never from other settings (noise differs between them).
        let d: Vec<f64> = bc.iter().zip(dc).map(|(b, d)| b - d).collect();
        let all = |p: usize| -> Vec<f64> {
            let mut v = self.objective_costs(p);
            v.extend(self.check_costs(p));
            v
        };
        let sd_df = match basis.variance {
            // The screen's trials of the two settings are mostly parts: their arms come from
            // the parts' variances (`Screen::check_basis`).
            PairVariance::Arms(arms) => {
                stats::paired_variance_arms(&d, arms.map(|a| (a.variance, a.df)))
            }
            PairVariance::FullTrials => stats::paired_variance(&d, &all(best), &all(self.default)),
        }
        .map(|(v, df)| (v.sqrt(), df));
        // H0: improvement ≤ min_effect. Shifting d by ln(1 + min_effect) puts that boundary
        // at 0 for the one-sided test.
        let shift = (1.0 + self.cfg.min_effect).ln();
        let shifted: Vec<f64> = d.iter().map(|x| x + shift).collect();
        let test = sd_df.and_then(|(sd, df)| stats::paired_less_pooled(&shifted, sd, df));
        // Improvement: the ratio of geometric means, exp(−mean d) (costs are ln values, signed
        // so smaller is better), with the same t-based 95% interval as the test.
        let improvement = sd_df.and_then(|(sd, df)| {
            let m = stats::mean(&d);
            let half = stats::t_quantile(0.975, df)? * sd / (d.len() as f64).sqrt();
            Some(((-m).exp(), (-m - half).exp(), (-m + half).exp()))
        });

        let mut p = test.as_ref().map(|t| t.p_value);
        let mut improvement = improvement;
        // The arms test (the screen on Loads): every trial of the two settings, not the pairs.
        let arms = basis.arms_test.as_ref().map(|a| {
            (
                arms_welch(&a.best, &a.default, shift),
                a.best.len(),
                a.default.len(),
            )
        });
        if let Some((t, _, _)) = &arms {
            p = t.map(|t| t.0);
            improvement = t.map(|t| t.1);
        }
        let sig_test = p.is_some_and(|p| p < alpha);
        let counts = arms.as_ref().map(|a| (a.1, a.2));
        let ratio = improvement.map(|r| r.0);
        let reason = self.reason(basis, n, p, ratio, counts, alpha);
        Verdict {
            best,
            significant: sig_test,
            improvement,
            p_value: p,
            pairs: Some(n),
            reason,
            every_trial: arms.is_some(),
            confirm: None,
            knobs: Vec::new(),
            split: false,
        }
    }

    /// The verdict's sentence: significant or not, with the test that said so. `n` pairs;
    /// `p` the one-sided p-value; `ratio` the measured improvement (> 1 better); `counts`
    /// the arms test's trials of the best and the default when the check was that test.
    fn reason(
        &self,
        basis: &CheckBasis,
        n: usize,
        p: Option<f64>,
        ratio: Option<f64>,
        counts: Option<(usize, usize)>,
        alpha: f64,
    ) -> String {
        let sig_test = p.is_some_and(|p| p < alpha);
        let me = 100.0 * self.cfg.min_effect;
        let how = match counts {
            Some((nb, nd)) => format!(
                "over every trial of the two ({nb} of it, {nd} of the default; one-sided Welch \
                 t-test"
            ),
            None if basis.loaded_pairs => format!(
                "in {n} interleaved {} of loaded runs, no_load pooled (one-sided paired t-test",
                if n == 1 { "pair" } else { "pairs" }
            ),
            None => format!(
                "in {n} interleaved {} (one-sided",
                if n == 1 { "pair" } else { "pairs" }
            ),
        };
        let measured = 100.0 * (ratio.unwrap_or(1.0) - 1.0);
        if sig_test {
            format!(
                "significant: more than {me:.0}% better than the default {how} {} < {})",
                p_text(p),
                alpha
            )
        } else if counts.is_some() {
            format!(
                "keep the default: no significant improvement (more than {me:.0}% better: {how} \
                 {} ≥ {}; measured {measured:+.1}%)",
                p_text(p),
                alpha,
            )
        } else {
            format!(
                "keep the default: no significant improvement (more than {me:.0}% better: \
                 one-sided {} ≥ {} over {n} {}{}; measured {measured:+.1}%)",
                p_text(p),
                alpha,
                if n == 1 { "pair" } else { "pairs" },
                if basis.loaded_pairs {
                    " of loaded runs, no_load pooled"
                } else {
                    ""
                },
            )
        }
    }
}

/// The arms test of costs `a` (the best's) against `b` (the default's): the one-sided Welch
/// two-sample t-test (Welch 1947) of H0 mean(a) ≥ mean(b) − `shift` (at most
/// e^shift − 1 better), as (p-value, (improvement, 95% CI low, high)), improvement =
/// exp(mean(b) − mean(a)) with Welch's t interval; `None` with fewer than two of each.
pub(super) fn arms_welch(a: &[f64], b: &[f64], shift: f64) -> Option<(f64, (f64, f64, f64))> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let shifted: Vec<f64> = a.iter().map(|x| x + shift).collect();
    let t = stats::welch_less(&shifted, b)?;
    let m = stats::mean(a) - stats::mean(b);
    let se = (stats::variance(a) / a.len() as f64 + stats::variance(b) / b.len() as f64).sqrt();
    let half = stats::t_quantile(0.975, t.df)? * se;
    Some((
        t.p_value,
        ((-m).exp(), (-m - half).exp(), (-m + half).exp()),
    ))
}

/// `p = 0.012`, or `p = 2.1e-5` below 0.001 (three decimals would print a misleading 0.000).
pub(super) fn p_text(p: Option<f64>) -> String {
    match p {
        Some(p) if p < 0.001 => format!("p = {p:.1e}"),
        Some(p) => format!("p = {p:.3}"),
        None => "p = ?".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::solver;
    use super::*;
    use crate::tune::evaluator::Trial;

    fn trial(point: usize, cost: f64, penalty: f64) -> Trial {
        Trial {
            id: 0,
            point,
            runs: Vec::new(),
            value: (-cost).exp(),
            cost: cost + penalty,
            penalty,
            failed: None,
            refused: None,
            guards_broken: Vec::new(),
        }
    }

    /// Costs ln 1.0 (default 5) and ln 0.8 (setting 3, 20% better), each measured twice in
    /// the search, then two check pairs; one trial of the best, in the search and in the
    /// check, broke a guard rail by noise (a 0.6 penalty in its cost). The check tests the
    /// objective: the same verdict and p-value as without the penalties.
    #[test]
    fn a_guard_penalty_on_one_trial_does_not_enter_the_check() {
        let run = |pen: f64, feasible: bool| {
            let mut s = solver(&[]);
            let search = Step {
                point: 0,
                why: String::new(),
                check: false,
                part: Part::Full,
            };
            let check = Step {
                check: true,
                ..search.clone()
            };
            let b = 0.8f64.ln();
            for (p, c, pen) in [
                (5, 0.01, 0.0),
                (5, -0.01, 0.0),
                (3, b + 0.02, pen),
                (3, b - 0.02, 0.0),
            ] {
                s.observe(&search, &trial(p, c, pen));
            }
            s.core.incumbent = 3;
            for (p, c, pen) in [
                (5, 0.02, 0.0),
                (3, b, pen),
                (5, -0.02, 0.0),
                (3, b + 0.01, 0.0),
            ] {
                s.observe(&check, &trial(p, c, pen));
            }
            s.conclude(&|_| feasible);
            s.verdict().cloned().unwrap()
        };
        let (clean, noisy) = (run(0.0, true), run(0.6, true));
        assert!(clean.significant && noisy.significant, "{noisy:?}");
        let (p0, p1) = (clean.p_value.unwrap(), noisy.p_value.unwrap());
        assert!((p0 - p1).abs() < 1e-9 * p0, "{p0} {p1}");
        let (r0, r) = (clean.improvement.unwrap().0, noisy.improvement.unwrap().0);
        assert!((r0 - r).abs() < 1e-12, "{r0} {r}");
        assert!((r - 1.0 / 0.8).abs() < 0.02, "{r}");
        // The rails are judged on the best's means over all its trials, check included: a
        // best that breaks one there keeps the default, whatever the test would say.
        let vetoed = run(0.6, false);
        assert!(!vetoed.significant && vetoed.best == 3, "{vetoed:?}");
        assert!(
            vetoed.reason.contains("breaks a guard rail"),
            "{}",
            vetoed.reason
        );
    }

    #[test]
    fn the_arms_test_is_welchs_with_the_minimum_effect_inside() {
        // Costs (smaller is better) a = best, b = default; each sample variance 0.02, so
        // se = √(0.02/2 + 0.02/2) = 0.1414 with Welch df 2; t = (0.1 + ln 1.03 − 0.6) / se
        // = −3.3265, and a t with 2 df has CDF ½ + t / (2√(2 + t²)) = 0.0399.
        let (p, (r, lo, hi)) = arms_welch(&[0.0, 0.2], &[0.5, 0.7], 1.03f64.ln()).unwrap();
        assert!((p - 0.0399).abs() < 5e-4, "{p}");
        // Improvement e^0.5, 95% CI e^(0.5 ∓ 4.3027 · 0.1414).
        assert!((r - 0.5f64.exp()).abs() < 1e-9, "{r}");
        assert!(
            (lo - 0.897).abs() < 2e-3 && (hi - 3.030).abs() < 5e-3,
            "{lo} {hi}"
        );
        // Better by less than the minimum effect: not significant however many trials.
        let a: Vec<f64> = (0..50).map(|i| -0.02 + 0.01 * f64::from(i % 2)).collect();
        let b: Vec<f64> = (0..50).map(|i| 0.01 * f64::from(i % 2)).collect();
        let (p, _) = arms_welch(&a, &b, 1.03f64.ln()).unwrap();
        assert!(p > 0.5, "{p}");
        assert!(arms_welch(&[0.0], &[0.5, 0.7], 0.0).is_none());
    }
}
