//! `sweetspot tune (--device D | --scratch | --sim FILE | --host) [--policy NAME|FILE]
//! [--budget N] [--seed N] [--resume] [--confirm [FROM]] [--apply] [--json]
//! [--job CMD --metric regex:RE|json:/PTR (--maximize NAME | --minimize NAME) [--unit U]
//! [--nice N] [--cpus LIST]]`: find the sweet
//! spot for a policy and store it.
//!
//! The objective is contest's (the policy's loads and `[objective]`) or the user's own
//! benchmark: a policy's `[benchmark]`, or `--job CMD --metric ...` (which replaces the
//! policy's objective and loads; its knobs, budget and statistics stay). `--host` tunes only
//! host-wide knobs (vm, CPU scheduler) with no device at all; it needs a benchmark.

use super::Ctx;
use super::output::{JsonArg, JsonHelp, emit};
use super::target::{self, TargetArgs};
use crate::Result;
use crate::bench::user_job::{Extract, UserJob};
use crate::bench::{Load, Testbed};
use crate::output::format::Table;
use crate::trust::Origin;
use crate::tune::policy::{self, Objective, Policy};
use crate::tune::report;
use crate::tune::resume::{Found, Resume};
use crate::tune::run::{self, Ended, Request};
use crate::tune::stopped::Stopped;
use std::path::Path;

/// `tune --json`'s long help: what the object holds, also when the tune is stopped.
const JSON_LONG_HELP: &str = "Print the report as JSON.\n\n\
    Print JSON: the report as one object (`target`, `policy`, `default`, `best`, \
    `objective`, `significant`, `evaluations`, `runs`, ...). Stopped by Ctrl-C or SIGTERM \
    once the tune has started (exit 130), also with -q, one object all the same: \
    `\"interrupted\": true`, `tune_id` (`history`'s #N), `target`, `policy`, `seed`, \
    `budget`, `default` and `candidate` (knob → value; `candidate` is the search's best \
    setting so far, not checked against the default, null before a trial finished), \
    `objective` (`name`, and the geometric means so far at `default` and `candidate`, null \
    if not measured), `evaluations` (settings measured), `trials` (finished trials, as \
    stored: what --resume replays), `runs` (load runs made, no_load included), `resumed` \
    when it had resumed a tune, and `resume`: the command that resumes it (this one plus \
    --resume, run from the same directory and environment), null when no trial finished. A \
    tune that stderr's reader stopped by going away (exit 0, as for `| head`) prints the \
    object on stdout too; a reader gone only after the signal leaves the exit at 130.";

/// `tune --json`'s help.
#[derive(Clone, Copy, Debug, Default)]
pub struct TuneHelp;

impl JsonHelp for TuneHelp {
    const HELP: &'static str = "Print the report as JSON";
    const LONG_HELP: Option<&'static str> = Some(JSON_LONG_HELP);
}

