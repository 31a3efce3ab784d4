//! The smallest change that carries the effect: after a significant final check whose best
//! setting changed two or more knobs from the default, each changed knob is put back to its
//! default, one at a time, and kept only if the effect needs it (issue #35, item 3). Without
//! this step a sweet spot stores every knob the winner changed: two emulated hdd-5400 tunes
//! stored different schedulers and `fifo_batch` values, flat on that device, beside the
//! `wbt_lat_usec` that carried a 2× improvement.
//!
//! The rules, exactly:
//! - **Which knobs** (m of them): the knobs of the best whose value differs from the
//!   default's and that exist at both (the scheduler, and every knob the default's scheduler
//!   has too). A knob that exists only under the best's scheduler goes back with the
//!   scheduler: reverting the scheduler takes the default's scheduler and its knobs, each at
//!   the best's value where the best has it, else at the default's.
//! - **Order**: largest first: the knob's distance from the default in the grid's normalised
//!   coordinates ([`crate::tune::space`]: an integer knob's position on its log2 scale; a
//!   scheduler that differs counts 1, the whole range), ties by name.
//! - **Each test**: the candidate is the current best with that one knob at its default; a
//!   candidate that is not on the grid is not tested (the knob is kept, and the report says
//!   so). Fresh interleaved (default, candidate) pairs of the same part as the final check's
//!   (full trials, or loaded runs after the screen found no_load flat), as many as the check
//!   had (after a split check, `solver/split_check.rs`, as its answer had; at least
//!   `check_pairs`), and the final check's test of them (`solver/check.rs`: the
//!   same variance sources, the arms test on Loads) at level alpha / m (Bonferroni over the m
//!   knobs) with the same minimum effect. Only when the budget's runs left hold all those
//!   pairs; otherwise this and the knobs after it are kept, "not tested: no budget left".
//! - **Not needed** when the candidate passes that test AND its estimated improvement is no
//!   less than the 95% CI low bound of the best from the final check (a knob that carries
//!   part of the effect is not dropped because the rest still beats the minimum effect); the
//!   bound is the final check's throughout, so a chain of drops cannot drift below it. The
//!   candidate then becomes the best, with its own test's figures in the verdict, and the
//!   next knob is tried from it. A candidate that breaks a guard rail on its means keeps the
//!   knob.
//! - When one changed knob is left it carries the effect by the final check itself (putting
//!   it back is the default), and is not tested again.
//! - A failed trial ends the step: the knobs not yet decided are kept.
//! - **Budget**: a tune keeps no runs for the step: it has what the final check left, which
//!   takes the runs the search leaves up to `CHECK_CAP` × `check_pairs` pairs, so at the
//!   shipped budgets the step is seldom tested and mostly reports "not tested: no budget
//!   left". The shoot-out's `ours-reserve` turns a reserve on
//!   ([`BayesOpt::with_reduce_reserve`]): while the check's own plan is well below its cap
//!   (a large effect, [`RESERVE_MARGIN`]), the search and the check leave room for m tests
//!   of `check_pairs` pairs each (the tests are then that size, not the check's: a reserve
//!   of tests as large as the check starved the search). Measured there
//!   (`examples/shootout-results.md`): the surface where one of three knobs carries the
//!   effect stores exactly that knob in most tunes instead of a few, at a cost to the 3-knob
//!   bowl, whose every knob carries part of its effect; a tune does not use it until that
//!   trade is decided.
//!
use super::check::{CheckBasis, PairVariance, arms_welch};
use super::core::Core;
use super::{BayesOpt, Phase, Step};
use crate::knob::{KnobValue, Setting};
use crate::stats;
use crate::tune::evaluator::{Part, Trial};
use serde::{Deserialize, Serialize};

/// What the step found for one knob the check's best changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KnobFinding {
    /// Needed: the best without it was not shown to keep the effect (or it is the last knob
    /// changed, which the final check itself showed).
    Carries,
    /// Not needed: back at its default, the effect held; the sweet spot leaves it there.
    LeftAtDefault,
    /// Kept without a test (no budget left, not on the grid, a failed trial).
    NotTested,
}

