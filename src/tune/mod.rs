//! The optimiser loop: find a device's sweet spot for a policy.
//!
//! ```text
//! policy ─► space (grid) ─► argmin Executor ─► BayesOpt (our Solver)
//!                                │                 │ one trial per iteration
//!                                │                 ▼
//!                     observers (log, progress)   Evaluator ─► Testbed (sim or real)
//!                                                              Recorder (SQLite)
//! ```
//!
//! - [`policy`]: the TOML policies (built in, `/etc/sweetspot/policies/`, or a path).
//! - [`space`]: the grid of settings (scheduler as an outer choice, log2 integer grids).
//! - [`evaluator`]: one trial → its cost, guard rails, failed runs.
//! - [`gp`]: the Gaussian-process surrogate and expected improvement.
//! - [`solver`]: `solver::BayesOpt`, one of two searches over a shared core:
//!   `solver::screen` for objectives that can be measured in parts (screen, race, no_load
//!   flatness test), `solver::gp_search` (expected improvement with intensification) for
//!   the rest; its `score` submodule the incumbent's score, its `check` submodule the final
//!   check and [`solver::Verdict`].
//! - [`observe`]: argmin observers (one-line log per trial, progress bar).
//! - [`run`]: the `tune` command's work: lock, tunes row, restore, sweet spot (a killed
//!   tune's recovery is [`crate::undo`]'s).
//! - [`known`]: where a known sweet spot comes from for `tune --confirm` and the daemon
//!   (the store, a profile), and its point on the grid; `solver`'s `confirm` submodule
//!   checks it before any search.
//! - [`resume`]: an interrupted tune's finished trials replayed, so a later tune goes on
//!   from there.
//! - [`stopped`]: a tune that Ctrl-C or SIGTERM stopped, read back from the store (what
//!   `tune --json` prints then).
//! - [`report`]: the final report and JSON; its `explain` submodule what the report must
//!   say to be read right (refused and excluded settings, notes).

pub mod evaluator;
pub mod gp;
pub mod judge;
pub mod known;
pub mod needs;
pub mod observe;
pub mod policy;
pub mod progress;
pub mod report;
pub mod resume;
pub mod run;
pub mod solver;
pub mod space;
pub mod stopped;

use crate::bench::{Load, Testbed};
use crate::{Error, Result};
use argmin::core::{Executor, State};
use evaluator::{Evaluator, Part, Recorder, Trial};
use policy::{Objective, Policy};
use solver::{BayesOpt, SolverConfig, TuneState, Verdict};
use space::Space;

/// What a finished (or interrupted) optimisation produced.
#[derive(Clone, Debug)]
pub struct TuneOutcome {
    /// Every trial, in order (search and check).
    pub trials: Vec<Trial>,
    /// The verdict; `None` when interrupted before the end.
    pub verdict: Option<Verdict>,
    /// Load runs spent, no_load included.
    pub runs: u64,
    /// The incumbent when the run ended.
    pub incumbent: usize,
    /// The verdicts of the policy's judges on the sweet spot ([`judge`]); empty when the
    /// policy has none, the objective's check kept the default, or the testbed has no judge
    /// (`judge_note` says so).
    pub judges: Vec<judge::JudgeVerdict>,
}

/// Options of one optimisation beyond the policy.
#[derive(Default)]
pub struct Options {
    /// Seed of the design and tie-breaks (the sim's noise has its own seed).
    pub seed: u64,
    /// Overrides the policy's budget (trials in all).
    pub budget: Option<u32>,
    /// Per-trial log and progress bar.
    pub log: Option<observe::TrialLog>,
    /// A known sweet spot to confirm against the default before any search (`tune
    /// --confirm`, `solver/confirm.rs`); the default or `None`: a plain search.
    pub confirm: Option<solver::confirm::KnownPoint>,
    /// True: a significant best keeps every knob it changed, none tested for whether it is
    /// needed (`solver/reduce.rs`). The shoot-out's baseline; a tune always tests them.
    pub keep_every_changed_knob: bool,
    /// True: the search and the final check keep runs for that step's tests (its reserve,
    /// `solver/reduce.rs`). Measured in the shoot-out, not used by a tune.
    pub reduce_reserve: bool,
}