/// Arguments of `sweetspot tune`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: TargetArgs,

    /// A policy name or TOML file.
    ///
    /// Policy: a built-in name (quick, desktop, throughput, slowdisk), a name in
    /// /etc/sweetspot/policies/, or a TOML file (format: docs/policy.md). As root, a file in
    /// /etc/sweetspot/policies/ must be root's, and a FILE may be yours but writable by no
    /// one else; neither, nor a directory above it, writable by another group or everyone.
    #[arg(long, value_name = "NAME|FILE", default_value = "quick")]
    pub policy: String,

    /// Full trials at most, 1–10000 (default: the policy's).
    ///
    /// The run budget, in full trials (search and final check together): a full trial runs
    /// no_load and each loaded load once, so 12 with io_load is 24 load runs. The screen also
    /// makes trials of the loaded runs only, so a tune may list more trials than this.
    /// Overrides the policy's budget; 1–10000, as a policy's.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub budget: Option<u32>,

    /// Go on with this device's interrupted tune.
    ///
    /// The newest tune of this device, kernel release and policy goes on if it was
    /// interrupted (Ctrl-C, SIGTERM, a kill) with the same budget: its finished trials are
    /// replayed from the database, not run again, and the tune continues with its seed.
    /// Without such a tune a fresh one starts, and stderr says so. A --seed given too must be
    /// the seed of the tune it resumes (so the command that was stopped, plus --resume,
    /// resumes it); a stopped tune it does not resume leaves --seed to the fresh tune.
    #[arg(long)]
    pub resume: bool,

    /// Check a known sweet spot before searching.
    ///
    /// Before any search, the known sweet spot goes against the default on fresh
    /// interleaved pairs with the final check's test: at least 3 pairs, and more, up to half the
    /// budget, when its stored improvement is small. If it holds, the tune ends there and
    /// stores it with this device's evidence; if not, the search runs with those trials in
    /// hand and the policy's whole budget on top. The two tests share the policy's alpha (the
    /// confirm a fifth of it), so the tune's false "significant" rate stays at alpha. FROM: nothing, this device's stored sweet
    /// spot for the policy, else one of another disk of its model; a PROFILE file,
    /// sweetspot's TOML profile (its entry for this disk, as `profile apply` picks it; as
    /// root it must be root's); or an IDENTITY, a device with a stored sweet spot for the
    /// policy (see `sweetspot history`). The setting must be one of the policy's grid on this device.
    #[arg(
        long,
        value_name = "FROM",
        num_args = 0..=1,
        default_missing_value = "",
        require_equals = false
    )]
    pub confirm: Option<String>,

    /// Keep a significant sweet spot applied.
    ///
    /// Leave a significant sweet spot applied (journaled; `restore` undoes it). Only with
    /// --device: a --sim or --scratch device does not outlive the tune.
    #[arg(long)]
    pub apply: bool,

    #[command(flatten)]
    pub output: JsonArg<TuneHelp>,

    /// Tune --job's figure: regex:RE or json:/PTR.
    ///
    /// Tune --job's own figure instead of contest's: `regex:RE` (the first match's one
    /// capture group, e.g. `regex:Requests per second:\s+([0-9.]+)`) or `json:/POINTER` into
    /// JSON output (e.g. `json:/jobs/0/read/iops` for fio).
    #[arg(long, value_name = "SPEC", requires = "job")]
    pub metric: Option<String>,

    /// With --metric: larger is better; its name.
    ///
    /// With --metric: a larger figure is better; NAME names it (e.g. "Requests per second").
    #[arg(
        long,
        value_name = "NAME",
        requires = "metric",
        conflicts_with = "minimize"
    )]
    pub maximize: Option<String>,

    /// With --metric: smaller is better; its name.
    ///
    /// With --metric: a smaller figure is better; NAME names it (e.g. "latency").
    #[arg(long, value_name = "NAME", requires = "metric")]
    pub minimize: Option<String>,

    /// With --metric: its unit (e.g. req/s, ms).
    ///
    /// With --metric: the figure's unit (e.g. req/s, IOPS, ms).
    #[arg(long, value_name = "UNIT", requires = "metric")]
    pub unit: Option<String>,

    /// With --metric: nice level, -20..19.
    ///
    /// With --metric: the benchmark's nice level (-20..19).
    #[arg(
        long,
        value_name = "N",
        requires = "metric",
        allow_hyphen_values = true
    )]
    pub nice: Option<i32>,

    /// With --metric: its CPUs, e.g. 0,2-3.
    ///
    /// With --metric: the CPUs the benchmark may run on, e.g. `1` or `0,2-3`
    /// (sched_setaffinity).
    #[arg(long, value_name = "LIST", requires = "metric")]
    pub cpus: Option<String>,
}

/// `--resume`: the interrupted tune to go on with ([`Resume::find_or_why`]), said on stderr
/// either way (which tune and how much of it is reused, or why none is); a `--seed` other
/// than its seed is refused first ([`check_resume_seed`]).
fn find_resume(
    ctx: &Ctx,
    store: &crate::store::Store,
    testbed: &dyn Testbed,
    policy: &str,
    budget: u32,
    seed: Option<u64>,
) -> Result<Option<Resume>> {
    let t = testbed.target();
    let r = Resume::find_or_why(store, &t, policy, budget, &testbed.sizes())?;
    check_resume_seed(seed, r.as_resume())?;
    if !ctx.quiet {
        crate::signals::eprint_line(&match &r {
            Found::Resume(r) => format!(
                "resuming tune #{} of {} (seed {}): its {} finished trial{} reused",
                r.from_tune,
                t.label,
                r.seed,
                r.trials(),
                if r.trials() == 1 { " is" } else { "s are" }
            ),
            Found::Fresh(why) => format!(
                "nothing to resume for {} (policy {policy}, budget {budget}, kernel {}): {why}",
                t.label, t.kernel
            ),
        });
    }
    Ok(r.resume())
}

