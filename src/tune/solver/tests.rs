//! Tests of [`super`].

use super::gp_search::{GpSearch, ei_why};
use super::*;

/// A solver over 9 one-dimensional settings, default 5, with these search trials.
pub(in crate::tune::solver) fn solver(obs: &[(usize, f64)]) -> BayesOpt {
    let cfg = SolverConfig {
        budget: 20,
        check_pairs: 2,
        alpha: 0.05,
        min_effect: 0.03,
        seed: 1,
        minimize: true,
        runs_full: 2,
        runs_loaded: 0,
        runs_no_load: 0,
    };
    let coords = (0..9).map(|i| vec![i as f64 / 8.0]).collect();
    let mut s = BayesOpt::new(cfg, coords, 5);
    s.core.obs = obs.to_vec();
    s
}

#[test]
fn the_challenger_is_the_most_optimistic_setting_not_the_incumbents_twin() {
    // Settings 5 and 6 four trials each near 0.8 (6 the best; a flat child knob's twins);
    // setting 2, alone in its group (a scheduler without kin), once at 0.78; the rest once
    // at 1.0.
    let mut obs: Vec<(usize, f64)> = [0, 1, 3, 4, 7, 8].iter().map(|&p| (p, 1.0)).collect();
    obs.extend([(6, 0.70), (6, 0.90), (6, 0.72), (6, 0.86)]);
    obs.extend([(5, 0.72), (5, 0.92), (5, 0.74), (5, 0.88)]);
    obs.push((2, 0.78));
    let s = solver(&obs).with_groups(vec![0, 0, 1, 0, 0, 0, 0, 0, 0]);
    let all = |_: usize| true;
    // The second-best score is the twin (5): measuring it again teaches nothing new.
    let second = (0..9)
        .filter(|&p| p != 6)
        .min_by(|&a, &b| s.core.score(a).total_cmp(&s.core.score(b)))
        .unwrap();
    assert_eq!(second, 5);
    // The lower bound picks the setting measured once that may still be best.
    assert_eq!(GpSearch::challenger_of(&s.core, 6, &all), Some(2));
    // Unless it breaks a guard rail.
    assert_eq!(
        GpSearch::challenger_of(&s.core, 6, &|p: usize| p != 2),
        Some(5)
    );
}

#[test]
fn the_incumbents_trials_bound_the_separation_whichever_challenger() {
    // The incumbent (6) with SEPARATE_CAP − 1 trials, a challenger (2, alone in its group)
    // once, within noise: one more round is queued, the incumbent and the challenger.
    let mut obs: Vec<(usize, f64)> = [0, 1, 3, 4, 5, 7, 8].iter().map(|&p| (p, 1.0)).collect();
    obs.extend((0..SEPARATE_CAP - 1).map(|i| (6, if i % 2 == 0 { 0.72 } else { 0.88 })));
    obs.push((2, 0.80));
    let all = |_: usize| true;
    let mut s = solver(&obs).with_groups(vec![0, 0, 1, 0, 0, 0, 0, 0, 0]);
    s.core.incumbent = 6;
    assert!(GpSearch::separate_top_two(&mut s.core, &all));
    let queued: Vec<usize> = s.core.queue.iter().map(|q| q.point).collect();
    assert_eq!(queued, vec![6, 2]);
    // At SEPARATE_CAP trials of the incumbent no round is queued, though the challenger
    // has one trial (the cap once needed both at it, so new challengers kept it going).
    obs.push((6, 0.80));
    let mut s = solver(&obs).with_groups(vec![0, 0, 1, 0, 0, 0, 0, 0, 0]);
    s.core.incumbent = 6;
    assert!(!GpSearch::separate_top_two(&mut s.core, &all));
    assert!(s.core.queue.is_empty());
}

#[test]
fn a_setting_measured_once_that_may_beat_the_best_is_worth_measuring_again() {
    let base: Vec<(usize, f64)> = [0, 1, 3, 4, 5, 7, 8].iter().map(|&p| (p, 1.0)).collect();
    let mut obs = base.clone();
    obs.extend([(6, 0.70), (6, 0.90), (6, 0.72), (6, 0.86)]);
    obs.push((2, 0.82));
    let s = solver(&obs).with_groups(vec![0, 0, 1, 0, 0, 0, 0, 0, 0]);
    let all = |_: usize| true;
    // The reference plan uses: the lowest posterior mean + 1 sd (6's, with 4 trials).
    let best = GpSearch::effective_best(&s.core, &s.core.measured(), &all).unwrap();
    let (m6, v6) = s.core.posterior(6);
    assert!((best - (m6 + v6.sqrt())).abs() < 1e-12, "{best}");
    let once = GpSearch::augmented_ei(&s.core, 2, best, 0.1);
    // No kin: its posterior is its one trial, with the noise pooled from setting 6.
    assert!((s.core.posterior(2).0 - 0.82).abs() < 1e-12);
    assert!(once > 1e-3, "{once}");
    // The same mean over five trials: much less left to learn.
    obs.extend([(2, 0.80), (2, 0.84), (2, 0.82), (2, 0.82)]);
    let s5 = solver(&obs).with_groups(vec![0, 0, 1, 0, 0, 0, 0, 0, 0]);
    let five = GpSearch::augmented_ei(
        &s5.core,
        2,
        GpSearch::effective_best(&s5.core, &s5.core.measured(), &all).unwrap(),
        0.1,
    );
    assert!(five < once / 3.0, "{five} vs {once}");
    // A setting far worse than the best: next to nothing. Unmeasured: nothing.
    assert!(GpSearch::augmented_ei(&s.core, 8, best, 0.1) < 1e-3);
    let s0 = solver(&base);
    assert_eq!(GpSearch::augmented_ei(&s0.core, 6, 0.8, 0.1), 0.0);
}

