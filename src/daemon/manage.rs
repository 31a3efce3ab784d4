//! Keeping devices at their sweet spot, one poll at a time (no async here, so it is tested
//! on fake sysfs trees):
//!
//! - a disk seen for the first time (at start, or attached later: a cheap listing of
//!   `/sys/block` every poll) gets its profile entry, through the journaled path: of the
//!   entries matching it, the narrowest, as `profile apply` picks it
//!   ([`crate::profile::overlap::entry_for`]), and that entry's values are the ones managed;
//! - a managed value that changed behind the daemon's back is "contested by another writer":
//!   logged with the knob and both values, re-applied once, and after a second change left
//!   alone for good (as bpftune backs off), so the daemon never fights in a loop;
//! - a disk a retune works on is the retune's ([`Busy`]): neither applied nor checked, so the
//!   retune's own writes and its restore at the start and the end are never taken for another
//!   writer; when it ends the disk is forgotten and applied afresh;
//! - a managed value that changed because `sweetspot restore` put it back is the admin's
//!   explicit choice, not contention: the disk is released, no longer managed (nor retuned)
//!   until the daemon restarts or reloads its config (SIGHUP). A restore is told from
//!   another writer by the journal: an entry of the disk's knobs that was open at the last
//!   poll that found them as managed (with no other writer holding the disk's lock), or right
//!   after the daemon wrote them, is closed now, and a value changed. The daemon itself closes
//!   such entries only when a retune starts ([`super::retune::Job::start`]), on a disk that is
//!   then the retune's and is forgotten when it ends.

use crate::Result;
use crate::device;
use crate::knob::apply::apply_with;
use crate::knob::discover;
use crate::knob::io::RealIo;
use crate::lock::{DeviceLock, Holder, Taken};
use crate::profile::Profile;
use crate::profile::apply::{Status, apply};
use crate::profile::overlap::entry_for;
use crate::store::Store;
use crate::sysroot::SysRoot;
use crate::types::Setting;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One managed knob of one disk.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Managed {
    /// The disk's kernel name now.
    pub device: String,
    /// The profile's value.
    pub expected: String,
    /// True once re-applied after a first change behind our back.
    pub reapplied: bool,
    /// The value another writer keeps setting: the knob is no longer managed.
    pub contested: Option<String>,
}

/// A disk `sweetspot restore` put back while the daemon managed it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Released {
    /// The disk's kernel name then.
    pub device: String,
    /// When the daemon saw it (Unix s).
    pub at: i64,
}

/// What a retune in progress owns, which the manager leaves alone: it neither applies nor
/// checks it, so the retune's own writes and restores are never taken for another writer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Busy {
    /// The identity of the disk being retuned.
    pub device: Option<String>,
}

/// What a poll did, for the log.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A disk (new to the daemon) got its profile: `(device, knob, from, to)` per change.
    Applied(String, Vec<(String, String, String)>),
    /// Applying to a disk failed (the error names knob, value, errno).
    Failed(String, String),
    /// A managed value changed: `(device, knob, expected, found, backed_off)`.
    Contested(String, String, String, String, bool),
    /// Another writer holds the disk (a tune, `set`): left for a later poll.
    Busy(String, String),
    /// `sweetspot restore` put the disk's knobs back: `(device, [(knob, expected, found)])`;
    /// no longer managed.
    Restored(String, Vec<(String, String, String)>),
}

/// The manager's state between polls.
#[derive(Debug, Default, Serialize)]
pub struct Manager {
    /// Disks already handled, by identity.
    seen: BTreeSet<String>,
    /// Managed knobs by (identity, knob).
    pub managed: BTreeMap<(String, String), Managed>,
    /// Per identity: the ids of the open journal entries of its knobs at the last poll that
    /// found them all as managed with no other writer holding its lock, or right after the
    /// daemon wrote them. One of them closed since, and a value changed: a `restore`.
    journaled: BTreeMap<String, BTreeSet<i64>>,
    /// Disks `sweetspot restore` put back: not managed nor retuned until the
    /// daemon restarts or reloads its config ([`Manager::reconcile`]).
    pub released: BTreeMap<String, Released>,
}

