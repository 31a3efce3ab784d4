//! Queries on the undo journal (table `journal`, see schema.rs).
//!
//! At most one open entry exists per (path, owner): recording a knob that already has an open
//! entry for that owner keeps the first one, which is the value before that owner changed it.
//! The open entries of one file form a stack, oldest (the true original) first; each owner's
//! entry holds the value before its change, and the knob's value now is the newest owner's.
//! Restoring some owners' entries only, under a later open entry of another owner, hands the
//! oldest original down to that entry instead of writing it
//! (`Store::journal_hand_down`, `knob::apply::restore_except`). The stack is
//! ordered by entry id, that is by each owner's first change: an owner that writes the knob
//! again over a later owner's entry keeps its old place, so a partial restore may then take
//! the wrong entry for the newest writer's (the knob keeps a value one owner wrote). A full
//! `restore` is not affected: it writes each file's oldest open original, the true one.
//! Entries are never deleted; a restored entry gets `restored_at`. Entries of an earlier boot
//! are closed unwritten (`Store::journal_close_stale`): the kernel reset those knobs.
//!
//! A host-wide entry journaled by a command for one device carries that device's identity
//! (`for_identity`), until a command for another device journals the same knob under the
//! same owner: then it is nobody's alone (NULL), and only a `restore` of everything puts it
//! back.

use super::{Store, now};
use crate::Result;
use crate::types::{ApplyOrder, Owner};
use rusqlite::params;
use serde::Serialize;
use std::path::PathBuf;

/// One journal row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct JournalEntry {
    /// Row id (increasing with time: the smallest open id of a path is its true original).
    pub id: i64,
    /// Kernel name of the device at the time; `None` for host-wide vm knobs.
    pub device: Option<String>,
    /// Device identity at the time.
    pub identity: Option<String>,
    /// For a host-wide entry: the identity of the device whose command journaled it (`set
    /// sdz dirty_ratio=30`); `None` otherwise, or when commands for several devices did.
    pub for_identity: Option<String>,
    /// Knob base name.
    pub knob: String,
    /// The file.
    pub path: PathBuf,
    /// The value read before the first change, as the kernel printed it.
    pub original: String,
    /// Restore order.
    pub order: ApplyOrder,
    /// For iosched knobs: the scheduler they belong to.
    pub scheduler: Option<String>,
    /// Who journaled it (stored as its text, `set`, `tune:<id>`, …).
    pub owner: Owner,
    /// Unix seconds.
    pub recorded_at: i64,
    /// Unix seconds; `None` while open.
    pub restored_at: Option<i64>,
    /// The boot the original was read in (`/proc/sys/kernel/random/boot_id`); `None` when
    /// unknown (no such file, or recorded before sweetspot kept it).
    pub boot_id: Option<String>,
}

impl JournalEntry {
    /// True when this entry was recorded in an earlier boot than `boot`: its boot id differs
    /// from this boot's, or (recorded before sweetspot kept boot ids) it is older than this
    /// boot's start. Unknown either way: false (it stays open).
    pub fn from_another_boot(&self, boot: &crate::sysroot::Boot) -> bool {
        match (&self.boot_id, &boot.id) {
            (Some(then), Some(now)) => then != now,
            (Some(_), None) => false,
            (None, _) => boot.booted_at.is_some_and(|b| self.recorded_at < b),
        }
    }
}

/// A knob original to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NewEntry {
    /// Kernel name of the device; `None` for vm knobs.
    pub device: Option<String>,
    /// Device identity.
    pub identity: Option<String>,
    /// For a host-wide knob written by a command for one device: that device's identity.
    pub for_identity: Option<String>,
    /// Knob base name.
    pub knob: String,
    /// The file.
    pub path: PathBuf,
    /// The value read now.
    pub original: String,
    /// Restore order.
    pub order: ApplyOrder,
    /// For iosched knobs: their scheduler.
    pub scheduler: Option<String>,
    /// The boot the original is read in ([`crate::sysroot::SysRoot::boot`]; set by `apply`).
    pub boot_id: Option<String>,
}

/// A journal row that cannot be read as an [`JournalEntry`]: a column of the wrong type (`original`
/// a BLOB, `recorded_at` text), text that is not UTF-8, an unknown apply order or owner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Malformed {
    /// Row id.
    pub id: i64,
    /// Its device, when that column reads as text.
    pub device: Option<String>,
    /// Its knob, when that column reads as text.
    pub knob: Option<String>,
    /// Its owner, when that column reads as text.
    pub owner: Option<String>,
    /// What is wrong, naming the column.
    pub why: String,
}

