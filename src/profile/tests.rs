//! Export tests on fake sysfs trees and a real (temporary) database.
#![allow(clippy::unwrap_used)]

use super::build::{MatchBy, Select, build};
use super::model::{Match, Profile};
use super::{sysctl, tuned, udev};
use crate::store::Store;
use crate::testkit::tree::FakeTree;
use crate::types::Owner;
use crate::types::{Setting, TargetInfo};

fn setting(pairs: &[(&str, &str)]) -> Setting {
    pairs
        .iter()
        .map(|(k, v)| {
            let v = v.parse::<i64>().map_or_else(|_| (*v).into(), Into::into);
            (k.to_string(), v)
        })
        .collect()
}

/// Stores a sweet spot of `identity` (label `name`) as a finished tune would.
fn store_spot(
    store: &Store,
    identity: &str,
    name: &str,
    best: &[(&str, &str)],
    default: &[(&str, &str)],
    significant: bool,
) {
    let target = TargetInfo {
        label: name.into(),
        identity: identity.into(),
        kernel: "6.18.0".into(),
    };
    let tune = store.insert_tune(&target, Some(name), "quick").unwrap();
    let evidence = serde_json::json!({
        "target": { "label": name },
        "objective": { "name": "io_load Ratio", "improvement": { "ratio": 2.2012, "ci95": [2.05, 2.37] } },
        "runs": 24,
    });
    store
        .insert_sweet_spot(
            &target,
            "quick",
            Some(tune),
            &setting(best),
            &setting(default),
            significant,
            &evidence,
        )
        .unwrap();
    store
        .finish_tune(tune, crate::types::TuneStatus::Done)
        .unwrap();
}

fn all(by: MatchBy) -> Select<'static> {
    Select {
        device: None,
        policy: None,
        by,
        only: None,
        export: true,
        keep: None,
    }
}

