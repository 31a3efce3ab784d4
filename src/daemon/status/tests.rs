use super::*;
use crate::testkit::tree::FakeTree;

#[test]
fn an_enrolled_device_never_tuned_is_listed_with_what_it_waits_for() {
    let t = FakeTree::new();
    t.mq_deadline_disk()
        .disk("sdb", "8:16", "none [mq-deadline]", 64);
    t.set("sda", "device/wwid", "naa.5000c500a1b2c3d4");
    t.set("sdb", "device/wwid", "naa.5000c500deadbeef");
    let store = Store::open(&t.dir.path().join("s.db")).unwrap();
    let sda = device::find(&t.root, "sda").unwrap().identity;
    let sdb = device::find(&t.root, "sdb").unwrap().identity;
    assert!(sda.starts_with("wwid:"), "{sda}");
    // Enrolled by identity (sda, present) and one that is not attached; sdb is not.
    let cfg = super::super::config::parse(
        &format!("enroll = [\"{sda}\", \"wwid:naa.gone\"]\n"),
        Path::new("d.toml"),
    )
    .unwrap();
    // The daemon's state (this process stands for it): sda waits for an idle window.
    let state = t.dir.path().join("s.db.daemon.json");
    std::fs::write(
        &state,
        serde_json::json!({"pid": std::process::id(), "managed": [], "waits": {
            sda.as_str(): {"device": "sda", "kind": "not idle",
                "detail": "CPU busy 55% > 10%", "due_at": null}}})
        .to_string(),
    )
    .unwrap();
    let s = status(Some(&store), &t.root, &cfg, &state).unwrap();
    assert!(s.daemon_running);
    let ids: Vec<&str> = s.devices.iter().map(|d| d.identity.as_str()).collect();
    assert_eq!(ids, [sda.as_str(), "wwid:naa.gone"]);
    let a = &s.devices[0];
    assert_eq!(a.device.as_deref(), Some("sda"));
    assert_eq!(
        (
            a.state_text.as_str(),
            a.sweet_spot.as_str(),
            a.last_tune.as_deref()
        ),
        ("never tuned", "none yet", None)
    );
    assert_eq!(a.retune_text, "due now: never tuned");
    assert_eq!(a.waiting.as_deref(), Some("not idle"));
    assert!(
        a.waiting_detail
            .as_deref()
            .unwrap()
            .contains("CPU busy 55%")
    );
    assert_eq!(s.devices[1].state_text, "never tuned, absent");
    assert_eq!(
        s.devices[1].retune_text,
        "due when it is present: never tuned"
    );
    assert_eq!(s.devices[1].waiting, None);
    let txt = text(&s, store.path(), &t.root);
    assert!(txt.contains("state:      never tuned\n"), "{txt}");
    assert!(
        txt.contains("waiting:    not idle: CPU busy 55% > 10%\n"),
        "{txt}"
    );
    assert!(txt.contains("retune:     due now: never tuned\n"), "{txt}");

    // `enroll = "tuned"` lists a device [policy] names by identity, not a class.
    let cfg = super::super::config::parse(
        &format!("[policy]\n\"{sdb}\" = \"quick\"\nssd = \"quick\"\n"),
        Path::new("d.toml"),
    )
    .unwrap();
    let s = status(Some(&store), &t.root, &cfg, &state).unwrap();
    let ids: Vec<&str> = s.devices.iter().map(|d| d.identity.as_str()).collect();
    assert_eq!(ids, [sdb.as_str()]);
    assert_eq!(s.devices[0].state_text, "never tuned");
    // Nothing from the daemon about sdb yet; the daemon takes it as enrolled.
    assert_eq!(s.devices[0].waiting, None);
    let on = super::super::due::enrolled(&t.root, &cfg, &Default::default()).unwrap();
    let names: Vec<&str> = on.iter().map(|(d, _)| d.name.as_str()).collect();
    assert_eq!(names, ["sdb"]);
}

