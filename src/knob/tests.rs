//! Discovery, validation, journaled apply and restore on fake sysfs trees with a simulated
//! kernel ([`FakeKernel`]).

use super::apply::{apply_with, restore_with};
use super::*;
use crate::Error;
use crate::device::find;
use crate::store::Store;
use crate::testkit::{kernel::FakeKernel, tree::FakeTree};
use crate::types::Owner;

fn setting(pairs: &[(&str, KnobValue)]) -> Setting {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn store(t: &FakeTree) -> Store {
    Store::open(&t.dir.path().join("s.db")).unwrap()
}

fn names(ks: &[Knob]) -> Vec<&str> {
    ks.iter().map(|k| k.name.as_str()).collect()
}

#[test]
fn discovers_mq_deadline_knobs_in_apply_order_with_unknown_files_listed() {
    let t = FakeTree::new();
    t.mq_deadline_disk()
        .set("sda", "queue/iosched/new_knob", "7");
    let d = find(&t.root, "sda").unwrap();
    let ks = discover::knobs(&t.root, &d).unwrap();
    assert_eq!(ks[0].name, "scheduler");
    assert_eq!(ks[0].current, KnobValue::from("mq-deadline"));
    assert_eq!(ks[1].name, "nr_requests");
    let orders: Vec<ApplyOrder> = ks.iter().map(|k| k.order).collect();
    assert!(orders.windows(2).all(|w| w[0] <= w[1]), "{orders:?}");
    let fb = ks.iter().find(|k| k.name == "fifo_batch").unwrap();
    assert_eq!(fb.current, KnobValue::Int(16));
    assert_eq!(fb.scheduler.as_deref(), Some("mq-deadline"));
    assert_eq!(fb.source.as_deref(), Some("block/mq-deadline.c"));
    let unknown = ks.iter().find(|k| k.name == "new_knob").unwrap();
    assert!(!unknown.known);
    assert_eq!(unknown.current, KnobValue::Int(7));
    assert_eq!(unknown.order, ApplyOrder::Iosched);
    let ms = ks.iter().find(|k| k.name == "max_sectors_kb").unwrap();
    assert_eq!(
        ms.domain,
        Domain::Int { min: 4, max: 32767 },
        "bounded by max_hw_sectors_kb"
    );
    assert!(
        names(&ks).contains(&"dirty_ratio"),
        "host vm knobs included"
    );
}

#[test]
fn discovers_bfq_legacy_cfq_and_nvme_none() {
    let t = FakeTree::new();
    t.bfq_disk().legacy_cfq_disk().nvme_none();
    let bfq = discover::device_knobs(&t.root, "sdb").unwrap();
    let si = bfq.iter().find(|k| k.name == "slice_idle").unwrap();
    assert_eq!(si.domain, Domain::Int { min: 0, max: 4294 });
    assert_eq!(si.unit, "ms");
    let cfq = discover::device_knobs(&t.root, "hda").unwrap();
    let q = cfq.iter().find(|k| k.name == "quantum").unwrap();
    assert!(q.known);
    assert_eq!(q.current, KnobValue::Int(4));
    assert_eq!(q.scheduler.as_deref(), Some("cfq"));
    assert!(q.source.as_deref().unwrap().contains("cfq-iosched.c"));
    assert_eq!(
        cfq[0].domain,
        Domain::Choice(vec![
            "noop".into(),
            "anticipatory".into(),
            "deadline".into(),
            "cfq".into()
        ])
    );
    let nvme = discover::device_knobs(&t.root, "nvme0n1").unwrap();
    assert_eq!(
        names(&nvme),
        [
            "scheduler",
            "nr_requests",
            "read_ahead_kb",
            "max_sectors_kb",
            "nomerges",
            "rq_affinity",
            "wbt_lat_usec"
        ]
    );
}

#[test]
fn find_names_the_scheduler_that_has_a_knob() {
    let t = FakeTree::new();
    t.bfq_disk().nvme_none();
    let d = find(&t.root, "sdb").unwrap();
    let ks = discover::knobs(&t.root, &d).unwrap();
    let e = discover::find(&ks, &d, "fifo_batch")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("exists under scheduler mq-deadline and deadline")
            && e.contains("active scheduler is bfq")
            && e.contains("scheduler=mq-deadline"),
        "{e}"
    );
    let e = discover::find(&ks, &d, "frobnicate")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("unknown knob 'frobnicate'") && e.contains("slice_idle"),
        "{e}"
    );
    let n = find(&t.root, "nvme0n1").unwrap();
    let ks = discover::knobs(&t.root, &n).unwrap();
    let e = discover::find(&ks, &n, "quantum").unwrap_err().to_string();
    assert!(
        e.contains("cfq") && e.contains("nvme0n1 does not offer it"),
        "{e}"
    );
}

