//! `profile apply` and `verify` refuse bad profile files with the file, line and field and
//! exit 2, before anything is applied: the fixtures under `tests/invalid_profiles/`, and
//! files whose ownership or mode would let someone else choose what root writes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/invalid_profiles")
        .join(name)
}

/// Runs `sweetspot <args> FILE` against an empty fake sysfs (nothing there to change) and
/// returns (exit code, stderr).
fn run(args: &[&str], file: &std::path::Path) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let sys = dir.path().join("sys");
    std::fs::create_dir_all(sys.join("block")).unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
        .arg("--db")
        .arg(dir.path().join("x.db"))
        .arg("--sysfs-root")
        .arg(&sys)
        .args(args)
        .arg(file)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_profiles_name_file_line_and_field() {
    let cases = [
        ("unknown-version.toml", ":1: version: unknown version 2"),
        (
            "unknown-knob.toml",
            ":8: device[0].knobs.fifo_btach: not a knob sweetspot knows (did you mean 'fifo_batch'?)",
        ),
        (
            "value-outside-domain.toml",
            ":8: device[0].knobs.fifo_batch: '99999999' is outside its safe bounds",
        ),
        ("device-without-match.toml", "device[0].match"),
        ("device-with-empty-match.toml", "device[0].match: missing"),
        (
            "host-knob-in-device.toml",
            ":8: device[0].knobs.dirty_ratio: host-wide: put it under [host]",
        ),
        (
            "two-entries-one-match.toml",
            ":12: device[1].match: the same match as device[0] (line 4), wwid naa.1: give a \
             disk one entry",
        ),
        (
            "entry-narrowing-another-of-one-disk.toml",
            ":12: device[1].match: wwid naa.1 model X and device[0]'s (line 4) wwid naa.1 can \
             match the same disk, and neither is narrower (both name one disk): give a disk one \
             entry",
        ),
        (
            "two-identity-kinds-in-one-match.toml",
            ":4: device[0].match.backing_file: wwid and backing_file are two ways to name a \
             disk, and a disk has one identity: this entry would match none; give one of wwid, \
             serial+model, by_path, backing_file",
        ),
        (
            "loop-device-with-a-model.toml",
            ":4: device[0].match.model: a loop device (backing_file) has no model in sysfs: \
             this entry would match none; drop model",
        ),
        (
            "empty-match-value.toml",
            ":4: device[0].match.wwid: must not be empty",
        ),
        (
            "knob-value-a-float.toml",
            ":8: device[0].knobs.read_ahead_kb: expected an integer or a string, found a float \
             512.5",
        ),
        (
            "tuned-at-not-a-time.toml",
            ":7: device[0].tuned_at: 'yesterday' is not a time as export writes it (RFC 3339 \
             UTC, e.g. 2026-12-01T08:00:00Z)",
        ),
        // Not TOML at all: no field to name, `syntax` instead, as every parser says it.
        ("not-toml.toml", "not-toml.toml:2: syntax: "),
        (
            "host-tuned-at-not-a-time.toml",
            ":6: host.tuned_at: '2026-12-01 08:00' is not a time as export writes it",
        ),
    ];
    for (name, want) in cases {
        for cmd in [&["profile", "apply"][..], &["verify"][..]] {
            let file = fixture(name);
            // Fixtures are checked out with the repository's mode; make sure no other bit trips
            // (only when one would: a checkout another user owns cannot be chmod-ed).
            let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777;
            if mode != 0o644 {
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
            }
            let (code, err) = run(cmd, &file);
            assert_eq!(code, Some(2), "{name} {cmd:?}: {err}");
            assert!(
                err.contains(name) && err.contains(want),
                "{name} {cmd:?}: want '{want}' in: {err}"
            );
        }
    }
}

#[test]
fn a_world_writable_profile_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.toml");
    std::fs::write(&file, "version = 1\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    let (code, err) = run(&["profile", "apply"], &file);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("world-writable"), "{err}");
}

#[test]
fn as_root_a_profile_not_owned_by_root_is_refused() {
    let Some(_gate) = common::root::needs_root("chown") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.toml");
    std::fs::write(&file, "version = 1\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    nix::unistd::chown(&file, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
    let (code, err) = run(&["profile", "apply"], &file);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "profile {}: it is owned by nobody (uid 65534), not root (owner nobody (uid 65534), \
             group root (gid 0), mode 0644)",
            file.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("fix: chown root {}", file.display())),
        "{err}"
    );
}

/// A profile writable by its group is refused (exit 2, naming mode and gid) unless that group
/// is root's (gid 0): any member of another group could choose what root writes.
#[test]
fn a_group_writable_profile_is_refused_unless_its_group_is_root() {
    // Run by another user, sweetspot writes no knob: only a world-writable file is refused.
    let Some(_gate) = common::root::needs_root("chown") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.toml");
    std::fs::write(&file, "version = 1\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o664)).unwrap();
    nix::unistd::chown(&file, None, Some(nix::unistd::Gid::from_raw(65534))).unwrap();
    for cmd in [&["profile", "apply"][..], &["verify"][..]] {
        let (code, err) = run(cmd, &file);
        assert_eq!(code, Some(2), "{cmd:?}: {err}");
        assert!(
            err.contains(&format!(
                "profile {}: it is writable by group nogroup (gid 65534) (owner root (uid 0), \
                 group nogroup (gid 65534), mode 0664)",
                file.display()
            )),
            "{cmd:?}: {err}"
        );
        assert!(
            err.contains(&format!("fix: chmod g-w {}", file.display())),
            "{cmd:?}: {err}"
        );
    }
    nix::unistd::chown(&file, None, Some(nix::unistd::Gid::from_raw(0))).unwrap();
    for cmd in [&["profile", "apply"][..], &["verify"][..]] {
        let (code, err) = run(cmd, &file);
        assert_eq!(code, Some(0), "{cmd:?}: group root may write it: {err}");
        assert!(
            err.contains("has no device entry and no [host] knobs"),
            "{err}"
        );
    }
}
