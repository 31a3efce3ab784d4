//! The incumbent's score ([`Core::score`]): a setting's own trials shrunk toward the
//! model's leave-one-out prediction from the other settings of its scheduler, plus
//! [`PENALTY`] posterior sds.

use super::core::Core;
use super::{ASSUMED_NOISE, PENALTY, PRIOR_DF};
use crate::stats;
use crate::tune::gp;

impl Core {
    /// Conservative score of a measured setting `p` (ln cost, smaller is better): the
    /// posterior of its mean when the model's leave-one-out prediction from every other
    /// setting, N(μ, τ²), is the prior and its own `n` trials the data, with their variance
    /// `v` moderated toward the pooled one by [`PRIOR_DF`] prior df (Smyth 2004); score =
    /// posterior mean + [`PENALTY`] posterior sd. Precision weighting makes the noise
    /// per-setting, which the GP's single noise term cannot: a noisy setting measured once
    /// leans on its neighbours, a quiet one measured often on its own trials. Without a model
    /// (too few settings measured), its own mean + [`PENALTY`] standard errors. `∞` if unmeasured.
    pub(super) fn score(&self, p: usize) -> f64 {
        let (m, v) = self.posterior(p);
        m + PENALTY * v.sqrt()
    }

    /// The posterior (mean, variance) of setting `p`'s mean ln cost behind [`Core::score`];
    /// `(∞, 0)` if unmeasured.
    pub(super) fn posterior(&self, p: usize) -> (f64, f64) {
        let key = self.obs.len();
        if let Some(&hit) = self
            .posteriors
            .borrow()
            .get(&p)
            .filter(|_| self.posteriors_at.get() == key)
        {
            return hit;
        }
        let post = self.compute_posterior(p);
        if self.posteriors_at.replace(key) != key {
            self.posteriors.borrow_mut().clear();
        }
        self.posteriors.borrow_mut().insert(p, post);
        post
    }