#[test]
fn the_why_of_an_expected_improvement_pick_reads_as_figures() {
    // The model expects 10% less cost: a predicted gain.
    let w = ei_why(0.11, 0.9_f64.ln(), 0.1, 0.0);
    assert_eq!(
        w,
        "expected improvement 11.6%: the model predicts 10.0% better than the best"
    );
    // Far worse but uncertain (a guard breaker's neighbour): a chance, not "+4118%".
    let w = ei_why(0.01, 3.74, 2.0, 0.0);
    assert_eq!(
        w,
        "expected improvement 1.0%: exploring, a 3% chance to beat the best"
    );
}

/// A problem over the 9 settings of [`solver`]: a bowl whose bottom, setting 3, is 22%
/// better than the default (5), with a little deterministic noise; setting 3 breaks a guard rail on its means once more than `rails_hold_for` trials were
/// measured (the check's, when that is the search budget).
struct Railed {
    rails_hold_for: usize,
    calls: std::cell::Cell<usize>,
}

impl Measure for Railed {
    fn measure(&self, point: usize) -> crate::Result<Trial> {
        let k = self.calls.get() + 1;
        self.calls.set(k);
        let c = 0.1 * (point as f64 - 3.0).abs() + 0.01 * (k as f64 * 1.7).sin();
        Ok(Trial {
            id: 0,
            point,
            runs: Vec::new(),
            value: c.exp(),
            cost: c,
            penalty: 0.0,
            failed: None,
            refused: None,
            guards_broken: Vec::new(),
        })
    }
    fn feasible(&self, point: usize) -> bool {
        point != 3 || self.calls.get() <= self.rails_hold_for
    }
}

/// The guard rails are judged once more when the check ends, on the answer's means with
/// the check's trials in: a best that breaks one there keeps the default (its figures
/// still named as the best found), though its check alone would be significant.
#[test]
fn a_best_that_breaks_a_rail_in_the_check_keeps_the_default() {
    let run = |rails_hold_for: usize| {
        let s = solver(&[]);
        let search = s.core.search_budget();
        let problem = Railed {
            rails_hold_for,
            calls: std::cell::Cell::new(0),
        };
        let res = argmin::core::Executor::new(problem, s)
            .configure(|st: TuneState| st.max_iters(100))
            .ctrlc(false)
            .run()
            .unwrap();
        let calls = res.problem.problem.as_ref().unwrap().calls.get();
        (res.solver.verdict().cloned().unwrap(), search, calls)
    };
    let (free, search, calls) = run(usize::MAX);
    assert!(free.significant && free.best == 3, "{free:?}");
    assert!(calls > search, "the check measured: {calls} > {search}");
    let (vetoed, _, _) = run(search);
    assert!(!vetoed.significant && vetoed.best == 3, "{vetoed:?}");
    assert!(
        vetoed.reason.contains("breaks a guard rail"),
        "{}",
        vetoed.reason
    );
}

#[test]
fn a_setting_that_measured_better_than_a_best_scoring_default_gets_the_check() {
    // The default replicated four times around 1.0; setting 3 once at 0.99: its penalty
    // (one trial) lets the default score best, yet it measured better, so it is checked.
    let mut s = solver(&[(5, 1.02), (5, 0.98), (5, 1.01), (5, 0.99), (3, 0.99)]);
    assert_eq!(s.core.pick_incumbent(&|_| true), 5);
    s.core.start_check("search budget spent", &|_| true);
    assert_eq!((s.core.phase, s.core.incumbent), (Phase::Check, 3));
    let why = &s.core.queue.front().unwrap().why;
    assert!(
        why.contains(
            "the default had the best score, but this setting's mean beats the default's, so \
             it goes to the check"
        ),
        "{why}"
    );
    // Nothing measured better: keep the default, and say exactly that.
    let mut s = solver(&[(5, 1.0), (5, 0.98), (3, 1.1)]);
    s.core.pick_incumbent(&|_| true);
    s.core.start_check("search budget spent", &|_| true);
    let v = s.verdict().unwrap();
    assert_eq!(v.best, 5);
    assert!(
        v.reason
            .ends_with("no setting measured better than the default)"),
        "{}",
        v.reason
    );
}
