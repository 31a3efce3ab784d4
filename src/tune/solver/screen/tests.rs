//! Tests of [`super`].

use super::super::{BayesOpt, Phase, Search, SolverConfig};
use super::*;

/// A screen and the solver's core it plans through.
struct Fx {
    core: Core,
    sc: Screen,
}

impl Fx {
    /// Plans the next trial with every setting feasible.
    fn plan(&mut self) {
        self.sc.plan(&mut self.core, &|_| true);
    }

    /// The race's next setting with every setting feasible.
    fn race_pick(&self) -> Option<usize> {
        self.sc.race_pick(&self.core, &|_| true)
    }

    /// The ranking with every setting feasible.
    fn ranked(&self) -> Vec<Ranked> {
        self.sc.ranked(&self.core, &|_| true)
    }
}

/// A solver's config: `budget` trials of 2 runs, 2 check pairs, alpha 0.05, a 3% minimum
/// effect; a Ratio's (minimised, one no_load run a trial) when `ratio`, else Loads'.
fn cfg(budget: usize, seed: u64, ratio: bool) -> SolverConfig {
    SolverConfig {
        budget,
        check_pairs: 2,
        alpha: 0.05,
        min_effect: 0.03,
        seed,
        minimize: ratio,
        runs_full: 2,
        runs_loaded: 1,
        runs_no_load: usize::from(ratio),
    }
}

/// A screen over 4 settings (default 2), budget 12 trials of 2 runs, with these loaded
/// costs and ln no_load Times already measured: a Ratio's when `ratio` (minimised, one
/// no_load run a trial), else Loads' (maximised, no no_load).
fn screen(ratio: bool, loaded: &[(usize, f64)], no_load: &[(usize, f64)]) -> Fx {
    let coords = (0..4).map(|i| vec![f64::from(i) / 3.0]).collect();
    let BayesOpt {
        mut core, search, ..
    } = BayesOpt::new(cfg(12, 1, ratio), coords, 2);
    let Search::Screen(mut sc) = search else {
        panic!("a 4-setting grid at budget 12 is screened");
    };
    sc.todo.clear();
    sc.loaded = loaded.to_vec();
    sc.no_load = no_load.to_vec();
    core.runs = loaded.len() + no_load.len();
    Fx { core, sc }
}

/// A Loads screen (see [`screen`]) with these loaded costs.
fn loads_screen(loaded: &[(usize, f64)]) -> Fx {
    screen(false, loaded, &[])
}

/// A Ratio screen (see [`screen`]) with these loaded costs and ln no_load Times.
fn ratio_screen(loaded: &[(usize, f64)], no_load: &[(usize, f64)]) -> Fx {
    screen(true, loaded, no_load)
}

#[test]
fn the_flatness_test_rejects_beyond_flat_z_standard_errors() {
    let loaded = [(2, 5.48), (0, 4.72), (1, 4.69)];
    // One no_load trial each: both standard errors are the prior's 0.1, so the
    // difference's is 0.1 · √2 = 0.1414. A finalist 22% slower: z = ln 1.22 / 0.1414 =
    // 1.41 > FLAT_Z (the surface where no_load depends on the knob has +20%).
    let d0 = 67.7f64.ln();
    let mut s = ratio_screen(&loaded, &[(2, d0), (0, d0 + 1.22f64.ln())]);
    let z = s.sc.flat_z(&s.core, 0).unwrap();
    assert!((z - 1.22f64.ln() / 0.02f64.sqrt()).abs() < 1e-9, "{z}");
    assert!(s.sc.flat_z(&s.core, 1).is_none());
    s.sc.decide_flat(&mut s.core, vec![0, 1]);
    let sc = &s.sc;
    assert_eq!(sc.flatness, Flatness::Differs);
    assert!(
        s.core.note.as_deref().unwrap().contains("+22%"),
        "{:?}",
        s.core.note
    );
    assert!(!s.sc.loaded_check(&s.core));
    // 16% slower: z = 1.05 < FLAT_Z, flat; the check's pairs are then loaded runs only.
    let mut s = ratio_screen(&loaded, &[(2, d0), (0, d0 + 1.16f64.ln())]);
    s.sc.decide_flat(&mut s.core, vec![0]);
    assert_eq!(s.sc.flatness, Flatness::Flat);
    assert!(s.sc.loaded_check(&s.core));
    // 22% faster counts too (two-sided).
    let mut s = ratio_screen(&loaded, &[(2, d0), (0, d0 - 1.22f64.ln())]);
    s.sc.decide_flat(&mut s.core, vec![0]);
    assert_eq!(s.sc.flatness, Flatness::Differs);
}

