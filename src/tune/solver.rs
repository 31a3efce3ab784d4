//! [`BayesOpt`]: our argmin [`Solver`] over the policy's grid of settings. Each `next_iter`
//! measures exactly one trial through the problem ([`Evaluator`]), so argmin's observers see
//! one line per trial and its checkpointing can save after each one.
//!
//! It holds two searches. When the objective may be measured in parts (a Ratio or Loads;
//! [`Config::runs_loaded`] > 0) the search is the screen ([`screen`]); otherwise a GP search
//! ([`crate::tune::gp`]'s expected improvement, with SMAC's intensification), every trial a
//! full one. Both end in the final check against the default (`solver/check.rs`,
//! [`Verdict`]): a sweet spot is reported only when it beats the default by the policy's
//! minimum effect at its alpha, since on a noisy disk the best-looking setting is often luck.
//! The phases and their rules, step by step: `docs/solver.md`.

use crate::stats;
use crate::tune::evaluator::{Evaluator, Part, Trial};
use crate::tune::gp;
use argmin::core::{
    CostFunction, Error as ArgminError, IterState, KV, Problem, Solver, State, TerminationReason,
    TerminationStatus,
};
use serde::{Deserialize, Serialize};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};

mod check;
mod score;
pub mod screen;
pub use check::{CHECK_CAP, Verdict};

/// Search stops when the largest expected improvement is below ln(1 + min_effect) / this.
pub const TOL_DIV: f64 = 10.0;

/// Posterior sds added to a setting's score when picking the incumbent (conservative:
/// noisy, rarely measured settings need more evidence to win).
pub const PENALTY: f64 = 1.5;

/// Prior degrees of freedom of the pooled variance when moderating one setting's variance
/// (Smyth 2004): a setting's own variance outweighs the pool once it has 5+ trials.
pub const PRIOR_DF: f64 = 3.0;

/// Per-trial sd of the ln cost assumed until two replicates exist (DESIGN.md: run-to-run
/// variation above 10% is common on real disks).
pub const ASSUMED_NOISE: f64 = 0.1;

/// The final check's power reserve (pairs for 90% power) is capped at budget / this, so an
/// early, noisy sd estimate cannot end the search before it starts.
pub const RESERVE_DIV: usize = 4;

/// The least share of the budget kept for the final check.
pub const CHECK_SHARE: f64 = 0.3;

/// The incumbent and its challenger are no longer separated once either has this many trials,
/// and a setting with this many is not measured again for its augmented expected improvement:
/// a tie at the minimum effect would otherwise take the whole search share of a large budget.
/// (20: the 2-D bowl at budget 80 keeps 95% of 400 seeds and 96% of the first 50, as without
/// a cap; 16 gave 94% of those 50, 12 gave 94% of 400.)
pub const SEPARATE_CAP: usize = 20;

/// Most trials the incumbent gets from intensification (more come from the final check).
pub const RACE_CAP: usize = 3;

/// argmin's state for our solver: the parameter is a grid index, the cost a trial's ln cost.
pub type TuneState = IterState<usize, (), (), (), (), f64>;

/// What the solver is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Looking for better settings (design, expected improvement, races).
    Search,
    /// Comparing the best setting with the default on fresh pairs.
    Check,
    /// Finished.
    Done,
}

/// One queued trial and why it runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Step {
    point: usize,
    why: String,
    check: bool,
    /// Which of the policy's loads it runs.
    #[serde(default)]
    part: Part,
}

/// Tuning constants of the solver (the policy sets most of them).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Config {
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
    /// Load runs in one full trial (the policy's loads × its runs per load); 0 (an old
    /// checkpoint) is taken as 2, one no_load and one io_load run.
    #[serde(default)]
    pub runs_full: usize,
    /// Load runs in a [`Part::Loaded`] trial; 0 when the objective may not be measured in
    /// parts (then the search is the GP's, whatever the grid).
    #[serde(default)]
    pub runs_loaded: usize,
    /// Load runs in a [`Part::NoLoad`] trial; non-zero only for a Ratio objective, the only
    /// one whose no_load the screen may pool ([`screen`]'s flatness test).
    #[serde(default)]
    pub runs_no_load: usize,
}

