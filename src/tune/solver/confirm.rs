//! Confirming a known sweet spot before any search (`tune --confirm`, and the daemon's
//! retune of a device that already has one): a fleet tunes one board per model, and a new
//! kernel or a new board of that model needs a check, not a search.
//!
//! The known setting goes against the default first, on fresh interleaved pairs of full
//! trials, with the final check's test (`solver/check.rs`: a one-sided paired t-test of
//! "more than `min_effect` better"). If it holds, the tune ends there, with that evidence.
//! If it does not, its trials join the search's as search trials (the default's and the
//! known setting's), the search runs with the policy's whole budget on top of the confirm's
//! trials, and the search's own final check decides.
//!
//! **Level.** A confirm tune may make two tests of "better than the default" (the confirm,
//! then the search's check), so their levels add up to the policy's alpha (Bonferroni): the
//! confirm gets [`CONFIRM_ALPHA_SHARE`] of it, the search's check the rest. On a device where
//! nothing beats the default the tune's false "significant" rate stays at most alpha, as a
//! plain tune's. The shoot-out measures it (`examples/shootout-results.md`).

use super::check::CheckBasis;
use super::core::Core;
use super::{Phase, Search, Step};
use crate::tune::evaluator::Part;
use serde::{Deserialize, Serialize};

/// The fewest interleaved pairs a confirm makes (the policy's `check_pairs` when larger):
/// two pairs leave the paired t-test about 2 df, three about 4, whose one-sided 1% quantile
/// (3.75 against 6.96) lets a 2× improvement at 10% run-to-run noise pass in nearly every
/// tune (the shoot-out's confirm rows: the seed surface's known spot holds in 100% of tunes).
pub const CONFIRM_MIN_PAIRS: usize = 3;

/// The most of the budget's trials a confirm takes: a known sweet spot whose stored
/// improvement is small needs many pairs for power, and a confirm dearer than half a
/// search is no shortcut.
pub const CONFIRM_MAX_SHARE: f64 = 0.5;

/// A known sweet spot to confirm: its grid point and, if known, the improvement it was
/// stored with (> 1 better: default ÷ best for a Ratio, best ÷ default for Loads), which
/// sizes the confirm ([`confirm_pairs`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KnownPoint {
    /// Grid index.
    pub point: usize,
    /// The stored improvement ratio, if any.
    pub improvement: Option<f64>,
}

/// The interleaved pairs a confirm of a sweet spot stored with `improvement` makes under a
/// policy of `check_pairs`, `budget` trials, level `alpha` and `min_effect`: the fewest
/// that give 90% power to the paired test at alpha × [`CONFIRM_ALPHA_SHARE`] for three quarters of
/// the stored effect (a stored improvement is a search's winner, so shrunk as the final
/// check shrinks the search's), at the assumed per-trial sd [`super::ASSUMED_NOISE`] (no
/// trial of this device is measured yet), within [`CONFIRM_MIN_PAIRS`] and
/// [`CONFIRM_MAX_SHARE`] of the budget. Without an improvement, [`CONFIRM_MIN_PAIRS`].
pub fn confirm_pairs(
    check_pairs: usize,
    budget: usize,
    alpha: f64,
    min_effect: f64,
    improvement: Option<f64>,
) -> usize {
    let least = check_pairs.max(CONFIRM_MIN_PAIRS);
    let most = least.max((CONFIRM_MAX_SHARE * budget as f64 / 2.0) as usize);
    let Some(r) = improvement.filter(|r| r.is_finite() && *r > 0.0) else {
        return least;
    };
    let margin = 0.75 * r.ln() - (1.0 + min_effect).ln();
    if margin <= 0.0 {
        return most;
    }
    let sd_d = super::ASSUMED_NOISE * 2f64.sqrt();
    (least..=most)
        .find(|&n| {
            let t = crate::stats::t_quantile(1.0 - alpha * CONFIRM_ALPHA_SHARE, n as f64)
                .unwrap_or(f64::INFINITY);
            (t + 1.2816) * sd_d / (n as f64).sqrt() <= margin
        })
        .unwrap_or(most)
}

/// The share of the policy's alpha the confirm's test gets; the search's final check, when
/// the confirm does not hold, gets the rest (Bonferroni over the two tests: their levels add
/// up to alpha). A small share keeps the search's power when the known spot is gone, and
/// sends a known spot that only nearly holds (a best that moved a step) to the search.
/// (Dev seeds 1..200 of the 4-, 9- and 27-setting surfaces; known spot right / moved a step /
/// gone, success: at 0.5 the scheduler surface 92 / 71 / 70% (a plain tune 84%), the seed
/// surface 100 / 13 / 98%; at 0.3 94 / 79 / 80%, 100 / 29 / 98%; at **0.2** 94 / 84 / 84%,
/// 100 / 42 / 98% (12 runs when right); at 0.1 94 / 90 / 90%, 100 / 56 / 98%, where a right
/// spot on no_load-depends costs 21 runs, not 16. False "significant" on the flat surfaces,
/// held-out seeds 10001..10400 and 20001..20400: at most 17 of 400 at 0.5 and at 0.2.)
pub const CONFIRM_ALPHA_SHARE: f64 = 0.2;

