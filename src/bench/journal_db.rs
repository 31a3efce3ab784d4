//! Which database journals a `--scratch` device's knobs, so that a sweep of leftovers
//! ([`crate::bench::stale`]) run with another `--db` does not tear down a killed run's loop
//! device while that run's originals are still open in its own journal (a loop queue outlives
//! `losetup -d`: the next attach of that loop number would inherit its knobs, and the journal
//! could never put them back).
//!
//! A scratch run writes the absolute path of its database into `<dir>/journal-db` and
//! fsyncs it (and the directory) right after taking the directory's owner lock, before the
//! loop device is attached, so before any knob of it can change. `verdict` decides what a
//! sweep may do with a dead leftover:
//!
//! - nothing of it is attached any more (killed before `losetup`, or after a reboot): there is
//!   nothing to put back; it is removed;
//! - the record names a database: removed when that database is gone or has no open entry for
//!   the leftover's loop device (identity `loop:<dir>/…`); left alone, naming the database and
//!   `sweetspot --db <it> restore`, while it has one (or cannot be read);
//! - no record (made by an older sweetspot): removed when this sweep's own database has
//!   entries for it and none is open (it was this database's and is restored); otherwise left
//!   alone, since no database that could hold its originals is known.

use crate::store::Store;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The record's file name inside a scratch directory.
pub(crate) const RECORD: &str = "journal-db";

/// Writes `db` (made absolute against the current directory) into `<dir>/journal-db`,
/// durably: written under a temporary name, fsynced, renamed into place, and the directory
/// fsynced. Errors: the I/O error of any step.
pub fn record(dir: &Path, db: &Path) -> std::io::Result<()> {
    let db = std::path::absolute(db)?;
    let tmp = dir.join(format!("{RECORD}.new"));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(db.as_os_str().as_encoded_bytes())?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, dir.join(RECORD))?;
    std::fs::File::open(dir)?.sync_all()
}

/// The database a scratch directory's record names, if it has one.
pub(crate) fn recorded(dir: &Path) -> Option<PathBuf> {
    let bytes = std::fs::read(dir.join(RECORD)).ok()?;
    use std::os::unix::ffi::OsStringExt;
    Some(PathBuf::from(std::ffi::OsString::from_vec(bytes))).filter(|p| p.is_absolute())
}

/// True when `a` and `b` name the same database file (compared canonicalised when both
/// exist, else as absolute paths).
#[cfg(test)]
pub(crate) fn same_db(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => std::path::absolute(a).ok() == std::path::absolute(b).ok(),
    }
}

/// What a sweep may do with a dead leftover.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LeftoverVerdict {
    /// Tear it down: no open journal entry anywhere known needs its loop queue.
    Remove,
    /// Leave it: why, as one line for the user.
    Keep(String),
}

/// Journal entries of `db` for the loop device of scratch directory `dir`: (any, any open).
/// `None` when `db` does not exist. Errors: the database cannot be read.
fn entries_for(db: &Path, dir: &Path) -> crate::Result<Option<(bool, bool)>> {
    if !db.is_file() {
        return Ok(None);
    }
    let store = Store::open_read_only(db)?;
    let ours = |id: &Option<String>| {
        id.as_deref()
            .and_then(|i| i.strip_prefix("loop:"))
            .is_some_and(|f| Path::new(f).starts_with(dir))
    };
    let all: Vec<_> = store
        .journal_all(None)?
        .into_iter()
        .filter(|e| ours(&e.identity))
        .collect();
    Ok(Some((
        !all.is_empty(),
        all.iter().any(|e| e.restored_at.is_none()),
    )))
}