impl Options {
    /// A tune's options: `seed`, the policy's budget overridden by `budget`, `log`'s lines.
    pub fn logged(seed: u64, budget: Option<u32>, log: observe::TrialLog) -> Self {
        Options {
            seed,
            budget,
            log: Some(log),
            ..Options::default()
        }
    }
}

/// The run budget: the most load runs a tune of `policy` makes, `budget` (the policy's if
/// `None`) full trials of every load of the policy, `runs` times each, plus the most its
/// judges may add ([`judge_runs`]) when `judged` (the testbed has the judge). The screen's
/// budget is the trials' runs (`solver/screen.rs`); the GP search's `budget` full trials make
/// as many. What the progress bar counts against ([`progress::Progress`]).
pub fn run_budget(policy: &Policy, budget: Option<u32>, judged: bool) -> u64 {
    let full = Part::Full.loads(policy).len() as u64 * u64::from(policy.runs);
    let judges = if judged { judge_runs(policy) } else { 0 };
    u64::from(budget.unwrap_or(policy.budget)) * full.max(1) + judges
}

/// The full trials a confirm of `known` adds to a tune of `policy` with `budget` trials (the
/// policy's if `None`) when the known sweet spot does not hold (`solver/confirm.rs`: its
/// pairs, on top of the budget); 0 without one or when it is the `default`.
pub fn confirm_trials(
    policy: &Policy,
    budget: Option<u32>,
    known: Option<solver::confirm::KnownPoint>,
    default: usize,
) -> usize {
    match known {
        Some(k) if k.point != default => {
            2 * solver::confirm::confirm_pairs(
                policy.check_pairs as usize,
                budget.unwrap_or(policy.budget) as usize,
                policy.alpha,
                policy.min_effect,
                k.improvement,
            )
        }
        _ => 0,
    }
}

/// The most runs `policy`'s judges add to a tune ([`judge`]): their pairs for the search's
/// best, and when it fails, a fallback's screen (`judge::fallback::SCREENED` runs per
/// judge), its check (`max(check_pairs, 3)` pairs of full trials) and its judges' pairs. Only
/// a tune whose check found a sweet spot runs any of them.
pub fn judge_runs(policy: &Policy) -> u64 {
    let Some(j) = &policy.judges else {
        return 0;
    };
    let full = Part::Full.loads(policy).len() as u64 * u64::from(policy.runs);
    let screen = judge::fallback::SCREENED as u64 * j.startup.len() as u64;
    let check = 2 * u64::from(policy.check_pairs.max(3)) * full;
    2 * j.runs() + screen + check
}

/// The solver configuration for `policy` with `budget` trials (its judges' runs come on top,
/// [`run_budget`]).
pub(crate) fn config(policy: &Policy, budget: Option<u32>, seed: u64) -> Result<SolverConfig> {
    let budget = budget.unwrap_or(policy.budget) as usize;
    let pairs = policy.check_pairs as usize;
    if budget < 2 * pairs + 2 {
        return Err(Error::BadInput(format!(
            "--budget {budget} is too small for policy '{}': the final check alone needs \
             2 × check_pairs = {} trials, plus at least 2 for the search",
            policy.name,
            2 * pairs
        )));
    }
    let runs = policy.runs as usize;
    let full = Part::Full.loads(policy).len() * runs;
    let loaded = Part::Loaded.loads(policy).len() * runs;
    let no_load = Part::NoLoad.loads(policy).len() * runs;
    // The screen measures parts only where that is sound: a Ratio, whose no_load it tests
    // before pooling, or Loads, which no_load does not enter (unless a guard reads no_load).
    // Guard rails keep the GP search in full trials: their report explains an excluded
    // setting with its own Ratio, which a screened setting (loaded runs only) does not have.
    let (runs_loaded, runs_no_load) = match &policy.objective {
        _ if !policy.guards.is_empty() => (0, 0),
        Objective::MinRatio { .. } if no_load > 0 && loaded > 0 => (loaded, no_load),
        Objective::MaxLoads { .. }
            if loaded > 0 && !policy.guards.iter().any(|g| g.load == Load::NoLoad) =>
        {
            (loaded, 0)
        }
        _ => (0, 0),
    };
    Ok(SolverConfig {
        budget,
        check_pairs: pairs,
        alpha: policy.alpha,
        min_effect: policy.min_effect,
        seed,
        minimize: policy.objective.minimize(),
        runs_full: full,
        runs_loaded,
        runs_no_load,
    })
}