#[test]
fn on_a_guided_grid_the_flatness_test_rejects_beyond_flat_z_guided_standard_errors() {
    let loaded = [(2, 5.48), (0, 4.72), (1, 4.69)];
    let d0 = 67.7f64.ln();
    // 30% slower: z = ln 1.30 / 0.1414 = 1.86, beyond FLAT_Z (1.28) but not FLAT_Z_GUIDED
    // (2.24): flat on a guided grid, "differs" on a grid screened whole.
    for (grid, want) in [
        (Grid::Guided, Flatness::Flat),
        (Grid::Whole, Flatness::Differs),
    ] {
        let mut s = ratio_screen(&loaded, &[(2, d0), (0, d0 + 1.30f64.ln())]);
        s.sc.grid = grid;
        s.sc.decide_flat(&mut s.core, vec![0]);
        assert_eq!(s.sc.flatness, want, "{grid:?}");
    }
    // On a near-whole grid (20 runs) the threshold is FLAT_Z_NEAR (3.0): 1.86 is flat there,
    // 55% slower (z = ln 1.55 / 0.1414 = 3.10) differs.
    for (slower, want) in [(1.30f64, Flatness::Flat), (1.55, Flatness::Differs)] {
        let mut s = ratio_screen(&loaded, &[(2, d0), (0, d0 + slower.ln())]);
        s.sc.grid = Grid::Guided;
        // 4 settings at 5 trials: the whole screen takes 5 of 10 runs, within NEAR_SHARE.
        s.core.cfg.budget = 5;
        s.sc.decide_flat(&mut s.core, vec![0]);
        assert_eq!(s.sc.flatness, want, "{slower}");
        let note = s.core.note.as_deref().unwrap();
        assert_eq!(
            note.contains("more than 3 standard"),
            want == Flatness::Differs,
            "{note}"
        );
    }
    // 40% slower: z = 2.38, "differs" on both, and the note names the guided threshold.
    let mut s = ratio_screen(&loaded, &[(2, d0), (0, d0 + 1.40f64.ln())]);
    s.sc.grid = Grid::Guided;
    s.sc.decide_flat(&mut s.core, vec![0]);
    assert_eq!(s.sc.flatness, Flatness::Differs);
    let note = s.core.note.as_deref().unwrap();
    assert!(
        note.contains("+40%") && note.contains("more than 2.24 standard"),
        "{note}"
    );
}

/// The first settings a new screen of `n` settings (default `default`, a 1-D grid evenly
/// spaced) at `budget` trials queues, and whether it is guided.
fn first_todo(n: usize, default: usize, budget: usize) -> (Vec<usize>, Grid) {
    first_todo_seeded(n, default, budget, 7)
}

/// [`first_todo`] with the solver's seed.
fn first_todo_seeded(n: usize, default: usize, budget: usize, seed: u64) -> (Vec<usize>, Grid) {
    let coords = (0..n).map(|i| vec![i as f64 / (n - 1) as f64]).collect();
    let BayesOpt { search, .. } = BayesOpt::new(cfg(budget, seed, true), coords, default);
    let Search::Screen(sc) = search else {
        panic!("a Ratio over {n} settings at budget {budget} takes the screen");
    };
    (sc.todo, sc.grid)
}

#[test]
fn a_guided_grid_measures_the_defaults_neighbours_first_then_a_design() {
    // fifo_batch 1..256 (9 settings), default 32 (index 5), 16 runs: 2 + 8 runs of screen
    // are over SCREEN_SHARE (0.40) of the budget, so the grid is guided.
    let (todo, grid) = first_todo(9, 5, 8);
    assert_eq!(grid, Grid::Guided);
    assert_eq!(&todo[..2], &[4, 6], "{todo:?}");
    // Then GUIDED_DESIGN_MIN design draws, those that land on a neighbour dropped: none of
    // them the default or a repeat.
    assert!(
        (3..=2 + GUIDED_DESIGN_MIN).contains(&todo.len()),
        "{todo:?}"
    );
    let mut seen = todo.clone();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), todo.len(), "{todo:?}");
    assert!(!todo.contains(&5), "{todo:?}");
    // A default at the grid's end has one neighbour.
    let (todo, _) = first_todo(9, 8, 8);
    assert_eq!(todo[0], 7, "{todo:?}");
    assert!(!todo[1..].contains(&7), "{todo:?}");
    // At 20 runs the screen (10 runs) fits NEAR_SHARE but not SCREEN_SHARE: guided, near
    // whole, with NEAR_DESIGN draws after the neighbours.
    let (near, grid) = first_todo(9, 5, 10);
    assert_eq!(grid, Grid::Guided);
    assert_eq!(&near[..2], &[4, 6], "{near:?}");
    assert!((3..=2 + NEAR_DESIGN).contains(&near.len()), "{near:?}");
    // Its design is larger: over seeds 1..=50, more settings in all than at 16 runs.
    let settings = |budget| -> usize {
        (1..=50)
            .map(|seed| first_todo_seeded(9, 5, budget, seed).0.len())
            .sum()
    };
    let (near, guided) = (settings(10), settings(8));
    assert!(near >= guided + 50, "{near} vs {guided}");
    // At 24 runs too (10 of 24 runs, 41.7%: near whole, and roomy); at 26 runs (38.5%) the
    // grid is screened whole: every other setting, in a shuffled order.
    let (near, grid) = first_todo(9, 5, 12);
    assert_eq!(grid, Grid::Guided);
    assert_eq!(&near[..2], &[4, 6], "{near:?}");
    let (mut todo, grid) = first_todo(9, 5, 13);
    assert_eq!(grid, Grid::Whole);
    todo.sort_unstable();
    assert_eq!(todo, vec![0, 1, 2, 3, 4, 6, 7, 8]);
}