/// A knob kept in jiffies holds a value it reads back rounded up to a jiffy (HZ=100: up to
/// 9 ms more; never less, and 0 as 0); every other knob only the exact value.
#[test]
fn holds_rounds_only_knobs_kept_in_jiffies_and_only_up() {
    use super::apply::holds;
    let int = KnobValue::Int;
    assert!(holds(&int(501), true, "504"));
    assert!(holds(&int(501), true, "510"));
    assert!(!holds(&int(501), true, "511"));
    assert!(!holds(&int(500), true, "496"));
    assert!(!holds(&int(0), true, "8"));
    assert!(holds(&int(0), true, "0"));
    assert!(!holds(&int(0), false, "8"));
    assert!(!holds(&int(501), false, "504"));
    assert!(holds(&int(8), false, "8\n"));
    assert!(holds(&KnobValue::Name("bfq".into()), false, "bfq"));
}

#[test]
fn set_and_restore_round_trip_on_mq_deadline() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    let d = find(&t.root, "sda").unwrap();
    let k = FakeKernel::default();
    let mut s = store(&t);
    let set = setting(&[
        ("fifo_batch", 8.into()),
        ("read_ahead_kb", 512.into()),
        ("read_expire", 501.into()),
    ]);
    let ch = apply_with(&k, &mut s, &t.root, &d, &set, &Owner::Set).unwrap();
    assert_eq!(ch.len(), 3);
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "8");
    assert_eq!(t.get("sda", "queue/read_ahead_kb"), "512");
    // Rounded to a jiffy, accepted within 10 ms.
    assert_eq!(t.get("sda", "queue/iosched/read_expire"), "504");
    let open = s.journal_open(Some("sda"), None).unwrap();
    assert_eq!(open.len(), 3);
    assert_eq!(
        open.iter()
            .find(|e| e.knob == "fifo_batch")
            .unwrap()
            .original,
        "16"
    );
    assert_eq!(
        open[0].identity.as_deref(),
        Some("wwid:naa.5000c500a1b2c3d4")
    );

    let n = restore_with(&k, &mut s, &t.root, Some("sda"), None).unwrap();
    assert_eq!(n, 3);
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "16");
    assert_eq!(t.get("sda", "queue/read_ahead_kb"), "128");
    assert_eq!(t.get("sda", "queue/iosched/read_expire"), "500");
    assert!(s.journal_open(None, None).unwrap().is_empty());
    assert_eq!(s.journal_all(None).unwrap().len(), 3, "kept as history");
}

/// Simulates a boot: a new `boot_id`.
fn boot(t: &FakeTree, id: &str) {
    let p = t.root.proc.join("sys/kernel/random/boot_id");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, format!("{id}\n")).unwrap();
}

#[test]
fn an_entry_from_before_boot_ids_is_stale_once_older_than_the_boot() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    let d = find(&t.root, "sda").unwrap();
    let k = FakeKernel::default();
    let mut s = store(&t);
    // Recorded without a boot id (as before schema 2): `set` 8 over 16.
    let set = setting(&[("fifo_batch", 8.into())]);
    apply_with(&k, &mut s, &t.root, &d, &set, &Owner::Set).unwrap();
    let open = s.journal_open(None, None).unwrap();
    assert_eq!(
        (open[0].boot_id.as_deref(), open[0].original.as_str()),
        (None, "16")
    );
    // Still this boot (it started before the entry): nothing is stale.
    let now = open[0].recorded_at;
    let stat = |btime: i64| {
        std::fs::write(
            t.root.proc.join("stat"),
            format!("cpu 1 2\nbtime {btime}\n"),
        )
        .unwrap()
    };
    stat(now - 100);
    boot(&t, "bbbb");
    assert!(
        s.journal_close_stale(&t.root, &t.root.boot())
            .unwrap()
            .is_empty()
    );
    // A reboot after the entry: the kernel reset fifo_batch to 16, a boot script set 12, and
    // a tune now journals 12, its original, and changes it to 4.
    stat(now + 100);
    boot(&t, "cccc");
    t.set("sda", "queue/iosched/fifo_batch", "12");
    let four = setting(&[("fifo_batch", 4.into())]);
    apply_with(&k, &mut s, &t.root, &d, &four, &Owner::Tune(1)).unwrap();
    let open = s.journal_open(None, None).unwrap();
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(open[0].original, "12");
    assert_eq!(restore_with(&k, &mut s, &t.root, None, None).unwrap(), 1);
    assert_eq!(
        t.get("sda", "queue/iosched/fifo_batch"),
        "12",
        "the stale 16 was written"
    );
}

