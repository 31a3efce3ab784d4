//! The final check's first stage on a grid screened whole (a Ratio objective): the search's
//! own trials, before any fresh pair is spent.
//!
//! What it computes, exactly: for the answer `b` and the default `d`, each setting's mean
//! cost as the screen ranks it (mean ln loaded Time; after a "not flat" no_load verdict, its
//! own Ratio: mean ln loaded Time − mean ln no_load Time) and its standard error from its own
//! variance shrunk toward [`ASSUMED_NOISE`]² by [`PRIOR_DF`] df (a moderated variance, Smyth
//! 2004; df = [`PRIOR_DF`] + n − 1 per part), the parts' variances summed, df by
//! Welch–Satterthwaite. **Test**: one-sided t-test of H0 "`b` is at most `min_effect`
//! better than `d`" at level α₁ / m, where α₁ = [`PRECHECK_SHARE`] × `alpha` and m is the
//! number of settings the screen measured besides the default (Bonferroni: the answer was
//! selected among them on these very trials, so each of the m tests must hold at α₁ / m).
//! When it rejects, the answer is significant and no pair is run; when it does not, the
//! fresh-pair check runs at α₂ = `alpha` − α₁ (`solver/check.rs`). By the union bound the
//! two stages together reject a true H0 with probability at most α₁ + α₂ = `alpha`.
//!
//! Why: on the surfaces whose sweet spot is far better than the default (the seed disk's
//! fifo_batch 8 is 54% faster under io_load than its default 32) the fresh pairs of a
//! 24-run tune cost 4 to 8 runs to confirm what the screen's trials already show beyond
//! doubt; when this stage already rejects for the race's leader, the search keeps those runs
//! (`check_reserve`). The price: the trials are spread over the tune, so a drift is not
//! paired away (the Bonferroni level and the small α₁ are the margin; the drifting flat
//! surfaces measure it), and the pairs' own test has α₂, not `alpha`.

use super::check::p_text;
use super::{ASSUMED_NOISE, BayesOpt, PRIOR_DF, Verdict};
use crate::stats;

/// The share of the final check's `alpha` spent on the first stage (the search's trials);
/// the fresh pairs get the rest. (Dev seeds 1..1000, no_load-depends at 24 / 28 runs, the
/// drifting seed surface and the seed surface at 24, the flat surface's false "significant":
/// 0.1 624 / 694, 950 / 958, 3; **0.2 623 / 689, 960 / 970, 2**; 0.4 633 / 698, 956 / 973, 1.
/// The flat drifting surface: 0 of 1000 at each.)
pub const PRECHECK_SHARE: f64 = 0.2;

/// The first stage's outcome for one setting.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Precheck {
    /// One-sided p-value.
    pub p: f64,
    /// The level it must be below: α₁ / m.
    pub level: f64,
    /// Settings measured besides the default (the Bonferroni m).
    pub m: usize,
    /// Improvement ratio (> 1 better) with its 95% t interval.
    pub improvement: (f64, f64, f64),
    /// Loaded trials of the answer and of the default.
    pub trials: (usize, usize),
}

/// (variance of a mean, df) of each independent part of a setting's mean cost.
type Parts = Vec<(f64, f64)>;

/// (mean, variance of the mean, df) of costs `c`, the variance shrunk toward
/// [`ASSUMED_NOISE`]² by [`PRIOR_DF`] df; `None` when empty.
fn moderated(c: &[f64]) -> Option<(f64, f64, f64)> {
    if c.is_empty() {
        return None;
    }
    let n = c.len() as f64;
    let own = if c.len() >= 2 {
        stats::variance(c)
    } else {
        0.0
    };
    let v = (PRIOR_DF * ASSUMED_NOISE * ASSUMED_NOISE + (n - 1.0) * own) / (PRIOR_DF + n - 1.0);
    Some((stats::mean(c), v / n, PRIOR_DF + n - 1.0))
}