/// The benchmark `--job --metric ...` names, if any. Errors: bad input naming the flag.
fn cli_benchmark(args: &Args) -> Result<Option<UserJob>> {
    let Some(metric) = &args.metric else {
        return Ok(None);
    };
    // clap's `requires = "job"` does not hold beside --sim (which conflicts with --job).
    let Some(command) = args.target.job.clone() else {
        return Err(crate::Error::BadInput(
            "--metric needs --job CMD: the benchmark whose figure it reads (not with --sim)".into(),
        ));
    };
    let extract = if let Some(re) = metric.strip_prefix("regex:") {
        Extract::Regex(re.to_string())
    } else if let Some(p) = metric.strip_prefix("json:") {
        Extract::JsonPointer(p.to_string())
    } else {
        return Err(crate::Error::BadInput(format!(
            "--metric '{metric}': give regex:RE or json:/POINTER"
        )));
    };
    let (name, maximize) = match (&args.maximize, &args.minimize) {
        (Some(n), None) => (n.as_str(), true),
        (None, Some(n)) => (n.as_str(), false),
        _ => {
            return Err(crate::Error::BadInput(
                "--metric needs --maximize NAME or --minimize NAME".into(),
            ));
        }
    };
    let unit = args.unit.as_deref().unwrap_or("");
    let mut job = UserJob::new(&command, extract, name, unit, maximize)?;
    job.nice = args.nice;
    job.cpus = args.cpus.as_deref().map(parse_cpus).transpose()?;
    job.check()?;
    Ok(Some(job))
}

/// `0,2-3` → [0, 2, 3]. Errors: bad input naming the list.
fn parse_cpus(list: &str) -> Result<Vec<usize>> {
    let bad = || crate::Error::BadInput(format!("--cpus '{list}': expected e.g. 1 or 0,2-3"));
    let mut out = Vec::new();
    for part in list.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (
                    a.trim().parse().map_err(|_| bad())?,
                    b.trim().parse().map_err(|_| bad())?,
                );
                if a > b {
                    return Err(bad());
                }
                out.extend(a..=b);
            }
            None => out.push(part.trim().parse().map_err(|_| bad())?),
        }
    }
    Ok(out)
}

/// Refuses `--apply` with `--sim` or `--scratch`, before anything is opened or created.
/// (Not clap's `conflicts_with`: its message gives no reason.)
fn check_apply(args: &Args) -> Result<()> {
    if args.apply && (args.target.sim.is_some() || args.target.scratch) {
        return Err(crate::Error::BadInput(
            "--apply needs --device: a --sim/--scratch device does not outlive the tune".into(),
        ));
    }
    Ok(())
}

/// `--seed` with `--resume`: it must be the interrupted tune's seed, which the resumed tune
/// runs under. Without a tune to resume the seed is the fresh tune's.
fn check_resume_seed(seed: Option<u64>, resume: Option<&Resume>) -> Result<()> {
    match (seed, resume) {
        (Some(s), Some(r)) => same_seed(s, r.from_tune, r.seed),
        _ => Ok(()),
    }
}

/// `--seed given` with `--resume` of tune `tune`, which ran with seed `ran`: an error unless
/// they are the same.
fn same_seed(given: u64, tune: i64, ran: u64) -> Result<()> {
    if given == ran {
        return Ok(());
    }
    Err(crate::Error::BadInput(format!(
        "--seed {given} with --resume: tune #{tune} to resume ran with seed {ran}; drop --seed \
         to resume it, or drop --resume for a fresh tune"
    )))
}

