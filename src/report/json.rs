//! `bench --json`: one object per report (docs/DESIGN.md "External contract"):
//!
//! ```text
//! { "target": {label, identity, kernel}, "setting": {knob: value}, "label": "...",
//!   "sizes": {...}, "warnings": ["..."],
//!   "loads": [ { "load": "io_load", "runs": 3,             // successful runs
//!                "time_s", "cpu_pct", "loads", "lcpu_pct", "ratio": means (null if n/a),
//!                "stats": { "time_s": {n, mean, sd, min, max, median, ci95: [lo, hi],
//!                                      outliers: [indices]}, "cpu_pct", "loads",
//!                           "lcpu_pct", "ratio": same shape or null },
//!                "raw": [ {run (1-based), time_s, cpu_pct, loads, lcpu_pct, ratio, failed} ],
//!                "failed": [ {run, reason} ] } ] }
//! ```
//!
//! Units: s for `time_s`, % for `cpu_pct`/`lcpu_pct`, work units for `loads`. Ratio's CI is
//! that of `stats::ratio_ci` (see `bench::summary`). No timestamps or ids: a seeded
//! simulation prints identical bytes.

use super::{BenchReport, Exporter};
use crate::bench::summary::{FailedRun, LoadSummary};
use crate::bench::{Load, TargetInfo};
use crate::knob::Setting;
use crate::stats::Summary;
use serde::Serialize;

/// The JSON exporter (pretty-printed; keys in the order documented above).
pub struct Json;

/// The whole `bench --json` object.
#[derive(Serialize)]
pub struct BenchJson<'a> {
    target: &'a TargetInfo,
    setting: &'a Setting,
    label: &'a str,
    sizes: &'a serde_json::Value,
    loads: Vec<LoadJson<'a>>,
    warnings: &'a [String],
}

/// One load of `bench --json`.
#[derive(Serialize)]
pub struct LoadJson<'a> {
    load: Load,
    runs: usize,
    time_s: Option<f64>,
    cpu_pct: Option<f64>,
    loads: Option<f64>,
    lcpu_pct: Option<f64>,
    ratio: Option<f64>,
    stats: StatsJson<'a>,
    raw: Vec<RawJson<'a>>,
    failed: &'a [FailedRun],
}

#[derive(Serialize)]
struct StatsJson<'a> {
    time_s: &'a Option<Summary>,
    cpu_pct: &'a Option<Summary>,
    loads: &'a Option<Summary>,
    lcpu_pct: &'a Option<Summary>,
    ratio: &'a Option<Summary>,
}

#[derive(Serialize)]
struct RawJson<'a> {
    run: usize,
    time_s: f64,
    cpu_pct: f64,
    loads: Option<f64>,
    lcpu_pct: Option<f64>,
    ratio: Option<f64>,
    failed: &'a Option<String>,
}

fn mean(s: &Option<Summary>) -> Option<f64> {
    s.as_ref().map(|s| s.mean)
}

/// One load in `bench --json`'s shape.
pub fn load_json(l: &LoadSummary) -> LoadJson<'_> {
    LoadJson {
        load: l.load,
        runs: l.runs,
        time_s: mean(&l.time_s),
        cpu_pct: mean(&l.cpu_pct),
        loads: mean(&l.loads),
        lcpu_pct: mean(&l.lcpu_pct),
        ratio: mean(&l.ratio),
        stats: StatsJson {
            time_s: &l.time_s,
            cpu_pct: &l.cpu_pct,
            loads: &l.loads,
            lcpu_pct: &l.lcpu_pct,
            ratio: &l.ratio,
        },
        raw: l
            .raw
            .iter()
            .zip(&l.raw_ratio)
            .enumerate()
            .map(|(i, (r, ratio))| RawJson {
                run: i + 1,
                time_s: r.time_s,
                cpu_pct: r.cpu_pct,
                loads: r.loads,
                lcpu_pct: r.lcpu_pct,
                ratio: *ratio,
                failed: &r.failed,
            })
            .collect(),
        failed: &l.failed,
    }
}

impl Exporter for Json {
    fn render(&self, r: &BenchReport) -> crate::Result<String> {
        let v = BenchJson {
            target: &r.target,
            setting: &r.trial.setting,
            label: &r.trial.label,
            sizes: &r.sizes,
            loads: r.trial.loads.iter().map(load_json).collect(),
            warnings: &r.trial.warnings,
        };
        let s =
            serde_json::to_string_pretty(&v).map_err(|e| crate::Error::Failed(e.to_string()))?;
        Ok(s + "\n")
    }
}
