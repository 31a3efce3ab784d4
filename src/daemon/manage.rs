//! Keeping devices at their sweet spot, one poll at a time (no async here, so it is tested
//! on fake sysfs trees):
//!
//! - a disk seen for the first time (at start, or attached later: a cheap listing of
//!   `/sys/block` every poll) gets its profile entry, through the journaled path: of the
//!   entries matching it, the narrowest, as `profile apply` picks it
//!   ([`crate::profile::overlap::entry_for`]), and that entry's values are the ones managed;
//! - a managed value that changed behind the daemon's back is "contested by another writer":
//!   logged with the knob and both values, re-applied once, and after a second change left
//!   alone for good (as bpftune backs off), so the daemon never fights in a loop.

use crate::Result;
use crate::device;
use crate::knob::apply::{apply_with, knob_holds};
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
}

/// The manager's state between polls.
#[derive(Debug, Default, Serialize)]
pub struct Manager {
    /// Disks already handled, by identity.
    seen: BTreeSet<String>,
    /// Managed knobs by (identity, knob).
    pub managed: BTreeMap<(String, String), Managed>,
}

impl Manager {
    /// Forgets a disk (after a retune stored a new sweet spot): the next poll applies its
    /// profile afresh and manages the new values.
    pub fn forget(&mut self, identity: &str) {
        self.seen.remove(identity);
        self.managed.retain(|(i, _), _| i != identity);
    }

