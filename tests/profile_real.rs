//! Profiles on real loop devices (CI runs as root): a sweet spot of a loop device, keyed by
//! its backing file, is exported in all four formats, applied after the device was detached
//! and re-attached under another loop name, verified clean, reported as drift after a manual
//! change (exit 1), and undone by `restore`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// A loop device over an existing file, detached on drop with its queue put back as it was
/// attached (a loop queue outlives `losetup -d`).
struct Attached {
    name: String,
    dev: PathBuf,
    saved: Vec<(&'static str, String)>,
}

impl Attached {
    fn new(file: &Path) -> Attached {
        let out = Command::new("losetup")
            .args(["-f", "--show"])
            .arg(file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "losetup: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dev = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        let name = dev.file_name().unwrap().to_string_lossy().into_owned();
        // A reused loop number starts from the kernel's defaults, not a leftover.
        let _ = std::fs::write(
            Path::new("/sys/block").join(&name).join("queue/scheduler"),
            "none\n",
        );
        let mut a = Attached {
            name,
            dev,
            saved: Vec::new(),
        };
        a.saved = vec![("queue/read_ahead_kb", a.read("queue/read_ahead_kb"))];
        a
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(Path::new("/sys/block").join(&self.name).join(rel))
            .unwrap_or_else(|e| panic!("{rel}: {e}"))
            .trim()
            .to_string()
    }

    fn write(&self, rel: &str, v: &str) {
        std::fs::write(
            Path::new("/sys/block").join(&self.name).join(rel),
            format!("{v}\n"),
        )
        .unwrap();
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        let q = Path::new("/sys/block").join(&self.name);
        let _ = std::fs::write(q.join("queue/scheduler"), "none\n");
        for (rel, v) in &self.saved {
            let _ = std::fs::write(q.join(rel), format!("{v}\n"));
        }
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
    }
}

fn sweetspot(db: &Path, args: &[&str]) -> std::process::Output {
    Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap()
}

fn sparse(path: &Path) {
    std::fs::File::create(path)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
}

#[test]
fn a_loop_sweet_spot_follows_its_backing_file_to_another_loop_name() {
    let dir = tempfile::tempdir().unwrap();
    let (file, filler_file) = (dir.path().join("disk.img"), dir.path().join("filler.img"));
    sparse(&file);
    sparse(&filler_file);
    let db = dir.path().join("p.db");

    let first = Attached::new(&file);
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
    for format in ["toml", "udev", "sysctl", "tuned"] {
        let out = sweetspot(&db, &["profile", "export", "--format", format]);
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
    let profile = dir.path().join("profile.toml");
    let out = sweetspot(
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
    let filler = Attached::new(&filler_file);
    let again = Attached::new(&file);
    assert_ne!(again.name, filler.name);
    let p = profile.to_str().unwrap();
    let out = sweetspot(&db, &["profile", "apply", p]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        again.read("queue/scheduler"),
        "none [mq-deadline] kyber bfq"
    );
    assert_eq!(again.read("queue/iosched/fifo_batch"), "8");
    assert_eq!(again.read("queue/read_ahead_kb"), "256");
    assert_eq!(
        filler.read("queue/scheduler"),
        "[none] mq-deadline kyber bfq",
        "{old_name} reused: untouched"
    );
    assert!(
        stdout.contains(&format!("{} (tuned as {old_name})", again.name)) || again.name == old_name,
        "{stdout}"
    );

    let out = sweetspot(&db, &["verify", p]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    again.write("queue/read_ahead_kb", "512");
    let out = sweetspot(&db, &["verify", p, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["version"], 1);
    let drift: Vec<&serde_json::Value> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "drift")
        .collect();
    assert_eq!(drift.len(), 1, "{v}");
    assert_eq!(
        (drift[0]["knob"].as_str(), drift[0]["actual"].as_str()),
        (Some("read_ahead_kb"), Some("512"))
    );

    let out = sweetspot(&db, &["restore"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        again.read("queue/scheduler"),
        "[none] mq-deadline kyber bfq"
    );
    assert_eq!(
        again.read("queue/read_ahead_kb"),
        default_ra,
        "restore undid the profile"
    );
}
