//! The screen's plan: each time the queue is empty, the first [`Stage`] that has a trial to
//! run queues it; when none has, the answer goes to the final check. The budget is in load
//! runs ([`Budget`]).

use super::super::Verdict;
use super::super::check::CHECK_CAP;
use super::super::core::Core;
use super::{
    CHECK_MAX_SHARE, DEFAULT_SHARE, FLAT_RETEST_MAX, FLAT_RETEST_PER, FLAT_TEST_AFTER, FLAT_Z,
    FLAT_Z_GUIDED, FLAT_Z_NEAR, Flatness, GUIDED_RACE_SHARE, Grid, Screen, estimate,
};
use crate::stats;
use crate::tune::evaluator::Part;

/// The screen's stages, in the order [`Screen::plan`] asks them for a trial.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// The default's reference trial (a full one for a Ratio, its loaded part for Loads);
    /// a failed reference ends the tune.
    Reference,
    /// Each setting's loaded runs once, in the shuffled order of `todo`.
    Screen,
    /// On a guided grid, the GP's picks while they are expected to improve, keeping
    /// [`GUIDED_RACE_SHARE`] of the search's runs for the race.
    Guided,
    /// The arms test's default: it keeps [`DEFAULT_SHARE`] of the leader's trials.
    ArmsDefault,
    /// During the race after a flat test, with runs to spare: the finalists' and the
    /// default's no_load kept in step with their loaded trials ([`FLAT_RETEST_PER`]).
    InStepRetest,
    /// The race (LUCB) on the loaded cost, after a flat no_load too. While the flatness test
    /// is open it stops once both finalists have [`FLAT_TEST_AFTER`] loaded trials each.
    Race,
    /// A leader the race raised after a flat test has its no_load tested too.
    NewLeader,
    /// A separated race after a flat test, with runs to spare: one more no_load trial of
    /// the least-measured of the finalists and the default, and the test again (at most
    /// [`FLAT_RETEST_MAX`] each).
    DecidedRetest,
    /// The no_load flatness test (Ratio only): a no_load trial of each finalist, then the
    /// verdict ([`FLAT_Z`]; [`FLAT_Z_GUIDED`] on a guided grid).
    FlatnessTest,
    /// no_load differs: the runs left go to full trials of the finalists, the less certain
    /// first.
    FinalistsFull,
}

impl Stage {
    /// Every stage, in plan order.
    const ALL: [Stage; 10] = [
        Stage::Reference,
        Stage::Screen,
        Stage::Guided,
        Stage::ArmsDefault,
        Stage::InStepRetest,
        Stage::Race,
        Stage::NewLeader,
        Stage::DecidedRetest,
        Stage::FlatnessTest,
        Stage::FinalistsFull,
    ];
}

/// What a stage did.
enum Planned {
    /// Nothing to run: ask the next stage.
    Pass,
    /// A trial is queued, or the tune has ended.
    Done,
    /// The flatness test changed the budget (flat: the check's pairs are loaded runs): plan
    /// again from the start.
    Again,
}

/// The runs of one plan, in load runs.
struct Budget {
    /// One full trial's runs.
    full: usize,
    /// One loaded trial's runs.
    loaded: usize,
    /// One no_load trial's runs.
    no_load: usize,
    /// The budget's runs.
    total: usize,
    /// The runs the search may use: the budget less the check's reserve.
    search: usize,
    /// Runs kept for the flatness test: a no_load trial of each of two finalists; once
    /// no_load was found flat, one for a new leader the race may still raise.
    keep: usize,
}

impl Budget {
    /// True when a trial of `cost` runs fits after `runs`, the flatness test's runs kept.
    fn fits(&self, runs: usize, cost: usize) -> bool {
        runs + cost + self.keep <= self.search
    }

    /// True when the runs left leave room for a no_load trial, a loaded one and one more of
    /// each (a retest that does not starve the race).
    fn spare(&self, runs: usize) -> bool {
        runs + 2 * (self.no_load + self.loaded) <= self.search
    }
}