    /// After a config reload (`profile` is the new one): a present disk whose profile
    /// entries differ from what is managed for it (newly enrolled, no longer enrolled, or
    /// other knobs) is forgotten, so the next [`Manager::poll`] applies its profile as at
    /// start-up. A disk whose entries are unchanged keeps its state (a contested knob stays
    /// left alone). `busy` (the disk a retune works on) is left to the retune.
    pub fn reconcile(
        &mut self,
        root: &SysRoot,
        profile: &Profile,
        busy: Option<&str>,
    ) -> Result<()> {
        for dev in device::list(root)? {
            if !self.seen.contains(&dev.identity) || busy == Some(dev.identity.as_str()) {
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
            let have: BTreeMap<String, String> = self
                .managed
                .iter()
                .filter(|((i, _), _)| *i == dev.identity)
                .map(|((_, k), m)| (k.clone(), m.expected.clone()))
                .collect();
            if wanted != have {
                self.forget(&dev.identity);
            }
        }
        Ok(())
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

    /// One poll: profile entries for disks not seen before, then drift of managed knobs.
    pub fn poll(
        &mut self,
        store: &mut Store,
        root: &SysRoot,
        db: &Path,
        profile: &Profile,
    ) -> Result<Vec<Event>> {
        let present = device::list(root)?;
        let mut events = Vec::new();
        for dev in &present {
            if self.seen.contains(&dev.identity) {
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
        }
        // A disk that went away is handled afresh when it comes back.
        let ids: BTreeSet<&String> = present.iter().map(|d| &d.identity).collect();
        self.seen.retain(|i| ids.contains(i));
        self.managed.retain(|(i, _), _| ids.contains(i));
        for dev in &present {
            let mine: Vec<String> = self
                .managed
                .iter()
                .filter(|((i, _), m)| *i == dev.identity && m.contested.is_none())
                .map(|((_, k), _)| k.clone())
                .collect();
            if mine.is_empty() {
                continue;
            }
            let knobs = discover::knobs(root, dev)?;
            for k in mine {
                let key = (dev.identity.clone(), k.clone());
                let Some(m) = self.managed.get_mut(&key) else {
                    continue;
                };
                let now = knobs.iter().find(|x| x.name == k);
                // Judged as `verify` and the write path judge it (a knob kept in jiffies
                // reads back rounded up to one; every other knob exactly).
                let want = profile_value(profile, root, dev, &k);
                let holds = match (now, &want) {
                    (Some(x), Some(v)) => knob_holds(x, v),
                    (Some(x), None) => x.current.to_string() == m.expected,
                    (None, _) => false,
                };
                if holds {
                    continue;
                }
                let found = now.map_or_else(|| "absent".to_string(), |x| x.current.to_string());
                if m.reapplied {
                    m.contested = Some(found.clone());
                    events.push(Event::Contested(
                        dev.name.clone(),
                        k,
                        m.expected.clone(),
                        found,
                        true,
                    ));
                    continue;
                }
                let lock = match DeviceLock::try_acquire(
                    &crate::lock::path(db, root, &dev.identity),
                    Holder::me("daemon"),
                )? {
                    Taken::Ours(l) => l,
                    // A tune or `set` is writing it now: that is no drift to fight.
                    Taken::Held(_) => continue,
                };
                m.reapplied = true;
                if let Some(v) = want {
                    let mut s = Setting::new();
                    s.insert(k.clone(), v);
                    if let Err(e) =
                        apply_with(&RealIo, store, root, dev, &s, crate::profile::apply::OWNER)
                    {
                        events.push(Event::Failed(dev.name.clone(), e.to_string()));
                    }
                }
                drop(lock);
                events.push(Event::Contested(
                    dev.name.clone(),
                    k,
                    m.expected.clone(),
                    found,
                    false,
                ));
            }
        }
        Ok(events)
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
            let ev = m.poll(&mut store, &t.root, &db, &p).unwrap();
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
                m.poll(&mut store, &t.root, &db, &p).unwrap(),
                vec![],
                "no drift: the disk is as the profile left it (narrow first: {narrow_first})"
            );
            // Another writer: the narrow entry's value is put back, not the broad one's.
            t.set("sda", "queue/read_ahead_kb", "4096");
            let ev = m.poll(&mut store, &t.root, &db, &p).unwrap();
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
            m.reconcile(&t.root, &overlapping(narrow_first, 1024), None)
                .unwrap();
            assert!(m.managed[&key].reapplied, "narrow first: {narrow_first}");
            assert_eq!(m.poll(&mut store, &t.root, &db, &p).unwrap(), vec![]);
            // One that changes the narrow entry: sda is handled afresh.
            let other = crate::testkit::profile::profile(&[(
                "sda",
                r#"wwid = "naa.5000c500a1b2c3d4""#,
                "6.18.0",
                "read_ahead_kb = 384",
            )]);
            m.reconcile(&t.root, &other, None).unwrap();
            assert!(!m.manages(SDA));
            m.poll(&mut store, &t.root, &db, &other).unwrap();
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
        m.poll(&mut store, &t.root, &db, &overlapping(false, 512))
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
        m.reconcile(&t.root, &tie, None).unwrap();
        assert!(!m.manages("wwid:naa.5000c500a1b2c3d4"));
        let ev = m.poll(&mut store, &t.root, &db, &tie).unwrap();
        assert!(
            matches!(&ev[..], [Event::Busy(d, e)] if d == "sda" && e.contains("neither is narrower")),
            "{ev:?}"
        );
        assert_eq!(t.get("sda", "queue/read_ahead_kb"), "256");
    }

    /// A managed knob the kernel keeps in jiffies that reads back rounded up to one is no
    /// drift (as `verify` says), so it is not re-applied; bfq's `slice_idle` (ns) read back as
    /// 8 for 0 is.
    #[test]
    fn drift_is_judged_as_verify_judges_it() {
        let t = FakeTree::new();
        t.mq_deadline_disk().bfq_disk();
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("d.db");
        let mut store = Store::open(&db).unwrap();
        let p = crate::testkit::profile::profile(&[
            (
                "sda",
                r#"wwid = "naa.5000c500a1b2c3d4""#,
                "6.18.0",
                "read_expire = 10",
            ),
            (
                "sdb",
                r#"serial = "WD-WCC6Y1234567", model = "WDC WD10EZEX""#,
                "6.18.0",
                "slice_idle = 0",
            ),
        ]);
        let mut m = Manager::default();
        m.poll(&mut store, &t.root, &db, &p).unwrap();
        assert_eq!(t.get("sda", "queue/iosched/read_expire"), "10");
        assert_eq!(t.get("sdb", "queue/iosched/slice_idle"), "0");
        // What HZ=250 reads back for 10 ms, and another writer's slice_idle.
        t.set("sda", "queue/iosched/read_expire", "12")
            .set("sdb", "queue/iosched/slice_idle", "8");
        let ev = m.poll(&mut store, &t.root, &db, &p).unwrap();
        assert_eq!(
            ev,
            vec![Event::Contested(
                "sdb".into(),
                "slice_idle".into(),
                "0".into(),
                "8".into(),
                false
            )]
        );
        assert_eq!(t.get("sda", "queue/iosched/read_expire"), "12");
        assert_eq!(t.get("sdb", "queue/iosched/slice_idle"), "0");
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
        let ev = m.poll(&mut store, &t.root, &db, &p).unwrap();
        assert_eq!(t.get("sda", "queue/read_ahead_kb"), "256");
        assert!(
            matches!(&ev[..], [Event::Applied(d, c)] if d == "sda" && c.len() == 1),
            "{ev:?}"
        );
        assert!(
            m.poll(&mut store, &t.root, &db, &p).unwrap().is_empty(),
            "nothing to do"
        );

        // A disk attached after the start gets its values at the next poll.
        t.disk("sdq", "65:0", "none [mq-deadline] kyber bfq", 64)
            .set("sdq", "device/wwid", "naa.5000c500eeeeeeee");
        let ev = m.poll(&mut store, &t.root, &db, &p).unwrap();
        assert_eq!(t.get("sdq", "queue/iosched/fifo_batch"), "4", "{ev:?}");

        // Another writer changes a managed value: re-applied once ...
        t.set("sda", "queue/read_ahead_kb", "4096");
        let ev = m.poll(&mut store, &t.root, &db, &p).unwrap();
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
        let ev = m.poll(&mut store, &t.root, &db, &p).unwrap();
        assert!(
            matches!(&ev[..], [Event::Contested(_, _, _, _, true)]),
            "{ev:?}"
        );
        assert!(m.poll(&mut store, &t.root, &db, &p).unwrap().is_empty());
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