/// "At its sweet spot" is judged as `verify` judges drift: a knob the kernel keeps in
/// jiffies (mq-deadline `read_expire`) may read back rounded up to one, bfq's ns-based
/// `slice_idle` must read back exactly.
#[test]
fn at_its_sweet_spot_agrees_with_verify() {
    let t = FakeTree::new();
    t.mq_deadline_disk().bfq_disk();
    t.set("sda", "queue/iosched/read_expire", "12")
        .set("sdb", "queue/iosched/slice_idle", "8");
    let present = device::list(&t.root).unwrap();
    let knobs = |k: &str, v: i64| -> crate::types::Setting { [(k.to_string(), v.into())].into() };
    let off = |name: &str, k: &str, v: i64| {
        State::NotManaged {
            off: against_now(&t.root, &present, name, &knobs(k, v)),
        }
        .text(true)
    };
    let prefix = "not managed (the daemon is not running): ";
    assert_eq!(
        off("sda", "read_expire", 10),
        format!("{prefix}at its sweet spot")
    );
    assert_eq!(
        off("sda", "read_expire", 16),
        format!("{prefix}read_expire is 12, sweet spot 16")
    );
    assert_eq!(
        off("sdb", "slice_idle", 0),
        format!("{prefix}slice_idle is 8, sweet spot 0")
    );
    assert_eq!(
        against_now(&t.root, &present, "sdb", &knobs("slice_idle", 0)),
        [Off {
            knob: "slice_idle".into(),
            now: Some(8.into()),
            sweet_spot: 0.into()
        }]
    );
}

/// Stores a sweet spot `read_ahead_kb = 256` (default 128) for `identity`, tune #1 done.
fn spot(store: &Store, identity: &str) {
    use crate::types::{Setting, TargetInfo};
    let target = TargetInfo {
        label: "sda".into(),
        identity: identity.into(),
        kernel: device::kernel_release(),
    };
    let set = |v: i64| -> Setting { [("read_ahead_kb".to_string(), v.into())].into() };
    let tune = store.insert_tune(&target, Some("sda"), "quick").unwrap();
    store
        .insert_sweet_spot(
            &target,
            "quick",
            Some(tune),
            &set(256),
            &set(128),
            true,
            &serde_json::json!({}),
        )
        .unwrap();
    store
        .finish_tune(tune, crate::types::TuneStatus::Done)
        .unwrap();
}

