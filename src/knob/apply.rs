//! The journaled apply path and restore: the safe write path for every feature.
//!
//! `apply` validates the whole setting first (exit 2, nothing changed) and reads every original
//! the writes can change, then writes in kernel order and reads each value back. A write that
//! would change nothing is skipped and journals nothing; one that changes its knob first
//! journals, durably, the originals of every knob it can change (side effects included). `restore` writes the originals back in the same order and marks the entries
//! restored. Both go through [`KnobIo`] so unit tests can simulate the kernel on fake trees.

use super::io::{KnobIo, RealIo, parse_int, read_value, write_text};
use super::plan::{Write, plan, plan_host, rank};
use super::{ApplyOrder, KnobValue, Setting, catalogue};
use crate::device::{Device, identity::identity};
use crate::store::Store;
use crate::store::journal::{Entry, NewEntry};
use crate::sysroot::SysRoot;
use crate::{Error, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// One knob written by [`apply_with`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Change {
    /// Knob name.
    pub knob: String,
    /// The value before (as read; the active scheduler for `scheduler`).
    pub from: String,
    /// The value written and read back.
    pub to: String,
}

/// Applies `setting` to `device` (device knobs) and the host (vm and CPU-scheduler knobs),
/// journaling under `owner` (`"set"` or `"tune:<id>"`), durably before each write, every knob
/// that write can change; a knob already at its value is neither written nor journaled.
/// Order: scheduler → nr_requests → iosched → other queue → vm. Every value is validated first
/// (exit 2, nothing changed); each write is read back (NotHonoured on mismatch).
pub fn apply(
    store: &mut Store,
    root: &SysRoot,
    device: &Device,
    setting: &Setting,
    owner: &str,
) -> Result<()> {
    apply_with(&RealIo, store, root, device, setting, owner).map(|_| ())
}

/// Validates `setting` for `device` as [`apply`] would, writing and journaling nothing: the
/// same errors [`apply`] gives before its first write (bad input, exit 2; an unwritable
/// file, exit 1). `profile apply` checks every entry with it before it writes any.
pub fn check(root: &SysRoot, device: &Device, setting: &Setting) -> Result<()> {
    plan(&RealIo, root, device, setting).map(|_| ())
}

/// Applies a setting of host-wide knobs only (vm, CPU scheduler): `tune --host`, where no
/// device is involved. The same journal, order and read-back as [`apply`]; a device knob in
/// `setting` is bad input (exit 2, nothing changed).
pub fn apply_host(store: &mut Store, root: &SysRoot, setting: &Setting, owner: &str) -> Result<()> {
    apply_host_with(&RealIo, store, root, setting, owner).map(|_| ())
}

/// Validates a setting of host-wide knobs as [`apply_host`] would, writing and journaling
/// nothing, and returns its writes as shell commands (`echo TEXT > FILE` in apply order; a
/// feature flag as `X`/`NO_X` into `sched/features`): `profile apply --dry-run` prints them.
/// Errors: those [`apply_host`] gives before its first write.
pub fn check_host(root: &SysRoot, setting: &Setting) -> Result<Vec<String>> {
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
    owner: &str,
) -> Result<Vec<Change>> {
    let plan = plan_host(io, root, setting)?;
    execute(io, store, root, plan, owner, "the host")
}

/// [`apply`] through `io`, returning what changed (knobs already at their value are skipped).
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
    owner: &str,
) -> Result<Vec<Change>> {
    settle_foreign(io, store, root, device)?;
    let plan = plan(io, root, device, setting)?;
    execute(io, store, root, plan, owner, &device.name)
}

