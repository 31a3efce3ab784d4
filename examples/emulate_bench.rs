//! io_load Ratio on an emulated slow device (`--scratch --emulate`) under the schedulers,
//! `fifo_batch` and writeback throttling, interleaved (A B C … A B C …) so that drift hits all
//! settings alike:
//!
//! ```sh
//! cargo run --release --example emulate_bench -- PRESET|SPEC [ROUNDS] [JOB_SCALE] [full|short]
//! ```
//!
//! Needs root and /dev/fuse. One emulated scratch device serves every round. Prints each run,
//! then a markdown table: per setting, no_load and io_load Time, Ratio (io_load Time ÷ that
//! setting's mean no_load Time) with its 95% CI, Ratio against the device's default setting
//! (`stats::ratio_ci`, paired by round) with a two-sided paired t-test on the per-round Ratios,
//! the writer's Loads, and what the device counted per io_load run. `examples/emulate-results.md`
//! holds the figures it gave.
//!
//! The settings (`full`): the default (mq-deadline, fifo_batch 16, wbt at the device's
//! default), none, mq-deadline with fifo_batch 1 and 256, bfq (as bfq sets itself up: it
//! turns wbt off), kyber, and mq-deadline with wbt off (`wbt_lat_usec=0`). `short` keeps the
//! default, none, bfq and wbt off.

use sweetspot::bench::emulate::Spec;
use sweetspot::bench::real::RealDevice;
use sweetspot::bench::realrun::BenchOptions;
use sweetspot::bench::{IoCounters, Load, Testbed};
use sweetspot::knob::{KnobValue, Setting};
use sweetspot::stats;
use sweetspot::store::Store;
use sweetspot::sysroot::SysRoot;

