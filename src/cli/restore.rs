//! `sweetspot restore [<DEVICE>]`: puts journaled knobs back (every owner's; the oldest open
//! entry of each file is the true original). Without a device it restores everything,
//! host-wide vm knobs included. With one, it restores that device's knobs and the host-wide
//! ones that `set DEVICE` or `tune --device DEVICE --apply` alone journaled
//! ([`crate::undo::hostwide`]), and names the
//! host-wide knobs that stay changed, with the command that puts them back. First it
//! finishes tunes that were killed
//! ([`crate::undo::recover`]: their devices are restored from their own entries and they are
//! marked `recovered` instead of staying `running`). A tune that is still running keeps its
//! device and knobs ([`crate::undo::restore_idle`]); it restores them when it ends.
//! Last, as root, it removes what SIGKILLed runs left behind ([`crate::bench::stale`]): their
//! work directories under any roots, and on the real `/sys` (whatever `--procfs-root` says)
//! `--scratch` leftovers too, except one whose knobs another database journaled and still
//! has open: that one is named, with the `sweetspot --db <it> restore` that puts them back.
//! When a running daemon manages a disk whose knobs it put back, it says that the daemon
//! leaves that disk alone now, until it restarts or reloads its config.
//!
//! Exit status: 1 when it leaves journaled knobs of what it was asked to restore changed (a
//! "left alone" line names each: a device a running tune or another writer holds, host-wide
//! knobs while a running `tune --host` or another writer works, knobs journaled under other
//! roots), or refused journal rows ([`crate::knob::vet`]: a row whose file or value is not one
//! the catalogue allows, or that cannot be read, is reported on stderr with its id, knob and
//! why, and left open, unwritten), after a last line on stderr that counts them; a script
//! then knows that not every knob is back. What it was not asked to restore does not count: after `restore DEV`, the
//! host-wide knobs other commands journaled too (its "stay changed" line) and other devices'
//! or the host's running tunes; nor do the leftovers of killed runs that the sweep names but
//! does not remove (a `--scratch` loop device, mount and files; their knobs, if any are open,
//! are in another database, whose `restore` the line names, or in this one, where they count
//! as any other knob does).

use super::{Ctx, print_out};
use crate::device;
use crate::knob::io::RealIo;
use crate::undo;
use crate::{Error, Result};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// Arguments of `sweetspot restore`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this device (and host-wide knobs only it changed).
    ///
    /// Only this device, and the host-wide knobs that `set DEVICE` or `tune --device DEVICE
    /// --apply` alone changed (default: every journaled knob, host-wide vm knobs included).
    pub device: Option<String>,
}

/// Runs `sweetspot restore`. Errors: [`Error::Failed`] (exit 1), after its report, when it
/// left journaled knobs changed (see the module docs); those of the restore.
pub(crate) fn run(ctx: &Ctx, args: &Args) -> Result<()> {
    // A device that is gone (a detached loop) can still have open entries, so an unknown name
    // is only checked for shape; a partition resolves to its disk when it exists.
    // A name that is neither a device here nor in the journal is a typo: its "unknown device"
    // error (exit 2) is reported.
    // No database: nothing was journaled with it (a mistyped --db must not be created and
    // then reported as an all-clear).
    let (mut out, left, refused) = if ctx.db.exists() {
        journaled(ctx, args)?
    } else {
        if let Some(name) = args.device.as_deref() {
            device::find(&ctx.root, device::check_name(name)?)?;
        }
        let none = format!(
            "restored 0 knobs: {} does not exist (nothing was journaled with this --db)\n",
            ctx.db.display()
        );
        (none, 0, 0)
    };
    sweep_leftovers(ctx, &mut out);
    if !ctx.quiet {
        print_out(&out)?;
    }
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let mut why = Vec::new();
    if left > 0 {
        why.push(format!("{left} knob{} left changed", plural(left)));
    }
    if refused > 0 {
        why.push(format!(
            "{refused} journal row{} refused, not written (not a knob file or value the \
             catalogue allows, or unreadable)",
            plural(refused)
        ));
    }
    match why.is_empty() {
        true => Ok(()),
        false => Err(Error::Failed(format!("{}; see above", why.join("; ")))),
    }
}

