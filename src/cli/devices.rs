//! `sweetspot devices`: whole disks with identity, schedulers, size and mounts. Each device
//! shown is recorded in the store's `devices` table (identity, fingerprint, kernel).

use super::{Ctx, print_json, print_out};
use crate::Result;
use crate::device::{self, Device};
use serde::Serialize;

/// Arguments of `sweetspot devices`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The JSON shape of `devices --json`.
#[derive(Debug, Serialize)]
pub struct Listing {
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// Whole disks.
    pub devices: Vec<Device>,
}

/// Runs `sweetspot devices`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<()> {
    let listing = Listing {
        kernel: device::kernel_release(),
        devices: device::list(&ctx.root)?,
    };
    ctx.record_devices(&listing.devices, &listing.kernel);
    if args.json {
        return print_json(&listing);
    }
    let mut out = format!(
        "{:<10} {:<7} {:>10} {:<4} {:<40} {:<4} {:<40} mounts\n",
        "name", "dev", "size", "rot", "schedulers", "rw", "identity"
    );
    for d in &listing.devices {
        let scheds = d
            .schedulers
            .iter()
            .map(|s| {
                if *s == d.scheduler {
                    format!("[{s}]")
                } else {
                    s.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        let mounts = d
            .mounts
            .iter()
            .map(|m| format!("{} on {} ({})", m.source, m.target.display(), m.fstype))
            .collect::<Vec<_>>()
            .join(", ");
        out += &format!(
            "{:<10} {:<7} {:>10} {:<4} {:<40} {:<4} {:<40} {}\n",
            d.name,
            d.dev,
            human_size(d.size_bytes),
            if d.rotational { "yes" } else { "no" },
            if scheds.is_empty() { "-" } else { &scheds },
            if d.writable { "yes" } else { "no" },
            d.identity,
            if mounts.is_empty() { "-" } else { &mounts },
        );
    }
    out += &format!("kernel {}\n", listing.kernel);
    print_out(&out)
}

/// Bytes in binary units (`64.0 MiB`).
fn human_size(b: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", units[i])
    }
}
