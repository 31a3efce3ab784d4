//! io_load Ratio on an emulated slow device (`--scratch --emulate`) under the schedulers,
//! `fifo_batch` and writeback throttling, interleaved (A B C … A B C …) so that drift hits all
//! settings alike:
//!
//! ```sh
//! cargo run --release --example emulate_bench -- PRESET|SPEC [ROUNDS] [JOB_SCALE] [full|short] [LOAD_MIB]
//! cargo run --release --example emulate_bench -- PRESET|SPEC ROUNDS JOB_SCALE custom LOAD_MIB 'LABEL@knob=value,...' ...
//! cargo run --release --example emulate_bench -- --from-log FILE   # the table again, from the runs printed
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
//! turns wbt off), kyber, and mq-deadline with wbt off (`wbt_lat_usec=0`); on a disk model,
//! whose default is a rotational queue's 75000 us, also mq-deadline with wbt at a flash
//! queue's 2000 us. `short` keeps the default, none, bfq and the wbt rows. `LOAD_MIB` is
//! `--load-mib` (the size of io_load's files, MiB; default 256). `custom` measures the settings
//! given instead (the first is the reference row); give every knob in every row, since a
//! knob a row leaves out keeps the previous row's value.

use sweetspot::bench::contest_run::BenchOptions;
use sweetspot::bench::device_testbed::RealDevice;
use sweetspot::bench::emulate::Spec;
use sweetspot::bench::{Load, Testbed};
use sweetspot::knob::{KnobValue, Setting};
use sweetspot::stats;
use sweetspot::store::Store;
use sweetspot::sysroot::SysRoot;

/// What the device counted in one io_load run: seek GB, requests, max depth, mean depth
/// (`None` when read back from a log, which does not print it).
type Dev = (f64, f64, u64, Option<f64>);

/// One setting's runs, per round (`None`: the run failed or is missing).
struct Row {
    label: String,
    setting: Setting,
    no: Vec<Option<f64>>,
    io: Vec<Option<f64>>,
    loads: Vec<Option<f64>>,
    /// (seek GB, requests, max depth, mean depth) of the io_load run.
    dev: Vec<Option<Dev>>,
}

impl Row {
    fn new(label: &str, setting: Setting) -> Row {
        Row {
            label: label.to_string(),
            setting,
            no: vec![],
            io: vec![],
            loads: vec![],
            dev: vec![],
        }
    }
}

/// Rows from the run lines this example prints (`round R <label> <load> <time> s loads L seek
/// G GB req N maxq Q [why it failed]`).
fn from_log(text: &str) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("round ") else {
            continue;
        };
        let Some((round, rest)) = rest.split_once(' ') else {
            continue;
        };
        let Ok(round) = round.parse::<usize>() else {
            continue;
        };
        if rest.len() < 29 {
            continue;
        }
        let (label, tail) = rest.split_at(28);
        let label = label.trim();
        let f: Vec<&str> = tail.split_whitespace().collect();
        if f.len() < 12 {
            continue;
        }
        let failed = f.len() > 12;
        let i = match rows.iter().position(|r| r.label == label) {
            Some(i) => i,
            None => {
                rows.push(Row::new(label, Setting::new()));
                rows.len() - 1
            }
        };
        let row = &mut rows[i];
        for v in [&mut row.no, &mut row.io, &mut row.loads] {
            v.resize(round + 1, None);
        }
        row.dev.resize(round + 1, None);
        let t: Option<f64> = f[1].parse().ok().filter(|_| !failed);
        if f[0] == "no_load" {
            row.no[round] = t;
        } else {
            row.io[round] = t;
            row.loads[round] = f[4].parse().ok().filter(|_| !failed);
            row.dev[round] = (|| {
                Some((
                    f[6].parse().ok()?,
                    f[9].parse().ok()?,
                    f[11].parse().ok()?,
                    None,
                ))
            })()
            .filter(|_| !failed);
        }
    }
    rows
}

