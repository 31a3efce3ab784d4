//! How well can any tuner do on the shoot-out's categorical scheduler surface
//! (`data/surfaces/scheduler-loop-throughput.toml`) within a run budget? Issue #13 asks for
//! ≥ 95% at 24 runs; this computes the best success probability of **every adaptive policy**
//! in a lenient model of the problem, by dynamic programming, beside the best fixed split.
//!
//! ```sh
//! cargo run --release --example scheduler_bound            # budgets 16..32 (about 6 min)
//! cargo run --release --example scheduler_bound -- 24 0.02  # one budget, LLR grid step 0.02 (default 0.05)
//! ```
//!
//! The lenient model (every point but the test's power favours the policy over a real tuner):
//! - Only kyber (10,056 Loads), mq-deadline (9,382) and bfq (8,135, the default) are
//!   candidates. In the first columns `none` costs no run and is known; which of the two
//!   candidate arms is kyber is unknown (prior ½ each). Everything else is known: both means,
//!   and the noise, sd 0.09 of ln Loads per run (the surface's 9%), so the policy knows how
//!   much one run tells.
//! - **Success** = the answer is kyber (the only setting within 5% of the optimum) and the
//!   check passes: one-sided at α 0.05, H0 "at most 3% better than bfq" (the minimum effect
//!   inside), passing with its **power at the counts the policy spent** on the answer and on
//!   bfq, as if those runs were fresh: the search's runs count for the check too, and no run
//!   is set aside for it. The z-test knows the noise. The t-test is what a check needs when
//!   it does not: its variance pools every run of every arm (lenient: it assumes one noise
//!   everywhere), df = runs − arms measured; its power is the noncentral t's (`t_power`). A
//!   test with a variance prior of its own (ours shrinks each setting's variance toward one)
//!   sits between the two. The power model is the one point not lenient against every tuner:
//!   a test on the very runs that selected the answer (ours' arms test on Loads) passes more
//!   often than a fresh one would (the winner's curse), which its measured false
//!   "significant" on the flat surfaces (3–4%) keeps honest. A test on the realized means in
//!   the model instead would let a policy sample bfq until its mean dips, an optional
//!   stopping no valid test allows (that model reaches 96.6% at 24 runs).
//! - The policy may be adaptive in every way: which arm to sample next from everything seen,
//!   when to stop, which answer to give. The pick's sufficient statistic is the
//!   log-likelihood ratio L of "arm 0 is kyber": a run of either candidate moves L by
//!   N(±a, b²), a = δ²/2σ², b = δ/σ (δ the two candidates' ln gap), the sign by which is
//!   kyber; so the state is (runs on arm 0, on arm 1, on bfq, L), and backward induction over
//!   it gives the optimum exactly, up to the L grid (convolution on a uniform grid; the step
//!   is a parameter, and halving it moves the figures in the fourth decimal).
//! - **`none` found by its runs** (the last columns): kyber, mq-deadline and `none` sit on
//!   three arms in unknown order, and a run of `none` costs one of the budget. Still lenient:
//!   an arm's first run also says whether it is `none`, so `none` costs at most one run and
//!   tells at once which arms are candidates (`adaptive_none_unknown`).
//!
//! A real tuner must also learn the means, and may not assume one noise for every arm; each
//! lowers what it can reach. So the figures are evidence, not a proof, of what a tuner can
//! reach: the best of every policy in an easier problem, but for its test model. The fixed
//! split (the z-test model with `none` free, the best (n₀, n₁, n_bfq) chosen in advance) is
//! printed for comparison.

#![allow(clippy::unwrap_used, clippy::expect_used)] // constant, valid distributions

use statrs::distribution::{ChiSquared, Continuous, ContinuousCDF, Normal, StudentsT};

/// Loads per io_load run of kyber, mq-deadline and bfq (the surface file's points; the model
/// works on their logarithms).
const KYBER: f64 = 10_056.0;
const MQ_DEADLINE: f64 = 9_382.0;
const BFQ: f64 = 8_135.0;
/// sd of ln Loads per run (the surface's `relative_sigma` 0.09).
const SIGMA: f64 = 0.09;
/// The check: one-sided α 0.05 and the minimum effect (the `throughput` policy's 3%).
const Z_CRIT: f64 = 1.644_853_626_951_472_2;
const MIN_EFFECT: f64 = 0.03;
/// The LLR grid spans ±L_MAX (posterior odds e^±40: certainty).
const L_MAX: f64 = 40.0;

