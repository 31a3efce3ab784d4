//! The optimiser shoot-out: sweetspot's tuner against five baselines, on every surface in
//! `data/surfaces/` (see its README for which are measured and which synthetic).
//!
//! ```sh
//! cargo run --release --example shootout                         # dev seeds 1..50
//! cargo run --release --example shootout -- --from 10001 --seeds 400   # held-out figures
//! cargo run --release --example shootout -- --seeds 10 --only ours --surface seed
//! ```
//!
//! Diagnosis: `SHOOTOUT_TRACE=1` prints ours' trial log and verdict per tune to stderr (use it
//! with `--seeds 1 --from N --only ours`); `SHOOTOUT_FAILS=1` prints each failed tune's seed
//! and choice, for every method run; `SHOOTOUT_CHECK_PAIRS=N` gives `pattern` and
//! `ttts-check` N check pairs on a Ratio surface (default 2, [`check::PAIRS`]); `SHOOTOUT_COUNTS=1` prints each table row's successes
//! and claims as counts of tunes (`count SURFACE METHOD SUCCESSES CLAIMS`), which the table's
//! whole percentages round.
//!
//! Seeds: constants are tuned on the development seeds 1..N (`--from 1`, the default);
//! published figures use the disjoint range from 10001 (`--from 10001`). The header prints the
//! range. The simulator's noise comes from a named generator (ChaCha12) and every baseline's
//! own draws from Xoshiro256++, so a `rand` upgrade does not change a seed's figures.
//!
//! Objective: io_load Loads (maximised) on a surface whose io_load points list Loads (the
//! categorical scheduler surface, a throughput tune; tuned over the scheduler alone, as
//! measured), io_load Ratio (minimised) elsewhere. Costs are ln Ratio or −ln Loads.
//!
//! Methods (each trial = one no_load run + one io_load run for a Ratio, the io_load run alone
//! on a Loads surface, unless said otherwise; every baseline gets as many runs as ours):
//! - `grid3`: contest-style sweep: every grid point, one no_load run and three io_load runs;
//!   the lowest mean Ratio wins.
//! - `random`: k random grid points, one trial each; the lowest Ratio wins.
//! - `anneal`: argmin's SimulatedAnnealing on the log2-relaxed space, k trials, rounded to the
//!   nearest grid point; the lowest cost seen wins. A move changes one coordinate by up to
//!   ±1.5 grid steps (so most moves reach a neighbour; the earlier ±0.05 on a 0.125 grid
//!   never left the default).
//! - `pattern`: a local pattern search from the default, a race of the two best, and 2
//!   fresh check pairs with ours' test ([`pattern`]); issue #13's yardstick.
//! - `ttts`: top-two Thompson sampling (Russo 2016) over every setting, per-setting shrunk
//!   variances as ours, no check ([`ttts`]): the strongest global competitor we built.
//!   `ttts-check` is the same with `pattern`'s fresh-pair check; `ttts-arms` spends every
//!   run on the search (the default measured twice first) and checks on the search's own
//!   trials: a moderated one-sided t-test against the default at α 0.05 / m, Bonferroni over
//!   the m settings it measured ([`ttts::ttts_arms`]).
//! - `neldermead`: argmin's NelderMead on the log2-relaxed space, k trials, rounded.
//! - `ours`: `tune::optimise`; it keeps the default unless the final check is significant.
//!   When the check's best changed two or more knobs, each is put back to its default in
//!   turn and kept only if the effect needs it (`src/tune/solver/reduce.rs`);
//!   `ours-all-knobs` is the same tune without that step (and without its reserve of runs):
//!   the sweet spot keeps every knob the check's best changed. `ours-reserve` is `ours`
//!   with that step's reserve of runs (`tune::Options::reduce_reserve`), which a tune does
//!   not use.
//!   On a grid the budget can measure whole (the 9-, 4- and 27-setting surfaces) that is the
//!   screen (every setting's loaded runs once, a race, the no_load flatness test, the check:
//!   `src/tune/solver/screen.rs`), elsewhere the GP search. Budget: 12 trials (24 runs) on the
//!   9-setting surfaces (the `quick` policy's), 32 on the 3-knob one, 40 (80 runs) on the
//!   99-setting 2-D bowl. Its runs are counted as they ran (a screen trial is one run).
//!
//! - `oracle`: not a tuner but a reference for what the same runs can buy with perfect
//!   knowledge of where to look: it measures only the settings worth measuring and skips the
//!   check (see [`oracle`]). Not a proven bound: its selection rule is a heuristic too.
//!
//! Success: the chosen setting's true (noise-free) io_load Ratio is within 5% of the grid's
//! true optimum. Exact: success, and every knob that has no effect on the surface (any two
//! settings that differ in it alone have the same true objective) at its default: the stored
//! sweet spot changes only the knobs that carry the effect. `SHOOTOUT_STEP=1` prints, per
//! row, in how many tunes the step ran, its knob tests and their pairs. Runs: load runs, no_load included. "claims": how often a method answers with
//! a setting other than the default; for `ours` that is exactly a "significant" verdict. On the
//! flat surface every claim is a false positive.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use argmin::core::{CostFunction, Error as ArgminError, Executor};
use argmin::solver::neldermead::NelderMead;
use argmin::solver::simulatedannealing::{Anneal, SATempFunc, SimulatedAnnealing};
use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use sweetspot::bench::sim::SimDevice;
use sweetspot::bench::{Load, Testbed};
use sweetspot::tune::evaluator::NoRecord;
use sweetspot::tune::policy::{KnobChoice, Objective, Policy};
use sweetspot::tune::solver::confirm::KnownPoint;
use sweetspot::tune::space::Space;
use sweetspot::tune::{self, Options};

