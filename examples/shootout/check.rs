//! The final check of the baselines that have one (`pattern`, `ttts-check`): fresh
//! interleaved (default, best) pairs and the same test as ours' check on fresh pairs
//! (`src/tune/solver/check.rs`): `stats::paired_variance` (the pairs' differences, the
//! variance also from every trial of the two settings) and `stats::paired_less_pooled`, a
//! one-sided paired t-test at α 0.05 of H0 "at most 3% better".

use crate::{Surf, cost};
use sweetspot::bench::sim::SimDevice;
use sweetspot::stats;

/// Check pairs on a Ratio surface, as in ours' shoot-out policy (`check_pairs` 2).
pub const PAIRS: usize = 2;

/// Check pairs on a Loads surface, where a trial is one run, so a pair costs a Ratio pair's
/// half. (Dev seeds 1..400, scheduler surface at 24 runs, `ttts-check`: 2 pairs 50%, 3 64%,
/// 4 70%, 5 74%, 6 73%, 8 68%; on the Ratio surfaces 2 pairs gave, dev: seed 75%, two basins
/// 84%, no_load-depends 54%; 1 pair 73%, 92%, 52%; 3 pairs 73%, 62%, 43%. `pattern`, the
/// same sweep, dev seeds 1..400: the scheduler surface 3 pairs 65%, 4 71%, 5 75%, 6 75%,
/// 8 70%; seed / seed-drift 1 pair 98% / 82%, 2 98% / 98%, 3 96% / 92%.)
pub const LOADS_PAIRS: usize = 5;

/// The check pairs of surface `s`: [`LOADS_PAIRS`] on a Loads surface, else [`PAIRS`], or
/// `SHOOTOUT_CHECK_PAIRS` when set (a baseline's configuration at another budget: the pair
/// counts above were chosen at 24 runs).
pub fn pairs(s: &Surf) -> usize {
    if s.loads {
        return LOADS_PAIRS;
    }
    std::env::var("SHOOTOUT_CHECK_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(PAIRS)
}

/// Runs `pairs` fresh (default, best) pairs after the search's trials `best_obs` and
/// `default_obs` (costs, ln units) and answers whether `best` passes.
pub fn passes(
    sim: &mut SimDevice,
    s: &Surf,
    best: usize,
    best_obs: &[f64],
    default_obs: &[f64],
    pairs: usize,
) -> bool {
    let (mut d, mut db, mut dd) = (Vec::new(), best_obs.to_vec(), default_obs.to_vec());
    for _ in 0..pairs {
        let c0 = cost(sim, s, s.space.default, 1);
        let c1 = cost(sim, s, best, 1);
        d.push(c1 - c0);
        dd.push(c0);
        db.push(c1);
    }
    let shifted: Vec<f64> = d.iter().map(|x| x + 1.03f64.ln()).collect();
    stats::paired_variance(&d, &db, &dd)
        .and_then(|(v, df)| stats::paired_less_pooled(&shifted, v.sqrt(), df))
        .is_some_and(|t| t.p_value < 0.05)
}