/// Settles the open entries under `device`'s kernel name that were journaled for another
/// device (a loop number attached to another file since, e.g. a killed `--scratch` run's):
/// written back first when their loop queue is still there ([`close_foreign`]), else closed.
/// So the plan then reads the queue's true originals, and they are not kept out of the
/// journal by an older open entry of the same file and owner. The caller holds `device`'s
/// lock. Errors: a write back that failed (nothing of `setting` was written then).
fn settle_foreign(
    io: &dyn KnobIo,
    store: &mut Store,
    root: &SysRoot,
    device: &Device,
) -> Result<()> {
    warn_stale(&store.journal_close_stale(root, &root.boot())?);
    let foreign: Vec<Entry> = store
        .journal_open(Some(&device.name), None)?
        .into_iter()
        .filter(|e| e.identity.as_deref() != Some(device.identity.as_str()))
        .collect();
    if foreign.is_empty() {
        return Ok(());
    }
    let mut r = Restorer {
        io,
        store,
        put: Vec::new(),
        first_err: None,
    };
    r.device(root, &device.name, foreign)?;
    match r.first_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Writes `plan` in order, reading each value back; before each write that changes its knob,
/// journals durably the originals of the knobs it can change ([`super::plan::Plan::before`]).
fn execute(
    io: &dyn KnobIo,
    store: &mut Store,
    root: &SysRoot,
    mut plan: super::plan::Plan,
    owner: &str,
    on: &str,
) -> Result<Vec<Change>> {
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
        changes.push(Change {
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

/// True when the knob already holds exactly `v` (no write needed).
fn same(v: &KnobValue, read: &str) -> bool {
    match v {
        KnobValue::Name(n) => read == n,
        KnobValue::Int(i) => parse_int(read) == Some(*i),
    }
}

/// True when `read` (a value as the kernel prints it) is what `w` asked for ([`holds`]).
fn honoured(w: &Write, read: &str) -> bool {
    let jiffies = catalogue::kept_in_jiffies(w.scheduler.as_deref(), &w.name);
    holds(&w.value, jiffies, read)
}

/// True when a knob that reads `read` holds `v`: equal, or, for a knob the kernel keeps in
/// `jiffies` ([`catalogue::kept_in_jiffies`]), `v` rounded up to a jiffy: above `v` by less
/// than [`catalogue::JIFFY_TOLERANCE_MS`] (0 stays 0). That is what a write of `v` reads back
/// as, so `verify`, `status` and the daemon judge drift as the write path judges
/// "honoured"; every other knob must read back exactly (bfq's `slice_idle` 8 is not 0).
pub fn holds(v: &KnobValue, jiffies: bool, read: &str) -> bool {
    match v {
        KnobValue::Name(n) => read == n,
        KnobValue::Int(v) => parse_int(read).is_some_and(|r| {
            r == *v || (jiffies && *v > 0 && r > *v && r - v < catalogue::JIFFY_TOLERANCE_MS)
        }),
    }
}

/// True when `knob`, as discovered now, holds `v` ([`holds`], with the knob's own jiffies
/// fact): the one judgement of drift for `verify`, `status` and the daemon.
pub fn knob_holds(knob: &super::Knob, v: &KnobValue) -> bool {
    let jiffies = catalogue::kept_in_jiffies(knob.scheduler.as_deref(), &knob.name);
    holds(v, jiffies, &knob.current.to_string())
}

/// Writes `"{v}\n"` (`X`/`NO_X` for a feature flag), reads it back, and fails unless the
/// kernel honoured it.
fn write_checked(io: &dyn KnobIo, w: &Write) -> Result<()> {
    let value = w.value.to_string();
    io.write(
        &w.path,
        &format!("{}\n", write_text(w.order, &w.name, &w.value)),
    )
    .map_err(|source| Error::KnobWrite {
        knob: w.name.clone(),
        value: value.clone(),
        path: w.path.clone(),
        source,
    })?;
    let read = read_value(io, &w.path, w.order, &w.name)?;
    if !honoured(w, &read) {
        return Err(Error::NotHonoured {
            knob: w.name.clone(),
            wrote: value,
            read,
        });
    }
    Ok(())
}

/// Restores open journal entries in apply order and marks them restored. `device` limits it to
/// one device (kernel name); `owner` to one owner (a tune restores only its own entries). With
/// several open entries for one file, the oldest (the true original) is written; an owner's
/// entry under a later open entry of another owner is not written but hands its original
/// down to that entry ([`restore_except`]'s rule), so a full `restore` still writes the value
/// from before sweetspot first touched the knob.
/// Returns how many knobs were written back.
pub fn restore(
    store: &mut Store,
    root: &SysRoot,
    device: Option<&str>,
    owner: Option<&str>,
) -> Result<usize> {
    restore_with(&RealIo, store, root, device, owner)
}

/// [`restore`] through `io`.
///
/// Per device: the scheduler first (recreating its `iosched/` with defaults), then
/// `nr_requests`, then the journaled iosched values of the scheduler now active (entries of any
/// other scheduler are obsolete and only marked), then other queue knobs; host vm knobs last.
/// Of an exclusive pair (`dirty_ratio`/`dirty_bytes`) only the non-zero member is written.
/// `wbt_lat_usec` gets its journaled number (never -1). Entries of a loop device detached
/// (or attached to another file) since are written back to its queue, which outlives
/// `losetup -d`, unless the file attached now has its own open entry of that knob. Entries
/// of a device that is gone or whose kernel name is now another disk (one warning per
/// device, saying which), and
/// entries journaled in an earlier boot (their `boot_id` is not this boot's: the kernel reset
/// them), are marked restored with a warning, not written. Entries
/// outside `root` (another sysfs/procfs tree) are left alone. A failed knob stays open; the
/// first error is returned after the rest were tried.
pub fn restore_with(
    io: &dyn KnobIo,
    store: &mut Store,
    root: &SysRoot,
    device: Option<&str>,
    owner: Option<&str>,
) -> Result<usize> {
    restore_except(io, store, root, device, owner, &|_| false).map(|p| p.len())
}

/// One knob [`restore_except`] put back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PutBack {
    /// The device's kernel name; `None` for a host-wide vm knob.
    pub device: Option<String>,
    /// Knob name.
    pub knob: String,
    /// The original value written back.
    pub value: String,
}

/// [`restore_with`], leaving alone (open, unwritten) every entry for which `skip` is true:
/// `sweetspot restore` skips what a tune that is still running owns. Returns the knobs put
/// back.
///
/// The undo journal's rule: after a full `restore`, every knob is back at its value from before
/// sweetspot first touched it. So when only some entries of a file are restored (one owner's,
/// or all but those `skip` keeps), an entry lying under a later open entry of another owner is
/// not written (the later owner's value stays on the knob) but closed, its original handed down
/// to that later entry (`hand_down`); only entries at the top of their file's stack are
/// written.
pub fn restore_except(
    io: &dyn KnobIo,
    store: &mut Store,
    root: &SysRoot,
    device: Option<&str>,
    owner: Option<&str>,
    skip: &dyn Fn(&Entry) -> bool,
) -> Result<Vec<PutBack>> {
    warn_stale(&store.journal_close_stale(root, &root.boot())?);
    let entries: Vec<Entry> = store
        .journal_open(device, owner)?
        .into_iter()
        .filter(|e| e.path.starts_with(&root.sys) || e.path.starts_with(&root.proc))
        .filter(|e| !skip(e))
        .collect();
    let entries = hand_down(store, entries)?;
    let mut groups: BTreeMap<(bool, Option<String>), Vec<Entry>> = BTreeMap::new();
    for e in entries {
        groups
            .entry((e.device.is_none(), e.device.clone()))
            .or_default()
            .push(e);
    }
    let mut r = Restorer {
        io,
        store,
        put: Vec::new(),
        first_err: None,
    };
    for ((_, dev), group) in groups {
        match dev {
            Some(name) => r.device(root, &name, group)?,
            None => r.vm(group)?,
        }
    }
    match r.first_err {
        Some(e) => Err(e),
        None => Ok(r.put),
    }
}

/// The rule that keeps the true original of a file when only some of its open entries are
/// restored (one owner's: a tune's, the daemon's `profile`; or all but a running tune's). The
/// open entries of one file (and one device identity) form a stack by id, each holding the
/// value before its owner's change; the knob's value now belongs to the newest. Of `entries`
/// (those to restore), a run lying under a later open entry that is not restored now is not
/// written: that later owner's value stays on the knob, the run is closed, and its oldest
/// original is handed down to the later entry (its original now), so a later full `restore`
/// writes the true original, not a value an earlier owner wrote. (An iosched entry of another
/// scheduler gets nothing: its scheduler's values were not these.) Only the runs at the top of
/// their stacks are returned, to be written as before: each file's oldest of them.
///
/// Example: `profile` journals fifo_batch 16 and writes 8, `set` journals 8 and writes 4;
/// restoring `profile` alone leaves 4 and gives `set`'s entry the original 16; `restore`
/// then writes 16 (without this rule: `profile`'s restore wrote 16 over the admin's 4, and
/// the full restore wrote `set`'s 8, the value the daemon had set).
fn hand_down(store: &mut Store, entries: Vec<Entry>) -> Result<Vec<Entry>> {
    if entries.is_empty() {
        return Ok(entries);
    }
    let chosen: std::collections::BTreeSet<i64> = entries.iter().map(|e| e.id).collect();
    let open = store.journal_open(None, None)?;
    let mut closed: Vec<i64> = Vec::new();
    let mut originals: Vec<(i64, String)> = Vec::new();
    let mut below: Vec<i64> = Vec::new();
    let mut stacks: BTreeMap<(std::path::PathBuf, Option<String>), Vec<&Entry>> = BTreeMap::new();
    for e in &open {
        if entries
            .iter()
            .any(|c| c.path == e.path && c.identity == e.identity)
        {
            stacks
                .entry((e.path.clone(), e.identity.clone()))
                .or_default()
                .push(e);
        }
    }
    for stack in stacks.values() {
        // `journal_open` is ordered by id: oldest first.
        let mut run: Vec<&Entry> = Vec::new();
        for e in stack {
            if chosen.contains(&e.id) {
                run.push(e);
                continue;
            }
            let Some(oldest) = run.first() else {
                continue;
            };
            if oldest.scheduler == e.scheduler {
                tracing::info!(
                    "{}{}: {}'s original {} handed down to the later entry of {}, whose value \
                     stays on the knob",
                    e.device
                        .as_deref()
                        .map_or(String::new(), |d| format!("{d} ")),
                    e.knob,
                    oldest.owner,
                    oldest.original.trim(),
                    e.owner
                );
                originals.push((e.id, oldest.original.clone()));
            }
            closed.extend(run.iter().map(|r| r.id));
            below.extend(run.iter().map(|r| r.id));
            run.clear();
        }
    }
    if closed.is_empty() {
        return Ok(entries);
    }
    store.journal_hand_down(&closed, &originals)?;
    Ok(entries
        .into_iter()
        .filter(|e| !below.contains(&e.id))
        .collect())
}

/// Says which journal entries were closed because an earlier boot recorded them.
fn warn_stale(stale: &[Entry]) {
    if stale.is_empty() {
        return;
    }
    tracing::warn!(
        "{} journaled knobs were changed in an earlier boot; the kernel reset them at boot, so \
         they are marked restored, not written ({})",
        stale.len(),
        stale
            .iter()
            .map(|e| e.path.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// Sorts the entries of `entries` (all under kernel name `name`) journaled for another device
/// than `now` (the identity `name` has now; `None` when it is gone), and returns those to
/// restore: the entries of `now`, and those of a loop device whose queue is still there.
///
/// A loop queue outlives `losetup -d` and keeps the last user's values: the next file
/// attached to that number inherits them, so sweetspot's value would stay on the queue. The
/// journaled originals of an earlier backing file are therefore written back to the same queue
/// files (the caller holds the lock of the device under `name` now), unless an open entry of
/// `now` has the same file: that one is the original to restore, and the earlier ones are
/// closed. The rest are closed (marked restored, unwritten), with one warning per device
/// saying why: their device is gone, or the name is now another disk (a new queue).
fn close_foreign(
    store: &mut Store,
    root: &SysRoot,
    name: &str,
    now: Option<&str>,
    entries: Vec<Entry>,
) -> Result<Vec<Entry>> {
    let (mut keep, foreign): (Vec<Entry>, Vec<Entry>) = entries
        .into_iter()
        .partition(|e| now.is_some() && e.identity.as_deref() == now);
    if foreign.is_empty() {
        return Ok(keep);
    }
    let queue = now.is_some() && root.block_dev(name).join("queue").is_dir();
    let open = store.journal_open(Some(name), None)?;
    let owned_now = |e: &Entry| {
        open.iter()
            .any(|o| o.path == e.path && now.is_some() && o.identity.as_deref() == now)
    };
    let (back, foreign): (Vec<Entry>, Vec<Entry>) = foreign.into_iter().partition(|e| {
        queue
            && e.identity
                .as_deref()
                .is_some_and(|i| i.starts_with("loop:"))
            && !owned_now(e)
    });
    if !back.is_empty() {
        let mut olds: Vec<&str> = back.iter().filter_map(|e| e.identity.as_deref()).collect();
        olds.sort_unstable();
        olds.dedup();
        tracing::info!(
            "{name}: writing back {} journaled knobs of {} to its queue, which outlives \
             `losetup -d` ({})",
            back.len(),
            olds.join(", "),
            olds.iter()
                .map(|o| why_unrestorable(name, Some(o), now))
                .collect::<Vec<_>>()
                .join("; ")
        );
        keep.extend(back);
        keep.sort_by_key(|e| e.id);
    }
    let mut olds: Vec<Option<String>> = foreign.iter().map(|e| e.identity.clone()).collect();
    olds.sort();
    olds.dedup();
    for old in olds {
        // Every owner's entries of that device at once, but not those written back above.
        let ids: Vec<i64> = open
            .iter()
            .filter(|e| e.identity == old && !keep.iter().any(|k| k.id == e.id))
            .filter(|e| {
                !(queue && old.as_deref().is_some_and(|i| i.starts_with("loop:")) && !owned_now(e))
            })
            .map(|e| e.id)
            .collect();
        if ids.is_empty() {
            continue;
        }
        let why = if queue && old.as_deref().is_some_and(|i| i.starts_with("loop:")) {
            format!(
                "{}, whose own journaled originals of those files are the ones to restore",
                why_unrestorable(name, old.as_deref(), now)
            )
        } else {
            format!(
                "{}, so there is nothing to restore them on",
                why_unrestorable(name, old.as_deref(), now)
            )
        };
        tracing::warn!(
            "{name}: {} journaled knobs of {} closed without writing them back: {why}",
            ids.len(),
            old.as_deref().unwrap_or("an unrecorded device")
        );
        store.journal_mark_restored(&ids)?;
    }
    Ok(keep)
}

/// Why the entries journaled for device `old` under kernel name `name` cannot be restored,
/// `name` being `now` (its identity now; `None`: no such device): for `close_foreign`'s
/// warning. A loop number without a backing file reads as `virtual:<name>`.
pub fn why_unrestorable(name: &str, old: Option<&str>, now: Option<&str>) -> String {
    let file = old.and_then(|o| o.strip_prefix("loop:"));
    let gone = |f: &str| {
        if Path::new(f).exists() {
            String::new()
        } else {
            " (that file is gone)".to_string()
        }
    };
    match (now, file) {
        (None, _) => format!("{name} is gone"),
        (Some(n), Some(f)) if n.starts_with("loop:") => {
            format!("{name} is now attached to another file ({n}){}", gone(f))
        }
        (Some(_), Some(f)) => format!("{name} is no longer attached to {f}{}", gone(f)),
        (Some(n), None) => format!("{name} is now another disk ({n})"),
    }
}

struct Restorer<'a> {
    io: &'a dyn KnobIo,
    store: &'a mut Store,
    put: Vec<PutBack>,
    first_err: Option<Error>,
}

/// Open entries of one path: the one to write (oldest) and every id it settles.
struct PathGroup {
    entries: Vec<Entry>,
}

impl PathGroup {
    fn ids(&self) -> Vec<i64> {
        self.entries.iter().map(|e| e.id).collect()
    }
}

fn by_path(entries: Vec<Entry>) -> Vec<PathGroup> {
    let mut out: Vec<PathGroup> = Vec::new();
    for e in entries {
        match out.iter_mut().find(|g| g.entries[0].path == e.path) {
            Some(g) => g.entries.push(e),
            None => out.push(PathGroup { entries: vec![e] }),
        }
    }
    out.sort_by_key(|g| {
        (
            g.entries[0].order,
            rank(&g.entries[0].knob),
            g.entries[0].id,
        )
    });
    out
}

impl Restorer<'_> {
    fn device(&mut self, root: &SysRoot, name: &str, entries: Vec<Entry>) -> Result<()> {
        let now_id = root
            .block_dev(name)
            .join("dev")
            .exists()
            .then(|| identity(root, name));
        let entries = close_foreign(self.store, root, name, now_id.as_deref(), entries)?;
        if entries.is_empty() {
            return Ok(());
        }
        let groups = by_path(entries);
        let sched_path = root.block_dev(name).join("queue/scheduler");
        let mut sched_failed = false;
        for g in groups {
            let e = &g.entries[0];
            if e.order == ApplyOrder::Iosched {
                if sched_failed {
                    continue;
                }
                let active = read_value(self.io, &sched_path, ApplyOrder::Scheduler, "scheduler")?;
                match g
                    .entries
                    .iter()
                    .find(|x| x.scheduler.as_deref() == Some(&active))
                {
                    Some(x) if x.path.exists() => {
                        let x = x.clone();
                        self.put_back(&x, &g.ids());
                    }
                    _ => {
                        tracing::debug!("{}: belongs to another scheduler; obsolete", e.knob);
                        self.store.journal_mark_restored(&g.ids())?;
                    }
                }
                continue;
            }
            let ok = self.put_back(e, &g.ids());
            if e.order == ApplyOrder::Scheduler && !ok {
                sched_failed = true;
            }
        }
        Ok(())
    }

    fn vm(&mut self, entries: Vec<Entry>) -> Result<()> {
        let groups = by_path(entries);
        let original = |n: &str| {
            groups
                .iter()
                .find(|g| g.entries[0].knob == n)
                .map(|g| g.entries[0].original.clone())
        };
        for g in &groups {
            let e = &g.entries[0];
            if e.original.trim() == "0"
                && let Some(partner) = catalogue::exclusive_partner(&e.knob)
            {
                let partner_zero = original(partner).is_none_or(|p| p.trim() == "0");
                // Only the non-zero member is written; writing it zeroes this one. When both
                // are zero, the ratio member is written (0 bytes is EINVAL).
                if !partner_zero || catalogue::is_bytes_member(&e.knob) {
                    self.store.journal_mark_restored(&g.ids())?;
                    continue;
                }
            }
            self.put_back(e, &g.ids());
        }
        Ok(())
    }

    /// Writes `e.original` back (unless already there), verifies it, and marks `ids` restored.
    /// Returns false (and keeps the first error) when it failed.
    fn put_back(&mut self, e: &Entry, ids: &[i64]) -> bool {
        if e.order == ApplyOrder::SchedFeature {
            return self.put_back_features(e, ids);
        }
        let res = (|| {
            let value = match e.order {
                ApplyOrder::Scheduler => KnobValue::Name(e.original.clone()),
                _ => KnobValue::Int(parse_int(&e.original).ok_or_else(|| {
                    Error::Failed(format!(
                        "journal: {}: bad original '{}'",
                        e.knob, e.original
                    ))
                })?),
            };
            let w = Write {
                name: e.knob.clone(),
                path: e.path.clone(),
                value,
                order: e.order,
                scheduler: e.scheduler.clone(),
            };
            if !same(&w.value, &read_value(self.io, &w.path, w.order, &w.name)?) {
                write_checked(self.io, &w)?;
            }
            self.store.journal_mark_restored(ids)
        })();
        match res {
            Ok(()) => {
                self.put.push(PutBack {
                    device: e.device.clone(),
                    knob: e.knob.clone(),
                    value: e.original.trim().to_string(),
                });
                true
            }
            Err(err) => {
                tracing::warn!("restoring {}: {err}", e.knob);
                self.first_err.get_or_insert(err);
                false
            }
        }
    }
}

impl Restorer<'_> {
    /// The features file's journal entry holds the whole file as it was (every flag): each
    /// flag that differs now is written back (`X` or `NO_X`) and read back. A flag this
    /// kernel no longer lists is skipped.
    fn put_back_features(&mut self, e: &Entry, ids: &[i64]) -> bool {
        let res = (|| {
            let now = super::io::read_knob(self.io, &e.path)?;
            let mut written = Vec::new();
            for (flag, on) in super::features::parse_features(&e.original) {
                let Some(state) = super::features::feature_state(&now, &flag) else {
                    continue;
                };
                if (state == "1") == on {
                    continue;
                }
                let w = Write {
                    name: flag.clone(),
                    path: e.path.clone(),
                    value: KnobValue::Int(i64::from(on)),
                    order: ApplyOrder::SchedFeature,
                    scheduler: None,
                };
                write_checked(self.io, &w)?;
                written.push(super::features::feature_write(&flag, &w.value));
            }
            self.store.journal_mark_restored(ids)?;
            Ok::<_, Error>(written)
        })();
        match res {
            Ok(written) => {
                self.put.push(PutBack {
                    device: None,
                    knob: e.knob.clone(),
                    value: if written.is_empty() {
                        "unchanged".into()
                    } else {
                        written.join(" ")
                    },
                });
                true
            }
            Err(err) => {
                tracing::warn!("restoring {}: {err}", e.path.display());
                self.first_err.get_or_insert(err);
                false
            }
        }
    }
}