/// A `custom` row from `LABEL@knob=value,knob=value` (a label of at most 28 characters, the
/// log's column; an integer value is a number, anything else a name).
fn custom_row(arg: &str) -> Result<Row, String> {
    let (label, knobs) = arg
        .split_once('@')
        .ok_or_else(|| format!("'{arg}': expected LABEL@knob=value,..."))?;
    if label.len() > 28 {
        return Err(format!("'{label}': a label has at most 28 characters"));
    }
    let mut setting = Setting::new();
    for kv in knobs.split(',') {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("'{kv}': expected knob=value"))?;
        let v = v
            .parse::<i64>()
            .map_or_else(|_| KnobValue::Name(v.to_string()), KnobValue::Int);
        setting.insert(k.to_string(), v);
    }
    Ok(Row::new(label, setting))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    sweetspot::signals::install();
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).is_some_and(|a| a == "--from-log") {
        let text = std::fs::read_to_string(args.get(2).ok_or("--from-log FILE")?)?;
        let rows = from_log(&text);
        let rounds = rows.iter().map(|r| r.io.len()).max().unwrap_or(0);
        println!("from {}, {rounds} rounds", args[2]);
        println!();
        table(&rows);
        return Ok(());
    }
    let spec = Spec::parse(args.get(1).map_or("hdd-5400", String::as_str))?;
    let rounds: usize = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(6);
    let job_scale: f64 = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(0.3);
    let short = args.get(4).is_some_and(|s| s == "short");
    let custom = args.get(4).is_some_and(|s| s == "custom");
    let load_mib: Option<u64> = args.get(5).map(|s| s.parse()).transpose()?;
    let db = tempfile::tempdir()?;
    let mut opts = BenchOptions::new()?;
    opts.job_scale = job_scale;
    if let Some(m) = load_mib {
        opts.sizes = opts.sizes.with_mib(m);
    }
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
        "bench",
        Some(&spec),
    )?;
    let q = format!("/sys/block/{}/queue", dev.device_info().name);
    let read = |f: &str| std::fs::read_to_string(format!("{q}/{f}")).map(|s| s.trim().to_string());
    let wbt: i64 = read("wbt_lat_usec")?.parse()?;
    println!(
        "# {} on {}: scheduler {}, wbt_lat_usec {wbt}, nr_requests {}, rotational {}, job scale {job_scale}, load MiB {}",
        spec.name(),
        dev.device_info().name,
        read("scheduler")?,
        read("nr_requests")?,
        read("rotational")?,
        load_mib.map_or("default".into(), |m| m.to_string())
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
    if wbt != 2000 {
        all.push(("mq-deadline 16, wbt 2000", mqd(16, 2000)));
    }
    if short {
        all.retain(|(l, _)| {
            l.starts_with("default") || *l == "none" || l.starts_with("bfq") || l.contains("wbt")
        });
    }
    let mut rows: Vec<Row> = if custom {
        args[6..]
            .iter()
            .map(|a| custom_row(a))
            .collect::<Result<_, _>>()?
    } else {
        all.into_iter()
            .map(|(label, setting)| Row::new(label, setting))
            .collect()
    };
    for round in 0..rounds {
        for row in rows.iter_mut() {
            dev.apply(&row.setting)?;
            if round == 0 {
                let w = read("wbt_lat_usec").unwrap_or_default();
                println!("# {}: wbt_lat_usec {w}", row.label);
            }
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
                let ok = r.failed.is_none();
                let t = ok.then_some(r.time_s);
                match r.load {
                    Load::NoLoad => row.no.push(t),
                    _ => {
                        row.io.push(t);
                        row.loads.push(r.loads.filter(|_| ok));
                        row.dev.push(ok.then(|| {
                            (
                                c.seek_bytes as f64 / 1e9,
                                c.requests() as f64,
                                c.max_depth,
                                Some(c.mean_depth()),
                            )
                        }));
                    }
                }
            }
        }
    }
    dev.restore()?;
    drop(dev);
    println!();
    println!(
        "{} ({}), {rounds} interleaved rounds, job scale {job_scale}, {:.0} min",
        spec.name(),
        spec.canonical(),
        started.elapsed().as_secs_f64() / 60.0
    );
    println!();
    table(&rows);
    Ok(())
}

/// Per round, io_load Time ÷ the row's mean no_load Time (`None` where the run failed).
fn ratios(row: &Row) -> Vec<Option<f64>> {
    let no: Vec<f64> = row.no.iter().flatten().copied().collect();
    let m = stats::mean(&no);
    row.io.iter().map(|t| t.map(|t| t / m)).collect()
}