#[test]
fn exports_only_changed_knobs_host_knobs_apart_and_keep_default_empty() {
    let t = FakeTree::new();
    t.mq_deadline_disk().bfq_disk();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("p.db")).unwrap();
    store_spot(
        &store,
        "wwid:naa.5000c500a1b2c3d4",
        "sda",
        &[
            ("scheduler", "mq-deadline"),
            ("fifo_batch", "8"),
            ("read_ahead_kb", "128"),
            ("dirty_ratio", "10"),
        ],
        &[
            ("scheduler", "mq-deadline"),
            ("fifo_batch", "16"),
            ("read_ahead_kb", "128"),
            ("dirty_ratio", "20"),
        ],
        true,
    );
    store_spot(
        &store,
        "model-serial:WDC WD10EZEX:WD-WCC6Y1234567",
        "sdb",
        &[("scheduler", "bfq")],
        &[("scheduler", "bfq")],
        false,
    );
    // Simulated devices name nothing lasting: never exported.
    store_spot(
        &store,
        "sim:seed",
        "sim:seed",
        &[("fifo_batch", "8")],
        &[("fifo_batch", "32")],
        true,
    );
    let p = build(&store, &t.root, &all(MatchBy::Identity)).unwrap();
    assert_eq!(p.devices.len(), 2, "{p:?}");
    let sda = p.devices.iter().find(|d| d.name == "sda").unwrap();
    assert_eq!(
        sda.knobs,
        setting(&[("scheduler", "mq-deadline"), ("fifo_batch", "8")]),
        "only what changed, and the scheduler its iosched knob needs"
    );
    assert_eq!(sda.matches.wwid.as_deref(), Some("naa.5000c500a1b2c3d4"));
    assert_eq!(sda.improvement.as_ref().unwrap().ratio, 2.201);
    assert!(
        !sda.baseline.contains_key("dirty_ratio"),
        "host knobs are not per device"
    );
    assert_eq!(
        p.host.as_ref().unwrap().knobs,
        setting(&[("dirty_ratio", "10")])
    );
    let sdb = p.devices.iter().find(|d| d.name == "sdb").unwrap();
    assert!(
        sdb.knobs.is_empty() && sdb.improvement.is_none(),
        "keep the default"
    );

    let text = p.to_toml().unwrap();
    assert!(text.contains("# keep the default"), "{text}");
    let back: Profile = toml::from_str(&text).unwrap();
    assert_eq!(back, p);

    let rules = udev::render(&p).unwrap();
    let rule = rules
        .lines()
        .find(|l| l.contains(r#"ATTRS{wwid}=="naa.5000c500a1b2c3d4""#))
        .unwrap();
    assert!(rule.starts_with(r#"ACTION=="add|change", SUBSYSTEM=="block", ENV{DEVTYPE}=="disk""#));
    assert!(
        rule.ends_with(r#"ATTR{queue/iosched/fifo_batch}="8""#),
        "{rule}"
    );
    assert!(
        !rules.contains("WD-WCC6Y1234567\""),
        "no rule for keep-the-default: {rules}"
    );

    let conf = sysctl::render(&p, &t.root).unwrap();
    assert!(conf.lines().any(|l| l == "vm.dirty_ratio = 10"), "{conf}");

    // The fake tree has no /sys/devices bus path: TuneD's [sysfs] could reach fifo_batch by
    // sda's name only, which may swap, so the TuneD export is refused (exit 2), naming it.
    let e = tuned::render(&p, &t.root).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.to_string(),
        "--format tuned: TuneD cannot match this entry by the disk's identity: sda (wwid \
         naa.5000c500a1b2c3d4): fifo_batch: TuneD's [sysfs] plugin takes paths and matches no \
         device, and sda has no bus path under /sys/devices here (absent now, or a virtual \
         device): only its kernel name, which may change; export it with --format udev or \
         toml, which match every disk by its identity"
    );
}

/// TuneD matches every entry by an identity or refuses it: its [disk] plugin by udev
/// properties (ID_WWN, ID_SERIAL_SHORT, ID_MODEL, DEVPATH), its [sysfs] plugin (no device
/// matching) only by a bus path under /sys/devices. A disk present here at its bus path gets
/// both units; a fleet (`--match model`) entry only the [disk] one, and is refused with
/// knobs only [sysfs] sets; so are an absent disk's [sysfs] knobs and a loop device.
#[test]
fn tuned_matches_every_entry_by_identity_or_refuses_it() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    // sda at its bus path, as the kernel shows it: /sys/block/sda is a link into /sys/devices.
    let bus = "devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block";
    let block = t.root.sys.join("block/sda");
    std::fs::create_dir_all(t.root.sys.join(bus)).unwrap();
    std::fs::rename(&block, t.root.sys.join(bus).join("sda")).unwrap();
    std::os::unix::fs::symlink(format!("../{bus}/sda"), &block).unwrap();
    let entry = |matches: &str, knobs: &str| {
        crate::testkit::profile::profile(&[("sdx", matches, "6.18.0", knobs)])
    };
    let sda = entry(
        r#"wwid = "naa.5000c500a1b2c3d4""#,
        r#"scheduler = "mq-deadline", fifo_batch = 8, read_ahead_kb = 256"#,
    );
    let tc = tuned::render(&sda, &t.root).unwrap();
    let body = &tc[tc.find("[disk_sdx]").unwrap()..];
    assert_eq!(
        body,
        "[disk_sdx]\ntype=disk\ndevices_udev_regex=^ID_WWN(_WITH_EXTENSION)?=0x5000c500a1b2c3d4$\n\
         elevator=mq-deadline\nreadahead=256\n# TuneD's [sysfs] takes paths: sda's bus path here, \
         which follows the port it is on, not the disk\n\n[sysfs_sdx]\ntype=sysfs\n\
         /sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/*/queue/\
         iosched/fifo_batch=8\n"
    );
    // A fleet entry: [disk] by ID_MODEL for what it can set ...
    let fleet = entry(r#"model = "ST2000DM008""#, "read_ahead_kb = 256");
    let tc = tuned::render(&fleet, &t.root).unwrap();
    assert!(
        tc.ends_with(
            "[disk_sdx]\ntype=disk\ndevices_udev_regex=^ID_MODEL=ST2000DM008\nreadahead=256\n"
        ),
        "{tc}"
    );
    // ... refused with a knob only [sysfs] sets (even with its disk here, at a bus path).
    let cases = [
        (
            entry(
                r#"model = "ST2000DM008""#,
                "nr_requests = 32, read_ahead_kb = 256",
            ),
            "sdx (model ST2000DM008): nr_requests: TuneD's [sysfs] plugin takes paths and \
             matches no device, so a fleet profile (--match model) would write them to whatever \
             disks have this machine's paths, or names, on every machine",
        ),
        (
            entry(r#"wwid = "naa.5000c500ffffffff""#, "nr_requests = 32"),
            "sdx (wwid naa.5000c500ffffffff): nr_requests: TuneD's [sysfs] plugin takes paths \
             and matches no device, and sdx has no bus path under /sys/devices here",
        ),
        (
            entry(r#"backing_file = "/srv/disk.img""#, "read_ahead_kb = 1024"),
            "sdx (backing_file /srv/disk.img): read_ahead_kb: udev has no property for a loop \
             device's backing file, so TuneD's [disk] plugin could match it only by its kernel \
             name, which may change",
        ),
    ];
    for (p, want) in cases {
        let e = tuned::render(&p, &t.root).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let e = e.to_string();
        assert!(
            e.starts_with("--format tuned: TuneD cannot match this entry by the disk's identity: ")
                && e.contains(want)
                && e.ends_with(
                    "export it with --format udev or toml, which match every disk by its identity"
                ),
            "{e}"
        );
    }
}

#[test]
fn udev_sets_the_scheduler_before_its_iosched_knobs() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("p.db")).unwrap();
    // BTreeMap order would put fifo_batch before scheduler; the kernel's order must win.
    store_spot(
        &store,
        "by-path:pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0",
        "sda",
        &[
            ("scheduler", "mq-deadline"),
            ("fifo_batch", "8"),
            ("nr_requests", "32"),
            ("read_ahead_kb", "256"),
        ],
        &[
            ("scheduler", "none"),
            ("nr_requests", "64"),
            ("read_ahead_kb", "128"),
        ],
        true,
    );
    let p = build(&store, &t.root, &all(MatchBy::Identity)).unwrap();
    let rules = udev::render(&p).unwrap();
    let rule = rules.lines().find(|l| l.starts_with("ACTION")).unwrap();
    let pos = |s: &str| rule.find(s).unwrap_or_else(|| panic!("{s} in {rule}"));
    assert!(pos("queue/scheduler") < pos("queue/nr_requests"));
    assert!(pos("queue/nr_requests") < pos("queue/iosched/fifo_batch"));
    assert!(pos("queue/iosched/fifo_batch") < pos("queue/read_ahead_kb"));
    assert!(rule.contains(
        r#"DEVPATH=="/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/*""#
    ));
}

/// An entry that sets iosched knobs but not the scheduler pins the scheduler they belong to:
/// the one the tune's report names (`fixed_scheduler`), else the one its journal recorded
/// with them, else the one the catalogue gives for the knobs on a current kernel; a legacy
/// kernel's sweet spot with none of these is refused (exit 2), naming the knobs.
#[test]
fn iosched_knobs_are_exported_with_the_scheduler_they_belong_to() {
    let t = FakeTree::new();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("p.db")).unwrap();
    // Absent disks (the catalogue cannot ask them what they offer), on a 4.9 kernel, where
    // fifo_batch is both deadline's and mq-deadline's.
    let spot = |identity: &str, kernel: &str, evidence: serde_json::Value| -> i64 {
        let target = TargetInfo {
            label: "sdx".into(),
            identity: identity.into(),
            kernel: kernel.into(),
        };
        let tune = store.insert_tune(&target, Some("sdx"), "quick").unwrap();
        store
            .insert_sweet_spot(
                &target,
                "quick",
                Some(tune),
                &setting(&[("fifo_batch", "8"), ("read_ahead_kb", "256")]),
                &setting(&[("fifo_batch", "16"), ("read_ahead_kb", "128")]),
                true,
                &evidence,
            )
            .unwrap();
        store
            .finish_tune(tune, crate::types::TuneStatus::Done)
            .unwrap();
        tune
    };
    let knobs_of = |identity: &str| {
        let p = build(&store, &t.root, &all(MatchBy::Identity)).unwrap();
        let d = p
            .devices
            .iter()
            .find(|d| Match::from_identity(identity).as_ref() == Some(&d.matches))
            .unwrap()
            .clone();
        (d.knobs, d.baseline)
    };
    spot(
        "wwid:naa.1",
        "4.9.0",
        serde_json::json!({"fixed_scheduler": "mq-deadline"}),
    );
    let (knobs, baseline) = knobs_of("wwid:naa.1");
    assert_eq!(
        knobs,
        setting(&[
            ("scheduler", "mq-deadline"),
            ("fifo_batch", "8"),
            ("read_ahead_kb", "256")
        ])
    );
    assert_eq!(
        baseline,
        setting(&[
            ("scheduler", "mq-deadline"),
            ("fifo_batch", "16"),
            ("read_ahead_kb", "128")
        ])
    );
    // No report field: the journal of the tune says deadline.
    let tune = spot("wwid:naa.2", "4.9.0", serde_json::json!({}));
    store
        .conn()
        .execute(
            "INSERT INTO journal (device, identity, knob, path, original, apply_order, \
             scheduler, owner, recorded_at) VALUES ('sdx', 'wwid:naa.2', 'fifo_batch', \
             '/sys/block/sdx/queue/iosched/fifo_batch', '16', 2, 'deadline', ?1, 0)",
            [Owner::Tune(tune).to_string()],
        )
        .unwrap();
    assert_eq!(
        knobs_of("wwid:naa.2").0.get("scheduler"),
        Some(&"deadline".into())
    );
    // Neither, on a current kernel: fifo_batch is mq-deadline's alone.
    spot("wwid:naa.3", "6.18.0", serde_json::json!({}));
    assert_eq!(
        knobs_of("wwid:naa.3").0.get("scheduler"),
        Some(&"mq-deadline".into())
    );
    // Neither, on 4.9: which one is not known, and the export says so.
    spot("wwid:naa.4", "4.9.0", serde_json::json!({}));
    let e = build(&store, &t.root, &all(MatchBy::Identity)).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.to_string(),
        "profile export: the sweet spot of wwid:naa.4 sets fifo_batch, which exists only under \
         mq-deadline or deadline, and the database does not say which scheduler was active \
         when it was tuned: retune it (`sweetspot tune --device …`), or export it as TOML and \
         add the scheduler to its knobs"
    );
    // Not an export (apply, verify, the daemon): that entry is built unpinned, the rest too.
    let sel = Select {
        export: false,
        keep: None,
        ..all(MatchBy::Identity)
    };
    let p = build(&store, &t.root, &sel).unwrap();
    let entry = |w: &str| {
        p.devices
            .iter()
            .find(|d| d.name.contains(w) || format!("{:?}", d.matches).contains(w))
            .unwrap_or_else(|| panic!("{w}: {p:?}"))
    };
    assert_eq!(entry("naa.4").knobs.get("scheduler"), None);
    assert_eq!(
        entry("naa.3").knobs.get("scheduler"),
        Some(&"mq-deadline".into())
    );
}

/// udev(7) reads `*?[]` in a match value as globs and `|` as alternatives, with no escape: a
/// loop device's backing file `/srv/img/disk|old [v2]*.img` would match `/srv/img/disk` (or
/// any `old …img`) and not itself, so the udev export refuses it (exit 2), naming the field
/// and value; a plain path is matched as it is.
#[test]
fn udev_refuses_a_match_value_with_glob_characters() {
    let t = FakeTree::new();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("p.db")).unwrap();
    store_spot(
        &store,
        "loop:/srv/img/disk|old [v2]*.img",
        "loop6",
        &[("read_ahead_kb", "1024")],
        &[("read_ahead_kb", "128")],
        true,
    );
    let p = build(&store, &t.root, &all(MatchBy::Identity)).unwrap();
    let e = udev::render(&p).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.to_string(),
        "--format udev: match.backing_file of loop6 (backing_file /srv/img/disk|old [v2]*.img) \
         is '/srv/img/disk|old [v2]*.img': a udev rule cannot match '|' literally (udev reads \
         '*', '?' and '[]' as globs and '|' as alternatives, with no escape); export it with --format toml, which `profile apply` matches exactly"
    );
    // Each pattern character alone, in each kind of match value.
    for c in ['*', '?', '[', ']', '|'] {
        for m in [
            Match {
                backing_file: Some(format!("/srv/a{c}b.img")),
                ..Match::default()
            },
            Match {
                wwid: Some(format!("naa.5{c}")),
                ..Match::default()
            },
            Match {
                model: Some(format!("WDC {c}")),
                serial: Some("S1".into()),
                ..Match::default()
            },
            Match {
                model: Some("WDC".into()),
                serial: Some(format!("S{c}1")),
                ..Match::default()
            },
            Match {
                by_path: Some(format!("pci0000:00/0000:00:1f.2/ata{c}")),
                ..Match::default()
            },
        ] {
            let mut one = p.clone();
            one.devices[0].matches = m.clone();
            let e = udev::render(&one).unwrap_err().to_string();
            assert!(
                e.contains(&format!("cannot match '{c}' literally")),
                "{m:?}: {e}"
            );
        }
    }
    let mut plain = p.clone();
    plain.devices[0].matches.backing_file = Some("/srv/img/disk-old_v2.img".into());
    let rules = udev::render(&plain).unwrap();
    assert!(
        rules.contains(
            r#"ATTR{loop/backing_file}=="/srv/img/disk-old_v2.img", ATTR{queue/read_ahead_kb}="1024""#
        ),
        "{rules}"
    );
}

