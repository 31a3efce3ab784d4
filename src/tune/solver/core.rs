//! [`Core`]: what both searches of [`super::BayesOpt`] share: the grid, the trials measured,
//! the queue of the next ones, the incumbent and the final check's verdict. The GP search
//! ([`super::gp_search`]) and the screen ([`super::screen`]) each keep only their own state
//! and plan through this.

use super::{Phase, SolverConfig, Step, Verdict};
use crate::stats;
use crate::tune::evaluator::{Part, Trial};
use crate::tune::gp;
use serde::{Deserialize, Serialize};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};

/// One trial of the final check: its setting, its cost without guard penalties (ln units;
/// the check tests the objective, the rails judge the answer on its means) and the
/// objective's value.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct CheckTrial {
    /// Grid index.
    pub point: usize,
    /// ln cost, guard penalties taken out.
    pub cost: f64,
    /// The objective in its own unit (a Ratio, Loads).
    pub value: f64,
}

/// The state both searches share (see the module docs).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Core {
    pub(super) cfg: SolverConfig,
    pub(super) coords: Vec<Vec<f64>>,
    /// Per point, its scheduler's index (all 0 when the scheduler is not tuned): a setting's
    /// prior in [`Core::score`] comes only from settings of its own scheduler.
    pub(super) groups: Vec<usize>,
    pub(super) default: usize,
    /// (point, cost) of every non-failed full search trial, guard penalties included (the
    /// search's ranking and model).
    pub(super) obs: Vec<(usize, f64)>,
    /// The guard penalty inside each `obs` cost, in the same order ([`Trial::penalty`]):
    /// the final check's statistics take it out ([`Core::objective_costs`]).
    pub(super) obs_penalty: Vec<f64>,
    /// The check's trials, in order.
    pub(super) check_obs: Vec<CheckTrial>,
    pub(super) failed: Vec<usize>,
    pub(super) incumbent: usize,
    pub(super) queue: VecDeque<Step>,
    pub(super) phase: Phase,
    pub(super) trials: usize,
    pub(super) verdict: Option<Verdict>,
    /// What the search adds to the verdict's reason (the screen's finding on no_load).
    pub(super) note: Option<String>,
    /// A confirm that did not hold (`solver/confirm.rs`): the search's verdict carries it.
    #[serde(default)]
    pub(super) confirmed: Option<super::confirm::ConfirmOutcome>,
    /// SplitMix64 state (Steele, Lea & Flood 2014): small, serialisable, deterministic.
    rng: u64,
    /// [`Core::posterior`] per setting, valid while `obs` has `posteriors_at` entries
    /// (each needs a leave-one-out model fit; a plan asks for the same ones several times).
    #[serde(skip)]
    pub(super) posteriors: RefCell<BTreeMap<usize, (f64, f64)>>,
    #[serde(skip)]
    pub(super) posteriors_at: Cell<usize>,
    /// Load runs measured so far (the screen's budget is in runs).
    pub(super) runs: usize,
    /// Per point, how many knobs it changes from the default that the step after a
    /// significant check would test (`solver/reduce.rs`); empty when that step is off.
    #[serde(default)]
    pub(super) changed: Vec<usize>,
    /// True while the search's last plan kept room for that step's tests
    /// ([`Core::with_reduce_reserve`]); the final check then leaves it ([`Core::check_share`]).
    #[serde(skip)]
    pub(super) reduce_room: Cell<bool>,
    /// The runner-up of a split check while it runs (`solver/split_check.rs`).
    #[serde(default)]
    pub(super) runner_up: Option<usize>,
}

impl Core {
    /// The shared state of a new tune over grid points with `coords`, starting from `default`.
    pub(super) fn new(cfg: SolverConfig, coords: Vec<Vec<f64>>, default: usize) -> Self {
        let rng = cfg.seed ^ 0x5357_5350;
        Core {
            cfg,
            coords,
            groups: Vec::new(),
            default,
            obs: Vec::new(),
            obs_penalty: Vec::new(),
            check_obs: Vec::new(),
            failed: Vec::new(),
            incumbent: default,
            runner_up: None,
            queue: VecDeque::new(),
            phase: Phase::Search,
            trials: 0,
            verdict: None,
            note: None,
            confirmed: None,
            rng,
            posteriors: RefCell::default(),
            posteriors_at: Cell::new(usize::MAX),
            runs: 0,
            changed: Vec::new(),
            reduce_room: Cell::new(false),
        }
    }

    pub(super) fn group(&self, p: usize) -> usize {
        self.groups.get(p).copied().unwrap_or(0)
    }

    /// A uniform draw in [0, 1) (SplitMix64).
    pub(super) fn uniform(&mut self) -> f64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Queues a search trial of `part` of `point`.
    pub(super) fn push(&mut self, point: usize, part: Part, why: impl Into<String>) {
        self.queue.push_back(Step {
            point,
            why: why.into(),
            check: false,
            part,
        });
    }

    /// The full search trials' costs of `p`, guard penalties included (ln units).
    pub(super) fn costs(&self, p: usize) -> Vec<f64> {
        self.obs
            .iter()
            .filter(|(q, _)| *q == p)
            .map(|(_, c)| *c)
            .collect()
    }

