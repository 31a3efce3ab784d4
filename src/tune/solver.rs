//! `BayesOpt`: our argmin [`Solver`] over the policy's grid of settings. Each `next_iter`
//! measures exactly one trial through the problem ([`Evaluator`]), so argmin's observers see
//! one line per trial and its checkpointing can save after each one.
//!
//! It runs one of two searches (`Search`) over a shared `Core` (the trials, the queue,
//! the incumbent). When the objective may be measured in parts (a Ratio or Loads;
//! `SolverConfig::runs_loaded` > 0) the search is the screen (`screen::Screen`);
//! otherwise the GP search (`gp_search::GpSearch`: [`crate::tune::gp`]'s expected
//! improvement with SMAC's intensification), every trial a full one. Both end in the final
//! check against the default (`solver/check.rs`, [`Verdict`]): a sweet spot is reported only
//! when it beats the default by the policy's minimum effect at its alpha, since on a noisy
//! disk the best-looking setting is often luck. The phases and their rules, step by step:
//! `docs/solver.md`.

use crate::tune::evaluator::{Evaluator, Part, Trial};
use argmin::core::{
    CostFunction, Error as ArgminError, IterState, KV, Problem, Solver, State, TerminationReason,
    TerminationStatus,
};
use serde::{Deserialize, Serialize};

mod check;
pub mod confirm;
mod core;
pub(crate) mod gp_search;
mod reduce;
mod score;
pub(crate) mod screen;
mod split_check;
use self::core::Core;
use check::CheckBasis;
pub use check::Verdict;
pub use reduce::{KnobFinding, KnobRecord};

/// Search stops when the largest expected improvement is below ln(1 + min_effect) / this.
pub(crate) const TOL_DIV: f64 = 10.0;

/// Posterior sds added to a setting's score when picking the incumbent (conservative:
/// noisy, rarely measured settings need more evidence to win).
pub(crate) const PENALTY: f64 = 1.5;

/// Prior degrees of freedom of the pooled variance when moderating one setting's variance
/// (Smyth 2004): a setting's own variance outweighs the pool once it has 5+ trials.
pub const PRIOR_DF: f64 = 3.0;

/// Per-trial sd of the ln cost assumed until two replicates exist (DESIGN.md: run-to-run
/// variation above 10% is common on real disks).
pub const ASSUMED_NOISE: f64 = 0.1;

/// The final check's power reserve (pairs for 90% power) is capped at budget / this, so an
/// early, noisy sd estimate cannot end the search before it starts.
pub(crate) const RESERVE_DIV: usize = 4;

/// The least share of the budget kept for the final check.
pub(crate) const CHECK_SHARE: f64 = 0.3;

/// The incumbent and its challenger are no longer separated once either has this many trials,
/// and a setting with this many is not measured again for its augmented expected improvement:
/// a tie at the minimum effect would otherwise take the whole search share of a large budget.
/// (20: the 2-D bowl at budget 80 keeps 95% of 400 seeds and 96% of the first 50, as without
/// a cap; 16 gave 94% of those 50, 12 gave 94% of 400.)
pub(crate) const SEPARATE_CAP: usize = 20;

/// Most trials the incumbent gets from intensification (more come from the final check).
pub(crate) const RACE_CAP: usize = 3;

/// argmin's state for our solver: the parameter is a grid index, the cost a trial's ln cost.
pub(crate) type TuneState = IterState<usize, (), (), (), (), f64>;

/// What the solver is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Phase {
    /// Looking for better settings (design, expected improvement, races).
    Search,
    /// Comparing the best setting with the default on fresh pairs.
    Check,
    /// After a significant check of a best that changed two or more knobs: testing whether
    /// each is needed (`solver/reduce.rs`).
    Reduce,
    /// Finished.
    Done,
}

/// One queued trial and why it runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Step {
    /// Grid index.
    point: usize,
    /// Why it runs, for the trial log.
    why: String,
    /// True for a trial of the final check.
    check: bool,
    /// Which of the policy's loads it runs.
    part: Part,
}