/// Column `i` (named `COLUMNS[i]`) as text: `None` for NULL. Errors: another type, or text
/// that is not UTF-8, as a sentence naming the column.
fn text(r: &rusqlite::Row<'_>, i: usize) -> std::result::Result<Option<String>, String> {
    use rusqlite::types::ValueRef;
    match r.get_ref(i).map_err(|e| e.to_string())? {
        ValueRef::Null => Ok(None),
        ValueRef::Text(t) => String::from_utf8(t.to_vec())
            .map(Some)
            .map_err(|_| format!("{} is not UTF-8 text", COLUMNS[i])),
        other => Err(format!(
            "{} is {:?}, not text",
            COLUMNS[i],
            other.data_type()
        )),
    }
}

/// Column `i` as an integer: `None` for NULL. Errors: another type.
fn int(r: &rusqlite::Row<'_>, i: usize) -> std::result::Result<Option<i64>, String> {
    use rusqlite::types::ValueRef;
    match r.get_ref(i).map_err(|e| e.to_string())? {
        ValueRef::Null => Ok(None),
        ValueRef::Integer(n) => Ok(Some(n)),
        other => Err(format!(
            "{} is {:?}, not an integer",
            COLUMNS[i],
            other.data_type()
        )),
    }
}

/// The columns [`Store::journal_rows`] selects, in order.
const COLUMNS: [&str; 13] = [
    "id",
    "device",
    "identity",
    "knob",
    "path",
    "original",
    "apply_order",
    "scheduler",
    "owner",
    "recorded_at",
    "restored_at",
    "boot_id",
    "for_identity",
];

/// One selected row as an [`JournalEntry`], or what is wrong with it.
fn entry(r: &rusqlite::Row<'_>, id: i64) -> std::result::Result<JournalEntry, String> {
    let need = |v: Option<String>, i: usize| v.ok_or_else(|| format!("{} is NULL", COLUMNS[i]));
    let order = int(r, 6)?.ok_or("apply_order is NULL")?;
    Ok(JournalEntry {
        id,
        device: text(r, 1)?,
        identity: text(r, 2)?,
        knob: need(text(r, 3)?, 3)?,
        path: PathBuf::from(need(text(r, 4)?, 4)?),
        original: need(text(r, 5)?, 5)?,
        order: ApplyOrder::from_index(order)
            .ok_or_else(|| format!("apply_order {order} is no apply order"))?,
        scheduler: text(r, 7)?,
        owner: Owner::read(&need(text(r, 8)?, 8)?),
        recorded_at: int(r, 9)?.ok_or("recorded_at is NULL")?,
        restored_at: int(r, 10)?,
        boot_id: text(r, 11)?,
        for_identity: text(r, 12)?,
    })
}

impl Store {
    /// Records `entries` for `owner` in one transaction, durably (WAL, synchronous=FULL) before
    /// it returns. A path that already has an open entry for `owner` keeps it (close entries
    /// of earlier boots first: [`Store::journal_close_stale`]), and loses its `for_identity`
    /// when this entry's differs. Returns how many rows were new.
    pub(crate) fn journal_record(&mut self, owner: &Owner, entries: &[NewEntry]) -> Result<usize> {
        let (t, owner) = (now(), owner.to_string());
        let tx = self.conn_mut().transaction()?;
        let mut n = 0;
        {
            let mut st = tx.prepare(
                "INSERT OR IGNORE INTO journal (device, identity, knob, path, original, \
                 apply_order, scheduler, owner, recorded_at, boot_id, for_identity) \
                 VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)",
            )?;
            let mut shared = tx.prepare(
                "UPDATE journal SET for_identity = NULL WHERE path = ?1 AND owner = ?2 \
                 AND restored_at IS NULL AND for_identity IS NOT ?3",
            )?;
            for e in entries {
                let path = e.path.to_string_lossy();
                let new = st.execute(params![
                    e.device,
                    e.identity,
                    e.knob,
                    path,
                    e.original,
                    e.order as i64,
                    e.scheduler,
                    owner,
                    t,
                    e.boot_id,
                    e.for_identity
                ])?;
                if new == 0 {
                    shared.execute(params![path, owner, e.for_identity])?;
                }
                n += new;
            }
        }
        tx.commit()?;
        Ok(n)
    }

