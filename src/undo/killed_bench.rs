//! What killed benchmarks left open in the journal, for the commands that only read
//! (`status`, `history`). A `bench` or `tune --scratch` killed with SIGKILL (or by the OOM
//! killer) cannot restore its knobs: their journal entries stay open until the next `tune`,
//! `bench` on a device, `daemon` or `restore` puts them back. A `bench`'s are owned by
//! [`Owner::Bench`] (`super::recover_benches`); no `tunes` row names
//! it, so `history`'s `killed` status cannot show it. A scratch tune journals its loop
//! device's baseline under that owner before it has a tune id, and its trials under
//! `tune:<id>` (`super::recover`): its scratch device is enrolled nowhere, so
//! `status` would not show them otherwise. These entries are what is left of either.
//!
//! An entry counts as such exactly when `recover` would write it: its writer is gone (a
//! `tune --scratch` stored as `running` whose process is not alive), its device's lock (the
//! host's for host-wide knobs) is free now (a bench that is alive holds it), the device is the
//! same disk as when it was journaled, it was journaled in this boot, and the row passes
//! [`crate::knob::vet`] (a row `restore` refuses is not listed as a knob). Entries of a device
//! that is gone or now another disk, and of an earlier boot, are left out: they are closed
//! unwritten, there is nothing to put back.

use super::command::undo_command;
use super::writers::{open_devices, writer_identity};
use crate::Result;
use crate::knob::catalogue;
use crate::knob::restore::pair_member_unwritten;
use crate::knob::vet::{VetVerdict, vet};
use crate::lock;
use crate::store::Store;
use crate::sysroot::SysRoot;
use crate::types::Owner;
use serde::Serialize;

/// One knob a killed benchmark journaled and nobody has put back yet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct OpenKnob {
    /// The device's kernel name when journaled; `None` for a host-wide knob (vm, kernel).
    pub device: Option<String>,
    /// The device's identity when journaled; `None` for a host-wide knob.
    pub identity: Option<String>,
    /// Knob name.
    pub knob: String,
    /// The value before the benchmark changed it, as the kernel printed it: what `restore`
    /// writes back.
    pub original: String,
}

/// The journal owners whose open entries count as a killed benchmark's: [`Owner::Bench`]
/// and `tune:<id>` of every `tune --scratch` (its identity `scratch:…`) stored as `running`
/// whose process is gone ([`super::recover::alive`]). A killed scratch tune journals its
/// trials under its own id once it has one (and only the baseline of a loop queue a previous
/// user left changed under `bench`), so the bench owner alone misses them.
fn killed_owners(store: &Store, root: &SysRoot) -> Result<Vec<Owner>> {
    let db = store.path().to_path_buf();
    let mut owners = vec![Owner::Bench];
    owners.extend(
        store
            .running_tunes()?
            .into_iter()
            .filter(|t| t.identity.starts_with("scratch:") && !super::writers::alive(&db, root, t))
            .map(|t| Owner::Tune(t.id)),
    );
    Ok(owners)
}

/// The knobs killed benchmarks left open (see the module doc), devices first (by name), then
/// the host-wide ones; each group in journal order, a file journaled by both a killed scratch
/// run's baseline and its tune listed once, with its oldest (true) original. Reads only the
/// store and the lock files. Errors: the store's.
pub(crate) fn killed_bench_knobs(store: &Store, root: &SysRoot) -> Result<Vec<OpenKnob>> {
    let db = store.path().to_path_buf();
    let boot = root.boot();
    let mut found: Vec<crate::store::journal::JournalEntry> = Vec::new();
    for owner in killed_owners(store, root)? {
        for name in open_devices(store, &owner)? {
            let Some(id) = writer_identity(root, name.as_deref()) else {
                continue;
            };
            if lock::held(&lock::path(&db, root, &id)) {
                continue;
            }
            found.extend(
                store
                    .journal_open(name.as_deref(), Some(&owner))?
                    .into_iter()
                    .filter(|e| e.device == name && !e.from_another_boot(&boot))
                    .filter(|e| matches!(vet(root, e), VetVerdict::Here(_)))
                    .filter(|e| name.is_none() || e.identity.as_deref() == Some(id.as_str())),
            );
        }
    }
    found.sort_by(|a, b| {
        (a.device.is_none(), &a.device, a.id).cmp(&(b.device.is_none(), &b.device, b.id))
    });
    let found = as_restore_writes(root, found);
    Ok(found
        .into_iter()
        .map(|e| OpenKnob {
            device: e.device,
            identity: e.identity,
            knob: e.knob,
            original: e.original,
        })
        .collect())
}