/// Tuning constants of the solver (the policy sets most of them).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct SolverConfig {
    /// Trials in all, check included.
    pub budget: usize,
    /// Fewest check pairs.
    pub check_pairs: usize,
    /// Test level.
    pub alpha: f64,
    /// Minimum effect as a fraction.
    pub min_effect: f64,
    /// Seed for the design and tie-breaks.
    pub seed: u64,
    /// True when the objective is minimised in its own unit (Ratio); false for Loads.
    pub minimize: bool,
    /// Load runs in one full trial (the policy's loads × its runs per load).
    pub runs_full: usize,
    /// Load runs in a [`Part::Loaded`] trial; 0 when the objective may not be measured in
    /// parts (then the search is the GP's, whatever the grid).
    pub runs_loaded: usize,
    /// Load runs in a [`Part::NoLoad`] trial; non-zero only for a Ratio objective, the only
    /// one whose no_load the screen may pool ([`screen`]'s flatness test).
    pub runs_no_load: usize,
}

/// The search a tune runs: the GP's, or the screen when the objective may be measured in
/// parts and the screen fits the budget ([`screen::Screen::if_it_fits`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
enum Search {
    /// Every trial a full one, picked by the GP's expected improvement.
    Gp(gp_search::GpSearch),
    /// Loaded runs of every setting, a race, the no_load flatness test.
    Screen(screen::Screen),
}

/// The Bayesian-optimisation solver over a finite grid (see the module docs).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct BayesOpt {
    core: Core,
    search: Search,
    /// The confirm of a known sweet spot before the search, if any (`solver/confirm.rs`).
    #[serde(default)]
    confirm: Option<confirm::Confirm>,
    /// The smallest change that carries the effect (`solver/reduce.rs`).
    #[serde(default)]
    reduce: reduce::Reduce,
}

impl BayesOpt {
    /// A solver over grid points with `coords`, starting from `default`.
    pub(crate) fn new(cfg: SolverConfig, coords: Vec<Vec<f64>>, default: usize) -> Self {
        let mut core = Core::new(cfg, coords, default);
        let search = match screen::Screen::if_it_fits(&mut core) {
            Some(s) => Search::Screen(s),
            None => Search::Gp(gp_search::GpSearch::default()),
        };
        BayesOpt {
            core,
            search,
            confirm: None,
            reduce: reduce::Reduce::default(),
        }
    }

    /// Confirms `known` against the default before any search
    /// (`solver/confirm.rs`); `None`, the default, or a point off the grid: a plain search.
    pub(crate) fn with_confirm(mut self, known: Option<confirm::KnownPoint>) -> Self {
        self.confirm = known.and_then(|k| confirm::Confirm::start(&mut self.core, k));
        self
    }

    /// Sets each point's scheduler group ([`crate::tune::space::Space::scheduler_groups`]).
    pub(crate) fn with_groups(mut self, groups: Vec<usize>) -> Self {
        self.core.groups = groups;
        self
    }

    /// The verdict, once the solver is done.
    pub(crate) fn verdict(&self) -> Option<&Verdict> {
        self.core.verdict.as_ref()
    }

    /// The current incumbent (grid index).
    pub(crate) fn incumbent(&self) -> usize {
        self.core.incumbent
    }

    /// Decides what to measure next when the queue is empty. `feasible` says whether a
    /// measured setting keeps the guard rails.
    fn plan(&mut self, feasible: &dyn Fn(usize) -> bool) {
        if self.core.phase != Phase::Search {
            return;
        }
        match &mut self.search {
            Search::Gp(g) => g.plan(&mut self.core, feasible),
            Search::Screen(s) => s.plan(&mut self.core, feasible),
        }
    }