#[test]
fn the_defaults_neighbours_are_one_grid_step_along_each_knob() {
    // A 3 × 3 grid, x = i % 3, y = i / 3; the default in the middle (4), then at a corner (0).
    let coords: Vec<Vec<f64>> = (0..9)
        .map(|i| vec![f64::from(i % 3) / 2.0, f64::from(i / 3) / 2.0])
        .collect();
    let BayesOpt { core, .. } = BayesOpt::new(cfg(8, 1, true), coords.clone(), 4);
    assert_eq!(core.default_neighbours(), vec![3, 5, 1, 7]);
    let BayesOpt { core, .. } = BayesOpt::new(cfg(8, 1, true), coords, 0);
    assert_eq!(core.default_neighbours(), vec![1, 3]);
}

/// A Ratio screen whose race has separated 0 (three tight trials, ln 4.70) from 1 (ln
/// 5.2) and 3, with no_load found flat at `no_load` (ln no_load Times).
fn separated_flat(no_load: &[(usize, f64)]) -> Fx {
    let loaded = [
        (2, 5.48),
        (0, 4.70),
        (0, 4.70),
        (0, 4.70),
        (1, 5.2),
        (1, 5.2),
        (3, 5.3),
        (3, 5.3),
    ];
    let mut s = ratio_screen(&loaded, no_load);
    let sc = &mut s.sc;
    sc.flatness = Flatness::Flat;
    sc.finalists = vec![0, 1];
    assert!(s.race_pick().is_none(), "the race is separated");
    s
}

#[test]
fn a_separated_race_with_runs_to_spare_retests_no_load_up_to_the_cap() {
    let d0 = 67.7f64.ln();
    // 10 of 24 runs spent: finalist 1 has no no_load trial yet, so it gets one, and the
    // flatness test is open again.
    let mut s = separated_flat(&[(2, d0), (0, d0)]);
    s.plan();
    let step = s.core.queue.front().unwrap();
    assert_eq!((step.point, step.part), (1, Part::NoLoad), "{}", step.why);
    assert!(step.why.contains("one more no_load trial"), "{}", step.why);
    assert_eq!(s.sc.flatness, Flatness::Open);
    // Every one of the three at FLAT_RETEST_MAX: no more no_load, the check comes.
    let full: Vec<(usize, f64)> = [2, 0, 1]
        .iter()
        .flat_map(|&p| std::iter::repeat_n((p, d0), FLAT_RETEST_MAX))
        .collect();
    let mut s = separated_flat(&full);
    s.plan();
    assert!(
        s.core.queue.iter().all(|st| st.part != Part::NoLoad),
        "{:?}",
        s.core.queue.front().map(|st| &st.why)
    );
    assert_eq!(s.core.phase, Phase::Check);
    // No runs to spare (20 of 24 spent): no retest either.
    let mut s = separated_flat(&[(2, d0), (0, d0)]);
    s.core.runs = 20;
    s.plan();
    assert!(s.core.queue.iter().all(|st| st.part != Part::NoLoad));
}