#[test]
fn each_field_of_a_tuned_device_says_one_thing() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    t.set("sda", "device/wwid", "naa.5000c500a1b2c3d4");
    let store = Store::open(&t.dir.path().join("s.db")).unwrap();
    let sda = device::find(&t.root, "sda").unwrap().identity;
    spot(&store, &sda);
    spot(&store, "wwid:naa.gone");
    let cfg = DaemonConfig::default();
    let state = t.dir.path().join("s.db.daemon.json");
    let write = |managed: serde_json::Value, waits: serde_json::Value| {
        std::fs::write(
            &state,
            serde_json::json!({"pid": std::process::id(), "managed": managed,
                "waits": waits})
            .to_string(),
        )
        .unwrap();
    };

    // The daemon is stopped: not managed, and whether the disk is at its sweet spot now.
    let s = status(Some(&store), &t.root, &cfg, &state).unwrap();
    assert!(!s.daemon_running);
    let (a, gone) = (&s.devices[0], &s.devices[1]);
    assert_eq!(a.identity, sda);
    assert_eq!(
        a.state_text,
        "not managed (the daemon is not running): read_ahead_kb is 128, sweet spot 256"
    );
    assert!(
        a.retune_text.starts_with("due 20") && a.retune_text.ends_with("(every 7 days)"),
        "{}",
        a.retune_text
    );
    // Eight days later the interval has elapsed: due now, not due at a past date.
    store
        .conn()
        .execute(
            "UPDATE sweet_spots SET created_at = created_at - 8 * 86400",
            [],
        )
        .unwrap();
    let created: i64 = store
        .conn()
        .query_row("SELECT MIN(created_at) FROM sweet_spots", [], |r| r.get(0))
        .unwrap();
    let late = status(Some(&store), &t.root, &cfg, &state).unwrap();
    assert_eq!(
        late.devices[0].retune_text,
        format!(
            "due now (the interval elapsed at {}; every 7 days)",
            crate::types::time::rfc3339(created + 7 * 86400)
        )
    );
    // An absent device: the same words, then when it is retuned (no nested brackets).
    let gone_at: i64 = store
        .conn()
        .query_row(
            "SELECT created_at FROM sweet_spots WHERE identity = 'wwid:naa.gone'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        late.devices[1].retune_text,
        format!(
            "due now (the interval elapsed at {}; every 7 days), when it is present",
            crate::types::time::rfc3339(gone_at + 7 * 86400)
        )
    );
    store
        .conn()
        .execute(
            "UPDATE sweet_spots SET created_at = created_at + 8 * 86400",
            [],
        )
        .unwrap();
    assert_eq!(
        (a.last_tune_id, a.last_tune_status.as_deref()),
        (Some(1), Some("done"))
    );
    // A tune left `running` by a process that is gone (here: no lock held) reads `killed`,
    // in `last_tune` too, as `history` says; the database row is not changed.
    let target = crate::types::TargetInfo {
        label: "sda".into(),
        identity: sda.clone(),
        kernel: device::kernel_release(),
    };
    let dead = store.insert_tune(&target, Some("sda"), "quick").unwrap();
    let k = status(Some(&store), &t.root, &cfg, &state).unwrap();
    assert_eq!(
        (
            k.devices[0].last_tune_id,
            k.devices[0].last_tune_status.as_deref()
        ),
        (Some(dead), Some("killed"))
    );
    let line = k.devices[0].last_tune.as_deref().unwrap();
    assert!(line.starts_with(&format!("#{dead} killed ")), "{line}");
    assert_eq!(store.running_tunes().unwrap().len(), 1);
    store
        .finish_tune(dead, crate::types::TuneStatus::Interrupted)
        .unwrap();
    assert!(
        a.last_tune_at
            .as_deref()
            .is_some_and(|x| x.starts_with("20"))
    );
    let knobs = a.sweet_spot_knobs.as_ref().unwrap();
    assert_eq!(
        knobs.get("read_ahead_kb"),
        Some(&crate::types::KnobValue::Int(256))
    );
    // A number, as `tune --json` and `history --json` print a numeric knob.
    let json = serde_json::to_value(a).unwrap();
    assert_eq!(
        json["sweet_spot_knobs"],
        serde_json::json!({"read_ahead_kb": 256})
    );
    // Typed, not prose (JSON format 3): the knob away from the sweet spot with both values,
    // the due date as RFC 3339 with its Unix seconds.
    assert_eq!(
        json.get("sweet_spot"),
        None,
        "the prose is the text table's"
    );
    assert_eq!(
        json["state"],
        serde_json::json!({"kind": "not_managed",
            "off": [{"knob": "read_ahead_kb", "now": 128, "sweet_spot": 256}]})
    );
    let due = json["retune"]["at_epoch_s"].as_i64().unwrap();
    assert_eq!(json["retune"]["kind"], "scheduled");
    assert_eq!(json["retune"]["at"], rfc3339(due));
    assert!(a.retune_text.contains(&rfc3339(due)), "{}", a.retune_text);
    assert_eq!(gone.state_text, "absent");
    assert!(
        gone.retune_text.starts_with("due 20")
            && gone
                .retune_text
                .ends_with(" (every 7 days), when it is present"),
        "{}",
        gone.retune_text
    );
    t.set("sda", "queue/read_ahead_kb", "256");
    let s = status(Some(&store), &t.root, &cfg, &state).unwrap();
    assert_eq!(
        s.devices[0].state_text,
        "not managed (the daemon is not running): at its sweet spot"
    );

    // Running, but the daemon manages none of its knobs: not called managed.
    write(serde_json::json!([]), serde_json::json!({}));
    let s = status(Some(&store), &t.root, &cfg, &state).unwrap();
    assert!(s.daemon_running);
    assert_eq!(
        s.devices[0].state_text,
        "not applied yet (the daemon has not applied its sweet spot)"
    );
    // Managed, and a retune in progress: `tuning now`, not `due`.
    write(
        serde_json::json!([{"identity": sda, "knob": "read_ahead_kb", "device": "sda",
            "expected": "256", "contested": null}]),
        serde_json::json!({sda.as_str(): {"device": "sda", "kind": "tuning",
            "detail": "retuning with policy quick (the retune interval (7 days) elapsed)",
            "due_at": null}}),
    );
    let s = status(Some(&store), &t.root, &cfg, &state).unwrap();
    assert_eq!(s.devices[0].state_text, "managed");
    assert_eq!(s.devices[0].retune_text, "tuning now");
    assert_eq!(s.devices[0].waiting.as_deref(), Some("tuning"));
}