/// What the confirm found, in the verdict ([`super::Verdict::confirm`]) and the report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfirmOutcome {
    /// Grid index of the known sweet spot.
    pub point: usize,
    /// True when it beat the default by more than the minimum effect at `alpha`: the tune
    /// ended there. False: the search ran.
    pub held: bool,
    /// Improvement ratio (> 1 better) with its 95% CI, from the confirm's pairs.
    pub improvement: Option<(f64, f64, f64)>,
    /// One-sided p-value of the paired test.
    pub p_value: Option<f64>,
    /// Interleaved (default, known) pairs measured.
    pub pairs: usize,
    /// The test's level: the policy's alpha × [`CONFIRM_ALPHA_SHARE`].
    pub alpha: f64,
    /// Load runs the confirm took, no_load included.
    pub runs: usize,
    /// Why it did not hold (the test's sentence, or a failed trial); `None` when it held.
    pub why_not: Option<String>,
}

/// A test level rounded to 9 decimals, so that a share of 0.05 reads 0.01 in the report,
/// not 0.010000000000000002.
fn level(x: f64) -> f64 {
    (x * 1e9).round() / 1e9
}

/// The confirm's state inside [`super::BayesOpt`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Confirm {
    /// Grid index of the known sweet spot.
    point: usize,
    /// Pairs queued.
    pairs: usize,
    /// True once it has ended (held or not).
    done: bool,
    /// The policy's alpha, shared between the confirm and the search's check.
    alpha: f64,
}

impl Confirm {
    /// Starts the confirm of `known` on `core`: its share of the level
    /// ([`CONFIRM_ALPHA_SHARE`]) and its pairs ([`confirm_pairs`]). `None` when its point is the default or
    /// not a grid point (then the tune is a plain search at the policy's level).
    pub(super) fn start(core: &mut Core, known: KnownPoint) -> Option<Confirm> {
        let point = known.point;
        if point == core.default || point >= core.coords.len() {
            return None;
        }
        let c = &core.cfg;
        let n = confirm_pairs(
            c.check_pairs,
            c.budget,
            c.alpha,
            c.min_effect,
            known.improvement,
        );
        let alpha = core.cfg.alpha;
        core.cfg.alpha = level(alpha * CONFIRM_ALPHA_SHARE);
        core.phase = Phase::Check;
        core.incumbent = point;
        for i in 1..=n {
            for (p, who) in [(core.default, "default"), (point, "the known sweet spot")] {
                core.queue.push_back(Step {
                    point: p,
                    why: format!("confirm: {who}, pair {i} of {n}"),
                    check: true,
                    part: Part::Full,
                });
            }
        }
        Some(Confirm {
            point,
            pairs: n,
            done: false,
            alpha,
        })
    }

    /// True while the confirm's pairs are being measured.
    pub(super) fn running(&self) -> bool {
        !self.done
    }

    /// Ends the confirm once its pairs are measured: the final check's test on them (if the
    /// known setting keeps the guard rails, `feasible`). Held: the tune ends with that
    /// verdict. Not held: the search starts ([`Confirm::hand_over`]).
    pub(super) fn conclude(&mut self, core: &mut Core, search: &mut Search, feasible: bool) {
        core.conclude_if_feasible(feasible, &CheckBasis::full_trials());
        let Some(v) = core.verdict.clone() else {
            return;
        };
        let outcome = ConfirmOutcome {
            point: self.point,
            held: v.significant,
            improvement: v.improvement,
            p_value: v.p_value,
            pairs: v.pairs.unwrap_or(0),
            alpha: core.cfg.alpha,
            runs: core.runs,
            why_not: (!v.significant).then(|| v.reason.clone()),
        };
        self.done = true;
        if v.significant {
            let mut v = v;
            v.reason = format!("the known sweet spot holds: {}", v.reason);
            v.confirm = Some(outcome);
            core.verdict = Some(v);
            return;
        }
        self.hand_over(core, search, outcome);
    }

    /// Ends the confirm because a trial of the known setting failed: the search starts.
    pub(super) fn failed(&mut self, core: &mut Core, search: &mut Search, why: &str) {
        core.queue.clear();
        if !core.failed.contains(&self.point) {
            core.failed.push(self.point);
        }
        let outcome = ConfirmOutcome {
            point: self.point,
            held: false,
            improvement: None,
            p_value: None,
            pairs: 0,
            alpha: core.cfg.alpha,
            runs: core.runs,
            why_not: Some(format!("a trial of the known sweet spot failed ({why})")),
        };
        self.done = true;
        self.hand_over(core, search, outcome);
    }