    /// For a write that changes nothing (so journals nothing): the open entries of `owner` for
    /// the paths of `entries` lose their `for_identity` when the entry's differs, as
    /// [`Store::journal_record`] would do, and no row is added. So `set sdy dirty_ratio=30`
    /// after `set sdz dirty_ratio=30` still makes that knob nobody's alone, and `restore sdz`
    /// leaves it. Returns how many entries changed.
    pub(crate) fn journal_share(&mut self, owner: &Owner, entries: &[NewEntry]) -> Result<usize> {
        let owner = owner.to_string();
        let tx = self.conn_mut().transaction()?;
        let mut n = 0;
        {
            let mut shared = tx.prepare(
                "UPDATE journal SET for_identity = NULL WHERE path = ?1 AND owner = ?2 \
                 AND restored_at IS NULL AND for_identity IS NOT ?3",
            )?;
            for e in entries {
                n += shared.execute(params![e.path.to_string_lossy(), owner, e.for_identity])?;
            }
        }
        tx.commit()?;
        Ok(n)
    }

    /// Open entries, oldest first, optionally only of one device (kernel name; vm entries have
    /// no device and are included only when `device` is `None`) and one owner.
    pub fn journal_open(
        &self,
        device: Option<&str>,
        owner: Option<&Owner>,
    ) -> Result<Vec<JournalEntry>> {
        self.journal_query(
            "WHERE restored_at IS NULL AND (?1 IS NULL OR device = ?1) \
             AND (?2 IS NULL OR owner = ?2)",
            device,
            owner,
        )
    }

    /// The scheduler the journal recorded with the first entry of tune `tune_id` (owner
    /// `tune:<id>`) for one of the iosched knobs `knobs`: the scheduler whose `iosched/` held
    /// it when the tune first changed it. `None` when the tune journaled none of them.
    pub(crate) fn journal_tune_scheduler(
        &self,
        tune_id: i64,
        knobs: &[&str],
    ) -> Result<Option<String>> {
        let owner = Owner::Tune(tune_id).to_string();
        let mut st = self.conn().prepare(
            "SELECT scheduler FROM journal WHERE owner = ?1 AND knob = ?2 \
             AND scheduler IS NOT NULL ORDER BY id LIMIT 1",
        )?;
        for k in knobs {
            let mut rows = st.query(params![owner, k])?;
            if let Some(r) = rows.next()? {
                return Ok(Some(r.get(0)?));
            }
        }
        Ok(None)
    }

    /// Every entry (history included), oldest first, optionally of one device.
    pub(crate) fn journal_all(&self, device: Option<&str>) -> Result<Vec<JournalEntry>> {
        self.journal_query(
            "WHERE (?1 IS NULL OR device = ?1) AND ?2 IS NULL",
            device,
            None,
        )
    }

    fn journal_query(
        &self,
        filter: &str,
        device: Option<&str>,
        owner: Option<&Owner>,
    ) -> Result<Vec<JournalEntry>> {
        let (good, bad) = self.journal_rows(filter, device, owner)?;
        for b in bad {
            tracing::debug!("journal row {} skipped: {}", b.id, b.why);
        }
        Ok(good)
    }

    /// The open rows that cannot be read as an [`JournalEntry`] (a column of the wrong type, an
    /// unknown apply order), oldest first: every other query skips them, so one damaged row
    /// does not stop `restore` or `set`; `restore` reports them and fails (exit 1).
    pub(crate) fn journal_open_malformed(&self) -> Result<Vec<Malformed>> {
        Ok(self
            .journal_rows(
                "WHERE restored_at IS NULL AND ?1 IS NULL AND ?2 IS NULL",
                None,
                None,
            )?
            .1)
    }

    /// The rows `filter` selects, read tolerantly: each as an [`JournalEntry`], or as [`Malformed`].
    fn journal_rows(
        &self,
        filter: &str,
        device: Option<&str>,
        owner: Option<&Owner>,
    ) -> Result<(Vec<JournalEntry>, Vec<Malformed>)> {
        let sql = format!(
            "SELECT id, device, identity, knob, path, original, apply_order, scheduler, owner, \
             recorded_at, restored_at, boot_id, for_identity FROM journal {filter} ORDER BY id"
        );
        let mut st = self.conn().prepare(&sql)?;
        let mut rows = st.query(params![device, owner.map(Owner::to_string)])?;
        let (mut good, mut bad) = (Vec::new(), Vec::new());
        while let Some(r) = rows.next()? {
            let id: i64 = r.get(0)?;
            match entry(r, id) {
                Ok(e) => good.push(e),
                Err(why) => bad.push(Malformed {
                    id,
                    device: text(r, 1).ok().flatten(),
                    knob: text(r, 3).ok().flatten(),
                    owner: text(r, 8).ok().flatten(),
                    why,
                }),
            }
        }
        Ok((good, bad))
    }