/// `status` and the daemon name one due date. sda was tuned on the running kernel, then
/// on another (booted once): the daemon keeps the running kernel's sweet spot and waits
/// for its interval, `status` took the newer row and said `due now: tuned on …` beside
/// the daemon's `interval: next retune due after <date>`. And a failed retune's back-off
/// is the due date, not `due now`.
#[test]
fn the_retune_line_names_the_daemons_due_date() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    t.set("sda", "device/wwid", "naa.5000c500a1b2c3d4");
    let store = Store::open(&t.dir.path().join("s.db")).unwrap();
    let sda = device::find(&t.root, "sda").unwrap().identity;
    spot(&store, &sda);
    let other = crate::types::TargetInfo {
        label: "sda".into(),
        identity: sda.clone(),
        kernel: "2.6.0-another".into(),
    };
    let set =
        |v: i64| -> crate::types::Setting { [("read_ahead_kb".to_string(), v.into())].into() };
    store
        .insert_sweet_spot(
            &other,
            "quick",
            None,
            &set(512),
            &set(128),
            true,
            &serde_json::json!({}),
        )
        .unwrap();
    // The running kernel's sweet spot is a day old: due in six days.
    store
        .conn()
        .execute(
            "UPDATE sweet_spots SET created_at = created_at - 86400 WHERE kernel != ?1",
            ["2.6.0-another"],
        )
        .unwrap();
    let cfg = DaemonConfig::default();
    let spots = super::super::due::latest_spots(&store, &Default::default()).unwrap();
    let kept = &spots[&sda];
    assert_eq!(kept.kernel, device::kernel_release());
    let now = crate::store::now();
    let at = super::super::retune::due(Some(kept), &kept.kernel, now, &cfg).unwrap_err();
    assert_eq!(at, kept.created_at + 7 * 86400);
    let state = t.dir.path().join("s.db.daemon.json");
    let s = status(Some(&store), &t.root, &cfg, &state).unwrap();
    assert_eq!(s.devices.len(), 1);
    assert_eq!(s.devices[0].sweet_spot, "read_ahead_kb=256");
    assert_eq!(
        s.devices[0].retune_text,
        format!("due {} (every 7 days)", rfc3339(at))
    );
    // Eight days on the interval has elapsed, but the last retune failed: the daemon
    // tries again after its back-off, and that is the due date.
    store
        .conn()
        .execute(
            "UPDATE sweet_spots SET created_at = created_at - 7 * 86400",
            [],
        )
        .unwrap();
    let until = now + 3600;
    std::fs::write(
        &state,
        serde_json::json!({"pid": std::process::id(), "managed": [], "released": {},
            "waits": {sda.as_str(): {"device": "sda", "kind": "failed",
            "detail": "the last retune failed; next try after x", "due_at": until}}})
        .to_string(),
    )
    .unwrap();
    let s = status(Some(&store), &t.root, &cfg, &state).unwrap();
    assert_eq!(
        s.devices[0].retune_text,
        format!(
            "due {} (the last retune failed; every 7 days)",
            rfc3339(until)
        )
    );
    assert_eq!(s.devices[0].waiting.as_deref(), Some("failed"));
}