impl BayesOpt {
    /// True when the final check has the first stage: a Ratio on a grid screened whole.
    pub(super) fn prechecks(&self) -> bool {
        self.pools_no_load() && self.screen.as_ref().is_some_and(|s| !s.guided)
    }

    /// The level of the fresh pairs' test: `alpha`, less the first stage's share when there
    /// is one.
    pub(super) fn check_alpha(&self) -> f64 {
        if self.prechecks() {
            self.cfg.alpha * (1.0 - PRECHECK_SHARE)
        } else {
            self.cfg.alpha
        }
    }

    /// The first stage for `best` against the default, on the search's trials (see the
    /// module docs); `None` when there is no first stage or either has no trial.
    pub(super) fn precheck(&self, best: usize) -> Option<Precheck> {
        if !self.prechecks() || best == self.default {
            return None;
        }
        let (mb, mut vb, nb) = self.precheck_side(best)?;
        let (md, vd, nd) = self.precheck_side(self.default)?;
        vb.extend(vd);
        let (v, df) = stats::welch_sum(&vb)?;
        let shift = (1.0 + self.cfg.min_effect).ln();
        let se = v.sqrt();
        let p = stats::one_sided(mb - md + shift, se, df)?.p_value;
        let m = self.screened().len().max(1);
        let half = stats::t_quantile(0.975, df)? * se;
        let r = md - mb;
        Some(Precheck {
            p,
            level: PRECHECK_SHARE * self.cfg.alpha / m as f64,
            m,
            improvement: (r.exp(), (r - half).exp(), (r + half).exp()),
            trials: (nb, nd),
        })
    }

    /// One side of the first stage: `p`'s mean cost as the screen ranks it, the (variance of
    /// the mean, df) of each of its parts (loaded; and no_load after a "not flat" verdict),
    /// and its loaded trials.
    fn precheck_side(&self, p: usize) -> Option<(f64, Parts, usize)> {
        let loaded = self.screen_costs(p, false);
        let (m, v, df) = moderated(&loaded)?;
        if self.screen.as_ref().and_then(|s| s.flat) != Some(false) {
            return Some((m, vec![(v, df)], loaded.len()));
        }
        let (m0, v0, df0) = moderated(&self.screen_costs(p, true))?;
        Some((m - m0, vec![(v, df), (v0, df0)], loaded.len()))
    }

