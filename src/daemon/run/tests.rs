#![allow(clippy::unwrap_used)]
use super::*;
use crate::testkit::tree::FakeTree;
use std::os::unix::fs::MetadataExt;

/// The state file's inode and mtime (s, ns): a rewrite (a new file renamed over it) changes
/// the inode.
fn stamp(p: &Path) -> (u64, i64, i64) {
    let m = std::fs::metadata(p).unwrap();
    (m.ino(), m.mtime(), m.mtime_nsec())
}

/// sdb (8:16), with a WWID: `wwid:naa.5000c500deadbeef`.
fn attach_sdb(t: &FakeTree) {
    t.disk("sdb", "8:16", "none [mq-deadline]", 64).set(
        "sdb",
        "device/wwid",
        "naa.5000c500deadbeef",
    );
}

#[test]
fn an_idle_poll_writes_no_state_and_a_change_is_written() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    const SDB: &str = "wwid:naa.5000c500deadbeef";
    let db = t.dir.path().join("d.db");
    let mut store = Store::open(&db).unwrap();
    // sdb is enrolled but not attached yet; sda is not enrolled: nothing to do.
    let cfg = config::parse(&format!("enroll = [\"{SDB}\"]\n"), Path::new("d.toml")).unwrap();
    let mut st = State {
        watching: true,
        ..State::default()
    };
    let state = state_path(&db);
    poll(&mut st, &mut store, &t.root, &db, &cfg).unwrap();
    let first = stamp(&state);
    let text = std::fs::read_to_string(&state).unwrap();
    assert!(text.contains(r#""waits":{}"#), "{text}");
    std::thread::sleep(std::time::Duration::from_millis(20));
    poll(&mut st, &mut store, &t.root, &db, &cfg).unwrap();
    assert_eq!(stamp(&state), first, "nothing changed: not written again");

    // sdb attached: the listing is kept until its uevent (no rescan at every poll).
    attach_sdb(&t);
    assert_eq!(crate::device::find(&t.root, "sdb").unwrap().identity, SDB);
    poll(&mut st, &mut store, &t.root, &db, &cfg).unwrap();
    assert_eq!(stamp(&state), first, "sdb not listed before its uevent");
    let add = uevent::Event {
        action: "add".into(),
        name: "sdb".into(),
    };
    appeared(&mut st, &mut store, &t.root, &db, &cfg, &[add]).unwrap();
    poll(&mut st, &mut store, &t.root, &db, &cfg).unwrap();
    let second = stamp(&state);
    assert_ne!(second.0, first.0, "its wait changed the state: written");
    let text = std::fs::read_to_string(&state).unwrap();
    assert!(
        text.contains(r#""device":"sdb","due_at":null,"kind":"no filesystem""#),
        "{text}"
    );
    poll(&mut st, &mut store, &t.root, &db, &cfg).unwrap();
    assert_eq!(stamp(&state), second, "unchanged again: not written");

    // A state file removed behind its back is written again.
    std::fs::remove_file(&state).unwrap();
    poll(&mut st, &mut store, &t.root, &db, &cfg).unwrap();
    assert_eq!(std::fs::read_to_string(&state).unwrap(), text);
}

#[test]
fn without_the_uevent_socket_the_disks_are_listed_at_every_poll() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    let db = t.dir.path().join("d.db");
    let mut store = Store::open(&db).unwrap();
    let cfg = config::parse(
        "enroll = [\"wwid:naa.5000c500deadbeef\"]\n",
        Path::new("d.toml"),
    )
    .unwrap();
    let mut st = State::default();
    assert!(!st.watching);
    poll(&mut st, &mut store, &t.root, &db, &cfg).unwrap();
    assert!(st.waits.is_empty());
    attach_sdb(&t);
    poll(&mut st, &mut store, &t.root, &db, &cfg).unwrap();
    let kinds: Vec<(&str, &str)> = st
        .waits
        .values()
        .map(|w| (w.device.as_str(), w.kind))
        .collect();
    assert_eq!(kinds, [("sdb", "no filesystem")]);
}

/// A device another writer holds (a CLI `tune`, whose own loads keep the device's I/O over
/// the threshold) waits as `busy`, naming the holder, not as `not idle` over that I/O.
#[test]
fn a_device_another_writer_holds_waits_busy_naming_it_not_as_not_idle() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    std::fs::create_dir_all(t.root.proc.join("self")).unwrap();
    std::fs::write(
        t.root.proc.join("self/mountinfo"),
        "27 1 8:0 / /data rw,relatime - ext4 /dev/sda rw\n",
    )
    .unwrap();
    let sectors = |n: u64| t.set("sda", "stat", &format!("0 0 0 0 0 0 {n} 0 0 0 0\n"));
    sectors(0);
    let id = crate::device::find(&t.root, "sda").unwrap().identity;
    let db = t.dir.path().join("d.db");
    let mut store = Store::open(&db).unwrap();
    let cfg = config::parse(
        &format!(
            "enroll = [\"{id}\"]\n[idle]\nload_avg_max = 1000\ncpu_busy_pct_max = 100\n\
             device_kib_per_s_max = 100\nfor_s = 0\n"
        ),
        Path::new("d.toml"),
    )
    .unwrap();
    let mut st = State {
        watching: true,
        ..State::default()
    };
    let wait = |st: &State| {
        let w = &st.waits[&id];
        (w.kind, w.detail.clone())
    };
    poll(&mut st, &mut store, &t.root, &db, &cfg).unwrap();
    // 5 GiB written since the last poll: the device is not idle, and nobody holds it.
    sectors(10_000_000);
    poll(&mut st, &mut store, &t.root, &db, &cfg).unwrap();
    let (kind, detail) = wait(&st);
    assert_eq!(kind, "not idle");
    assert!(detail.starts_with("sda I/O "), "{detail}");

    let path = crate::lock::path(&db, &t.root, &id);
    let lock =
        crate::lock::DeviceLock::acquire(&path, "sda", crate::lock::Holder::me("tune")).unwrap();
    sectors(20_000_000);
    poll(&mut st, &mut store, &t.root, &db, &cfg).unwrap();
    let (kind, detail) = wait(&st);
    assert_eq!(kind, "busy");
    assert!(
        detail.starts_with(&format!(
            "sda is in use by `sweetspot tune` (pid {}",
            std::process::id()
        )),
        "{detail}"
    );
    assert!(
        store.tunes(Some(&id)).unwrap().is_empty(),
        "no retune started"
    );
    drop(lock);
}
