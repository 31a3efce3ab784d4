//! A policy's `[benchmark]`: the user's own benchmark as the objective ([`UserJob`]).
//!
//! ```toml
//! [benchmark]
//! command = "ab -q -n 5000 -c 20 http://127.0.0.1:8089/"  # sh -c, in the target's directory
//! regex = 'Requests per second:\s+([0-9.]+)'  # one capture group; or json_pointer = "/jobs/0/read/iops"
//! maximize = "Requests per second"            # the figure's name; or minimize = "..."
//! unit = "req/s"
//! nice = -5                                   # optional, -20..19
//! cpus = [1]                                  # optional: CPU affinity of the command
//! timeout_s = 300                             # optional, s, in (0, 86400]; default 600
//! ```
//!
//! `loads` may then be left out (it is `["no_load"]`: the command runs alone) and
//! `[objective]` must be.

use super::Objective;
use crate::bench::Load;
use crate::bench::user_job::{DEFAULT_TIMEOUT_S, Extract, MAX_TIMEOUT_S, UserJob};
use crate::tomlfile::TomlFile;
use crate::{Error, Result};
use serde::Deserialize;
use toml::Spanned;

#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBenchmark {
    command: Spanned<String>,
    regex: Option<Spanned<String>>,
    json_pointer: Option<Spanned<String>>,
    maximize: Option<Spanned<String>>,
    minimize: Option<Spanned<String>>,
    unit: Option<String>,
    nice: Option<Spanned<i64>>,
    cpus: Option<Spanned<Vec<usize>>>,
    timeout_s: Option<Spanned<f64>>,
}

/// The objective of a `[benchmark]` table. Errors name its line and field.
pub(super) fn parse(cx: &TomlFile, b: &Spanned<RawBenchmark>, loads: &[Load]) -> Result<Objective> {
    let r = b.get_ref();
    if loads != [Load::NoLoad] {
        return Err(cx.err(
            &b.span(),
            "loads",
            "a [benchmark] runs alone: leave `loads` out (or give [\"no_load\"])",
        ));
    }
    let extract = extract(cx, b)?;
    let (name, maximize) = figure(cx, b)?;
    let mut job = UserJob::new(
        r.command.get_ref(),
        extract,
        name.get_ref(),
        r.unit.as_deref().unwrap_or(""),
        maximize,
    )
    .map_err(|e| {
        let (span, field) = match (&r.regex, &r.json_pointer) {
            (Some(re), _) => (re.span(), "regex"),
            (_, Some(p)) => (p.span(), "json_pointer"),
            _ => (r.command.span(), "command"),
        };
        let span = if r.command.get_ref().trim().is_empty() {
            r.command.span()
        } else {
            span
        };
        field_err(cx, &span, field, e)
    })?;
    if let Some(n) = &r.nice {
        job.nice = Some(i32::try_from(*n.get_ref()).unwrap_or(i32::MAX));
    }
    job.cpus = r.cpus.as_ref().map(|c| c.get_ref().clone());
    job.timeout_s = r
        .timeout_s
        .as_ref()
        .map_or(DEFAULT_TIMEOUT_S, |t| *t.get_ref());
    job.check().map_err(|e| {
        let (span, field) = refused_field(b);
        field_err(cx, &span, field, e)
    })?;
    Ok(Objective::Benchmark(job))
}

/// How the figure is read from the benchmark's output: its `regex` or its `json_pointer`
/// (exactly one).
fn extract(cx: &TomlFile, b: &Spanned<RawBenchmark>) -> Result<Extract> {
    let r = b.get_ref();
    match (&r.regex, &r.json_pointer) {
        (Some(re), None) => Ok(Extract::Regex(re.get_ref().clone())),
        (None, Some(p)) => Ok(Extract::JsonPointer(p.get_ref().clone())),
        _ => Err(cx.err(
            &b.span(),
            "benchmark",
            "give exactly one of regex (one capture group) or json_pointer",
        )),
    }
}

/// The figure's name, and true when it is to be maximized (`maximize`, else `minimize`:
/// exactly one); the name and the unit must hold no control character.
fn figure<'a>(cx: &TomlFile, b: &'a Spanned<RawBenchmark>) -> Result<(&'a Spanned<String>, bool)> {
    let r = b.get_ref();
    let (name, maximize) = match (&r.maximize, &r.minimize) {
        (Some(n), None) => (n, true),
        (None, Some(n)) => (n, false),
        _ => {
            return Err(cx.err(
                &b.span(),
                "benchmark",
                "give exactly one of maximize = \"<figure>\" or minimize = \"<figure>\"",
            ));
        }
    };
    // The figure's name and unit label the objective in reports and exported files.
    let which = if maximize { "maximize" } else { "minimize" };
    for (span, field, v) in [
        (name.span(), which, name.get_ref().as_str()),
        (b.span(), "unit", r.unit.as_deref().unwrap_or("")),
    ] {
        if v.chars().any(crate::types::text::is_control) {
            return Err(cx.err(
                &span,
                format!("benchmark.{field}"),
                format!(
                    "'{}' holds a control character",
                    crate::types::text::shown(v)
                ),
            ));
        }
    }
    Ok((name, maximize))
}

/// The error `e` about the `benchmark.<field>` at `span`, its message as [`UserJob`] gave it.
fn field_err(cx: &TomlFile, span: &std::ops::Range<usize>, field: &str, e: Error) -> Error {
    let msg = match e {
        Error::BadInput(m) => m,
        e => e.to_string(),
    };
    cx.err(span, format!("benchmark.{field}"), msg)
}

