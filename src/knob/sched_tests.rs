//! The CPU-scheduler knobs on fake procfs/debugfs trees of a current kernel, a legacy one, a
//! locked-down debugfs and an unmounted one; journaled apply and restore of a sysctl and a
//! feature flag with a simulated kernel ([`FakeKernel`]).

use super::apply::{apply_host_with, apply_with, restore_with};
use super::sched::{self, Debugfs};
use super::*;
use crate::Error;
use crate::store::Store;
use crate::testkit::{kernel::FakeKernel, tree::FakeTree};
use crate::types::Owner;

fn setting(pairs: &[(&str, i64)]) -> Setting {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), KnobValue::Int(*v)))
        .collect()
}

fn get<'a>(ks: &'a [Knob], name: &str) -> &'a Knob {
    ks.iter()
        .find(|k| k.name == name)
        .unwrap_or_else(|| panic!("no knob {name}"))
}

#[test]
fn a_current_kernel_offers_sysctls_debugfs_integers_and_feature_flags() {
    let t = FakeTree::new();
    t.sched_current();
    let (ks, state) = sched::knobs(&t.root);
    assert_eq!(
        state,
        Debugfs::Available(t.root.debugfs().join("sched/features"))
    );
    let auto = get(&ks, "sched_autogroup_enabled");
    assert_eq!(auto.order, ApplyOrder::Sched);
    assert_eq!(auto.current, KnobValue::Int(1));
    assert_eq!(auto.domain, Domain::Int { min: 0, max: 1 });
    assert_eq!(auto.source.as_deref(), Some("kernel/sched/autogroup.c"));
    let slice = get(&ks, "base_slice_ns");
    assert_eq!(slice.current, KnobValue::Int(1_500_000));
    assert_eq!(slice.unit, "ns");
    assert_eq!(get(&ks, "nr_migrate").current, KnobValue::Int(32));
    // `preempt` is not an integer knob the catalogue knows: not offered.
    assert!(ks.iter().all(|k| k.name != "preempt"));
    let nb = get(&ks, "NEXT_BUDDY");
    assert_eq!(nb.order, ApplyOrder::SchedFeature);
    assert_eq!(nb.current, KnobValue::Int(0));
    assert_eq!(nb.source.as_deref(), Some(super::features::FEATURES_SOURCE));
    assert_eq!(get(&ks, "PLACE_LAG").current, KnobValue::Int(1));
    assert_eq!(
        ks.iter()
            .filter(|k| k.order == ApplyOrder::SchedFeature)
            .count(),
        26
    );
    // Legacy sysctls are absent on this kernel, and nothing is unusable.
    assert!(ks.iter().all(|k| k.name != "sched_latency_ns"));
    // Only the unused vm pair members (dirty_bytes 0) are unusable: no scheduler knob.
    let un = discover::host_unusable(&t.root);
    assert!(un.iter().all(|(n, _)| n.starts_with("dirty_")), "{un:?}");
}

#[test]
fn a_legacy_kernel_offers_the_old_sysctls_and_top_level_sched_features() {
    let t = FakeTree::new();
    t.sched_legacy();
    let (ks, state) = sched::knobs(&t.root);
    assert_eq!(
        state,
        Debugfs::Available(t.root.debugfs().join("sched_features"))
    );
    assert_eq!(
        get(&ks, "sched_latency_ns").current,
        KnobValue::Int(12_000_000)
    );
    assert_eq!(
        get(&ks, "sched_min_granularity_ns").domain,
        Domain::Int {
            min: 100_000,
            max: 1_000_000_000
        }
    );
    assert_eq!(
        get(&ks, "sched_migration_cost_ns").current,
        KnobValue::Int(500_000)
    );
    assert_eq!(get(&ks, "GENTLE_FAIR_SLEEPERS").current, KnobValue::Int(1));
    // A flag the catalogue does not know is listed, not known (so not tuned).
    assert!(!get(&ks, "UTIL_EST_FASTUP").known);
    assert!(ks.iter().all(|k| k.name != "base_slice_ns"));
}

#[test]
fn a_locked_down_or_unmounted_debugfs_leaves_its_knobs_out_with_one_reason() {
    let t = FakeTree::new();
    t.sched_locked();
    let (ks, state) = sched::knobs(&t.root);
    let names: Vec<&str> = ks.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["sched_autogroup_enabled", "sched_rr_timeslice_ms"]);
    let Debugfs::Refused(path, err) = &state else {
        panic!("{state:?}")
    };
    assert_eq!(path, &t.root.debugfs().join("sched/features"));
    assert!(err.contains("EISDIR"), "{err}");
    let why = state.why().unwrap();
    assert!(
        why.starts_with("debugfs is locked down here: reading "),
        "{why}"
    );
    let un = discover::host_unusable(&t.root);
    let of = |n: &str| un.iter().find(|(k, _)| k == n).map(|(_, w)| w.clone());
    assert_eq!(of("base_slice_ns").as_deref(), Some(why.as_str()));
    assert_eq!(of("NEXT_BUDDY").as_deref(), Some(why.as_str()));

    let t = FakeTree::new();
    std::fs::create_dir_all(t.root.debugfs()).unwrap();
    let state = sched::debugfs(&t.root);
    assert_eq!(state, Debugfs::Unmounted(t.root.debugfs()));
    assert!(state.why().unwrap().contains("mount -t debugfs none"));
}

