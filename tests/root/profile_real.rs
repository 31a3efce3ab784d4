//! Profiles on real loop devices (CI runs as root). A sweet spot of a loop device, keyed by
//! its backing file, is exported as TOML, udev rules and sysctl.d (TuneD, which cannot match a
//! backing file, refuses it), applied after the device was detached
//! and re-attached under another loop name, verified clean, reported as drift after a manual
//! change (exit 1), and undone by `restore`: once for a sweet spot stored by hand (scheduler,
//! fifo_batch, read_ahead_kb), once for one a real `tune --device loopN` found on an emulated
//! flash device.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Attached, active_scheduler};

use std::fs::File;
use std::path::Path;

/// TuneD has no way to match a loop device by its backing file (no udev property, and its
/// [sysfs] plugin takes paths): its export is refused with exit 2, naming why.
fn tuned_refuses_a_loop_device(db: &Path) {
    let out = common::sweetspot(db, &["profile", "export", "--format", "tuned"]);
    let (code, err) = common::code_and_stderr(out);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("udev has no property for a loop device's backing file"),
        "{err}"
    );
}

/// Attaches `file` again under a loop name other than `old`: first a filler over
/// `filler_file` (which takes the lowest free number, `old` if nobody else did), then `file`.
/// Other tests attach and detach loop devices meanwhile, so `file` may still land on `old`:
/// then that device is kept as one more filler (over a new sparse file) and `file` is tried
/// again. Returns the re-attached device and the fillers (the first over `filler_file`).
fn reattach_elsewhere(
    file: &Path,
    direct_io: bool,
    old: &str,
    filler_file: &Path,
) -> (Attached, Vec<Attached>) {
    let mut fillers = vec![Attached::new(filler_file, false)];
    for i in 1..=8 {
        let again = Attached::new(file, direct_io);
        if again.name != old {
            return (again, fillers);
        }
        drop(again);
        let extra = filler_file.with_extension(format!("{i}.img"));
        sparse(&extra);
        fillers.push(Attached::new(&extra, false));
    }
    panic!("{} kept coming back as {old}", file.display());
}