mod check;
mod pattern;
mod ttts;

/// A surface in the shoot-out. `truth` and `opt` are true costs (ln Ratio, or −ln Loads).
pub struct Surf {
    name: String,
    path: PathBuf,
    pub space: Space,
    truth: Vec<f64>,
    opt: f64,
    flat: bool,
    /// True: the objective is io_load Loads (maximised); false: io_load Ratio.
    pub loads: bool,
    /// Per coordinate, the smallest gap between grid values (the annealing step's scale).
    step: Vec<f64>,
    /// The knobs that have no effect: any two settings that differ in that knob alone have
    /// the same true objective.
    flat_knobs: Vec<String>,
}

#[derive(Clone, Copy, Debug)]
enum Method {
    Grid(u32),
    Random(usize),
    Anneal(usize),
    NelderMead(usize),
    Pattern(usize),
    Ttts(usize),
    TttsCheck(usize),
    TttsArms(usize),
    Ours(u32),
    /// Ours with `tune --confirm` of a known sweet spot.
    Confirm(u32, Known),
    OursAllKnobs(u32),
    OursReserve(u32),
    Oracle(u32),
}

/// The known sweet spot a `Confirm` row confirms.
#[derive(Clone, Copy, Debug)]
enum Known {
    /// The surface's true optimum (a flat surface: its first setting other than the default).
    Right,
    /// A best that moved: the best setting whose true objective is not within 5% of the
    /// optimum, the default aside (a flat surface: as `Right`, every setting is optimal).
    Moved,
    /// A sweet spot that stopped helping: the setting, the default aside, that is no better
    /// than the default and nearest it (if none is, the worst setting; a flat surface: as
    /// `Right`).
    Gone,
}

impl Known {
    /// The grid index of this known sweet spot on `s`.
    fn point(self, s: &Surf) -> usize {
        let others = (0..s.space.len()).filter(|&p| p != s.space.default);
        let near = |p: &usize| s.truth[*p] <= s.opt + 1.05f64.ln();
        let by_truth = |a: &usize, b: &usize| s.truth[*a].total_cmp(&s.truth[*b]);
        let first = others.clone().next().unwrap();
        match self {
            _ if s.flat => first,
            Known::Right => others.min_by(by_truth).unwrap(),
            Known::Moved => others
                .filter(|p| !near(p))
                .min_by(by_truth)
                .unwrap_or(first),
            Known::Gone => {
                // No better than the default (the nearest such), else the worst setting.
                let d = s.truth[s.space.default];
                let worse = others.clone().filter(|p| s.truth[*p] >= d).min_by(by_truth);
                worse.unwrap_or_else(|| others.max_by(by_truth).unwrap())
            }
        }
    }
}