    /// The verdict "significant" when the first stage rejects for `best`, naming the test;
    /// `None` when it does not (or there is no first stage).
    pub(super) fn precheck_verdict(&self, best: usize) -> Option<Verdict> {
        let c = self.precheck(best).filter(|c| c.p < c.level)?;
        Some(Verdict {
            best,
            significant: true,
            improvement: Some(c.improvement),
            p_value: Some(c.p),
            pairs: None,
            reason: format!(
                "significant: more than {:.0}% better than the default on the search's own \
                 trials ({} of it, {} of the default; one-sided moderated t-test at a \
                 Bonferroni level over the {} settings screened: {} < {:.2e})",
                100.0 * self.cfg.min_effect,
                c.trials.0,
                c.trials.1,
                c.m,
                p_text(Some(c.p)),
                c.level
            ),
            every_trial: true,
            first_stage: Some(self.screen.as_ref().and_then(|s| s.flat) == Some(false)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Config, Phase};
    use super::*;
    use crate::tune::evaluator::Part;

    /// A Ratio screen over 4 settings (default 2), budget 12 trials of 2 runs (one no_load,
    /// one io_load run), with these loaded costs and ln no_load Times already measured.
    fn ratio_screen(loaded: &[(usize, f64)], no_load: &[(usize, f64)]) -> BayesOpt {
        let cfg = Config {
            budget: 12,
            check_pairs: 2,
            alpha: 0.05,
            min_effect: 0.03,
            seed: 1,
            minimize: true,
            runs_full: 2,
            runs_loaded: 1,
            runs_no_load: 1,
        };
        let coords = (0..4).map(|i| vec![f64::from(i) / 3.0]).collect();
        let mut s = BayesOpt::new(cfg, coords, 2);
        let sc = s.screen.as_mut().unwrap();
        sc.todo.clear();
        sc.loaded = loaded.to_vec();
        sc.no_load = no_load.to_vec();
        s.runs = loaded.len() + no_load.len();
        s
    }

    /// The default (2) once at ln 5.48, setting 0 three times at ln 4.70, 1 and 3 once.
    const LOADED: [(usize, f64); 6] = [
        (2, 5.48),
        (0, 4.70),
        (0, 4.70),
        (0, 4.70),
        (1, 5.2),
        (3, 5.3),
    ];

    #[test]
    fn the_first_stage_is_a_moderated_t_test_at_a_bonferroni_level() {
        let mut s = ratio_screen(&LOADED, &[]);
        s.screen.as_mut().unwrap().flat = Some(true);
        let c = s.precheck(0).unwrap();
        // Setting 0: 3 equal trials, variance (3 · 0.1² + 2 · 0) / 5 = 0.006, of the mean
        // 0.002 with 5 df; the default: one trial, the prior's 0.01 with 3 df. se = √0.012 =
        // 0.10954, Welch–Satterthwaite df = 0.012² / (0.002²/5 + 0.01²/3) = 4.21875; t =
        // (4.70 − 5.48 + ln 1.03) / se = −6.8506, P(T ≤ t) = 0.000976 (numerical integration
        // of the t density, independent of statrs).
        assert!((c.p - 0.000976).abs() < 2e-6, "{}", c.p);
        // m = 3 settings screened besides the default: level 0.2 · 0.05 / 3.
        assert_eq!(c.m, 3);
        assert!((c.level - 0.01 / 3.0).abs() < 1e-12, "{}", c.level);
        assert_eq!(c.trials, (3, 1));
        let (r, lo, hi) = c.improvement;
        assert!((r - 0.78f64.exp()).abs() < 1e-9, "{r}");
        assert!(lo < r && r < hi && lo > 1.0, "{lo} {hi}");
        // The fresh pairs' test gets the rest of alpha.
        assert!((s.check_alpha() - 0.04).abs() < 1e-12);
        // Not for the default itself.
        assert!(s.precheck(2).is_none());
    }

    #[test]
    fn after_a_not_flat_verdict_each_ratio_carries_its_own_no_load() {
        let d0 = 67.7f64.ln();
        // Setting 0's no_load 20% slower in one trial: its Ratio is better by ln 1.2 more,
        // and each side's variance gains its no_load's (one trial each: the prior's 0.01).
        let mut s = ratio_screen(&LOADED, &[(2, d0), (0, d0 + 1.2f64.ln())]);
        s.screen.as_mut().unwrap().flat = Some(false);
        let c = s.precheck(0).unwrap();
        let (r, _, _) = c.improvement;
        assert!((r - (0.78 + 1.2f64.ln()).exp()).abs() < 1e-9, "{r}");
        // se² = 0.002 + 0.01 + 0.01 + 0.01 = 0.032; t = (−0.78 − ln 1.2 + ln 1.03) / √0.032
        // = −5.0466; df = 0.032² / (0.002²/5 + 3 · 0.01²/3) = 10.16.
        let t = (-0.78 - 1.2f64.ln() + 1.03f64.ln()) / 0.032f64.sqrt();
        let df = 0.032 * 0.032 / (0.002 * 0.002 / 5.0 + 0.0001);
        let want = stats::one_sided(t, 1.0, df).unwrap().p_value;
        assert!((c.p - want).abs() < 1e-12, "{} {want}", c.p);
        assert!(c.p > 1e-4 && c.p < 1e-3, "{}", c.p);
        // A setting without a no_load trial has no Ratio of its own.
        assert!(s.precheck(1).is_none());
    }

    #[test]
    fn a_first_stage_that_rejects_ends_the_tune_without_pairs() {
        // The default measured three times too: p far below the level.
        let mut loaded = LOADED.to_vec();
        loaded.extend([(2, 5.50), (2, 5.46)]);
        let d0 = 67.7f64.ln();
        let mut s = ratio_screen(&loaded, &[(2, d0), (0, d0), (1, d0)]);
        let sc = s.screen.as_mut().unwrap();
        sc.flat = Some(true);
        sc.finalists = vec![0, 1];
        let c = s.precheck(0).unwrap();
        assert!(c.p < 0.1 * c.level, "{c:?}");
        // The reserve is released: the search may spend every run.
        assert_eq!(s.check_reserve(&|_| true), 0);
        // 11 of 24 runs spent: the runs the pairs no longer need go back to the search first.
        s.screen_check(&|_| true);
        assert_eq!(s.phase, Phase::Search);
        assert!(s.screen.as_ref().unwrap().released);
        let step = s.queue.front().unwrap();
        assert!(!step.check, "{}", step.why);
        // The budget spent: the verdict, on the search's own trials.
        s.queue.clear();
        s.runs = 24;
        s.screen_check(&|_| true);
        assert_eq!(s.phase, Phase::Done);
        let v = s.verdict.as_ref().unwrap();
        assert!(v.significant && v.best == 0 && v.pairs.is_none(), "{v:?}");
        assert!(v.reason.contains("search's own trials"), "{}", v.reason);
        assert!(
            v.reason.contains("Bonferroni level over the 3 settings"),
            "{}",
            v.reason
        );
        assert_eq!(v.p_value, Some(c.p));
    }

    #[test]
    fn a_first_stage_that_does_not_reject_leaves_the_fresh_pairs() {
        // Setting 0 only 8% better, noisy: the first stage cannot reject at α₁ / 3.
        let loaded = [
            (2, 5.48),
            (0, 5.40),
            (0, 5.30),
            (0, 5.45),
            (1, 5.6),
            (3, 5.7),
        ];
        let d0 = 67.7f64.ln();
        let mut s = ratio_screen(&loaded, &[(2, d0), (0, d0), (1, d0)]);
        let sc = s.screen.as_mut().unwrap();
        sc.flat = Some(true);
        sc.finalists = vec![0, 1];
        assert!(s.precheck(0).unwrap().p > 0.01);
        assert!(s.check_reserve(&|_| true) > 0);
        s.screen_check(&|_| true);
        assert_eq!(s.phase, Phase::Check);
        assert!(s.queue.iter().all(|st| st.check && st.part == Part::Loaded));
        assert_eq!(s.queue.len() % 2, 0);
        // A budget of 1000 trials is a bound: CHECK_CAP × check_pairs = 16 pairs at most.
        let mut s = ratio_screen(&loaded, &[(2, d0), (0, d0), (1, d0)]);
        let sc = s.screen.as_mut().unwrap();
        sc.flat = Some(true);
        sc.finalists = vec![0, 1];
        s.cfg.budget = 1000;
        s.screen_check(&|_| true);
        assert_eq!(s.queue.len(), 2 * super::super::CHECK_CAP * 2);
    }

    #[test]
    fn no_first_stage_for_loads() {
        let cfg = Config {
            budget: 12,
            check_pairs: 2,
            alpha: 0.05,
            min_effect: 0.03,
            seed: 1,
            minimize: false,
            runs_full: 1,
            runs_loaded: 1,
            runs_no_load: 0,
        };
        let coords = (0..4).map(|i| vec![f64::from(i) / 3.0]).collect();
        let mut s = BayesOpt::new(cfg, coords, 2);
        s.screen.as_mut().unwrap().loaded = LOADED.to_vec();
        assert!(s.precheck(0).is_none());
        assert!((s.check_alpha() - 0.05).abs() < 1e-12);
    }
}
