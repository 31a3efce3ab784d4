//! The split check: the final check of the screen's two finalists at once, when its race
//! left them undecided (`Screen::split_runner`) and half the check's pairs have the power
//! for each one's effect (`Screen::split_has_power`).
//!
//! The check's fresh pairs alternate between the two: (default, best), (default, runner-up),
//! (default, best), … Each finalist is tested against the default on its own pairs alone, by
//! the check's test (`solver/check.rs`), at `alpha` / 2. The answer is the finalist that
//! passed, or, when both did, the one that measured better over all its trials, the check's
//! included (`Screen::final_score`); when neither passed, the default is kept.
//!
//! **Why.** At 20 runs on the seed surface most wrong answers were fifo_batch 1 (12% noise
//! per run, 15% worse than fifo_batch 8) winning a race of two or three trials each; the
//! check's own trials of it then measured it worse, and were thrown away. Split, the check's
//! runs are evidence for the pick as well as for the test. (Dev seeds 1001..2000 at 20 runs,
//! tunes found of 1000 on the seed surface: 968 before, 977 with the split alone; the held-out
//! figures with the pick of `Screen::flat_pick`: `examples/shootout-results.md`.)
//!
//! **Why it keeps the false "significant" rate.** A claim is made only for a finalist whose
//! own test rejected at `alpha` / 2; the pick may look at every trial, but the claim is
//! false only if one of the two tests rejected falsely, which has probability at most
//! 2 × `alpha` / 2 = `alpha` (Bonferroni's inequality, whatever the two tests' dependence),
//! so the rate is at most `alpha`. What the level does not cover: when both passed, the pick
//! between them looks at the same check trials as the reported improvement and its 95% CI,
//! which are then optimistic by that selection (the step after the check,
//! `solver/reduce.rs`, starts from that CI's low bound).

use super::check::{CheckBasis, Verdict, p_text};
use super::core::Core;
use super::{Phase, Step};
use crate::tune::evaluator::Part;

/// The two finalists of a split check, as tested.
pub(super) struct Finalists<'a> {
    /// The race's pick (the incumbent) and the runner-up, grid indices.
    pub best: usize,
    pub runner: usize,
    /// Where each one's pair variance comes from (`Screen::check_basis`).
    pub basis: [&'a CheckBasis; 2],
    /// Whether each keeps the guard rails on its mean metrics over all its trials.
    pub feasible: [bool; 2],
    /// True when the runner-up measured better than the best over all its trials.
    pub runner_better: bool,
    /// The weight of each one's own no_load in that measure (`Screen::no_load_weight`).
    pub weight: f64,
}

impl Core {
    /// Queues `n` fresh interleaved pairs whose second trial alternates between `best` (pairs
    /// 1, 3, …) and `runner` (pairs 2, 4, …), and enters the check phase.
    pub(super) fn queue_split_pairs(
        &mut self,
        best: usize,
        runner: usize,
        n: usize,
        why: &str,
        part: Part,
    ) {
        self.incumbent = best;
        self.runner_up = Some(runner);
        self.phase = Phase::Check;
        let (nb, nr) = (n.div_ceil(2), n / 2);
        for i in 0..n {
            let (point, who, k, of) = if i % 2 == 0 {
                (best, "best", i / 2 + 1, nb)
            } else {
                (runner, "runner-up", i / 2 + 1, nr)
            };
            self.queue.push_back(Step {
                point: self.default,
                why: if i == 0 {
                    format!(
                        "final check: default, {who}'s pair {k} of {of} ({why}; split with the \
                         runner-up)"
                    )
                } else {
                    format!("final check: default, {who}'s pair {k} of {of}")
                },
                check: true,
                part,
            });
            self.queue.push_back(Step {
                point,
                why: format!("final check: {who}, pair {k} of {of}"),
                check: true,
                part,
            });
        }
    }

    /// The check's pairs of `p`: (the default's cost, `p`'s cost), each of `p`'s check trials
    /// with the default's trial just before it.
    fn pairs_of(&self, p: usize) -> (Vec<f64>, Vec<f64>) {
        let (mut dc, mut pc) = (Vec::new(), Vec::new());
        let mut pending = None;
        for o in &self.check_obs {
            if o.point == self.default {
                pending = Some(o.cost);
            } else if let Some(d) = pending.take()
                && o.point == p
            {
                dc.push(d);
                pc.push(o.cost);
            }
        }
        (dc, pc)
    }

    /// Ends a split check (module docs) with the [`Verdict`] of the finalist it answers.
    pub(super) fn conclude_split(&mut self, f: &Finalists) {
        let half = self.cfg.alpha / 2.0;
        let test = |i: usize, p: usize| {
            let (dc, pc) = self.pairs_of(p);
            f.feasible[i].then(|| self.pair_test(p, &dc, &pc, f.basis[i], half))
        };
        let (vb, vr) = (test(0, f.best), test(1, f.runner));
        let sig = |v: &Option<Verdict>| v.as_ref().is_some_and(|v| v.significant);
        let take_runner = sig(&vr) && (!sig(&vb) || f.runner_better);
        let (chosen, other) = if take_runner { (vr, vb) } else { (vb, vr) };
        let other = match other {
            Some(o) if o.significant => format!(
                "also passed ({}); of the two, the answer had the lower Ratio over all its \
                 trials, the check's included, each divided by its no_load partly pooled (its \
                 own weighed {})",
                p_text(o.p_value),
                f.weight
            ),
            Some(o) => format!("did not pass ({})", p_text(o.p_value)),
            None => "breaks a guard rail on its mean metrics".to_string(),
        };
        let mut v = chosen.unwrap_or_else(|| {
            Verdict::keep_default(
                f.best,
                "keep the default: the best breaks a guard rail on its mean metrics over all \
                 its trials, the check's included",
            )
        });
        v.reason.push_str(&format!(
            "; the check's pairs were split between the two finalists, each tested on its \
             own at alpha / 2 = {half} (Bonferroni), and the other {other}"
        ));
        v.split = true;
        self.incumbent = v.best;
        self.finish(v);
    }
}
