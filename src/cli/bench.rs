//! `sweetspot bench (--device D | --scratch | --sim FILE) [--loads L,L] [--runs N] [--seed N]
//! [--set KNOB=VALUE]... [--startup] [--json | --csv]`: measures one setting under contest's
//! loads and prints contest's table (or JSON / CSV). With `--startup` it times the start-up
//! judge ([`crate::bench::startup`]) instead of the reference job.
//!
//! Without `--set` it measures the target as it is (a simulation: the surface's defaults);
//! `--set` applies knobs first (journaled on a real device). The testbed is restored at the
//! end, also on error or Ctrl-C (exit 130 then; the runs done are in the store).

use super::output::{JsonArg, JsonHelp};
use super::target::{self, TargetArgs};
use super::{Ctx, print_out};
use crate::bench::trial::{measure_applied, progress_bar};
use crate::bench::{Load, SpaceKnob, Testbed};
use crate::knob::{KnobValue, Setting, catalogue, setting_label};
use crate::output::format::Format;
use crate::output::{BenchReport, Exporter, csv::Csv, json::Json, table::Table};
use crate::{Error, Result, signals};

/// Arguments of `sweetspot bench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: TargetArgs,

    /// Loads beside the job, comma-separated.
    ///
    /// contest loads to run beside the job, comma-separated (no_load is needed for Ratio):
    /// no_load, cacherun, process_load, ctar_load, xtar_load, io_load, io_other, read_load,
    /// list_load, mem_load, dbench_load; and light_io_load (S's capped writers,
    /// docs/judges.md).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "no_load,io_load",
        value_name = "L,L"
    )]
    pub loads: Vec<Load>,

    /// Runs of each load.
    ///
    /// Run-major: no_load io_load no_load io_load ...
    #[arg(long, default_value_t = 3, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,

    /// Set a knob first (repeatable): fifo_batch=8.
    ///
    /// The knob is set before measuring, e.g. --set fifo_batch=8.
    #[arg(long = "set", value_name = "KNOB=VALUE")]
    pub set: Vec<String>,

    /// Time the start-up judge instead of the job.
    ///
    /// Time a cold application start-up (the start-up judge, docs/judges.md) under each load
    /// instead of the reference job, e.g. --loads no_load,light_io_load,io_load. Its runs are
    /// not stored.
    #[arg(long, conflicts_with = "job")]
    pub startup: bool,

    #[command(flatten)]
    pub output: JsonArg<BenchHelp>,

    /// Print CSV, one row per run.
    #[arg(long)]
    pub csv: bool,
}

/// `bench --json`'s help.
#[derive(Clone, Copy, Debug, Default)]
pub struct BenchHelp;

impl JsonHelp for BenchHelp {
    const HELP: &'static str = "Print JSON (fields in docs/DESIGN.md)";
    const CONFLICTS: &'static [&'static str] = &["csv"];
}

/// Parses `--set` values against the testbed's space: the knob must exist and the value lie
/// in its domain (bad input, exit 2, before anything changes).
fn parse_set(set: &[String], space: &[SpaceKnob]) -> Result<Setting> {
    let mut out = Setting::new();
    for kv in set {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| Error::BadInput(format!("--set '{kv}': expected KNOB=VALUE")))?;
        let Some(knob) = space.iter().find(|s| s.name == k) else {
            let names: Vec<_> = space.iter().map(|s| s.name.as_str()).collect();
            return Err(Error::BadInput(format!(
                "--set: unknown knob '{k}' (this target has: {})",
                names.join(", ")
            )));
        };
        let value = v
            .parse::<i64>()
            .map(KnobValue::Int)
            .unwrap_or_else(|_| KnobValue::Name(v.to_string()));
        if !knob.domain.contains(&value) {
            return Err(Error::BadInput(format!(
                "--set: {k}: value '{v}' is not accepted (domain {})",
                knob.domain
            )));
        }
        out.insert(k.to_string(), value);
    }
    Ok(out)
}