#[test]
fn a_reboot_makes_journaled_originals_stale_but_never_loses_a_new_one() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    let d = find(&t.root, "sda").unwrap();
    let k = FakeKernel::default();
    let mut s = store(&t);
    let set_fifo_batch = |s: &mut Store, v: i64| {
        apply_with(
            &k,
            s,
            &t.root,
            &d,
            &setting(&[("fifo_batch", v.into())]),
            &Owner::Set,
        )
        .unwrap();
    };
    boot(&t, "aaaa");
    set_fifo_batch(&mut s, 8);
    let open = s.journal_open(None, None).unwrap();
    assert_eq!(open[0].boot_id.as_deref(), Some("aaaa"));

    // Reboot: the kernel resets fifo_batch to 16; the admin's boot script sets 12.
    boot(&t, "bbbb");
    t.set("sda", "queue/iosched/fifo_batch", "12");
    assert_eq!(restore_with(&k, &mut s, &t.root, None, None).unwrap(), 0);
    assert_eq!(
        t.get("sda", "queue/iosched/fifo_batch"),
        "12",
        "stale original written"
    );
    assert!(s.journal_open(None, None).unwrap().is_empty());

    // A `set` in boot cccc leaves an open entry; after a reboot (dddd), a new `set` must
    // journal the value read in the new boot (16), so restore puts that back.
    boot(&t, "cccc");
    t.set("sda", "queue/iosched/fifo_batch", "16");
    set_fifo_batch(&mut s, 8);
    boot(&t, "dddd");
    t.set("sda", "queue/iosched/fifo_batch", "16");
    set_fifo_batch(&mut s, 4);
    let open = s.journal_open(None, None).unwrap();
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(
        (open[0].original.as_str(), open[0].boot_id.as_deref()),
        ("16", Some("dddd"))
    );
    assert_eq!(restore_with(&k, &mut s, &t.root, None, None).unwrap(), 1);
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "16");
}

#[test]
fn an_admins_fifo_batch_survives_a_detour_through_bfq() {
    let t = FakeTree::new();
    t.mq_deadline_disk()
        .set("sda", "queue/iosched/fifo_batch", "32")
        .set("sda", "queue/nr_requests", "48")
        .set("sda", "queue/iosched/async_depth", "40");
    let d = find(&t.root, "sda").unwrap();
    let k = FakeKernel::default();
    let mut s = store(&t);
    let set = setting(&[("scheduler", "bfq".into()), ("slice_idle", 0.into())]);
    apply_with(&k, &mut s, &t.root, &d, &set, &Owner::Set).unwrap();
    assert_eq!(
        t.get("sda", "queue/scheduler"),
        "none mq-deadline kyber [bfq]"
    );
    assert_eq!(t.get("sda", "queue/iosched/slice_idle"), "0");
    assert_eq!(
        t.get("sda", "queue/wbt_lat_usec"),
        "0",
        "bfq turned wbt off"
    );
    let journaled: Vec<String> = s
        .journal_open(None, None)
        .unwrap()
        .iter()
        .map(|e| format!("{}={}", e.knob, e.original))
        .collect();
    for want in [
        "scheduler=mq-deadline",
        "fifo_batch=32",
        "nr_requests=48",
        "wbt_lat_usec=75000",
    ] {
        assert!(
            journaled.contains(&want.to_string()),
            "{want} in {journaled:?}"
        );
    }

    restore_with(&k, &mut s, &t.root, None, None).unwrap();
    assert_eq!(
        t.get("sda", "queue/scheduler"),
        "none [mq-deadline] kyber bfq"
    );
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "32");
    assert_eq!(t.get("sda", "queue/nr_requests"), "48");
    assert_eq!(
        t.get("sda", "queue/iosched/async_depth"),
        "40",
        "after nr_requests"
    );
    assert_eq!(t.get("sda", "queue/wbt_lat_usec"), "75000");
    // Order: scheduler, then nr_requests, then iosched, then queue.
    let log: Vec<String> = k.log.borrow().iter().map(|(n, _)| n.clone()).collect();
    let pos = |n: &str| log.iter().rposition(|x| x == n).unwrap();
    assert!(pos("scheduler") < pos("nr_requests"));
    assert!(pos("nr_requests") < pos("fifo_batch"));
    assert!(pos("fifo_batch") < pos("wbt_lat_usec"));
}

#[test]
fn bad_input_changes_nothing_and_journals_nothing() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    let d = find(&t.root, "sda").unwrap();
    let k = FakeKernel::default();
    let mut s = store(&t);
    let cases: Vec<(Setting, &str)> = vec![
        (
            setting(&[("read_ahead_kb", 512.into()), ("fifo_batch", 0.into())]),
            "1–1024",
        ),
        (
            setting(&[("fifo_batch", "eight".into())]),
            "bad value 'eight'",
        ),
        (
            setting(&[("scheduler", "cfq".into())]),
            "one of none, mq-deadline",
        ),
        (
            setting(&[("slice_idle", 4.into())]),
            "exists under scheduler bfq",
        ),
        (setting(&[("nosuch", 1.into())]), "valid knobs: scheduler"),
        (setting(&[("../../x", 1.into())]), "bad knob name"),
        (
            setting(&[("scheduler", "bfq".into()), ("slice_idle", 5000.into())]),
            "0–4294",
        ),
        (
            setting(&[("scheduler", "bfq".into()), ("fifo_batch", 8.into())]),
            "does not exist under scheduler bfq",
        ),
        (
            setting(&[
                ("dirty_ratio", 10.into()),
                ("dirty_bytes", (1 << 20).into()),
            ]),
            "exclusive",
        ),
    ];
    for (set, want) in cases {
        let e = apply_with(&k, &mut s, &t.root, &d, &set, &Owner::Set).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        assert!(e.to_string().contains(want), "{e} should contain {want}");
    }
    assert!(k.log.borrow().is_empty(), "no write at all");
    assert!(s.journal_all(None).unwrap().is_empty());
    assert_eq!(t.get("sda", "queue/read_ahead_kb"), "128");
}

