//! `sweetspot devices`: whole disks with identity, schedulers, size and mounts. Each device
//! shown is recorded in the store's `devices` table (identity, fingerprint, kernel). The table
//! shows control characters escaped; `--json` has every string exactly.

use super::Ctx;
use super::output::{JsonArg, emit};
use crate::Result;
use crate::device::{self, Device};
use crate::output::format::Table;
use crate::types::text::shown;
use serde::Serialize;

/// Arguments of `sweetspot devices`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub output: JsonArg,
}

/// The JSON shape of `devices --json`.
#[derive(Debug, Serialize)]
pub(crate) struct Listing {
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// Whole disks.
    pub devices: Vec<Device>,
}

/// Runs `sweetspot devices`.
pub(crate) fn run(ctx: &Ctx, args: &Args) -> Result<()> {
    let listing = Listing {
        kernel: device::kernel_release(),
        devices: device::list(&ctx.root)?,
    };
    ctx.record_devices(&listing.devices, &listing.kernel);
    emit(&listing, args.output.format())
}

impl Table for Listing {
    /// The disks' table, a note when an identity was shortened, and the kernel.
    fn table(&self) -> Result<String> {
        Ok(listing_table(self))
    }
}

/// [`Listing`]'s text.
fn listing_table(listing: &Listing) -> String {
    let mut rows = vec![HEAD.map(String::from)];
    let mut shortened = false;
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
        // A model, serial or path may hold control characters: shown escaped (`\n`,
        // `\u{1b}`), never acted on by the terminal; `--json` has them exactly.
        let whole = shown(&d.identity);
        let identity = shorten(&whole, IDENTITY_MAX);
        shortened |= identity != whole;
        let or_dash = |s: String| if s.is_empty() { "-".to_string() } else { s };
        rows.push([
            shown(&d.name),
            shown(&d.dev),
            human_size(d.size_bytes),
            if d.rotational { "yes" } else { "no" }.into(),
            or_dash(shown(&scheds)),
            if d.writable { "yes" } else { "no" }.into(),
            identity,
            or_dash(shown(&mounts)),
        ]);
    }
    let mut out = table(&rows);
    if shortened {
        out += &format!(
            "(identities longer than {IDENTITY_MAX} characters are shortened with …; \
             `sweetspot devices --json` has them whole)\n"
        );
    }
    out += &format!("kernel {}\n", listing.kernel);
    out
}

/// The table's columns; `size` is right-aligned, `mounts` (the last) is not padded.
const HEAD: [&str; 8] = [
    "name",
    "dev",
    "size",
    "rot",
    "schedulers",
    "rw",
    "identity",
    "mounts",
];

/// The widest identity the table shows whole; a loop device's (`loop:` and its backing
/// file's path) is often longer.
const IDENTITY_MAX: usize = 48;

/// `rows` (the header first) with every column as wide as its widest cell.
fn table(rows: &[[String; 8]]) -> String {
    let mut width = [0; 8];
    for r in rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .zip(width)
            .enumerate()
            .map(|(i, (c, w))| match i {
                2 => format!("{c:>w$}"),
                7 => c.clone(),
                _ => format!("{c:<w$}"),
            })
            .collect();
        out += &cells.join("  ");
        out += "\n";
    }
    out
}

/// `s` if at most `max` characters, else its start and end around a `…` (`max` in all):
/// for a path, the file name stays.
fn shorten(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let tail = (max - 1) * 2 / 3;
    let head = max - 1 - tail;
    let start: String = s.chars().take(head).collect();
    let end: String = s.chars().skip(n - tail).collect();
    format!("{start}…{end}")
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