impl Screen {
    /// Decides the screen's next trial, or starts the check.
    pub(in crate::tune::solver) fn plan(
        &mut self,
        core: &mut Core,
        feasible: &dyn Fn(usize) -> bool,
    ) {
        let b = self.budget(core, feasible);
        // The incumbent is the screen's leader (what an interrupted tune reports).
        if let Some(lead) = self.ranked(core, feasible).first() {
            core.incumbent = lead.point;
        }
        for stage in Stage::ALL {
            match self.stage(stage, core, feasible, &b) {
                Planned::Pass => {}
                Planned::Done => return,
                Planned::Again => return self.plan(core, feasible),
            }
        }
        self.check(core, feasible);
    }

    /// This plan's [`Budget`].
    fn budget(&self, core: &Core, feasible: &dyn Fn(usize) -> bool) -> Budget {
        let full = core.cfg.runs_full;
        let no_load = core.cfg.runs_no_load;
        let total = core.cfg.budget * full;
        let keep = match self.flatness {
            Flatness::Open if Self::pools_no_load(core) => 2 * no_load,
            Flatness::Flat => no_load,
            _ => 0,
        };
        Budget {
            full,
            loaded: core.cfg.runs_loaded,
            no_load,
            total,
            search: total.saturating_sub(self.check_reserve(core, feasible)),
            keep,
        }
    }

    /// Runs `stage`: queues its trial, if it has one.
    fn stage(
        &mut self,
        stage: Stage,
        core: &mut Core,
        feasible: &dyn Fn(usize) -> bool,
        b: &Budget,
    ) -> Planned {
        let flat = self.flatness == Flatness::Flat;
        let queued = match stage {
            Stage::Reference => return self.reference(core, b),
            Stage::Screen => self.screen_next(core, b),
            Stage::Guided => {
                self.grid == Grid::Guided
                    && b.fits(core.runs + self.race_kept(b), b.loaded)
                    && self
                        .guided_pick(core)
                        .map(|(p, why)| core.push(p, Part::Loaded, why))
                        .is_some()
            }
            Stage::ArmsDefault => self.arms_default(core, feasible, b),
            Stage::InStepRetest => {
                flat && b.spare(core.runs)
                    && self
                        .flat_retest(core, feasible, FLAT_RETEST_PER)
                        .map(|p| {
                            self.retest(core, p, "one more no_load trial (in step with the race)")
                        })
                        .is_some()
            }
            Stage::Race => self.race(core, feasible, b),
            Stage::NewLeader => self.new_leader(core, feasible, b),
            Stage::DecidedRetest => {
                flat && b.spare(core.runs)
                    && self
                        .flat_retest(core, feasible, usize::MAX)
                        .map(|p| {
                            self.retest(core, p, "one more no_load trial (the race is decided)")
                        })
                        .is_some()
            }
            Stage::FlatnessTest => return self.flatness_test(core, feasible, b),
            Stage::FinalistsFull => self.finalists_full(core, feasible, b),
        };
        if queued { Planned::Done } else { Planned::Pass }
    }

    /// [`Stage::Reference`].
    fn reference(&mut self, core: &mut Core, b: &Budget) -> Planned {
        let unmeasured = self.costs(core.default, false).is_empty();
        if core.failed.contains(&core.default) && unmeasured {
            core.finish(Verdict::keep_default(
                core.default,
                "keep the default: its reference trial failed, nothing to compare with",
            ));
            return Planned::Done;
        }
        if unmeasured && b.fits(core.runs, 0) {
            // Loads involve no no_load: its loaded runs are the whole reference.
            let (part, why) = if Self::pools_no_load(core) {
                (Part::Full, "screen: the default (reference)")
            } else {
                (Part::Loaded, "screen: the default (the reference)")
            };
            core.push(core.default, part, why);
            return Planned::Done;
        }
        Planned::Pass
    }