    /// Closes (marks restored, not written) every open entry under `root` recorded in an
    /// earlier boot than `boot`, `root`'s ([`JournalEntry::from_another_boot`]): the kernel reset
    /// those knobs at boot, so their originals are stale, and a change in this boot must
    /// journal the value read now. The boot is procfs's: an entry under `root.sys` is judged
    /// by it only when both roots are real or both fake (one machine's), and an entry under
    /// other roots (another tree's, a test's) never. Returns the closed entries.
    pub(crate) fn journal_close_stale(
        &mut self,
        root: &crate::sysroot::SysRoot,
        boot: &crate::sysroot::Boot,
    ) -> Result<Vec<JournalEntry>> {
        let one_machine = root.is_real() == root.is_real_proc();
        let stale: Vec<JournalEntry> = self
            .journal_open(None, None)?
            .into_iter()
            .filter(|e| {
                e.path.starts_with(&root.proc) || (one_machine && e.path.starts_with(&root.sys))
            })
            .filter(|e| e.from_another_boot(boot))
            .collect();
        let ids: Vec<i64> = stale.iter().map(|e| e.id).collect();
        self.journal_mark_restored(&ids)?;
        Ok(stale)
    }

    /// Closes the entries `closed` unwritten (marks them restored) and gives each entry of
    /// `originals` its new original, in one transaction: a restore of one owner's layer of a
    /// file that lies under a later open entry of another owner hands its original down to that
    /// entry (`knob::apply::restore_except`), so the true original is never lost.
    pub(crate) fn journal_hand_down(
        &mut self,
        closed: &[i64],
        originals: &[(i64, String)],
    ) -> Result<()> {
        let t = now();
        let tx = self.conn_mut().transaction()?;
        {
            let mut up = tx.prepare(
                "UPDATE journal SET original = ?2 WHERE id = ?1 AND restored_at IS NULL",
            )?;
            for (id, original) in originals {
                up.execute(params![id, original])?;
            }
            let mut st = tx.prepare(
                "UPDATE journal SET restored_at = ?2 WHERE id = ?1 AND restored_at IS NULL",
            )?;
            for id in closed {
                st.execute(params![id, t])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Marks entries restored (kept as history), durably, in one transaction.
    pub(crate) fn journal_mark_restored(&mut self, ids: &[i64]) -> Result<()> {
        let t = now();
        let tx = self.conn_mut().transaction()?;
        {
            let mut st = tx.prepare(
                "UPDATE journal SET restored_at = ?2 WHERE id = ?1 AND restored_at IS NULL",
            )?;
            for id in ids {
                st.execute(params![id, t])?;
            }
        }
        tx.commit()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, original: &str) -> NewEntry {
        NewEntry {
            device: Some("loop9".into()),
            identity: Some("loop:/x".into()),
            for_identity: None,
            knob: path.rsplit('/').next().unwrap().into(),
            path: PathBuf::from(path),
            original: original.into(),
            order: ApplyOrder::Iosched,
            scheduler: Some("mq-deadline".into()),
            boot_id: None,
        }
    }

    #[test]
    fn an_unknown_owner_is_read_as_unknown_and_not_skipped() {
        // Every query sees the row (it protects the knob for the journal's rules); only a
        // restore refuses to write it (knob::restore).
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("j.db")).unwrap();
        s.journal_record(&Owner::Tune(7), &[entry("/q/fifo_batch", "16")])
            .unwrap();
        s.conn()
            .execute("UPDATE journal SET owner = 'daemon'", [])
            .unwrap();
        let open = s.journal_open(None, None).unwrap();
        assert_eq!(
            (open.len(), &open[0].owner, open[0].original.as_str()),
            (1, &Owner::Unknown("daemon".into()), "16")
        );
        assert_eq!(s.journal_all(Some("loop9")).unwrap().len(), 1);
        assert_eq!(s.journal_open_malformed().unwrap(), []);
    }

    #[test]
    fn a_fake_procfs_boot_does_not_judge_real_sysfs_entries() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("j.db")).unwrap();
        let proc = dir.path().join("proc");
        let mut real = entry("/sys/block/loop9/queue/iosched/fifo_batch", "16");
        real.boot_id = Some("real-boot".into());
        let mut vm = entry(&format!("{}/sys/vm/swappiness", proc.display()), "60");
        vm.device = None;
        vm.boot_id = Some("fake-boot-0".into());
        s.journal_record(&Owner::Set, &[real, vm]).unwrap();
        let other = crate::sysroot::Boot {
            id: Some("fake-boot-1".into()),
            booted_at: None,
        };
        // /sys with a fake /proc: only the fake procfs's own entry is judged by its boot.
        let mixed = crate::sysroot::SysRoot::new("/sys", &proc);
        let closed = s.journal_close_stale(&mixed, &other).unwrap();
        assert_eq!(
            closed.iter().map(|e| e.knob.as_str()).collect::<Vec<_>>(),
            ["swappiness"]
        );
        let open = s.journal_open(None, None).unwrap();
        assert_eq!((open.len(), open[0].knob.as_str()), (1, "fifo_batch"));
        // The real roots' boot does judge it.
        let real_root = crate::sysroot::SysRoot::new("/sys", "/proc");
        assert_eq!(s.journal_close_stale(&real_root, &other).unwrap().len(), 1);
    }