#[test]
fn a_late_not_flat_verdict_is_checked_on_the_full_pairs_that_fit() {
    let d0 = 67.7f64.ln();
    // After a flat verdict over 0 and 1, the race raised 3, whose no_load test found it
    // 30% slower than the default: not flat, 3 and 0 the finalists; 3 ranks best by its
    // own Ratio (4.5 − ln 1.3 − d0 = 4.24 − d0 against 0's `c0` − d0), 6% ahead of 0 at
    // c0 = 4.30, not yet separated.
    let at_with = |runs: usize, c0: f64, nl3: usize| {
        let mut no_load = vec![(2, d0), (0, d0), (1, d0)];
        no_load.extend(std::iter::repeat_n((3, d0 + 1.3f64.ln()), nl3));
        let loaded = [
            (2, 5.48),
            (0, c0),
            (0, c0),
            (0, c0),
            (1, 5.2),
            (3, 4.5),
            (3, 4.5),
            (3, 4.5),
        ];
        let mut s = ratio_screen(&loaded, &no_load);
        s.sc.decide_flat(&mut s.core, vec![3, 0]);
        assert_eq!(s.sc.flatness, Flatness::Differs);
        s.core.runs = runs;
        s.plan();
        s
    };
    let at = |runs: usize| at_with(runs, 4.30, 1);
    // 18 of 24 runs spent: 6 left, room for 1 of the 2 pairs of full trials asked for.
    // The check runs that one pair on 3, and the note says so.
    let s = at(18);
    assert_eq!(s.core.phase, Phase::Check);
    let pts: Vec<(usize, Part)> = s.core.queue.iter().map(|st| (st.point, st.part)).collect();
    assert_eq!(pts, [(2, Part::Full), (3, Part::Full)], "{pts:?}");
    let sc = &s.sc;
    assert_eq!(sc.flatness, Flatness::Differs);
    assert!(
        s.core.note.as_deref().unwrap().ends_with(
            "runs left for 1 of the 2 pairs of full trials asked for: the check's variance \
             leans on every trial of the two settings"
        ),
        "{:?}",
        s.core.note
    );
    // 14 spent: the full pairs fit, so a finalist's full trial comes first (a search
    // trial, not the check's).
    let s = at(14);
    let step = s.core.queue.front().unwrap();
    assert_eq!(step.part, Part::Full, "{}", step.why);
    assert!(!step.check, "{}", step.why);
    assert!(
        step.why.contains("a full trial of a finalist"),
        "{}",
        step.why
    );
    assert_eq!(s.sc.flatness, Flatness::Differs);
    // 14 spent, but 0 at 4.70 and 3's no_load measured twice: 3 leads it by 37% in
    // their own Ratios, a decided race, so no more full trials of the finalists: the
    // check, 2 pairs of full trials (10 runs). With 3's no_load measured once, the race
    // is never decided on it (one lucky draw): a full trial of a finalist.
    let s = at_with(14, 4.70, 1);
    assert_eq!(s.core.phase, Phase::Search);
    let s = at_with(14, 4.70, 2);
    assert_eq!(s.core.phase, Phase::Check);
    let pts: Vec<(usize, Part)> = s.core.queue.iter().map(|st| (st.point, st.part)).collect();
    assert_eq!(
        pts,
        [
            (2, Part::Full),
            (3, Part::Full),
            (2, Part::Full),
            (3, Part::Full)
        ]
    );
    // 21 spent: not even one pair of full trials fits, "no budget left".
    let s = at(21);
    assert_eq!(s.core.phase, Phase::Done);
    assert!(s.core.queue.is_empty());
    let v = s.core.verdict.as_ref().unwrap();
    assert!(!v.significant);
    assert!(
        v.reason.contains("no budget left for the final check"),
        "{}",
        v.reason
    );
}

#[test]
fn a_race_within_the_minimum_effect_stops_once_it_is_sure_of_that() {
    let d0 = 67.7f64.ln();
    // 0 and 1 tie at 1% apart (under the 3% minimum effect); the default 2 is far behind.
    let race = |n: usize| {
        let mut loaded = vec![(2, 5.48), (2, 5.47), (3, 5.3)];
        for i in 0..n {
            let jitter = if i % 2 == 0 { 0.02 } else { -0.02 };
            loaded.push((0, 4.50 + jitter));
            loaded.push((1, 4.51 - jitter));
        }
        ratio_screen(&loaded, &[(2, d0)])
    };
    // 4 trials each: the bounds (sd shrunk toward the 0.1 prior) overlap, neither
    // separated nor sure to be within 3%: the race goes on.
    assert!(race(4).race_pick().is_some());
    // 40 each: still not separated at RACE_Z, but 1 is surely no more than 3% better
    // than 0 at INDIFFERENCE_Z standard errors: decided.
    let s = race(40);
    let ranked = s.ranked();
    let (lead, ch) = (&ranked[0], &ranked[1]);
    assert!(
        ch.mean - RACE_Z * ch.se < lead.mean + RACE_Z * lead.se,
        "separated: {ranked:?}"
    );
    assert!(s.race_pick().is_none());
}