    /// [`Stage::Screen`]: the next setting of `todo` that has not failed and fits. On a
    /// guided grid the race's share ([`GUIDED_RACE_SHARE`]) stays kept, as for the
    /// GP's picks: the neighbours of a default with many knobs are many.
    fn screen_next(&mut self, core: &mut Core, b: &Budget) -> bool {
        let race = self.race_kept(b);
        while !self.todo.is_empty() {
            let p = self.todo.remove(0);
            if core.failed.contains(&p) || !b.fits(core.runs + race, b.loaded) {
                continue;
            }
            core.push(p, Part::Loaded, "screen: each setting once");
            return true;
        }
        false
    }

    /// Runs the screen keeps for the race: [`GUIDED_RACE_SHARE`] of the search's on a guided
    /// grid, none on a grid screened whole.
    fn race_kept(&self, b: &Budget) -> usize {
        match self.grid {
            Grid::Guided => (GUIDED_RACE_SHARE * b.search as f64) as usize,
            Grid::Whole => 0,
        }
    }

    /// [`Stage::ArmsDefault`].
    fn arms_default(
        &mut self,
        core: &mut Core,
        feasible: &dyn Fn(usize) -> bool,
        b: &Budget,
    ) -> bool {
        if !self.arms_test(core) || !b.fits(core.runs, b.loaded) {
            return false;
        }
        let ranked = self.ranked(core, feasible);
        let nd = self.costs(core.default, false).len() as f64;
        let Some(l) = ranked.iter().find(|c| c.point != core.default) else {
            return false;
        };
        let nl = self.costs(l.point, false).len() as f64;
        if nd >= DEFAULT_SHARE * nl {
            return false;
        }
        core.push(
            core.default,
            Part::Loaded,
            "race: the default, kept in step with the leader",
        );
        true
    }

    /// [`Stage::Race`]: after a flat no_load too (the check's pairs of loaded runs then need
    /// fewer runs than the full pairs kept for them, and the race gets the rest).
    fn race(&mut self, core: &mut Core, feasible: &dyn Fn(usize) -> bool, b: &Budget) -> bool {
        let open = self.flatness == Flatness::Open;
        let flat = self.flatness == Flatness::Flat;
        let stop_for_test =
            Self::pools_no_load(core) && open && self.finalists_ready(core, feasible);
        if !(open || flat) || stop_for_test || !b.fits(core.runs, b.loaded) {
            return false;
        }
        let Some(p) = self.race_pick(core, feasible) else {
            return false;
        };
        core.push(p, Part::Loaded, "race: leader or closest challenger");
        true
    }

    /// [`Stage::NewLeader`]: the test is run again over the new finalists.
    fn new_leader(
        &mut self,
        core: &mut Core,
        feasible: &dyn Fn(usize) -> bool,
        b: &Budget,
    ) -> bool {
        if self.flatness != Flatness::Flat {
            return false;
        }
        let Some(l) = self.ranked(core, feasible).first().map(|c| c.point) else {
            return false;
        };
        if l == core.default || !self.costs(l, true).is_empty() || core.runs + b.no_load > b.total {
            return false;
        }
        self.flatness = Flatness::Open;
        core.push(l, Part::NoLoad, "no_load test: a new leader");
        true
    }

    /// [`Stage::FlatnessTest`].
    fn flatness_test(
        &mut self,
        core: &mut Core,
        feasible: &dyn Fn(usize) -> bool,
        b: &Budget,
    ) -> Planned {
        if !Self::pools_no_load(core) || self.flatness != Flatness::Open {
            return Planned::Pass;
        }
        let finalists = self.finalists(core, feasible);
        if let Some(&p) = finalists.iter().find(|&&p| self.costs(p, true).is_empty())
            && core.runs + b.no_load <= b.search
        {
            core.push(p, Part::NoLoad, "no_load test: a finalist");
            return Planned::Done;
        }
        self.decide_flat(core, finalists);
        if self.loaded_check(core) {
            // Flat: the check's pairs are loaded runs, and the race may use what the full
            // pairs kept for them no longer need.
            return Planned::Again;
        }
        Planned::Pass
    }