/// Decides about dead leftover `dir` whose attached loop devices are `loops` (kernel names),
/// for a sweep run with database `own` (see the module docs).
pub(crate) fn verdict(dir: &Path, loops: &[String], own: &Path) -> LeftoverVerdict {
    if loops.is_empty() {
        return LeftoverVerdict::Remove;
    }
    let what = format!("{} ({})", dir.display(), loops.join(", "));
    let restore = |db: &Path| format!("`sweetspot --db {} restore`", db.display());
    match recorded(dir) {
        Some(db) => match entries_for(&db, dir) {
            Ok(None | Some((_, false))) => LeftoverVerdict::Remove,
            Ok(Some((_, true))) => LeftoverVerdict::Keep(format!(
                "left alone: {what}, a killed run's scratch device whose knobs are journaled \
                 in {}; {} puts them back and removes it",
                db.display(),
                restore(&db)
            )),
            Err(e) => LeftoverVerdict::Keep(format!(
                "left alone: {what}, a killed run's scratch device journaled in {}, which \
                 cannot be read ({e}); {} puts its knobs back and removes it",
                db.display(),
                restore(&db)
            )),
        },
        None => match entries_for(own, dir) {
            Ok(Some((true, false))) => LeftoverVerdict::Remove,
            Ok(Some((true, true))) => LeftoverVerdict::Keep(format!(
                "left alone: {what}, a killed run's scratch device whose knobs are journaled \
                 in {}; {} puts them back and removes it",
                own.display(),
                restore(own)
            )),
            _ => LeftoverVerdict::Keep(format!(
                "left alone: {what}, a killed run's scratch device made by an older sweetspot, \
                 which did not record its database, and {} has no entry for it; \
                 `sweetspot --db <the database it ran with> restore` puts its knobs back and \
                 removes it",
                own.display()
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Owner;

    #[test]
    fn the_record_names_the_database_absolutely_and_a_missing_one_is_none() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(recorded(t.path()), None);
        let db = t.path().join("a.db");
        record(t.path(), &db).unwrap();
        assert_eq!(recorded(t.path()), Some(db.clone()));
        assert!(!t.path().join(format!("{RECORD}.new")).exists());
        assert!(same_db(&db, &t.path().join(".").join("a.db")));
        assert!(!same_db(&db, &t.path().join("b.db")));
    }

    #[test]
    fn nothing_attached_is_removed_and_a_recorded_database_with_nothing_open_too() {
        let t = tempfile::tempdir().unwrap();
        let loops = ["loop9".to_string()];
        assert_eq!(
            verdict(t.path(), &[], Path::new("/x.db")),
            LeftoverVerdict::Remove
        );
        // Recorded, but the database is gone: nothing can be put back.
        record(t.path(), &t.path().join("gone.db")).unwrap();
        assert_eq!(
            verdict(t.path(), &loops, Path::new("/x.db")),
            LeftoverVerdict::Remove
        );
        // Recorded, and the database has an open entry for the leftover's loop device.
        let db = t.path().join("a.db");
        record(t.path(), &db).unwrap();
        let mut s = Store::open(&db).unwrap();
        let e = crate::store::journal::NewEntry {
            device: Some("loop9".into()),
            identity: Some(format!("loop:{}/backing.img", t.path().display())),
            for_identity: None,
            knob: "scheduler".into(),
            path: "/sys/block/loop9/queue/scheduler".into(),
            original: "[none] bfq".into(),
            order: crate::types::ApplyOrder::Scheduler,
            scheduler: None,
            boot_id: None,
        };
        s.journal_record(&Owner::Bench, &[e]).unwrap();
        let LeftoverVerdict::Keep(why) = verdict(t.path(), &loops, Path::new("/x.db")) else {
            panic!("an open entry must keep it");
        };
        assert!(
            why.contains(&format!("`sweetspot --db {} restore`", db.display())),
            "{why}"
        );
        let ids: Vec<i64> = s
            .journal_open(None, None)
            .unwrap()
            .iter()
            .map(|e| e.id)
            .collect();
        s.journal_mark_restored(&ids).unwrap();
        assert_eq!(
            verdict(t.path(), &loops, Path::new("/x.db")),
            LeftoverVerdict::Remove
        );
    }
}