#[test]
fn model_match_reads_the_present_disks_model() {
    let t = FakeTree::new();
    t.mq_deadline_disk().set("sda", "device/rev", "0001");
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("p.db")).unwrap();
    store_spot(
        &store,
        "wwid:naa.5000c500a1b2c3d4",
        "sda",
        &[("fifo_batch", "8")],
        &[("fifo_batch", "16")],
        true,
    );
    let p = build(&store, &t.root, &all(MatchBy::Model)).unwrap();
    let m = &p.devices[0].matches;
    assert_eq!(
        (m.model.as_deref(), m.firmware.as_deref()),
        (Some("ST2000DM008"), Some("0001"))
    );
    assert!(m.wwid.is_none() && m.is_model_class());
    let rules = udev::render(&p).unwrap();
    assert!(
        rules.contains(r#"ATTRS{model}=="ST2000DM008", ATTRS{rev}=="0001""#),
        "{rules}"
    );
}

#[test]
fn model_match_of_two_disks_of_one_model_with_different_sweet_spots_is_refused() {
    let t = FakeTree::new();
    t.mq_deadline_disk()
        .disk("sdc", "8:32", "none [mq-deadline] kyber bfq", 64)
        .set("sdc", "device/wwid", "naa.5000c500eeeeeeee")
        .set("sdc", "device/model", "ST2000DM008");
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("p.db")).unwrap();
    for (id, name, fb) in [
        ("wwid:naa.5000c500a1b2c3d4", "sda", "8"),
        ("wwid:naa.5000c500eeeeeeee", "sdc", "4"),
    ] {
        store_spot(
            &store,
            id,
            name,
            &[("fifo_batch", fb)],
            &[("fifo_batch", "16")],
            true,
        );
    }
    let e = build(&store, &t.root, &all(MatchBy::Model)).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.to_string(),
        "--match model: sda (wwid:naa.5000c500a1b2c3d4) and sdc (wwid:naa.5000c500eeeeeeee) \
         are both model ST2000DM008, but their sweet spots differ (fifo_batch: 8 on sda, 4 on \
         sdc), and one model entry sets one value: export them with --match identity, or one \
         of them with --device"
    );
    // By identity they are two entries, and the profile reads back.
    let p = build(&store, &t.root, &all(MatchBy::Identity)).unwrap();
    assert_eq!(p.devices.len(), 2);
    let text = p.to_toml().unwrap();
    super::file::parse(&text, std::path::Path::new("p.toml")).unwrap();
}