#[test]
fn a_guided_grid_plans_the_check_in_loaded_pairs_until_no_load_is_tested() {
    let d0 = 67.7f64.ln();
    let loaded = [(2, 5.48), (0, 4.70), (1, 5.2)];
    let mut s = ratio_screen(&loaded, &[(2, d0)]);
    // Screened whole: a full pair is 4 runs while the flatness test is open.
    assert_eq!(s.sc.pair_runs(&s.core), 4);
    s.sc.grid = Grid::Guided;
    // Guided, test open: 2 runs, the pair of loaded runs a flat verdict would check.
    assert_eq!(s.sc.pair_runs(&s.core), 2);
    // Guided, "not flat": full pairs again.
    s.sc.flatness = Flatness::Differs;
    assert_eq!(s.sc.pair_runs(&s.core), 4);
    // Flat: loaded pairs, guided or not.
    s.sc.flatness = Flatness::Flat;
    assert_eq!(s.sc.pair_runs(&s.core), 2);
    s.sc.grid = Grid::Whole;
    assert_eq!(s.sc.pair_runs(&s.core), 2);
}

#[test]
fn the_race_stops_for_the_flatness_test_once_both_finalists_have_three_loaded_trials() {
    let d0 = 67.7f64.ln();
    // 0 and 1 are 2% apart at 10% noise: far from separated. 1 has 2 loaded trials, so
    // the race goes on (8 of 24 runs spent).
    let mut loaded = vec![
        (2, 5.48),
        (0, 4.70),
        (0, 4.72),
        (0, 4.68),
        (1, 4.72),
        (1, 4.70),
        (3, 5.3),
    ];
    // The next step planned, the race not separated (so the stop, not separation, decides).
    let next = |loaded: &[(usize, f64)]| {
        let mut s = ratio_screen(loaded, &[(2, d0)]);
        assert!(s.race_pick().is_some(), "not separated");
        s.plan();
        s.core.queue.front().cloned().unwrap()
    };
    let step = next(&loaded);
    assert_eq!(step.part, Part::Loaded, "{}", step.why);
    assert!(step.why.starts_with("race: "), "{}", step.why);
    // Its third: the race stops, and a finalist's no_load is measured for the test.
    loaded.push((1, 4.71));
    let step = next(&loaded);
    assert_eq!(step.part, Part::NoLoad, "{}", step.why);
    assert!(
        step.why.contains("no_load test: a finalist"),
        "{}",
        step.why
    );
    assert!([0, 1].contains(&step.point), "{}", step.point);
}

#[test]
fn a_race_after_a_flat_test_keeps_the_finalists_no_load_in_step() {
    assert_eq!(
        FLAT_RETEST_PER, 2,
        "the counts below assume one no_load per 2 loaded"
    );
    let d0 = 67.7f64.ln();
    // 0 (4 loaded trials) and 1 (2) are not separated. 1 has 2 no_load trials (in step:
    // 1 + 2 / 2); 0 has 1 of the 1 + 4 / 2 = 3 it keeps, so its no_load is measured again
    // before the race goes on.
    let loaded = [
        (2, 5.48),
        (0, 4.70),
        (0, 4.75),
        (0, 4.65),
        (0, 4.70),
        (1, 4.72),
        (1, 4.70),
        (3, 5.3),
    ];
    let in_step = |no_load: &[(usize, f64)]| {
        let mut s = ratio_screen(&loaded, no_load);
        let sc = &mut s.sc;
        sc.flatness = Flatness::Flat;
        sc.finalists = vec![0, 1];
        assert!(s.race_pick().is_some(), "the race goes on");
        s.plan();
        s.core.queue.front().cloned().unwrap()
    };
    let step = in_step(&[(2, d0), (0, d0), (1, d0), (1, d0)]);
    assert_eq!((step.point, step.part), (0, Part::NoLoad), "{}", step.why);
    assert!(step.why.contains("in step with the race"), "{}", step.why);
    // With its third no_load trial it is in step too: the race's trial comes.
    let step = in_step(&[(2, d0), (0, d0), (1, d0), (1, d0), (0, d0), (0, d0)]);
    assert_eq!(step.part, Part::Loaded, "{}", step.why);
    assert!(step.why.starts_with("race: "), "{}", step.why);
}