/// The policy `args` name, its objective replaced by `--job`'s benchmark when given, and that
/// benchmark. Errors (exit 2, before anything is looked up, locked or built): the policy's;
/// a benchmark under --sim, loads this target cannot run, a bad --emulate, a knob the
/// catalogue does not know, `--host` without a benchmark.
fn policy_of(args: &Args) -> Result<(Policy, Option<UserJob>)> {
    // `--policy FILE` is named by the admin (Named: their own file, written by no one else);
    // `--policy NAME` in the policies directory is a default path (System: root's).
    let mut pol = policy::resolve(&args.policy, Path::new(policy::SYSTEM_DIR), Origin::Named)?;
    if let Some(job) = cli_benchmark(args)? {
        // The benchmark replaces contest: it runs alone; guards on other loads go with them.
        pol.objective = Objective::Benchmark(job);
        pol.loads = vec![Load::NoLoad];
        pol.guards.retain(|g| g.load == Load::NoLoad);
    }
    let benchmark = match &pol.objective {
        Objective::Benchmark(job) => Some(job.clone()),
        _ => None,
    };
    // Bad input before anything is looked up, locked or built: a benchmark under --sim (its
    // own message, not "give --device ..."), loads this target cannot run, a bad --emulate.
    if benchmark.is_some() {
        target::no_sim_benchmark(&args.target)?;
    }
    target::check_loads(&args.target, &pol.loads)?;
    target::emulation(&args.target)?;
    // A real target's knobs are catalogue knobs: a policy's typo is refused here, before a
    // scratch device is built and formatted (a simulated surface names its own knobs).
    if args.target.sim.is_none() {
        crate::tune::space::check_without_device(&pol)?;
    }
    if args.target.host && benchmark.is_none() {
        return Err(crate::Error::BadInput(format!(
            "--host tunes host-wide knobs against a user benchmark, and policy '{}' has none: \
             give it a [benchmark], or --job CMD --metric ...",
            pol.name
        )));
    }
    Ok((pol, benchmark))
}

/// The simulation `--sim` names, read once, and the seed the tune runs under. Its noise
/// comes from the seed, and its load sizes name it: a resumed one runs under the interrupted
/// tune's seed, so that is looked up first and the simulation re-seeded. Errors: the
/// surface's; `--seed` other than the seed of the tune `--resume` would resume (exit 2).
fn simulation(
    store: &crate::store::Store,
    args: &Args,
    pol: &Policy,
) -> Result<(Option<crate::bench::SimDevice>, u64)> {
    let mut seed = target::seed(&args.target);
    let mut sim = match &args.target.sim {
        Some(path) => Some(crate::bench::SimDevice::open(path, seed)?),
        None => None,
    };
    if args.resume
        && let Some(dev) = &sim
    {
        let t = dev.target();
        if let Some((row, s, _)) = store.resumable_tune(&t.identity, &t.kernel, &pol.name)? {
            let reseeded = crate::bench::SimDevice::new(dev.surface().clone(), s);
            match args.target.seed {
                // Refused here, not after: a simulation opened under another seed would not
                // match the stopped tune at all. But only when that tune would be resumed:
                // one that another reason (budget, sizes) excludes leaves --seed to the fresh
                // tune, and `find_resume` says why it is not resumed.
                Some(given) if given != s => {
                    let budget = args.budget.unwrap_or(pol.budget);
                    let sizes = reseeded.sizes();
                    let found = Resume::find_or_why(store, &t, &pol.name, budget, &sizes)?;
                    if found.as_resume().is_some() {
                        same_seed(given, row.id, s)?;
                    }
                }
                _ => {
                    seed = s;
                    sim = Some(reseeded);
                }
            }
        }
    }
    Ok((sim, seed))
}

/// The known sweet spot `--confirm` names ([`crate::tune::known::resolve`]); `None` without
/// `--confirm`. The tune says it on stderr once it is found on the policy's grid.
fn known_of(
    ctx: &Ctx,
    store: &crate::store::Store,
    args: &Args,
    testbed: &dyn Testbed,
    policy: &str,
) -> Result<Option<crate::tune::known::Known>> {
    let Some(arg) = &args.confirm else {
        return Ok(None);
    };
    let arg = (!arg.is_empty()).then_some(arg.as_str());
    let name = testbed.device_name();
    crate::tune::known::resolve(
        store,
        arg,
        &testbed.target(),
        policy,
        &ctx.root,
        name.as_deref(),
    )
    .map(Some)
}

