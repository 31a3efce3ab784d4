//! The `pattern` baseline (issue #13's yardstick): a local pattern search from the default,
//! then a race between the two best, then fresh pairs against the default.
//!
//! 1. **Search.** Measure the default once. Measure every unmeasured grid neighbour of the
//!    leader (lowest mean cost) once; move to the new leader and repeat, until the leader's
//!    neighbours are all measured or the search share (budget − 2 × the check's pairs) is spent.
//!    Neighbours: one integer knob one grid step away under the same scheduler, or, across
//!    schedulers, the first grid point of another scheduler (a simplification: the
//!    shoot-out's categorical surface tunes the scheduler alone).
//! 2. **Race.** The rest of the search share measures whichever of the two lowest means has
//!    fewer trials.
//! 3. **Check.** Fresh interleaved (default, best) pairs ([`check::pairs`]) and ours' test on them
//!    ([`crate::check`]); the best is claimed only if it passes, else the answer is the
//!    default.

use crate::check;
use crate::{Surf, cost, per_trial};
use std::collections::BTreeMap;
use sweetspot::bench::sim::SimDevice;
use sweetspot::stats;

fn neighbours(s: &Surf, p: usize) -> Vec<usize> {
    let grids = s.space.int_grids();
    let a = &s.space.points[p];
    let sched = |x: &sweetspot::knob::Setting| x.get("scheduler").cloned();
    let mut out = Vec::new();
    let mut first_of: BTreeMap<String, usize> = BTreeMap::new();
    for (q, b) in s.space.points.iter().enumerate() {
        if let Some(n) = sched(b) {
            first_of.entry(n.to_string()).or_insert(q);
        }
    }
    for (q, b) in s.space.points.iter().enumerate() {
        if q == p {
            continue;
        }
        if sched(a) != sched(b) {
            if sched(b).is_some_and(|n| first_of.get(&n.to_string()) == Some(&q)) {
                out.push(q);
            }
            continue;
        }
        let diff: Vec<&String> = a.keys().filter(|k| a.get(*k) != b.get(*k)).collect();
        if let [k] = diff.as_slice() {
            let (Some(x), Some(y)) = (
                a.get(*k).and_then(|v| v.as_int()),
                b.get(*k).and_then(|v| v.as_int()),
            ) else {
                continue;
            };
            let g = &grids[*k];
            let (i, j) = (
                g.iter().position(|&v| v == x),
                g.iter().position(|&v| v == y),
            );
            if let (Some(i), Some(j)) = (i, j)
                && i.abs_diff(j) == 1
            {
                out.push(q);
            }
        }
    }
    out
}

/// Runs the pattern search with `budget` trials: (chosen, load runs, claims).
pub fn pattern(sim: &mut SimDevice, s: &Surf, budget: usize) -> (usize, u64, bool) {
    let pairs = check::pairs(s);
    let search = budget.saturating_sub(2 * pairs).max(1);
    let mut obs: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    let mut used = 0;
    let measure = |sim: &mut SimDevice, obs: &mut BTreeMap<usize, Vec<f64>>, p: usize| {
        obs.entry(p).or_default().push(cost(sim, s, p, 1));
    };
    let mean = |v: &Vec<f64>| stats::mean(v);
    let leader = |obs: &BTreeMap<usize, Vec<f64>>| {
        obs.iter()
            .min_by(|a, b| mean(a.1).total_cmp(&mean(b.1)))
            .map_or(s.space.default, |(p, _)| *p)
    };
    measure(sim, &mut obs, s.space.default);
    used += 1;
    'search: while used < search {
        let lead = leader(&obs);
        let todo: Vec<usize> = neighbours(s, lead)
            .into_iter()
            .filter(|q| !obs.contains_key(q))
            .collect();
        if todo.is_empty() {
            break;
        }
        for q in todo {
            if used >= search {
                break 'search;
            }
            measure(sim, &mut obs, q);
            used += 1;
        }
    }
    while used < search && obs.len() >= 2 {
        let mut ranked: Vec<usize> = obs.keys().copied().collect();
        ranked.sort_by(|a, b| mean(&obs[a]).total_cmp(&mean(&obs[b])));
        let p = ranked[..2]
            .iter()
            .copied()
            .min_by_key(|p| obs[p].len())
            .unwrap_or(ranked[0]);
        measure(sim, &mut obs, p);
        used += 1;
    }
    let best = leader(&obs);
    if best == s.space.default {
        return (best, per_trial(s) * used as u64, false);
    }
    let pass = check::passes(sim, s, best, &obs[&best], &obs[&s.space.default], pairs);
    let runs = per_trial(s) * (used + 2 * pairs) as u64;
    if pass {
        (best, runs, true)
    } else {
        (s.space.default, runs, false)
    }
}