/// Restores the journal's open entries and says what it did, with the number of journaled
/// knobs (files) it was asked to restore and left changed, each named in a "left alone" line,
/// and the number of journal rows it refused (each reported on stderr).
fn journaled(ctx: &Ctx, args: &Args) -> Result<(String, usize, usize)> {
    let mut store = ctx.store()?;
    let dev = asked_device(ctx, &store, args)?;
    let dev = dev.as_deref();
    let r = crate::undo::restore_idle(&RealIo, &mut store, &ctx.root, dev)?;
    let mut out = restored_lines(&r, dev);
    // What it leaves changed of what it was asked to restore, by file: the open entries the
    // "left alone" lines below stand for (a knob journaled by several owners is one file).
    let open = store.journal_open(None, None)?;
    let alone = undo::left_alone(&r, &open, &ctx.root, dev);
    out.push_str(&left_alone_lines(&alone, &r));
    let mut left = alone.files;
    if let Some(note) = daemon_note(ctx, r.recovered_put.iter().chain(&r.put)) {
        out.push_str(&note);
    }
    if let (Some(d), n @ 1..) = (dev, r.host_changed.len()) {
        let one = n == 1;
        out.push_str(&format!(
            "{n} host-wide knob{} changed: {} (`restore {d}` puts back only those that `set \
             {d}` or `tune --device {d} --apply` alone changed); `{}` puts {} back, with \
             every other journaled knob\n",
            if one { " stays" } else { "s stay" },
            r.host_changed.join(", "),
            crate::undo::undo_command(&ctx.db, &ctx.root, None),
            if one { "it" } else { "them" }
        ));
    }
    out.push_str(&other_roots(ctx, &store, dev, &mut left)?);
    // Rows refused (each reported on stderr: row id, knob, why) stay open, not written.
    Ok((out, undo::counted(&left, &open, &r), r.refused.len()))
}

/// The device `restore` was asked for (`args.device`), by its kernel name: the disk of a
/// partition, or the name as given when the device is gone but has journal entries. Errors:
/// a bad name, or one that is neither a device here nor in the journal (exit 2).
fn asked_device(ctx: &Ctx, store: &crate::store::Store, args: &Args) -> Result<Option<String>> {
    Ok(match args.device.as_deref() {
        Some(name) => {
            let bare = device::check_name(name)?;
            match device::find(&ctx.root, bare) {
                Ok(d) => Some(d.name),
                Err(e) if store.journal_all(Some(bare))?.is_empty() => return Err(e),
                Err(_) => Some(bare.to_string()),
            }
        }
        None => None,
    })
}

/// The "restored N knobs" line (on `dev`, with the killed tunes finished first) and a line
/// per knob written back, a killed tune's marked.
fn restored_lines(r: &undo::Restored, dev: Option<&str>) -> String {
    let n = r.knobs;
    let mut out = format!(
        "restored {n} knob{}{}{}\n",
        if n == 1 { "" } else { "s" },
        dev.map(|d| format!(" on {d}")).unwrap_or_default(),
        match r.recovered {
            0 => String::new(),
            k => {
                let tunes = format!("{k} killed tune{}", if k == 1 { "" } else { "s" });
                match r.recovered_put.len() {
                    0 => format!(" (finished {tunes} first)"),
                    m => format!(" ({m} by finishing {tunes} first, marked below)"),
                }
            }
        }
    );
    let recovered = r.recovered_put.iter().map(|p| (p, " (a killed tune's)"));
    for (p, whose) in recovered.chain(r.put.iter().map(|p| (p, ""))) {
        out.push_str(&format!(
            "  {} {} = {}{whose}\n",
            p.device.as_deref().unwrap_or("host-wide"),
            p.knob,
            p.value
        ));
    }
    out
}