#[test]
fn kernel_refusal_and_clamp_are_errors_with_a_consistent_journal() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    let d = find(&t.root, "sda").unwrap();
    let k = FakeKernel::default();
    let mut s = store(&t);
    let ra = t.root.block_dev("sda").join("queue/read_ahead_kb");
    k.refuse(ra.clone(), libc::EINVAL);
    let set = setting(&[("fifo_batch", 8.into()), ("read_ahead_kb", 512.into())]);
    let e = apply_with(&k, &mut s, &t.root, &d, &set, &Owner::Set).unwrap_err();
    assert!(matches!(e, Error::KnobWrite { .. }), "{e}");
    assert_eq!(e.exit_code(), 1);
    let msg = e.to_string();
    assert!(
        msg.contains("read_ahead_kb") && msg.contains("'512'") && msg.contains("EINVAL"),
        "{msg}"
    );
    // fifo_batch went through (it comes first) and is journaled, so restore undoes it.
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "8");
    assert_eq!(s.journal_open(None, None).unwrap().len(), 2);
    restore_with(&k, &mut s, &t.root, None, None).unwrap();
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "16");

    let k = FakeKernel::default();
    k.clamp(ra, "256");
    let e = apply_with(
        &k,
        &mut s,
        &t.root,
        &d,
        &setting(&[("read_ahead_kb", 512.into())]),
        &Owner::Set,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "read_ahead_kb: not honoured: wrote 512, kernel reads 256"
    );
    assert_eq!(e.exit_code(), 1);
    restore_with(&FakeKernel::default(), &mut s, &t.root, None, None).unwrap();
    assert_eq!(t.get("sda", "queue/read_ahead_kb"), "128");
}

#[test]
fn dirty_pairs_journal_both_and_restore_only_the_nonzero_member() {
    let t = FakeTree::new();
    t.nvme_none();
    let d = find(&t.root, "nvme0n1").unwrap();
    let k = FakeKernel::default();
    let mut s = store(&t);
    let set = setting(&[
        ("dirty_bytes", (64 << 20).into()),
        ("swappiness", 10.into()),
    ]);
    apply_with(&k, &mut s, &t.root, &d, &set, &Owner::Set).unwrap();
    assert_eq!(t.vm("dirty_ratio"), "0");
    assert_eq!(t.vm("dirty_bytes"), "67108864");
    let open = s.journal_open(None, None).unwrap();
    assert!(
        open.iter()
            .any(|e| e.knob == "dirty_ratio" && e.original == "20" && e.device.is_none())
    );
    // A device-only restore leaves host knobs alone.
    assert_eq!(
        restore_with(&k, &mut s, &t.root, Some("nvme0n1"), None).unwrap(),
        0
    );
    assert_eq!(t.vm("swappiness"), "10");
    k.log.borrow_mut().clear();
    restore_with(&k, &mut s, &t.root, None, None).unwrap();
    assert_eq!(t.vm("dirty_ratio"), "20");
    assert_eq!(t.vm("dirty_bytes"), "0");
    assert_eq!(t.vm("swappiness"), "60");
    let written: Vec<String> = k.log.borrow().iter().map(|(n, _)| n.clone()).collect();
    assert!(
        !written.contains(&"dirty_bytes".to_string()),
        "0 bytes never written: {written:?}"
    );
}

#[test]
fn a_tune_restores_only_its_own_entries_and_restore_all_writes_the_oldest() {
    let t = FakeTree::new();
    t.legacy_cfq_disk();
    let d = find(&t.root, "hda").unwrap();
    let k = FakeKernel::default();
    let mut s = store(&t);
    apply_with(
        &k,
        &mut s,
        &t.root,
        &d,
        &setting(&[("quantum", 16.into())]),
        &Owner::Set,
    )
    .unwrap();
    apply_with(
        &k,
        &mut s,
        &t.root,
        &d,
        &setting(&[("quantum", 8.into())]),
        &Owner::Tune(1),
    )
    .unwrap();
    assert_eq!(t.get("hda", "queue/iosched/quantum"), "8");
    restore_with(&k, &mut s, &t.root, Some("hda"), Some(&Owner::Tune(1))).unwrap();
    assert_eq!(
        t.get("hda", "queue/iosched/quantum"),
        "16",
        "the admin's value"
    );
    apply_with(
        &k,
        &mut s,
        &t.root,
        &d,
        &setting(&[("quantum", 2.into())]),
        &Owner::Tune(2),
    )
    .unwrap();
    restore_with(&k, &mut s, &t.root, None, None).unwrap();
    assert_eq!(
        t.get("hda", "queue/iosched/quantum"),
        "4",
        "the true original"
    );
    assert!(s.journal_open(None, None).unwrap().is_empty());
}