impl Method {
    fn name(self) -> String {
        match self {
            Method::Grid(r) => format!("grid{r}"),
            Method::Random(_) => "random".into(),
            Method::Anneal(_) => "anneal".into(),
            Method::NelderMead(_) => "neldermead".into(),
            Method::Pattern(_) => "pattern".into(),
            Method::Ttts(_) => "ttts".into(),
            Method::TttsCheck(_) => "ttts-check".into(),
            Method::TttsArms(_) => "ttts-arms".into(),
            Method::Ours(_) => "ours".into(),
            Method::Confirm(_, Known::Right) => "confirm-right".into(),
            Method::Confirm(_, Known::Moved) => "confirm-moved".into(),
            Method::Confirm(_, Known::Gone) => "confirm-gone".into(),
            Method::OursAllKnobs(_) => "ours-all-knobs".into(),
            Method::OursReserve(_) => "ours-reserve".into(),
            Method::Oracle(_) => "oracle".into(),
        }
    }
}

fn policy(knobs: &[String], budget: u32, loads: bool) -> Policy {
    Policy {
        name: "shootout".into(),
        source: "examples/shootout.rs".into(),
        path: "examples/shootout.rs".into(),
        description: "io_load Ratio".into(),
        loads: vec![Load::NoLoad, Load::IoLoad],
        runs: 1,
        budget,
        alpha: 0.05,
        min_effect: 0.03,
        check_pairs: std::env::var("SS_CP")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2),
        objective: if loads {
            Objective::MaxLoads { load: Load::IoLoad }
        } else {
            Objective::MinRatio {
                loads: vec![Load::IoLoad],
            }
        },
        knobs: knobs
            .iter()
            .map(|k| (k.clone(), KnobChoice::default()))
            .collect(),
        guards: vec![],
        judges: None,
    }
}

fn load_surface(path: &Path) -> Surf {
    let sim = SimDevice::open(path, 0).expect("surface");
    let loads = sim.surface().points[0]
        .loads
        .get(&Load::IoLoad)
        .is_some_and(|m| m.loads.is_some());
    // A categorical surface: the scheduler alone (the tune it was measured from).
    let knobs: Vec<String> = if sim.surface().choice.is_some() {
        vec!["scheduler".into()]
    } else {
        sim.space().iter().map(|k| k.name.clone()).collect()
    };
    let space = Space::build(&sim.space(), &policy(&knobs, 20, loads), None).expect("space");
    let truth: Vec<f64> = space
        .points
        .iter()
        .map(|p| {
            if loads {
                -sim.expected(p, Load::IoLoad)
                    .and_then(|m| m.loads)
                    .expect("loads")
                    .ln()
            } else {
                sim.expected_ratio(p, Load::IoLoad)
                    .expect("io_load ratio")
                    .ln()
            }
        })
        .collect();
    let opt = truth.iter().copied().fold(f64::INFINITY, f64::min);
    let max = truth.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let name = path.file_stem().unwrap().to_string_lossy().into_owned();
    let dims = space.coords[0].len();
    let step = (0..dims)
        .map(|d| {
            let mut v: Vec<f64> = space.coords.iter().map(|c| c[d]).collect();
            v.sort_by(f64::total_cmp);
            v.windows(2)
                .map(|w| w[1] - w[0])
                .filter(|g| *g > 1e-9)
                .fold(1.0, f64::min)
        })
        .collect();
    let flat_knobs = flat_knobs(&space, &truth);
    Surf {
        flat: max - opt < 0.001,
        flat_knobs,
        name,
        path: path.to_path_buf(),
        space,
        truth,
        opt,
        loads,
        step,
    }
}

/// The knobs of `space` that have no effect on `truth`: every two settings that differ in
/// that knob alone have the same true cost (to 1e-9).
fn flat_knobs(space: &Space, truth: &[f64]) -> Vec<String> {
    space
        .knobs
        .iter()
        .filter(|k| {
            space.points.iter().enumerate().all(|(i, a)| {
                space.points.iter().enumerate().all(|(j, b)| {
                    let others_equal = a
                        .iter()
                        .filter(|(n, _)| n != k)
                        .all(|(n, v)| b.get(n) == Some(v))
                        && a.len() == b.len();
                    !others_equal || (truth[i] - truth[j]).abs() < 1e-9
                })
            })
        })
        .cloned()
        .collect()
}

/// True when `p` is at the default in every knob of `s` that has no effect
/// ([`Surf::flat_knobs`]): the stored sweet spot changes only knobs that matter.
fn flat_at_default(s: &Surf, p: usize) -> bool {
    let (pt, d) = (&s.space.points[p], &s.space.points[s.space.default]);
    s.flat_knobs.iter().all(|k| pt.get(k) == d.get(k))
}

