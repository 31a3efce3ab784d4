#![allow(clippy::unwrap_used)]
use super::*;
use crate::testkit::tree::FakeTree;
use std::os::unix::fs::MetadataExt;

/// The text format's rules (prometheus/docs exposition_formats.md, version 0.0.4): label
/// values escape backslash, double quote and newline; HELP escapes backslash and newline;
/// special values are `NaN`, `+Inf`, `-Inf`; a family has one HELP and one TYPE line before
/// its samples; no timestamps.
#[test]
fn the_encoder_follows_the_text_format() {
    assert_eq!(escape_label("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
    assert_eq!(escape_label("sda"), "sda");
    assert_eq!(format_value(1.0), "1");
    assert_eq!(format_value(-3.0), "-3");
    assert_eq!(format_value(1.25), "1.25");
    assert_eq!(format_value(f64::NAN), "NaN");
    assert_eq!(format_value(f64::INFINITY), "+Inf");
    assert_eq!(format_value(f64::NEG_INFINITY), "-Inf");
    assert_eq!(format_value(1e20), "100000000000000000000");
    let text = encode(&[
        Family {
            name: "x_total",
            help: "a \\ b\nc",
            kind: Kind::Counter,
            samples: vec![
                (
                    vec![("device", "sd\"a".into()), ("result", "done".into())],
                    2.0,
                ),
                (
                    vec![("device", "sdb".into()), ("result", "failed".into())],
                    0.5,
                ),
            ],
        },
        Family {
            name: "empty",
            help: "left out",
            kind: Kind::Gauge,
            samples: vec![],
        },
        Family {
            name: "y_bytes",
            help: "y",
            kind: Kind::Gauge,
            samples: vec![(vec![], 4096.0)],
        },
    ]);
    assert_eq!(
        text,
        "# HELP x_total a \\\\ b\\nc\n# TYPE x_total counter\n\
         x_total{device=\"sd\\\"a\",result=\"done\"} 2\n\
         x_total{device=\"sdb\",result=\"failed\"} 0.5\n\
         # HELP y_bytes y\n# TYPE y_bytes gauge\ny_bytes 4096\n"
    );
}

/// sda tuned to read_ahead_kb 256 and bfq (from 128 and mq-deadline), a tune done and one
/// failed, with its daemon state: the whole text.
fn tuned_sda(t: &FakeTree) -> (Store, Vec<(Device, Option<SweetSpotRow>)>) {
    t.mq_deadline_disk();
    let store = Store::open(&t.dir.path().join("s.db")).unwrap();
    let dev = crate::device::find(&t.root, "sda").unwrap();
    let target = crate::types::TargetInfo {
        label: "sda".into(),
        identity: dev.identity.clone(),
        kernel: crate::device::kernel_release(),
    };
    let set = |ra: i64, s: &str| -> crate::types::Setting {
        [
            ("read_ahead_kb".to_string(), ra.into()),
            ("scheduler".to_string(), s.into()),
        ]
        .into_iter()
        .collect()
    };
    let failed = store.insert_tune(&target, Some("sda"), "quick").unwrap();
    store
        .finish_tune(failed, crate::types::TuneStatus::Failed)
        .unwrap();
    let tune = store.insert_tune(&target, Some("sda"), "quick").unwrap();
    let ev = serde_json::json!({"objective": {"name": "io_load Ratio",
        "improvement": {"ratio": 1.5, "ci95": [1.25, 1.75]}}});
    store
        .insert_sweet_spot(
            &target,
            "quick",
            Some(tune),
            &set(256, "bfq"),
            &set(128, "mq-deadline"),
            true,
            &ev,
        )
        .unwrap();
    store
        .finish_tune(tune, crate::types::TuneStatus::Done)
        .unwrap();
    let spots = crate::daemon::due::latest_spots(&store, &Default::default()).unwrap();
    let cfg = crate::daemon::config::DaemonConfig::default();
    let devices = crate::daemon::due::enrolled(&t.root, &cfg, &spots).unwrap();
    (store, devices)
}

#[test]
fn a_tuned_device_renders_every_family_with_its_values() {
    let t = FakeTree::new();
    let (store, devices) = tuned_sda(&t);
    let at = store.tunes(None).unwrap()[1].finished_at.unwrap();
    let m = collect(
        Some(&store),
        &t.root,
        &devices,
        &|_| 0,
        &mut BTreeMap::new(),
    )
    .unwrap();
    let text = render(&Snapshot {
        devices: m,
        contested_total: Some([("sda".to_string(), 2)].into_iter().collect()),
        resident_bytes: Some(3 << 20),
    });
    let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        samples,
        [
            format!(
                "sweetspot_build_info{{version=\"{}\"}} 1",
                env!("CARGO_PKG_VERSION")
            )
            .as_str(),
            // Not applied: the tree is at the kernel's values.
            "sweetspot_knob_value{device=\"sda\",knob=\"read_ahead_kb\"} 128",
            "sweetspot_knob_target{device=\"sda\",knob=\"read_ahead_kb\"} 256",
            "sweetspot_scheduler_info{device=\"sda\",scheduler=\"mq-deadline\"} 1",
            "sweetspot_scheduler_target_info{device=\"sda\",scheduler=\"bfq\"} 1",
            "sweetspot_drift{device=\"sda\"} 2",
            "sweetspot_contested_knobs{device=\"sda\"} 0",
            "sweetspot_contested_total{device=\"sda\"} 2",
            "sweetspot_retunes_total{device=\"sda\",result=\"done\"} 1",
            "sweetspot_retunes_total{device=\"sda\",result=\"failed\"} 1",
            format!("sweetspot_last_tune_timestamp_seconds{{device=\"sda\"}} {at}").as_str(),
            "sweetspot_improvement_ratio{device=\"sda\"} 1.5",
            "sweetspot_improvement_ratio_ci_low{device=\"sda\"} 1.25",
            "sweetspot_improvement_ratio_ci_high{device=\"sda\"} 1.75",
            "sweetspot_daemon_resident_bytes 3145728",
        ]
    );
    assert!(
        text.contains("# TYPE sweetspot_retunes_total counter\n"),
        "{text}"
    );
    assert!(text.contains("# TYPE sweetspot_drift gauge\n"), "{text}");
    // At the sweet spot: no drift, the values now are the targets.
    t.set("sda", "queue/read_ahead_kb", "256").set(
        "sda",
        "queue/scheduler",
        "mq-deadline kyber [bfq] none",
    );
    let devices: Vec<_> = devices
        .into_iter()
        .map(|(_, s)| (crate::device::find(&t.root, "sda").unwrap(), s))
        .collect();
    let m = collect(
        Some(&store),
        &t.root,
        &devices,
        &|_| 1,
        &mut BTreeMap::new(),
    )
    .unwrap();
    assert_eq!(m[0].drift, 0);
    assert_eq!(m[0].contested_knobs, 1);
    assert_eq!(m[0].knobs["read_ahead_kb"], (Some(256), 256));
    assert_eq!(m[0].scheduler.as_deref(), Some("bfq"));
}

/// The daemon's file: written at the first poll (0644, atomically, no temporary file left),
/// not rewritten by a poll that changed nothing (an SD card's writes), rewritten when a
/// value changed, and moved when a reload changed `metrics_dir`.
#[test]
fn the_file_is_written_only_when_its_text_changed() {
    let t = FakeTree::new();
    let (store, devices) = tuned_sda(&t);
    let dir = t.dir.path().join("textfile");
    std::fs::create_dir(&dir).unwrap();
    let file = dir.join(FILE_NAME);
    let m = Manager::default();
    let mut x = Exporter::default();
    assert!(!x.update(None, &store, &t.root, &devices, &m));
    assert!(x.update(Some(&dir), &store, &t.root, &devices, &m));
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o644);
    let first = std::fs::read_to_string(&file).unwrap();
    assert!(
        first.contains("sweetspot_daemon_resident_bytes "),
        "{first}"
    );
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        1,
        "a temporary file was left"
    );
    // A second poll with nothing changed: the same file, not rewritten.
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert!(!x.update(Some(&dir), &store, &t.root, &devices, &m));
    let again = std::fs::metadata(&file).unwrap();
    assert_eq!(
        (again.ino(), again.mtime_nsec()),
        (meta.ino(), meta.mtime_nsec())
    );
    // A knob changed: rewritten.
    t.set("sda", "queue/read_ahead_kb", "256");
    assert!(x.update(Some(&dir), &store, &t.root, &devices, &m));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("sweetspot_knob_value{device=\"sda\",knob=\"read_ahead_kb\"} 256\n")
            && text.contains("sweetspot_drift{device=\"sda\"} 1\n"),
        "{text}"
    );
    // A contest counted: rewritten.
    x.saw(&manage::Event::Contested(
        "sda".into(),
        "read_ahead_kb".into(),
        "256".into(),
        "512".into(),
        false,
    ));
    assert!(x.update(Some(&dir), &store, &t.root, &devices, &m));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("sweetspot_contested_total{device=\"sda\"} 1\n"),
        "{text}"
    );
    // A reload moved `metrics_dir`: the old file goes, the new one is written at once.
    let other = t.dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    assert!(x.update(Some(&other), &store, &t.root, &devices, &m));
    assert!(!file.exists());
    assert!(other.join(FILE_NAME).exists());
    assert!(!x.update(None, &store, &t.root, &devices, &m));
    assert!(!other.join(FILE_NAME).exists());
}