    fn compute_posterior(&self, p: usize) -> (f64, f64) {
        let c = self.costs(p);
        if c.is_empty() {
            return (f64::INFINITY, 0.0);
        }
        let pool = self
            .pooled_sd()
            .filter(|(_, df)| *df >= 2.0)
            .map_or(ASSUMED_NOISE, |(s, _)| s);
        let own_df = (c.len() - 1) as f64;
        let own = if c.len() >= 2 {
            stats::variance(&c)
        } else {
            0.0
        };
        // Floored: identical trials everywhere (whole-number Loads) must not give 0/0 below.
        let v = ((PRIOR_DF * pool * pool + own_df * own) / (PRIOR_DF + own_df)).max(1e-12);
        let n = c.len() as f64;
        let own_mean = stats::mean(&c);
        // The model's prediction from every other setting (leave this one out), as a prior
        // for this setting's mean, combined with its own trials by precision.
        // Only other settings of p's own scheduler, and at least two of them: different
        // schedulers are different code, and "the mean of the other schedulers" is no
        // prediction of one of them (with four schedulers measured once each, shrinking
        // toward it made the worst of the four score best).
        let mut kin: Vec<usize> = self
            .obs
            .iter()
            .map(|o| o.0)
            .filter(|&q| q != p && self.group(q) == self.group(p))
            .collect();
        kin.sort_unstable();
        kin.dedup();
        let prior = (self.model_ready() && kin.len() >= 2).then(|| {
            let (x, y): (Vec<Vec<f64>>, Vec<f64>) = self
                .obs
                .iter()
                .filter(|o| o.0 != p && self.group(o.0) == self.group(p))
                .map(|(q, c)| (self.coords[*q].clone(), *c))
                .unzip();
            gp::fit_predict_weights(&x, &y, std::slice::from_ref(&self.coords[p]))
        });
        let prior = prior.flatten();
        match prior {
            Some(m) => {
                // The prior's variance: the model's own sd, plus the noise the other settings'
                // trials carry into it at the pooled level (the prediction is a weighted sum of
                // them, weights summing to 1). The model's sd alone is in its own standardised
                // units: with a few settings of similar cost it could be far below one trial's
                // noise, and then the prior outweighed a setting's own trials so much that the
                // worst of four single trials scored best (its prior, the others' mean, was
                // the best of the four priors).
                let carried: f64 = m
                    .weights
                    .first()
                    .map_or(0.0, |w| w.iter().map(|a| a * a).sum());
                let tau2 = (m.sd[0] * m.sd[0] + pool * pool * carried).max(1e-12);
                let post = 1.0 / (n / v + 1.0 / tau2);
                (post * (n * own_mean / v + m.mean[0] / tau2), post)
            }
            None => (own_mean, v / n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::solver;
    use super::super::*;
    use crate::stats;

    #[test]
    fn a_single_lucky_trial_is_shrunk_toward_its_neighbours() {
        // Every setting once at ln cost 1.0 ± 0.05, and setting 6 replicated; setting 3 once at
        // 0.5, far below its neighbours.
        let mut obs: Vec<(usize, f64)> = (0..9)
            .filter(|&p| p != 3)
            .map(|p| (p, 1.0 + if p % 2 == 0 { 0.05 } else { -0.05 }))
            .collect();
        obs.push((3, 0.5));
        obs.extend([(6, 0.97), (6, 1.03), (6, 1.0)]);
        let s = solver(&obs);
        assert!(s.core.model_ready());
        let lucky = s.core.score(3);
        // Pulled up from 0.5 by the neighbours, and penalised for resting on one trial.
        assert!(lucky > 0.6, "{lucky}");
        // A well-replicated setting keeps its own mean (4 trials, mean 0.9875 + a small sd).
        let quiet = s.core.score(6);
        assert!((quiet - 1.0).abs() < 0.1, "{quiet}");
        // Without a model (two settings measured): own mean + PENALTY standard errors, the
        // sd pooled from the only replicated setting (6; df 3) since setting 3 has no df.
        let s = solver(&[(3, 0.5), (6, 1.05), (6, 0.97), (6, 1.03), (6, 1.0)]);
        assert!(!s.core.model_ready());
        let pool = stats::variance(&[1.05, 0.97, 1.03, 1.0]).sqrt();
        assert!((s.core.score(3) - (0.5 + PENALTY * pool)).abs() < 1e-12);
        // Unmeasured settings never win.
        assert_eq!(s.core.score(7), f64::INFINITY);
    }

    #[test]
    fn the_worst_of_four_schedulers_never_scores_best() {
        // The Hardening issue's tune: one trial each of none, mq-deadline, bfq (the default)
        // and kyber, io_load Loads 9216, 9382, 8135, 10056 (cost −ln Loads), one-hot coords.
        let cfg = SolverConfig {
            budget: 8,
            check_pairs: 2,
            alpha: 0.05,
            min_effect: 0.03,
            seed: 1,
            minimize: false,
            runs_full: 2,
            runs_loaded: 0,
            runs_no_load: 0,
        };
        let coords: Vec<Vec<f64>> = (0..4)
            .map(|i| (0..4).map(|j| f64::from(u8::from(i == j))).collect())
            .collect();
        let mut s = BayesOpt::new(cfg, coords, 2).with_groups(vec![0, 1, 2, 3]);
        s.core.obs = [(2, 8135.0), (0, 9216.0), (1, 9382.0), (3, 10056.0)]
            .iter()
            .map(|&(p, l): &(usize, f64)| (p, -l.ln()))
            .collect();
        let scores: Vec<f64> = (0..4).map(|p| s.core.score(p)).collect();
        // The ranking of the measurements, kyber first and bfq last (it was bfq first).
        for (a, b) in [(3, 1), (1, 0), (0, 2)] {
            assert!(scores[a] < scores[b], "{a} vs {b}: {scores:?}");
        }
        assert_eq!(s.core.pick_incumbent(&|_| true), 3);
    }
}
