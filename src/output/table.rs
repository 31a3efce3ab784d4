//! contest's table: one block per load, a row per setting,
//!
//! ```text
//! io_load:
//! Setting [runs]          Time  CPU%  Loads  LCPU%  Ratio
//! fifo_batch=32 [3]      241.2    32      -      -   3.56
//!   Time 241.2 ± 9.0 s, 95% CI 218.8–263.6, median 239.9, range 232.5 … 251.2
//!   Ratio 3.56, 95% CI 3.21–3.95
//! ```
//!
//! Time in s with one decimal, CPU%, Loads and LCPU% rounded, Ratio with two decimals, as
//! contest printed them; `-` for a metric the load does not have, `n/a` for Ratio without
//! no_load. Beneath each row: mean ± sd, the 95% CI (cut at 0), median and range of Time (hyperfine's
//! style), outliers by MAD, failed runs; then Ratio's CI; on an emulated device
//! (`--emulate`) what the device counted, per run on average. Warnings close the report.

use super::{BenchReport, Exporter};
use crate::bench::Load;
use crate::bench::summary::{LoadSummary, TrialSummary};
use crate::stats::Summary;

/// The contest table exporter.
pub(crate) struct Table;

fn cell(s: &Option<Summary>, decimals: usize) -> String {
    s.as_ref()
        .map(|s| format!("{:.*}", decimals, s.mean))
        .unwrap_or_else(|| "-".into())
}

fn detail(l: &LoadSummary, d: usize) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(t) = &l.time_s {
        let mut line = format!("  Time {:.d$} ± {:.d$} s", t.mean, t.sd);
        if t.n > 1 {
            // The t-based interval, cut at 0 where it reaches below (a Time is positive;
            // cutting an interval to the parameter's range keeps its coverage).
            line += &format!(", 95% CI {:.d$}–{:.d$}", t.ci95.0.max(0.0), t.ci95.1);
        }
        line += &format!(
            ", median {:.d$}, range {:.d$} … {:.d$}",
            t.median, t.min, t.max
        );
        if !t.outliers.is_empty() {
            line += &format!(", {} outlier(s) by MAD", t.outliers.len());
        }
        out.push(line);
    }
    if let Some(r) = l.ratio.as_ref().filter(|_| l.load != Load::NoLoad)
        && r.ci95.0 < r.ci95.1
    {
        out.push(format!(
            "  Ratio {:.2}, 95% CI {:.2}–{:.2}",
            r.mean, r.ci95.0, r.ci95.1
        ));
    }
    if !l.failed.is_empty() {
        let runs: Vec<String> = l.failed.iter().map(|f| f.run.to_string()).collect();
        out.push(format!("  failed: run {} (excluded)", runs.join(", ")));
    }
    out.extend(device_line(l));
    out
}

/// What an emulated device counted, per successful run on average, e.g. `device: 990
/// requests, 557 MB, 170 seeks over 39.3 GB (2.33 s positioning), queue depth mean 44 max 175`.
fn device_line(l: &LoadSummary) -> Option<String> {
    let io: Vec<_> = l
        .raw
        .iter()
        .filter(|r| r.failed.is_none())
        .filter_map(|r| r.io)
        .collect();
    if io.is_empty() {
        return None;
    }
    let n = io.len() as f64;
    let mean = |f: &dyn Fn(&crate::bench::IoCounters) -> f64| io.iter().map(f).sum::<f64>() / n;
    Some(format!(
        "  device: {:.0} requests, {:.0} MB, {:.0} seeks over {:.1} GB ({:.2} s positioning), \
         queue depth mean {:.1} max {}",
        mean(&|c| c.requests() as f64),
        mean(&|c| (c.read_bytes + c.write_bytes) as f64 / 1e6),
        mean(&|c| c.seeks as f64),
        mean(&|c| c.seek_bytes as f64 / 1e9),
        mean(&|c| c.position_us as f64 / 1e6),
        mean(&|c| c.mean_depth()),
        io.iter().map(|c| c.max_depth).max().unwrap_or(0)
    ))
}

/// Renders contest's blocks for several trials (one row per trial in each load's block),
/// so settings can be compared side by side. Loads appear in the order first seen.
pub(crate) fn contest_blocks(trials: &[&TrialSummary]) -> String {
    blocks(trials, 1)
}

/// [`contest_blocks`] with Time to `d` decimals (3 for the start-up judge, whose Time is
/// often under a second).
fn blocks(trials: &[&TrialSummary], d: usize) -> String {
    let mut loads: Vec<Load> = Vec::new();
    for t in trials {
        for l in &t.loads {
            if !loads.contains(&l.load) {
                loads.push(l.load);
            }
        }
    }
    let first = |t: &TrialSummary, l: &LoadSummary| format!("{} [{}]", t.label, l.runs);
    let width = trials
        .iter()
        .flat_map(|t| t.loads.iter().map(|l| first(t, l).chars().count()))
        .chain(["Setting [runs]".len()])
        .max()
        .unwrap_or(14);
    let mut out = String::new();
    for load in loads {
        out += &format!("{load}:\n");
        out += &format!(
            "{:<width$}  {:>7}  {:>5}  {:>6}  {:>5}  {:>5}\n",
            "Setting [runs]", "Time", "CPU%", "Loads", "LCPU%", "Ratio"
        );
        for t in trials {
            let Some(l) = t.load(load) else { continue };
            let ratio = l
                .ratio
                .as_ref()
                .map(|r| format!("{:.2}", r.mean))
                .unwrap_or_else(|| "n/a".into());
            out += &format!(
                "{:<width$}  {:>7}  {:>5}  {:>6}  {:>5}  {:>5}\n",
                first(t, l),
                cell(&l.time_s, d),
                cell(&l.cpu_pct, 0),
                cell(&l.loads, 0),
                cell(&l.lcpu_pct, 0),
                ratio
            );
            for line in detail(l, d) {
                out += &line;
                out.push('\n');
            }
        }
        out.push('\n');
    }
    out
}

