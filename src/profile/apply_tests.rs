//! `profile apply` under a kernel that refuses: a zoned disk's scheduler refused before any
//! write, and a write refused half-way rolled back (issue 31, "profile apply under a kernel
//! that refuses").
#![allow(clippy::unwrap_used)]

use super::apply::{ApplyStatus, apply_through};
use crate::knob::io::RealIo;
use crate::store::Store;
use crate::testkit::kernel::FakeKernel;
use crate::testkit::profile::profile;
use crate::testkit::tree::FakeTree;

/// Two mq-deadline disks: `sda` (wwid naa.1) and `sdb` (wwid naa.2).
fn two_disks() -> FakeTree {
    let t = FakeTree::new();
    for (name, dev, wwid) in [("sda", "8:0", "naa.1"), ("sdb", "8:16", "naa.2")] {
        t.disk(name, dev, "none [mq-deadline] kyber bfq", 64)
            .set(name, "device/wwid", wwid);
    }
    t
}

fn open_store(t: &FakeTree) -> (Store, std::path::PathBuf) {
    let db = t.dir.path().join("sweetspot.db");
    (Store::open(&db).unwrap(), db)
}

fn release(t: &FakeTree, r: &str) {
    std::fs::create_dir_all(t.root.kernel_sysctl()).unwrap();
    std::fs::write(t.root.kernel_sysctl().join("osrelease"), format!("{r}\n")).unwrap();
}

#[test]
fn a_refused_write_rolls_back_every_knob_the_apply_wrote() {
    let t = two_disks();
    let (mut store, db) = open_store(&t);
    let p = profile(&[
        (
            "sda",
            "wwid = \"naa.1\"",
            "6.18.0",
            "fifo_batch = 8, read_ahead_kb = 256",
        ),
        (
            "sdb",
            "wwid = \"naa.2\"",
            "6.18.0",
            "fifo_batch = 4, read_ahead_kb = 512",
        ),
    ]);
    let kernel = FakeKernel::default();
    kernel.refuse(
        t.root.block_dev("sdb").join("queue/read_ahead_kb"),
        libc::EINVAL,
    );
    let out = apply_through(&kernel, &mut store, &t.root, &db, &p, None, false, "test").unwrap();
    // sdb's fifo_batch (iosched, before queue knobs) was written, then read_ahead_kb refused.
    assert_eq!(
        kernel.log.borrow()[..4],
        [
            ("fifo_batch".to_string(), "8".to_string()),
            ("read_ahead_kb".into(), "256".into()),
            ("fifo_batch".into(), "4".into()),
            ("read_ahead_kb".into(), "512".into()),
        ]
    );
    for d in ["sda", "sdb"] {
        assert_eq!(t.get(d, "queue/iosched/fifo_batch"), "16", "{d}");
        assert_eq!(t.get(d, "queue/read_ahead_kb"), "128", "{d}");
    }
    assert_eq!(store.journal_open(None, None).unwrap(), []);
    let ApplyStatus::RolledBack { changes, put_back } = &out[0].status else {
        panic!("{:?}", out[0])
    };
    assert_eq!(
        changes,
        &[
            ("fifo_batch".to_string(), "16".to_string(), "8".to_string()),
            ("read_ahead_kb".into(), "128".into(), "256".into()),
        ]
    );
    let mut put_back = put_back.clone();
    put_back.sort();
    assert_eq!(
        put_back,
        [
            ("fifo_batch".to_string(), "16".to_string()),
            ("read_ahead_kb".into(), "128".into())
        ]
    );
    let ApplyStatus::Failed { error } = &out[1].status else {
        panic!("{:?}", out[1])
    };
    assert!(error.contains("read_ahead_kb"), "{error}");
    assert!(error.ends_with("; the apply was rolled back"), "{error}");
}

#[test]
fn a_rollback_puts_back_the_values_an_earlier_apply_had_set() {
    let t = two_disks();
    let (mut store, db) = open_store(&t);
    let first = profile(&[("sda", "wwid = \"naa.1\"", "6.18.0", "fifo_batch = 8")]);
    let kernel = FakeKernel::default();
    apply_through(
        &kernel, &mut store, &t.root, &db, &first, None, false, "test",
    )
    .unwrap();
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "8");
    let second = profile(&[
        (
            "sda",
            "wwid = \"naa.1\"",
            "6.18.0",
            "fifo_batch = 4, nomerges = 1",
        ),
        ("sdb", "wwid = \"naa.2\"", "6.18.0", "nomerges = 2"),
    ]);
    kernel.refuse(t.root.block_dev("sdb").join("queue/nomerges"), libc::EINVAL);
    let out = apply_through(
        &kernel, &mut store, &t.root, &db, &second, None, false, "test",
    )
    .unwrap();
    assert!(
        matches!(out[1].status, ApplyStatus::Failed { .. }),
        "{out:?}"
    );
    // The first apply's value, not the original: the rollback undoes only the second apply.
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "8");
    assert_eq!(t.get("sda", "queue/nomerges"), "0");
    let open: Vec<(String, String)> = store
        .journal_open(None, None)
        .unwrap()
        .into_iter()
        .map(|e| (e.knob, e.original))
        .collect();
    assert_eq!(open, [("fifo_batch".to_string(), "16".to_string())]);
}

#[test]
fn a_zoned_disk_before_6_10_refuses_bfq_before_any_write() {
    let t = two_disks();
    t.set("sdb", "queue/zoned", "host-managed");
    release(&t, "6.8.0-45-generic");
    let (mut store, db) = open_store(&t);
    let p = profile(&[
        ("sda", "wwid = \"naa.1\"", "6.18.0", "fifo_batch = 8"),
        ("sdb", "wwid = \"naa.2\"", "6.18.0", "scheduler = \"bfq\""),
    ]);
    let kernel = FakeKernel::default();
    let e = apply_through(&kernel, &mut store, &t.root, &db, &p, None, false, "test").unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.to_string(),
        "profile entry sdb on sdb: sdb: knob 'scheduler': bad value 'bfq': a host-managed zoned \
         disk on kernel 6.8.0-45-generic (before 6.10) accepts only a zone-aware scheduler \
         (mq-deadline or none); the kernel would refuse it (EINVAL); nothing was applied"
    );
    assert!(kernel.log.borrow().is_empty(), "nothing written");
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "16");
    // `set` goes through the same check; `knobs` shows the narrowed domain.
    let sdb = crate::device::find(&t.root, "sdb").unwrap();
    let set = [("scheduler".to_string(), "kyber".into())]
        .into_iter()
        .collect();
    assert_eq!(
        crate::knob::apply::check(&t.root, &sdb, &set)
            .unwrap_err()
            .exit_code(),
        2
    );
    let knobs = crate::knob::discover::device_knobs(&t.root, "sdb").unwrap();
    assert_eq!(
        knobs[0].domain,
        crate::knob::Domain::Choice(vec!["none".into(), "mq-deadline".into()])
    );

    // From 6.10 on (zone write plugging) the same profile applies.
    release(&t, "6.10.3");
    let out = apply_through(&kernel, &mut store, &t.root, &db, &p, None, false, "test").unwrap();
    assert!(
        matches!(out[1].status, ApplyStatus::Applied { .. }),
        "{out:?}"
    );
    assert_eq!(
        t.get("sdb", "queue/scheduler"),
        "none mq-deadline kyber [bfq]"
    );
    let dry = apply_through(&RealIo, &mut store, &t.root, &db, &p, None, true, "test");
    assert!(dry.is_ok());
}