/// The span and name of the field [`UserJob::check`] refused: `nice` or `timeout_s` when out
/// of range, else `cpus` when given, else the whole table.
fn refused_field(b: &Spanned<RawBenchmark>) -> (std::ops::Range<usize>, &'static str) {
    let r = b.get_ref();
    if let Some(n) = r
        .nice
        .as_ref()
        .filter(|n| !(-20..=19).contains(n.get_ref()))
    {
        (n.span(), "nice")
    } else if let Some(t) = r
        .timeout_s
        .as_ref()
        .filter(|t| !(*t.get_ref() > 0.0 && *t.get_ref() <= MAX_TIMEOUT_S))
    {
        (t.span(), "timeout_s")
    } else if let Some(c) = &r.cpus {
        (c.span(), "cpus")
    } else {
        (b.span(), "benchmark")
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse as parse_policy;
    use super::*;
    use std::path::Path;

    fn parse(text: &str) -> Result<crate::tune::policy::Policy> {
        parse_policy(text, Path::new("p.toml"), "p", "p.toml")
    }

    const HEAD: &str = "budget = 8\ncheck_pairs = 2\n[knobs.sched_autogroup_enabled]\n";

    #[test]
    fn a_benchmark_policy_runs_no_load_alone_and_optimises_the_figure() {
        let p = parse(&format!(
            "{HEAD}[benchmark]\ncommand = \"ab -n 100 http://127.0.0.1:1/\"\n\
             regex = 'Requests per second:\\s+([0-9.]+)'\nmaximize = \"Requests per second\"\n\
             unit = \"req/s\"\nnice = -5\ncpus = [0]\n"
        ))
        .unwrap();
        assert_eq!(p.loads, vec![Load::NoLoad]);
        let Objective::Benchmark(job) = &p.objective else {
            panic!("{:?}", p.objective)
        };
        assert_eq!(job.nice, Some(-5));
        assert_eq!(job.cpus, Some(vec![0]));
        assert_eq!(p.objective.label(), "Requests per second (req/s)");
        assert!(!p.objective.minimize());
    }

    #[test]
    fn bad_benchmark_tables_name_their_line_and_field() {
        let err = |body: &str| {
            parse(&format!("{HEAD}[benchmark]\n{body}"))
                .unwrap_err()
                .to_string()
        };
        let e = err("command = \"x\"\nregex = 'no group'\nmaximize = \"x\"\n");
        assert!(e.contains("p.toml:6: benchmark.regex:"), "{e}");
        assert!(e.contains("exactly one capture group"), "{e}");
        let e = err("command = \"x\"\nmaximize = \"x\"\n");
        assert!(e.contains("exactly one of regex"), "{e}");
        // The figure's name reaches exported files' comments: no line break in it.
        let e = err("command = \"x\"\njson_pointer = \"/a\"\n\
             minimize = \"latency\\nkernel.core_pattern = |/tmp/evil\"\n");
        assert!(
            e.contains("p.toml:7: benchmark.minimize: 'latency\\nkernel.core_pattern")
                && e.contains("control character")
                && !e.contains('\n'),
            "{e}"
        );
        let e = err(
            "command = \"x\"\njson_pointer = \"/a\"\nminimize = \"t\"\nunit = \"s\\u001b[2J\"\n",
        );
        assert!(e.contains("benchmark.unit: 's\\u{1b}[2J'"), "{e}");
        let e = err("command = \"x\"\njson_pointer = \"jobs/0\"\nminimize = \"x\"\n");
        assert!(
            e.contains("benchmark.json_pointer: benchmark json_pointer 'jobs/0': must start"),
            "{e}"
        );
        let e = err("command = \"x\"\njson_pointer = \"/a\"\nminimize = \"x\"\nnice = 40\n");
        assert!(e.contains("p.toml:8: benchmark.nice:"), "{e}");
        let e = err("command = \"x\"\njson_pointer = \"/a\"\nminimize = \"x\"\ncpus = [4096]\n");
        assert!(e.contains("benchmark.cpus:") && e.contains("'4096'"), "{e}");
        let e = parse(&format!(
            "{HEAD}loads = [\"no_load\", \"io_load\"]\n[benchmark]\ncommand = \"x\"\n\
             json_pointer = \"/a\"\nminimize = \"x\"\n"
        ));
        // `loads` after a table header belongs to the table: an unknown field there.
        assert!(e.is_err());
        let e = parse(
            "loads = [\"no_load\", \"io_load\"]\nbudget = 8\ncheck_pairs = 2\n\
             [knobs.swappiness]\n[benchmark]\ncommand = \"x\"\njson_pointer = \"/a\"\n\
             minimize = \"x\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("loads: a [benchmark] runs alone"), "{e}");
    }

    /// `timeout_s = 1e300` panicked in `Duration::from_secs_f64` once the tune ran, leaving it
    /// `running`: (0, 86400] s is accepted, anything else refused with its line and field.
    #[test]
    fn timeout_s_is_at_most_a_day() {
        let with = |t: &str| {
            parse(&format!(
                "{HEAD}[benchmark]\ncommand = \"x\"\njson_pointer = \"/a\"\nminimize = \"x\"\n\
                 timeout_s = {t}\n"
            ))
        };
        for ok in ["86400", "86400.0", "0.001"] {
            let p = with(ok).unwrap();
            let Objective::Benchmark(job) = &p.objective else {
                panic!("{:?}", p.objective)
            };
            assert_eq!(job.timeout_s, ok.parse::<f64>().unwrap());
        }
        for bad in ["86400.001", "1e300", "0", "-1", "inf", "nan"] {
            let e = with(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(
                e.to_string().starts_with(&format!(
                    "p.toml:8: benchmark.timeout_s: benchmark timeout_s '{}': must be in (0, \
                     86400] s (at most a day)",
                    bad.parse::<f64>().unwrap()
                )),
                "{bad}: {e}"
            );
        }
    }
}