/// Runs the optimiser on `testbed` over `space` for `policy`. Trials go to `recorder` as
/// they finish. Errors: the testbed's and recorder's; [`Error::Interrupted`] when Ctrl-C or
/// SIGTERM arrived (the trials so far are in the recorder). Does not restore the testbed.
pub fn optimise(
    testbed: &mut dyn Testbed,
    space: &Space,
    policy: &Policy,
    recorder: &mut dyn Recorder,
    opts: Options,
) -> Result<TuneOutcome> {
    let cfg = config(policy, opts.budget, opts.seed)?;
    // One iteration per trial; the screen's partial trials are one or more runs each.
    let max_iters = (cfg.budget * cfg.runs_full.max(1)) as u64 + 2;
    let max_iters =
        max_iters + confirm_trials(policy, opts.budget, opts.confirm, space.default) as u64;
    let mut solver = BayesOpt::new(cfg, space.coords.clone(), space.default)
        .with_groups(space.scheduler_groups())
        .with_settings(space.points.clone(), space.knobs.clone())
        .with_confirm(opts.confirm);
    if opts.keep_every_changed_knob {
        solver = solver.without_reduce();
    } else if opts.reduce_reserve {
        solver = solver.with_reduce_reserve();
    }
    let eval = Evaluator::new(testbed, space, policy, recorder);
    let mut exec = Executor::new(eval, solver)
        .configure(|s: TuneState| s.max_iters(max_iters))
        .ctrlc(false);
    let printer = opts.log.as_ref().and_then(|l| l.printer());
    if let Some(log) = opts.log {
        exec = exec.add_observer(log, argmin::core::observers::ObserverMode::Always);
    }
    let res = exec.run().map_err(from_argmin)?;
    let interrupted = matches!(
        res.state().get_termination_reason(),
        Some(argmin::core::TerminationReason::Interrupt)
    );
    let verdict = res.solver.verdict().cloned();
    let incumbent = res.solver.incumbent();
    let eval = res
        .problem
        .problem
        .ok_or_else(|| Error::Failed("internal: the executor lost the problem".into()))?;
    let mut runs = eval.runs();
    let trials = eval.into_trials();
    if interrupted || (verdict.is_none() && crate::signals::interrupted()) {
        return Err(Error::Interrupted);
    }
    let (mut verdict, mut trials) = (verdict, trials);
    let log = printer.unwrap_or_else(|| Box::new(|_: &str, _: u64| {}));
    let judges = match verdict.as_mut() {
        Some(v) if testbed.lacks_startup().is_none() => judge::conclude(
            &mut judge::Bed {
                testbed,
                recorder,
                log: &*log,
            },
            space,
            policy,
            &mut trials,
            v,
            &mut runs,
        )?,
        _ => Vec::new(),
    };
    Ok(TuneOutcome {
        trials,
        verdict,
        runs,
        incumbent,
        judges,
    })
}

/// What to tell the user when `policy` has judges that `testbed` cannot run (a simulated
/// surface without start-up figures): the tune then judges by its objective alone.
pub(crate) fn judge_note(testbed: &dyn Testbed, policy: &Policy) -> Option<String> {
    policy.judges.as_ref()?;
    testbed.lacks_startup().map(|why| {
        format!(
            "policy '{}' has judges, but they did not run: {why}; the sweet spot is judged by \
             its objective alone",
            policy.name
        )
    })
}

/// Turns argmin's error back into ours (ours travel inside it unchanged).
fn from_argmin(e: argmin::core::Error) -> Error {
    match e.downcast::<Error>() {
        Ok(e) => e,
        Err(e) => Error::Failed(format!("optimiser: {e}")),
    }
}
