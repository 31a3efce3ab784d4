//! The journaled apply path: the safe write path for every feature.
//!
//! `apply` validates the whole setting first (exit 2, nothing changed) and reads every original
//! the writes can change, then writes in kernel order and reads each value back. A write that
//! would change nothing is skipped and journals nothing; one that changes its knob first
//! journals, durably, the originals of every knob it can change (side effects included).
//! [`super::restore`] writes the originals back in the same order and marks the entries
//! restored (its items are re-exported here). Both go through [`KnobIo`] so unit tests can
//! simulate the kernel on fake trees.

use super::io::{KnobIo, RealIo, read_value, write_text};
use super::restore::{settle_foreign, warn_stale};
use super::validate::{plan, plan_host};
use super::write::{same, write_checked};
use super::{ApplyOrder, Setting};
use crate::device::Device;
use crate::store::Store;
use crate::store::journal::NewEntry;
use crate::sysroot::SysRoot;
use crate::types::Owner;
use crate::{Error, Result};
use serde::Serialize;

#[cfg(test)]
pub(crate) use super::write::holds;
pub(crate) use super::write::knob_holds;

pub(crate) use super::restore::{PutBack, restore, restore_except};
#[cfg(test)]
pub(crate) use super::restore::{restore_with, why_unrestorable};

/// One knob written by [`apply_with`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KnobChange {
    /// Knob name.
    pub knob: String,
    /// The value before (as read; the active scheduler for `scheduler`).
    pub from: String,
    /// The value written and read back.
    pub to: String,
}

/// Applies `setting` to `device` (device knobs) and the host (vm and CPU-scheduler knobs),
/// journaling under `owner` (`set`, `tune:<id>`, …), durably before each write, every knob
/// that write can change; a knob already at its value is neither written nor journaled.
/// Order: scheduler → nr_requests → iosched → other queue → vm. Every value is validated first
/// (exit 2, nothing changed); each write is read back (NotHonoured on mismatch).
pub(crate) fn apply(
    store: &mut Store,
    root: &SysRoot,
    device: &Device,
    setting: &Setting,
    owner: &Owner,
) -> Result<()> {
    apply_with(&RealIo, store, root, device, setting, owner).map(|_| ())
}

/// Validates `setting` for `device` as [`apply`] would, writing and journaling nothing: the
/// same errors [`apply`] gives before its first write (bad input, exit 2; an unwritable
/// file, exit 1). `profile apply` checks every entry with it before it writes any.
pub(crate) fn check(root: &SysRoot, device: &Device, setting: &Setting) -> Result<()> {
    plan(&RealIo, root, device, setting).map(|_| ())
}

/// Applies a setting of host-wide knobs only (vm, CPU scheduler): `tune --host`, where no
/// device is involved. The same journal, order and read-back as `apply`; a device knob in
/// `setting` is bad input (exit 2, nothing changed).
pub fn apply_host(
    store: &mut Store,
    root: &SysRoot,
    setting: &Setting,
    owner: &Owner,
) -> Result<()> {
    apply_host_with(&RealIo, store, root, setting, owner).map(|_| ())
}

/// Validates a setting of host-wide knobs as [`apply_host`] would, writing and journaling
/// nothing, and returns its writes as shell commands (`echo TEXT > FILE` in apply order; a
/// feature flag as `X`/`NO_X` into `sched/features`): `profile apply --dry-run` prints them.
/// Errors: those [`apply_host`] gives before its first write.
pub(crate) fn check_host(root: &SysRoot, setting: &Setting) -> Result<Vec<String>> {
    let plan = plan_host(&RealIo, root, setting)?;
    Ok(plan
        .writes
        .iter()
        .map(|w| {
            format!(
                "echo {} > {}",
                write_text(w.order, &w.name, &w.value),
                w.path.display()
            )
        })
        .collect())
}