/// Tunes of ours in which the step after the check (`src/tune/solver/reduce.rs`) ran, its
/// knob tests and their pairs, the knobs it kept untested and those it kept because the
/// improvement without them fell below the check's CI, summed over a row (`SHOOTOUT_STEP=1`
/// prints them).
static STEP: std::sync::Mutex<[u64; 5]> = std::sync::Mutex::new([0; 5]);

/// Load runs of one baseline trial: a no_load run and an io_load run for a Ratio, the io_load
/// run alone for Loads (a throughput tune needs no no_load; ours measures it so too).
pub fn per_trial(s: &Surf) -> u64 {
    if s.loads { 1 } else { 2 }
}

/// One trial's cost: one no_load run (a Ratio only) and `io_runs` io_load runs at point `p`;
/// ln Ratio, or −ln(mean Loads) on a Loads surface.
pub fn cost(sim: &mut SimDevice, s: &Surf, p: usize, io_runs: u32) -> f64 {
    sim.apply(&s.space.points[p]).expect("apply");
    if s.loads {
        let runs: Vec<_> = (0..io_runs)
            .map(|_| sim.run(Load::IoLoad).expect("run"))
            .collect();
        let n = f64::from(io_runs);
        return -(runs.iter().map(|r| r.loads.unwrap_or(0.0)).sum::<f64>() / n).ln();
    }
    let t0 = sim.run(Load::NoLoad).expect("run").time_s;
    let runs: Vec<_> = (0..io_runs)
        .map(|_| sim.run(Load::IoLoad).expect("run"))
        .collect();
    let n = f64::from(io_runs);
    (runs.iter().map(|r| r.time_s).sum::<f64>() / n / t0).ln()
}

/// The relaxed problem for argmin's continuous solvers: coordinates in [0, 1]ⁿ, rounded to the
/// nearest grid point; one trial per cost evaluation, at most `max` of them.
struct Relaxed<'a> {
    sim: RefCell<SimDevice>,
    s: &'a Surf,
    track: &'a Tracker,
    max: usize,
    rng: RefCell<Xoshiro256PlusPlus>,
}

/// Trials spent and the best (Ratio, point) seen; outside the problem so that a run stopped
/// by the budget (an error from `cost`, which makes argmin drop the problem) still answers.
struct Tracker {
    evals: Cell<usize>,
    best: Cell<(f64, usize)>,
}

impl Relaxed<'_> {
    fn nearest(&self, x: &[f64]) -> usize {
        let x: Vec<f64> = x.iter().map(|v| v.clamp(0.0, 1.0)).collect();
        (0..self.s.space.len())
            .min_by(|&a, &b| {
                let da: f64 = self.s.space.coords[a]
                    .iter()
                    .zip(&x)
                    .map(|(p, q)| (p - q).powi(2))
                    .sum();
                let db: f64 = self.s.space.coords[b]
                    .iter()
                    .zip(&x)
                    .map(|(p, q)| (p - q).powi(2))
                    .sum();
                da.total_cmp(&db)
            })
            .unwrap()
    }
}

impl CostFunction for Relaxed<'_> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, x: &Vec<f64>) -> Result<f64, ArgminError> {
        let t = self.track;
        if t.evals.get() >= self.max {
            return Err(ArgminError::msg("budget spent"));
        }
        t.evals.set(t.evals.get() + 1);
        let p = self.nearest(x);
        let r = cost(&mut self.sim.borrow_mut(), self.s, p, 1);
        if r < t.best.get().0 {
            t.best.set((r, p));
        }
        Ok(r)
    }
}

impl Anneal for Relaxed<'_> {
    type Param = Vec<f64>;
    type Output = Vec<f64>;
    type Float = f64;
    fn anneal(&self, x: &Vec<f64>, extent: f64) -> Result<Vec<f64>, ArgminError> {
        let mut rng = self.rng.borrow_mut();
        let mut y = x.clone();
        let i = (rng.next_u64() % y.len() as u64) as usize;
        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        // Up to ±1.5 grid steps of that coordinate, wider while the temperature is high.
        let reach = 1.5 * self.s.step[i] * (extent / 10.0).max(1.0);
        y[i] = (y[i] + (2.0 * u - 1.0) * reach).clamp(0.0, 1.0);
        Ok(y)
    }
}

