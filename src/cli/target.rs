//! Choosing what to measure: `--device D [--dir DIR]`, `--scratch`, `--sim FILE`, or `--host`
//! (host-wide knobs and a user benchmark only), shared by `bench` and `tune`. [`open`] turns the arguments into a [`Testbed`].

use super::Ctx;
use crate::bench::contest_run::BenchOptions;
use crate::bench::device_testbed::{RealDevice, scratch_identity};
use crate::bench::{Load, SimDevice, Testbed};
use crate::lock::{DeviceLock, Holder};
use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Target selection and real-load options, flattened into `bench` and `tune`.
#[derive(Clone, Debug, Default, clap::Args)]
#[group(skip)]
#[command(group = clap::ArgGroup::new("target").required(true).multiple(false).args(["device", "scratch", "sim", "host"]))]
pub struct TargetArgs {
    /// Measure this device (kernel name, e.g. sda).
    ///
    /// It uses a writable mounted filesystem of the device, or --dir.
    #[arg(long, value_name = "DEVICE")]
    pub device: Option<String>,

    /// Where on --device to run the job and loads.
    ///
    /// A directory on --device's filesystem to run the job and loads in.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["scratch", "sim", "host"])]
    pub dir: Option<PathBuf>,

    /// Measure a throwaway loop device (ext4).
    ///
    /// Make a throwaway file-backed loop device with ext4, measure it, and remove it again
    /// (also on error, Ctrl-C and SIGTERM).
    #[arg(long)]
    pub scratch: bool,

    /// Slow --scratch down: hdd-5400, sdcard, ...
    ///
    /// Make the scratch device slow: serve it over FUSE through a device model, e.g.
    /// `hdd-5400`, `hdd-7200`, `sdcard`, `emmc`, or
    /// `latency=500us,bandwidth=200MB/s,channels=4[,seek=hdd,rpm=5400,...]`; a disk takes
    /// `ncq=1..32` (reordering) and `wcache=SIZE` (a write cache): `hdd-5400,ncq=32,wcache=8MiB`.
    #[arg(long, value_name = "MODEL", conflicts_with_all = ["device", "sim", "host"])]
    pub emulate: Option<String>,

    /// A simulated device (a surface file).
    ///
    /// A simulated device: a surface file (see data/surfaces/).
    #[arg(long, value_name = "FILE")]
    pub sim: Option<PathBuf>,

    /// No device: host-wide knobs, user benchmark.
    ///
    /// No device: tune only host-wide knobs (vm, CPU scheduler) against a user benchmark (a
    /// policy's [benchmark], or `tune --job CMD --metric ...`), run in the current directory.
    #[arg(long)]
    pub host: bool,

    /// Seed: the same seed repeats a --sim run.
    ///
    /// Seed of the simulator's noise and the optimiser's draws; the same seed repeats a
    /// --sim run exactly. Without it one is drawn and printed.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Where io_other writes (another filesystem).
    ///
    /// A directory on another filesystem; io_other needs it.
    #[arg(long, value_name = "DIR", conflicts_with = "sim")]
    pub other_dir: Option<PathBuf>,

    /// Reference job scale, (0, 100].
    ///
    /// Scale the built-in reference job (1.0: no_load takes about 5–10 s on 2 cores), in
    /// (0, 100].
    #[arg(long, value_name = "X", default_value_t = 1.0, conflicts_with = "sim",
          value_parser = job_scale_in_range)]
    pub job_scale: f64,

    /// Run this shell command as the job instead.
    ///
    /// Replace the built-in job with this shell command, run with `sh -c` in the target
    /// directory and timed as a process (its files there are evicted before cold runs). With
    /// `tune --metric`, it is the benchmark whose figure is tuned instead.
    #[arg(long, value_name = "COMMAND", conflicts_with = "sim")]
    pub job: Option<String>,

    /// Drop the system's page cache before each run.
    ///
    /// Drop the whole system's page cache before each run (default: evict only the job's
    /// own files).
    #[arg(long, conflicts_with = "sim")]
    pub drop_caches: bool,

    /// Load lead-in in seconds, 0–60.
    ///
    /// Seconds a load runs before the job starts, 0–60.
    #[arg(long, value_name = "S", default_value_t = crate::bench::contest_run::LEAD_S,
          conflicts_with = "sim", value_parser = lead_in_range)]
    pub lead: f64,

    /// Load file and buffer size, MiB.
    ///
    /// Size of io_load's and read_load's files and of mem_load's buffer, MiB, 1–1048576
    /// (1 TiB).
    #[arg(
        long,
        value_name = "MIB",
        default_value_t = 256,
        conflicts_with = "sim",
        value_parser = clap::value_parser!(u64).range(1..=crate::daemon::config::MAX_LOAD_MIB)
    )]
    pub load_mib: u64,
}