#[test]
fn sysctl_writes_only_existing_keys_and_the_nonzero_member_of_a_pair() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("p.db")).unwrap();
    std::fs::remove_file(t.root.vm().join("swappiness")).unwrap();
    store_spot(
        &store,
        "wwid:naa.5000c500a1b2c3d4",
        "sda",
        &[
            ("dirty_bytes", "67108864"),
            ("dirty_ratio", "0"),
            ("swappiness", "10"),
        ],
        &[
            ("dirty_bytes", "0"),
            ("dirty_ratio", "20"),
            ("swappiness", "60"),
        ],
        true,
    );
    let p = build(&store, &t.root, &all(MatchBy::Identity)).unwrap();
    let conf = sysctl::render(&p, &t.root).unwrap();
    let keys: Vec<&str> = conf.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(keys, vec!["vm.dirty_bytes = 67108864"], "{conf}");
    assert!(conf.contains("# vm.swappiness = 10 left out"), "{conf}");
}

#[test]
fn a_device_with_no_sweet_spot_is_bad_input() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("p.db")).unwrap();
    let sel = Select {
        device: Some("sda"),
        policy: None,
        by: MatchBy::Identity,
        only: None,
        export: false,
        keep: None,
    };
    let e = build(&store, &t.root, &sel).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.to_string()
            .contains("no sweet spot stored for device 'sda'"),
        "{e}"
    );
    // A policy nothing was tuned with (a typo) is bad input too, not an empty profile.
    let sel = Select {
        device: None,
        policy: Some("quikc"),
        by: MatchBy::Identity,
        only: None,
        export: false,
        keep: None,
    };
    let e = build(&store, &t.root, &sel).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.to_string()
            .contains("no sweet spot stored with policy 'quikc'"),
        "{e}"
    );
}