/// One changed knob's record in the [`super::Verdict`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KnobRecord {
    /// Knob name.
    pub knob: String,
    /// Its value at the default.
    pub from: Option<KnobValue>,
    /// Its value at the final check's best.
    pub to: Option<KnobValue>,
    /// What the step found.
    pub finding: KnobFinding,
    /// Why, in words (e.g. `not tested: no budget left`).
    pub why: String,
    /// The improvement (> 1 better) over the default of the best with this knob at its
    /// default, with its 95% CI; for the last knob left, the best's own.
    pub improvement: Option<(f64, f64, f64)>,
    /// One-sided p-value of its test (`None`: not tested).
    pub p_value: Option<f64>,
    /// Interleaved (default, candidate) pairs of its test (`None`: not tested).
    pub pairs: Option<usize>,
    /// The level its test was judged at: alpha / m.
    pub level: f64,
}

/// The test under way: one knob back at its default.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct KnobTest {
    knob: String,
    /// Grid index of the best with `knob` at its default.
    candidate: usize,
    /// Index into the core's check trials where this test's pairs begin.
    from: usize,
}

/// The step's state, inside [`BayesOpt`].
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Reduce {
    /// True: the step never runs (the shoot-out's baseline).
    pub(super) off: bool,
    /// Per grid point, its setting; empty: no step (a solver built without its space).
    #[serde(skip)]
    settings: Vec<Setting>,
    /// The space's knobs, scheduler first when tuned (their coordinate columns).
    knobs: Vec<String>,
    /// Knobs still to test, in order.
    todo: Vec<String>,
    /// The test running.
    test: Option<KnobTest>,
    /// The records so far, in the order decided.
    records: Vec<KnobRecord>,
    /// m: the knobs the check's best changed.
    m: usize,
    /// The final check's best (grid index).
    check_best: usize,
    /// The final check's 95% CI low bound of the best's improvement.
    ci_low: f64,
    /// Pairs per test.
    pairs: usize,
    /// The part each pair measures.
    part: Part,
}

impl Reduce {
    /// A step over the grid's `settings` (per point) and `knobs` (the space's names).
    pub(crate) fn new(settings: Vec<Setting>, knobs: Vec<String>) -> Self {
        Reduce {
            settings,
            knobs,
            ..Reduce::default()
        }
    }

    /// The test level: alpha / m.
    fn level(&self, alpha: f64) -> f64 {
        alpha / self.m.max(1) as f64
    }
}

/// The knobs of `best` that differ from `default`, each present at both (module docs).
pub(crate) fn changed(best: &Setting, default: &Setting) -> Vec<String> {
    default
        .iter()
        .filter(|(k, v)| best.get(*k).is_some_and(|b| b != *v))
        .map(|(k, _)| k.clone())
        .collect()
}

/// `best` with `knob` back at its `default` value; the scheduler goes back with the knobs
/// that exist only under it (module docs).
pub(crate) fn revert(best: &Setting, default: &Setting, knob: &str) -> Setting {
    if knob == "scheduler" {
        let mut s = default.clone();
        for (k, v) in s.iter_mut() {
            if k != "scheduler"
                && let Some(b) = best.get(k)
            {
                *v = b.clone();
            }
        }
        return s;
    }
    let mut s = best.clone();
    if let Some(d) = default.get(knob) {
        s.insert(knob.to_string(), d.clone());
    }
    s
}

/// The step's reserve ([`BayesOpt::with_reduce_reserve`]) is kept only while the check's
/// own plan needs at least this many pairs fewer than its cap (`check_reserve` in
/// `solver/screen/plan.rs`: 90% power at the leader's estimated effect, at most
/// `CHECK_MAX_SHARE` of the budget): a large effect, whose test without a flat knob is cheap
/// and decisive. On a small one the tests cannot tell a knob that carries part of the effect
/// from a flat one, and the runs are the search's and the check's. (Shoot-out, dev seeds
/// 1..100, `ours-reserve`, exact tunes on the one-of-three surface / tunes found on the 3-knob
/// bowl: a reserve whatever the effect 90% / 43%; kept while the plan is below its cap by 1
/// pair 90% / 85%, by 2 89% / 86%, **by 3 88% / 89%**; no reserve 17% / 94%.)
pub(crate) const RESERVE_MARGIN: usize = 3;