    /// The search costs of `p` without guard penalties: the objective alone, for the final
    /// check's statistics (a single noisy trial over a rail must not count as a worse
    /// objective in a test of the objective).
    pub(super) fn objective_costs(&self, p: usize) -> Vec<f64> {
        self.obs
            .iter()
            .zip(self.obs_penalty.iter().chain(std::iter::repeat(&0.0)))
            .filter(|((q, _), _)| *q == p)
            .map(|((_, c), pen)| c - pen)
            .collect()
    }

    /// The check trials' costs of `p`, in order.
    pub(super) fn check_costs(&self, p: usize) -> Vec<f64> {
        self.check_obs
            .iter()
            .filter(|o| o.point == p)
            .map(|o| o.cost)
            .collect()
    }

    pub(super) fn mean_cost(&self, p: usize) -> Option<f64> {
        let c = self.costs(p);
        (!c.is_empty()).then(|| stats::mean(&c))
    }

    /// Trials the search may use: the budget less the fewest check pairs.
    pub(super) fn search_budget(&self) -> usize {
        self.cfg.budget.saturating_sub(2 * self.cfg.check_pairs)
    }

    /// True when `p` may be the answer: not failed, and the default or keeping the rails.
    pub(super) fn eligible(&self, p: usize, feasible: &dyn Fn(usize) -> bool) -> bool {
        !self.failed.contains(&p) && (p == self.default || feasible(p))
    }

    /// Latin-hypercube design: `n` points, one per stratum of every coordinate, snapped to
    /// the nearest unused grid point.
    pub(super) fn design(&mut self, n: usize) -> Vec<usize> {
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

    /// The default's grid neighbours: per coordinate, the nearest setting below and above
    /// the default's value among those equal to the default in every other coordinate.
    pub(super) fn default_neighbours(&self) -> Vec<usize> {
        let d = &self.coords[self.default];
        let mut out = Vec::new();
        for k in 0..d.len() {
            let line: Vec<usize> = (0..self.coords.len())
                .filter(|&p| {
                    p != self.default && (0..d.len()).all(|j| j == k || self.coords[p][j] == d[j])
                })
                .collect();
            let below = line
                .iter()
                .filter(|&&p| self.coords[p][k] < d[k])
                .max_by(|&&a, &&b| self.coords[a][k].total_cmp(&self.coords[b][k]));
            let above = line
                .iter()
                .filter(|&&p| self.coords[p][k] > d[k])
                .min_by(|&&a, &&b| self.coords[a][k].total_cmp(&self.coords[b][k]));
            out.extend(below.into_iter().chain(above).copied());
        }
        out
    }

    /// Distinct measured points.
    pub(super) fn measured(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.obs.iter().map(|(p, _)| *p).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The pooled sd of one trial's cost from every replicated setting, with its df.
    pub(super) fn pooled_sd(&self) -> Option<(f64, f64)> {
        let mut groups: Vec<Vec<f64>> = self
            .measured()
            .iter()
            .map(|&p| self.objective_costs(p))
            .collect();
        for p in [self.default, self.incumbent] {
            groups.push(self.check_costs(p));
        }
        stats::pooled_variance(&groups).map(|(v, df)| (v.sqrt(), df))
    }

    /// The GP fitted to every search trial, predicted over the grid; `None` until enough
    /// distinct settings are measured (the design: dims + 2, at least 3).
    pub(super) fn predict(&self) -> Option<gp::Prediction> {
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
    pub(super) fn model_ready(&self) -> bool {
        let dims = self.coords.first().map_or(1, Vec::len);
        let n_init = (dims + 2).min(self.coords.len());
        self.measured().len() >= n_init.min(3)
    }

    /// Makes the measured, feasible setting with the lowest [`Core::score`] the incumbent,
    /// and returns it.
    pub(super) fn pick_incumbent(&mut self, feasible: &dyn Fn(usize) -> bool) -> usize {
        let best = self
            .measured()
            .into_iter()
            .filter(|&p| self.eligible(p, feasible))
            .map(|p| (self.score(p), p))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, p)| p);
        self.incumbent = best.unwrap_or(self.default);
        self.incumbent
    }

    /// Ends the tune with verdict `v`, the search's note added to its reason.
    pub(super) fn finish(&mut self, mut v: Verdict) {
        if let Some(n) = &self.note {
            v.reason.push_str(&format!("; {n}"));
        }
        if v.confirm.is_none() {
            v.confirm = self.confirmed.clone();
        }
        self.verdict = Some(v);
        self.runner_up = None;
        self.phase = Phase::Done;
        self.queue.clear();
    }

    /// Takes in a failed trial of `step`: the point is out of the race, and a failed check
    /// trial, or (`reference_lost`) a search that lost its reference, ends the tune.
    pub(super) fn observe_failure(&mut self, step: &Step, t: &Trial, reference_lost: bool) {
        if !self.failed.contains(&t.point) {
            self.failed.push(t.point);
        }
        if self.incumbent == t.point {
            self.incumbent = self.default;
        }
        let why = if step.check {
            Some("a check trial failed")
        } else if reference_lost {
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
    }

    /// Takes in a measured trial of `step`: a check trial's cost goes to the check, a full
    /// search trial's to the model.
    pub(super) fn observe_cost(&mut self, step: &Step, t: &Trial) {
        if step.check {
            self.check_obs.push(CheckTrial {
                point: t.point,
                cost: t.cost - t.penalty,
                value: t.value,
            });
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

/// The Euclidean distance of two grid coordinates.
pub(super) fn dist(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt()
}