struct Model {
    /// LLR grid.
    l: Vec<f64>,
    /// P(arm 0 is kyber) at each grid point.
    p0: Vec<f64>,
    /// Convolution taps (offset in grid steps, weight) of one candidate run's LLR step, for
    /// arm 0 being kyber (+a) and mq-deadline (−a).
    taps_k: Vec<(isize, f64)>,
    taps_m: Vec<(isize, f64)>,
    /// Mean and sd of one candidate run's LLR step when arm 0 is kyber (module docs).
    a: f64,
    b: f64,
}

impl Model {
    fn new(step: f64) -> Model {
        // Symmetric about 0, which is the middle point: the prior's ½ (`adaptive`, `fixed`).
        let half = (L_MAX / step).round() as i64;
        let l: Vec<f64> = (-half..=half).map(|i| i as f64 * step).collect();
        let p0 = l.iter().map(|x| 1.0 / (1.0 + (-x).exp())).collect();
        let delta = (KYBER / MQ_DEADLINE).ln();
        let (a, b) = (delta * delta / (2.0 * SIGMA * SIGMA), delta / SIGMA);
        let taps = |mean: f64| {
            let g = Normal::new(mean, b).unwrap();
            let reach = ((mean.abs() + 7.0 * b) / step).ceil() as isize;
            let mut t: Vec<(isize, f64)> = (-reach..=reach)
                .map(|k| (k, g.pdf(k as f64 * step)))
                .collect();
            let s: f64 = t.iter().map(|x| x.1).sum();
            t.iter_mut().for_each(|x| x.1 /= s);
            t
        };
        Model {
            l,
            p0,
            taps_k: taps(a),
            taps_m: taps(-a),
            a,
            b,
        }
    }

    /// E[V(L + step)] for one more run of a candidate, under the predictive mixture.
    fn expect(&self, v: &[f64]) -> Vec<f64> {
        let n = v.len() as isize;
        let at = |i: isize| v[i.clamp(0, n - 1) as usize];
        (0..n)
            .map(|i| {
                let p = self.p0[i as usize];
                let k: f64 = self.taps_k.iter().map(|&(d, w)| w * at(i + d)).sum();
                let m: f64 = self.taps_m.iter().map(|&(d, w)| w * at(i + d)).sum();
                p * k + (1.0 - p) * m
            })
            .collect()
    }
}

/// The check's test. `Z` knows the noise (the lenient case); `T` is what a test valid for an
/// unknown noise needs: a pooled one-sided t-test whose variance has every run's degrees of
/// freedom (runs minus arms measured; pooling assumes one noise for all arms, lenient too).
#[derive(Clone, Copy, PartialEq)]
enum Check {
    Z,
    T,
}

/// Power of the check with `na` runs of kyber and `nb` of bfq, `df` degrees of freedom for
/// the t-test's variance (0 without runs of either, or without df for a t-test; `t_power`).
fn power(check: Check, na: usize, nb: usize, df: usize) -> f64 {
    if na == 0 || nb == 0 {
        return 0.0;
    }
    let z = Normal::new(0.0, 1.0).unwrap();
    let effect = (KYBER / BFQ).ln() - (1.0 + MIN_EFFECT).ln();
    let delta = effect / (SIGMA * (1.0 / na as f64 + 1.0 / nb as f64).sqrt());
    match check {
        Check::Z => z.cdf(delta - Z_CRIT),
        Check::T if df == 0 => 0.0,
        Check::T => t_power(delta, df),
    }
}

/// P(T > t₀.₉₅) for a noncentral t with `df` degrees of freedom and noncentrality `delta`:
/// E[Φ(δ − c·s)] over s = √(χ²_df / df), by Simpson's rule on s ∈ [0, 1 + 12/√df].
fn t_power(delta: f64, df: usize) -> f64 {
    let z = Normal::new(0.0, 1.0).unwrap();
    let nu = df as f64;
    let c = StudentsT::new(0.0, 1.0, nu).unwrap().inverse_cdf(0.95);
    let chi = ChiSquared::new(nu).unwrap();
    let (n, hi) = (4000, 1.0 + 12.0 / nu.sqrt());
    let h = hi / n as f64;
    let f = |s: f64| {
        let dens = if s == 0.0 {
            0.0
        } else {
            chi.pdf(nu * s * s) * 2.0 * nu * s
        };
        dens * z.cdf(delta - c * s)
    };
    let sum: f64 = (0..=n)
        .map(|i| {
            let w = if i == 0 || i == n {
                1.0
            } else if i % 2 == 1 {
                4.0
            } else {
                2.0
            };
            w * f(i as f64 * h)
        })
        .sum();
    sum * h / 3.0
}

/// Degrees of freedom of a pooled variance over runs on arms with these counts (an arm's
/// first run estimates its mean, not the noise).
fn pooled_df(counts: &[usize]) -> usize {
    counts.iter().map(|&n| n.saturating_sub(1)).sum()
}