/// `profile apply <profile>`, which must succeed; its stdout.
fn applied(db: &Path, profile: &str) -> String {
    let out = common::sweetspot(db, &["profile", "apply", profile]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn sparse(path: &Path) {
    std::fs::File::create(path)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
}

#[test]
fn a_loop_sweet_spot_follows_its_backing_file_to_another_loop_name() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (file, filler_file) = (dir.path().join("disk.img"), dir.path().join("filler.img"));
    sparse(&file);
    sparse(&filler_file);
    let db = dir.path().join("p.db");

    let first = Attached::new(&file, false);
    let backing = first.read("loop/backing_file");
    let default_ra = first.read("queue/read_ahead_kb");
    common::store_sweet_spot(
        &db,
        &format!("loop:{backing}"),
        &first.name,
        &sweetspot::device::kernel_release(),
        &[
            ("scheduler", "mq-deadline"),
            ("fifo_batch", "8"),
            ("read_ahead_kb", "256"),
        ],
        &[("scheduler", "none"), ("read_ahead_kb", &default_ra)],
        1.3,
    );
    for format in ["toml", "udev", "sysctl"] {
        let out = common::sweetspot(&db, &["profile", "export", "--format", format]);
        assert!(
            out.status.success(),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        if format == "udev" {
            assert!(
                text.contains(&format!(r#"ATTR{{loop/backing_file}}=="{backing}""#)),
                "{text}"
            );
        }
    }
    tuned_refuses_a_loop_device(&db);
    let profile = dir.path().join("profile.toml");
    let out = common::sweetspot(
        &db,
        &["profile", "export", "--out", profile.to_str().unwrap()],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let old_name = first.name.clone();
    drop(first);

    // The old number is taken by another disk; the tuned file comes back under a new name.
    let (again, fillers) = reattach_elsewhere(&file, false, &old_name, &filler_file);
    let filler = &fillers[0];
    let p = profile.to_str().unwrap();
    let stdout = applied(&db, p);
    assert_eq!(
        active_scheduler(&again.read("queue/scheduler")),
        "mq-deadline"
    );
    assert_eq!(again.read("queue/iosched/fifo_batch"), "8");
    assert_eq!(again.read("queue/read_ahead_kb"), "256");
    assert_eq!(
        active_scheduler(&filler.read("queue/scheduler")),
        "none",
        "{old_name} reused: untouched"
    );
    assert!(
        stdout.contains(&format!("{} (tuned as {old_name})", again.name)),
        "{stdout}"
    );
    // The undo hint works when pasted: it names this database.
    assert!(
        stdout.contains(&format!(
            "undo with `sweetspot --db {} restore`\n",
            db.display()
        )),
        "{stdout}"
    );

    let out = common::sweetspot(&db, &["verify", p]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    again.write("queue/read_ahead_kb", "512");
    let out = common::sweetspot(&db, &["verify", p, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["version"], sweetspot::output::json::VERSION);
    let drift: Vec<&serde_json::Value> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "drift")
        .collect();
    assert_eq!(drift.len(), 1, "{v}");
    assert_eq!(
        (drift[0]["knob"].as_str(), drift[0]["actual"].as_i64()),
        (Some("read_ahead_kb"), Some(512))
    );

    let out = common::sweetspot(&db, &["restore"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(active_scheduler(&again.read("queue/scheduler")), "none");
    assert_eq!(
        again.read("queue/read_ahead_kb"),
        default_ra,
        "restore undid the profile"
    );
}

/// A sweet spot from a real `tune --device loopN`, through the kernel's real queue: an
/// emulated flash device (500 µs + 200 MB/s per request, 4 channels, under a loop device with
/// direct I/O and ext4) on which writeback throttling was turned off. With throttling off the
/// job under io_load waits behind the writer's dirty pages (36.2 ± 6.5 s against 10.2 ± 2.8 s
/// at 2000 µs, DESIGN.md), so the tune finds a significant sweet spot; it exports in all four
/// formats, applies by identity after the device came back under another loop name, verifies
/// clean, reports a manual change as drift (exit 1), and `restore` undoes the profile.
#[test]
fn a_tuned_sweet_spot_exports_applies_under_another_name_and_verifies() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    use sweetspot::bench::emulate::{Server, Spec};
    let dir = tempfile::tempdir().unwrap();
    let (backing, filler_file) = (
        dir.path().join("backing.img"),
        dir.path().join("filler.img"),
    );
    File::create(&backing).unwrap().set_len(512 << 20).unwrap();
    sparse(&filler_file);
    let fuse = dir.path().join("fuse");
    std::fs::create_dir(&fuse).unwrap();
    let spec = Spec::parse("latency=500us,bandwidth=200MB/s,channels=4").unwrap();
    let server = Server::start(
        &spec,
        &backing,
        &fuse,
        &assert_cmd::cargo::cargo_bin("sweetspot"),
    )
    .expect("emulator");
    let db = dir.path().join("t.db");
    let mnt = dir.path().join("mnt");

    let first = Attached::new(&server.file(), true);
    let tuned_as = first.name.clone();
    let fs = common::Ext4Mount::new(&first.dev, &mnt, true);
    first.write("queue/wbt_lat_usec", "0");
    let started = std::time::Instant::now();
    let out = common::sweetspot(
        &db,
        &[
            "tune",
            "--device",
            &first.name,
            "--policy",
            "tests/policies/wbt-only.toml",
            "--job-scale",
            "0.2",
            "--load-mib",
            "64",
            "--seed",
            "1",
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    eprintln!("tune took {:?}: {v}", started.elapsed());
    assert!(out.status.success(), "{v}");
    assert_eq!(v["significant"], true, "{v}");
    let best = v["best"]["wbt_lat_usec"]
        .as_i64()
        .expect("best wbt_lat_usec");
    assert!(best > 0, "{v}");
    assert_eq!(
        first.read("queue/wbt_lat_usec"),
        "0",
        "the tune put it back"
    );

    for format in ["toml", "udev", "sysctl"] {
        let out = common::sweetspot(&db, &["profile", "export", "--format", format]);
        assert!(out.status.success(), "{format}");
        let text = String::from_utf8_lossy(&out.stdout);
        match format {
            "toml" => assert!(text.contains(&format!("wbt_lat_usec = {best}")), "{text}"),
            "udev" => assert!(
                text.contains(&format!(r#"ATTR{{queue/wbt_lat_usec}}="{best}""#)),
                "{text}"
            ),
            _ => assert!(!text.contains("wbt_lat_usec"), "host knobs only: {text}"),
        }
    }
    tuned_refuses_a_loop_device(&db);
    let profile = dir.path().join("profile.toml");
    let p = profile.to_str().unwrap();
    assert!(
        common::sweetspot(&db, &["profile", "export", "--out", p])
            .status
            .success()
    );
    drop(fs);
    drop(first);

    // The old number is taken by another disk; the emulated disk comes back under a new name,
    // again with throttling off.
    let (again, fillers) = reattach_elsewhere(&server.file(), true, &tuned_as, &filler_file);
    let filler = &fillers[0];
    again.write("queue/wbt_lat_usec", "0");
    let filler_wbt = filler.read("queue/wbt_lat_usec");
    let stdout = applied(&db, p);
    assert!(
        stdout.contains(&format!("(tuned as {tuned_as})")),
        "{stdout}"
    );
    assert_eq!(again.read("queue/wbt_lat_usec"), best.to_string());
    assert_eq!(filler.read("queue/wbt_lat_usec"), filler_wbt, "untouched");
    let out = common::sweetspot(&db, &["verify", p]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    again.write("queue/wbt_lat_usec", "75000");
    let out = common::sweetspot(&db, &["verify", p]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("drift") && text.contains("75000"), "{text}");

    assert!(common::sweetspot(&db, &["restore"]).status.success());
    assert_eq!(
        again.read("queue/wbt_lat_usec"),
        "0",
        "restore undid the profile"
    );
    drop(again);
    drop(fillers);
    drop(server);
}

/// `profile export --out` onto a full file system (a small ext4 on a loop device, filled) is
/// the machine's failure, not bad input: exit 1 with the OS error (ENOSPC: "No space left on device") named, and no
/// profile (or temporary file) left behind. A path that cannot take a file at all stays exit 2
/// (`cli_edges.rs`).
#[test]
fn exporting_onto_a_full_file_system_is_exit_1_naming_enospc() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("full.db");
    let surface =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml");
    let out = common::sweetspot(
        &db,
        &[
            "-q",
            "tune",
            "--seed",
            "1",
            "--sim",
            surface.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let mut dev = common::LoopDev::new(8);
    let mnt = dev.mount_ext4();
    // Fill it: root may use ext4's reserved blocks too, so write until the kernel says no.
    // A closed file gives back ext4's preallocated blocks, so fill in three passes, each with
    // smaller writes.
    for (name, bs) in [("filler1", "64k"), ("filler2", "4k"), ("filler3", "1k")] {
        let st = std::process::Command::new("dd")
            .args(["if=/dev/zero", &format!("bs={bs}"), "status=none"])
            .arg(format!("of={}", mnt.join(name).display()))
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(!st.success(), "dd {name} filled the device without ENOSPC");
    }
    let target = mnt.join("sweetspot.toml");
    let out = common::sweetspot(
        &db,
        &["profile", "export", "--out", target.to_str().unwrap()],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "writing {}: No space left on device",
            target.display()
        )),
        "{err}"
    );
    assert!(!err.contains("at path"), "names the temporary file: {err}");
    assert_eq!(
        common::names(&mnt),
        ["filler1", "filler2", "filler3", "lost+found"],
        "left behind"
    );
}

/// The same when the temporary file cannot even be created (a tmpfs without a free inode:
/// `open(O_CREAT)` fails with ENOSPC): exit 1, naming the path and the OS error; it said
/// "no storage space", tempfile's wrapper having hidden the errno.
#[test]
fn a_temporary_file_that_cannot_be_created_is_exit_1_naming_enospc() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("full.db");
    let surface =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml");
    let sim = [
        "-q",
        "tune",
        "--seed",
        "1",
        "--sim",
        surface.to_str().unwrap(),
    ];
    let out = common::sweetspot(&db, &sim);
    assert!(out.status.success(), "{out:?}");
    let fs = common::Tmpfs::with_inodes(2);
    File::create(fs.dir.join("taken")).unwrap();
    assert!(
        File::create(fs.dir.join("one-more")).is_err(),
        "an inode left"
    );
    let target = fs.dir.join("sweetspot.toml");
    let out = common::sweetspot(
        &db,
        &["-q", "profile", "export", "--out", target.to_str().unwrap()],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(
        err.trim_end(),
        format!(
            "sweetspot: error: writing {}: No space left on device (os error 28)",
            target.display()
        )
    );
    assert_eq!(common::names(&fs.dir), ["taken"], "left behind");
}