/// A symlink left at the temporary file's name is not followed: the file written is the
/// metrics file, and the symlink's target is untouched.
#[test]
fn the_temporary_file_never_follows_a_symlink() {
    let d = tempfile::tempdir().unwrap();
    let victim = d.path().join("victim");
    std::fs::write(&victim, "keep\n").unwrap();
    let tmp = d
        .path()
        .join(format!(".{FILE_NAME}.{}.tmp", std::process::id()));
    std::os::unix::fs::symlink(&victim, &tmp).unwrap();
    write_atomic(d.path(), "x 1\n").unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep\n");
    assert_eq!(
        std::fs::read_to_string(d.path().join(FILE_NAME)).unwrap(),
        "x 1\n"
    );
    assert!(!tmp.exists());
}

/// A directory reached through a symlink (a component another user swapped) is not written.
#[test]
fn a_symlinked_directory_is_not_followed() {
    let d = tempfile::tempdir().unwrap();
    let real = d.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = d.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let e = write_atomic(&link, "x 1\n").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOTDIR), "{e}");
    // A symlink further up too.
    std::fs::create_dir(real.join("sub")).unwrap();
    assert!(write_atomic(&link.join("sub"), "x 1\n").is_err());
    assert!(Exporter::default().written.is_none());
    Exporter::remove(Some(&link));
    assert_eq!(std::fs::read_dir(&real).unwrap().count(), 1);
    write_atomic(&real, "x 1\n").unwrap();
    assert_eq!(std::fs::read_dir(&real).unwrap().count(), 2);
    // The stopping daemon's removal does not follow the symlink either.
    Exporter::remove(Some(&link));
    assert!(real.join(FILE_NAME).exists());
    Exporter::remove(Some(&real));
    assert!(!real.join(FILE_NAME).exists());
}

