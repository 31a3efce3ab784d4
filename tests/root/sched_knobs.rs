//! CPU-scheduler knobs end to end:
//!
//! - a simulated tune of a boolean knob (a sched/features flag, 0/1) finds the 2009 answer
//!   (NEW_FAIR_SLEEPERS off) and checks it;
//! - the real debugfs (root): mounted on a fake sysfs root's `kernel/debug` (a guard unmounts
//!   it), it is either readable (its flags are knobs) or locked down, as on the machine this
//!   was written on, where every `sched/*` file answers EPERM; `knobs` says so once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use sweetspot::knob::sched::{self, Debugfs};
use sweetspot::sysroot::SysRoot;

#[test]
fn a_simulated_tune_of_a_boolean_knob_turns_new_fair_sleepers_off() {
    let tmp = tempfile::tempdir().unwrap();
    let out = assert_cmd::Command::cargo_bin("sweetspot")
        .unwrap()
        .arg("--db")
        .arg(tmp.path().join("s.db"))
        .args([
            "tune",
            "--sim",
            "tests/surfaces/new-fair-sleepers-2009.toml",
        ])
        .args(["--policy", "tests/policies/new-fair-sleepers.toml"])
        .args(["--seed", "11", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["default"]["NEW_FAIR_SLEEPERS"], 1, "{v}");
    assert_eq!(v["best"]["NEW_FAIR_SLEEPERS"], 0, "{v}");
    assert_eq!(v["significant"], true, "{v}");
    // 68.2 / 42.8 = 1.59× better, within the 3% noise.
    let r = v["objective"]["improvement"]["ratio"].as_f64().unwrap();
    assert!((1.45..1.75).contains(&r), "{r}");
}

/// debugfs mounted at `<dir>/sys/kernel/debug`, unmounted on drop.
struct DebugfsMount {
    target: PathBuf,
}

impl DebugfsMount {
    fn new(sys: &Path) -> DebugfsMount {
        let target = sys.join("kernel/debug");
        std::fs::create_dir_all(&target).unwrap();
        let st = Command::new("mount")
            .args(["-t", "debugfs", "none"])
            .arg(&target)
            .status()
            .unwrap();
        assert!(st.success(), "mount -t debugfs");
        DebugfsMount { target }
    }
}

impl Drop for DebugfsMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.target).status();
    }
}

#[test]
fn the_real_debugfs_is_either_readable_or_said_to_be_locked_down() {
    let Some(_gate) = common::root::needs_root("debugfs") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let sys = tmp.path().join("sys");
    std::fs::create_dir_all(sys.join("block")).unwrap();
    let root = SysRoot::new(&sys, "/proc");
    assert!(matches!(sched::debugfs(&root), Debugfs::Unmounted(_)));
    let _m = DebugfsMount::new(&sys);
    let (knobs, state) = sched::knobs(&root);
    // The sysctls come from the real /proc either way.
    assert!(knobs.iter().any(|k| k.name == "sched_autogroup_enabled"));
    match &state {
        Debugfs::Available(_) => {
            assert!(
                knobs
                    .iter()
                    .any(|k| k.name == "base_slice_ns" || k.name == "PLACE_LAG")
            );
        }
        Debugfs::Refused(path, err) => {
            assert!(path.ends_with("sched/features"), "{path:?}");
            assert!(err.contains("EPERM") || err.contains("EACCES"), "{err}");
            assert!(knobs.iter().all(|k| k.name != "base_slice_ns"));
            let why = state.why().unwrap();
            assert!(why.starts_with("debugfs is locked down here"), "{why}");
        }
        other => panic!("{other:?}"),
    }
}
