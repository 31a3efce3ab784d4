//! The final check (phase 3 of [`BayesOpt`]): the incumbent against the default on fresh
//! interleaved pairs, and the [`Verdict`].
//!
//! What it computes, exactly (DESIGN.md: name a test for what it computes):
//! - **Mean**: the mean over the n fresh pairs of d = ln cost(best) − ln cost(default), each
//!   pair a default trial then a best trial, measured after the search.
//! - **Variance** of one pair's d: pooled by df from (a) the n differences themselves and (b)
//!   every trial of the two settings, the search's included (their variances summed, Welch df)
//!   ([`stats::paired_variance`]); never from other settings. The df is the larger of the
//!   two sources' (they share trials). So the search trials that selected the best inform the
//!   variance, not the mean. After the screen, whose search trials are mostly parts, (b) is
//!   the sum of each setting's ln loaded Time variance and ln no_load Time variance over all
//!   its trials, search and check (a Ratio's ln is their difference), df by
//!   Welch–Satterthwaite over the four ([`stats::paired_variance_arms`]); for Loads, the two
//!   settings' own costs.
//! - **Pairs**: full trials (each Ratio divided by its own trial's no_load, whatever the
//!   screen's flatness test found); for a Loads objective after the screen, the loaded runs
//!   only (no_load is no part of Loads).
//! - **Test**: one-sided t-test of H0 "the best is at most `min_effect` better", i.e.
//!   mean d ≥ −ln(1 + min_effect), against H1 mean d < −ln(1 + min_effect), at `alpha`. The
//!   minimum effect is inside the test, not a separate check of the point estimate.

use super::{BayesOpt, Phase, Step};
use crate::stats;
use crate::tune::evaluator::Part;
use serde::{Deserialize, Serialize};

/// The check takes at most this many times `check_pairs` pairs, unless 90% power needs more
/// (`check_size`: 90% power at the search's estimated effect).
pub const CHECK_CAP: usize = 8;

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
        }
    }
}

impl BayesOpt {
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
                    why.push_str("; the default scored best, but this setting measured better");
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
        let (Some(md), Some(mb)) = (self.mean_cost(self.default), self.mean_cost(self.incumbent))
        else {
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

    pub(super) fn conclude(&mut self) {
        let best = self.incumbent;
        let d: Vec<&(usize, f64, f64)> = self
            .check_obs
            .iter()
            .filter(|o| o.0 == self.default)
            .collect();
        let b: Vec<&(usize, f64, f64)> = self.check_obs.iter().filter(|o| o.0 == best).collect();
        let n = d.len().min(b.len());
        let dc: Vec<f64> = d[..n].iter().map(|o| o.1).collect();
        let bc: Vec<f64> = b[..n].iter().map(|o| o.1).collect();
        // The sd of a pair's difference: from the check pairs and from every trial of the two
        // settings (search included), never from other settings (noise differs between them).
        let d: Vec<f64> = bc.iter().zip(&dc).map(|(b, d)| b - d).collect();
        let all = |p: usize| -> Vec<f64> {
            let mut v = self.costs(p);
            v.extend(self.check_obs.iter().filter(|o| o.0 == p).map(|o| o.1));
            v
        };
        let sd_df = match self.screen_arms(best) {
            // The screen's trials of the two settings are mostly parts: their arms come from
            // the parts' variances (screen::BayesOpt::screen_arms).
            Some(arms) => stats::paired_variance_arms(&d, arms),
            None => stats::paired_variance(&d, &all(best), &all(self.default)),
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
        let p = test.as_ref().map(|t| t.p_value);
        let ratio = improvement.map(|r| r.0);
        let sig_test = p.is_some_and(|p| p < self.cfg.alpha);
        let me = 100.0 * self.cfg.min_effect;
        let reason = if sig_test {
            format!(
                "significant: more than {me:.0}% better than the default in {n} interleaved pairs \
                 (one-sided {} < {})",
                p_text(p),
                self.cfg.alpha
            )
        } else {
            format!(
                "keep the default: no significant improvement (more than {me:.0}% better: \
                 one-sided {} ≥ {} over {n} pairs; measured {:+.1}%)",
                p_text(p),
                self.cfg.alpha,
                100.0 * (ratio.unwrap_or(1.0) - 1.0)
            )
        };
        self.finish(Verdict {
            best,
            significant: sig_test,
            improvement,
            p_value: p,
            pairs: Some(n),
            reason,
        });
    }
}

/// `p = 0.012`, or `p = 2.1e-5` below 0.001 (three decimals would print a misleading 0.000).
fn p_text(p: Option<f64>) -> String {
    match p {
        Some(p) if p < 0.001 => format!("p = {p:.1e}"),
        Some(p) => format!("p = {p:.3}"),
        None => "p = ?".into(),
    }
}