/// Runs one method once: (chosen point, load runs used, claims an improvement).
fn run(m: Method, s: &Surf, seed: u64) -> (usize, u64, bool) {
    let mut sim = SimDevice::open(&s.path, seed).expect("surface");
    let n = s.space.len();
    match m {
        Method::Grid(r) => {
            let best = (0..n)
                .map(|p| (cost(&mut sim, s, p, r), p))
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .unwrap()
                .1;
            let runs = n as u64 * (u64::from(r) + per_trial(s) - 1);
            (best, runs, best != s.space.default)
        }
        Method::Random(k) => {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let mut pts: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                pts.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
            }
            let k = k.min(n);
            let best = pts[..k]
                .iter()
                .map(|&p| (cost(&mut sim, s, p, 1), p))
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .unwrap()
                .1;
            (best, per_trial(s) * k as u64, best != s.space.default)
        }
        Method::Anneal(k) | Method::NelderMead(k) => {
            let track = Tracker {
                evals: Cell::new(0),
                best: Cell::new((f64::INFINITY, s.space.default)),
            };
            let prob = Relaxed {
                sim: RefCell::new(sim),
                s,
                track: &track,
                max: k,
                rng: RefCell::new(Xoshiro256PlusPlus::seed_from_u64(seed ^ 77)),
            };
            let x0 = s.space.coords[s.space.default].clone();
            if let Method::Anneal(_) = m {
                let sa = SimulatedAnnealing::new_with_rng(
                    1.0,
                    Xoshiro256PlusPlus::seed_from_u64(seed ^ 99),
                )
                .unwrap()
                .with_temp_func(SATempFunc::Boltzmann);
                // Err means the trial budget was spent; the tracker has the answer.
                let _ = Executor::new(prob, sa)
                    .configure(|st| st.param(x0).max_iters(k as u64))
                    .run();
            } else {
                let d = x0.len();
                let mut simplex = vec![x0.clone()];
                for i in 0..d {
                    let mut v = x0.clone();
                    v[i] = if v[i] > 0.5 { v[i] - 0.3 } else { v[i] + 0.3 };
                    simplex.push(v);
                }
                let nm: NelderMead<Vec<f64>, f64> =
                    NelderMead::new(simplex).with_sd_tolerance(1e-4).unwrap();
                let _ = Executor::new(prob, nm)
                    .configure(|st| st.max_iters(k as u64))
                    .run();
            }
            let best = track.best.get().1;
            let runs = per_trial(s) * track.evals.get() as u64;
            (best, runs, best != s.space.default)
        }
        Method::Oracle(budget) => oracle(&mut sim, s, budget as usize),
        Method::Pattern(budget) => pattern::pattern(&mut sim, s, budget),
        Method::Ttts(k) => ttts::ttts(&mut sim, s, k, seed),
        Method::TttsCheck(k) => ttts::ttts_checked(&mut sim, s, k, check::pairs(s), seed),
        Method::TttsArms(k) => ttts::ttts_arms(&mut sim, s, k, seed),
        Method::Ours(budget) | Method::OursAllKnobs(budget) | Method::OursReserve(budget) => {
            ours(&mut sim, s, budget, seed, None, m)
        }
        Method::Confirm(budget, k) => {
            // As stored by an earlier tune where the spot was the best: the optimum's true
            // improvement over the default.
            let improvement = Some((s.truth[s.space.default] - s.opt).exp());
            let known = KnownPoint {
                point: k.point(s),
                improvement,
            };
            ours(&mut sim, s, budget, seed, Some(known), m)
        }
    }
}