/// A "left alone" line per device or host-wide knobs a running tune or another writer holds
/// (`alone`, and `r`'s host-wide knobs left).
fn left_alone_lines(alone: &undo::LeftAlone, r: &undo::Restored) -> String {
    let mut out = String::new();
    for t in &alone.device_tunes {
        out.push_str(&format!(
            "left alone: {}, while tune {} (pid {}) is tuning it; the \
             tune undoes its own changes when it ends, `restore` then does the rest\n",
            t.device.as_deref().unwrap_or_default(),
            t.id,
            t.pid
        ));
    }
    for (t, knobs) in &alone.host_tunes {
        out.push_str(&format!(
            "left alone: the host-wide {}, while tune {} (pid {}) is tuning {}; the tune \
             undoes its own changes when it ends, `restore` then does the rest\n",
            if knobs.is_empty() {
                "knobs".to_string()
            } else {
                knobs.join(", ")
            },
            t.id,
            t.pid,
            if knobs.len() == 1 { "it" } else { "them" }
        ));
    }
    for (d, h) in &alone.held {
        out.push_str(&format!(
            "left alone: {d}, while {} writes it; `restore` again \
             once it is done\n",
            h.as_ref()
                .map_or_else(|| "another sweetspot".to_string(), |h| h.to_string())
        ));
    }
    if let Some(h) = &r.host_left {
        out.push_str(&format!(
            "left alone: the host-wide {}, while {}; `restore` again once it is done\n",
            h.knobs.join(", "),
            h.why
        ));
    }
    out
}

/// The open entries (of `dev` and the host-wide ones it alone journaled, or all) written
/// under other `--sysfs-root`/`--procfs-root` than this run's, which it cannot put back: one
/// line per such tree, with the knobs and the command that restores them. Empty when there
/// are none. Adds the files of those entries to `left`.
fn other_roots(
    ctx: &Ctx,
    store: &crate::store::Store,
    dev: Option<&str>,
    left: &mut BTreeSet<PathBuf>,
) -> Result<String> {
    let o = undo::other_roots(store, &ctx.root, dev)?;
    left.extend(o.files);
    let mut out = String::new();
    for t in &o.trees {
        out += &format!(
            "left alone: {}, written under other roots than this run's; `{}` puts {} back{}\n",
            t.knobs.join(", "),
            undo::undo_command(&ctx.db, &t.root, dev),
            if t.knobs.len() == 1 { "it" } else { "them" },
            if t.missing.is_empty() {
                String::new()
            } else {
                format!(" (not found here now: {})", t.missing.join(", "))
            }
        );
    }
    Ok(out)
}

/// A note when a running daemon (its state file beside the database) manages a disk whose
/// knobs this restore put back to values other than its sweet spot's: the daemon sees the
/// restore in the journal and leaves the disk alone, not re-applying it, until it restarts or
/// reloads its config ([`crate::daemon::manage`]).
fn daemon_note<'a>(
    ctx: &Ctx,
    put: impl Iterator<Item = &'a crate::knob::apply::PutBack>,
) -> Option<String> {
    let (pid, managed) =
        crate::daemon::status::running_daemon(&crate::daemon::state_path(&ctx.db))?;
    // The daemon's state names the host-wide knobs `host-wide` where a disk's name would be.
    let host = crate::daemon::manage::HOST_LABEL;
    let mut disks: Vec<&str> = put
        .filter_map(|p| {
            let d = p.device.as_deref().unwrap_or(host);
            managed
                .iter()
                .any(|(md, k, want)| md == d && *k == p.knob && *want != p.value)
                .then_some(d)
        })
        .collect();
    disks.sort_unstable_by_key(|d| (*d == host, *d));
    disks.dedup();
    if disks.is_empty() {
        return None;
    }
    let one = disks.len() == 1 && disks[0] != host;
    let names: Vec<&str> = disks
        .iter()
        .map(|d| if *d == host { "the host-wide knobs" } else { d })
        .collect();
    Some(format!(
        "note: the running daemon (pid {pid}) managed {}: it leaves {} alone now, neither \
         re-applying its sweet spot nor retuning it, until it restarts or reloads its config \
         (SIGHUP)\n",
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => names.join(""),
        },
        if one { "it" } else { "them" }
    ))
}

/// Sweeps what killed runs left, as root, and lists it in `out` ([`undo::sweep_leftovers`]).
fn sweep_leftovers(ctx: &Ctx, out: &mut String) {
    for line in undo::sweep_leftovers(&ctx.db, &ctx.root) {
        out.push_str(&line);
        out.push('\n');
    }
}
