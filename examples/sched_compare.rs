//! Compares io_load Ratio on a `--scratch` loop device between `scheduler=none` and
//! `mq-deadline` with `fifo_batch` 1 and 256, interleaving the settings (A B C A B C …) so that
//! drift hits all alike: `cargo run --release --example sched_compare -- [ROUNDS]`. Needs root.
//! Prints each run and, per setting, io_load Ratio = io_load Time ÷ that setting's mean no_load
//! Time.

use sweetspot::bench::contest_run::BenchOptions;
use sweetspot::bench::device_testbed::RealDevice;
use sweetspot::bench::{Load, Testbed};
use sweetspot::knob::{KnobValue, Setting, setting_label};
use sweetspot::store::Store;
use sweetspot::sysroot::SysRoot;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    sweetspot::signals::install();
    let rounds: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(3);
    let db = tempfile::tempdir()?;
    let mut opts = BenchOptions::new()?;
    opts.exe = std::env::current_exe()?
        .parent()
        .and_then(|p| p.parent())
        .map(|p| p.join("sweetspot"))
        .ok_or("no exe dir")?;
    let mut dev = RealDevice::scratch(
        Store::open(&db.path().join("s.db"))?,
        &SysRoot::default(),
        opts,
        "bench",
    )?;
    let s = |pairs: &[(&str, KnobValue)]| -> Setting {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    };
    let settings = [
        s(&[("scheduler", "none".into())]),
        s(&[
            ("scheduler", "mq-deadline".into()),
            ("fifo_batch", KnobValue::Int(1)),
        ]),
        s(&[
            ("scheduler", "mq-deadline".into()),
            ("fifo_batch", KnobValue::Int(256)),
        ]),
    ];
    let mut times: Vec<(Vec<f64>, Vec<f64>)> = vec![(vec![], vec![]); settings.len()];
    for round in 0..rounds {
        for (i, st) in settings.iter().enumerate() {
            dev.apply(st)?;
            for r in dev.measure(&[Load::NoLoad, Load::IoLoad], 1)? {
                println!(
                    "round {round} {:<34} {:<8} {:6.2} s cpu {:5.1}% loads {:?} {}",
                    setting_label(st),
                    r.load.name(),
                    r.time_s,
                    r.cpu_pct,
                    r.loads,
                    r.failed.unwrap_or_default()
                );
                match r.load {
                    Load::NoLoad => times[i].0.push(r.time_s),
                    _ => times[i].1.push(r.time_s),
                }
            }
        }
    }
    dev.restore()?;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    for (st, (no, io)) in settings.iter().zip(&times) {
        let ratios: Vec<f64> = io.iter().map(|t| t / mean(no)).collect();
        let m = mean(&ratios);
        let sd = (ratios.iter().map(|r| (r - m).powi(2)).sum::<f64>()
            / (ratios.len().max(2) - 1) as f64)
            .sqrt();
        println!(
            "{:<34} no_load {:5.2} s  io_load {:5.2} s  Ratio {:.2} ± {:.2} (sd, {} runs)",
            setting_label(st),
            mean(no),
            mean(io),
            m,
            sd,
            io.len()
        );
    }
    Ok(())
}
