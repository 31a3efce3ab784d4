//! `sweetspot knobs <DEVICE>`: the knobs a device offers now (and the host vm knobs), with
//! domain, unit, current value and the kernel source of the facts.

use super::{Ctx, print_json, print_out};
use crate::Result;
use crate::device::{self, Device};
use crate::knob::{Domain, Knob, discover};
use serde::Serialize;

/// Arguments of `sweetspot knobs`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The device (kernel name, e.g. sda, nvme0n1, loop0).
    pub device: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The JSON shape of `knobs --json`.
#[derive(Debug, Serialize)]
pub struct Listing {
    /// The device.
    pub device: Device,
    /// Its knobs then the host vm knobs, in apply order.
    pub knobs: Vec<Knob>,
}

/// Runs `sweetspot knobs`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<()> {
    let dev = device::find(&ctx.root, &args.device)?;
    ctx.record_devices(std::slice::from_ref(&dev), &device::kernel_release());
    let knobs = discover::knobs(&ctx.root, &dev)?;
    if args.json {
        return print_json(&Listing { device: dev, knobs });
    }
    let mut out = format!(
        "{} ({}), scheduler {}\n{:<26} {:>12} {:<30} {:<9} {:<12} source\n",
        dev.name, dev.identity, dev.scheduler, "knob", "value", "domain", "unit", "scheduler"
    );
    for k in &knobs {
        let domain = match &k.domain {
            Domain::Int { min, max } => format!("{min}..={max}"),
            Domain::Choice(c) => c.join(" "),
        };
        let source = match (&k.source, k.known) {
            (Some(s), _) => s.clone(),
            (None, false) => "unknown to the catalogue".into(),
            (None, true) => String::new(),
        };
        out += &format!(
            "{:<26} {:>12} {:<30} {:<9} {:<12} {}\n",
            k.name,
            k.current.to_string(),
            domain,
            k.unit,
            k.scheduler.as_deref().unwrap_or("-"),
            source
        );
    }
    print_out(&out)
}