impl Core {
    /// The runs the final check's reserve of `n` pairs of `per` runs each (at most `most`
    /// pairs) becomes with the step's reserve, when it is on
    /// ([`BayesOpt::with_reduce_reserve`]), some setting of the grid changes m ≥ 2 knobs (m
    /// the most any does) and `n` is [`RESERVE_MARGIN`] or more below `most`: room for m tests
    /// of `check_pairs` pairs of the cheapest part (loaded runs when the objective may be
    /// measured in parts). Not only when the leader changes two or more: the answer is often
    /// another setting than the search's leader of the moment. Otherwise `n × per`. Notes in
    /// `reduce_room` whether it kept the room ([`Core::check_share`]).
    pub(super) fn with_reduce_reserve(&self, n: usize, most: usize, per: usize) -> usize {
        let cheapest = if self.cfg.runs_loaded > 0 {
            self.cfg.runs_loaded
        } else {
            self.cfg.runs_full
        };
        let room = match self.changed.iter().max() {
            Some(&m) if m >= 2 && n + RESERVE_MARGIN <= most => {
                m * self.cfg.check_pairs.max(1) * 2 * cheapest
            }
            _ => 0,
        };
        self.reduce_room.set(room > 0);
        n * per + room
    }

    /// Of `fit` pairs that the runs left hold, the final check's share for `best`: when the
    /// search's last plan kept the step's room and `best` changed m ≥ 2 knobs, all but m ×
    /// `check_pairs` (the step's tests), at least `check_pairs` (or `fit`, if fewer);
    /// otherwise all.
    pub(super) fn check_share(&self, best: usize, fit: usize) -> usize {
        match self.changed.get(best) {
            Some(&m) if m >= 2 && self.reduce_room.get() => {
                let k = self.cfg.check_pairs.max(1);
                fit.saturating_sub(m * k).max(fit.min(k))
            }
            _ => fit,
        }
    }

    /// Runs left in the budget (the screen's budget is in runs; a GP trial is a full one).
    fn runs_left(&self) -> usize {
        (self.cfg.budget * self.cfg.runs_full).saturating_sub(self.runs)
    }

    /// Load runs in one trial of `part`.
    fn runs_of(&self, part: Part) -> usize {
        match part {
            Part::Full => self.cfg.runs_full,
            Part::Loaded => self.cfg.runs_loaded,
            Part::NoLoad => self.cfg.runs_no_load,
        }
        .max(1)
    }
}

impl BayesOpt {
    /// Sets the grid's settings and knob names, so that a significant best that changed two
    /// or more knobs is reduced to the knobs that carry the effect (module docs).
    pub(crate) fn with_settings(mut self, settings: Vec<Setting>, knobs: Vec<String>) -> Self {
        let off = self.reduce.off;
        self.reduce = Reduce::new(settings, knobs);
        self.reduce.off = off;
        self
    }

    /// Turns the step off (the shoot-out's baseline).
    pub(crate) fn without_reduce(mut self) -> Self {
        self.reduce.off = true;
        self.core.changed.clear();
        self
    }

    /// Turns on the step's reserve of runs ([`Core::with_reduce_reserve`],
    /// [`Core::check_share`]): the search and the final check leave room for a test of
    /// `check_pairs` pairs per changed knob while the check's plan is [`RESERVE_MARGIN`]
    /// pairs below its cap. Off in a tune (module docs: the shoot-out's trade).
    pub(crate) fn with_reduce_reserve(mut self) -> Self {
        if !self.reduce.off
            && let Some(d) = self.reduce.settings.get(self.core.default)
        {
            self.core.changed = self
                .reduce
                .settings
                .iter()
                .map(|s| changed(s, d).len())
                .collect();
        }
        self
    }