/// Refuses a knob given twice in `--set` (as `set` does: the last would silently win), before
/// anything is built or locked. Errors: bad input (exit 2), naming the knob.
fn no_knob_twice(set: &[String]) -> Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    for kv in set {
        let k = kv.split_once('=').map_or(kv.as_str(), |(k, _)| k);
        if !seen.insert(k) {
            return Err(Error::BadInput(format!("--set: knob '{k}' given twice")));
        }
    }
    Ok(())
}

/// Checks `--set` against the knob catalogue before anything is built (a `--scratch` loop
/// device and its filesystem, a work directory): the shape `KNOB=VALUE`, a knob name some
/// kernel has ([`catalogue::is_known`]), and for an integer knob of the catalogue a value in
/// the safe bounds of at least one of its entries. What depends on the device (its
/// schedulers, the active scheduler's files, a bound the device narrows) is checked once it
/// exists ([`parse_set`]). Errors: bad input (exit 2), naming the knob and value.
fn precheck_set(set: &[String]) -> Result<()> {
    for kv in set {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| Error::BadInput(format!("--set '{kv}': expected KNOB=VALUE")))?;
        if !catalogue::is_known(k) {
            let hint = catalogue::did_you_mean(k, catalogue::known_names());
            return Err(Error::BadInput(format!("--set: unknown knob '{k}'{hint}")));
        }
        let ranges: Vec<(i64, i64)> = catalogue::FACTS
            .iter()
            .filter(|f| f.name == k)
            .map(|f| (f.min, f.max))
            .collect();
        if ranges.is_empty() {
            continue; // `scheduler` or a feature flag: the device says what it offers
        }
        let ok = v
            .parse::<i64>()
            .is_ok_and(|n| ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&n)));
        if !ok {
            let lo = ranges.iter().map(|r| r.0).min().unwrap_or_default();
            let hi = ranges.iter().map(|r| r.1).max().unwrap_or_default();
            return Err(Error::BadInput(format!(
                "--set: {k}: value '{v}' is not accepted (domain {})",
                catalogue::domain_text(lo, hi)
            )));
        }
    }
    Ok(())
}

/// Runs `sweetspot bench`.
pub(crate) fn run(ctx: &Ctx, args: &Args) -> Result<()> {
    signals::install();
    let mut loads: Vec<Load> = Vec::new();
    for &l in &args.loads {
        if !loads.contains(&l) {
            loads.push(l);
        }
    }
    no_knob_twice(&args.set)?;
    // A simulation's knobs are its surface's; a real device's are the catalogue's.
    if args.target.sim.is_none() {
        precheck_set(&args.set)?;
    }
    // io_other without --other-dir, dbench_load without dbench: refused before a scratch
    // device is made or anything measured.
    target::check_loads(&args.target, &loads)?;
    // A killed tune's or bench's knobs are put back first, as `tune` does: its scratch leftover
    // is then no longer journaled, so the scratch sweep below removes it. After the cheap
    // checks of bad input (exit 2 changes nothing) and before this run's own lock (the
    // device's, which recovery must take). A simulation writes no knob and needs none of it.
    if args.target.sim.is_none() {
        target::emulation(&args.target)?;
        if let Some(name) = &args.target.device {
            crate::device::find(&ctx.root, name)?;
        }
        crate::undo::recover(&mut ctx.store()?, &ctx.root)?;
    }
    // One writer per device: `--device D` is locked before anything is built. A scratch loop
    // device is locked by the testbed as soon as it exists; a simulation writes nothing.
    let _lock = match &args.target.device {
        Some(_) => Some(target::lock_real(ctx, &args.target, "bench")?),
        None => None,
    };
    let set_names = args
        .set
        .iter()
        .map(|kv| kv.split_once('=').map_or(kv.as_str(), |(k, _)| k));
    let _host = match args.target.sim {
        None => target::lock_host(ctx, set_names, "bench")?,
        Some(_) => None,
    };
    let seed = target::seed(&args.target);
    let mut tb = target::open(ctx, &args.target, seed, "bench")?;
    if args.startup
        && let Some(why) = tb.lacks_startup()
    {
        return Err(Error::BadInput(format!("--startup: {why}")));
    }
    // A bench on a real device draws nothing: only a simulation's noise has a seed to repeat.
    if args.target.sim.is_some() {
        target::announce_seed(ctx, &args.target, seed);
    }
    let result = measure(ctx, args, &loads, tb.as_mut());
    let restored = tb.restore();
    let report = match (result, restored) {
        (Ok(r), Ok(())) => r,
        (Ok(_), Err(e)) => return Err(e),
        (Err(e), Err(r)) => {
            tracing::error!("restoring after the error failed: {r}");
            return Err(e);
        }
        (Err(e), Ok(())) => return Err(e),
    };
    let exporter: &dyn Exporter = match (args.output.format(), args.csv) {
        (Format::Json, _) => &Json,
        (Format::Text, true) => &Csv,
        (Format::Text, false) => &Table,
    };
    let text = exporter.render(&report)?;
    if args.output.json || args.csv {
        for w in &report.trial.warnings {
            tracing::warn!("{w}");
        }
    }
    print_out(&text)
}