struct Row {
    label: &'static str,
    setting: Setting,
    no: Vec<f64>,
    io: Vec<f64>,
    loads: Vec<f64>,
    counters: Vec<IoCounters>,
    wbt_seen: Option<String>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    sweetspot::signals::install();
    let args: Vec<String> = std::env::args().collect();
    let spec = Spec::parse(args.get(1).map_or("hdd-5400", String::as_str))?;
    let rounds: usize = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(6);
    let job_scale: f64 = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(0.3);
    let short = args.get(4).is_some_and(|s| s == "short");
    let db = tempfile::tempdir()?;
    let mut opts = BenchOptions::new()?;
    opts.job_scale = job_scale;
    opts.exe = std::env::current_exe()?
        .parent()
        .and_then(|p| p.parent())
        .map(|p| p.join("sweetspot"))
        .ok_or("no exe dir")?;
    let started = std::time::Instant::now();
    let mut dev = RealDevice::scratch_emulated(
        Store::open(&db.path().join("s.db"))?,
        &SysRoot::default(),
        opts,
        Some(&spec),
    )?;
    let q = format!("/sys/block/{}/queue", dev.device_info().name);
    let read = |f: &str| std::fs::read_to_string(format!("{q}/{f}")).map(|s| s.trim().to_string());
    let wbt: i64 = read("wbt_lat_usec")?.parse()?;
    println!(
        "# {} on {}: scheduler {}, wbt_lat_usec {wbt}, nr_requests {}, job scale {job_scale}",
        spec.name(),
        dev.device_info().name,
        read("scheduler")?,
        read("nr_requests")?
    );
    let s = |pairs: &[(&str, KnobValue)]| -> Setting {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    };
    let mqd = |fb: i64, w: i64| {
        s(&[
            ("scheduler", "mq-deadline".into()),
            ("fifo_batch", KnobValue::Int(fb)),
            ("wbt_lat_usec", KnobValue::Int(w)),
        ])
    };
    let mut all: Vec<(&'static str, Setting)> = vec![
        ("default (mq-deadline 16)", mqd(16, wbt)),
        (
            "none",
            s(&[
                ("scheduler", "none".into()),
                ("wbt_lat_usec", KnobValue::Int(wbt)),
            ]),
        ),
        ("mq-deadline fifo_batch=1", mqd(1, wbt)),
        ("mq-deadline fifo_batch=256", mqd(256, wbt)),
        (
            "bfq (wbt as bfq sets it)",
            s(&[("scheduler", "bfq".into())]),
        ),
        (
            "kyber",
            s(&[
                ("scheduler", "kyber".into()),
                ("wbt_lat_usec", KnobValue::Int(wbt)),
            ]),
        ),
        ("mq-deadline 16, wbt off", mqd(16, 0)),
    ];
    if short {
        all.retain(|(l, _)| {
            l.starts_with("default") || *l == "none" || l.starts_with("bfq") || l.ends_with("off")
        });
    }
    let mut rows: Vec<Row> = all
        .into_iter()
        .map(|(label, setting)| Row {
            label,
            setting,
            no: vec![],
            io: vec![],
            loads: vec![],
            counters: vec![],
            wbt_seen: None,
        })
        .collect();
    for round in 0..rounds {
        for row in rows.iter_mut() {
            dev.apply(&row.setting)?;
            row.wbt_seen = read("wbt_lat_usec").ok();
            for r in dev.measure(&[Load::NoLoad, Load::IoLoad], 1)? {
                let c = r.io.unwrap_or_default();
                println!(
                    "round {round} {:<28} {:<8} {:6.2} s loads {:>5} seek {:6.2} GB req {:6} maxq {:3} {}",
                    row.label,
                    r.load.name(),
                    r.time_s,
                    r.loads.map_or("-".into(), |l| format!("{l:.0}")),
                    c.seek_bytes as f64 / 1e9,
                    c.requests(),
                    c.max_depth,
                    r.failed.clone().unwrap_or_default()
                );
                if r.failed.is_some() {
                    continue;
                }
                match r.load {
                    Load::NoLoad => row.no.push(r.time_s),
                    _ => {
                        row.io.push(r.time_s);
                        row.loads.push(r.loads.unwrap_or(0.0));
                        row.counters.push(c);
                    }
                }
            }
        }
    }
    dev.restore()?;
    drop(dev);
    let ratios = |row: &Row| -> Vec<f64> {
        let m = stats::mean(&row.no);
        row.io.iter().map(|t| t / m).collect()
    };
    let base = ratios(&rows[0]);
    println!();
    println!(
        "{} ({}), {rounds} interleaved rounds, job scale {job_scale}, {:.0} min",
        spec.name(),
        spec.canonical(),
        started.elapsed().as_secs_f64() / 60.0
    );
    println!();
    println!(
        "| setting | no_load s | io_load s | Ratio (95% CI) | vs default (95% CI) | p (two-sided, paired) | io_load Loads | seek GB / run | requests / run | queue depth mean / max | wbt_lat_usec |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (i, row) in rows.iter().enumerate() {
        let r = ratios(row);
        let sum = stats::summarize(&r);
        let ratio = sum.as_ref().map_or("-".into(), |s| {
            format!("{:.2} ({:.2}–{:.2})", s.mean, s.ci95.0, s.ci95.1)
        });
        let (vs, p) = if i == 0 {
            ("—".to_string(), "—".to_string())
        } else {
            let vs = stats::ratio_ci(&base, &r).map_or("-".into(), |(x, lo, hi)| {
                format!("{x:.2}× ({lo:.2}–{hi:.2})")
            });
            let p = stats::paired_less(&r, &base[..r.len().min(base.len())])
                .map_or("-".into(), |t| {
                    format!("{:.1e}", (2.0 * t.p_value.min(1.0 - t.p_value)).min(1.0))
                });
            (vs, p)
        };
        let n = row.counters.len().max(1) as f64;
        let avg = |f: &dyn Fn(&IoCounters) -> f64| row.counters.iter().map(f).sum::<f64>() / n;
        println!(
            "| {} | {:.2} | {:.2} | {ratio} | {vs} | {p} | {:.0} | {:.1} | {:.0} | {:.0} / {} | {} |",
            row.label,
            stats::mean(&row.no),
            stats::mean(&row.io),
            stats::mean(&row.loads),
            avg(&|c| c.seek_bytes as f64 / 1e9),
            avg(&|c| c.requests() as f64),
            avg(&|c| c.mean_depth()),
            row.counters.iter().map(|c| c.max_depth).max().unwrap_or(0),
            row.wbt_seen.as_deref().unwrap_or("?")
        );
    }
    println!();
    println!("vs default > 1: the setting's Ratio is smaller (better) than the default's.");
    Ok(())
}