/// `--job-scale`: a number in (0, 100] ([`crate::bench::job::JobSpec::scaled`]'s range),
/// refused by clap (exit 2) before anything runs.
fn job_scale_in_range(s: &str) -> std::result::Result<f64, String> {
    let x: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if x > 0.0 && x <= 100.0 {
        Ok(x)
    } else {
        Err("must be a number in (0, 100]".into())
    }
}

/// `--lead`: seconds in 0–60 (it becomes a `Duration`, which `from_secs_f64` makes only of a
/// finite, non-negative number), refused by clap (exit 2) before anything runs.
fn lead_in_range(s: &str) -> std::result::Result<f64, String> {
    let x: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if (0.0..=60.0).contains(&x) {
        Ok(x)
    } else {
        Err("must be 0–60 s".into())
    }
}

/// The run's seed: `--seed`, or a random one ([`announce_seed`] prints it once the target is
/// open, so a run refused for bad input does not print one).
pub(crate) fn seed(args: &TargetArgs) -> u64 {
    args.seed.unwrap_or_else(rand::random)
}

/// Prints a drawn seed on stderr (unless `-q` or `--seed` gave it), so the run can be
/// repeated with `--seed`.
pub(crate) fn announce_seed(ctx: &Ctx, args: &TargetArgs, seed: u64) {
    if args.seed.is_none() && !ctx.quiet {
        crate::signals::eprint_line(&format!("seed {seed} (repeat this run with --seed {seed})"));
    }
}

/// Opens the testbed the arguments name for `command` (`bench`, `tune`: the holder named in a
/// scratch device's lock); `seed` (from [`seed`]) drives a simulation's noise.
/// Errors are bad input (exit 2) when the target does not exist or is unusable.
pub(crate) fn open(
    ctx: &Ctx,
    args: &TargetArgs,
    seed: u64,
    command: &str,
) -> Result<Box<dyn Testbed>> {
    if let Some(path) = &args.sim {
        return Ok(Box::new(SimDevice::open(path, seed)?));
    }
    open_real(ctx, args, command)
}

/// Takes the device lock ([`crate::lock`]) of `identity` for `command` without waiting.
/// Errors: bad input (exit 2) naming `label` and the holder when another writer has it.
pub(crate) fn lock(ctx: &Ctx, identity: &str, label: &str, command: &str) -> Result<DeviceLock> {
    DeviceLock::acquire(
        &crate::lock::path(&ctx.db, &ctx.root, identity),
        label,
        Holder::me(command),
    )
}

/// Takes the host-wide knobs' lock ([`crate::lock::HOST`]) for `command` when one of `knobs`
/// is host-wide (vm or CPU-scheduler); `None` when none is. Errors: bad input (exit 2)
/// naming the holder when another writer has it.
pub(crate) fn lock_host<'a>(
    ctx: &Ctx,
    knobs: impl IntoIterator<Item = &'a str>,
    command: &str,
) -> Result<Option<DeviceLock>> {
    let host: Vec<&str> = knobs
        .into_iter()
        .filter(|k| crate::knob::catalogue::order_of(k).is_some_and(|o| o.is_host()))
        .collect();
    if host.is_empty() {
        return Ok(None);
    }
    lock(
        ctx,
        crate::lock::HOST,
        &crate::lock::host_label(&host),
        command,
    )
    .map(Some)
}

/// Takes the lock of the real target `args` name (`--device D`: D's identity; `--scratch`: the
/// identity a scratch tune is stored under, [`scratch_identity`] of `$TMPDIR`, where its
/// backing file goes) before anything is built: a second writer is refused before a loop
/// device or a filesystem is made, and bad input (a bad `--emulate` SPEC) is refused before
/// the lock is even asked for. Errors: a bad SPEC; those of [`lock`]; an unknown device.
pub(crate) fn lock_real(ctx: &Ctx, args: &TargetArgs, command: &str) -> Result<DeviceLock> {
    emulation(args)?;
    if args.host {
        // The host-wide knobs' own lock: a device tune that writes one waits for it too.
        return lock(ctx, crate::lock::HOST, "the host", command);
    }
    if args.scratch {
        let id = scratch_identity(&ctx.root, &std::env::temp_dir());
        return lock(ctx, &id, "--scratch", command);
    }
    let name = args
        .device
        .as_deref()
        .ok_or_else(|| Error::BadInput("give --device, --scratch or --sim".into()))?;
    let d = crate::device::find(&ctx.root, name)?;
    lock(ctx, &d.identity, &d.name, command)
}