/// A fresh boot: the profile exported from the database applies to a new tree, by identity.
#[test]
fn round_trip_export_apply_verify_and_drift() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db");
    let mut store = Store::open(&db).unwrap();
    store_spot(
        &store,
        "wwid:naa.5000c500a1b2c3d4",
        "sda",
        &[
            ("scheduler", "mq-deadline"),
            ("fifo_batch", "8"),
            ("read_ahead_kb", "256"),
        ],
        &[
            ("scheduler", "mq-deadline"),
            ("fifo_batch", "16"),
            ("read_ahead_kb", "128"),
        ],
        true,
    );
    let text = build(&store, &t.root, &all(MatchBy::Identity))
        .unwrap()
        .to_toml()
        .unwrap();
    let profile = super::file::parse(&text, std::path::Path::new("p.toml")).unwrap();
    assert!(
        !super::verify::verify(&t.root, &profile).unwrap().clean,
        "not applied yet"
    );
    let out = super::apply::apply(&mut store, &t.root, &db, &profile, None, false, "test").unwrap();
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(
        matches!(&out[0].status, super::apply::ApplyStatus::Applied { changes } if changes.len() == 2),
        "{out:?}"
    );
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "8");
    assert_eq!(t.get("sda", "queue/read_ahead_kb"), "256");
    let v = super::verify::verify(&t.root, &profile).unwrap();
    assert!(v.clean, "{v:?}");
    // fifo_batch, read_ahead_kb, and the scheduler fifo_batch belongs to.
    assert_eq!(v.rows.len(), 3);
    // A change behind sweetspot's back is drift.
    t.set("sda", "queue/read_ahead_kb", "4096");
    let v = super::verify::verify(&t.root, &profile).unwrap();
    assert!(!v.clean);
    let r = v.rows.iter().find(|r| r.knob == "read_ahead_kb").unwrap();
    assert_eq!((r.actual.as_deref(), r.status), (Some("4096"), "drift"));
    // restore undoes the profile: its writes are journaled under the owner `profile`.
    crate::knob::apply::restore(&mut store, &t.root, Some("sda"), None).unwrap();
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "16");
}