    /// The step's order: the changed knobs of `best`, largest distance from the default
    /// first, ties by name.
    fn order(&self, best: usize) -> Vec<String> {
        let r = &self.reduce;
        let default = &r.settings[self.core.default];
        let mut ks = changed(&r.settings[best], default);
        let ints: Vec<&String> = r.knobs.iter().filter(|k| *k != "scheduler").collect();
        let width = self.core.coords.first().map_or(0, Vec::len);
        let n_sched = width.saturating_sub(ints.len());
        let dist = |k: &String| -> f64 {
            if k == "scheduler" {
                return 1.0;
            }
            let Some(i) = ints.iter().position(|x| *x == k) else {
                return 0.0;
            };
            let c = |p: usize| self.core.coords[p].get(n_sched + i).copied();
            match (c(best), c(self.core.default)) {
                (Some(a), Some(b)) => (a - b).abs(),
                _ => 0.0,
            }
        };
        ks.sort_by(|a, b| dist(b).total_cmp(&dist(a)).then_with(|| a.cmp(b)));
        ks
    }

    /// Starts the step when the check has just concluded significant with a best that
    /// changed two or more knobs; otherwise does nothing.
    pub(super) fn start_reduce(&mut self, basis: &CheckBasis) {
        let Some(v) = self.core.verdict.as_ref() else {
            return;
        };
        if self.reduce.off || !v.significant || self.reduce.settings.is_empty() {
            return;
        }
        let order = self.order(v.best);
        if order.len() < 2 {
            return;
        }
        let r = &mut self.reduce;
        r.m = order.len();
        r.check_best = v.best;
        r.todo = order;
        r.ci_low = v.improvement.map_or(f64::INFINITY, |i| i.1);
        // With the reserve, the tests are its size: `check_pairs` pairs each.
        r.pairs = if self.core.changed.is_empty() {
            v.pairs.unwrap_or(0).max(self.core.cfg.check_pairs).max(1)
        } else {
            self.core.cfg.check_pairs.max(1)
        };
        r.part = if basis.loaded_pairs || basis.arms_test.is_some() {
            Part::Loaded
        } else {
            Part::Full
        };
        self.next_knob();
    }

    /// Queues the next knob's test, or ends the step.
    fn next_knob(&mut self) {
        let level = self.reduce.level(self.core.cfg.alpha);
        while !self.reduce.todo.is_empty() {
            let Some(best) = self.core.verdict.as_ref().map(|v| v.best) else {
                return;
            };
            let default = self.reduce.settings[self.core.default].clone();
            let now = changed(&self.reduce.settings[best], &default);
            let knob = self.reduce.todo.remove(0);
            if !now.contains(&knob) {
                continue;
            }
            if now.len() == 1 {
                let v = self.core.verdict.as_ref();
                self.record(KnobRecord {
                    knob,
                    from: None,
                    to: None,
                    finding: KnobFinding::Carries,
                    why: "the only knob left changed: the best's own improvement".into(),
                    improvement: v.and_then(|v| v.improvement),
                    p_value: None,
                    pairs: None,
                    level,
                });
                continue;
            }
            let cand = revert(&self.reduce.settings[best], &default, &knob);
            let Some(candidate) = self.reduce.settings.iter().position(|s| *s == cand) else {
                self.record(not_tested(
                    knob,
                    "not tested: the best with it at its default is not on the grid",
                    level,
                ));
                continue;
            };
            let (n, part) = (self.reduce.pairs, self.reduce.part);
            if self.core.runs_left() < 2 * n * self.core.runs_of(part) {
                self.record(not_tested(knob, "not tested: no budget left", level));
                for k in std::mem::take(&mut self.reduce.todo) {
                    if now.contains(&k) {
                        self.record(not_tested(k, "not tested: no budget left", level));
                    }
                }
                break;
            }
            self.queue_test(knob, candidate, n, part, &default);
            return;
        }
        self.end_reduce();
    }

    /// Queues `n` interleaved (default, `candidate`) pairs of `part` for `knob`'s test.
    fn queue_test(&mut self, knob: String, candidate: usize, n: usize, part: Part, d: &Setting) {
        let at = d
            .get(&knob)
            .map_or_else(|| "its default".to_string(), KnobValue::to_string);
        let core = &mut self.core;
        core.phase = Phase::Reduce;
        for i in 1..=n {
            for (point, who) in [(core.default, "default"), (candidate, "without it")] {
                core.queue.push_back(Step {
                    point,
                    why: format!("is {knob} needed? {who} ({knob}={at}), pair {i} of {n}"),
                    check: true,
                    part,
                });
            }
        }
        self.reduce.test = Some(KnobTest {
            knob,
            candidate,
            from: self.core.check_obs.len(),
        });
    }