    /// Takes in a trial's result (search or check).
    fn observe(&mut self, step: &Step, t: &Trial) {
        let core = &mut self.core;
        core.trials += 1;
        core.runs += t.runs.len();
        if t.failed.is_some()
            && t.point != core.default
            && let Some(c) = self.confirm.as_mut().filter(|c| c.running())
        {
            let why = t.failed.clone().unwrap_or_default();
            c.failed(core, &mut self.search, &why);
            return;
        }
        if t.failed.is_some() && core.phase == Phase::Reduce {
            return self.reduce_failed(t);
        }
        if t.failed.is_some() {
            // A failed reference of the GP search leaves nothing to compare any setting with
            // (the screen stops so in its plan; the caller reports the failure, `tune::run`).
            let reference_lost = match &mut self.search {
                Search::Gp(g) => {
                    g.observe_failure(t.point);
                    t.point == core.default && core.costs(core.default).is_empty()
                }
                Search::Screen(_) => false,
            };
            core.observe_failure(step, t, reference_lost);
            return;
        }
        if let Search::Screen(s) = &mut self.search {
            s.observe_parts(core, step.part, t, step.check);
        }
        core.observe_cost(step, t);
    }

    /// The final check's view of the evidence for `best` (see `solver/check.rs`).
    fn check_basis(&self, best: usize) -> CheckBasis {
        match &self.search {
            Search::Gp(_) => CheckBasis::full_trials(),
            Search::Screen(s) => s.check_basis(&self.core, best),
        }
    }

    /// Ends the check when its queue is empty: the test, if the best keeps the rails (a split
    /// check's two tests, `solver/split_check.rs`, when its pairs were split); then,
    /// for a significant best that changed two or more knobs, the step that tests each
    /// (`solver/reduce.rs`).
    fn conclude(&mut self, feasible: &dyn Fn(usize) -> bool) {
        let best = self.core.incumbent;
        if let Some(c) = self.confirm.as_mut().filter(|c| c.running()) {
            c.conclude(&mut self.core, &mut self.search, feasible(best));
            return;
        }
        if let (Some(runner), Search::Screen(s)) = (self.core.runner_up, &self.search) {
            let basis = [self.check_basis(best), self.check_basis(runner)];
            self.core.conclude_split(&split_check::Finalists {
                best,
                runner,
                basis: [&basis[0], &basis[1]],
                feasible: [feasible(best), feasible(runner)],
                runner_better: s.final_score(&self.core, runner) < s.final_score(&self.core, best),
                weight: screen::Screen::no_load_weight(&self.core),
            });
            let answer = usize::from(self.core.incumbent == runner);
            self.start_reduce(&basis[answer]);
            return;
        }
        let basis = self.check_basis(best);
        self.core.conclude_if_feasible(feasible(best), &basis);
        self.start_reduce(&basis);
    }
}

/// The mean Time of a trial's runs, s (the trial log's figure for a part; NaN without runs).
fn mean_time(runs: &[crate::bench::Run]) -> f64 {
    if runs.is_empty() {
        return f64::NAN;
    }
    runs.iter().map(|r| r.time_s).sum::<f64>() / runs.len() as f64
}

/// The trial log's name of a part.
fn part_name(p: Part) -> &'static str {
    match p {
        Part::Full => "full",
        Part::Loaded => "loaded",
        Part::NoLoad => "no_load",
    }
}

/// A problem that can measure trials: the tune's [`Evaluator`], or a wrapper in the shoot-out.
pub(crate) trait Measure {
    /// Measures one trial of grid point `point`.
    fn measure(&self, point: usize) -> crate::Result<Trial>;
    /// Measures `part` of one trial of `point` ([`Part::Full`]: [`Measure::measure`]).
    fn measure_part(&self, point: usize, part: Part) -> crate::Result<Trial> {
        match part {
            Part::Full => self.measure(point),
            _ => Err(crate::Error::Failed(
                "internal: this problem measures full trials only".into(),
            )),
        }
    }
    /// True when `point` satisfies the guard rails on its mean metrics.
    fn feasible(&self, point: usize) -> bool;
}

impl Measure for Evaluator<'_> {
    fn measure(&self, point: usize) -> crate::Result<Trial> {
        self.trial(point)
    }
    fn measure_part(&self, point: usize, part: Part) -> crate::Result<Trial> {
        self.trial_part(point, part)
    }
    fn feasible(&self, point: usize) -> bool {
        Evaluator::feasible(self, point)
    }
}