    /// The search takes over: the confirm's trials become search trials (the core's full
    /// trials, the screen's parts), the budget grows by the trials the confirm took, and the
    /// search starts from its own first stage with them in hand.
    fn hand_over(&self, core: &mut Core, search: &mut Search, outcome: ConfirmOutcome) {
        core.verdict = None;
        core.cfg.alpha = level(self.alpha - core.cfg.alpha);
        core.phase = Phase::Search;
        core.incumbent = core.default;
        core.confirmed = Some(outcome);
        let taken = std::mem::take(&mut core.check_obs);
        core.cfg.budget += taken.len();
        core.obs_penalty.resize(core.obs.len(), 0.0);
        for t in taken {
            core.obs.push((t.point, t.cost));
            core.obs_penalty.push(0.0);
        }
        match search {
            Search::Gp(g) => g.init(core),
            Search::Screen(s) => s.adopt_check_parts(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::sim::SimDevice;
    use crate::tune::evaluator::NoRecord;
    use crate::tune::policy::{self, Policy};
    use crate::tune::space::Space;
    use crate::tune::{Options, TuneOutcome, optimise};
    use std::path::Path;

    fn quick() -> Policy {
        policy::resolve(
            "quick",
            Path::new("/nonexistent"),
            crate::trust::Origin::Named,
        )
        .unwrap()
    }

    /// A tune of the seed surface (seed `seed`) confirming its `fifo_batch` = `fb`, stored
    /// with `improvement`; the grid, the index of `fb`, the outcome.
    fn confirm_on_seed_surface(fb: i64, improvement: f64, seed: u64) -> (Space, TuneOutcome) {
        let surface = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml");
        let mut sim = SimDevice::open(&surface, seed).unwrap();
        let pol = quick();
        let space = Space::build(&crate::bench::Testbed::space(&sim), &pol, None).unwrap();
        let point = space
            .points
            .iter()
            .position(|p| p["fifo_batch"].to_string() == fb.to_string())
            .unwrap();
        let known = KnownPoint {
            point,
            improvement: Some(improvement),
        };
        let opts = Options {
            seed,
            confirm: Some(known),
            ..Options::default()
        };
        let out = optimise(&mut sim, &space, &pol, &mut NoRecord, opts).unwrap();
        (space, out)
    }

    #[test]
    fn a_known_spot_that_holds_ends_the_tune_after_its_pairs() {
        let (space, out) = confirm_on_seed_surface(8, 2.26, 7);
        let v = out.verdict.unwrap();
        let c = v.confirm.clone().unwrap();
        assert!(v.significant && c.held, "{v:?}");
        assert_eq!(space.points[v.best]["fifo_batch"].to_string(), "8");
        // 3 pairs of full trials (no_load + io_load), nothing else; the test at a fifth of 0.05.
        assert_eq!(
            (out.trials.len(), out.runs, c.pairs, c.runs),
            (6, 12, 3, 12)
        );
        assert_eq!(c.alpha, 0.01, "{c:?}");
        assert!(c.p_value.unwrap() < 0.01 && c.why_not.is_none(), "{c:?}");
        assert!(
            v.reason
                .starts_with("the known sweet spot holds: significant"),
            "{v:?}"
        );
    }

    #[test]
    fn a_known_spot_that_does_not_hold_hands_its_trials_to_the_search() {
        // fifo_batch 256 is no better than the default 32 on the seed surface.
        let (space, out) = confirm_on_seed_surface(256, 2.26, 7);
        let v = out.verdict.unwrap();
        let c = v.confirm.clone().unwrap();
        assert!(!c.held && c.why_not.is_some(), "{c:?}");
        assert_eq!((c.pairs, c.runs), (3, 12));
        // The search found the real sweet spot, with the policy's budget on top of the
        // confirm's 6 trials, tested at the rest of alpha.
        let best = space.points[v.best]["fifo_batch"].to_string();
        assert!(v.significant && (best == "8" || best == "2"), "{v:?}");
        assert!(out.trials.len() > 6, "{}", out.trials.len());
        assert!(out.runs > 12 && out.runs <= 12 + 24, "{}", out.runs);
        assert!(v.reason.contains("< 0.04"), "{}", v.reason);
    }

    #[test]
    fn the_confirm_is_sized_by_the_stored_improvement() {
        // A large stored effect: the fewest pairs; none: the fewest too.
        assert_eq!(
            confirm_pairs(2, 12, 0.05, 0.03, Some(2.26)),
            CONFIRM_MIN_PAIRS
        );
        assert_eq!(confirm_pairs(2, 12, 0.05, 0.03, None), CONFIRM_MIN_PAIRS);
        assert_eq!(confirm_pairs(4, 12, 0.05, 0.03, None), 4);
        // A 1.2× effect at 10% noise needs more than half of 32 trials: capped at 8 pairs.
        assert_eq!(confirm_pairs(2, 32, 0.05, 0.03, Some(1.2)), 8);
        // A 1.5× one at level 0.01: (t₀.₉₉ + 1.28) × 0.141 / √n ≤ 0.75 ln 1.5 − ln 1.03 =
        // 0.275 first at n = 6 (t 3.14: 0.255; at 5, t 3.36: 0.294).
        assert_eq!(confirm_pairs(2, 32, 0.05, 0.03, Some(1.5)), 6);
        // An effect below the minimum: the most the budget allows.
        assert_eq!(confirm_pairs(2, 40, 0.05, 0.03, Some(1.01)), 10);
    }
}