/// Refuses the loads of `loads` that the real target `args` name cannot run: `io_other`
/// without `--other-dir`, `dbench_load` without `dbench` on `PATH`
/// ([`crate::bench::loads::check_available`]). Called before anything is locked or built: the
/// same check before each run ([`crate::bench::contest_run::Bencher::run`]) would come only after
/// a scratch loop device was made, knobs journaled and the reference measured. A simulation
/// runs no load, so nothing is refused for `--sim`. Errors: bad input (exit 2), naming the
/// load and what it needs.
pub(crate) fn check_loads(args: &TargetArgs, loads: &[Load]) -> Result<()> {
    if args.sim.is_some() {
        return Ok(());
    }
    for &l in loads {
        crate::bench::loads::check_available(l, args.other_dir.as_deref())?;
    }
    Ok(())
}

/// Refuses `--sim` for a user benchmark (a surface has no command to run), before anything
/// is opened or locked. Errors: bad input (exit 2).
pub(crate) fn no_sim_benchmark(args: &TargetArgs) -> Result<()> {
    if args.sim.is_some() {
        return Err(Error::BadInput(
            "a user benchmark runs a command: give --host, --device or --scratch, not --sim".into(),
        ));
    }
    Ok(())
}

/// Opens the testbed for a user benchmark `job` ([`crate::bench::user_job`]): the host alone
/// (`--host`: host-wide knobs, runs in the current directory), or a real device (its knobs
/// and the host's, runs in its work directory on the device's filesystem). Errors: bad input
/// for `--sim` (a surface has no command to run).
pub(crate) fn open_benchmark(
    ctx: &Ctx,
    args: &TargetArgs,
    command: &str,
    job: crate::bench::user_job::UserJob,
) -> Result<Box<dyn Testbed>> {
    use crate::bench::user_testbed::{HostBed, UserBench};
    no_sim_benchmark(args)?;
    if args.host {
        crate::signals::install();
        let dir = std::env::current_dir().map_err(|e| Error::io("the current directory", e))?;
        let host = HostBed::new(ctx.store()?, &ctx.root);
        return Ok(Box::new(UserBench::new(Box::new(host), job, dir)));
    }
    let dev = real_device(ctx, args, command, true)?;
    let dir = dev
        .work_dir()
        .map(Path::to_path_buf)
        .ok_or_else(|| Error::Failed("the device has no work directory".into()))?;
    Ok(Box::new(UserBench::new(Box::new(dev), job, dir)))
}

/// Opens the real target that `args` name (`--device` or `--scratch`).
fn open_real(ctx: &Ctx, args: &TargetArgs, command: &str) -> Result<Box<dyn Testbed>> {
    Ok(Box::new(real_device(ctx, args, command, false)?))
}

/// The real device `args` name; `user_benchmark`: for a user benchmark, which needs no room
/// for the job or contest's loads ([`BenchOptions::user_benchmark`]).
fn real_device(
    ctx: &Ctx,
    args: &TargetArgs,
    command: &str,
    user_benchmark: bool,
) -> Result<RealDevice> {
    if args.host {
        return Err(Error::BadInput(
            "--host runs only a user benchmark: `tune --host` with a policy's [benchmark], or \
             with --job CMD --metric ..."
                .into(),
        ));
    }
    crate::signals::install();
    let mut opts = options(ctx, args)?;
    opts.user_benchmark = user_benchmark;
    let emulate = emulation(args)?;
    let dev = if args.scratch {
        RealDevice::scratch_emulated(ctx.store()?, &ctx.root, opts, command, emulate.as_ref())?
    } else if let Some(d) = &args.device {
        RealDevice::device(ctx.store()?, &ctx.root, d, args.dir.as_deref(), opts)?
    } else {
        return Err(Error::BadInput("give --device, --scratch or --sim".into()));
    };
    Ok(dev)
}

/// `--emulate`'s spec, parsed (bad input, exit 2, naming the field and value; also in a build
/// without the `emulate` feature).
pub(crate) fn emulation(args: &TargetArgs) -> Result<Option<crate::bench::emulate::Spec>> {
    if args.emulate.is_some() && !cfg!(feature = "emulate") {
        return Err(crate::bench::emulate::unavailable());
    }
    args.emulate
        .as_deref()
        .map(crate::bench::emulate::Spec::parse)
        .transpose()
}

/// [`BenchOptions`] from the command line.
pub(crate) fn options(ctx: &Ctx, args: &TargetArgs) -> Result<BenchOptions> {
    let mut o = BenchOptions::new()?;
    o.job_scale = args.job_scale;
    o.job_command = args.job.clone();
    o.drop_caches = args.drop_caches;
    o.other_dir = args.other_dir.clone();
    o.proc_root = ctx.root.proc.clone();
    if !(args.lead.is_finite() && (0.0..=60.0).contains(&args.lead)) {
        return Err(Error::BadInput(format!(
            "--lead '{}': must be 0–60 s",
            args.lead
        )));
    }
    o.lead = Duration::from_secs_f64(args.lead);
    if args.load_mib == 0 {
        return Err(Error::BadInput("--load-mib '0': must be at least 1".into()));
    }
    o.sizes = o.sizes.with_mib(args.load_mib);
    Ok(o)
}
