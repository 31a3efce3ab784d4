//! A sweet spot read back from the database is checked against the knob catalogue before it
//! reaches a profile (and so a udev rule, a sysctl.d line, a TuneD section): the database is
//! root's, but nothing read back from it is written unchecked (SECURITY.md).
#![allow(clippy::unwrap_used)]

use super::build::{MatchBy, Select, build};
use crate::store::Store;
use crate::testkit::tree::FakeTree;
use crate::types::{KnobValue, Setting, TargetInfo};

/// Stores a sweet spot of the fake tree's disk `sda` with `best` over `default`.
fn spot(store: &Store, best: &[(&str, KnobValue)], default: &[(&str, KnobValue)]) {
    let s = |p: &[(&str, KnobValue)]| -> Setting {
        p.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    };
    let target = TargetInfo {
        label: "sda".into(),
        identity: "wwid:naa.5000c500a1b2c3d4".into(),
        kernel: "6.18.0".into(),
    };
    let tune = store.insert_tune(&target, Some("sda"), "quick").unwrap();
    let evidence = serde_json::json!({ "target": { "label": "sda" }, "runs": 24 });
    store
        .insert_sweet_spot(
            &target,
            "quick",
            Some(tune),
            &s(best),
            &s(default),
            true,
            &evidence,
        )
        .unwrap();
    store
        .finish_tune(tune, crate::types::TuneStatus::Done)
        .unwrap();
}

fn export(store: &Store, t: &FakeTree) -> crate::Result<super::model::Profile> {
    built(store, t, true)
}

fn built(store: &Store, t: &FakeTree, export: bool) -> crate::Result<super::model::Profile> {
    let sel = Select {
        device: None,
        policy: None,
        by: MatchBy::Identity,
        only: None,
        export,
        keep: None,
    };
    build(store, &t.root, &sel)
}

#[test]
fn a_sweet_spot_outside_the_catalogue_is_refused_before_anything_is_exported() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, KnobValue, KnobValue, &str); 4] = [
        // A knob no catalogue has: a udev rule would write queue/<it> as root.
        (
            "uevent",
            "add".into(),
            "change".into(),
            "knob 'uevent': not a knob sweetspot knows",
        ),
        // A scheduler name that would carry a second line.
        (
            "scheduler",
            "bfq\nx".into(),
            "none".into(),
            "'bfq\\nx': expected a scheduler name",
        ),
        // Out of the catalogue's safe bounds (1–1024).
        (
            "fifo_batch",
            100_000.into(),
            16.into(),
            "'100000' is outside its safe bounds 1–1024",
        ),
        // A host-wide knob the catalogue does not have.
        (
            "core_pattern",
            "|/tmp/evil %p".into(),
            "core".into(),
            "knob 'core_pattern'",
        ),
    ];
    for (i, (knob, best, default, why)) in cases.into_iter().enumerate() {
        let store = Store::open(&dir.path().join(format!("v{i}.db"))).unwrap();
        spot(&store, &[(knob, best)], &[(knob, default)]);
        let e = export(&store, &t).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{knob}: {e}");
        let s = e.to_string();
        assert!(s.starts_with("database: the sweet spot of "), "{s}");
        assert!(s.contains(why), "{knob}: {s}");
        assert!(s.ends_with("; nothing exported"), "{s}");
        assert!(!s.contains('\n'), "{s}");
    }
    // The same row with a value in the catalogue's bounds exports.
    let store = Store::open(&dir.path().join("ok.db")).unwrap();
    spot(
        &store,
        &[("fifo_batch", 8.into())],
        &[("fifo_batch", 16.into())],
    );
    let p = export(&store, &t).unwrap();
    assert_eq!(p.devices.len(), 1);
    assert_eq!(
        p.devices[0].knobs.get("fifo_batch"),
        Some(&KnobValue::Int(8))
    );
}

#[test]
fn the_daemon_leaves_out_a_knob_outside_the_catalogue_and_keeps_the_rest() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("d.db")).unwrap();
    spot(
        &store,
        &[("fifo_batch", 8.into()), ("uevent", "add".into())],
        &[("fifo_batch", 16.into()), ("uevent", "change".into())],
    );
    let p = built(&store, &t, false).unwrap();
    assert_eq!(p.devices.len(), 1);
    let knobs: Vec<&String> = p.devices[0].knobs.keys().collect();
    // fifo_batch is an iosched knob: its scheduler is pinned with it.
    assert_eq!(knobs, ["fifo_batch", "scheduler"]);
    assert!(export(&store, &t).is_err());
}