#[test]
fn metrics_dir_is_checked_with_file_line_and_field() {
    let d = tempfile::tempdir().unwrap();
    let p = Path::new("d.toml");
    let ok = format!("poll_s = 5\nmetrics_dir = \"{}\"\n", d.path().display());
    let c = crate::daemon::config::parse(&ok, p).unwrap();
    assert_eq!(c.metrics_dir.as_deref(), Some(d.path()));
    assert_eq!(
        crate::daemon::config::parse("", p).unwrap().metrics_dir,
        None
    );
    let file = d.path().join("f");
    std::fs::write(&file, "").unwrap();
    let missing = d.path().join("missing");
    for (value, msg) in [
        (
            "textfile".to_string(),
            "'textfile': give an absolute path (node_exporter's --collector.textfile.directory, \
             e.g. /var/lib/prometheus/node-exporter)"
                .to_string(),
        ),
        (
            file.display().to_string(),
            format!("'{}': not a directory", file.display()),
        ),
        (
            missing.display().to_string(),
            format!(
                "'{}': No such file or directory (os error 2) (create it, or install \
                 prometheus-node-exporter)",
                missing.display()
            ),
        ),
    ] {
        let e =
            crate::daemon::config::parse(&format!("poll_s = 5\n\nmetrics_dir = \"{value}\"\n"), p)
                .unwrap_err();
        assert_eq!(e.to_string(), format!("d.toml:3: metrics_dir: {msg}"));
        assert_eq!(e.exit_code(), 2);
    }
}
