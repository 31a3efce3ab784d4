//! Policies: which knobs to tune, which loads to run, the objective, guard rails, budget and
//! statistics. A policy is a TOML file; the shipped ones (`policies/*.toml`) are compiled into
//! the binary so `tune` works from any directory. `resolve` finds a policy by path, by name
//! in `/etc/sweetspot/policies/`, or by built-in name, in that order.
//!
//! ```toml
//! description = "responsiveness of the job under io_load"
//! loads = ["no_load", "io_load"]   # run per trial, `runs` times each
//! runs = 1
//! budget = 12                      # trials in all (search + final check)
//! alpha = 0.05                     # one-sided test level of the final check
//! min_effect = 0.03                # the sweet spot must be at least 3% better
//! check_pairs = 3                  # fewest interleaved (default, best) pairs in the check
//!                                  # (but see docs/policy.md: a late "not flat" no_load)
//!
//! [objective]
//! minimize = "ratio"               # geometric mean of Ratio over `loads`
//! loads = ["io_load"]
//! # or: maximize = "loads", load = "io_load"
//!
//! [knobs.scheduler]                # every knob the device has is used; a known knob it lacks
//!                                  # is skipped; a name no device has (not in the knob
//!                                  # catalogue) is an error
//! values = ["mq-deadline", "none"] # optional value list
//! [knobs.fifo_batch]
//! min = 1                          # optional range (log2 grid between the bounds);
//! max = 256                        # outside the knob's safe domain it is an error
//!
//! [[guard]]                        # a setting is acceptable only when
//! load = "io_load"                 # io_load's mean Loads is
//! metric = "loads"
//! min_vs_default = 0.5             # at least 0.5 × the default setting's
//!
//! [judge]                          # second judges (`policy/judge.rs`): the sweet spot must
//! startup = ["light_io_load"]      # not make start-up under these more than 10% slower
//! tolerance = 0.10
//! ```
//!
//! Errors name the file, line and field ([`Error::BadFile`], exit 2).

use crate::bench::Load;
use crate::bench::user_job::UserJob;
use crate::knob::KnobValue;
use crate::tomlfile::TomlFile;
use crate::trust::{self, Origin};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// Where admins drop their own policies; a file here overrides a built-in of the same name.
pub const SYSTEM_DIR: &str = "/etc/sweetspot/policies";

/// The built-in policies: (name, TOML text).
pub const BUILTIN: [(&str, &str); 4] = [
    ("desktop", include_str!("../../policies/desktop.toml")),
    ("quick", include_str!("../../policies/quick.toml")),
    ("slowdisk", include_str!("../../policies/slowdisk.toml")),
    ("throughput", include_str!("../../policies/throughput.toml")),
];

/// What a tune optimises.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    /// Minimise the geometric mean of Ratio over these loads (contest's responsiveness).
    MinRatio {
        /// Loads whose Ratio counts (never `no_load`).
        loads: Vec<Load>,
    },
    /// Maximise this load's Loads (completed work units): throughput.
    MaxLoads {
        /// The load whose work counts.
        load: Load,
    },
    /// The user's own benchmark: its figure, maximised or minimised (a policy's
    /// `[benchmark]`, or `tune --job CMD --metric ...`). A trial is `runs` runs of it alone.
    Benchmark(UserJob),
}

impl Objective {
    /// A short label, e.g. `io_load Ratio` or `io_load Loads`.
    pub fn label(&self) -> String {
        match self {
            Objective::MinRatio { loads } if loads.len() == 1 => format!("{} Ratio", loads[0]),
            Objective::MinRatio { loads } => {
                let names: Vec<_> = loads.iter().map(|l| l.name()).collect();
                format!("geomean Ratio ({})", names.join(", "))
            }
            Objective::MaxLoads { load } => format!("{load} Loads"),
            Objective::Benchmark(job) => job.label(),
        }
    }

    /// True when a smaller value is better.
    pub(crate) fn minimize(&self) -> bool {
        match self {
            Objective::MinRatio { .. } => true,
            Objective::MaxLoads { .. } => false,
            Objective::Benchmark(job) => !job.maximize,
        }
    }
}