/// A sweet spot with a host-wide knob is `managed` only when the daemon manages that
/// knob too (once, for the host); otherwise `status` says which and why.
#[test]
fn a_sweet_spots_host_wide_knob_counts_in_its_state() {
    use crate::types::{Setting, TargetInfo};
    let t = FakeTree::new();
    t.mq_deadline_disk();
    t.set("sda", "device/wwid", "naa.5000c500a1b2c3d4");
    let store = Store::open(&t.dir.path().join("s.db")).unwrap();
    let sda = device::find(&t.root, "sda").unwrap().identity;
    let target = TargetInfo {
        label: "sda".into(),
        identity: sda.clone(),
        kernel: device::kernel_release(),
    };
    let set = |ra: i64, dr: i64| -> Setting {
        [
            ("read_ahead_kb".to_string(), ra.into()),
            ("dirty_ratio".to_string(), dr.into()),
        ]
        .into()
    };
    store
        .insert_sweet_spot(
            &target,
            "quick",
            None,
            &set(256, 10),
            &set(128, 20),
            true,
            &serde_json::json!({}),
        )
        .unwrap();
    let state = t.dir.path().join("s.db.daemon.json");
    let row = |id: &str, dev: &str, knob: &str, v: &str| {
        serde_json::json!({"identity": id, "knob": knob, "device": dev, "expected": v,
            "contested": null})
    };
    let disk = row(&sda, "sda", "read_ahead_kb", "256");
    let host = row("host", "host-wide", "dirty_ratio", "10");
    let state_of = |managed: serde_json::Value, released: serde_json::Value| {
        std::fs::write(
            &state,
            serde_json::json!({"pid": std::process::id(), "managed": managed,
                "waits": {}, "released": released})
            .to_string(),
        )
        .unwrap();
        status(Some(&store), &t.root, &DaemonConfig::default(), &state)
            .unwrap()
            .devices[0]
            .state_text
            .clone()
    };
    assert_eq!(
        state_of(serde_json::json!([disk, host]), serde_json::json!({})),
        "managed"
    );
    assert_eq!(
        state_of(serde_json::json!([disk]), serde_json::json!({})),
        "managed, but not its host-wide dirty_ratio: not applied yet"
    );
    let released = state_of(
        serde_json::json!([disk]),
        serde_json::json!({"host": {"device": "host-wide", "at": 0}}),
    );
    assert_eq!(
        released,
        "managed, but not its host-wide dirty_ratio: restored by `sweetspot restore` at \
         1970-01-01T00:00:00Z, not managed until the daemon restarts or reloads its config \
         (SIGHUP)"
    );
    let mut contested = host.clone();
    contested["contested"] = serde_json::json!("30");
    assert_eq!(
        state_of(serde_json::json!([disk, contested]), serde_json::json!({})),
        "contested: dirty_ratio (another writer keeps 30); left alone until the daemon reloads \
         its config (SIGHUP: `systemctl reload sweetspot`), which applies the sweet spot again"
    );
    // The host's own later tune keeps dirty_ratio at 20: the daemon's `[host]` has no
    // dirty_ratio, so sda's 10 is superseded, not "not applied yet".
    let host_target = TargetInfo {
        label: "host".into(),
        identity: crate::bench::user_testbed::host_identity(&t.root),
        kernel: device::kernel_release(),
    };
    let kept: Setting = [("dirty_ratio".to_string(), 20.into())].into();
    store
        .insert_sweet_spot(
            &host_target,
            "host",
            None,
            &kept,
            &kept,
            true,
            &serde_json::json!({}),
        )
        .unwrap();
    assert_eq!(
        state_of(serde_json::json!([disk]), serde_json::json!({})),
        "managed"
    );
    // The daemon stopped: sda is judged by its own knobs and the host-wide ones it still
    // decides (none: the host's tune keeps dirty_ratio), not by its superseded 10.
    std::fs::remove_file(&state).unwrap();
    let st = status(Some(&store), &t.root, &DaemonConfig::default(), &state).unwrap();
    assert_eq!(
        st.devices[0].state_text,
        "not managed (the daemon is not running): read_ahead_kb is 128, sweet spot 256"
    );
}

