//! The JSON convention of every command (docs/json.md): [`VERSION`] in a top-level `version`
//! (`Versioned`), numbers as numbers with their unit in the field name (`time_s`,
//! `size_bytes`) or documented, times as RFC 3339 UTC with their Unix seconds beside them
//! (`started_at` + `started_at_epoch_s`, `Stamp`), durations in seconds (`elapsed_s`).
//! A schema per command is in `docs/schemas/` (tests/cli/json_schemas.rs checks every command's
//! output against it).
//!
//! Below it, `bench --json`'s exporter: one object per report (docs/DESIGN.md "External
//! contract"):
//!
//! ```text
//! { "version": 3, "target": {label, identity, kernel}, "setting": {knob: value}, "label": "...",
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

/// The JSON format's version, the same for every command's output (its top-level `version`):
/// 3 since times are RFC 3339 with `_epoch_s` beside them, `status --json`'s values are typed
/// and every command carries it (2: `status` and `verify` typed knob values as numbers; 1:
/// strings). It says how to read the fields, not which sweetspot printed them (that is
/// `sweetspot --version`): it changes only when a field's type or meaning does, not when a
/// field is added.
pub const VERSION: u32 = 3;

/// `body`'s fields after `"version": VERSION`: what every command prints with `--json`.
#[derive(Serialize)]
pub(crate) struct Versioned<'a, T: Serialize> {
    version: u32,
    #[serde(flatten)]
    body: &'a T,
}

impl<'a, T: Serialize> Versioned<'a, T> {
    /// `body` with [`VERSION`] before its fields; `body` must serialize as an object.
    pub(crate) fn new(body: &'a T) -> Self {
        Versioned {
            version: VERSION,
            body,
        }
    }
}

/// A time as every command's JSON prints it: `<name>` RFC 3339 UTC (`2026-12-01T08:00:00Z`)
/// and `<name>_epoch_s`, the same instant in Unix seconds. Serialized by the struct that
/// holds it under the names it chooses (serde cannot prefix a flattened struct's keys).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Stamp {
    /// RFC 3339, UTC, whole seconds.
    pub rfc3339: String,
    /// Unix seconds.
    pub epoch_s: i64,
}

impl Stamp {
    /// The time `epoch_s` (Unix seconds).
    pub(crate) fn new(epoch_s: i64) -> Stamp {
        Stamp {
            rfc3339: crate::types::time::rfc3339(epoch_s),
            epoch_s,
        }
    }
}

/// The JSON exporter (pretty-printed; keys in the order documented above).
pub(crate) struct Json;

/// The whole `bench --json` object.
#[derive(Serialize)]
pub(crate) struct BenchJson<'a> {
    version: u32,
    target: &'a TargetInfo,
    setting: &'a Setting,
    label: &'a str,
    sizes: &'a serde_json::Value,
    loads: Vec<LoadJson<'a>>,
    warnings: &'a [String],
}

/// One load of `bench --json`.
#[derive(Serialize)]
pub(crate) struct LoadJson<'a> {
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
pub(crate) fn load_json(l: &LoadSummary) -> LoadJson<'_> {
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
            version: VERSION,
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