#[test]
fn a_feature_flag_and_a_sysctl_are_journaled_written_and_restored() {
    let t = FakeTree::new();
    t.sched_current().mq_deadline_disk();
    let k = FakeKernel::default();
    let mut s = Store::open(&t.dir.path().join("s.db")).unwrap();
    let set = setting(&[
        ("NEXT_BUDDY", 1),
        ("PLACE_LAG", 0),
        ("sched_autogroup_enabled", 0),
        ("base_slice_ns", 3_000_000),
    ]);
    let ch = apply_host_with(&k, &mut s, &t.root, &set, &Owner::Tune(1)).unwrap();
    assert_eq!(ch.len(), 4);
    let features = t.host("debug/sched/features");
    assert!(features.contains(" NEXT_BUDDY ") && features.contains("NO_PLACE_LAG"));
    // The other flags are untouched.
    assert!(features.contains(" WAKEUP_PREEMPTION ") && features.contains("NO_HRTICK "));
    assert_eq!(t.host("sched_autogroup_enabled"), "0");
    assert_eq!(t.host("debug/sched/base_slice_ns"), "3000000");
    // What was written to the file: the flag names, not 0/1.
    let log = k.log.borrow();
    assert!(
        log.contains(&("features".into(), "NO_PLACE_LAG".into())),
        "{log:?}"
    );
    drop(log);
    // Journaled host-wide (no device); the flags' file once, whole, as it was.
    let open = s.journal_open(None, Some(&Owner::Tune(1))).unwrap();
    assert_eq!(open.len(), 3);
    assert!(open.iter().all(|e| e.device.is_none()));
    let f = open.iter().find(|e| e.knob == "features").unwrap();
    assert_eq!(f.order, ApplyOrder::SchedFeature);
    assert_eq!(f.original, crate::testkit::tree::CURRENT_FEATURES);

    let n = restore_with(&k, &mut s, &t.root, None, Some(&Owner::Tune(1))).unwrap();
    assert_eq!(n, 3);
    assert_eq!(
        t.host("debug/sched/features"),
        crate::testkit::tree::CURRENT_FEATURES
    );
    assert_eq!(t.host("sched_autogroup_enabled"), "1");
    assert_eq!(t.host("debug/sched/base_slice_ns"), "1500000");

    // The same knobs go through a device's apply path too (host-wide, journaled without it).
    let d = crate::device::find(&t.root, "sda").unwrap();
    apply_with(
        &k,
        &mut s,
        &t.root,
        &d,
        &setting(&[("NEXT_BUDDY", 1)]),
        &Owner::Set,
    )
    .unwrap();
    let e = s.journal_open(None, Some(&Owner::Set)).unwrap();
    assert_eq!((e.len(), e[0].device.clone()), (1, None));
    restore_with(&k, &mut s, &t.root, None, Some(&Owner::Set)).unwrap();
    assert!(t.host("debug/sched/features").contains("NO_NEXT_BUDDY"));
}

#[test]
fn host_apply_refuses_device_knobs_bad_values_and_locked_knobs_before_writing() {
    let t = FakeTree::new();
    t.sched_locked();
    let k = FakeKernel::default();
    let mut s = Store::open(&t.dir.path().join("s.db")).unwrap();
    let mut bad =
        |set: Setting| apply_host_with(&k, &mut s, &t.root, &set, &Owner::Set).unwrap_err();
    let e = bad(setting(&[("fifo_batch", 8)]));
    assert!(e.to_string().contains("a device knob"), "{e}");
    let e = bad(setting(&[("sched_autogroup_enabled", 2)]));
    assert!(matches!(e, Error::BadInput(_)), "{e:?}");
    assert!(
        e.to_string().contains("expected an integer in 0–1 bool"),
        "{e}"
    );
    let e = bad(setting(&[("NEXT_BUDDY", 1)]));
    assert!(e.to_string().contains("locked down"), "{e}");
    assert!(k.log.borrow().is_empty(), "nothing written");
    assert!(
        s.journal_open(None, None).unwrap().is_empty(),
        "nothing journaled"
    );
}