/// The reward of stopping at counts (n0, n1, nb): the better answer's P(kyber) × power (a
/// single run of `none` adds no df; a second would add one, as a run of bfq does, which also
/// adds power, so the DP never needs it).
fn stop(m: &Model, check: Check, n0: usize, n1: usize, nb: usize) -> Vec<f64> {
    let df = pooled_df(&[n0, n1, nb]);
    let (w0, w1) = (power(check, n0, nb, df), power(check, n1, nb, df));
    m.p0.iter().map(|p| (p * w0).max((1.0 - p) * w1)).collect()
}

/// The two-candidate DP's value tables kept for the `none`-unknown model: (n0, n1, nb) with
/// n1 ≤ 1, by `Tables::at`.
struct Tables {
    budget: usize,
    v: Vec<Vec<f64>>,
}

impl Tables {
    fn idx(&self, n0: usize, n1: usize, nb: usize) -> usize {
        (n0 * 2 + n1) * (self.budget + 1) + nb
    }
    fn at(&self, n0: usize, n1: usize, nb: usize) -> &[f64] {
        &self.v[self.idx(n0, n1, nb)]
    }
}

/// The optimal adaptive policy's success probability with `budget` runs on the two
/// candidates and bfq (`none` known and free), and its value tables for n1 ≤ 1.
fn adaptive(m: &Model, check: Check, budget: usize) -> (f64, Tables) {
    let idx = |n0: usize, n1: usize| n0 * (budget + 1) + n1;
    let mut kept = Tables {
        budget,
        v: vec![Vec::new(); (budget + 1) * 2 * (budget + 1)],
    };
    let mut next: Vec<Vec<f64>> = vec![Vec::new(); (budget + 1) * (budget + 1)];
    for t in (0..=budget).rev() {
        let mut cur: Vec<Vec<f64>> = vec![Vec::new(); (budget + 1) * (budget + 1)];
        for n0 in 0..=t {
            for n1 in 0..=t - n0 {
                let nb = t - n0 - n1;
                let mut v = stop(m, check, n0, n1, nb);
                if t < budget {
                    let s0 = m.expect(&next[idx(n0 + 1, n1)]);
                    // A run of arm 1 moves L like a run of arm 0 (see the module docs).
                    let s1 = m.expect(&next[idx(n0, n1 + 1)]);
                    let sb = &next[idx(n0, n1)];
                    for i in 0..v.len() {
                        v[i] = v[i].max(s0[i]).max(s1[i]).max(sb[i]);
                    }
                }
                if n1 <= 1 {
                    let k = kept.idx(n0, n1, nb);
                    kept.v[k] = v.clone();
                }
                cur[idx(n0, n1)] = v;
            }
        }
        next = cur;
    }
    let mid = m.l.len() / 2;
    (next[idx(0, 0)][mid], kept)
}

/// The optimal adaptive policy when `none` is not known: three arms, one kyber, one
/// mq-deadline, one `none`, in unknown order, and a run of `none` costs one of the `budget`.
/// Lenient still: an arm's first run also reveals whether it is `none` (so `none` costs at
/// most one run, and the rest is the two-candidate model). Phases: nothing measured; one
/// arm known to be a candidate (state: its runs, bfq's, L); then the two-candidate DP, with
/// `budget` − 1 runs if the revealed arm was `none`.
fn adaptive_none_unknown(m: &Model, check: Check, budget: usize) -> f64 {
    let (_, full) = adaptive(m, check, budget);
    let (_, less) = adaptive(m, check, budget - 1);
    // Phase B: V[na][nb], na ≥ 1, na + nb ≤ budget.
    let mut vb: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); budget + 1]; budget + 1];
    for t in (1..=budget).rev() {
        for na in 1..=t {
            let nb = t - na;
            let mut v = stop(m, check, na, 0, nb);
            if t < budget {
                let sa = m.expect(&vb[na + 1][nb]);
                let sb = &vb[na][nb + 1];
                // Reveal another arm: `none` (½: its run is spent) or the other candidate
                // (½: its run moves L like a candidate's).
                let none = less.at(na, 0, nb);
                let cand = m.expect(full.at(na, 1, nb));
                for i in 0..v.len() {
                    let reveal = 0.5 * none[i] + 0.5 * cand[i];
                    v[i] = v[i].max(sa[i]).max(sb[i]).max(reveal);
                }
            }
            vb[na][nb] = v;
        }
    }
    // Phase A: the first run is `none` (⅓) or a candidate (⅔); bfq first changes nothing.
    let mid = m.l.len() / 2;
    let after = m.expect(&vb[1][0]);
    (1.0 / 3.0) * less.at(0, 0, 0)[mid] + (2.0 / 3.0) * after[mid]
}

