//! Choosing what to measure: `--device D [--dir DIR]`, `--scratch`, or `--sim FILE`, shared by
//! `bench` and `tune`. [`open`] turns the arguments into a [`Testbed`].

use crate::Result;
use crate::bench::{SimDevice, Testbed};
use crate::cli::Ctx;
use std::path::PathBuf;

/// Target selection and real-load options, flattened into `bench` and `tune`.
#[derive(Clone, Debug, Default, clap::Args)]
#[group(skip)]
#[command(group = clap::ArgGroup::new("target").required(true).multiple(false).args(["device", "scratch", "sim"]))]
pub struct TargetArgs {
    /// Measure this device (kernel name, e.g. sda): uses a writable mounted filesystem of it,
    /// or --dir.
    #[arg(long, value_name = "DEVICE")]
    pub device: Option<String>,

    /// A directory on --device's filesystem to run the job and loads in.
    #[arg(long, value_name = "DIR", requires = "device")]
    pub dir: Option<PathBuf>,

    /// Make a throwaway file-backed loop device with ext4, measure it, and remove it again
    /// (also on error, Ctrl-C and SIGTERM).
    #[arg(long)]
    pub scratch: bool,

    /// Make the scratch device slow: serve it over FUSE through a device model, e.g.
    /// `hdd-5400`, `hdd-7200`, `sdcard`, `emmc`, or
    /// `latency=500us,bandwidth=200MB/s,channels=4[,seek=hdd,rpm=5400,...]`.
    #[arg(long, value_name = "PRESET|SPEC", requires = "scratch")]
    pub emulate: Option<String>,

    /// A simulated device: a surface file (see data/surfaces/).
    #[arg(long, value_name = "FILE")]
    pub sim: Option<PathBuf>,

    /// Seed for the simulator's noise; the same seed gives identical output.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Where io_other writes (a directory on another filesystem); io_other needs it.
    #[arg(long, value_name = "DIR")]
    pub other_dir: Option<PathBuf>,

    /// Scale the built-in reference job (1.0: no_load takes about 5–10 s on 2 cores).
    #[arg(long, value_name = "X", default_value_t = 1.0)]
    pub job_scale: f64,

    /// Replace the built-in job with this shell command, run with `sh -c` in the target
    /// directory and timed as a process (its files there are evicted before cold runs).
    #[arg(long, value_name = "COMMAND")]
    pub job: Option<String>,

    /// Drop the whole system's page cache before each run (default: evict only the job's
    /// own files).
    #[arg(long)]
    pub drop_caches: bool,

    /// Seconds a load runs before the job starts.
    #[arg(long, value_name = "S", default_value_t = crate::bench::realrun::LEAD_S)]
    pub lead: f64,

    /// Size of io_load's and read_load's files and of mem_load's buffer, MiB.
    #[arg(long, value_name = "MIB", default_value_t = 256)]
    pub load_mib: u64,
}

/// Opens the testbed the arguments name. `--sim` without `--seed` draws a random seed (logged
/// at `-v`). Errors are bad input (exit 2) when the target does
/// not exist or is unusable.
pub fn open(ctx: &Ctx, args: &TargetArgs) -> Result<Box<dyn Testbed>> {
    let _ = ctx;
    if let Some(path) = &args.sim {
        let seed = args.seed.unwrap_or_else(rand::random);
        tracing::info!("simulating {} with --seed {seed}", path.display());
        return Ok(Box::new(SimDevice::open(path, seed)?));
    }
    crate::bench::real::open(ctx, args)
}