/// The undo journal's rule: restoring one owner's entry that lies under a later open entry of
/// another owner writes nothing (the later owner's value stays) and hands the original down, so
/// that after a full `restore` the knob is at its value from before sweetspot first touched it.
/// The daemon's case: its profile writes fifo_batch 16 → 8, an admin's `set` 8 → 4, a retune
/// restores the profile's entries alone, the profile is applied again, then `restore`.
#[test]
fn restoring_one_owners_entry_under_anothers_hands_its_original_down() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    let d = find(&t.root, "sda").unwrap();
    let k = FakeKernel::default();
    let mut s = store(&t);
    let fifo = |v: i64| setting(&[("fifo_batch", v.into())]);
    apply_with(&k, &mut s, &t.root, &d, &fifo(8), &Owner::Profile).unwrap();
    apply_with(&k, &mut s, &t.root, &d, &fifo(4), &Owner::Set).unwrap();
    assert_eq!(open_entries(&s), ["fifo_batch=16", "fifo_batch=8"]);

    let n = restore_with(&k, &mut s, &t.root, Some("sda"), Some(&Owner::Profile)).unwrap();
    assert_eq!(n, 0, "nothing written");
    assert_eq!(
        t.get("sda", "queue/iosched/fifo_batch"),
        "4",
        "the admin's value stays on the knob"
    );
    let open = s.journal_open(None, None).unwrap();
    assert_eq!(
        open.iter()
            .map(|e| (e.owner.clone(), e.original.as_str()))
            .collect::<Vec<_>>(),
        [(Owner::Set, "16")],
        "the true original handed down to set's entry"
    );
    // The profile applied again journals the value it found (4), above set's entry.
    apply_with(&k, &mut s, &t.root, &d, &fifo(8), &Owner::Profile).unwrap();
    assert_eq!(open_entries(&s), ["fifo_batch=16", "fifo_batch=4"]);
    assert_eq!(restore_with(&k, &mut s, &t.root, None, None).unwrap(), 1);
    assert_eq!(
        t.get("sda", "queue/iosched/fifo_batch"),
        "16",
        "the kernel's value from before sweetspot touched it"
    );
    assert!(s.journal_open(None, None).unwrap().is_empty());

    // The top of a stack is written as before: restoring the newest owner alone puts back
    // the value before its change (the one the owner below it wrote).
    apply_with(&k, &mut s, &t.root, &d, &fifo(8), &Owner::Profile).unwrap();
    apply_with(&k, &mut s, &t.root, &d, &fifo(4), &Owner::Set).unwrap();
    assert_eq!(
        restore_with(&k, &mut s, &t.root, Some("sda"), Some(&Owner::Set)).unwrap(),
        1
    );
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "8");
    assert_eq!(open_entries(&s), ["fifo_batch=16"]);
    restore_with(&k, &mut s, &t.root, None, None).unwrap();
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "16");
}