/// Ours (method `m`: `ours`, `ours-all-knobs`, `ours-reserve` or a `confirm-*` row) on `s` at
/// `budget` trials with `seed`, confirming `confirm` first when given. Answers (chosen,
/// runs, claims).
fn ours(
    sim: &mut SimDevice,
    s: &Surf,
    budget: u32,
    seed: u64,
    confirm: Option<KnownPoint>,
    m: Method,
) -> (usize, u64, bool) {
    let knobs = s.space.knobs.clone();
    let pol = policy(&knobs, budget, s.loads);
    let out = tune::optimise(
        sim,
        &s.space,
        &pol,
        &mut NoRecord,
        Options {
            seed,
            log: std::env::var_os("SHOOTOUT_TRACE").map(|_| {
                let labels = s
                    .space
                    .points
                    .iter()
                    .map(sweetspot::knob::setting_label)
                    .collect();
                tune::observe::TrialLog::new(labels, "Ratio".into(), budget as u64, false)
            }),
            confirm,
            keep_every_changed_knob: matches!(m, Method::OursAllKnobs(_)),
            reduce_reserve: matches!(m, Method::OursReserve(_)),
            ..Options::default()
        },
    )
    .expect("tune");
    let v = out.verdict.expect("verdict");
    if !v.knobs.is_empty() {
        let mut st = STEP.lock().unwrap();
        st[0] += 1;
        let pairs: Vec<usize> = v.knobs.iter().filter_map(|k| k.pairs).collect();
        st[1] += pairs.len() as u64;
        st[2] += pairs.iter().sum::<usize>() as u64;
        let untested = sweetspot::tune::solver::KnobFinding::NotTested;
        st[3] += v.knobs.iter().filter(|k| k.finding == untested).count() as u64;
        st[4] += v
            .knobs
            .iter()
            .filter(|k| k.why.contains("fell below"))
            .count() as u64;
    }
    let chosen = if v.significant {
        v.best
    } else {
        s.space.default
    };
    if std::env::var_os("SHOOTOUT_TRACE").is_some() {
        eprintln!(
            "=> {} true {:.3} (best found {} true {:.3}; opt {:.3}) runs {} : {}",
            sweetspot::knob::setting_label(&s.space.points[chosen]),
            s.truth[chosen].exp(),
            sweetspot::knob::setting_label(&s.space.points[v.best]),
            s.truth[v.best].exp(),
            s.opt.exp(),
            out.runs,
            v.reason
        );
    }
    (chosen, out.runs, v.significant)
}

/// A reference, not a tuner: it knows which settings are worth measuring (true Ratio
/// within 40% of the optimum) and skips the rest, and it assumes the final check passes. Of
/// `budget` trials it keeps 5 as ours would (the default's first trial and a 2-pair check),
/// measures every candidate once, then re-measures, one trial at a time, whichever of the two
/// best scores has fewer trials (score: mean ln Ratio + 1.5 standard errors, sd the larger of
/// the pooled and the setting's own). Answers (chosen, runs, claims).
fn oracle(sim: &mut SimDevice, s: &Surf, budget: usize) -> (usize, u64, bool) {
    let cands: Vec<usize> = (0..s.space.len())
        .filter(|&p| s.truth[p] <= s.opt + 1.4f64.ln())
        .collect();
    let mut obs: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    let search = budget.saturating_sub(5);
    for &p in cands.iter().take(search) {
        obs.insert(p, vec![cost(sim, s, p, 1)]);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let var = |v: &[f64]| {
        let m = mean(v);
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() as f64 - 1.0)
    };
    let score = |obs: &BTreeMap<usize, Vec<f64>>, p: usize| {
        let (ss, df) = obs
            .values()
            .filter(|v| v.len() > 1)
            .fold((0.0, 0.0), |a, v| {
                (
                    a.0 + var(v) * (v.len() - 1) as f64,
                    a.1 + (v.len() - 1) as f64,
                )
            });
        let pool = if df > 0.0 { (ss / df).sqrt() } else { 0.1 };
        let v = &obs[&p];
        let own = if v.len() > 1 { var(v).sqrt() } else { 0.0 };
        mean(v) + 1.5 * pool.max(own) / (v.len() as f64).sqrt()
    };
    let ranked = |obs: &BTreeMap<usize, Vec<f64>>| {
        let mut r: Vec<usize> = obs.keys().copied().collect();
        r.sort_by(|&a, &b| score(obs, a).total_cmp(&score(obs, b)));
        r
    };
    for _ in obs.len()..search {
        let top = ranked(&obs);
        let p = *top.iter().take(2).min_by_key(|&&p| obs[&p].len()).unwrap();
        let r = cost(sim, s, p, 1);
        obs.get_mut(&p).unwrap().push(r);
    }
    let best = ranked(&obs).first().copied().unwrap_or(s.space.default);
    (best, per_trial(s) * budget as u64, true)
}

struct Row {
    success: f64,
    /// Success with every knob that has no effect at its default ([`flat_at_default`]).
    exact: f64,
    runs: f64,
    claims: f64,
}