/// Runs `sweetspot tune`.
pub(crate) fn run(ctx: &Ctx, args: &Args) -> Result<()> {
    check_apply(args)?;
    crate::signals::install();
    // Ctrl-C or SIGTERM: the run in progress finishes, then the tune stops and restores;
    // a second signal abandons the run.
    crate::signals::finish_current_run(true);
    let (pol, benchmark) = policy_of(args)?;
    let mut store = ctx.store()?;
    crate::undo::recover(&mut store, &ctx.root)?;
    let (sim, seed) = simulation(&store, args, &pol)?;
    // One writer per device: the lock comes before anything is built (a scratch loop device
    // and its filesystem); a simulation is only read, so it is opened first for its identity.
    let (lock, mut testbed) = if let Some(job) = benchmark {
        let lock = target::lock_real(ctx, &args.target, "tune")?;
        (
            lock,
            target::open_benchmark(ctx, &args.target, "tune", job)?,
        )
    } else if let Some(dev) = sim {
        let t = dev.target();
        (
            target::lock(ctx, &t.identity, &t.label, "tune")?,
            Box::new(dev) as Box<dyn Testbed>,
        )
    } else {
        let lock = target::lock_real(ctx, &args.target, "tune")?;
        (lock, target::open(ctx, &args.target, seed, "tune")?)
    };
    // Host-wide knobs in the policy: one writer for them too (a simulation writes nothing;
    // `--host` already holds the host's lock as its target's).
    let _host = if args.target.sim.is_none() && !args.target.host {
        target::lock_host(ctx, pol.knobs.keys().map(String::as_str), "tune")?
    } else {
        None
    };
    // A budget the policy cannot use is bad input before anything is announced or looked up
    // ("nothing to resume"), but after the locks: a second writer is refused first, whatever
    // its budget.
    crate::tune::config(&pol, args.budget, seed)?;
    let resume = if args.resume {
        find_resume(
            ctx,
            &store,
            testbed.as_ref(),
            &pol.name,
            args.budget.unwrap_or(pol.budget),
            args.target.seed,
        )?
    } else {
        None
    };
    let known = known_of(ctx, &store, args, testbed.as_ref(), &pol.name)?;
    let req = Request {
        policy: &pol,
        budget: args.budget,
        seed,
        apply: args.apply,
        // --json keeps stdout for the JSON; the progress bar and trial lines stay on stderr.
        quiet: ctx.quiet,
        lock: &lock,
        resume: resume.as_ref(),
        confirm: known.as_ref(),
    };
    if resume.is_none() {
        target::announce_seed(ctx, &args.target, seed);
    }
    let stopped = match run::tune_or_stop(&store, &ctx.db, testbed.as_mut(), &req) {
        Ok(Ended::Done(rep)) => {
            emit(rep.as_ref(), args.output.format())?;
            if args.output.json {
                return Ok(());
            }
            return print_sparklines(ctx, &store, rep.tune_id);
        }
        Ok(Ended::Stopped(s)) => Some(s),
        Err(crate::Error::Interrupted) => None,
        Err(e) => return Err(e),
    };
    if !ctx.quiet && !crate::signals::output_closed() {
        crate::signals::eprint_line(
            "sweetspot: tune stopped; the same command with --resume goes on from its finished trials",
        );
    }
    // The exit stays what stopped the tune (130 for a signal, 0 for a closed pipe), printed
    // or not: a reader of stdout gone only now does not make it the closed pipe's stop
    // ([`crate::signals::close_output`]). A closed stderr leaves stdout's JSON to be printed.
    if let Some(s) = stopped.filter(|_| args.output.json && !crate::signals::stdout_closed()) {
        print_stopped(&store, testbed.as_ref(), &s, args.resume);
    }
    Err(crate::Error::Interrupted)
}