/// A loop queue outlives `losetup -d` (the next file attached inherits its values), so the
/// originals of a detached file are written back to it; once another file is attached, that
/// file's queue is left alone (closed unwritten, with a warning); a device that is gone, or a
/// kernel name that is now another disk (a new queue), has its entries closed unwritten.
#[test]
fn a_loop_queue_gets_its_originals_back_after_its_file_is_detached_or_replaced() {
    let t = FakeTree::new();
    let k = FakeKernel::default();
    let mut s = store(&t);
    let ra = |v: i64| setting(&[("read_ahead_kb", v.into())]);
    t.disk("loop5", "7:5", "[none] mq-deadline", 128);
    for (now, written, after) in [("", 1, "128"), ("/tmp/b.img", 0, "64")] {
        t.set("loop5", "loop/backing_file", "/tmp/a.img").set(
            "loop5",
            "queue/read_ahead_kb",
            "128",
        );
        let d = find(&t.root, "loop5").unwrap();
        apply_with(&k, &mut s, &t.root, &d, &ra(64), &Owner::Set).unwrap();
        // Detached (`now` empty): written back; or another file attached to loop5 since:
        // its queue is left alone.
        t.set("loop5", "loop/backing_file", now);
        assert_eq!(
            restore_with(&k, &mut s, &t.root, None, None).unwrap(),
            written
        );
        assert_eq!(t.get("loop5", "queue/read_ahead_kb"), after, "{now:?}");
        assert!(s.journal_open(None, None).unwrap().is_empty());
    }
    // The file attached now has its own open entry of the knob (journaled after sweetspot's
    // 64 was inherited, by an older sweetspot): that one is restored, the earlier closed.
    t.set("loop5", "loop/backing_file", "/tmp/a.img")
        .set("loop5", "queue/read_ahead_kb", "128");
    let a = find(&t.root, "loop5").unwrap();
    apply_with(&k, &mut s, &t.root, &a, &ra(64), &Owner::Set).unwrap();
    t.set("loop5", "loop/backing_file", "/tmp/b.img");
    let b = find(&t.root, "loop5").unwrap();
    let mut own = s.journal_open(None, None).unwrap()[0].clone();
    own.identity = Some(b.identity.clone());
    s.journal_record(
        &Owner::Tune(1),
        &[crate::store::journal::NewEntry {
            device: own.device.clone(),
            identity: own.identity.clone(),
            for_identity: None,
            knob: own.knob.clone(),
            path: own.path.clone(),
            original: "64".into(),
            order: own.order,
            scheduler: None,
            boot_id: t.root.boot().id,
        }],
    )
    .unwrap();
    t.set("loop5", "queue/read_ahead_kb", "256");
    assert_eq!(restore_with(&k, &mut s, &t.root, None, None).unwrap(), 1);
    assert_eq!(t.get("loop5", "queue/read_ahead_kb"), "64");
    assert!(s.journal_open(None, None).unwrap().is_empty());
    // The loop device is gone (its node removed): nothing to write on.
    apply_with(&k, &mut s, &t.root, &b, &ra(32), &Owner::Set).unwrap();
    std::fs::remove_dir_all(t.root.block_dev("loop5")).unwrap();
    k.log.borrow_mut().clear();
    assert_eq!(restore_with(&k, &mut s, &t.root, None, None).unwrap(), 0);
    assert!(k.log.borrow().is_empty());
    assert!(s.journal_open(None, None).unwrap().is_empty());
    // A disk name that is another disk now (a new queue): closed, not written.
    t.mq_deadline_disk().set("sda", "wwid", "naa.1");
    let sda = find(&t.root, "sda").unwrap();
    apply_with(&k, &mut s, &t.root, &sda, &ra(512), &Owner::Set).unwrap();
    t.set("sda", "wwid", "naa.2")
        .set("sda", "queue/read_ahead_kb", "1024");
    assert_eq!(restore_with(&k, &mut s, &t.root, None, None).unwrap(), 0);
    assert_eq!(t.get("sda", "queue/read_ahead_kb"), "1024");
    assert!(s.journal_open(None, None).unwrap().is_empty());
}

#[test]
fn an_iosched_file_this_kernel_lacks_is_enoent_and_the_switch_is_undone() {
    // A 2.6 kernel's cfq without `group_idle` (added in 2.6.37): the catalogue knows it, the
    // kernel has no file for it after the switch.
    let t = FakeTree::new();
    t.disk("hda", "3:0", "noop anticipatory [deadline] cfq", 128);
    let d = find(&t.root, "hda").unwrap();
    let k = FakeKernel::default();
    let mut s = store(&t);
    let set = setting(&[("scheduler", "cfq".into()), ("group_idle", 4.into())]);
    let e = apply_with(&k, &mut s, &t.root, &d, &set, &Owner::Tune(1)).unwrap_err();
    match &e {
        Error::KnobWrite { knob, source, .. } => {
            assert_eq!(knob, "group_idle");
            assert_eq!(source.raw_os_error(), Some(libc::ENOENT));
        }
        other => panic!("{other}"),
    }
    assert!(
        e.to_string()
            .ends_with("ENOENT (No such file or directory)"),
        "{e}"
    );
    // The switch went through and is journaled, so restore puts deadline back.
    assert!(t.get("hda", "queue/scheduler").contains("[cfq]"));
    restore_with(&k, &mut s, &t.root, None, Some(&Owner::Tune(1))).unwrap();
    assert!(t.get("hda", "queue/scheduler").contains("[deadline]"));
    assert!(s.journal_open(None, None).unwrap().is_empty());
}

