#![allow(clippy::unwrap_used)]
use super::*;
use crate::testkit::tree::FakeTree;
use crate::types::Owner;

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
    m.poll(&mut store, &t.root, &db, &p, &Busy::default())
        .unwrap();
    assert_eq!(t.get("sda", "queue/iosched/read_expire"), "10");
    assert_eq!(t.get("sdb", "queue/iosched/slice_idle"), "0");
    // What HZ=250 reads back for 10 ms, and another writer's slice_idle.
    t.set("sda", "queue/iosched/read_expire", "12")
        .set("sdb", "queue/iosched/slice_idle", "8");
    let ev = m
        .poll(&mut store, &t.root, &db, &p, &Busy::default())
        .unwrap();
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
        host: false,
    };
    crate::knob::apply::restore(&mut store, &t.root, Some("sda"), Some(&Owner::Profile)).unwrap();
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
fn the_profiles_host_wide_knobs_are_applied_and_managed_under_the_hosts_lock() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("d.db");
    let mut store = Store::open(&db).unwrap();
    let mut p = profile();
    p.host = Some(crate::profile::Host {
        knobs: [("dirty_ratio".to_string(), 10.into())].into(),
        ..Default::default()
    });
    let none = Busy::default();
    let mut m = Manager::default();
    // Another writer holds the host's lock: said, and tried again at the next poll.
    let held = DeviceLock::acquire(
        &crate::lock::path(&db, &t.root, HOST),
        "the host (dirty_ratio)",
        Holder::me("set"),
    )
    .unwrap();
    let ev = m.poll(&mut store, &t.root, &db, &p, &none).unwrap();
    assert!(
        matches!(&ev[..], [Event::Applied(d, _), Event::Busy(h, why)]
            if d == "sda" && h == HOST_LABEL && why.contains("`sweetspot set`")),
        "{ev:?}"
    );
    assert_eq!(t.vm("dirty_ratio"), "20");
    drop(held);
    let ev = m.poll(&mut store, &t.root, &db, &p, &none).unwrap();
    assert_eq!(
        ev,
        vec![Event::Applied(
            HOST_LABEL.into(),
            vec![("dirty_ratio".into(), "20".into(), "10".into())]
        )]
    );
    assert_eq!(
        describe(&ev[0]),
        "host-wide knobs: applied the profile's: dirty_ratio 20 → 10"
    );
    assert_eq!(t.vm("dirty_ratio"), "10");
    assert!(m.manages(HOST));
    assert_eq!(m.poll(&mut store, &t.root, &db, &p, &none).unwrap(), vec![]);
    // Another writer: re-applied once, under the host's lock, journaled.
    std::fs::write(t.root.vm().join("dirty_ratio"), "30\n").unwrap();
    let ev = m.poll(&mut store, &t.root, &db, &p, &none).unwrap();
    assert_eq!(
        ev,
        vec![Event::Contested(
            HOST_LABEL.into(),
            "dirty_ratio".into(),
            "10".into(),
            "30".into(),
            false
        )]
    );
    assert_eq!(t.vm("dirty_ratio"), "10");
    // A retune whose policy tunes host-wide knobs owns them: not checked meanwhile.
    let busy = Busy {
        device: None,
        host: true,
    };
    std::fs::write(t.root.vm().join("dirty_ratio"), "25\n").unwrap();
    assert_eq!(m.poll(&mut store, &t.root, &db, &p, &busy).unwrap(), vec![]);
    std::fs::write(t.root.vm().join("dirty_ratio"), "10\n").unwrap();
    // `restore` puts everything back, the host-wide knob too: both released.
    crate::knob::apply::restore(&mut store, &t.root, None, None).unwrap();
    assert_eq!(t.vm("dirty_ratio"), "20");
    let ev = m.poll(&mut store, &t.root, &db, &p, &none).unwrap();
    assert!(
        matches!(&ev[..], [Event::Restored(d, _), Event::Restored(h, _)]
            if d == "sda" && h == HOST_LABEL),
        "{ev:?}"
    );
    assert_eq!(m.poll(&mut store, &t.root, &db, &p, &none).unwrap(), vec![]);
    assert_eq!(t.vm("dirty_ratio"), "20");
    // A reload whose profile has no host-wide knobs: nothing of the host is managed.
    p.host = None;
    m.reconcile(&t.root, &p, &none).unwrap();
    m.poll(&mut store, &t.root, &db, &p, &none).unwrap();
    assert!(!m.manages(HOST));
    assert_eq!(t.vm("dirty_ratio"), "20");
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
    // A reload (SIGHUP) hands the contested knob back: the next poll applies the sweet spot
    // again and manages it afresh.
    m.reconcile(&t.root, &p, &Busy::default()).unwrap();
    let ev = m
        .poll(&mut store, &t.root, &db, &p, &Busy::default())
        .unwrap();
    assert!(
        matches!(&ev[..], [Event::Applied(d, c)] if d == "sda" && c.len() == 1),
        "{ev:?}"
    );
    assert_eq!(t.get("sda", "queue/read_ahead_kb"), "256");
    assert_eq!(m.managed[&key].contested, None);
    assert!(m.contested("wwid:naa.5000c500a1b2c3d4").is_empty());
    // Everything the daemon wrote is journaled: restore puts the originals back.
    crate::knob::apply::restore(&mut store, &t.root, None, None).unwrap();
    assert_eq!(t.get("sda", "queue/read_ahead_kb"), "128");
    assert_eq!(t.get("sdq", "queue/iosched/fifo_batch"), "16");
}