/// Prints `tune --json`'s object for the stopped tune `s` ([`StoppedJson`]); `resumed`: this
/// run had `--resume`. A failure to print it, or to say the command that resumes it, warns.
fn print_stopped(store: &crate::store::Store, testbed: &dyn Testbed, s: &Stopped, resumed: bool) {
    let resume = resume_command(store, testbed, s, resumed).unwrap_or_else(|e| {
        tracing::warn!("the command that resumes tune #{}: {e}", s.tune_id);
        None
    });
    let json = StoppedJson {
        interrupted: true,
        stopped: s,
        resume,
    };
    if let Err(e) = super::print_json(&json) {
        tracing::warn!("{e}");
    }
}

impl Table for report::Report {
    /// [`report::text`].
    fn table(&self) -> Result<String> {
        Ok(report::text(self))
    }
}

/// The response of each tuned knob as sparklines ([`crate::plot::sparklines`]) after the
/// report, only when stdout is a terminal and not -q (--json never gets here): a pipe or a
/// file gets the report alone. A failure to draw them is a warning: the tune is stored.
fn print_sparklines(ctx: &Ctx, store: &crate::store::Store, tune_id: Option<i64>) -> Result<()> {
    use std::io::IsTerminal;
    let Some(id) = tune_id.filter(|_| !ctx.quiet && std::io::stdout().is_terminal()) else {
        return Ok(());
    };
    match crate::plot::sparklines(store, id) {
        Ok(s) if !s.is_empty() => super::print_out(&format!("\n{s}")),
        Ok(_) => Ok(()),
        Err(e) => {
            tracing::warn!("the response sparklines of tune #{id}: {e}");
            Ok(())
        }
    }
}

/// What `tune --json` prints when Ctrl-C or SIGTERM stopped the tune (exit 130), or stderr's
/// reader going away did (exit 0): `"interrupted": true`, the [`Stopped`] tune's fields, and
/// the command that resumes it.
#[derive(serde::Serialize)]
struct StoppedJson<'a> {
    /// Always true: tells this object from the finished tune's report.
    interrupted: bool,
    #[serde(flatten)]
    stopped: &'a Stopped,
    /// [`resume_command`].
    resume: Option<String>,
}

/// The command that resumes the stopped tune `s`: this process's own command line,
/// shell-quoted, with `--resume` added unless `resumed` says it was given (stderr's "the same
/// command with --resume"), to run from the same directory with the same environment.
/// `None` when `--resume` would tune afresh instead ([`Resume::find_or_why`], the very test
/// it makes): no trial had finished.
fn resume_command(
    store: &crate::store::Store,
    testbed: &dyn Testbed,
    s: &Stopped,
    resumed: bool,
) -> Result<Option<String>> {
    let t = testbed.target();
    let found = Resume::find_or_why(store, &t, &s.policy, s.budget, &testbed.sizes())?;
    if found.as_resume().is_none_or(|r| r.from_tune != s.tune_id) {
        return Ok(None);
    }
    let mut words: Vec<String> = std::env::args_os()
        .map(|a| shell_word(&a.to_string_lossy()))
        .collect();
    if !resumed {
        words.push("--resume".into());
    }
    Ok(Some(words.join(" ")))
}

/// `w` as one word for sh: as it is when it holds only characters no shell treats specially,
/// else single-quoted (a `'` inside as `'\''`).
fn shell_word(w: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c);
    if !w.is_empty() && w.chars().all(plain) {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::shell_word;

    #[test]
    fn a_word_is_quoted_only_when_sh_would_read_it_otherwise() {
        assert_eq!(shell_word("--sim"), "--sim");
        assert_eq!(shell_word("/tmp/.tmpX1/s.db"), "/tmp/.tmpX1/s.db");
        assert_eq!(shell_word("fio --rw=read"), "'fio --rw=read'");
        assert_eq!(shell_word("regex:([0-9.]+)"), "'regex:([0-9.]+)'");
        assert_eq!(shell_word("it's $HOME"), r"'it'\''s $HOME'");
        assert_eq!(shell_word(""), "''");
    }
}