/// A per-run metric a guard rail can bound (contest's columns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// The job's wall time, s.
    TimeS,
    /// The job's CPU%.
    CpuPct,
    /// The load's completed work units.
    Loads,
    /// The load's own CPU%.
    LcpuPct,
    /// Time ÷ the same setting's mean no_load Time.
    Ratio,
}

impl Metric {
    const NAMES: [(&'static str, Metric); 5] = [
        ("time_s", Metric::TimeS),
        ("cpu_pct", Metric::CpuPct),
        ("loads", Metric::Loads),
        ("lcpu_pct", Metric::LcpuPct),
        ("ratio", Metric::Ratio),
    ];

    /// The column name used in policies and JSON, e.g. `loads`.
    pub(crate) fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, m)| *m == self)
            .map(|(n, _)| *n)
            .unwrap_or("?")
    }
}

/// A guard rail: a setting is acceptable only when `load`'s mean `metric` stays within
/// `factor` × the default setting's mean (at least, or at most).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Guard {
    /// The load measured.
    pub load: Load,
    /// The metric bounded.
    pub metric: Metric,
    /// True: at least `factor` × default; false: at most.
    pub at_least: bool,
    /// The bound as a multiple of the default setting's mean.
    pub factor: f64,
}

impl Guard {
    /// Human form, e.g. `io_load loads >= 0.5x default`.
    pub(crate) fn label(&self) -> String {
        let op = if self.at_least { ">=" } else { "<=" };
        format!(
            "{} {} {op} {}x default",
            self.load,
            self.metric.name(),
            self.factor
        )
    }

    /// True when `value` (the setting's mean) satisfies the guard given the default's mean.
    pub(crate) fn holds(&self, value: f64, default: f64) -> bool {
        if self.at_least {
            value >= self.factor * default
        } else {
            value <= self.factor * default
        }
    }
}

/// Which values of a knob the policy allows (on top of the device's domain).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct KnobChoice {
    /// Only these values (scheduler names or integers).
    pub values: Option<Vec<KnobValue>>,
    /// Lower bound for an integer knob's log2 grid.
    pub min: Option<i64>,
    /// Upper bound for an integer knob's log2 grid.
    pub max: Option<i64>,
    /// 1-based line of the knob's table (`[knobs.fifo_batch]`) in the policy file, for errors.
    #[serde(skip)]
    pub line: Option<usize>,
    /// 1-based lines of its `values`, `min` and `max` fields, for errors about them.
    #[serde(skip)]
    pub field_lines: FieldLines,
}

/// Where a knob's fields are in the policy file (1-based lines), for errors naming them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FieldLines {
    /// Line of `values = [...]`.
    pub values: Option<usize>,
    /// Line of `min = ...`.
    pub min: Option<usize>,
    /// Line of `max = ...`.
    pub max: Option<usize>,
}