/// The paired two-sided p of each row's per-round Ratios against the first row's (rounds in
/// which both succeeded; `None` for the first row and when fewer than 2 pairs).
fn p_values(rows: &[Row]) -> Vec<Option<f64>> {
    let base = rows.first().map(ratios).unwrap_or_default();
    rows.iter()
        .enumerate()
        .map(|(i, row)| {
            if i == 0 {
                return None;
            }
            let (pa, pb): (Vec<f64>, Vec<f64>) = ratios(row)
                .iter()
                .zip(&base)
                .filter_map(|(a, b)| Some(((*a)?, (*b)?)))
                .unzip();
            stats::paired_less(&pa, &pb).map(|t| (2.0 * t.p_value.min(1.0 - t.p_value)).min(1.0))
        })
        .collect()
}

/// Holm's step-down adjustment (Holm 1979) of the p-values present: the k-th smallest of m
/// becomes max over j ≤ k of min(1, (m − j + 1) · p_(j)). A row is significant at family-wise
/// level α when its adjusted p ≤ α.
fn holm(p: &[Option<f64>]) -> Vec<Option<f64>> {
    let mut idx: Vec<usize> = (0..p.len()).filter(|&i| p[i].is_some()).collect();
    idx.sort_by(|&a, &b| p[a].unwrap_or(1.0).total_cmp(&p[b].unwrap_or(1.0)));
    let m = idx.len();
    let mut out = vec![None; p.len()];
    let mut run = 0.0f64;
    for (k, &i) in idx.iter().enumerate() {
        run = run.max(((m - k) as f64 * p[i].unwrap_or(1.0)).min(1.0));
        out[i] = Some(run);
    }
    out
}

/// The markdown table (see the module docs). Comparisons with the first row use the rounds in
/// which both succeeded; the p-values are two-sided paired t-tests, also Holm-adjusted over
/// the table's comparisons.
fn table(rows: &[Row]) {
    let Some(first) = rows.first() else {
        return;
    };
    let base = ratios(first);
    let ps = p_values(rows);
    let adj = holm(&ps);
    println!(
        "| setting | runs | no_load s | io_load s | Ratio (95% CI) | vs first row (95% CI) | p (two-sided, paired) | Holm p | io_load Loads | seek GB / run | requests / run | queue depth mean / max |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (i, row) in rows.iter().enumerate() {
        let r = ratios(row);
        let ok: Vec<f64> = r.iter().flatten().copied().collect();
        let ratio = stats::summarize(&ok).map_or("-".into(), |s| {
            format!("{:.2} ({:.2}–{:.2})", s.mean, s.ci95.0, s.ci95.1)
        });
        let (pa, pb): (Vec<f64>, Vec<f64>) = r
            .iter()
            .zip(&base)
            .filter_map(|(a, b)| Some(((*a)?, (*b)?)))
            .unzip();
        let fmt_p = |p: Option<f64>| p.map_or("-".into(), |p| format!("{p:.1e}"));
        let (vs, p, h) = if i == 0 {
            ("—".to_string(), "—".to_string(), "—".to_string())
        } else {
            let vs = stats::ratio_ci(&pb, &pa).map_or("-".into(), |(x, lo, hi)| {
                format!("{x:.2}× ({lo:.2}–{hi:.2})")
            });
            let h = adj[i].map_or("-".into(), |a| {
                format!("{a:.1e}{}", if a <= 0.05 { " **yes**" } else { "" })
            });
            (vs, fmt_p(ps[i]), h)
        };
        let dev: Vec<_> = row.dev.iter().flatten().collect();
        let n = dev.len().max(1) as f64;
        let depth = dev
            .iter()
            .map(|d| d.3)
            .collect::<Option<Vec<f64>>>()
            .map_or("?".into(), |v| format!("{:.0}", stats::mean(&v)));
        let flat = |v: &[Option<f64>]| -> Vec<f64> { v.iter().flatten().copied().collect() };
        println!(
            "| {} | {} | {:.2} | {:.2} | {ratio} | {vs} | {p} | {h} | {:.0} | {:.1} | {:.0} | {depth} / {} |",
            row.label,
            ok.len(),
            stats::mean(&flat(&row.no)),
            stats::mean(&flat(&row.io)),
            stats::mean(&flat(&row.loads)),
            dev.iter().map(|d| d.0).sum::<f64>() / n,
            dev.iter().map(|d| d.1).sum::<f64>() / n,
            dev.iter().map(|d| d.2).max().unwrap_or(0),
        );
    }
    println!();
    println!(
        "vs first row > 1: the setting's Ratio is smaller (better) than the first row's. Holm p: \
         adjusted over the {} comparisons; **yes**: significant at 5% family-wise.",
        ps.iter().flatten().count()
    );
}