    /// [`Stage::FinalistsFull`].
    fn finalists_full(
        &mut self,
        core: &mut Core,
        feasible: &dyn Fn(usize) -> bool,
        b: &Budget,
    ) -> bool {
        if self.flatness != Flatness::Differs
            || core.runs + b.full > b.search
            || self.finalists_decided(core, feasible)
        {
            return false;
        }
        let p = self
            .finalists
            .iter()
            .filter_map(|&p| self.estimate_of(p).map(|e| (p, e.1)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|x| x.0);
        let Some(p) = p else {
            return false;
        };
        core.push(
            p,
            Part::Full,
            "no_load may depend on the setting: a full trial of a finalist",
        );
        true
    }

    /// The flatness test's finalists: the best two by the leader's rule, less the default.
    pub(in crate::tune::solver) fn finalists(
        &self,
        core: &Core,
        feasible: &dyn Fn(usize) -> bool,
    ) -> Vec<usize> {
        self.ranked(core, feasible)
            .iter()
            .take(2)
            .map(|c| c.point)
            .filter(|&p| p != core.default)
            .collect()
    }

    /// True on a screened grid when both finalists have [`FLAT_TEST_AFTER`] loaded trials:
    /// the race stops there for the first flatness test.
    fn finalists_ready(&self, core: &Core, feasible: &dyn Fn(usize) -> bool) -> bool {
        if self.grid == Grid::Guided {
            return false;
        }
        let f = self.finalists(core, feasible);
        f.len() == 2
            && f.iter()
                .all(|&p| self.costs(p, false).len() >= FLAT_TEST_AFTER)
    }

    /// The setting whose no_load the flatness test measures again: of the two finalists and
    /// the default, the one with the fewest no_load trials, if it has fewer than
    /// [`FLAT_RETEST_MAX`] and fewer than 1 + its loaded trials / `per` (`usize::MAX`: no
    /// such bound). `None` on a guided grid.
    fn flat_retest(
        &self,
        core: &Core,
        feasible: &dyn Fn(usize) -> bool,
        per: usize,
    ) -> Option<usize> {
        if self.grid == Grid::Guided {
            return None;
        }
        let mut cands = self.finalists(core, feasible);
        cands.push(core.default);
        cands
            .into_iter()
            .filter(|&p| {
                let n = self.costs(p, true).len();
                let bound = 1 + self.costs(p, false).len() / per.max(1);
                n < FLAT_RETEST_MAX && (per == usize::MAX || n < bound)
            })
            .min_by_key(|&p| self.costs(p, true).len())
    }

    /// Queues a no_load trial of `p` and opens the flatness test again.
    fn retest(&mut self, core: &mut Core, p: usize, why: &str) {
        self.flatness = Flatness::Open;
        core.push(p, Part::NoLoad, format!("no_load test: {why}"));
    }

    /// Runs of one check pair as the check's reserve plans it.
    pub(super) fn pair_runs(&self, core: &Core) -> usize {
        if self.plans_full_pairs(core) {
            2 * core.cfg.runs_full
        } else {
            2 * core.cfg.runs_loaded
        }
    }

    /// True when the check's reserve is planned in pairs of full trials: a Ratio whose
    /// no_load the flatness test has not found flat, except on a guided grid while the test
    /// is still open, where it is planned in pairs of loaded runs (the flat case), so that
    /// the GP's picks and the race are not starved by full pairs a flat verdict would not
    /// need; a "differs" verdict there is checked on the full pairs that still fit (at least
    /// one, [`Screen::check`]). (Dev seeds 1..1000 at 16 runs, where a 9-setting grid takes
    /// the guided screen: the seed surface 760 → 878 found, its drifting twin 766 → 860, two
    /// basins 474 → 671, no_load-depends 304 → 413; the flat surfaces' false "significant" 6
    /// / 3 → 8 / 2 of 1000; the 2-D bowl at 80 runs, seeds 1..200, 98% → 98%, its drifting
    /// twin 72% → 73%. Planned so on a grid screened whole as well, the seed surface at 24
    /// runs went 965 → 969 but no_load-depends 548 → 508.)
    pub(in crate::tune::solver) fn plans_full_pairs(&self, core: &Core) -> bool {
        let open_guided = self.grid == Grid::Guided && self.flatness == Flatness::Open;
        Self::pools_no_load(core) && !self.loaded_check(core) && !open_guided
    }

    /// Runs kept for the final check: the pairs that 90% power needs at the leader's
    /// estimated effect over the default (shrunk by a quarter for the winner's curse, less
    /// the minimum effect; per-setting variances as the race's), at least `check_pairs`, at
    /// most [`CHECK_MAX_SHARE`] of the budget's runs.
    pub(super) fn check_reserve(&self, core: &Core, feasible: &dyn Fn(usize) -> bool) -> usize {
        if self.arms_test(core) {
            return 0;
        }
        let per = self.pair_runs(core);
        let total = core.cfg.budget * core.cfg.runs_full;
        let most =
            ((CHECK_MAX_SHARE * total as f64) as usize / per.max(1)).max(core.cfg.check_pairs);
        let ranked = self.ranked(core, feasible);
        let lead = ranked.iter().find(|c| c.point != core.default);
        // The default's cost as the leader's is ranked (its own Ratio after a "differs"
        // verdict).
        let n = match (lead, self.estimate_of(core.default)) {
            (Some(l), Some((md, _))) => {
                let mut v = self.loaded_sd(l.point).powi(2) + self.loaded_sd(core.default).powi(2);
                if self.plans_full_pairs(core) {
                    // A full pair's Ratio carries both settings' no_load noise too.
                    v += 2.0 * super::ASSUMED_NOISE * super::ASSUMED_NOISE;
                }
                let delta = 0.75 * (md - l.mean) - (1.0 + core.cfg.min_effect).ln();
                pairs_for_power(core, v, delta, most, self.trials_held(core, l.point))
            }
            _ => core.cfg.check_pairs,
        };
        // On a grid of settings that change two or more knobs, the step after the check
        // (`solver/reduce.rs`) keeps room for its tests too.
        core.with_reduce_reserve(n.clamp(core.cfg.check_pairs, most), most, per)
    }

    /// The sd of one loaded trial of `p` (ln units): its own, shrunk toward
    /// [`super::ASSUMED_NOISE`] as the screen's standard errors are.
    fn loaded_sd(&self, p: usize) -> f64 {
        let c = self.costs(p, false);
        estimate(&c).map_or(super::ASSUMED_NOISE, |(_, se)| se * (c.len() as f64).sqrt())
    }

    /// True when a split check of `n` pairs (`solver/split_check.rs`) keeps the power a
    /// whole check has for a large effect: each finalist's share, n / 2 pairs of loaded runs,
    /// gives 90% power at alpha / 2 for three quarters of the effect the search measured for
    /// it, less the minimum effect, by the normal approximation (the pair's sd as the
    /// search's trials estimate it, taken as known: the t quantile at the few df held before
    /// the pairs asks for more than the test, whose df grows with the pairs, needs). Without
    /// it a modest effect, which one finalist's whole check could have shown, would be lost
    /// to the split.
    pub(in crate::tune::solver) fn split_has_power(
        &self,
        core: &Core,
        best: usize,
        runner: usize,
        n: usize,
    ) -> bool {
        let Some((md, _)) = self.estimate_of(core.default) else {
            return false;
        };
        let k = (n / 2) as f64;
        let z = stats::normal_quantile(1.0 - core.cfg.alpha / 2.0) + stats::normal_quantile(0.9);
        [best, runner].iter().all(|&p| {
            self.estimate_of(p).is_some_and(|(m, _)| {
                let v = self.loaded_sd(p).powi(2) + self.loaded_sd(core.default).powi(2);
                let delta = 0.75 * (md - m) - (1.0 + core.cfg.min_effect).ln();
                k >= 1.0 && z * v.sqrt() / k.sqrt() <= delta
            })
        })
    }

    /// The fewest trials that any part of the check's variance has before its pairs: of the
    /// leader `lead` and the default, the loaded runs, and for pairs of full trials their
    /// no_load runs too. The check's variance pools those trials' variances (Welch df, at
    /// least the smallest part's df: `stats::paired_variance_arms`), so after n pairs of the
    /// kind the plan expects its df is at least this + n − 1 (see [`pairs_for_power`]). On a
    /// guided grid whose flatness test is still open the plan expects loaded pairs; if the
    /// test then says "not flat", the full pairs' df may be lower than planned: the reserve
    /// was then too small, never the test's level (the test uses its real df).
    pub(super) fn trials_held(&self, core: &Core, lead: usize) -> usize {
        let full = self.plans_full_pairs(core);
        [lead, core.default]
            .iter()
            .flat_map(|&p| {
                let no_load = full.then(|| self.costs(p, true).len());
                std::iter::once(self.costs(p, false).len()).chain(no_load)
            })
            .min()
            .unwrap_or(0)
    }

    /// The flatness test's z of `p`: its mean ln no_load Time less the default's, over the
    /// standard error of the difference (each setting's variance shrunk toward
    /// [`super::ASSUMED_NOISE`]² by [`super::PRIOR_DF`] df); `None` unless both ran no_load.
    pub(in crate::tune::solver) fn flat_z(&self, core: &Core, p: usize) -> Option<f64> {
        let (m, se) = estimate(&self.costs(p, true))?;
        let (m0, se0) = estimate(&self.costs(core.default, true))?;
        Some((m - m0) / (se * se + se0 * se0).sqrt())
    }

    /// The flatness test's threshold in standard errors: [`FLAT_Z_NEAR`] on a near-whole
    /// grid, [`FLAT_Z_GUIDED`] on another guided grid, else [`FLAT_Z`].
    fn flat_threshold(&self, core: &Core) -> f64 {
        match self.grid {
            Grid::Guided if Self::near_whole(core) => FLAT_Z_NEAR,
            Grid::Guided => FLAT_Z_GUIDED,
            Grid::Whole => FLAT_Z,
        }
    }

    /// The flatness test on the finalists' no_load (see the module docs); its finding goes
    /// to the verdict's note.
    pub(in crate::tune::solver) fn decide_flat(&mut self, core: &mut Core, finalists: Vec<usize>) {
        let d = estimate(&self.costs(core.default, true));
        let mut differ = Vec::new();
        for &p in &finalists {
            if let (Some((m, _)), Some((m0, _)), Some(z)) =
                (estimate(&self.costs(p, true)), d, self.flat_z(core, p))
                && z.abs() > self.flat_threshold(core)
            {
                differ.push(format!("{:+.0}%", 100.0 * (m - m0).exp_m1()));
            }
        }
        let flat = differ.is_empty();
        let note = if flat {
            "no_load flat at the default and the finalists: pooled".to_string()
        } else {
            format!(
                "no_load may depend on the setting ({} {} vs the default's, more than {} \
                 standard errors): each setting ranked by its own Ratio, not a pooled no_load",
                if differ.len() == 1 {
                    "a finalist's"
                } else {
                    "the finalists'"
                },
                differ.join(", "),
                self.flat_threshold(core)
            )
        };
        self.flatness = if flat {
            Flatness::Flat
        } else {
            Flatness::Differs
        };
        self.finalists = finalists;
        core.note = Some(note);
    }

    /// Picks the answer and queues the check (or keeps the default).
    fn check(&mut self, core: &mut Core, feasible: &dyn Fn(usize) -> bool) {
        // After a "differs" verdict only the default and the finalists have Ratios; after a
        // "flat" one, the pick weighs each one's own no_load (`Screen::flat_pick`).
        let pick = if self.flatness == Flatness::Flat {
            self.flat_pick(core, feasible).first().copied()
        } else {
            None
        };
        let best = pick
            .or_else(|| self.ranked(core, feasible).first().map(|c| c.point))
            .unwrap_or(core.default);
        if best == core.default {
            core.finish(Verdict::keep_default(
                core.default,
                "keep the default: no significant improvement (the default ranked best in the \
                 screen)",
            ));
            return;
        }
        // Loads do not involve no_load: their pairs run the loaded part only. A Ratio's pairs
        // are full trials, each divided by its own no_load whatever the flatness test said.
        let (part, per) = if Self::pools_no_load(core) && !self.loaded_check(core) {
            (Part::Full, core.cfg.runs_full)
        } else {
            (Part::Loaded, core.cfg.runs_loaded)
        };
        let total = core.cfg.budget * core.cfg.runs_full;
        let left = total.saturating_sub(core.runs);
        let n = core
            .check_share(best, left / (2 * per))
            .min(CHECK_CAP * core.cfg.check_pairs);
        if self.arms_test(core) {
            // The race spent the runs; any left are more pairs, none needed.
            core.queue_pairs(best, n, "against the screen's best", part);
            return;
        }
        // Pairs of full trials: a "differs" verdict that came late (a new leader's test or a
        // retest after a "flat" one, or the first test on a guided grid, whose reserve was
        // planned in pairs of loaded runs) may leave room for fewer than `check_pairs`; the
        // check then runs on those that fit, at least one: the pairs give the mean, and the
        // variance of a pair's difference comes from every trial of the two settings as
        // always (`conclude`).
        let need = if part == Part::Full {
            1
        } else {
            core.cfg.check_pairs.max(1)
        };
        if n < need {
            core.finish(Verdict::keep_default(
                best,
                "keep the default: no budget left for the final check",
            ));
            return;
        }
        if n < core.cfg.check_pairs
            && let Some(note) = core.note.as_mut()
        {
            note.push_str(&format!(
                "; runs left for {n} of the {} pairs of full trials asked for: the check's \
                 variance leans on every trial of the two settings",
                core.cfg.check_pairs
            ));
        }
        let why = "against the screen's best";
        match self.split_runner(core, feasible, best) {
            Some(runner)
                if n >= 2
                    && part == Part::Loaded
                    && self.split_has_power(core, best, runner, n) =>
            {
                core.queue_split_pairs(best, runner, n, why, part)
            }
            _ => core.queue_pairs(best, n, why, part),
        }
    }
}

/// Pairs that 90% power needs for a one-sided paired t-test at `alpha` to find an effect of
/// `delta` (ln units) with `v` the variance of a pair's difference: at least
/// max(`check_pairs`, 2), at most `most`; `most` when `delta` ≤ 0.
///
/// The t quantile's df at n pairs is `held` + n − 1, where `held` is the fewest trials any
/// part of the variance had before the pairs ([`Screen::trials_held`]): the check's df is
/// the larger of its pairs' n − 1 and the Welch–Satterthwaite df of the two settings' trials
/// (`stats::paired_variance_arms`), and a Welch df is at least its smallest part's (n − 1
/// alone, as before, asked for a third pair that a large effect did not need: at 20 runs on
/// the seed surface that left the race one run, and a lucky fifo_batch 1 won). (Dev seeds
/// 1..1000, tunes found of 1000: at 20 runs, the grid screened whole, the seed surface 914 →
/// 936, its drifting twin 888 → 923, no_load-depends 503 → 501; at 24 runs 965 → 969, 958 →
/// 952, 548 → 563; at 16 runs, guided, unchanged; the noisy flat surfaces' false
/// "significant" within 1 of before at each.)
pub(super) fn pairs_for_power(core: &Core, v: f64, delta: f64, most: usize, held: usize) -> usize {
    if delta <= 0.0 {
        return most;
    }
    let mut n = core.cfg.check_pairs.max(2);
    while n < most {
        let df = (held + n - 1) as f64;
        let t = stats::t_quantile(1.0 - core.cfg.alpha, df).unwrap_or(f64::INFINITY);
        if (t + 1.2816) * v.sqrt() / (n as f64).sqrt() <= delta {
            break;
        }
        n += 1;
    }
    n
}