/// Of `found` (sorted by device, then id), the entries a restore writes, one per file, as
/// [`crate::knob::restore`] chooses them, so that `status` counts what `restore` lists:
/// an iosched knob only under the scheduler the device ends with (the oldest journaled
/// scheduler, else the active one: a switch recreates `iosched/` with defaults, so the
/// other schedulers' entries are obsolete), then the oldest entry of each file, and of an
/// exclusive vm pair the member restore writes ([`pair_member_unwritten`]).
fn as_restore_writes(
    root: &SysRoot,
    found: Vec<crate::store::journal::JournalEntry>,
) -> Vec<crate::store::journal::JournalEntry> {
    use crate::knob::ApplyOrder;
    let end_scheduler = |device: &str| {
        found
            .iter()
            .find(|e| e.device.as_deref() == Some(device) && e.order == ApplyOrder::Scheduler)
            .map(|e| e.original.trim().to_string())
            .or_else(|| crate::device::find(root, device).ok().map(|d| d.scheduler))
    };
    let mut seen = std::collections::HashSet::new();
    let kept: Vec<&crate::store::journal::JournalEntry> = found
        .iter()
        .filter(|e| {
            e.order != ApplyOrder::Iosched
                || e.device.as_deref().and_then(end_scheduler) == e.scheduler
        })
        .filter(|e| seen.insert(e.path.clone()))
        .collect();
    let host_original = |knob: &str| {
        kept.iter()
            .find(|e| e.device.is_none() && e.knob == knob)
            .map(|e| e.original.clone())
    };
    kept.iter()
        .filter(|e| {
            let partner = catalogue::exclusive_partner(&e.knob).and_then(host_original);
            e.device.is_some() || !pair_member_unwritten(&e.knob, &e.original, partner.as_deref())
        })
        .map(|e| (*e).clone())
        .collect()
}