    #[test]
    fn keeps_the_first_open_entry_per_owner_and_history_after_restore() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("j.db")).unwrap();
        assert_eq!(
            s.journal_record(&Owner::Set, &[entry("/q/fifo_batch", "32")])
                .unwrap(),
            1
        );
        assert_eq!(
            s.journal_record(&Owner::Set, &[entry("/q/fifo_batch", "8")])
                .unwrap(),
            0
        );
        assert_eq!(
            s.journal_record(&Owner::Tune(1), &[entry("/q/fifo_batch", "8")])
                .unwrap(),
            1
        );
        let open = s.journal_open(None, None).unwrap();
        assert_eq!(open.len(), 2);
        assert_eq!(open[0].original, "32");
        assert_eq!(open[0].owner, Owner::Set);
        assert_eq!(
            s.journal_open(Some("loop9"), Some(&Owner::Tune(1)))
                .unwrap()[0]
                .original,
            "8"
        );
        assert!(s.journal_open(Some("sda"), None).unwrap().is_empty());

        s.journal_mark_restored(&[open[0].id, open[1].id]).unwrap();
        assert!(s.journal_open(None, None).unwrap().is_empty());
        let all = s.journal_all(None).unwrap();
        assert_eq!(all.len(), 2);
        assert!(all.iter().all(|e| e.restored_at.is_some()));
        // After a restore, the same path can be journaled afresh.
        assert_eq!(
            s.journal_record(&Owner::Set, &[entry("/q/fifo_batch", "16")])
                .unwrap(),
            1
        );
    }

    #[test]
    fn a_host_wide_entry_is_one_devices_until_another_devices_command_journals_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("j.db")).unwrap();
        let ratio = |for_identity: Option<&str>, original: &str| NewEntry {
            device: None,
            identity: None,
            for_identity: for_identity.map(Into::into),
            order: ApplyOrder::Vm,
            scheduler: None,
            ..entry("/proc/sys/vm/dirty_ratio", original)
        };
        let attributed = |s: &Store| s.journal_open(None, Some(&Owner::Set)).unwrap()[0].clone();
        assert_eq!(
            s.journal_record(&Owner::Set, &[ratio(Some("sdz"), "20")])
                .unwrap(),
            1
        );
        // Journaled again for the same device: still its own, the first original kept.
        assert_eq!(
            s.journal_record(&Owner::Set, &[ratio(Some("sdz"), "30")])
                .unwrap(),
            0
        );
        let e = attributed(&s);
        assert_eq!(
            (e.for_identity.as_deref(), &*e.original),
            (Some("sdz"), "20")
        );
        // Another owner's entry does not touch it.
        s.journal_record(&Owner::Tune(1), &[ratio(Some("sdy"), "30")])
            .unwrap();
        assert_eq!(attributed(&s).for_identity.as_deref(), Some("sdz"));
        // Another device's `set` of the same knob: nobody's alone, for good.
        s.journal_record(&Owner::Set, &[ratio(Some("sdy"), "40")])
            .unwrap();
        assert_eq!(attributed(&s).for_identity, None);
        s.journal_record(&Owner::Set, &[ratio(Some("sdz"), "40")])
            .unwrap();
        assert_eq!(attributed(&s).for_identity, None);
        assert_eq!(attributed(&s).original, "20");
    }
}