#[test]
fn a_failed_re_measure_of_the_default_keeps_its_earlier_trials_as_the_reference() {
    // The default (2) measured twice, then a re-measure of it failed: the tune goes on
    // with the default ranked on its two trials; only a failed first trial ends it.
    let obs = [
        (2, -9.0),
        (0, -9.1),
        (1, -9.15),
        (3, -9.2),
        (3, -9.22),
        (2, -9.02),
    ];
    let mut s = loads_screen(&obs);
    s.core.failed.push(2);
    s.plan();
    assert_eq!(s.core.phase, Phase::Search);
    assert!(s.ranked().iter().any(|c| c.point == 2));
    let mut s = loads_screen(&[]);
    s.core.failed.push(2);
    s.plan();
    assert_eq!(s.core.phase, Phase::Done);
    assert!(
        s.core
            .verdict
            .unwrap()
            .reason
            .contains("its reference trial failed"),
        "the first trial's failure ends the tune"
    );
}

#[test]
fn a_loads_race_keeps_the_default_measured_and_spends_no_runs_on_a_reserve() {
    // The leader (3) has 4 trials, the default 2 < 0.6 × 4: the default is next.
    let obs = [
        (2, -9.0),
        (0, -9.1),
        (1, -9.15),
        (3, -9.2),
        (3, -9.22),
        (1, -9.14),
        (3, -9.19),
        (3, -9.21),
        (2, -9.02),
    ];
    let mut s = loads_screen(&obs);
    assert!(s.sc.arms_test(&s.core));
    assert_eq!(s.sc.check_reserve(&s.core, &|_| true), 0);
    s.plan();
    let step = s.core.queue.front().unwrap();
    assert_eq!((step.point, step.part), (2, Part::Loaded), "{}", step.why);
    // With 3 of the default's trials the race goes on between the leader and 1.
    let mut more = obs.to_vec();
    more.push((2, -8.98));
    let mut s = loads_screen(&more);
    s.plan();
    let step = s.core.queue.front().unwrap();
    assert!(step.why.starts_with("race: leader"), "{}", step.why);
    assert_ne!(step.point, 2);
    // Budget spent (24 runs): no check pairs left, the arms test concludes at once.
    let mut all = more.clone();
    while all.len() < 24 {
        all.push((3, -9.2));
    }
    let mut s = loads_screen(&all);
    s.plan();
    assert!(s.core.queue.is_empty() && s.core.phase == Phase::Check);
    let basis = s.sc.check_basis(&s.core, s.core.incumbent);
    s.core.conclude(&basis);
    let v = s.core.verdict.as_ref().unwrap();
    assert_eq!(v.best, 3);
    assert!(v.significant, "{}", v.reason);
    assert!(v.reason.contains("one-sided Welch t-test"), "{}", v.reason);
}

#[test]
fn the_checks_pairs_for_power_count_the_df_of_the_trials_already_held() {
    let s = ratio_screen(&[(2, 5.48)], &[]);
    // v = 0.02 (sd 0.141 a pair), an effect of 0.48 ln units, alpha 0.05, 90% power.
    // With no trial held, 2 pairs have df 1 (t = 6.31): (6.31 + 1.28) 0.141 / √2 = 0.76 >
    // 0.48, so 3 pairs (df 2: (2.92 + 1.28) 0.141 / √3 = 0.34).
    assert_eq!(plan::pairs_for_power(&s.core, 0.02, 0.48, 8, 0), 3);
    // With one trial of each part held before the pairs, 2 pairs have df 2: 0.42 ≤ 0.48.
    assert_eq!(plan::pairs_for_power(&s.core, 0.02, 0.48, 8, 1), 2);
}

#[test]
fn the_trials_held_are_the_fewest_of_any_part_the_check_pools() {
    let d0 = 67.7f64.ln();
    // The default (2) has 1 loaded and 1 no_load trial, the leader (0) 3 loaded and none.
    let loaded = [(2, 5.48), (0, 4.70), (0, 4.72), (0, 4.69)];
    let mut s = ratio_screen(&loaded, &[(2, d0)]);
    // Screened whole with the flatness test open, the check plans full pairs: the
    // leader's no_load (none yet) counts.
    assert_eq!(s.sc.trials_held(&s.core, 0), 0);
    // Flat: loaded pairs, so only loaded runs count: the default's one.
    s.sc.flatness = Flatness::Flat;
    assert_eq!(s.sc.trials_held(&s.core, 0), 1);
    s.sc.loaded.push((2, 5.50));
    assert_eq!(s.sc.trials_held(&s.core, 0), 2);
    // A guided grid with the test still open plans loaded pairs: loaded runs only, though
    // the leader has no no_load trial yet.
    s.sc.flatness = Flatness::Open;
    assert_eq!(s.sc.trials_held(&s.core, 0), 0);
    s.sc.grid = Grid::Guided;
    assert_eq!(s.sc.trials_held(&s.core, 0), 2);
}