/// Names swapped between boots: each disk still gets its own values, and a different disk
/// under a tuned disk's old name gets nothing.
#[test]
fn apply_follows_identity_not_the_name() {
    let t = FakeTree::new();
    // This boot: the WWID disk is sdb, the model+serial disk is sda.
    t.disk("sdb", "8:16", "none [mq-deadline] kyber bfq", 64)
        .set("sdb", "device/wwid", "naa.5000c500a1b2c3d4");
    t.disk("sda", "8:0", "none [mq-deadline] kyber bfq", 64)
        .set("sda", "device/model", "WDC WD10EZEX")
        .set("sda", "device/serial", "WD-1");
    t.disk("sdc", "8:32", "none [mq-deadline] kyber bfq", 64)
        .set("sdc", "device/wwid", "naa.5000c500ffffffff");
    let profile = crate::testkit::profile::profile(&[
        (
            "sda",
            r#"wwid = "naa.5000c500a1b2c3d4""#,
            "6.18.0",
            "fifo_batch = 8",
        ),
        (
            "sdb",
            r#"model = "WDC WD10EZEX", serial = "WD-1""#,
            "6.18.0",
            "fifo_batch = 4",
        ),
        (
            "sdc",
            r#"wwid = "naa.5000c500eeeeeeee""#,
            "6.1.0",
            "fifo_batch = 2",
        ),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db");
    let mut store = Store::open(&db).unwrap();
    let out = super::apply::apply(&mut store, &t.root, &db, &profile, None, false, "test").unwrap();
    assert_eq!(
        t.get("sdb", "queue/iosched/fifo_batch"),
        "8",
        "the WWID disk, now sdb"
    );
    assert_eq!(
        t.get("sda", "queue/iosched/fifo_batch"),
        "4",
        "the serial disk, now sda"
    );
    assert_eq!(
        t.get("sdc", "queue/iosched/fifo_batch"),
        "16",
        "another disk named sdc: untouched"
    );
    let sdc = out.iter().find(|o| o.entry == "sdc").unwrap();
    assert!(
        matches!(&sdc.status, super::apply::ApplyStatus::Absent { wanted } if wanted.starts_with("wwid ")),
        "{sdc:?}"
    );
}

#[test]
fn a_model_entry_applies_to_every_disk_of_that_model_only_and_warns_on_another_kernel() {
    let t = FakeTree::new();
    for (n, dev, m) in [
        ("sda", "8:0", "SDCARD-X"),
        ("sdb", "8:16", "SDCARD-X"),
        ("sdc", "8:32", "OTHER"),
    ] {
        t.disk(n, dev, "none [mq-deadline] kyber bfq", 64)
            .set(n, "device/model", m);
    }
    let profile = crate::testkit::profile::profile(&[
        (
            "sda",
            r#"model = "SDCARD-X""#,
            "2.6.0-old",
            "fifo_batch = 8",
        ),
        ("sdc", r#"model = "OTHER""#, "6.18.0", ""),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db");
    let mut store = Store::open(&db).unwrap();
    let out = super::apply::apply(&mut store, &t.root, &db, &profile, None, false, "test").unwrap();
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "8");
    assert_eq!(t.get("sdb", "queue/iosched/fifo_batch"), "8");
    assert_eq!(
        t.get("sdc", "queue/iosched/fifo_batch"),
        "16",
        "keep the default writes nothing"
    );
    let w = out
        .iter()
        .find(|o| o.device.as_deref() == Some("sda"))
        .unwrap();
    assert!(
        w.kernel_warning
            .as_deref()
            .unwrap()
            .contains("tuned on 2.6.0-old"),
        "{w:?}"
    );
    let sdc = out
        .iter()
        .find(|o| o.device.as_deref() == Some("sdc"))
        .unwrap();
    assert_eq!(sdc.status, super::apply::ApplyStatus::Nothing);
    // --dry-run writes nothing and prints the commands.
    t.set("sda", "queue/iosched/fifo_batch", "16");
    let out = super::apply::apply(
        &mut store,
        &t.root,
        &db,
        &profile,
        Some("sda"),
        true,
        "test",
    )
    .unwrap();
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "16");
    let super::apply::ApplyStatus::DryRun { commands } = &out[0].status else {
        panic!("{out:?}")
    };
    assert!(
        commands[0].starts_with("echo 8 > ")
            && commands[0].ends_with("sda/queue/iosched/fifo_batch"),
        "{commands:?}"
    );
}

/// A profile the kernel's rules refuse on one disk changes no disk (exit 2), and a held lock
/// refuses the whole apply naming its holder.
#[test]
fn apply_is_all_or_nothing_up_front() {
    let t = FakeTree::new();
    t.mq_deadline_disk().bfq_disk();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db");
    let mut store = Store::open(&db).unwrap();
    // sdb is on bfq: fifo_batch does not exist there (no scheduler switch asked).
    let profile = crate::testkit::profile::profile(&[
        (
            "sda",
            r#"wwid = "naa.5000c500a1b2c3d4""#,
            "6.18.0",
            "read_ahead_kb = 4096",
        ),
        (
            "sdb",
            r#"model = "WDC WD10EZEX", serial = "WD-WCC6Y1234567""#,
            "6.18.0",
            "fifo_batch = 8",
        ),
    ]);
    let e =
        super::apply::apply(&mut store, &t.root, &db, &profile, None, false, "test").unwrap_err();
    assert_eq!(e.exit_code(), 2, "{e}");
    assert!(
        e.to_string().contains("profile entry sdb on sdb")
            && e.to_string().contains("nothing was applied"),
        "{e}"
    );
    assert_eq!(t.get("sda", "queue/read_ahead_kb"), "128", "sda untouched");
    // --dry-run plans the same way.
    assert!(super::apply::apply(&mut store, &t.root, &db, &profile, None, true, "test").is_err());

    let ok = crate::testkit::profile::profile(&[(
        "sda",
        r#"wwid = "naa.5000c500a1b2c3d4""#,
        "6.18.0",
        "read_ahead_kb = 4096",
    )]);
    let id = "wwid:naa.5000c500a1b2c3d4";
    let _held = crate::lock::DeviceLock::acquire(
        &crate::lock::path(&db, &t.root, id),
        "sda",
        crate::lock::Holder::me("set"),
    )
    .unwrap();
    let e = super::apply::apply(&mut store, &t.root, &db, &ok, None, false, "test").unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("sda is in use by"), "{e}");
    assert_eq!(t.get("sda", "queue/read_ahead_kb"), "128");
}

/// Two sweet spots of one disk (another kernel, another policy): one is exported, the running
/// kernel's, so a disk never gets two values for a knob.
#[test]
fn one_sweet_spot_per_disk_the_running_kernels() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("p.db")).unwrap();
    let id = "wwid:naa.5000c500a1b2c3d4";
    let running = crate::device::kernel_release();
    for (kernel, fb) in [(running.as_str(), "8"), ("2.6.0-old", "32")] {
        let target = TargetInfo {
            label: "sda".into(),
            identity: id.into(),
            kernel: kernel.into(),
        };
        let tune = store.insert_tune(&target, Some("sda"), "quick").unwrap();
        store
            .insert_sweet_spot(
                &target,
                "quick",
                Some(tune),
                &setting(&[("fifo_batch", fb)]),
                &setting(&[("fifo_batch", "16")]),
                true,
                &serde_json::json!({}),
            )
            .unwrap();
    }
    let p = build(&store, &t.root, &all(MatchBy::Identity)).unwrap();
    assert_eq!(p.devices.len(), 1, "{p:?}");
    assert_eq!(
        p.devices[0].knobs,
        setting(&[("scheduler", "mq-deadline"), ("fifo_batch", "8")])
    );
    assert_eq!(p.devices[0].kernel, running);
}