fn measure(ctx: &Ctx, args: &Args, loads: &[Load], tb: &mut dyn Testbed) -> Result<BenchReport> {
    let space = tb.space();
    let overrides = parse_set(&args.set, &space)?;
    let store = ctx.store()?;
    let mut full: Setting = space
        .iter()
        .map(|k| (k.name.clone(), k.default.clone()))
        .collect();
    full.extend(overrides.clone());
    if !overrides.is_empty() {
        tb.apply(&overrides)?;
    }
    let bar = progress_bar(u64::from(args.runs) * loads.len() as u64, ctx.quiet);
    let result = if args.startup {
        measure_startup(tb, &full, loads, args.runs, &bar)
    } else {
        measure_applied(tb, &store, &full, loads, args.runs, None, &bar).map(|r| r.summary)
    };
    bar.finish_and_clear();
    let mut trial = result?;
    // A long list of current values is no label for a table's first column.
    if full.len() > 3 {
        trial.label = if overrides.is_empty() {
            "current".into()
        } else {
            setting_label(&overrides)
        };
    }
    let mut sizes = tb.sizes();
    if args.startup {
        sizes = startup_sizes(sizes);
    }
    Ok(BenchReport {
        target: tb.target(),
        sizes,
        trial,
    })
}

/// The start-up judge under `loads`, `runs` times run-major, at the setting in force
/// (`setting` names it). Its runs are not stored: the store's trials are the reference job's.
/// Errors: the testbed's, or [`Error::Interrupted`] between runs.
fn measure_startup(
    tb: &mut dyn Testbed,
    setting: &Setting,
    loads: &[Load],
    runs: u32,
    bar: &indicatif::ProgressBar,
) -> Result<crate::bench::summary::TrialSummary> {
    let mut done = Vec::with_capacity(loads.len() * runs as usize);
    for i in 0..runs {
        for &load in loads {
            if signals::interrupted() {
                return Err(Error::Interrupted);
            }
            bar.set_message(format!("start-up run {}/{runs}: {load}", i + 1));
            let run = tb.run_startup(load)?;
            if let Some(why) = &run.failed {
                tracing::warn!("{load} run failed: {why}");
            }
            done.push(run);
            bar.inc(1);
        }
    }
    Ok(crate::bench::summary::summarize_trial(setting, &done))
}

/// The sizes of a start-up bench: the testbed's, with `judge = "startup"` and the tree's
/// shape ([`crate::bench::startup`]'s constants).
fn startup_sizes(mut sizes: serde_json::Value) -> serde_json::Value {
    use crate::bench::startup as s;
    let tree = serde_json::json!({
        "judge": "startup",
        "startup_small_files": s::SMALL_FILES,
        "startup_small_reads": s::SMALL_READS,
        "startup_stat_only": s::STAT_ONLY,
        "startup_libs_kib": s::LIBS_KIB,
        "startup_lib_pages": s::LIB_PAGES,
    });
    match (sizes.as_object_mut(), tree) {
        (Some(m), serde_json::Value::Object(t)) => {
            m.extend(t);
            sizes
        }
        (_, tree) => tree,
    }
}