#[test]
fn after_a_flat_verdict_the_answer_weighs_each_finalists_own_no_load() {
    let d0 = 67.7f64.ln();
    // Finalist 0's loaded Time is 3% better than 1's; the default (2) is far behind.
    let loaded = [(2, 5.48), (0, 4.69), (0, 4.69), (1, 4.72), (1, 4.72)];
    let mut s = ratio_screen(&loaded, &[(2, d0), (0, d0), (1, d0)]);
    s.sc.flatness = Flatness::Flat;
    assert_eq!(s.sc.flat_pick(&s.core, &|_| true), vec![0, 1, 2]);
    // 1's own no_load 25% slower. This 4-setting grid at 24 runs is roomy (its screen takes
    // 5 of 24 runs): NO_LOAD_WEIGHT_ROOMY × ln 1.25 = 0.5 × 0.223 = 0.11 > the 0.03 its
    // loaded Time is behind, so 1 is the answer (its own Ratio, weight 1, would put it 19%
    // ahead; the loaded Time alone, weight 0, 3% behind).
    assert_eq!(Screen::no_load_weight(&s.core), NO_LOAD_WEIGHT_ROOMY);
    let mut s = ratio_screen(&loaded, &[(2, d0), (0, d0), (1, d0 + 1.25f64.ln())]);
    s.sc.flatness = Flatness::Flat;
    assert_eq!(s.sc.flat_pick(&s.core, &|_| true), vec![1, 0, 2]);
    // Without a "flat" verdict there is no split check.
    s.sc.flatness = Flatness::Open;
    assert_eq!(s.sc.split_runner(&s.core, &|_| true, 1), None);
}

/// A screen after a "flat" verdict, finalists 0 and 1 at loaded costs (4.70, 4.73) and
/// (4.71, 4.74), the default (2) at `d`; one no_load trial each, all alike.
fn flat_finalists(d: [f64; 2]) -> Fx {
    let d0 = 67.7f64.ln();
    let loaded = [
        (2, d[0]),
        (2, d[1]),
        (0, 4.70),
        (0, 4.73),
        (1, 4.71),
        (1, 4.74),
    ];
    let mut s = ratio_screen(&loaded, &[(2, d0), (0, d0), (1, d0)]);
    s.sc.flatness = Flatness::Flat;
    s.sc.finalists = vec![0, 1];
    s
}

/// A screen after a "flat" verdict whose race left finalists 0 and 1 undecided (loaded
/// means 4.715 and 4.725, two trials each), the default (2) far behind, and the split check
/// of 0 and 1 queued (2 pairs) and measured: the default's loaded costs `dc`, then 0's
/// and 1's check cost.
fn split_checked(dc: [f64; 2], best: f64, runner: f64) -> Fx {
    let mut s = flat_finalists([5.48, 5.50]);
    assert_eq!(s.sc.flat_pick(&s.core, &|_| true)[0], 0);
    assert_eq!(s.sc.split_runner(&s.core, &|_| true, 0), Some(1));
    s.core.queue_split_pairs(0, 1, 2, "test", Part::Loaded);
    let order: Vec<usize> = s.core.queue.iter().map(|q| q.point).collect();
    assert_eq!(order, [2, 0, 2, 1]);
    for (p, cost) in [(2, dc[0]), (0, best), (2, dc[1]), (1, runner)] {
        s.core.check_obs.push(super::super::core::CheckTrial {
            point: p,
            cost,
            value: cost.exp(),
        });
        s.sc.check_loaded.push((p, cost));
    }
    s.core.queue.clear();
    s
}

/// Concludes `s`'s split check with both finalists feasible.
fn conclude_split(s: &mut Fx) {
    let basis = [s.sc.check_basis(&s.core, 0), s.sc.check_basis(&s.core, 1)];
    s.core
        .conclude_split(&super::super::split_check::Finalists {
            best: 0,
            runner: 1,
            basis: [&basis[0], &basis[1]],
            feasible: [true, true],
            runner_better: s.sc.final_score(&s.core, 1) < s.sc.final_score(&s.core, 0),
            weight: Screen::no_load_weight(&s.core),
        });
}