    /// Ends the test under way when its queue is empty (`feasible`: the candidate keeps the
    /// guard rails on its means), then queues the next.
    pub(super) fn conclude_knob(&mut self, feasible: &dyn Fn(usize) -> bool) {
        let Some(t) = self.reduce.test.take() else {
            return self.end_reduce();
        };
        let level = self.reduce.level(self.core.cfg.alpha);
        let basis = self.check_basis(t.candidate);
        let out = knob_test(&self.core, &basis, t.candidate, t.from);
        let ratio = out.improvement.map(|i| i.0);
        let passes = out.p_value.is_some_and(|p| p < level);
        let holds = ratio.is_some_and(|r| r >= self.reduce.ci_low);
        let rails = feasible(t.candidate);
        let (finding, why) = match (passes, holds, rails) {
            (true, true, true) => (
                KnobFinding::LeftAtDefault,
                "without it the effect held".to_string(),
            ),
            (true, true, false) => (
                KnobFinding::Carries,
                "without it a guard rail breaks".to_string(),
            ),
            (true, false, _) => (
                KnobFinding::Carries,
                format!(
                    "without it the improvement fell below the final check's 95% CI low \
                     bound {:.2}",
                    self.reduce.ci_low
                ),
            ),
            (false, _, _) => (
                KnobFinding::Carries,
                "without it the effect was not shown".to_string(),
            ),
        };
        if finding == KnobFinding::LeftAtDefault
            && let Some(v) = self.core.verdict.as_mut()
        {
            v.best = t.candidate;
            v.improvement = out.improvement;
            v.p_value = out.p_value;
            v.pairs = Some(out.pairs);
            v.every_trial = basis.arms_test.is_some();
            self.core.incumbent = t.candidate;
        }
        self.record(KnobRecord {
            knob: t.knob,
            from: None,
            to: None,
            finding,
            why,
            improvement: out.improvement,
            p_value: out.p_value,
            pairs: Some(out.pairs),
            level,
        });
        self.next_knob();
    }

    /// A trial of the step failed: the knobs not yet decided are kept.
    pub(super) fn reduce_failed(&mut self, t: &Trial) {
        let level = self.reduce.level(self.core.cfg.alpha);
        let why = format!(
            "not tested: a trial failed ({})",
            t.failed.clone().unwrap_or_default()
        );
        let mut left: Vec<String> = self
            .reduce
            .test
            .take()
            .map(|t| t.knob)
            .into_iter()
            .collect();
        left.append(&mut self.reduce.todo);
        for k in left {
            self.record(not_tested(k, &why, level));
        }
        self.core.queue.clear();
        self.end_reduce();
    }

    /// Adds `r` to the records, with the knob's values at the default and at the check's
    /// best.
    fn record(&mut self, mut r: KnobRecord) {
        let at = |p: usize| {
            self.reduce
                .settings
                .get(p)
                .and_then(|s| s.get(&r.knob))
                .cloned()
        };
        r.from = at(self.core.default);
        r.to = at(self.reduce.check_best);
        self.reduce.records.push(r);
    }

    /// Ends the step: the records go into the verdict, its reason says what was found.
    fn end_reduce(&mut self) {
        let records = std::mem::take(&mut self.reduce.records);
        self.core.queue.clear();
        self.core.phase = Phase::Done;
        let Some(v) = self.core.verdict.as_mut() else {
            return;
        };
        if !records.is_empty() {
            v.reason.push_str(&format!(
                "; {}",
                summary(&records, self.reduce.m, self.core.cfg.alpha)
            ));
        }
        v.knobs = records;
    }
}

/// A knob kept without a test.
fn not_tested(knob: String, why: &str, level: f64) -> KnobRecord {
    KnobRecord {
        knob,
        from: None,
        to: None,
        finding: KnobFinding::NotTested,
        why: why.to_string(),
        improvement: None,
        p_value: None,
        pairs: None,
        level,
    }
}

