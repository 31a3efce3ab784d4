//! `sweetspot tune (--device D | --scratch | --sim FILE) [--policy NAME|FILE] [--budget N]
//! [--seed N] [--apply] [--json]`: find the device's sweet spot for a policy and store it.

use super::Ctx;
use crate::Result;
use crate::bench::target::{self, TargetArgs};
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

    /// Leave a significant sweet spot applied (journaled; `restore` undoes it).
    #[arg(long)]
    pub apply: bool,

    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `sweetspot tune`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<()> {
    crate::signals::install();
    let pol = policy::resolve(&args.policy, Path::new(policy::SYSTEM_DIR))?;
    let mut store = ctx.store()?;
    crate::tune::recover(&mut store, &ctx.root)?;
    let zoned = match &args.target.device {
        Some(d) => Some(crate::device::find(&ctx.root, d)?.zoned),
        None => None,
    };
    let mut tb = target::open(ctx, &args.target)?;
    let req = Request {
        policy: &pol,
        budget: args.budget,
        seed: args.target.seed.unwrap_or(0),
        apply: args.apply,
        device: args.target.device.clone(),
        zoned,
        quiet: ctx.quiet || args.json,
    };
    let rep = run::tune(&store, &ctx.db, tb.as_mut(), &req)?;
    if args.json {
        super::print_json(&rep)
    } else {
        super::print_out(&report::text(&rep))
    }
}