/// The Bayesian-optimisation solver over a finite grid (see the module docs).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BayesOpt {
    cfg: Config,
    coords: Vec<Vec<f64>>,
    /// Per point, its scheduler's index (all 0 when the scheduler is not tuned): a setting's
    /// prior in [`BayesOpt::score`] comes only from settings of its own scheduler.
    #[serde(default)]
    groups: Vec<usize>,
    default: usize,
    /// (point, cost) of every non-failed trial, guard penalties included (the search's
    /// ranking and model).
    obs: Vec<(usize, f64)>,
    /// The guard penalty inside each `obs` cost, in the same order ([`Trial::penalty`]):
    /// the final check's statistics take it out ([`BayesOpt::objective_costs`]).
    #[serde(default)]
    obs_penalty: Vec<f64>,
    /// (point, cost, objective value) of the check trials, in order; the cost without guard
    /// penalties (the check tests the objective; the rails judge the answer on its means).
    check_obs: Vec<(usize, f64, f64)>,
    failed: Vec<usize>,
    incumbent: usize,
    challenger: Option<usize>,
    queue: VecDeque<Step>,
    phase: Phase,
    trials: usize,
    verdict: Option<Verdict>,
    /// SplitMix64 state (Steele, Lea & Flood 2014): small, serialisable, deterministic.
    rng: u64,
    /// [`BayesOpt::posterior`] per setting, valid while `obs` has `posteriors_at` entries
    /// (each needs a leave-one-out model fit; a plan asks for the same ones several times).
    #[serde(skip)]
    posteriors: RefCell<BTreeMap<usize, (f64, f64)>>,
    #[serde(skip)]
    posteriors_at: Cell<usize>,
    /// Load runs measured so far (the screen's budget is in runs).
    #[serde(default)]
    runs: usize,
    /// The screen's state ([`screen`]); `None` when the GP searches (a large grid).
    #[serde(default)]
    screen: Option<screen::Screen>,
}

impl BayesOpt {
    /// A solver over grid points with `coords`, starting from `default`.
    pub fn new(cfg: Config, coords: Vec<Vec<f64>>, default: usize) -> Self {
        let rng = cfg.seed ^ 0x5357_5350;
        BayesOpt {
            cfg,
            coords,
            groups: Vec::new(),
            default,
            obs: Vec::new(),
            obs_penalty: Vec::new(),
            check_obs: Vec::new(),
            failed: Vec::new(),
            incumbent: default,
            challenger: None,
            queue: VecDeque::new(),
            phase: Phase::Search,
            trials: 0,
            verdict: None,
            rng,
            posteriors: RefCell::default(),
            posteriors_at: Cell::new(usize::MAX),
            runs: 0,
            screen: None,
        }
        .with_screen_if_it_fits()
    }

    /// Sets each point's scheduler group ([`crate::tune::space::Space::scheduler_groups`]).
    pub fn with_groups(mut self, groups: Vec<usize>) -> Self {
        self.groups = groups;
        self
    }

    fn group(&self, p: usize) -> usize {
        self.groups.get(p).copied().unwrap_or(0)
    }

    /// The verdict, once the solver is done.
    pub fn verdict(&self) -> Option<&Verdict> {
        self.verdict.as_ref()
    }

    /// The current incumbent (grid index).
    pub fn incumbent(&self) -> usize {
        self.incumbent
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// A uniform draw in [0, 1) (SplitMix64).
    fn uniform(&mut self) -> f64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    fn costs(&self, p: usize) -> Vec<f64> {
        self.obs
            .iter()
            .filter(|(q, _)| *q == p)
            .map(|(_, c)| *c)
            .collect()
    }

    /// The search costs of `p` without guard penalties: the objective alone, for the final
    /// check's statistics (a single noisy trial over a rail must not count as a worse
    /// objective in a test of the objective).
    fn objective_costs(&self, p: usize) -> Vec<f64> {
        self.obs
            .iter()
            .zip(self.obs_penalty.iter().chain(std::iter::repeat(&0.0)))
            .filter(|((q, _), _)| *q == p)
            .map(|((_, c), pen)| c - pen)
            .collect()
    }

    fn mean_cost(&self, p: usize) -> Option<f64> {
        let c = self.costs(p);
        (!c.is_empty()).then(|| stats::mean(&c))
    }

    fn search_budget(&self) -> usize {
        self.cfg.budget.saturating_sub(2 * self.cfg.check_pairs)
    }

    /// Latin-hypercube design: `n` points, one per stratum of every coordinate, snapped to
    /// the nearest unused grid point.
    fn design(&mut self, n: usize) -> Vec<usize> {
        let dims = self.coords.first().map_or(0, Vec::len);
        let mut perms: Vec<Vec<usize>> = Vec::new();
        for _ in 0..dims {
            let mut p: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                let j = ((self.uniform() * (i + 1) as f64) as usize).min(i);
                p.swap(i, j);
            }
            perms.push(p);
        }
        let mut chosen = vec![self.default];
        for i in 0..n {
            let strata: Vec<usize> = perms.iter().map(|p| p[i]).collect();
            let target: Vec<f64> = strata
                .into_iter()
                .map(|k| (k as f64 + self.uniform()) / n as f64)
                .collect();
            let best = (0..self.coords.len())
                .filter(|p| !chosen.contains(p))
                .min_by(|&a, &b| {
                    dist(&self.coords[a], &target).total_cmp(&dist(&self.coords[b], &target))
                });
            if let Some(b) = best {
                chosen.push(b);
            }
        }
        chosen.remove(0);
        chosen
    }