#[test]
fn max_sectors_kb_journals_the_read_ahead_it_recomputes_and_restore_puts_both_back() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    let d = find(&t.root, "sda").unwrap();
    let k = FakeKernel::default();
    let mut s = store(&t);
    // Alone: the kernel recomputes read_ahead_kb (2 × 512), which is journaled first.
    apply_with(
        &k,
        &mut s,
        &t.root,
        &d,
        &setting(&[("max_sectors_kb", 512.into())]),
        &Owner::Tune(1),
    )
    .unwrap();
    assert_eq!(t.get("sda", "queue/read_ahead_kb"), "1024");
    let journaled: Vec<String> = s
        .journal_open(None, None)
        .unwrap()
        .iter()
        .map(|e| format!("{}={}", e.knob, e.original))
        .collect();
    assert_eq!(journaled, ["max_sectors_kb=1280", "read_ahead_kb=128"]);
    restore_with(&k, &mut s, &t.root, None, None).unwrap();
    assert_eq!(t.get("sda", "queue/max_sectors_kb"), "1280");
    assert_eq!(
        t.get("sda", "queue/read_ahead_kb"),
        "128",
        "written after max_sectors_kb"
    );

    // Together: read_ahead_kb is written after max_sectors_kb, so its own value stays.
    let both = setting(&[("read_ahead_kb", 64.into()), ("max_sectors_kb", 256.into())]);
    apply_with(&k, &mut s, &t.root, &d, &both, &Owner::Tune(2)).unwrap();
    assert_eq!(t.get("sda", "queue/read_ahead_kb"), "64");
    assert_eq!(t.get("sda", "queue/max_sectors_kb"), "256");
    restore_with(&k, &mut s, &t.root, None, None).unwrap();

    // Journaled read_ahead_kb first (older id), max_sectors_kb later: restore still writes
    // max_sectors_kb first.
    apply_with(
        &k,
        &mut s,
        &t.root,
        &d,
        &setting(&[("read_ahead_kb", 64.into())]),
        &Owner::Tune(3),
    )
    .unwrap();
    apply_with(
        &k,
        &mut s,
        &t.root,
        &d,
        &setting(&[("max_sectors_kb", 256.into())]),
        &Owner::Tune(4),
    )
    .unwrap();
    restore_with(&k, &mut s, &t.root, None, None).unwrap();
    assert_eq!(t.get("sda", "queue/max_sectors_kb"), "1280");
    assert_eq!(t.get("sda", "queue/read_ahead_kb"), "128");
}

#[test]
fn entries_of_a_replaced_loop_file_are_written_back_before_the_new_ones_are_journaled() {
    let t = FakeTree::new();
    t.disk("loop0", "7:0", "none [mq-deadline]", 128).set(
        "loop0",
        "loop/backing_file",
        "/nonexistent/sweetspot-scratch-A/backing.img",
    );
    let k = FakeKernel::default();
    let mut s = store(&t);
    let fifo = |v| setting(&[("fifo_batch", KnobValue::Int(v))]);
    let old = find(&t.root, "loop0").unwrap();
    apply_with(&k, &mut s, &t.root, &old, &fifo(4), &Owner::Bench).unwrap();
    // The run was killed; loop0 is now attached to another file whose queue reads 4.
    t.set(
        "loop0",
        "loop/backing_file",
        "/nonexistent/sweetspot-scratch-B/backing.img",
    );
    let new = find(&t.root, "loop0").unwrap();
    apply_with(&k, &mut s, &t.root, &new, &fifo(8), &Owner::Bench).unwrap();
    // The old device's original (16) went back to the loop queue first, which the new file
    // had inherited 4 from; the new device's original (16) is journaled, not swallowed by
    // the old entry of the same file and owner, which is closed.
    let open = s.journal_open(Some("loop0"), None).unwrap();
    assert!(!open.is_empty());
    assert!(
        open.iter()
            .all(|e| e.identity.as_deref() == Some(new.identity.as_str()))
    );
    let f = open.iter().find(|e| e.knob == "fifo_batch").unwrap();
    assert_eq!(f.original, "16");
    assert_eq!(t.get("loop0", "queue/iosched/fifo_batch"), "8");
    assert_eq!(restore_with(&k, &mut s, &t.root, None, None).unwrap(), 1);
    assert_eq!(t.get("loop0", "queue/iosched/fifo_batch"), "16");
    assert!(s.journal_open(None, None).unwrap().is_empty());
}

#[test]
fn a_closed_entry_says_truthfully_why_it_cannot_be_restored() {
    use super::apply::why_unrestorable;
    let old = Some("loop:/nonexistent/a.img");
    assert_eq!(why_unrestorable("loop0", old, None), "loop0 is gone");
    assert_eq!(
        why_unrestorable("loop0", old, Some("virtual:loop0")),
        "loop0 is no longer attached to /nonexistent/a.img (that file is gone)"
    );
    assert_eq!(
        why_unrestorable("loop0", old, Some("loop:/nonexistent/b.img")),
        "loop0 is now attached to another file (loop:/nonexistent/b.img) (that file is gone)"
    );
    assert_eq!(
        why_unrestorable("sda", Some("wwid:a"), Some("wwid:b")),
        "sda is now another disk (wwid:b)"
    );
}

/// The open entries as `knob=original`, oldest first.
fn open_entries(s: &Store) -> Vec<String> {
    s.journal_open(None, None)
        .unwrap()
        .iter()
        .map(|e| format!("{}={}", e.knob, e.original))
        .collect()
}