#[test]
fn the_state_is_written_when_it_changes_and_a_waits_figures_alone_at_most_every_minute() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db.daemon.json");
    let ino = || std::fs::metadata(&path).unwrap().ino();
    let text = || std::fs::read_to_string(&path).unwrap();
    let m = Manager::default();
    let waits = |kind, detail: &str| {
        BTreeMap::from([(
            "wwid:naa.1".to_string(),
            Wait {
                device: "sda".into(),
                kind,
                detail: detail.into(),
                due_at: None,
            },
        )])
    };
    let mut last = Written::default();
    let write = |kind, detail: &str, last: &mut Written| {
        write_state(&path, &m, &waits(kind, detail), last);
    };
    write("not idle", "idle for 5 s of 600 s", &mut last);
    let first = ino();
    write("not idle", "idle for 10 s of 600 s", &mut last);
    assert_eq!(ino(), first, "its figures alone changed: not written yet");
    assert!(text().contains("idle for 5 s"));
    write("not idle", "CPU busy 55% > 40%", &mut last);
    let reason = ino();
    assert_ne!(reason, first, "its reason changed: written at once");
    write("interval", "next retune due after 1", &mut last);
    let second = ino();
    assert_ne!(second, reason, "its kind changed: written at once");
    // A minute after the last write, new figures are written too.
    last.at = last
        .at
        .map(|t| t - std::time::Duration::from_secs(FIGURES_EVERY_S));
    write("interval", "next retune due after 1", &mut last);
    assert_eq!(ino(), second, "nothing changed: not written");
    write("interval", "next retune due after 2", &mut last);
    assert_ne!(ino(), second);
    assert!(text().contains("due after 2"));
}

/// Every kind of [`State`] and [`Retune`] as `status --json` prints it validates against
/// docs/schemas/status.schema.json (the integration test sees only the kinds a fake tree
/// without a daemon shows), and each kind's tag is the schema's.
#[test]
fn every_state_and_retune_kind_validates_against_the_status_schema() {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../docs/schemas/status.schema.json")).unwrap();
    let of = |def: &str| {
        jsonschema::draft202012::new(&serde_json::json!({
            "$defs": schema["$defs"], "$ref": format!("#/$defs/{def}")
        }))
        .unwrap()
    };
    let at = 1_796_500_000;
    let states = [
        State::NeverTuned,
        State::Absent,
        State::NotManaged {
            off: vec![Off {
                knob: "scheduler".into(),
                now: None,
                sweet_spot: "bfq".into(),
            }],
        },
        State::Restored { at, at_epoch_s: at },
        State::Contested {
            knobs: vec![Contest {
                knob: "read_ahead_kb".into(),
                value: "512".into(),
            }],
        },
        State::NotApplied,
        State::Managed {
            host_not_managed: vec!["dirty_ratio".into()],
            host_restored_at: Some(at),
            host_restored_at_epoch_s: Some(at),
        },
    ];
    let retunes = [
        Retune::Tuning,
        Retune::NeverTuned,
        Retune::KernelChanged {
            tuned_on: "6.1".into(),
            running: "6.18".into(),
        },
        Retune::IntervalElapsed { at, at_epoch_s: at },
        Retune::Scheduled { at, at_epoch_s: at },
        Retune::Backoff { at, at_epoch_s: at },
    ];
    let check = |def: &str, v: serde_json::Value| {
        let errors: Vec<String> = of(def).iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{def} {v}: {errors:?}");
        v
    };
    for s in &states {
        check("state", serde_json::to_value(s).unwrap());
    }
    for r in &retunes {
        check("retune", serde_json::to_value(r).unwrap());
    }
    let v = check("state", serde_json::to_value(&states[3]).unwrap());
    assert_eq!(v["at"], rfc3339(at));
    assert_eq!(
        serde_json::to_value(&states[4]).unwrap()["knobs"][0]["value"],
        512,
        "a numeric knob's value as a number"
    );
    // A kind the schema does not know fails: the check can fail.
    let mut wrong = serde_json::to_value(&retunes[4]).unwrap();
    wrong["kind"] = "later".into();
    assert!(!of("retune").is_valid(&wrong));
}