/// The best fixed split (n0, n1, nb) of `budget` runs: (success, split).
fn fixed(m: &Model, budget: usize) -> (f64, (usize, usize, usize)) {
    let (a, b) = (m.a, m.b);
    let step = m.l[1] - m.l[0];
    let mut best = (0.0, (0, 0, 0));
    for n0 in 0..=budget {
        for n1 in 0..=budget - n0 {
            let nb = budget - n0 - n1;
            let n = (n0 + n1) as f64;
            let r = stop(m, Check::Z, n0, n1, nb);
            // L after n candidate runs: N(±n a, n b²), each sign with probability ½.
            let p = if n == 0.0 {
                r[m.l.len() / 2]
            } else {
                let (k, q) = (
                    Normal::new(n * a, n.sqrt() * b).unwrap(),
                    Normal::new(-n * a, n.sqrt() * b).unwrap(),
                );
                m.l.iter()
                    .zip(&r)
                    .map(|(x, v)| v * 0.5 * (k.pdf(*x) + q.pdf(*x)) * step)
                    .sum()
            };
            if p > best.0 {
                best = (p, (n0, n1, nb));
            }
        }
    }
    best
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let budgets: Vec<usize> = match args.get(1).and_then(|s| s.parse().ok()) {
        Some(b) => vec![b],
        None => vec![16, 20, 22, 23, 24, 25, 26, 28, 32],
    };
    let step: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0.05);
    let m = Model::new(step);
    println!(
        "| runs | best fixed split, z-test, `none` free (kyber-or-mq, mq-or-kyber, bfq) \
         | best adaptive, z-test, `none` free | best adaptive, t-test, `none` free \
         | best adaptive, z-test, `none` found by its runs \
         | best adaptive, t-test, `none` found by its runs |"
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    for b in budgets {
        let (f, (n0, n1, nb)) = fixed(&m, b);
        println!(
            "| {b} | {:.2}% ({n0}, {n1}, {nb}) | {:.2}% | {:.2}% | {:.2}% | {:.2}% |",
            100.0 * f,
            100.0 * adaptive(&m, Check::Z, b).0,
            100.0 * adaptive(&m, Check::T, b).0,
            100.0 * adaptive_none_unknown(&m, Check::Z, b),
            100.0 * adaptive_none_unknown(&m, Check::T, b),
        );
    }
    println!("\n(LLR grid step {step}; lenient model: see the example's docs)");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The noncentral t power against 4,000,000-draw Monte Carlo figures (numpy, seed 1):
    /// (df 21, δ 3.84) 0.9806, (3, 2.0) 0.4602, (1, 2.0) 0.2464 (c the t's 95% point).
    #[test]
    fn noncentral_t_power_matches_monte_carlo() {
        let se = |na: usize, nb: usize| SIGMA * (1.0 / na as f64 + 1.0 / nb as f64).sqrt();
        let effect = (KYBER / BFQ).ln() - (1.0 + MIN_EFFECT).ln();
        // δ is set by the counts; pick counts, then compare with a Monte Carlo at that δ.
        let d = effect / se(9, 6);
        assert!((d - 3.84).abs() < 0.01, "δ {d}");
        for (delta, df, mc) in [(3.84, 21, 0.9806), (2.0, 3, 0.4602), (2.0, 1, 0.2464)] {
            let p = t_power(delta, df);
            assert!(
                (p - mc).abs() < 0.002,
                "df {df}: power {p}, Monte Carlo {mc}"
            );
        }
        assert_eq!(power(Check::T, 9, 6, 0), 0.0);
        assert!(power(Check::T, 9, 6, 1) < power(Check::T, 9, 6, 3));
        assert!(power(Check::T, 9, 6, 21) < power(Check::Z, 9, 6, 21));
    }

    /// `none` found by its runs costs at most one run and never helps: the optimum lies
    /// between the `none`-free optimum with one run fewer and with the same runs, and the
    /// t-test's below the z-test's.
    #[test]
    fn none_unknown_is_bracketed_by_the_none_free_optima() {
        let m = Model::new(0.1);
        for check in [Check::Z, Check::T] {
            let (lo, hi) = (adaptive(&m, check, 11).0, adaptive(&m, check, 12).0);
            let v = adaptive_none_unknown(&m, check, 12);
            assert!(lo < v && v < hi, "{lo} < {v} < {hi}");
        }
        assert!(adaptive(&m, Check::T, 12).0 < adaptive(&m, Check::Z, 12).0);
        // Two-thirds of the time the first run is a candidate's: the value is well above
        // what a policy that never measures `none` can reach with a ⅓ chance of missing kyber.
        assert!(adaptive_none_unknown(&m, Check::Z, 12) > 0.7);
    }
}
