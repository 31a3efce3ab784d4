//! How well can any tuner do on the shoot-out's categorical scheduler surface
//! (`data/surfaces/scheduler-loop-throughput.toml`) within a run budget? Issue #13 asks for
//! ≥ 95% at 24 runs; this computes the best success probability of **every adaptive policy**
//! in a lenient model of the problem, by dynamic programming, beside the best fixed split.
//!
//! ```sh
//! cargo run --release --example scheduler_bound            # budgets 16..32
//! cargo run --release --example scheduler_bound -- 24 0.02  # one budget, LLR grid step 0.02 (default 0.05)
//! ```
//!
//! The lenient model (every point but the last favours the policy over a real tuner):
//! - Only kyber (10,056 Loads), mq-deadline (9,382) and bfq (8,135, the default) exist;
//!   `none` costs no run. Which of the two candidate arms is kyber is unknown (prior ½ each);
//!   everything else is known: both means, and the noise, sd 0.09 of ln Loads per run (the
//!   surface's 9%), so the policy knows how much one run tells.
//! - **Success** = the answer is kyber (the only setting within 5% of the optimum) and the
//!   check passes. The check is a one-sided z-test at α 0.05 with the known sd, H0 "at most
//!   3% better than bfq" (the minimum effect inside), and it passes with its **power at the
//!   counts the policy spent** on the answer and on bfq, as if those runs were fresh: the
//!   search's runs count for the check too, and no run is set aside for it. This point is
//!   not lenient against every tuner: a test on the very runs that selected the answer (ours'
//!   arms test on Loads) passes more often than a fresh one would (the winner's curse), which
//!   its measured false "significant" on the flat surfaces (3–4%) keeps honest. A test on the
//!   realized means in the model instead would let a policy sample bfq until its mean dips,
//!   an optional stopping no valid test allows (that model reaches 96.6% at 24 runs).
//! - The policy may be adaptive in every way: which arm to sample next from everything seen,
//!   when to stop, which answer to give. The pick's sufficient statistic is the
//!   log-likelihood ratio L of "arm 0 is kyber": a run of either candidate moves L by
//!   N(±a, b²), a = δ²/2σ², b = δ/σ (δ the two candidates' ln gap), the sign by which is
//!   kyber; so the state is (runs on arm 0, on arm 1, on bfq, L), and backward induction over
//!   it gives the optimum exactly, up to the L grid (convolution on a uniform grid; the step
//!   is a parameter, and halving it moves the figure in the fourth decimal).
//!
//! A real tuner must also measure `none`, estimate the noise (a t-test, not a z-test) and
//! learn the means; each lowers what it can reach. So the figure is evidence, not a proof,
//! of what a tuner can reach: the best of every policy in an easier problem, but for its test
//! model. The fixed split (the same model, the best (n₀, n₁, n_bfq) chosen in advance) is
//! printed for comparison.

#![allow(clippy::unwrap_used, clippy::expect_used)] // constant, valid distributions

use statrs::distribution::{Continuous, ContinuousCDF, Normal};

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

/// Power of the check with `na` runs of kyber and `nb` of bfq (0 without runs of either).
fn power(na: usize, nb: usize) -> f64 {
    if na == 0 || nb == 0 {
        return 0.0;
    }
    let z = Normal::new(0.0, 1.0).unwrap();
    let effect = (KYBER / BFQ).ln() - (1.0 + MIN_EFFECT).ln();
    z.cdf(effect / (SIGMA * (1.0 / na as f64 + 1.0 / nb as f64).sqrt()) - Z_CRIT)
}

/// The reward of stopping at counts (n0, n1, nb): the better answer's P(kyber) × power.
fn stop(m: &Model, n0: usize, n1: usize, nb: usize) -> Vec<f64> {
    let (w0, w1) = (power(n0, nb), power(n1, nb));
    m.p0.iter().map(|p| (p * w0).max((1.0 - p) * w1)).collect()
}

/// The optimal adaptive policy's success probability with `budget` runs.
fn adaptive(m: &Model, budget: usize) -> f64 {
    let idx = |n0: usize, n1: usize| n0 * (budget + 1) + n1;
    let mut next: Vec<Vec<f64>> = vec![Vec::new(); (budget + 1) * (budget + 1)];
    for t in (0..=budget).rev() {
        let mut cur: Vec<Vec<f64>> = vec![Vec::new(); (budget + 1) * (budget + 1)];
        for n0 in 0..=t {
            for n1 in 0..=t - n0 {
                let nb = t - n0 - n1;
                let mut v = stop(m, n0, n1, nb);
                if t < budget {
                    let s0 = m.expect(&next[idx(n0 + 1, n1)]);
                    // A run of arm 1 moves L like a run of arm 0 (see the module docs).
                    let s1 = m.expect(&next[idx(n0, n1 + 1)]);
                    let sb = &next[idx(n0, n1)];
                    for i in 0..v.len() {
                        v[i] = v[i].max(s0[i]).max(s1[i]).max(sb[i]);
                    }
                }
                cur[idx(n0, n1)] = v;
            }
        }
        next = cur;
    }
    let mid = m.l.len() / 2;
    next[idx(0, 0)][mid]
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
            let r = stop(m, n0, n1, nb);
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
        None => vec![16, 20, 22, 23, 24, 28, 32],
    };
    let step: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0.05);
    let m = Model::new(step);
    println!("| runs | best fixed split (kyber-or-mq, mq-or-kyber, bfq) | best adaptive policy |");
    println!("|---:|---:|---:|");
    for b in budgets {
        let (f, (n0, n1, nb)) = fixed(&m, b);
        println!(
            "| {b} | {:.2}% ({n0}, {n1}, {nb}) | {:.2}% |",
            100.0 * f,
            100.0 * adaptive(&m, b)
        );
    }
    println!("\n(LLR grid step {step}; lenient model: see the example's docs)");
}
