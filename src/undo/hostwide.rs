//! `restore <DEVICE>` and the host-wide knobs (vm, CPU scheduler), which act on every device:
//! which of their open journal entries are that device's to put back, and which host-wide
//! knobs stay changed after it.
//!
//! A host-wide entry is the device's when `set <DEVICE>` or `tune --device <DEVICE> --apply`
//! alone journaled it: owner `set` or a tune's (`tune:<id>`, whose entries stay open only when
//! the tune left its sweet spot applied), journaled for that device ([`JournalEntry::for_identity`],
//! which a `set` of the same knob for another device clears), the only open entry of its file
//! (no other tune, set, bench, profile or daemon journaled it too: their originals are not
//! this command's to overwrite), and, for an exclusive pair (`dirty_ratio`/`dirty_bytes`:
//! writing one zeroes the other), its partner's open entry, if any, the device's too.
//! Anything else is left to `restore` of everything, which writes each file's oldest
//! original.

use crate::Result;
use crate::knob::ApplyOrder;
use crate::knob::catalogue::exclusive_partner;
use crate::knob::io::{KnobIo, read_knob, read_value};
use crate::lock::{self, Holder};
use crate::store::Store;
use crate::store::journal::JournalEntry;
use crate::sysroot::SysRoot;
use crate::types::Owner;
use std::path::Path;

/// True for the owners that change knobs for one device and leave them so: `set`, and a tune
/// (`tune:<id>`) that applied its sweet spot (`tune --device D --apply`).
fn for_one_device(owner: &Owner) -> bool {
    matches!(owner, Owner::Set | Owner::Tune(_))
}

/// The open host-wide entries under `root` that `set` or `tune --apply` alone journaled for
/// the device with `identity` (see the module docs): what `restore <DEVICE>` puts back.
/// Errors: the store's.
pub(crate) fn device_alone(
    store: &Store,
    root: &SysRoot,
    identity: &str,
) -> Result<Vec<JournalEntry>> {
    let open: Vec<JournalEntry> = store
        .journal_open(None, None)?
        .into_iter()
        .filter(|e| e.device.is_none() && under(root, e))
        .collect();
    let alone = |e: &JournalEntry| open.iter().filter(|o| o.path == e.path).count() == 1;
    let (mine, others): (Vec<JournalEntry>, Vec<JournalEntry>) =
        open.iter().cloned().partition(|e| {
            for_one_device(&e.owner) && e.for_identity.as_deref() == Some(identity) && alone(e)
        });
    let blocked = |knob: &str| others.iter().any(|o| o.knob == knob);
    Ok(mine
        .into_iter()
        .filter(|e| exclusive_partner(&e.knob).is_none_or(|p| !blocked(p)))
        .collect())
}

/// The host-wide knobs under `root` with open entries (of an owner not in `skip_owners`, a
/// knob not in `skip_knobs`) whose value now differs from their original, sorted: what stays
/// changed after `restore <DEVICE>`. A knob that cannot be read counts as changed.
/// Errors: the store's.
pub(crate) fn still_changed(
    io: &dyn KnobIo,
    store: &Store,
    root: &SysRoot,
    skip_owners: &[Owner],
    skip_knobs: &[String],
) -> Result<Vec<String>> {
    let mut out: Vec<String> = store
        .journal_open(None, None)?
        .into_iter()
        .filter(|e| e.device.is_none() && under(root, e))
        .filter(|e| !skip_owners.contains(&e.owner) && !skip_knobs.contains(&e.knob))
        .filter(|e| {
            let now = match e.order {
                // The features file is journaled whole (every flag as it was).
                ApplyOrder::SchedFeature => read_knob(io, &e.path),
                _ => read_value(io, &e.path, e.order, &e.knob),
            };
            !now.is_ok_and(|v| v.trim() == e.original.trim())
        })
        .map(|e| e.knob)
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// True when `e` is a knob file under `root`'s sysfs or procfs that a restore may write
/// ([`crate::knob::vet`]): entries of another tree are left alone, and rows refused are
/// neither read nor counted, as [`crate::knob::apply::restore_except`] does.
fn under(root: &SysRoot, e: &JournalEntry) -> bool {
    matches!(
        crate::knob::vet::vet(root, e),
        crate::knob::vet::VetVerdict::Here(_)
    )
}

/// For `restore <DEVICE>`, which locks `device` only: the first other device with open
/// entries whose lock another writer holds now (a bench measuring it), with the holder when
/// its lock file names it. The host-wide knobs act on that device too. Errors: the store's.
pub(crate) fn held_elsewhere(
    store: &Store,
    db: &Path,
    root: &SysRoot,
    device: &str,
) -> Result<Option<(String, Option<Holder>)>> {
    let mut names: Vec<String> = store
        .journal_open(None, None)?
        .into_iter()
        .filter_map(|e| e.device)
        .filter(|d| d != device)
        .collect();
    names.sort();
    names.dedup();
    for name in names {
        let Ok(d) = crate::device::find(root, &name) else {
            continue;
        };
        let path = lock::path(db, root, &d.identity);
        if lock::held(&path) {
            return Ok(Some((name, lock::holder(&path))));
        }
    }
    Ok(None)
}