/// [`apply_host`] through `io`, returning what changed.
pub fn apply_host_with(
    io: &dyn KnobIo,
    store: &mut Store,
    root: &SysRoot,
    setting: &Setting,
    owner: &Owner,
) -> Result<Vec<KnobChange>> {
    let plan = plan_host(io, root, setting)?;
    execute(io, store, root, plan, owner, "the host")
}

/// `apply` through `io`, returning what changed (knobs already at their value are skipped).
///
/// Errors: [`Error::BadInput`] before anything is written; [`Error::KnobWrite`] when the kernel
/// refuses a write (EROFS, EACCES, EINVAL: earlier writes stay applied and journaled, so
/// `restore` undoes them); [`Error::NotHonoured`] when a value reads back differently.
pub fn apply_with(
    io: &dyn KnobIo,
    store: &mut Store,
    root: &SysRoot,
    device: &Device,
    setting: &Setting,
    owner: &Owner,
) -> Result<Vec<KnobChange>> {
    settle_foreign(io, store, root, device)?;
    let plan = plan(io, root, device, setting)?;
    execute(io, store, root, plan, owner, &device.name)
}

/// Writes `plan` in order, reading each value back; before each write that changes its knob,
/// journals durably the originals of the knobs it can change ([`super::validate::Plan::before`]).
fn execute(
    io: &dyn KnobIo,
    store: &mut Store,
    root: &SysRoot,
    mut plan: super::validate::Plan,
    owner: &Owner,
    on: &str,
) -> Result<Vec<KnobChange>> {
    // Originals of an earlier boot are stale; those read now carry this boot's id.
    let boot = root.boot();
    warn_stale(&store.journal_close_stale(root, &boot)?);
    for e in &mut plan.journal {
        e.boot_id.clone_from(&boot.id);
    }
    // Journaled lazily: a write that changes nothing journals nothing (`restore` must not
    // later overwrite a value sweetspot never wrote); one that does records, durably before
    // it writes, the originals (read before the first write) of every knob it can change.
    let mut journaled = vec![false; plan.journal.len()];
    let mut changes = Vec::new();
    for (w, before) in plan.writes.iter().zip(&plan.before) {
        if w.order == ApplyOrder::Iosched && !w.path.exists() {
            // This kernel's scheduler lacks the file (a knob of another version): ENOENT, as
            // the write would give, so a tune marks the setting infeasible and goes on.
            tracing::debug!(
                "{}: scheduler {} has no iosched/{} on {}",
                w.name,
                w.scheduler.as_deref().unwrap_or("?"),
                w.name,
                on
            );
            return Err(Error::KnobWrite {
                knob: w.name.clone(),
                value: w.value.to_string(),
                path: w.path.clone(),
                source: std::io::Error::from_raw_os_error(libc::ENOENT),
            });
        }
        let from = read_value(io, &w.path, w.order, &w.name)?;
        if same(&w.value, &from) {
            // Nothing journaled; an open entry of this owner for another device's command
            // (a host-wide knob) is shared now, as a write would make it.
            let mine: Vec<NewEntry> = before.iter().map(|&i| plan.journal[i].clone()).collect();
            store.journal_share(owner, &mine)?;
            continue;
        }
        let due: Vec<NewEntry> = before
            .iter()
            .filter(|&&i| !std::mem::replace(&mut journaled[i], true))
            .map(|&i| plan.journal[i].clone())
            .collect();
        if !due.is_empty() {
            store.journal_record(owner, &due)?;
        }
        write_checked(io, w)?;
        changes.push(KnobChange {
            knob: w.name.clone(),
            from,
            to: w.value.to_string(),
        });
        hold_for_crash_tests();
    }
    Ok(changes)
}

/// Environment variable: milliseconds to pause after each knob write. A testing aid only: the
/// crash test SIGKILLs a `set` between two writes, then restores from a new process.
pub const HOLD_ENV: &str = "SWEETSPOT_HOLD_AFTER_WRITE_MS";

fn hold_for_crash_tests() {
    if let Some(ms) = std::env::var(HOLD_ENV).ok().and_then(|v| v.parse().ok()) {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}