/// The sentence `status` and `history` print for `knobs` (none: `None`), with the `restore`
/// command for database `db` and roots `root` ([`undo_command`]): `` 3 knobs journaled by a killed `bench` or `tune --scratch`
/// are still open: fifo_batch, scheduler on loop0 and dirty_ratio host-wide; `sweetspot
/// restore` puts them back `` (no brackets: `history` prints it inside its own).
pub(crate) fn note(knobs: &[OpenKnob], db: &std::path::Path, root: &SysRoot) -> Option<String> {
    if knobs.is_empty() {
        return None;
    }
    let mut groups: Vec<(Option<&str>, Vec<&str>)> = Vec::new();
    for k in knobs {
        match groups.iter_mut().find(|(d, _)| *d == k.device.as_deref()) {
            Some((_, names)) => names.push(&k.knob),
            None => groups.push((k.device.as_deref(), vec![&k.knob])),
        }
    }
    let which: Vec<String> = groups
        .iter()
        .map(|(d, names)| match d {
            Some(d) => format!("{} on {d}", names.join(", ")),
            None => format!("{} host-wide", names.join(", ")),
        })
        .collect();
    let one = knobs.len() == 1;
    Some(format!(
        "{} knob{} journaled by a killed `bench` or `tune --scratch` {} still open: {}; `{}` \
         puts {} back",
        knobs.len(),
        if one { "" } else { "s" },
        if one { "is" } else { "are" },
        which.join(" and "),
        undo_command(db, root, None),
        if one { "it" } else { "them" }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::find;
    use crate::knob::apply::{apply_host_with, apply_with};
    use crate::knob::{KnobValue, Setting};
    use crate::lock::{DeviceLock, Holder};
    use crate::testkit::{kernel::FakeKernel, tree::FakeTree};

    fn one(knob: &str, v: i64) -> Setting {
        [(knob.to_string(), KnobValue::Int(v))]
            .into_iter()
            .collect()
    }

    fn names(k: &[OpenKnob]) -> Vec<(Option<&str>, &str, &str)> {
        k.iter()
            .map(|k| (k.device.as_deref(), k.knob.as_str(), k.original.as_str()))
            .collect()
    }

    #[test]
    fn a_killed_benchs_open_knobs_are_listed_until_they_are_put_back() {
        let t = FakeTree::new();
        t.disk("loop0", "7:0", "none [mq-deadline]", 128).set(
            "loop0",
            "loop/backing_file",
            "/tmp/sweetspot-scratch-A/backing.img",
        );
        t.mq_deadline_disk();
        let k = FakeKernel::default();
        let mut s = Store::open(&t.dir.path().join("s.db")).unwrap();
        let owner = &Owner::Bench;
        let loop0 = find(&t.root, "loop0").unwrap();
        let sda = find(&t.root, "sda").unwrap();
        // A killed scratch run's baseline on loop0 and a host-wide knob, and an admin's `set`
        // on sda (not a benchmark's: never listed).
        apply_with(&k, &mut s, &t.root, &loop0, &one("fifo_batch", 4), owner).unwrap();
        apply_host_with(&k, &mut s, &t.root, &one("dirty_ratio", 30), owner).unwrap();
        apply_with(
            &k,
            &mut s,
            &t.root,
            &sda,
            &one("fifo_batch", 8),
            &Owner::Set,
        )
        .unwrap();
        let db = s.path().to_path_buf();
        let all = killed_bench_knobs(&s, &t.root).unwrap();
        // dirty_bytes (0, zeroed by the dirty_ratio write) is journaled too, but restore
        // writes only dirty_ratio: not counted.
        assert_eq!(
            names(&all),
            [
                (Some("loop0"), "fifo_batch", "16"),
                (None, "dirty_ratio", "20"),
            ]
        );
        assert_eq!(all[0].identity.as_deref(), Some(loop0.identity.as_str()));
        assert_eq!(
            note(&all, &db, &t.root).unwrap(),
            format!(
                "2 knobs journaled by a killed `bench` or `tune --scratch` are still open: \
                 fifo_batch on loop0 and dirty_ratio host-wide; `sweetspot --db {} \
                 --sysfs-root {} --procfs-root {} restore` puts them back",
                db.display(),
                t.root.sys.display(),
                t.root.proc.display(),
            )
        );
        // A bench that is alive holds loop0's lock: its entries are its own, not a dead one's.
        let held = DeviceLock::acquire(
            &lock::path(&db, &t.root, &loop0.identity),
            "loop0",
            Holder::me("bench"),
        )
        .unwrap();
        let host = killed_bench_knobs(&s, &t.root).unwrap();
        assert_eq!(names(&host), [(None, "dirty_ratio", "20")]);
        drop(held);
        // loop0 detached since (no backing file): nothing to put back there, so not listed.
        t.set("loop0", "loop/backing_file", "");
        assert_eq!(killed_bench_knobs(&s, &t.root).unwrap().len(), 1);
        t.set(
            "loop0",
            "loop/backing_file",
            "/tmp/sweetspot-scratch-A/backing.img",
        );
        // The next tune, daemon or restore puts them back: nothing is listed after it.
        assert_eq!(
            super::super::recover_benches(&k, &mut s, &t.root).unwrap(),
            2
        );
        assert_eq!(t.get("loop0", "queue/iosched/fifo_batch"), "16");
        assert_eq!(t.vm("dirty_ratio"), "20");
        assert!(killed_bench_knobs(&s, &t.root).unwrap().is_empty());
        assert_eq!(note(&[], &db, &t.root), None);
        let single = [OpenKnob {
            device: Some("loop0".into()),
            identity: None,
            knob: "scheduler".into(),
            original: "mq-deadline".into(),
        }];
        assert!(note(&single, &db, &t.root).unwrap().starts_with(
            "1 knob journaled by a killed `bench` or `tune --scratch` is still open: \
                     scheduler on loop0; `"
        ),);
        assert!(
            note(&single, &db, &t.root)
                .unwrap()
                .ends_with(" restore` puts it back")
        );
    }

    /// `status` counts what `restore` writes back: a killed bench switched loop0 from `none`
    /// to mq-deadline, then set fifo_batch and dirty_ratio (dirty_bytes journaled as 0 beside
    /// it). The restore writes the scheduler (which drops mq-deadline's `iosched/`, so its
    /// fifo_batch is obsolete), nr_requests (the switch's side effect) and dirty_ratio: 3
    /// knobs, not 5 journal rows.
    #[test]
    fn the_open_knobs_are_those_a_restore_writes_back() {
        let t = FakeTree::new();
        t.disk("loop0", "7:0", "[none] mq-deadline", 128).set(
            "loop0",
            "loop/backing_file",
            "/tmp/sweetspot-scratch-B/backing.img",
        );
        let k = FakeKernel::default();
        let mut s = Store::open(&t.dir.path().join("s.db")).unwrap();
        let owner = &Owner::Bench;
        let loop0 = find(&t.root, "loop0").unwrap();
        let mut sched = Setting::new();
        sched.insert("scheduler".into(), KnobValue::Name("mq-deadline".into()));
        apply_with(&k, &mut s, &t.root, &loop0, &sched, owner).unwrap();
        let loop0 = find(&t.root, "loop0").unwrap();
        apply_with(&k, &mut s, &t.root, &loop0, &one("fifo_batch", 4), owner).unwrap();
        apply_host_with(&k, &mut s, &t.root, &one("dirty_ratio", 30), owner).unwrap();
        let open = killed_bench_knobs(&s, &t.root).unwrap();
        assert_eq!(
            names(&open),
            [
                (Some("loop0"), "scheduler", "none"),
                (Some("loop0"), "nr_requests", "128"),
                (None, "dirty_ratio", "20"),
            ]
        );
        let written = super::super::recover_benches(&k, &mut s, &t.root).unwrap();
        assert_eq!(written, open.len());
        assert!(killed_bench_knobs(&s, &t.root).unwrap().is_empty());
    }
}