/// The verdict's words for the step: which knobs carry the effect, which were left at their
/// default, which were not tested.
pub(crate) fn summary(records: &[KnobRecord], m: usize, alpha: f64) -> String {
    let of = |f: KnobFinding| -> Vec<&str> {
        records
            .iter()
            .filter(|r| r.finding == f)
            .map(|r| r.knob.as_str())
            .collect()
    };
    let mut parts = Vec::new();
    let carries = of(KnobFinding::Carries);
    if !carries.is_empty() {
        let verb = if carries.len() == 1 {
            "carries"
        } else {
            "carry"
        };
        parts.push(format!("{} {verb} the effect", carries.join(", ")));
    }
    let left = of(KnobFinding::LeftAtDefault);
    if !left.is_empty() {
        parts.push(format!("{} left at the default", left.join(", ")));
    }
    let untested = of(KnobFinding::NotTested);
    if !untested.is_empty() {
        parts.push(format!("{} kept untested", untested.join(", ")));
    }
    let level = if records.iter().any(|r| r.pairs.is_some()) {
        format!(
            " (each tested without it at alpha {alpha} / {m} = {:.4})",
            alpha / m.max(1) as f64
        )
    } else {
        String::new()
    };
    format!(
        "of the {m} knobs the check's best changed, {}{level}",
        parts.join("; ")
    )
}

/// One knob's test: its fresh pairs' figures.
struct KnobOutcome {
    p_value: Option<f64>,
    improvement: Option<(f64, f64, f64)>,
    pairs: usize,
}

/// The final check's test (`solver/check.rs`, [`Core::conclude`]) of `cand` against the
/// default on the check trials from index `from` on (this test's pairs): the mean from those
/// pairs, the variance from them and every trial of the two settings (as `basis` says), H0
/// "at most `min_effect` better"; the arms test when `basis` has its samples.
fn knob_test(core: &Core, basis: &CheckBasis, cand: usize, from: usize) -> KnobOutcome {
    let fresh = &core.check_obs[from.min(core.check_obs.len())..];
    let of = |p: usize| -> Vec<f64> {
        fresh
            .iter()
            .filter(|o| o.point == p)
            .map(|o| o.cost)
            .collect()
    };
    let (dc, cc) = (of(core.default), of(cand));
    let n = dc.len().min(cc.len());
    if n == 0 {
        return KnobOutcome {
            p_value: None,
            improvement: None,
            pairs: 0,
        };
    }
    let d: Vec<f64> = cc[..n].iter().zip(&dc[..n]).map(|(c, d)| c - d).collect();
    let all = |p: usize| -> Vec<f64> {
        let mut v = core.objective_costs(p);
        v.extend(core.check_costs(p));
        v
    };
    let sd_df = match basis.variance {
        PairVariance::Arms(arms) => {
            stats::paired_variance_arms(&d, arms.map(|a| (a.variance, a.df)))
        }
        PairVariance::FullTrials => stats::paired_variance(&d, &all(cand), &all(core.default)),
    }
    .map(|(v, df)| (v.sqrt(), df));
    let shift = (1.0 + core.cfg.min_effect).ln();
    let shifted: Vec<f64> = d.iter().map(|x| x + shift).collect();
    let mut p_value = sd_df
        .and_then(|(sd, df)| stats::paired_less_pooled(&shifted, sd, df))
        .map(|t| t.p_value);
    let mut improvement = sd_df.and_then(|(sd, df)| {
        let m = stats::mean(&d);
        let half = stats::t_quantile(0.975, df)? * sd / (d.len() as f64).sqrt();
        Some(((-m).exp(), (-m - half).exp(), (-m + half).exp()))
    });
    if let Some(a) = &basis.arms_test {
        let t = arms_welch(&a.best, &a.default, shift);
        p_value = t.map(|t| t.0);
        improvement = t.map(|t| t.1);
    }
    KnobOutcome {
        p_value,
        improvement,
        pairs: n,
    }
}

#[cfg(test)]
mod tests;