/// A parsed, validated policy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Policy {
    /// Name: the built-in name or the file stem.
    pub name: String,
    /// Where it came from: `builtin:quick` or a path.
    pub source: String,
    /// The file named in errors: the path, or `policies/<name>.toml` for a built-in.
    #[serde(skip)]
    pub path: PathBuf,
    /// One-line description.
    pub description: String,
    /// The loads of a trial, in run order (no_load first when present).
    pub loads: Vec<Load>,
    /// Runs of each load per trial.
    pub runs: u32,
    /// Most trials a tune may spend, search and final check together.
    pub budget: u32,
    /// One-sided test level of the final check (default 0.05).
    pub alpha: f64,
    /// Smallest improvement worth applying, as a fraction (default 0.03 = 3%).
    pub min_effect: f64,
    /// Fewest interleaved (default, best) pairs in the final check (default 3).
    pub check_pairs: u32,
    /// What is optimised.
    pub objective: Objective,
    /// The knobs to tune, by name.
    pub knobs: BTreeMap<String, KnobChoice>,
    /// Guard rails relative to the default setting.
    pub guards: Vec<Guard>,
    /// The second judges a sweet spot must not lose on (`[judge]`), if any.
    pub judges: Option<Judges>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    description: Option<String>,
    loads: Option<Spanned<Vec<Spanned<String>>>>,
    runs: Option<Spanned<i64>>,
    budget: Spanned<i64>,
    alpha: Option<Spanned<f64>>,
    min_effect: Option<Spanned<f64>>,
    check_pairs: Option<Spanned<i64>>,
    objective: Option<Spanned<RawObjective>>,
    benchmark: Option<Spanned<benchmark::RawBenchmark>>,
    #[serde(default)]
    knobs: BTreeMap<Spanned<String>, Spanned<RawKnob>>,
    #[serde(default)]
    guard: Vec<Spanned<RawGuard>>,
    judge: Option<Spanned<judge::RawJudge>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawObjective {
    minimize: Option<Spanned<String>>,
    maximize: Option<Spanned<String>>,
    loads: Option<Spanned<Vec<Spanned<String>>>>,
    load: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKnob {
    values: Option<Spanned<Vec<KnobValue>>>,
    min: Option<Spanned<i64>>,
    max: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGuard {
    load: Spanned<String>,
    metric: Spanned<String>,
    min_vs_default: Option<Spanned<f64>>,
    max_vs_default: Option<Spanned<f64>>,
}

mod benchmark;
mod judge;
pub(crate) use judge::Judges;

/// A load's name at `s`, or an error naming `field` at its line.
fn load_at(cx: &TomlFile, s: &Spanned<String>, field: &str) -> Result<Load> {
    s.get_ref()
        .parse::<Load>()
        .map_err(|m| cx.err(&s.span(), field, m))
}

/// Parses and validates a policy. `path` is used in errors (a built-in gives
/// `policies/<name>.toml`); `name` becomes [`Policy::name`].
///
/// Errors: [`Error::BadFile`] with the line and field of the first problem; a `name` with a
/// control character, [`Error::BadInput`].
pub fn parse(text: &str, path: &Path, name: &str, source: &str) -> Result<Policy> {
    use crate::types::text::{is_control, shown};
    // The name is stored with every sweet spot and written into exported files' comments.
    if name.chars().any(is_control) {
        return Err(Error::BadInput(format!(
            "policy {}: its name '{}' holds a control character; rename the file",
            shown(&path.display().to_string()),
            shown(name)
        )));
    }
    let cx = TomlFile::new(path, text);
    let raw: RawPolicy = cx.parse()?;

    let missing = |field: &str| cx.err_at(None, field, format!("missing field `{field}`"));
    let loads = policy_loads(&cx, &raw)?;

    let runs = positive(&cx, raw.runs.as_ref(), "runs", 1)?;
    let budget = positive(&cx, Some(&raw.budget), "budget", 0)?;
    let check_pairs = positive(&cx, raw.check_pairs.as_ref(), "check_pairs", 3)?;
    if let Some(c) = &raw.check_pairs
        && *c.get_ref() < 2
    {
        return Err(cx.err(&c.span(), "check_pairs", "must be at least 2"));
    }
    let alpha = match &raw.alpha {
        None => 0.05,
        Some(a) if *a.get_ref() > 0.0 && *a.get_ref() <= 0.5 => *a.get_ref(),
        Some(a) => return Err(cx.err(&a.span(), "alpha", "must be in (0, 0.5]")),
    };
    let min_effect = match &raw.min_effect {
        None => 0.03,
        Some(m) if (0.0..1.0).contains(m.get_ref()) => *m.get_ref(),
        Some(m) => return Err(cx.err(&m.span(), "min_effect", "must be in [0, 1)")),
    };
    if budget < 2 * check_pairs + 2 {
        return Err(cx.err(
            &raw.budget.span(),
            "budget",
            format!(
                "{budget} trials is too few: the final check alone needs 2 × check_pairs = {}, \
                 plus at least 2 for the search",
                2 * check_pairs
            ),
        ));
    }

    let objective = match (&raw.objective, &raw.benchmark) {
        (Some(o), None) => parse_objective(&cx, o, &loads)?,
        (None, Some(b)) => benchmark::parse(&cx, b, &loads)?,
        (Some(o), Some(_)) => {
            return Err(cx.err(
                &o.span(),
                "objective",
                "a policy with [benchmark] optimises the benchmark's figure: drop [objective]",
            ));
        }
        (None, None) => return Err(missing("objective")),
    };
    let knobs = policy_knobs(&cx, &raw.knobs)?;

    let guards = raw
        .guard
        .iter()
        .enumerate()
        .map(|(i, g)| parse_guard(&cx, i, g, &loads))
        .collect::<Result<Vec<Guard>>>()?;

    Ok(Policy {
        name: name.to_string(),
        source: source.to_string(),
        path: path.to_path_buf(),
        description: raw.description.unwrap_or_default(),
        loads,
        runs,
        budget,
        alpha,
        min_effect,
        check_pairs,
        judges: match &raw.judge {
            Some(j) if matches!(objective, Objective::Benchmark(_)) => {
                return Err(cx.err(
                    &j.span(),
                    "judge",
                    "a [benchmark] policy has no judges: its benchmark is the judge",
                ));
            }
            Some(j) => Some(judge::parse(&cx, j)?),
            None => None,
        },
        objective,
        knobs,
        guards,
    })
}

/// The policy's `loads` (a `[benchmark]` policy's are `no_load` alone), each once, no_load
/// first: every other load's Ratio divides by it. Errors (exit 2): missing, empty, an
/// unknown or repeated load, with its line.
fn policy_loads(cx: &TomlFile, raw: &RawPolicy) -> Result<Vec<Load>> {
    let raw_loads = match (&raw.loads, &raw.benchmark) {
        (Some(l), _) => l.clone(),
        // A user benchmark runs alone: its trial is `runs` runs of no_load.
        (None, Some(b)) => Spanned::new(
            b.span(),
            vec![Spanned::new(b.span(), "no_load".to_string())],
        ),
        (None, None) => return Err(cx.err_at(None, "loads", "missing field `loads`")),
    };
    let mut loads = Vec::new();
    for (i, l) in raw_loads.get_ref().iter().enumerate() {
        let load = load_at(cx, l, &format!("loads[{i}]"))?;
        if loads.contains(&load) {
            return Err(cx.err(&l.span(), format!("loads[{i}]"), "listed twice"));
        }
        loads.push(load);
    }
    if loads.is_empty() {
        return Err(cx.err(&raw_loads.span(), "loads", "no loads listed"));
    }
    // no_load first: every other load's Ratio divides by it.
    loads.sort_by_key(|l| *l != Load::NoLoad);
    Ok(loads)
}

/// The policy's `[knobs.*]` choices, each with the lines of its fields. Errors (exit 2): a
/// min above its max, an empty value list, no knob at all.
fn policy_knobs(
    cx: &TomlFile,
    raw_knobs: &BTreeMap<Spanned<String>, Spanned<RawKnob>>,
) -> Result<BTreeMap<String, KnobChoice>> {
    let mut knobs = BTreeMap::new();
    for (name, k) in raw_knobs {
        let field = format!("knobs.{}", name.get_ref());
        let k = k.get_ref();
        if let (Some(lo), Some(hi)) = (&k.min, &k.max)
            && lo.get_ref() > hi.get_ref()
        {
            return Err(cx.err(&lo.span(), format!("{field}.min"), "greater than max"));
        }
        if let Some(v) = &k.values
            && v.get_ref().is_empty()
        {
            return Err(cx.err(&v.span(), format!("{field}.values"), "empty list"));
        }
        knobs.insert(
            name.get_ref().clone(),
            KnobChoice {
                values: k.values.as_ref().map(|v| v.get_ref().clone()),
                min: k.min.as_ref().map(|v| *v.get_ref()),
                max: k.max.as_ref().map(|v| *v.get_ref()),
                line: Some(cx.line(&name.span())),
                field_lines: FieldLines {
                    values: k.values.as_ref().map(|v| cx.line(&v.span())),
                    min: k.min.as_ref().map(|v| cx.line(&v.span())),
                    max: k.max.as_ref().map(|v| cx.line(&v.span())),
                },
            },
        );
    }
    if knobs.is_empty() {
        return Err(cx.err_at(None, "knobs", "no knobs to tune"));
    }
    Ok(knobs)
}

/// Guard `i` of the policy: a load among its `loads`, a known metric (Ratio only on a load
/// that has one), and exactly one positive factor. Errors (exit 2): the field and its line.
fn parse_guard(cx: &TomlFile, i: usize, g: &Spanned<RawGuard>, loads: &[Load]) -> Result<Guard> {
    let field = format!("guard[{i}]");
    let gr = g.get_ref();
    let load = load_at(cx, &gr.load, &format!("{field}.load"))?;
    if !loads.contains(&load) {
        return Err(cx.err(
            &gr.load.span(),
            format!("{field}.load"),
            format!("'{load}' is not one of the policy's loads"),
        ));
    }
    let metric = Metric::NAMES
        .iter()
        .find(|(n, _)| *n == gr.metric.get_ref())
        .map(|(_, m)| *m)
        .ok_or_else(|| {
            cx.err(
                &gr.metric.span(),
                format!("{field}.metric"),
                format!(
                    "unknown metric '{}' (valid: time_s, cpu_pct, loads, lcpu_pct, ratio)",
                    gr.metric.get_ref()
                ),
            )
        })?;
    // Ratio is Time ÷ no_load's Time: a guard on it that could never be measured would
    // hold silently.
    if metric == Metric::Ratio && load == Load::NoLoad {
        let msg = "no_load has no Ratio (it is the divisor)";
        return Err(cx.err(&gr.metric.span(), format!("{field}.metric"), msg));
    }
    if metric == Metric::Ratio && !loads.contains(&Load::NoLoad) {
        let msg = "Ratio needs no_load among the policy's loads";
        return Err(cx.err(&gr.metric.span(), format!("{field}.metric"), msg));
    }
    let (at_least, factor) = match (&gr.min_vs_default, &gr.max_vs_default) {
        (Some(f), None) => (true, f),
        (None, Some(f)) => (false, f),
        _ => {
            return Err(cx.err(
                &g.span(),
                &field,
                "give exactly one of min_vs_default or max_vs_default",
            ));
        }
    };
    if !(*factor.get_ref() > 0.0 && factor.get_ref().is_finite()) {
        return Err(cx.err(&factor.span(), &field, "the factor must be positive"));
    }
    Ok(Guard {
        load,
        metric,
        at_least,
        factor: *factor.get_ref(),
    })
}

fn positive(cx: &TomlFile, v: Option<&Spanned<i64>>, field: &str, default: u32) -> Result<u32> {
    match v {
        None => Ok(default),
        Some(s) if *s.get_ref() >= 1 && *s.get_ref() <= 10_000 => Ok(*s.get_ref() as u32),
        Some(s) => Err(cx.err(&s.span(), field, "must be an integer in 1..=10000")),
    }
}

fn parse_objective(cx: &TomlFile, o: &Spanned<RawObjective>, loads: &[Load]) -> Result<Objective> {
    let r = o.get_ref();
    let in_policy = |l: Load, s: &Spanned<String>, field: &str| -> Result<Load> {
        if l == Load::NoLoad {
            return Err(cx.err(
                &s.span(),
                field,
                "no_load has no Ratio or Loads to optimise",
            ));
        }
        if !loads.contains(&l) {
            return Err(cx.err(
                &s.span(),
                field,
                format!("'{l}' is not one of the policy's loads"),
            ));
        }
        Ok(l)
    };
    match (&r.minimize, &r.maximize) {
        (Some(m), None) => {
            if m.get_ref() != "ratio" {
                return Err(cx.err(
                    &m.span(),
                    "objective.minimize",
                    "only \"ratio\" is supported",
                ));
            }
            if !loads.contains(&Load::NoLoad) {
                return Err(cx.err(
                    &m.span(),
                    "objective.minimize",
                    "Ratio needs no_load among the policy's loads",
                ));
            }
            let Some(ls) = &r.loads else {
                return Err(cx.err(&o.span(), "objective.loads", "missing: which loads' Ratio"));
            };
            let mut out = Vec::new();
            for (i, s) in ls.get_ref().iter().enumerate() {
                let field = format!("objective.loads[{i}]");
                out.push(in_policy(load_at(cx, s, &field)?, s, &field)?);
            }
            if out.is_empty() {
                return Err(cx.err(&ls.span(), "objective.loads", "empty list"));
            }
            Ok(Objective::MinRatio { loads: out })
        }
        (None, Some(m)) => {
            if m.get_ref() != "loads" {
                return Err(cx.err(
                    &m.span(),
                    "objective.maximize",
                    "only \"loads\" is supported",
                ));
            }
            let Some(s) = &r.load else {
                return Err(cx.err(&o.span(), "objective.load", "missing: whose Loads"));
            };
            let l = in_policy(load_at(cx, s, "objective.load")?, s, "objective.load")?;
            Ok(Objective::MaxLoads { load: l })
        }
        _ => Err(cx.err(
            &o.span(),
            "objective",
            "give exactly one of minimize = \"ratio\" or maximize = \"loads\"",
        )),
    }
}

/// Loads a policy file from disk, after checking who may have written it
/// ([`crate::trust`]): a policy's `[benchmark] command` runs as root, and its knobs choose
/// what root writes. `origin`: [`Origin::Named`] for a file the admin names on the command
/// line (`tune --policy FILE`), [`Origin::System`] for one read unattended or from a default
/// path (`<SYSTEM_DIR>/<name>.toml`, a policy the daemon's config names).
///
/// Errors: [`Error::BadInput`] (exit 2) when it cannot be read or its owner, mode or a
/// directory above it break `origin`'s rule (naming them and the fix); [`Error::BadFile`] for
/// its contents ([`parse`]).
pub fn load_file(path: &Path, origin: Origin) -> Result<Policy> {
    let text = trust::read_to_string(path, "policy", origin)?;
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "policy".into());
    parse(&text, path, &name, &path.display().to_string())
}

/// A built-in policy by name.
pub fn builtin(name: &str) -> Option<Result<Policy>> {
    BUILTIN.iter().find(|(n, _)| *n == name).map(|(n, text)| {
        let path = PathBuf::from(format!("policies/{n}.toml"));
        parse(text, &path, n, &format!("builtin:{n}"))
    })
}

/// Finds a policy: a path (contains `/` or ends in `.toml`), read under `path_origin`'s rule
/// ([`load_file`]: [`Origin::Named`] for `tune --policy FILE`, [`Origin::System`] for a path
/// in the daemon's config); else `<system_dir>/<name>.toml`, always under
/// [`Origin::System`] (a default path: it must be root's, and so must `system_dir`); else a
/// built-in (compiled in, nothing to check). Errors: exit 2 for an unknown name (listing the
/// known ones), a file refused by [`crate::trust`], or a bad file.
pub(crate) fn resolve(spec: &str, system_dir: &Path, path_origin: Origin) -> Result<Policy> {
    if spec.contains('/') || spec.ends_with(".toml") {
        return load_file(Path::new(spec), path_origin);
    }
    let candidate = system_dir.join(format!("{spec}.toml"));
    // `is_file` follows a symlink, as the open does: a planted one is judged by the file it
    // leads to and by the directories above that file.
    if candidate.is_file() {
        return load_file(&candidate, Origin::System);
    }
    if let Some(p) = builtin(spec) {
        return p;
    }
    let names: Vec<_> = BUILTIN.iter().map(|(n, _)| *n).collect();
    Err(Error::BadInput(format!(
        "unknown policy '{spec}' (built in: {}; or a file path, or {}/<name>.toml)",
        names.join(", "),
        system_dir.display()
    )))
}

#[cfg(test)]
mod tests;