impl Exporter for Table {
    fn render(&self, r: &BenchReport) -> crate::Result<String> {
        let mut out = format!("{} (kernel {})\n\n", r.target.label, r.target.kernel);
        if r.sizes.get("judge").and_then(|j| j.as_str()) == Some("startup") {
            out += "start-up judge (docs/judges.md): Time is one cold start-up's\n\n";
            out += &blocks(&[&r.trial], 3);
        } else {
            out += &contest_blocks(&[&r.trial]);
        }
        for w in &r.trial.warnings {
            out += &format!("warning: {w}\n");
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Run;
    use crate::bench::summary::summarize_trial;
    use crate::knob::{KnobValue, Setting};

    #[test]
    fn renders_contest_blocks() {
        let mk = |load, t| Run {
            load,
            time_s: t,
            cpu_pct: 97.4,
            loads: (load == Load::IoLoad).then_some(12.0),
            lcpu_pct: (load == Load::IoLoad).then_some(8.6),
            failed: None,
            io: None,
        };
        let runs = vec![
            mk(Load::NoLoad, 67.0),
            mk(Load::IoLoad, 238.0),
            mk(Load::NoLoad, 68.4),
            mk(Load::IoLoad, 241.0),
        ];
        let setting = Setting::from([("fifo_batch".to_string(), KnobValue::Int(32))]);
        let s = summarize_trial(&setting, &runs);
        let text = contest_blocks(&[&s]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "no_load:");
        assert_eq!(
            lines[1],
            "Setting [runs]        Time   CPU%   Loads  LCPU%  Ratio"
        );
        assert_eq!(
            lines[2],
            "fifo_batch=32 [2]     67.7     97       -      -   1.00"
        );
        assert!(
            lines[3].starts_with("  Time 67.7 ± 1.0 s, 95% CI "),
            "{}",
            lines[3]
        );
        let io = lines.iter().position(|l| *l == "io_load:").unwrap();
        // Ratio = 239.5 / 67.7 = 3.54, the seed thread's figure at fifo_batch 32.
        assert_eq!(
            lines[io + 2],
            "fifo_batch=32 [2]    239.5     97      12      9   3.54"
        );
        assert!(
            lines[io + 4].starts_with("  Ratio 3.54, 95% CI "),
            "{}",
            lines[io + 4]
        );
    }

    #[test]
    fn a_time_interval_reaching_below_zero_is_cut_at_zero() {
        let mk = |t| Run {
            load: Load::NoLoad,
            time_s: t,
            cpu_pct: 90.0,
            loads: None,
            lcpu_pct: None,
            failed: None,
            io: None,
        };
        // Mean 5.0, sd 5.66, t(0.975, 1 df) = 12.706: 5.0 ∓ 12.706 · 4.0 = −45.8 … 55.8.
        let s = summarize_trial(&Setting::new(), &[mk(1.0), mk(9.0)]);
        let text = contest_blocks(&[&s]);
        assert_eq!(
            text.lines().nth(3).unwrap(),
            "  Time 5.0 ± 5.7 s, 95% CI 0.0–55.8, median 5.0, range 1.0 … 9.0"
        );
    }

    #[test]
    fn an_emulated_device_s_counters_close_a_load_s_rows() {
        let io = |seek_gb: u64| crate::bench::IoCounters {
            reads: 100,
            writes: 900,
            read_bytes: 50_000_000,
            write_bytes: 450_000_000,
            seeks: 170,
            seek_bytes: seek_gb * 1_000_000_000,
            position_us: 2_000_000,
            busy_us: 9_000_000,
            max_depth: 170 + seek_gb,
            depth_sum: 40_000,
        };
        let mk = |load, t, c: Option<crate::bench::IoCounters>| Run {
            load,
            time_s: t,
            cpu_pct: 50.0,
            loads: (load == Load::IoLoad).then_some(256.0),
            lcpu_pct: None,
            failed: None,
            io: c,
        };
        let runs = vec![
            mk(Load::NoLoad, 5.0, None),
            mk(Load::IoLoad, 12.0, Some(io(40))),
            mk(Load::NoLoad, 5.0, None),
            mk(Load::IoLoad, 13.0, Some(io(60))),
        ];
        let s = summarize_trial(&Setting::new(), &runs);
        let text = contest_blocks(&[&s]);
        assert!(
            text.contains(
                "  device: 1000 requests, 500 MB, 170 seeks over 50.0 GB (2.00 s positioning), \
                 queue depth mean 40.0 max 230"
            ),
            "{text}"
        );
        // No counters (a real disk, a simulation): no line.
        assert_eq!(text.matches("device:").count(), 1);
    }
}