/// The ids of the open journal entries of `dev`'s knobs (under its name and identity).
fn open_ids(store: &Store, dev: &device::Device) -> Result<BTreeSet<i64>> {
    Ok(store
        .journal_open(Some(&dev.name), None)?
        .into_iter()
        .filter(|e| e.identity.as_deref() == Some(dev.identity.as_str()))
        .map(|e| e.id)
        .collect())
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl Manager {
    /// Forgets a disk (after a retune stored a new sweet spot): the next poll applies its
    /// profile afresh and manages the new values. A released disk stays released.
    pub fn forget(&mut self, identity: &str) {
        self.seen.remove(identity);
        self.managed.retain(|(i, _), _| i != identity);
        self.journaled.remove(identity);
    }

    /// After a config reload (`profile` is the new one): a present disk whose profile
    /// entries differ from what is managed for it (newly enrolled, no longer enrolled, or
    /// other knobs) is forgotten, so the next [`Manager::poll`] applies its profile as at
    /// start-up; so is every disk `sweetspot restore` released (a reload takes them back). A
    /// disk whose entries are unchanged keeps its state (a contested knob stays left alone).
    /// `busy` (what a retune works on) is left to the retune.
    pub fn reconcile(&mut self, root: &SysRoot, profile: &Profile, busy: &Busy) -> Result<()> {
        for id in std::mem::take(&mut self.released).into_keys() {
            self.forget(&id);
        }
        for dev in device::list(root)? {
            if !self.seen.contains(&dev.identity)
                || busy.device.as_deref() == Some(dev.identity.as_str())
            {
                continue;
            }
            // The entry `profile apply` would apply (the narrowest), as poll manages it; two
            // equally narrow ones: forgotten, so that the next poll says why it applies none.
            let Ok(entry) = entry_for(root, &dev, profile) else {
                self.forget(&dev.identity);
                continue;
            };
            let wanted: BTreeMap<String, String> = entry
                .iter()
                .flat_map(|e| &e.knobs)
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect();
            if wanted != self.expected(&dev.identity) {
                self.forget(&dev.identity);
            }
        }
        Ok(())
    }

    /// The managed values of `identity`, by knob.
    fn expected(&self, identity: &str) -> BTreeMap<String, String> {
        self.managed
            .iter()
            .filter(|((i, _), _)| i == identity)
            .map(|((_, k), m)| (k.clone(), m.expected.clone()))
            .collect()
    }

    /// True when the daemon has applied the disk's profile and manages at least one knob.
    pub fn manages(&self, identity: &str) -> bool {
        self.managed.keys().any(|(i, _)| i == identity)
    }

    /// The disk's contested knobs: `knob (another writer keeps value)`.
    pub fn contested(&self, identity: &str) -> Vec<String> {
        self.managed
            .iter()
            .filter(|((i, _), _)| i == identity)
            .filter_map(|((_, k), m)| {
                m.contested
                    .as_ref()
                    .map(|v| format!("{k} (another writer keeps {v})"))
            })
            .collect()
    }

    /// One poll: profile entries for disks not seen before, then drift of managed knobs (a
    /// restore releases; another writer is contested). The disk `busy` names is left to the
    /// retune in progress.
    pub fn poll(
        &mut self,
        store: &mut Store,
        root: &SysRoot,
        db: &Path,
        profile: &Profile,
        busy: &Busy,
    ) -> Result<Vec<Event>> {
        let present = device::list(root)?;
        let mut events = Vec::new();
        let busy_disk = |d: &device::Device| busy.device.as_deref() == Some(d.identity.as_str());
        for dev in &present {
            if self.seen.contains(&dev.identity)
                || self.released.contains_key(&dev.identity)
                || busy_disk(dev)
            {
                continue;
            }
            let outcomes = match apply(store, root, db, profile, Some(&dev.name), false, "daemon") {
                Ok(o) => o,
                // Held by another writer, or refused as a whole: said, and tried again later.
                Err(e) => {
                    events.push(Event::Busy(dev.name.clone(), e.to_string()));
                    continue;
                }
            };
            self.seen.insert(dev.identity.clone());
            for o in outcomes {
                match o.status {
                    Status::Applied { changes } => {
                        events.push(Event::Applied(dev.name.clone(), changes))
                    }
                    Status::Failed { error } => events.push(Event::Failed(dev.name.clone(), error)),
                    _ => {}
                }
            }
            // What `apply` wrote: the narrowest matching entry's knobs, not a broader one's.
            // (`apply` resolved the same entries without an error just now.)
            let entry = entry_for(root, dev, profile).ok().flatten();
            for (k, v) in entry.iter().flat_map(|e| &e.knobs) {
                self.managed.insert(
                    (dev.identity.clone(), k.clone()),
                    Managed {
                        device: dev.name.clone(),
                        expected: v.to_string(),
                        reapplied: false,
                        contested: None,
                    },
                );
            }
            self.snapshot(store, dev)?;
        }
        // A disk that went away is handled afresh when it comes back.
        let ids: BTreeSet<&str> = present.iter().map(|d| d.identity.as_str()).collect();
        self.seen.retain(|i| ids.contains(i.as_str()));
        self.managed.retain(|(i, _), _| ids.contains(i.as_str()));
        self.journaled.retain(|i, _| ids.contains(i.as_str()));
        for dev in present.iter().filter(|d| !busy_disk(d)) {
            self.check(store, root, db, profile, dev, &mut events)?;
        }
        Ok(events)
    }

    /// Remembers which journal entries of `dev`'s knobs are open now ([`Manager::journaled`]).
    fn snapshot(&mut self, store: &Store, dev: &device::Device) -> Result<()> {
        let ids = open_ids(store, dev)?;
        self.journaled.insert(dev.identity.clone(), ids);
        Ok(())
    }

    /// Drift of `dev`'s managed knobs: none (the journal snapshot is refreshed when no other
    /// writer holds its lock), a `restore` (released), or another writer (contested:
    /// re-applied once, then left alone).
    fn check(
        &mut self,
        store: &mut Store,
        root: &SysRoot,
        db: &Path,
        profile: &Profile,
        dev: &device::Device,
        events: &mut Vec<Event>,
    ) -> Result<()> {
        let id = dev.identity.clone();
        let expected = self.expected(&id);
        if expected.is_empty() {
            return Ok(());
        }
        let now = discover::knobs(root, dev)?;
        let found = |k: &str| {
            now.iter()
                .find(|x| x.name == k)
                .map_or_else(|| "absent".to_string(), |x| x.current.to_string())
        };
        let off: Vec<(String, String, String)> = expected
            .iter()
            .map(|(k, want)| (k.clone(), want.clone(), found(k)))
            .filter(|(_, want, f)| f != want)
            .collect();
        let lock_path = crate::lock::path(db, root, &id);
        if off.is_empty() {
            if !crate::lock::held(&lock_path) {
                self.snapshot(store, dev)?;
            }
            return Ok(());
        }
        let open = open_ids(store, dev)?;
        if self
            .journaled
            .get(&id)
            .is_some_and(|before| before.iter().any(|e| !open.contains(e)))
        {
            // Entries the daemon saw open were closed by someone else: `sweetspot restore`.
            self.managed.retain(|(i, _), _| *i != id);
            self.journaled.remove(&id);
            self.released.insert(
                id,
                Released {
                    device: dev.name.clone(),
                    at: unix_now(),
                },
            );
            events.push(Event::Restored(dev.name.clone(), off));
            return Ok(());
        }
        let mut lock: Option<DeviceLock> = None;
        for (k, want, found) in off {
            let key = (id.clone(), k.clone());
            let Some(m) = self.managed.get_mut(&key) else {
                continue;
            };
            if m.contested.is_some() {
                continue;
            }
            if m.reapplied {
                m.contested = Some(found.clone());
                events.push(Event::Contested(dev.name.clone(), k, want, found, true));
                continue;
            }
            if lock.is_none() {
                match DeviceLock::try_acquire(&lock_path, Holder::me("daemon"))? {
                    Taken::Ours(l) => lock = Some(l),
                    // A tune or `set` is writing it now: that is no drift to fight.
                    Taken::Held(_) => return Ok(()),
                }
            }
            m.reapplied = true;
            if let Some(v) = profile_value(profile, root, dev, &k) {
                let mut s = Setting::new();
                s.insert(k.clone(), v);
                if let Err(e) =
                    apply_with(&RealIo, store, root, dev, &s, crate::profile::apply::OWNER)
                {
                    events.push(Event::Failed(dev.name.clone(), e.to_string()));
                }
            }
            events.push(Event::Contested(dev.name.clone(), k, want, found, false));
        }
        if lock.is_some() {
            // Under the lock: what the daemon journaled just now is in the snapshot.
            self.snapshot(store, dev)?;
        }
        Ok(())
    }
}

/// The profile's value of `knob` for `dev`: the value of the entry that applies to it
/// ([`entry_for`]: the narrowest), as `profile apply` wrote it.
fn profile_value(
    profile: &Profile,
    root: &SysRoot,
    dev: &device::Device,
    knob: &str,
) -> Option<crate::types::KnobValue> {
    entry_for(root, dev, profile)
        .ok()
        .flatten()
        .and_then(|e| e.knobs.get(knob).cloned())
}

/// The log line of an event (journald-friendly: one line, no colour).
pub fn describe(e: &Event) -> String {
    match e {
        Event::Applied(d, changes) if changes.is_empty() => {
            format!("{d}: already at its sweet spot")
        }
        Event::Applied(d, changes) => {
            let c: Vec<String> = changes
                .iter()
                .map(|(k, f, t)| format!("{k} {f} → {t}"))
                .collect();
            format!("{d}: applied its profile: {}", c.join(", "))
        }
        Event::Failed(d, e) => format!("{d}: not applied: {e}"),
        Event::Restored(d, off) => {
            let c: Vec<String> = off
                .iter()
                .map(|(k, want, found)| format!("{k} {found} (profile {want})"))
                .collect();
            format!(
                "{d}: restored by `sweetspot restore` ({}): no longer managed until the daemon \
                 restarts or reloads its config (SIGHUP)",
                c.join(", ")
            )
        }
        Event::Busy(d, e) => format!("{d}: not applied now, trying again at the next poll: {e}"),
        Event::Contested(d, k, want, found, false) => format!(
            "{d}: {k} contested by another writer: profile {want}, found {found}; re-applied once"
        ),
        Event::Contested(d, k, want, found, true) => format!(
            "{d}: {k} contested by another writer again: profile {want}, found {found}; \
             backing off (no longer managed until the daemon restarts)"
        ),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::testkit::tree::FakeTree;

    fn profile() -> Profile {
        crate::testkit::profile::profile(&[
            (
                "sda",
                r#"wwid = "naa.5000c500a1b2c3d4""#,
                "6.18.0",
                "read_ahead_kb = 256",
            ),
            (
                "sdx",
                r#"wwid = "naa.5000c500eeeeeeee""#,
                "6.18.0",
                "fifo_batch = 4",
            ),
        ])
    }

    /// sda's model-wide entry (`read_ahead_kb = 512`, `fifo_batch = 8`) and its one-disk
    /// entry (`read_ahead_kb = 256`), in the order `narrow_first` says.
    fn overlapping(narrow_first: bool, broad_ra: u32) -> Profile {
        let broad_knobs = format!("read_ahead_kb = {broad_ra}, fifo_batch = 8");
        let broad = (
            "fleet",
            r#"model = "ST2000DM008""#,
            "6.18.0",
            broad_knobs.as_str(),
        );
        let narrow = (
            "sda",
            r#"wwid = "naa.5000c500a1b2c3d4""#,
            "6.18.0",
            "read_ahead_kb = 256",
        );
        if narrow_first {
            crate::testkit::profile::profile(&[narrow, broad])
        } else {
            crate::testkit::profile::profile(&[broad, narrow])
        }
    }

    #[test]
    fn manages_the_narrowest_entry_as_profile_apply_does_not_a_broader_one() {
        const SDA: &str = "wwid:naa.5000c500a1b2c3d4";
        for narrow_first in [false, true] {
            let t = FakeTree::new();
            t.mq_deadline_disk();
            let dir = tempfile::tempdir().unwrap();
            let db = dir.path().join("d.db");
            let mut store = Store::open(&db).unwrap();
            let p = overlapping(narrow_first, 512);
            let mut m = Manager::default();
            let ev = m
                .poll(&mut store, &t.root, &db, &p, &Busy::default())
                .unwrap();
            assert_eq!(
                ev,
                vec![Event::Applied(
                    "sda".into(),
                    vec![("read_ahead_kb".into(), "128".into(), "256".into())]
                )],
                "narrow first: {narrow_first}"
            );
            assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "16");
            // Managed: the narrow entry's knobs and values, as written; not the broad one's.
            let managed: Vec<(&str, &str, &str)> = m
                .managed
                .iter()
                .map(|((i, k), v)| (i.as_str(), k.as_str(), v.expected.as_str()))
                .collect();
            assert_eq!(managed, [(SDA, "read_ahead_kb", "256")]);
            assert_eq!(
                m.poll(&mut store, &t.root, &db, &p, &Busy::default())
                    .unwrap(),
                vec![],
                "no drift: the disk is as the profile left it (narrow first: {narrow_first})"
            );
            // Another writer: the narrow entry's value is put back, not the broad one's.
            t.set("sda", "queue/read_ahead_kb", "4096");
            let ev = m
                .poll(&mut store, &t.root, &db, &p, &Busy::default())
                .unwrap();
            assert_eq!(
                ev,
                vec![Event::Contested(
                    "sda".into(),
                    "read_ahead_kb".into(),
                    "256".into(),
                    "4096".into(),
                    false
                )]
            );
            assert_eq!(t.get("sda", "queue/read_ahead_kb"), "256");
            assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "16");
            // A reload that changes only the broad entry changes nothing on sda: its state
            // (re-applied once) is kept, and nothing is applied again.
            let key = (SDA.to_string(), "read_ahead_kb".to_string());
            m.reconcile(&t.root, &overlapping(narrow_first, 1024), &Busy::default())
                .unwrap();
            assert!(m.managed[&key].reapplied, "narrow first: {narrow_first}");
            assert_eq!(
                m.poll(&mut store, &t.root, &db, &p, &Busy::default())
                    .unwrap(),
                vec![]
            );
            // One that changes the narrow entry: sda is handled afresh.
            let other = crate::testkit::profile::profile(&[(
                "sda",
                r#"wwid = "naa.5000c500a1b2c3d4""#,
                "6.18.0",
                "read_ahead_kb = 384",
            )]);
            m.reconcile(&t.root, &other, &Busy::default()).unwrap();
            assert!(!m.manages(SDA));
            m.poll(&mut store, &t.root, &db, &other, &Busy::default())
                .unwrap();
            assert_eq!(t.get("sda", "queue/read_ahead_kb"), "384");
            assert_eq!(m.managed[&key].expected, "384");
        }
    }

    #[test]
    fn a_reload_to_two_equally_narrow_entries_forgets_the_disk_and_says_why() {
        let t = FakeTree::new();
        t.mq_deadline_disk();
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("d.db");
        let mut store = Store::open(&db).unwrap();
        let mut m = Manager::default();
        m.poll(
            &mut store,
            &t.root,
            &db,
            &overlapping(false, 512),
            &Busy::default(),
        )
        .unwrap();
        assert!(m.manages("wwid:naa.5000c500a1b2c3d4"));
        // The reader refuses such a file; a profile built in memory can still hold one.
        let mut tie = crate::testkit::profile::profile(&[(
            "a",
            r#"wwid = "naa.5000c500a1b2c3d4""#,
            "6.18.0",
            "read_ahead_kb = 256",
        )]);
        tie.devices.push(tie.devices[0].clone());
        m.reconcile(&t.root, &tie, &Busy::default()).unwrap();
        assert!(!m.manages("wwid:naa.5000c500a1b2c3d4"));
        let ev = m
            .poll(&mut store, &t.root, &db, &tie, &Busy::default())
            .unwrap();
        assert!(
            matches!(&ev[..], [Event::Busy(d, e)] if d == "sda" && e.contains("neither is narrower")),
            "{ev:?}"
        );
        assert_eq!(t.get("sda", "queue/read_ahead_kb"), "256");
    }

    #[test]
    fn a_restore_releases_the_disk_until_a_reload_and_a_retune_is_no_restore() {
        const SDA: &str = "wwid:naa.5000c500a1b2c3d4";
        let t = FakeTree::new();
        t.mq_deadline_disk();
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("d.db");
        let mut store = Store::open(&db).unwrap();
        let p = profile();
        let none = Busy::default();
        let mut m = Manager::default();
        m.poll(&mut store, &t.root, &db, &p, &none).unwrap();
        assert_eq!(t.get("sda", "queue/read_ahead_kb"), "256");
        // `sweetspot restore sda`: the daemon's entry is closed by someone else.
        crate::knob::apply::restore(&mut store, &t.root, Some("sda"), None).unwrap();
        let ev = m.poll(&mut store, &t.root, &db, &p, &none).unwrap();
        assert_eq!(
            ev,
            vec![Event::Restored(
                "sda".into(),
                vec![("read_ahead_kb".into(), "256".into(), "128".into())]
            )]
        );
        assert!(describe(&ev[0]).contains("restored by `sweetspot restore`"));
        assert!(!m.manages(SDA));
        assert!(m.released.contains_key(SDA));
        // Left alone: not applied again, not contested.
        assert_eq!(m.poll(&mut store, &t.root, &db, &p, &none).unwrap(), vec![]);
        assert_eq!(t.get("sda", "queue/read_ahead_kb"), "128");
        // A reload takes it back.
        m.reconcile(&t.root, &p, &none).unwrap();
        m.poll(&mut store, &t.root, &db, &p, &none).unwrap();
        assert_eq!(t.get("sda", "queue/read_ahead_kb"), "256");
        assert!(m.manages(SDA) && m.released.is_empty());

        // A retune's restore (the disk is the retune's meanwhile, then forgotten) is neither
        // a restore nor a contest: the disk is applied afresh.
        let busy = Busy {
            device: Some(SDA.into()),
        };
        crate::knob::apply::restore(&mut store, &t.root, Some("sda"), Some("profile")).unwrap();
        assert_eq!(m.poll(&mut store, &t.root, &db, &p, &busy).unwrap(), vec![]);
        m.forget(SDA);
        let ev = m.poll(&mut store, &t.root, &db, &p, &none).unwrap();
        assert!(matches!(&ev[..], [Event::Applied(..)]), "{ev:?}");
        assert_eq!(t.get("sda", "queue/read_ahead_kb"), "256");

        // Another writer (no journal entry closed) is contested, not a restore.
        t.set("sda", "queue/read_ahead_kb", "4096");
        let ev = m.poll(&mut store, &t.root, &db, &p, &none).unwrap();
        assert!(
            matches!(&ev[..], [Event::Contested(_, _, _, _, false)]),
            "{ev:?}"
        );
        assert!(m.released.is_empty());
    }

    #[test]
    fn applies_to_disks_as_they_appear_and_backs_off_a_contested_knob() {
        let t = FakeTree::new();
        t.mq_deadline_disk();
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("d.db");
        let mut store = Store::open(&db).unwrap();
        let p = profile();
        let mut m = Manager::default();
        let ev = m
            .poll(&mut store, &t.root, &db, &p, &Busy::default())
            .unwrap();
        assert_eq!(t.get("sda", "queue/read_ahead_kb"), "256");
        assert!(
            matches!(&ev[..], [Event::Applied(d, c)] if d == "sda" && c.len() == 1),
            "{ev:?}"
        );
        assert!(
            m.poll(&mut store, &t.root, &db, &p, &Busy::default())
                .unwrap()
                .is_empty(),
            "nothing to do"
        );

        // A disk attached after the start gets its values at the next poll.
        t.disk("sdq", "65:0", "none [mq-deadline] kyber bfq", 64)
            .set("sdq", "device/wwid", "naa.5000c500eeeeeeee");
        let ev = m
            .poll(&mut store, &t.root, &db, &p, &Busy::default())
            .unwrap();
        assert_eq!(t.get("sdq", "queue/iosched/fifo_batch"), "4", "{ev:?}");

        // Another writer changes a managed value: re-applied once ...
        t.set("sda", "queue/read_ahead_kb", "4096");
        let ev = m
            .poll(&mut store, &t.root, &db, &p, &Busy::default())
            .unwrap();
        assert_eq!(
            ev,
            vec![Event::Contested(
                "sda".into(),
                "read_ahead_kb".into(),
                "256".into(),
                "4096".into(),
                false
            )]
        );
        assert_eq!(t.get("sda", "queue/read_ahead_kb"), "256");
        assert!(describe(&ev[0]).contains("contested by another writer"));
        // ... and when it changes it again, left alone: no fight in a loop.
        t.set("sda", "queue/read_ahead_kb", "4096");
        let ev = m
            .poll(&mut store, &t.root, &db, &p, &Busy::default())
            .unwrap();
        assert!(
            matches!(&ev[..], [Event::Contested(_, _, _, _, true)]),
            "{ev:?}"
        );
        assert!(
            m.poll(&mut store, &t.root, &db, &p, &Busy::default())
                .unwrap()
                .is_empty()
        );
        assert_eq!(t.get("sda", "queue/read_ahead_kb"), "4096");
        let key = (
            "wwid:naa.5000c500a1b2c3d4".to_string(),
            "read_ahead_kb".to_string(),
        );
        assert_eq!(m.managed[&key].contested.as_deref(), Some("4096"));
        // Everything the daemon wrote is journaled: restore puts the originals back.
        crate::knob::apply::restore(&mut store, &t.root, None, None).unwrap();
        assert_eq!(t.get("sda", "queue/read_ahead_kb"), "128");
        assert_eq!(t.get("sdq", "queue/iosched/fifo_batch"), "16");
    }
}
