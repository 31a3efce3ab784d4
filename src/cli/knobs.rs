//! `sweetspot knobs <DEVICE>`: the knobs a device offers now (and the host-wide vm and
//! CPU-scheduler knobs), with
//! domain, unit, current value and the kernel source of the facts.

use super::Ctx;
use super::output::{JsonArg, emit};
use crate::Result;
use crate::device::{self, Device};
use crate::knob::{Domain, Knob, discover};
use crate::output::format::Table;
use serde::Serialize;

/// Arguments of `sweetspot knobs`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The device (kernel name, e.g. sda, nvme0n1, loop0).
    pub device: String,
    #[command(flatten)]
    pub output: JsonArg,
}

/// The JSON shape of `knobs --json`.
#[derive(Debug, Serialize)]
pub(crate) struct Listing {
    /// The device.
    pub device: Device,
    /// Its knobs then the host vm knobs (`order` = `vm`: host-wide), in apply order.
    pub knobs: Vec<Knob>,
    /// Knobs whose 0 means "unused", not a value (`dirty_bytes` while `dirty_ratio` rules),
    /// with the reason.
    pub unused: std::collections::BTreeMap<String, String>,
    /// Why the debugfs CPU-scheduler knobs are missing (unmounted, locked down), if they are.
    pub debugfs: Option<String>,
}

/// Runs `sweetspot knobs`.
pub(crate) fn run(ctx: &Ctx, args: &Args) -> Result<()> {
    let dev = device::find(&ctx.root, &args.device)?;
    ctx.record_devices(std::slice::from_ref(&dev), &device::kernel_release());
    let knobs = discover::knobs(&ctx.root, &dev)?;
    let unused: std::collections::BTreeMap<String, String> =
        discover::unused_pair_members(&discover::vm_knobs(&ctx.root))
            .into_iter()
            .collect();
    let debugfs = crate::knob::sched::debugfs(&ctx.root).why();
    let listing = Listing {
        device: dev,
        knobs,
        unused,
        debugfs,
    };
    emit(&listing, args.output.format())
}

impl Table for Listing {
    /// The device, then a row per knob, then why the debugfs knobs are missing (if so).
    fn table(&self) -> Result<String> {
        let Listing {
            device: dev,
            knobs,
            unused,
            debugfs,
        } = self;
        let mut out = format!(
            "{} ({}), scheduler {}\n{:<26} {:>12} {:<30} {:<9} {:<12} source\n",
            dev.name, dev.identity, dev.scheduler, "knob", "value", "domain", "unit", "applies to"
        );
        for k in knobs {
            let domain = match &k.domain {
                Domain::Int { min, max } => crate::knob::catalogue::domain_text(*min, *max),
                Domain::Choice(c) => c.join(" "),
            };
            let source = match (&k.source, k.known) {
                (Some(s), _) => s.clone(),
                (None, false) => "unknown to the catalogue".into(),
                (None, true) => String::new(),
            };
            // A 0 that means "unused" is shown as such, not as a value.
            let value = match unused.get(&k.name) {
                Some(_) => format!("{} (unused)", k.current),
                None => k.current.to_string(),
            };
            let applies = match (&k.scheduler, k.order) {
                (Some(s), _) => s.as_str(),
                (None, o) if o.is_host() => "host-wide",
                (None, _) => "device",
            };
            out += &format!(
                "{:<26} {:>12} {:<30} {:<9} {:<12} {}\n",
                k.name, value, domain, k.unit, applies, source
            );
        }
        if let Some(why) = debugfs {
            out += &format!("note: {why}\n");
        }
        Ok(out)
    }
}