/// An ms knob reads back rounded to a jiffy (HZ=250: 10 → 12): that is the profile's value,
/// as the write path's "honoured" says, not drift.
#[test]
fn verify_allows_a_jiffy_on_ms_knobs() {
    let t = FakeTree::new();
    t.mq_deadline_disk()
        .set("sda", "queue/iosched/read_expire", "12");
    let profile = crate::testkit::profile::profile(&[(
        "sda",
        r#"wwid = "naa.5000c500a1b2c3d4""#,
        "6.18.0",
        "read_expire = 10",
    )]);
    let v = super::verify::verify(&t.root, &profile).unwrap();
    assert!(v.clean, "{v:?}");
    t.set("sda", "queue/iosched/read_expire", "40");
    assert!(!super::verify::verify(&t.root, &profile).unwrap().clean);
}

/// Only the knobs the kernel keeps in jiffies read back rounded (up, never down, 0 as 0); bfq
/// keeps `slice_idle` and `fifo_expire_*` in ns, so 8 where the profile says 0 is drift, as
/// is an mq-deadline `read_expire` below the profile's value.
#[test]
fn verify_compares_knobs_not_kept_in_jiffies_exactly() {
    let t = FakeTree::new();
    t.mq_deadline_disk().bfq_disk();
    let profile = crate::testkit::profile::profile(&[
        (
            "sda",
            r#"wwid = "naa.5000c500a1b2c3d4""#,
            "6.18.0",
            "read_expire = 10, prio_aging_expire = 0, write_expire = 5000",
        ),
        (
            "sdb",
            r#"serial = "WD-WCC6Y1234567", model = "WDC WD10EZEX""#,
            "6.18.0",
            "slice_idle = 0, fifo_expire_sync = 120, timeout_sync = 125",
        ),
    ]);
    // sda: read_expire rounded up to a jiffy (ok), prio_aging_expire 8 for 0 (a write of 0
    // reads back 0), write_expire below what was written (rounding never goes down).
    t.set("sda", "queue/iosched/read_expire", "12")
        .set("sda", "queue/iosched/prio_aging_expire", "8")
        .set("sda", "queue/iosched/write_expire", "4996")
        // sdb: slice_idle 8 for 0, fifo_expire_sync 125 for 120 (both ns-based: drift), and
        // timeout_sync (jiffies) 128 for 125 (ok).
        .set("sdb", "queue/iosched/slice_idle", "8")
        .set("sdb", "queue/iosched/fifo_expire_sync", "125")
        .set("sdb", "queue/iosched/timeout_sync", "128");
    let v = super::verify::verify(&t.root, &profile).unwrap();
    let status: Vec<(&str, &str, &str, Option<&str>, &str)> = v
        .rows
        .iter()
        .map(|r| {
            (
                r.device.as_str(),
                r.knob.as_str(),
                r.expected.as_str(),
                r.actual.as_deref(),
                r.status,
            )
        })
        .collect();
    assert_eq!(
        status,
        vec![
            ("sda", "prio_aging_expire", "0", Some("8"), "drift"),
            ("sda", "read_expire", "10", Some("12"), "ok"),
            ("sda", "write_expire", "5000", Some("4996"), "drift"),
            ("sdb", "fifo_expire_sync", "120", Some("125"), "drift"),
            ("sdb", "slice_idle", "0", Some("8"), "drift"),
            ("sdb", "timeout_sync", "125", Some("128"), "ok"),
        ]
    );
    assert!(!v.clean);
    assert!(
        super::verify::table(&v)
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == ["sdb", "slice_idle", "0", "8", "drift"]),
        "{}",
        super::verify::table(&v)
    );
}

/// Host knobs go through the host's own write path: with no disk present at all, a vm knob, a
/// `kernel.sched_*` sysctl and a debugfs feature flag are applied (the dry run names each one's
/// own file, in apply order), journaled under `profile`, and `restore` puts them back.
#[test]
fn host_knobs_apply_without_any_disk_each_to_its_own_file() {
    let t = FakeTree::new();
    t.sched_current();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db");
    let mut store = Store::open(&db).unwrap();
    let profile = super::model::Profile {
        version: super::model::VERSION,
        devices: vec![],
        host: Some(super::model::Host {
            knobs: setting(&[
                ("dirty_ratio", "10"),
                ("sched_autogroup_enabled", "0"),
                ("nr_migrate", "16"),
            ]),
            ..Default::default()
        }),
        origin: None,
    };
    let dry = super::apply::apply(&mut store, &t.root, &db, &profile, None, true, "test").unwrap();
    let super::apply::ApplyStatus::DryRun { commands } = &dry[0].status else {
        panic!("{dry:?}");
    };
    let vm = t.root.vm().join("dirty_ratio");
    let sysctl = t.root.kernel_sysctl().join("sched_autogroup_enabled");
    let migrate = t.root.debugfs().join("sched/nr_migrate");
    assert_eq!(
        commands,
        &vec![
            format!("echo 10 > {}", vm.display()),
            format!("echo 16 > {}", migrate.display()),
            format!("echo 0 > {}", sysctl.display()),
        ],
        "{commands:?}"
    );
    assert_eq!(t.vm("dirty_ratio"), "20", "a dry run writes nothing");

    let out = super::apply::apply(&mut store, &t.root, &db, &profile, None, false, "test").unwrap();
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].entry, "host");
    assert!(
        matches!(&out[0].status, super::apply::ApplyStatus::Applied { changes } if changes.len() == 3),
        "{out:?}"
    );
    assert_eq!(t.vm("dirty_ratio"), "10");
    assert_eq!(t.host("sched_autogroup_enabled"), "0");
    assert_eq!(t.host("debug/sched/nr_migrate"), "16");
    crate::knob::apply::restore(&mut store, &t.root, None, None).unwrap();
    assert_eq!(t.vm("dirty_ratio"), "20");
    assert_eq!(t.host("sched_autogroup_enabled"), "1");
    assert_eq!(t.host("debug/sched/nr_migrate"), "32");
}

