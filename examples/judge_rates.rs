//! How often a tune keeps a setting that makes the second judge worse: the shipped `quick`
//! policy on the surfaces that give start-up figures (`data/surfaces/startup-*.toml`), with
//! its `[judge]` (start-up under light_io_load, at most 10% slower, 4 pairs) and without it
//! (the tune before issue #36).
//!
//! ```sh
//! cargo run --release --example judge_rates -- --from 10001 --seeds 400   # published
//! cargo run --release --example judge_rates -- --from 1 --seeds 100       # development
//! cargo run --release --example judge_rates -- --from 1 --seeds 100 --pairs 6
//! ```
//!
//! Per surface and policy, over the seeds (noise and the optimiser's draws), with the truth
//! the noise-free surface:
//! - **claims**: answers other than the default (significant verdicts);
//! - **traded**: the answer's true start-up Time is more than `tolerance` above the
//!   default's: the tune bought io_load Ratio with start-up latency;
//! - **success**: the answer's true io_load Ratio is within 5% of the best true Ratio;
//! - **success among holding**: the same, against the best true Ratio among the settings whose
//!   true start-up is within the tolerance (the default among them): what a tune that must
//!   not trade could at best have kept;
//! - **runs**: load runs per tune, judge runs included.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use sweetspot::bench::sim::SimDevice;
use sweetspot::bench::{Load, Testbed};
use sweetspot::tune::evaluator::NoRecord;
use sweetspot::tune::policy;
use sweetspot::tune::space::Space;
use sweetspot::tune::{self, Options};

struct Row {
    claims: u32,
    traded: u32,
    success: u32,
    success_holding: u32,
    runs: u64,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |k: &str| {
        args.iter()
            .position(|a| a == k)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    let seeds = arg("--seeds").unwrap_or(100);
    let from = arg("--from").unwrap_or(1);
    let mut quick = policy::builtin("quick").unwrap().unwrap();
    // `--pairs N`: the judge's pairs (quick's when not given), to choose the constant on the
    // development seeds.
    if let (Some(n), Some(j)) = (arg("--pairs"), quick.judges.as_mut()) {
        j.pairs = n as u32;
    }
    let judges = quick.judges.clone().expect("quick has judges");
    let tol = judges.tolerance;
    println!(
        "## Traded responsiveness: quick with and without its judge, seeds {from}..={}\n",
        from + seeds - 1
    );
    println!("| surface | judge | claims | traded | success | success among holding | mean runs |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    for name in ["startup-hurts-fifo_batch", "startup-holds-fifo_batch"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("data/surfaces/{name}.toml"));
        for judged in [false, true] {
            let mut pol = quick.clone();
            if !judged {
                pol.judges = None;
            }
            let mut row = Row {
                claims: 0,
                traded: 0,
                success: 0,
                success_holding: 0,
                runs: 0,
            };
            for seed in from..from + seeds {
                let mut sim = SimDevice::open(&path, seed).unwrap();
                let space = Space::build(&sim.space(), &pol, None).unwrap();
                let truth = |p: usize| sim_truth(&path, &space, p);
                let out = tune::optimise(
                    &mut sim,
                    &space,
                    &pol,
                    &mut NoRecord,
                    Options {
                        seed,
                        ..Options::default()
                    },
                )
                .unwrap();
                let v = out.verdict.unwrap();
                let chosen = if v.significant { v.best } else { space.default };
                let all: Vec<(f64, f64)> = (0..space.len()).map(truth).collect();
                let (ratio, startup) = all[chosen];
                let default_startup = all[space.default].1;
                let holds = |s: f64| s <= (1.0 + tol) * default_startup;
                let best = all.iter().map(|a| a.0).fold(f64::INFINITY, f64::min);
                let best_holding = all
                    .iter()
                    .filter(|a| holds(a.1))
                    .map(|a| a.0)
                    .fold(f64::INFINITY, f64::min);
                row.claims += v.significant as u32;
                row.traded += (v.significant && !holds(startup)) as u32;
                row.success += (ratio <= best * 1.05) as u32;
                row.success_holding += (ratio <= best_holding * 1.05) as u32;
                row.runs += out.runs;
            }
            let pct = |x: u32| 100.0 * f64::from(x) / seeds as f64;
            println!(
                "| {name} | {} | {:.1}% | {:.1}% | {:.1}% | {:.1}% | {:.1} |",
                if judged { "yes" } else { "no" },
                pct(row.claims),
                pct(row.traded),
                pct(row.success),
                pct(row.success_holding),
                row.runs as f64 / seeds as f64
            );
        }
    }
}

/// The true io_load Ratio and start-up Time (light_io_load) at grid point `p`.
fn sim_truth(path: &Path, space: &Space, p: usize) -> (f64, f64) {
    let sim = SimDevice::open(path, 0).unwrap();
    let s = &space.points[p];
    (
        sim.expected_ratio(s, Load::IoLoad).unwrap(),
        sim.expected_startup(s, Load::LightIoLoad).unwrap(),
    )
}
