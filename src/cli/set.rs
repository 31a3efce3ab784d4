//! `sweetspot set <DEVICE> <KNOB=VALUE>...`: journaled writes (owner `set`); `restore` undoes.
//! A host-wide knob (vm, CPU scheduler) is marked so in the output, and journaled for the
//! device, so that `restore <DEVICE>` puts it back when no other command journaled it too.

use super::{Ctx, print_out};
use crate::device;
use crate::knob::apply::apply_with;
use crate::knob::io::RealIo;
use crate::knob::{KnobValue, Setting, catalogue};
use crate::types::Owner;
use crate::{Error, Result};

/// Arguments of `sweetspot set`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The device (kernel name).
    pub device: String,
    /// KNOB=VALUE pairs, applied in kernel order (scheduler first).
    #[arg(required = true, value_name = "KNOB=VALUE")]
    pub pairs: Vec<String>,
}

/// Parses `KNOB=VALUE` pairs: `scheduler` takes a name, every other knob a decimal integer.
/// Errors: [`Error::BadInput`] for a missing `=`, a repeated knob, or a value that is not a
/// number.
pub(crate) fn parse_pairs(pairs: &[String]) -> Result<Setting> {
    let mut s = Setting::new();
    for p in pairs {
        let (k, v) = p
            .split_once('=')
            .ok_or_else(|| Error::BadInput(format!("'{p}': expected KNOB=VALUE")))?;
        let (k, v) = (k.trim(), v.trim());
        let value = if k == "scheduler" {
            KnobValue::Name(v.to_string())
        } else {
            KnobValue::Int(v.parse().map_err(|_| {
                Error::BadInput(format!("knob '{k}': value '{v}' is not a (decimal) number"))
            })?)
        };
        if s.insert(k.to_string(), value).is_some() {
            return Err(Error::BadInput(format!("knob '{k}' given twice")));
        }
    }
    Ok(s)
}

/// Runs `sweetspot set`.
pub(crate) fn run(ctx: &Ctx, args: &Args) -> Result<()> {
    let setting = parse_pairs(&args.pairs)?;
    let dev = device::find(&ctx.root, &args.device)?;
    // The database first: one that fails the trust rule or cannot be written is refused
    // (exit 2) before a lock file is made beside it.
    let mut store = ctx.store()?;
    // One writer per device: refused while a tune, bench or another set writes it.
    let _lock = super::target::lock(ctx, &dev.identity, &dev.name, "set")?;
    let _host = super::target::lock_host(ctx, setting.keys().map(String::as_str), "set")?;
    store.record_device(&dev, &device::kernel_release())?;
    let changes = apply_with(&RealIo, &mut store, &ctx.root, &dev, &setting, &Owner::Set)?;
    let mut out = String::new();
    for c in &changes {
        // A host-wide knob acts on every device, not only the one named.
        let host = catalogue::order_of(&c.knob).is_some_and(|o| o.is_host());
        out += &format!(
            "{} {}: {} -> {}{}\n",
            dev.name,
            c.knob,
            c.from,
            c.to,
            if host { " (host-wide)" } else { "" }
        );
    }
    if changes.is_empty() {
        out += &format!("{}: already set, nothing changed\n", dev.name);
    }
    let written = changes.iter().map(|c| (c.knob.as_str(), c.to.as_str()));
    out += &daemon_note(ctx, &dev.name, written);
    if !ctx.quiet {
        print_out(&out)?;
    }
    Ok(())
}

/// A note when a running daemon manages a knob that `set` or `profile apply` just wrote
/// (`changes`: knob and value written, on disk `device` or, for a host-wide knob, the host)
/// away from the daemon's value: the daemon takes it for another writer's change, puts its
/// value back once at its next poll, and leaves a second change alone (contested)
/// ([`crate::daemon::manage`]). Empty otherwise.
pub(super) fn daemon_note<'a>(
    ctx: &Ctx,
    device: &str,
    changes: impl Iterator<Item = (&'a str, &'a str)>,
) -> String {
    let Some((pid, managed)) =
        crate::daemon::status::running_daemon(&crate::daemon::state_path(&ctx.db))
    else {
        return String::new();
    };
    let host = crate::daemon::manage::HOST_LABEL;
    let knobs: Vec<String> = changes
        .filter_map(|(knob, to)| {
            let on = if catalogue::order_of(knob).is_some_and(|o| o.is_host()) {
                host
            } else {
                device
            };
            managed
                .iter()
                .find(|(d, k, want)| d == on && k == knob && want != to)
                .map(|(_, k, want)| format!("{k} (its sweet spot {want})"))
        })
        .collect();
    if knobs.is_empty() {
        return String::new();
    }
    format!(
        "note: the running daemon (pid {pid}) manages {}: it puts {} back at its next poll \
         unless it did so once already (a second change it leaves alone, contested); \
         `sweetspot restore` instead makes it leave the disk alone until it reloads\n",
        knobs.join(", "),
        if knobs.len() == 1 { "it" } else { "them" }
    )
}