    /// Distinct measured points.
    fn measured(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.obs.iter().map(|(p, _)| *p).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The pooled sd of one trial's cost from every replicated setting, with its df.
    fn pooled_sd(&self) -> Option<(f64, f64)> {
        let mut groups: Vec<Vec<f64>> = self
            .measured()
            .iter()
            .map(|&p| self.objective_costs(p))
            .collect();
        for p in [self.default, self.incumbent] {
            let c: Vec<f64> = self
                .check_obs
                .iter()
                .filter(|o| o.0 == p)
                .map(|o| o.1)
                .collect();
            groups.push(c);
        }
        stats::pooled_variance(&groups).map(|(v, df)| (v.sqrt(), df))
    }

    /// The GP fitted to every search trial, predicted over the grid; `None` until enough
    /// distinct settings are measured (the design: dims + 2, at least 3).
    fn predict(&self) -> Option<gp::Prediction> {
        if !self.model_ready() {
            return None;
        }
        let x: Vec<Vec<f64>> = self
            .obs
            .iter()
            .map(|(p, _)| self.coords[*p].clone())
            .collect();
        let y: Vec<f64> = self.obs.iter().map(|(_, c)| *c).collect();
        gp::fit_predict(&x, &y, &self.coords)
    }

    /// True once enough distinct settings are measured for a model (the design: dims + 2,
    /// at least 3).
    fn model_ready(&self) -> bool {
        let dims = self.coords.first().map_or(1, Vec::len);
        let n_init = (dims + 2).min(self.coords.len());
        self.measured().len() >= n_init.min(3)
    }

    /// Decides what to measure next when the queue is empty. `feasible` says whether a
    /// measured setting keeps the guard rails.
    fn plan(&mut self, feasible: &dyn Fn(usize) -> bool) {
        if self.phase != Phase::Search {
            return;
        }
        if self.screen.is_some() {
            self.plan_screen(feasible);
            return;
        }
        // Keep enough budget for a final check with 90% power at the current estimate, capped
        // (RESERVE_DIV) and floored (CHECK_SHARE); every trial the search leaves goes to the
        // check.
        let reserve = 2 * self
            .check_size()
            .min(self.cfg.budget / RESERVE_DIV)
            .max(self.cfg.check_pairs)
            .max((self.cfg.budget as f64 * CHECK_SHARE / 2.0) as usize);
        if self.trials >= self.search_budget() || self.trials + reserve >= self.cfg.budget {
            self.pick_incumbent(feasible);
            self.start_check("search budget spent", feasible);
            return;
        }
        let measured = self.measured();
        let pred = self.predict();
        let prev = self.incumbent;
        let cand = self.pick_incumbent(feasible);
        // Intensification: a new best candidate with a single trial is re-measured, interleaved
        // with the incumbent, unless it is clearly better (2 noise sds on the difference).
        if cand != prev && self.costs(cand).len() < 2 {
            // Until two replicates exist, assume 10% per-trial noise (DESIGN.md: above 10%
            // is common on real disks); the early GP's noise term is too unsure to use.
            let noise = self
                .pooled_sd()
                .filter(|(_, df)| *df >= 2.0)
                .map(|(s, _)| s)
                .unwrap_or(ASSUMED_NOISE);
            let gap = self.mean_cost(prev).unwrap_or(f64::INFINITY)
                - self.mean_cost(cand).unwrap_or(f64::INFINITY);
            let left = self.search_budget().saturating_sub(self.trials);
            let close = gap < 2.0 * noise * 2f64.sqrt();
            if close && left >= 1 {
                self.incumbent = prev;
                if close && self.costs(prev).len() < RACE_CAP && left >= 2 {
                    self.queue.push_back(Step {
                        point: prev,
                        why: "race: incumbent re-measured".into(),
                        check: false,
                        part: Part::Full,
                    });
                }
                self.queue.push_back(Step {
                    point: cand,
                    why: "race: challenger re-measured".into(),
                    check: false,
                    part: Part::Full,
                });
                self.challenger = Some(cand);
                return;
            }
        }
        self.challenger = None;
        let Some(pred) = pred else {
            // No model yet: the farthest unmeasured point.
            let p = (0..self.coords.len())
                .filter(|p| !measured.contains(p) && !self.failed.contains(p))
                .max_by(|&a, &b| {
                    let f = |x: usize| {
                        measured
                            .iter()
                            .map(|&q| dist(&self.coords[x], &self.coords[q]))
                            .fold(f64::INFINITY, f64::min)
                    };
                    f(a).total_cmp(&f(b))
                });
            match p {
                Some(p) => self.queue.push_back(Step {
                    point: p,
                    why: "no model yet: the farthest unmeasured setting".into(),
                    check: false,
                    part: Part::Full,
                }),
                None => self.start_check("every setting measured", feasible),
            }
            return;
        };
        let best = pred.mean[self.incumbent];
        let noise = self
            .pooled_sd()
            .filter(|(_, df)| *df >= 2.0)
            .map_or(ASSUMED_NOISE, |(s, _)| s);
        // Unmeasured settings: the GP's expected improvement below the GP's mean at the
        // incumbent. Measured ones that keep the rails on their means, with fewer than
        // SEPARATE_CAP trials: the augmented one of their own posterior, below the effective
        // best of those posteriors (one model for both sides of each comparison).
        let eff = self.effective_best(&measured, feasible);
        let ei: Vec<f64> = (0..self.coords.len())
            .map(|p| {
                if self.failed.contains(&p) {
                    0.0
                } else if measured.contains(&p) {
                    let room = self.costs(p).len() < SEPARATE_CAP;
                    match eff {
                        Some(b) if room && (p == self.default || feasible(p)) => {
                            self.augmented_ei(p, b, noise)
                        }
                        _ => 0.0,
                    }
                } else {
                    pred.expected_improvement(p, best)
                }
            })
            .collect();
        let Some(p) = (0..self.coords.len()).max_by(|&a, &b| ei[a].total_cmp(&ei[b])) else {
            self.start_check("nothing to measure", feasible);
            return;
        };
        let tol = (1.0 + self.cfg.min_effect).ln() / TOL_DIV;
        if ei[p] < tol {
            if self.separate_top_two(feasible) {
                return;
            }
            self.start_check("converged: no setting is expected to improve", feasible);
            return;
        }
        let why = if measured.contains(&p) {
            let (m, v) = self.posterior(p);
            let n = self.costs(p).len();
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
        self.queue.push_back(Step {
            point: p,
            why,
            check: false,
            part: Part::Full,
        });
    }

    /// The effective best of the measured settings that keep the rails (the default always
    /// counts): the lowest posterior mean + 1 posterior sd ([`BayesOpt::posterior`]; Huang et
    /// al. 2006's effective best with c = 1). `None` when none is measured.
    fn effective_best(&self, measured: &[usize], feasible: &dyn Fn(usize) -> bool) -> Option<f64> {
        measured
            .iter()
            .filter(|&&p| !self.failed.contains(&p) && (p == self.default || feasible(p)))
            .map(|&p| {
                let (m, v) = self.posterior(p);
                m + v.sqrt()
            })
            .filter(|x| x.is_finite())
            .min_by(f64::total_cmp)
    }

    /// Augmented expected improvement of measuring setting `p` once more, adapted from
    /// Huang, Allen, Notz & Zeng 2006 ("Global optimization of stochastic black-box systems
    /// via sequential kriging meta-models", J. Global Optim. 34): the expected improvement of
    /// its posterior ([`BayesOpt::posterior`]: its trials shrunk toward its kin, mean m and
    /// sd s, ln cost) below `best` ([`BayesOpt::effective_best`]), times
    /// `1 − noise / √(s² + noise²)`, which falls toward 0 as its trials pile up. `noise` is
    /// one trial's sd (ln units). Unlike Huang's, the posterior is not the GP's, and the
    /// unmeasured settings keep the GP's plain expected improvement. So a setting measured
    /// once that may still beat the incumbent (a scheduler with no kin to lean on, an
    /// unlucky draw) is measured again by the search itself, not only by a race it may never
    /// enter; [`BayesOpt::plan`] stops this at [`SEPARATE_CAP`] trials of a setting.
    fn augmented_ei(&self, p: usize, best: f64, noise: f64) -> f64 {
        let (m, v) = self.posterior(p);
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
    /// [`BayesOpt::plan`] stops this when the search's share of the budget is spent; it also
    /// stops once the incumbent or the challenger has [`SEPARATE_CAP`] trials.
    /// True when queued.
    fn separate_top_two(&mut self, feasible: &dyn Fn(usize) -> bool) -> bool {
        let left = self.search_budget().saturating_sub(self.trials);
        if left < 2 {
            return false;
        }
        let inc = self.incumbent;
        let Some(r) = self.challenger_of(inc, feasible) else {
            return false;
        };
        // The incumbent takes part in every round, whichever challenger: its trials bound them.
        if self.costs(inc).len() >= SEPARATE_CAP || self.costs(r).len() >= SEPARATE_CAP {
            return false;
        }
        let (mi, vi) = self.posterior(inc);
        let (mr, vr) = self.posterior(r);
        // Separated, or too close for the difference to matter (below the minimum effect).
        let sd = (vi + vr).sqrt();
        if mr - mi > 2.0 * sd || 2.0 * sd < (1.0 + self.cfg.min_effect).ln() {
            return false;
        }
        for p in [inc, r] {
            self.queue.push_back(Step {
                point: p,
                why: "intensify: the incumbent and its challenger are within noise".into(),
                check: false,
                part: Part::Full,
            });
        }
        true
    }

    /// The challenger of incumbent `inc`: of the other measured, feasible settings, the one
    /// with the lowest lower bound (posterior mean − [`PENALTY`] posterior sds; LUCB's rule).
    fn challenger_of(&self, inc: usize, feasible: &dyn Fn(usize) -> bool) -> Option<usize> {
        self.measured()
            .into_iter()
            .filter(|&p| {
                p != inc && !self.failed.contains(&p) && (p == self.default || feasible(p))
            })
            .map(|p| {
                let (m, v) = self.posterior(p);
                (m - PENALTY * v.sqrt(), p)
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, p)| p)
    }

    /// Makes the measured, feasible setting with the lowest [`BayesOpt::score`] the incumbent,
    /// and returns it.
    fn pick_incumbent(&mut self, feasible: &dyn Fn(usize) -> bool) -> usize {
        let best = self
            .measured()
            .into_iter()
            .filter(|&p| !self.failed.contains(&p) && (p == self.default || feasible(p)))
            .map(|p| (self.score(p), p))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, p)| p);
        self.incumbent = best.unwrap_or(self.default);
        self.incumbent
    }

    fn finish(&mut self, mut v: Verdict) {
        if let Some(n) = self.screen.as_ref().and_then(|s| s.note.as_ref()) {
            v.reason.push_str(&format!("; {n}"));
        }
        self.verdict = Some(v);
        self.phase = Phase::Done;
        self.queue.clear();
    }

    /// Takes in a trial's result (search or check).
    fn observe(&mut self, step: &Step, t: &Trial) {
        self.trials += 1;
        self.runs += t.runs.len();
        if t.failed.is_some() {
            if !self.failed.contains(&t.point) {
                self.failed.push(t.point);
            }
            if self.incumbent == t.point {
                self.incumbent = self.default;
            }
            if self.challenger == Some(t.point) {
                self.challenger = None;
            }
            // A failed check trial ends the check; a failed reference of the GP search leaves
            // nothing to compare any setting with (the screen stops so in `plan_screen`; the
            // caller reports the failure, `tune::run`).
            let why = if step.check {
                Some("a check trial failed")
            } else if self.screen.is_none()
                && t.point == self.default
                && self.costs(self.default).is_empty()
            {
                Some("its reference trial failed")
            } else {
                None
            };
            if let Some(why) = why {
                self.queue.clear();
                self.finish(Verdict::keep_default(
                    self.default,
                    format!(
                        "keep the default: {why} ({})",
                        t.failed.clone().unwrap_or_default()
                    ),
                ));
            }
            return;
        }
        if self.screen.is_some() {
            self.observe_parts(step.part, t, step.check);
        }
        if step.check {
            self.check_obs.push((t.point, t.cost - t.penalty, t.value));
            return;
        }
        if step.part == Part::Full {
            // In step with `obs` (padded should a state ever come without penalties).
            self.obs_penalty.resize(self.obs.len(), 0.0);
            self.obs.push((t.point, t.cost));
            self.obs_penalty.push(t.penalty);
        }
    }
}

/// The `why` of a setting picked by expected improvement `ei` (ln units), from the model's
/// mean and sd of its cost and the incumbent's predicted cost `best`, in figures people can
/// read: the predicted gain when the model expects it to be better, else the chance that it
/// is (exploration). (It printed "model +4118% vs best": the cost of a setting near a guard
/// breaker, penalty included, as a percentage.)
fn ei_why(ei: f64, mean: f64, sd: f64, best: f64) -> String {
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

fn dist(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt()
}

/// A problem that can measure trials: the tune's [`Evaluator`], or a wrapper in the shoot-out.
pub trait Measure {
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
        if self.screen.is_some() {
            // The screen plans every trial itself (the default first).
            return Ok((state.param(self.default), None));
        }
        self.queue.push_back(Step {
            point: self.default,
            why: "the default setting: reference for guards and the final check".into(),
            check: false,
            part: Part::Full,
        });
        let dims = self.coords.first().map_or(1, Vec::len);
        let n = (dims + 2).min(self.coords.len()).saturating_sub(1);
        let n = n.min(self.search_budget().saturating_sub(1));
        for p in self.design(n) {
            self.queue.push_back(Step {
                point: p,
                why: "initial design (Latin hypercube)".into(),
                check: false,
                part: Part::Full,
            });
        }
        Ok((state.param(self.default), None))
    }

    fn next_iter(
        &mut self,
        problem: &mut Problem<O>,
        state: TuneState,
    ) -> Result<(TuneState, Option<KV>), ArgminError> {
        // A feasibility veto on the incumbent (guard rails on its mean metrics).
        if self.phase == Phase::Search
            && self.incumbent != self.default
            && problem
                .problem
                .as_ref()
                .is_some_and(|o| !o.feasible(self.incumbent))
        {
            self.incumbent = self.default;
        }
        if self.queue.is_empty() {
            let feasible = |p: usize| problem.problem.as_ref().is_some_and(|o| o.feasible(p));
            self.plan(&feasible);
        }
        let Some(step) = self.queue.pop_front() else {
            if self.phase == Phase::Check {
                let inc = self.incumbent;
                self.conclude_if_feasible(
                    problem.problem.as_ref().is_some_and(|o| o.feasible(inc)),
                );
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
        self.observe(&step, &t);
        // The screen's incumbent is its leader: the trial just observed may have made one (the
        // log line shows the incumbent after this trial, as the check's lines do).
        if self.screen.is_some()
            && self.phase == Phase::Search
            && !step.check
            && let Some(lead) = self
                .screen_ranked(&|p: usize| problem.problem.as_ref().is_some_and(|o| o.feasible(p)))
                .first()
        {
            self.incumbent = lead.0;
        }
        if self.phase == Phase::Check && self.queue.is_empty() {
            let inc = self.incumbent;
            self.conclude_if_feasible(problem.problem.as_ref().is_some_and(|o| o.feasible(inc)));
        }
        let kv = argmin::kv!(
            "point" => step.point as u64;
            "why" => step.why.clone();
            "value" => t.value;
            "cost" => t.cost;
            "incumbent" => self.incumbent as u64;
            "trials" => self.trials as u64;
            "runs" => self.runs as u64;
            "check" => step.check;
            "part" => part_name(step.part);
            "time" => mean_time(&t.runs);
            "failed" => t.failed.clone().unwrap_or_default();
            "guards" => t.guards_broken.join("; ");
        );
        Ok((state.param(step.point).cost(t.cost), Some(kv)))
    }

    fn terminate(&mut self, _state: &TuneState) -> TerminationStatus {
        if self.phase == Phase::Done {
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
