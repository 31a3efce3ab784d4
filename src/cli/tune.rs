//! `sweetspot tune (--device D | --scratch | --sim FILE) [--policy NAME|FILE] [--budget N]
//! [--seed N] [--apply] [--json]`: find the device's sweet spot for a policy and store it.

use super::Ctx;
use super::target::{self, TargetArgs};
use crate::Result;
use crate::tune::policy;
use crate::tune::report;
use crate::tune::run::{self, Request};
use std::path::Path;

/// Arguments of `sweetspot tune`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: TargetArgs,

    /// Policy: a built-in name (quick, desktop, throughput), a name in
    /// /etc/sweetspot/policies/, or a TOML file. Default: quick.
    #[arg(long, value_name = "NAME|FILE", default_value = "quick")]
    pub policy: String,

    /// Most trials (search and final check together); overrides the policy's budget.
    #[arg(long, value_name = "N")]
    pub budget: Option<u32>,

    /// Leave a significant sweet spot applied (journaled; `restore` undoes it). Only with
    /// --device: a --sim or --scratch device does not outlive the tune.
    #[arg(long)]
    pub apply: bool,

    /// Print JSON.
    #[arg(long)]
    pub json: bool,
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

/// Runs `sweetspot tune`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<()> {
    check_apply(args)?;
    crate::signals::install();
    // Ctrl-C or SIGTERM: the run in progress finishes, then the tune stops and restores;
    // a second signal abandons the run.
    crate::signals::finish_current_run(true);
    let pol = policy::resolve(&args.policy, Path::new(policy::SYSTEM_DIR))?;
    let mut store = ctx.store()?;
    crate::tune::recover(&mut store, &ctx.root)?;
    let seed = target::seed(ctx, &args.target);
    // One writer per device: the lock comes before anything is built (a scratch loop device
    // and its filesystem); a simulation is only read, so it is opened first for its identity.
    let (lock, mut testbed) = if args.target.sim.is_some() {
        let tb = target::open(ctx, &args.target, seed, "tune")?;
        let t = tb.target();
        (target::lock(ctx, &t.identity, &t.label, "tune")?, tb)
    } else {
        let lock = target::lock_real(ctx, &args.target, "tune")?;
        (lock, target::open(ctx, &args.target, seed, "tune")?)
    };
    // Host-wide knobs in the policy: one writer for them too (a simulation writes nothing).
    let _host = match args.target.sim {
        None => target::lock_host(ctx, pol.knobs.keys().map(String::as_str), "tune")?,
        Some(_) => None,
    };
    let req = Request {
        policy: &pol,
        budget: args.budget,
        seed,
        apply: args.apply,
        // --json keeps stdout for the JSON; the progress bar and trial lines stay on stderr.
        quiet: ctx.quiet,
        lock: &lock,
    };
    let rep = run::tune(&store, &ctx.db, testbed.as_mut(), &req)?;
    if args.json {
        super::print_json(&rep)
    } else {
        super::print_out(&report::text(&rep))
    }
}