fn evaluate(m: Method, s: &Surf, seeds: u64, from: u64) -> Row {
    let mut ok = 0;
    let mut exact = 0;
    let mut runs = 0u64;
    let mut claims = 0;
    for seed in from..from + seeds {
        let (p, r, c) = run(m, s, seed);
        let good = p < s.truth.len() && s.truth[p] <= s.opt + 1.05f64.ln();
        exact += (good && flat_at_default(s, p)) as u32;
        if !good && std::env::var_os("SHOOTOUT_FAILS").is_some() {
            let chose = s
                .space
                .points
                .get(p)
                .map_or_else(|| format!("point {p}"), sweetspot::knob::setting_label);
            eprintln!("fail: seed {seed}, chose {chose}");
        }
        ok += good as u32;
        runs += r;
        claims += c as u32;
    }
    Row {
        success: 100.0 * ok as f64 / seeds as f64,
        exact: 100.0 * exact as f64 / seeds as f64,
        runs: runs as f64 / seeds as f64,
        claims: 100.0 * claims as f64 / seeds as f64,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |k: &str| {
        args.iter()
            .position(|a| a == k)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let seeds: u64 = arg("--seeds").and_then(|s| s.parse().ok()).unwrap_or(50);
    let from: u64 = arg("--from").and_then(|s| s.parse().ok()).unwrap_or(1);
    // Surfaces with more settings are left out (a bounded run on a shared machine).
    let max_points: usize = arg("--max-points")
        .and_then(|s| s.parse().ok())
        .unwrap_or(usize::MAX);
    let only = arg("--only");
    let filter = arg("--surface");
    let curves = !args.iter().any(|a| a == "--no-curves");

    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/surfaces");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .filter(|p| {
            filter
                .as_ref()
                .is_none_or(|f| p.to_string_lossy().contains(f.as_str()))
        })
        .collect();
    files.sort();
    // The startup-* surfaces repeat the seed surface's io_load figures with start-up Times for
    // the judge (examples/judge_rates.rs measures them): left out, so the published tables
    // keep their rows.
    let surfs: Vec<Surf> = files
        .iter()
        .filter(|p| SimDevice::open(p, 0).is_ok_and(|d| d.surface().points[0].startup.is_empty()))
        .map(|p| load_surface(p))
        .filter(|s| s.space.len() <= max_points)
        .collect();

    let fixed: Option<u32> = arg("--budget").and_then(|s| s.parse().ok());
    // Trials per tune (two runs each): 12 (24 runs; the `quick` policy's was 12, now 8) on the 9-setting
    // surfaces, 32 (64 runs) on the 27-setting 3-knob one, 40 (80 runs: issue #13's target)
    // on the 99-setting ones.
    let budget_for = |s: &Surf| -> u32 {
        fixed.unwrap_or(match s.space.len() {
            0..=12 => 12,
            13..=30 => 32,
            _ => 40,
        })
    };
    // The baselines' trials: as many runs as ours' budget allows (two runs a trial, one on
    // a Loads surface).
    let k_for = |s: &Surf| -> usize { (2 * u64::from(budget_for(s)) / per_trial(s)) as usize };
    let methods = |s: &Surf| -> Vec<Method> {
        let mut v = vec![
            Method::Grid(3),
            Method::Random(k_for(s)),
            Method::Anneal(k_for(s)),
            Method::NelderMead(k_for(s)),
            Method::Pattern(k_for(s)),
            Method::Ttts(k_for(s)),
            Method::TttsCheck(k_for(s)),
            Method::TttsArms(k_for(s)),
            Method::Ours(budget_for(s)),
            Method::OursAllKnobs(budget_for(s)),
            Method::OursReserve(budget_for(s)),
        ];
        if only.as_ref().is_some_and(|o| o.starts_with("confirm")) {
            v.push(Method::Confirm(budget_for(s), Known::Right));
            v.push(Method::Confirm(budget_for(s), Known::Moved));
            v.push(Method::Confirm(budget_for(s), Known::Gone));
        }
        // The oracle assumes its check passes: meaningless where nothing is better.
        if !s.flat {
            v.push(Method::Oracle(k_for(s) as u32));
        }
        v
    };
    let keep = |m: &Method| {
        only.as_ref()
            .is_none_or(|o| m.name().starts_with(o.as_str()))
    };

    println!(
        "## Shoot-out: {seeds} seeds per surface, seeds {from}..={}\n",
        from + seeds - 1
    );
    println!(
        "success = chosen setting's true objective (io_load Ratio; Loads on the scheduler \
         surface) within 5% of the true optimum;"
    );
    println!(
        "runs = load runs per tune (no_load included); claims = answers other than the default"
    );
    println!(
        "(for ours: significant verdicts; on a flat surface every claim is a false positive).\n"
    );
    println!(
        "exact = success with every knob that has no effect on the surface at its default \
         (the stored sweet spot changes only knobs that matter).\n"
    );
    println!("| surface | points | method | success | exact | mean runs | claims |");
    println!("|---|---:|---|---:|---:|---:|---:|");
    let t0 = std::time::Instant::now();
    for s in &surfs {
        for m in methods(s).into_iter().filter(keep) {
            *STEP.lock().unwrap() = [0; 5];
            let r = evaluate(m, s, seeds, from);
            if std::env::var_os("SHOOTOUT_COUNTS").is_some() {
                let n = seeds as f64 / 100.0;
                eprintln!(
                    "count {} {} {:.0} {:.0} {:.0}",
                    s.name,
                    m.name(),
                    r.success * n,
                    r.claims * n,
                    r.exact * n
                );
            }
            if std::env::var_os("SHOOTOUT_STEP").is_some() {
                let [ran, tests, pairs, untested, below] = *STEP.lock().unwrap();
                eprintln!(
                    "step {} {}: ran in {ran} of {seeds} tunes, {tests} knob tests, {pairs} \
                     pairs; knobs kept untested {untested}, kept below the check's CI {below}",
                    s.name,
                    m.name()
                );
            }
            println!(
                "| {}{} | {} | {} | {:.0}% | {:.0}% | {:.1} | {:.0}% |",
                s.name,
                if s.flat { " (flat)" } else { "" },
                s.space.len(),
                m.name(),
                r.success,
                r.exact,
                r.runs,
                r.claims
            );
        }
    }
    eprintln!("(main table: {:.0} s)", t0.elapsed().as_secs_f64());
    if !curves {
        return;
    }
    println!("\n## Success versus runs\n");
    println!(
        "Every method at the same run budgets (two runs a trial: k trials or a budget of k); \
         each cell: success, and in brackets mean runs actually used. `grid` sweeps take their \
         own run counts, n × (1 + r), shown in the row.\n"
    );
    for s in surfs.iter().filter(|s| !s.flat) {
        let n = s.space.len();
        let ks: Vec<usize> = match n {
            0..=12 => vec![8, 10, 12, 14, 20],
            13..=30 => vec![16, 24, 32, 40],
            _ => vec![24, 40, 60, 80],
        };
        let dims = s.space.coords[0].len();
        println!("### {} ({n} settings)\n", s.name);
        let head: Vec<String> = ks.iter().map(|k| format!("{} runs", 2 * k)).collect();
        println!("| method | {} |", head.join(" | "));
        println!("|---|{}", "---:|".repeat(ks.len()));
        type Make = fn(usize) -> Method;
        let rows: [(&str, Make); 9] = [
            ("random", Method::Random),
            ("anneal", Method::Anneal),
            ("neldermead", Method::NelderMead),
            ("pattern", Method::Pattern),
            ("ttts", Method::Ttts),
            ("ttts-check", Method::TttsCheck),
            ("ttts-arms", Method::TttsArms),
            ("ours", |k| Method::Ours(k as u32)),
            ("oracle", |k| Method::Oracle(k as u32)),
        ];
        for (name, make) in rows {
            if !keep(&make(1)) {
                continue;
            }
            let cells: Vec<String> = ks
                .iter()
                .map(|&k| {
                    // Nelder–Mead's first simplex alone takes dims + 1 trials. (Random takes
                    // at most every setting once: its runs say so.)
                    if name == "neldermead" && k <= dims {
                        return "–".into();
                    }
                    // A baseline's trials are runs / per_trial; ours' budget is in full trials.
                    let trials = if name == "ours" {
                        k
                    } else {
                        (2 * k as u64 / per_trial(s)) as usize
                    };
                    let r = evaluate(make(trials), s, seeds, from);
                    format!("{:.0}% ({:.1})", r.success, r.runs)
                })
                .collect();
            println!("| {name} | {} |", cells.join(" | "));
        }
        if keep(&Method::Grid(1)) {
            let cells: Vec<String> = [1, 2, 3, 5]
                .iter()
                .map(|&r| {
                    let x = evaluate(Method::Grid(r), s, seeds, from);
                    format!("grid{r}: {:.0}% at {:.0} runs", x.success, x.runs)
                })
                .collect();
            println!("| grid | {} |", cells.join("; "));
        }
        println!();
    }
    eprintln!("(total: {:.0} s)", t0.elapsed().as_secs_f64());
}