impl CostFunction for Evaluator<'_> {
    type Param = usize;
    type Output = f64;

    /// One trial's cost (ln objective, smaller better, plus guard penalties).
    fn cost(&self, p: &usize) -> Result<f64, ArgminError> {
        self.trial(*p).map(|t| t.cost).map_err(ArgminError::new)
    }
}

impl<O: Measure> Solver<O, TuneState> for BayesOpt {
    fn name(&self) -> &str {
        "sweetspot GP-BO with intensification"
    }

    fn init(
        &mut self,
        _problem: &mut Problem<O>,
        state: TuneState,
    ) -> Result<(TuneState, Option<KV>), ArgminError> {
        // The screen plans every trial itself (the default first); a confirm runs before
        // either search, which starts when it does not hold.
        if self.confirm.is_none()
            && let Search::Gp(g) = &mut self.search
        {
            g.init(&mut self.core);
        }
        Ok((state.param(self.core.default), None))
    }

    fn next_iter(
        &mut self,
        problem: &mut Problem<O>,
        state: TuneState,
    ) -> Result<(TuneState, Option<KV>), ArgminError> {
        let feasible = |p: usize| problem.problem.as_ref().is_some_and(|o| o.feasible(p));
        // A feasibility veto on the incumbent (guard rails on its mean metrics).
        let inc = self.core.incumbent;
        if self.core.phase == Phase::Search && inc != self.core.default && !feasible(inc) {
            self.core.incumbent = self.core.default;
        }
        if self.core.queue.is_empty() {
            self.plan(&feasible);
        }
        let Some(step) = self.core.queue.pop_front() else {
            if self.core.phase == Phase::Check {
                self.conclude(&feasible);
            }
            if !self.core.queue.is_empty() {
                // The check queued the reduction's first pairs: measured from the next
                // iteration on.
                return Ok((state, None));
            }
            return Ok((
                state.terminate_with(TerminationReason::SolverConverged),
                None,
            ));
        };
        let t = problem.problem("cost_count", |o| {
            o.measure_part(step.point, step.part)
                .map_err(ArgminError::new)
        })?;
        let feasible = |p: usize| problem.problem.as_ref().is_some_and(|o| o.feasible(p));
        self.observe(&step, &t);
        // The screen's incumbent is its leader: the trial just observed may have made one (the
        // log line shows the incumbent after this trial, as the check's lines do).
        if let Search::Screen(s) = &self.search
            && self.core.phase == Phase::Search
            && !step.check
            && let Some(lead) = s.ranked(&self.core, &feasible).first()
        {
            self.core.incumbent = lead.point;
        }
        if self.core.phase == Phase::Check && self.core.queue.is_empty() {
            self.conclude(&feasible);
        } else if self.core.phase == Phase::Reduce && self.core.queue.is_empty() {
            self.conclude_knob(&feasible);
        }
        let kv = argmin::kv!(
            "point" => step.point as u64;
            "why" => step.why.clone();
            "value" => t.value;
            "cost" => t.cost;
            "incumbent" => self.core.incumbent as u64;
            "trials" => self.core.trials as u64;
            "runs" => self.core.runs as u64;
            "check" => step.check;
            "part" => part_name(step.part);
            "time" => mean_time(&t.runs);
            "failed" => t.failed.clone().unwrap_or_default();
            "guards" => t.guards_broken.join("; ");
        );
        Ok((state.param(step.point).cost(t.cost), Some(kv)))
    }

    fn terminate(&mut self, _state: &TuneState) -> TerminationStatus {
        if self.core.phase == Phase::Done {
            return TerminationStatus::Terminated(TerminationReason::SolverConverged);
        }
        if crate::signals::interrupted() {
            return TerminationStatus::Terminated(TerminationReason::Interrupt);
        }
        TerminationStatus::NotTerminated
    }
}

#[cfg(test)]
pub(super) mod tests;