#[test]
fn a_set_that_changes_nothing_journals_nothing_and_restore_keeps_the_admins_value() {
    let t = FakeTree::new();
    t.mq_deadline_disk()
        .set("sda", "queue/read_ahead_kb", "2560");
    let d = find(&t.root, "sda").unwrap();
    let k = FakeKernel::default();
    let mut s = store(&t);
    for set in [
        setting(&[("read_ahead_kb", 2560.into())]),
        setting(&[("swappiness", 60.into())]),
        setting(&[("dirty_ratio", 20.into())]),
        setting(&[
            ("scheduler", "mq-deadline".into()),
            ("nr_requests", 64.into()),
        ]),
    ] {
        let ch = apply_with(&k, &mut s, &t.root, &d, &set, &Owner::Set).unwrap();
        assert!(ch.is_empty(), "{set:?}: {ch:?}");
        assert_eq!(open_entries(&s), Vec::<String>::new(), "{set:?}");
    }
    // An admin changes them afterwards: restore has nothing of sweetspot's to put back.
    t.set("sda", "queue/read_ahead_kb", "1024");
    std::fs::write(t.root.vm().join("swappiness"), "30\n").unwrap();
    std::fs::write(t.root.vm().join("dirty_ratio"), "15\n").unwrap();
    assert_eq!(restore_with(&k, &mut s, &t.root, None, None).unwrap(), 0);
    assert_eq!(t.get("sda", "queue/read_ahead_kb"), "1024");
    assert_eq!(t.vm("swappiness"), "30");
    assert_eq!(t.vm("dirty_ratio"), "15");
}

#[test]
fn only_the_knobs_a_set_changes_are_journaled_with_their_side_effects() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    let d = find(&t.root, "sda").unwrap();
    let k = FakeKernel::default();
    let mut s = store(&t);
    // fifo_batch is already 16: only read_ahead_kb is journaled.
    let set = setting(&[("fifo_batch", 16.into()), ("read_ahead_kb", 512.into())]);
    let ch = apply_with(&k, &mut s, &t.root, &d, &set, &Owner::Set).unwrap();
    assert_eq!(ch.len(), 1);
    assert_eq!(open_entries(&s), ["read_ahead_kb=128"]);
    restore_with(&k, &mut s, &t.root, None, None).unwrap();
    // dirty_bytes written: its partner dirty_ratio (zeroed by the write) is journaled too.
    apply_with(
        &k,
        &mut s,
        &t.root,
        &d,
        &setting(&[("dirty_bytes", (1i64 << 26).into())]),
        &Owner::Set,
    )
    .unwrap();
    assert_eq!(open_entries(&s), ["dirty_bytes=0", "dirty_ratio=20"]);
    restore_with(&k, &mut s, &t.root, None, None).unwrap();
    assert_eq!(
        (t.vm("dirty_ratio"), t.vm("dirty_bytes")),
        ("20".into(), "0".into())
    );
}

#[test]
fn a_tune_journals_a_knob_when_it_first_writes_it_and_restores_it() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    let d = find(&t.root, "sda").unwrap();
    let k = FakeKernel::default();
    let mut s = store(&t);
    let fifo = |v: i64| setting(&[("fifo_batch", v.into())]);
    // The default setting first: nothing written, nothing journaled.
    apply_with(&k, &mut s, &t.root, &d, &fifo(16), &Owner::Tune(1)).unwrap();
    assert_eq!(open_entries(&s), Vec::<String>::new());
    apply_with(&k, &mut s, &t.root, &d, &fifo(4), &Owner::Tune(1)).unwrap();
    apply_with(&k, &mut s, &t.root, &d, &fifo(64), &Owner::Tune(1)).unwrap();
    assert_eq!(open_entries(&s), ["fifo_batch=16"]);
    assert_eq!(
        restore_with(&k, &mut s, &t.root, Some("sda"), Some(&Owner::Tune(1))).unwrap(),
        1
    );
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "16");
}

/// Another tree's open entries are never closed by this tree's boot: a `restore` under a
/// fake procfs whose boot id differs (a test's) must not drop the real `/sys` originals, or
/// another fake tree's, unwritten as "earlier boot".
#[test]
fn another_trees_entries_are_not_stale_by_this_trees_boot() {
    let a = FakeTree::new();
    a.mq_deadline_disk();
    let b = FakeTree::new();
    b.mq_deadline_disk();
    boot(&a, "aaaa");
    boot(&b, "bbbb");
    let k = FakeKernel::default();
    let mut s = store(&a);
    let d = find(&a.root, "sda").unwrap();
    apply_with(
        &k,
        &mut s,
        &a.root,
        &d,
        &setting(&[("fifo_batch", 8.into())]),
        &Owner::Set,
    )
    .unwrap();
    assert!(
        s.journal_close_stale(&b.root, &b.root.boot())
            .unwrap()
            .is_empty()
    );
    assert_eq!(s.journal_open(None, None).unwrap().len(), 1);
    // Its own tree's boot still judges it: a reboot of `a` closes it.
    boot(&a, "cccc");
    assert_eq!(
        s.journal_close_stale(&a.root, &a.root.boot())
            .unwrap()
            .len(),
        1
    );
}