/// The host's own sweet spot (`tune --host`, identity `host:<hostname>`) goes into `[host]`
/// with its provenance: it wins over a device tune's value of the same knob, the running
/// host's wins over another host's, a "keep the default" one exports its provenance and no
/// knob, and applying it warns that it was tuned on another kernel.
#[test]
fn a_host_sweet_spot_goes_into_host_with_its_provenance() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    std::fs::create_dir_all(t.root.proc.join("sys/kernel")).unwrap();
    std::fs::write(t.root.proc.join("sys/kernel/hostname"), "box\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db");
    let mut store = Store::open(&db).unwrap();
    store_spot(
        &store,
        "wwid:naa.5000c500a1b2c3d4",
        "sda",
        &[("fifo_batch", "8"), ("swappiness", "30")],
        &[("fifo_batch", "16"), ("swappiness", "60")],
        true,
    );
    store_spot(
        &store,
        "host:box",
        "host",
        &[("swappiness", "10"), ("dirty_ratio", "20")],
        &[("swappiness", "60"), ("dirty_ratio", "20")],
        true,
    );
    // Another host's (a copied database), newer: not this host's, so not exported.
    store_spot(
        &store,
        "host:other",
        "host",
        &[("swappiness", "100")],
        &[("swappiness", "60")],
        true,
    );
    let p = build(&store, &t.root, &all(MatchBy::Identity)).unwrap();
    assert_eq!(p.devices.len(), 1, "{p:?}");
    let h = p.host.clone().unwrap();
    assert_eq!(
        h.knobs,
        setting(&[("swappiness", "10")]),
        "the host's own wins"
    );
    assert_eq!(
        (h.name.as_deref(), h.kernel.as_deref(), h.policy.as_deref()),
        (Some("box"), Some("6.18.0"), Some("quick"))
    );
    assert_eq!(
        h.baseline,
        setting(&[("dirty_ratio", "20"), ("swappiness", "60")])
    );
    assert_eq!(h.improvement.as_ref().unwrap().ratio, 2.201);
    let text = p.to_toml().unwrap();
    assert!(
        text.contains("# the host's own sweet spot (`tune --host`)"),
        "{text}"
    );
    let back = super::file::parse(&text, std::path::Path::new("p.toml")).unwrap();
    assert_eq!(back, p);
    // `--device host` selects the host alone.
    let sel = Select {
        device: Some("host"),
        policy: None,
        by: MatchBy::Identity,
        only: None,
        export: false,
        keep: None,
    };
    let only = build(&store, &t.root, &sel).unwrap();
    assert!(only.devices.is_empty(), "{only:?}");
    assert_eq!(only.host.unwrap().knobs, setting(&[("swappiness", "10")]));

    let out = super::apply::apply(&mut store, &t.root, &db, &p, None, false, "test").unwrap();
    let host = out.iter().find(|o| o.entry == "host").unwrap();
    assert!(
        matches!(&host.status, super::apply::ApplyStatus::Applied { changes }
            if changes == &vec![("swappiness".into(), "60".into(), "10".into())]),
        "{out:?}"
    );
    let running = crate::device::kernel_release();
    assert_eq!(
        host.kernel_warning.is_some(),
        running != "6.18.0",
        "{host:?}"
    );
    assert_eq!(t.vm("swappiness"), "10");
    assert!(super::verify::verify(&t.root, &p).unwrap().clean);

    // A later "keep the default" host tune: provenance, no knob, nothing to apply.
    store_spot(
        &store,
        "host:box",
        "host",
        &[("swappiness", "60")],
        &[("swappiness", "60")],
        false,
    );
    let p = build(&store, &t.root, &sel).unwrap();
    let h = p.host.clone().unwrap();
    assert!(
        h.is_tuned() && h.knobs.is_empty() && h.improvement.is_none(),
        "{h:?}"
    );
    assert!(
        sysctl::render(&p, &t.root)
            .unwrap()
            .contains("# keep the default")
    );
    let out = super::apply::apply(&mut store, &t.root, &db, &p, None, false, "test").unwrap();
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].status, super::apply::ApplyStatus::Nothing);
}

/// A `[host]` with `knobs` alone, the shape written before host sweet spots were exported,
/// still reads, and carries no provenance.
#[test]
fn an_older_host_table_with_knobs_alone_still_reads() {
    let text = "version = 1\n[host]\nknobs = { dirty_ratio = 10 }\n";
    let p = super::file::parse(text, std::path::Path::new("old.toml")).unwrap();
    let h = p.host.unwrap();
    assert_eq!(h.knobs, setting(&[("dirty_ratio", "10")]));
    assert!(!h.is_tuned() && h.name.is_none() && h.baseline.is_empty());
}
