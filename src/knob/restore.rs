//! `restore`: puts journaled originals back, in kernel order, and marks their entries
//! restored. The undo journal's rules live here: the oldest open entry of a file is its true
//! original; a partial restore hands an original down to a later owner's entry instead of
//! writing it (`restore_except`); entries of a loop device detached since are written back
//! to its queue, those of a device that is gone are closed unwritten (`close_foreign`).
//!
//! The journal is not trusted to name a file or a value: every row is re-validated before it
//! is written ([`super::vet`]: its file rebuilt from the catalogue under the run's roots, its
//! original parsed in the knob's domain), and so is every row read back from the database
//! ([`crate::store::journal`] skips a malformed one). A row that fails is reported on stderr
//! (row id, knob, why), skipped, and the rest restored; the restore then fails (exit 1).

use super::io::{KnobIo, RealIo, parse_int, read_value};
use super::validate::{Write, rank};
use super::vet::{Refused, VetVerdict, vet};
use super::write::{same, write_checked};
use super::{ApplyOrder, KnobValue, catalogue};
use crate::device::{Device, identity::identity};
use crate::store::Store;
use crate::store::journal::JournalEntry;
use crate::sysroot::SysRoot;
use crate::types::Owner;
use crate::{Error, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Settles the open entries under `device`'s kernel name that were journaled for another
/// device (a loop number attached to another file since, e.g. a killed `--scratch` run's):
/// written back first when their loop queue is still there ([`close_foreign`]), else closed.
/// So the plan then reads the queue's true originals, and they are not kept out of the
/// journal by an older open entry of the same file and owner. A row that fails
/// re-validation ([`super::vet`]) is reported and skipped, not written, and does not fail
/// the command (it is not its row; `restore` fails for it). The caller holds `device`'s lock.
/// Errors: a write back that failed (nothing of `setting` was written then).
pub(super) fn settle_foreign(
    io: &dyn KnobIo,
    store: &mut Store,
    root: &SysRoot,
    device: &Device,
) -> Result<()> {
    warn_stale(&store.journal_close_stale(root, &root.boot())?);
    let mut refused = Vec::new();
    let foreign = vetted(
        root,
        store.journal_open(Some(&device.name), None)?,
        &|e| e.identity.as_deref() == Some(device.identity.as_str()),
        &mut refused,
    );
    // Reported and skipped: not `set`'s to fail for (`restore` fails for them).
    report(store, &refused);
    if foreign.is_empty() {
        return Ok(());
    }
    // A write to this device now: its queue gets the earlier file's originals first, even
    // when it serves another file (the caller is about to change that file's queue anyway).
    let mut r = Restorer {
        io,
        store,
        put: Vec::new(),
        first_err: None,
        into_other_file: true,
    };
    r.device(root, &device.name, foreign)?;
    match r.first_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Restores open journal entries in apply order and marks them restored. `device` limits it to
/// one device (kernel name); `owner` to one owner (a tune restores only its own entries). With
/// several open entries for one file, the oldest (the true original) is written; an owner's
/// entry under a later open entry of another owner is not written but hands its original
/// down to that entry ([`restore_except`]'s rule), so a full `restore` still writes the value
/// from before sweetspot first touched the knob.
/// Returns how many knobs were written back.
pub(crate) fn restore(
    store: &mut Store,
    root: &SysRoot,
    device: Option<&str>,
    owner: Option<&Owner>,
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
/// since are written back to its queue, which outlives `losetup -d`, while the loop number
/// serves no file; once it serves another file they are closed unwritten, with a warning
/// naming that file and the originals. Entries
/// of a device that is gone or whose kernel name is now another disk (one warning per
/// device, saying which), and
/// entries journaled in an earlier boot (their `boot_id` is not this boot's: the kernel reset
/// them), are marked restored with a warning, not written. Entries
/// outside `root` (another sysfs/procfs tree) are left alone. A row that fails re-validation
/// ([`super::vet`]) or cannot be read is reported, skipped and left open. A failed knob stays
/// open; the first error (or, after the rest, [`Error::Failed`] for refused rows) is returned
/// after the rest were tried.
pub(crate) fn restore_with(
    io: &dyn KnobIo,
    store: &mut Store,
    root: &SysRoot,
    device: Option<&str>,
    owner: Option<&Owner>,
) -> Result<usize> {
    restore_except(io, store, root, device, owner, &|_| false).map(|p| p.len())
}

/// One knob [`restore_except`] put back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct PutBack {
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
///
/// Errors: a journal row refused ([`restore_vetted`]: reported, skipped, the rest restored) is
/// [`Error::Failed`] once the rest is done; otherwise the first failed write's.
pub(crate) fn restore_except(
    io: &dyn KnobIo,
    store: &mut Store,
    root: &SysRoot,
    device: Option<&str>,
    owner: Option<&Owner>,
    skip: &dyn Fn(&JournalEntry) -> bool,
) -> Result<Vec<PutBack>> {
    let done = restore_vetted(io, store, root, device, owner, skip)?;
    match done.refused.len() {
        0 => Ok(done.put),
        n => Err(refused_error(n)),
    }
}

/// The error of a restore that refused `n` journal rows (each reported on stderr before).
pub(crate) fn refused_error(n: usize) -> Error {
    Error::Failed(format!(
        "{n} journal row{} refused and left open (see above): not written by sweetspot, or \
         damaged",
        if n == 1 { "" } else { "s" }
    ))
}

/// What [`restore_vetted`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Restore {
    /// The knobs put back.
    pub put: Vec<PutBack>,
    /// The journal rows refused (see [`super::vet`]) and those unreadable
    /// ([`Store::journal_open_malformed`]), each reported on stderr, skipped and left open.
    pub refused: Vec<Refused>,
}

/// [`restore_except`], returning the rows it refused instead of failing for them: every
/// selected open row (of `device` and `owner`, not `skip`ped) is re-validated first
/// ([`vet`]). A row refused, or one the store cannot read, is reported on stderr (row id,
/// knob, why; once per process), skipped and left open; the rest are restored. A row under
/// other roots with a knob file's shape is left alone, as before.
/// Errors: the first failed write's, after the rest were tried; the store's.
pub(crate) fn restore_vetted(
    io: &dyn KnobIo,
    store: &mut Store,
    root: &SysRoot,
    device: Option<&str>,
    owner: Option<&Owner>,
    skip: &dyn Fn(&JournalEntry) -> bool,
) -> Result<Restore> {
    warn_stale(&store.journal_close_stale(root, &root.boot())?);
    let mut refused = malformed(store, device, owner)?;
    let entries = vetted(root, store.journal_open(device, owner)?, skip, &mut refused);
    report(store, &refused);
    let entries = hand_down(store, root, entries)?;
    let mut groups: BTreeMap<(bool, Option<String>), Vec<JournalEntry>> = BTreeMap::new();
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
        into_other_file: false,
    };
    for ((_, dev), group) in groups {
        match dev {
            Some(name) => r.device(root, &name, group)?,
            None => r.vm(group)?,
        }
    }
    match r.first_err {
        Some(e) => Err(e),
        None => Ok(Restore {
            put: r.put,
            refused,
        }),
    }
}

/// The open rows the store cannot read ([`Store::journal_open_malformed`]) that a restore of
/// `device` and `owner` is asked about: of that owner, and of that device or one whose device
/// cannot be read (a restore of one owner, a killed writer's, leaves unreadable owners to
/// `restore` of everything).
fn malformed(store: &Store, device: Option<&str>, owner: Option<&Owner>) -> Result<Vec<Refused>> {
    Ok(store
        .journal_open_malformed()?
        .into_iter()
        .filter(|b| device.is_none() || b.device.is_none() || b.device.as_deref() == device)
        .filter(|b| owner.is_none_or(|o| b.owner.as_deref() == Some(o.to_string().as_str())))
        .map(|b| Refused {
            id: b.id,
            knob: b.knob.unwrap_or_else(|| "?".into()),
            why: b.why,
        })
        .collect())
}

/// The rows of `open` (those `skip` leaves) that may be written here, each with its file
/// rebuilt from the catalogue, never the row's ([`vet`]); rows under other roots are left
/// out, refused rows added to `refused`. A row of an owner sweetspot does not write
/// ([`Owner::Unknown`]) is refused: whose change it undoes is unknown.
fn vetted(
    root: &SysRoot,
    open: Vec<JournalEntry>,
    skip: &dyn Fn(&JournalEntry) -> bool,
    refused: &mut Vec<Refused>,
) -> Vec<JournalEntry> {
    let mut here = Vec::new();
    for mut e in open.into_iter().filter(|e| !skip(e)) {
        if let Owner::Unknown(text) = &e.owner {
            let why = crate::types::owner::Unknown {
                what: "journal owner",
                text: text.clone(),
            };
            refused.push(Refused {
                id: e.id,
                knob: e.knob,
                why: why.to_string(),
            });
            continue;
        }
        match vet(root, &e) {
            VetVerdict::Here(path) => {
                e.path = path;
                here.push(e);
            }
            VetVerdict::Elsewhere(_) => {}
            VetVerdict::Refused(why) => refused.push(Refused {
                id: e.id,
                knob: e.knob,
                why,
            }),
        }
    }
    here
}

/// Reports each refused row on stderr, once per process and database (a command may restore
/// several times: killed tunes first, then the rest).
fn report(store: &Store, refused: &[Refused]) {
    static SAID: std::sync::Mutex<Vec<(std::path::PathBuf, i64)>> =
        std::sync::Mutex::new(Vec::new());
    let mut said = SAID
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for r in refused {
        let key = (store.path().to_path_buf(), r.id);
        if !said.contains(&key) {
            tracing::error!("{r}");
            said.push(key);
        }
    }
}

/// The open entries of `open` that a restore under `root` may write ([`vet`]): the others
/// take no part in the journal's rules (no stack, no hand-down, no foreign loop entry).
fn trusted(root: &SysRoot, open: Vec<JournalEntry>) -> Vec<JournalEntry> {
    open.into_iter()
        .filter(|e| matches!(vet(root, e), VetVerdict::Here(_)))
        .collect()
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
fn hand_down(
    store: &mut Store,
    root: &SysRoot,
    entries: Vec<JournalEntry>,
) -> Result<Vec<JournalEntry>> {
    if entries.is_empty() {
        return Ok(entries);
    }
    let chosen: std::collections::BTreeSet<i64> = entries.iter().map(|e| e.id).collect();
    let open = trusted(root, store.journal_open(None, None)?);
    let mut closed: Vec<i64> = Vec::new();
    let mut originals: Vec<(i64, String)> = Vec::new();
    let mut below: Vec<i64> = Vec::new();
    let mut stacks: BTreeMap<(std::path::PathBuf, Option<String>), Vec<&JournalEntry>> =
        BTreeMap::new();
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
        let mut run: Vec<&JournalEntry> = Vec::new();
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
pub(super) fn warn_stale(stale: &[JournalEntry]) {
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
/// files while the loop number is attached to no file, or with `into_other_file` (a write to
/// the device under `name` follows) to whatever file it serves now (the caller holds the lock
/// of the device under `name` now), unless an open entry of `now` has the same file: that
/// one is the original to restore, and the earlier ones are closed. A restore
/// (`into_other_file` false) leaves the queue of another file alone: the entries are closed
/// with a warning that names the new file and each knob's journaled original (for a `set`
/// by hand). The rest are closed (marked restored, unwritten), with one warning per device
/// saying why: their device is gone, or the name is now another disk (a new queue).
fn close_foreign(
    store: &mut Store,
    root: &SysRoot,
    name: &str,
    now: Option<&str>,
    entries: Vec<JournalEntry>,
    into_other_file: bool,
) -> Result<Vec<JournalEntry>> {
    let (mut keep, foreign): (Vec<JournalEntry>, Vec<JournalEntry>) = entries
        .into_iter()
        .partition(|e| now.is_some() && e.identity.as_deref() == now);
    if foreign.is_empty() {
        return Ok(keep);
    }
    // A loop number attached to no file (`virtual:loopN`): its queue is nobody's now.
    let queue = now.is_some()
        && (into_other_file || !is_loop(now))
        && root.block_dev(name).join("queue").is_dir();
    let open = trusted(root, store.journal_open(Some(name), None)?);
    let owned_now = |e: &JournalEntry| {
        open.iter()
            .any(|o| o.path == e.path && now.is_some() && o.identity.as_deref() == now)
    };
    let (back, foreign): (Vec<JournalEntry>, Vec<JournalEntry>) =
        foreign.into_iter().partition(|e| {
            queue
                && e.identity
                    .as_deref()
                    .is_some_and(|i| i.starts_with("loop:"))
                && !owned_now(e)
        });
    if !back.is_empty() {
        log_written_back(name, now, &back);
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
        let why = closed_why(name, old.as_deref(), now, queue, &open, &ids);
        tracing::warn!(
            "{name}: {} journaled knobs of {} closed without writing them back: {why}",
            ids.len(),
            old.as_deref().unwrap_or("an unrecorded device")
        );
        store.journal_mark_restored(&ids)?;
    }
    Ok(keep)
}

/// True for the identity of a loop device attached to a file (`loop:<file>`).
fn is_loop(identity: Option<&str>) -> bool {
    identity.is_some_and(|i| i.starts_with("loop:"))
}

/// Logs the journaled knobs of earlier loop backing files (`back`) written back to the queue
/// of `name` (now `now`), naming each earlier file and why it cannot be restored itself.
fn log_written_back(name: &str, now: Option<&str>, back: &[JournalEntry]) {
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
}

/// Why the open entries `ids` (of `open`) journaled for device `old` under `name` (now
/// `now`) are closed without being written: an earlier loop file's when the queue gets its
/// own originals (`queue`), another loop file's whose queue serves a new file (naming each
/// file's journaled original), else a device that is gone or replaced.
fn closed_why(
    name: &str,
    old: Option<&str>,
    now: Option<&str>,
    queue: bool,
    open: &[JournalEntry],
    ids: &[i64],
) -> String {
    if queue && is_loop(old) {
        format!(
            "{}, whose own journaled originals of those files are the ones to restore",
            why_unrestorable(name, old, now)
        )
    } else if is_loop(now) && is_loop(old) {
        // The oldest open entry of each file holds its original.
        let mut originals: Vec<String> = Vec::new();
        let mut seen: Vec<&Path> = Vec::new();
        for e in open.iter().filter(|e| ids.contains(&e.id)) {
            if !seen.contains(&e.path.as_path()) {
                seen.push(&e.path);
                originals.push(format!("{}={}", e.knob, e.original));
            }
        }
        format!(
            "{}, and its queue serves that file now, so they are not written into it \
             (journaled originals: {}; `sweetspot set {name} KNOB=VALUE` writes one by \
             hand)",
            why_unrestorable(name, old, now),
            originals.join(" ")
        )
    } else {
        format!(
            "{}, so there is nothing to restore them on",
            why_unrestorable(name, old, now)
        )
    }
}

/// Why the entries journaled for device `old` under kernel name `name` cannot be restored,
/// `name` being `now` (its identity now; `None`: no such device): for `close_foreign`'s
/// warning. A loop number without a backing file reads as `virtual:<name>`.
pub(crate) fn why_unrestorable(name: &str, old: Option<&str>, now: Option<&str>) -> String {
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

/// True when a restore writes nothing for the vm knob `knob` journaled with `original`, its
/// exclusive partner's journaled original being `partner` (`None`: not journaled): of an
/// exclusive pair (`dirty_ratio`/`dirty_bytes`) only the non-zero member is written, since
/// writing it zeroes the other; when both are zero, the ratio member is written (0 bytes is
/// EINVAL). `status` counts the knobs a restore would put back by the same rule.
pub(crate) fn pair_member_unwritten(knob: &str, original: &str, partner: Option<&str>) -> bool {
    original.trim() == "0"
        && catalogue::exclusive_partner(knob).is_some()
        && (partner.is_some_and(|p| p.trim() != "0") || catalogue::is_bytes_member(knob))
}

struct Restorer<'a> {
    io: &'a dyn KnobIo,
    store: &'a mut Store,
    put: Vec<PutBack>,
    first_err: Option<Error>,
    /// Whether a detached loop file's originals go to its loop number's queue when that now
    /// serves another file ([`close_foreign`]): yes before a write to that device
    /// ([`settle_foreign`]), no for a restore, which leaves that file's queue alone.
    into_other_file: bool,
}

/// Open entries of one path: the one to write (oldest) and every id it settles.
struct PathGroup {
    entries: Vec<JournalEntry>,
}

impl PathGroup {
    fn ids(&self) -> Vec<i64> {
        self.entries.iter().map(|e| e.id).collect()
    }
}

fn by_path(entries: Vec<JournalEntry>) -> Vec<PathGroup> {
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
    fn device(&mut self, root: &SysRoot, name: &str, entries: Vec<JournalEntry>) -> Result<()> {
        let now_id = root
            .block_dev(name)
            .join("dev")
            .exists()
            .then(|| identity(root, name));
        let entries = close_foreign(
            self.store,
            root,
            name,
            now_id.as_deref(),
            entries,
            self.into_other_file,
        )?;
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

    fn vm(&mut self, entries: Vec<JournalEntry>) -> Result<()> {
        let groups = by_path(entries);
        let original = |n: &str| {
            groups
                .iter()
                .find(|g| g.entries[0].knob == n)
                .map(|g| g.entries[0].original.clone())
        };
        for g in &groups {
            let e = &g.entries[0];
            let partner = catalogue::exclusive_partner(&e.knob).and_then(original);
            if pair_member_unwritten(&e.knob, &e.original, partner.as_deref()) {
                self.store.journal_mark_restored(&g.ids())?;
                continue;
            }
            self.put_back(e, &g.ids());
        }
        Ok(())
    }

    /// Writes `e.original` back (unless already there), verifies it, and marks `ids` restored.
    /// Returns false (and keeps the first error) when it failed.
    fn put_back(&mut self, e: &JournalEntry, ids: &[i64]) -> bool {
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
    fn put_back_features(&mut self, e: &JournalEntry, ids: &[i64]) -> bool {
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