#[test]
fn a_split_check_tests_each_finalist_on_its_own_pair_at_half_alpha() {
    // Both finalists beat the default by about 2×; over all its trials 1 measured better
    // (4.70, 4.73, 4.80 against 4.71, 4.74, 4.69), so 1 is the answer.
    let mut s = split_checked([5.49, 5.49], 4.80, 4.69);
    assert!(s.sc.final_score(&s.core, 1) < s.sc.final_score(&s.core, 0));
    conclude_split(&mut s);
    let v = s.core.verdict.as_ref().unwrap();
    assert_eq!(
        (v.best, v.significant, v.pairs),
        (1, true, Some(1)),
        "{}",
        v.reason
    );
    assert!(v.split);
    assert!(v.reason.contains("alpha / 2 = 0.025"), "{}", v.reason);
    assert!(v.reason.contains("the other also passed"), "{}", v.reason);
    // The measured improvement is 1's own pair's: exp(5.49 − 4.69).
    let r = v.improvement.unwrap().0;
    assert!((r - 0.8f64.exp()).abs() < 1e-9, "{r}");
    assert_eq!(s.core.incumbent, 1);
    assert_eq!(s.core.runner_up, None);
}

#[test]
fn a_split_check_where_neither_finalist_passes_keeps_the_default() {
    // Each finalist's one pair measured it no better than the default.
    let mut s = split_checked([4.70, 4.69], 4.80, 4.69);
    conclude_split(&mut s);
    let v = s.core.verdict.as_ref().unwrap();
    assert!(!v.significant, "{}", v.reason);
    assert_eq!(v.best, 0);
    assert!(v.reason.starts_with("keep the default"), "{}", v.reason);
    assert!(v.reason.contains("the other did not pass"), "{}", v.reason);
}

#[test]
fn the_check_is_split_only_when_each_half_has_the_power_for_its_effect() {
    // The default (2) at ln loaded 5.48, the finalists at 4.715 and 4.725: about 2.1× better,
    // 0.75 × 0.76 − 0.03 = 0.54 ln units against (1.96 + 1.28) × 0.123 = 0.40 for one pair
    // each (sd 0.087 a trial: the prior's 0.1 with 3 df and two trials' own): split.
    let s = split_checked([5.49, 5.49], 4.80, 4.69);
    assert!(s.sc.split_has_power(&s.core, 0, 1, 2));
    // Finalists only 8% better than the default: 0.75 × 0.077 − 0.03 = 0.03 ln units, far
    // from 0.40; even 8 pairs (4 each, 0.20) are not enough.
    let s = flat_finalists([4.79, 4.80]);
    assert!(!s.sc.split_has_power(&s.core, 0, 1, 2));
    assert!(!s.sc.split_has_power(&s.core, 0, 1, 8));
}

#[test]
fn a_roomy_grid_races_further_and_weighs_its_own_no_load_more() {
    // 9 settings: the whole screen (2 + 8 runs) takes 62.5%, 50%, 41.7% and 38.5% of 16,
    // 20, 24 and 26 runs; at most ROOMY_SHARE (45%) is roomy.
    let at = |budget| {
        let coords = (0..9).map(|i| vec![f64::from(i) / 8.0]).collect();
        let BayesOpt { core, .. } = BayesOpt::new(cfg(budget, 1, true), coords, 5);
        (Screen::race_z(&core), Screen::no_load_weight(&core))
    };
    assert_eq!(at(8), (1.0, 0.2));
    assert_eq!(at(10), (1.0, 0.2));
    assert_eq!(at(12), (1.5, 0.5));
    assert_eq!(at(13), (1.5, 0.5));
    // On the roomy 4-setting grid (24 runs), 0 and 1 with 4 trials each (se 0.1 / √8 =
    // 0.035, the prior's), 2.5 standard errors apart (0.088, 9%): separated at RACE_Z (2
    // se), not at RACE_Z_ROOMY (3 se), and not within the 3% minimum effect: the race goes on.
    let fx = |gap: f64| {
        let mut loaded = vec![(2, 5.48), (3, 5.3)];
        for _ in 0..4 {
            loaded.push((0, 4.50));
            loaded.push((1, 4.50 + gap));
        }
        ratio_screen(&loaded, &[(2, 67.7f64.ln())])
    };
    let se = fx(0.15).ranked()[0].se;
    assert!((se - 0.1 / 8f64.sqrt()).abs() < 1e-12, "{se}");
    let s = fx(2.5 * se);
    let ranked = s.ranked();
    let (lead, ch) = (&ranked[0], &ranked[1]);
    assert_eq!((lead.point, ch.point), (0, 1));
    assert!((ch.mean - lead.mean - 2.5 * se).abs() < 1e-12, "{ranked:?}");
    let eps = 1.03f64.ln();
    assert!(decided(lead, ch, RACE_Z, eps), "{ranked:?}");
    assert!(!decided(lead, ch, RACE_Z_ROOMY, eps), "{ranked:?}");
    assert_eq!(Screen::race_z(&s.core), RACE_Z_ROOMY);
    assert!(s.race_pick().is_some());
}
