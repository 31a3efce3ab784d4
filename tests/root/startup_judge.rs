//! `bench --startup`: the start-up judge on a real scratch loop device (root), timed under
//! no_load and light_io_load; and refused where there is no judge (a simulation).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{loops_under, mounts_under};
use std::path::Path;
use std::process::Command;

/// Unmounts and detaches whatever a `--scratch` run with `$TMPDIR` = `dir` left, even when
/// the test panics.
struct Leftovers<'a>(&'a Path);

impl Drop for Leftovers<'_> {
    fn drop(&mut self) {
        for m in mounts_under(self.0) {
            let _ = Command::new("umount").args(["-l", &m]).status();
        }
        for l in loops_under(self.0) {
            let _ = Command::new("losetup")
                .args(["-d", &format!("/dev/{l}")])
                .status();
        }
    }
}

/// light_io_load's cap, MiB/s: S's 4000 KiB/s (`comm_startup_lat.sh`'s MAXRATE).
const CAP_MIB_S: f64 = 4000.0 / 1024.0;

#[test]
fn the_start_up_judge_times_a_cold_start_up_and_the_light_writers_keep_their_cap() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let env = common::Env::new();
    let tmp = tempfile::tempdir().unwrap();
    let _left = Leftovers(tmp.path());
    let out = env
        .cmd(&[
            "bench",
            "--scratch",
            "--startup",
            "--loads",
            "no_load,light_io_load",
            "--runs",
            "1",
            "--json",
        ])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let (code, err) = common::code_and_stderr(out.clone());
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["sizes"]["judge"], "startup", "{v}");
    assert_eq!(v["sizes"]["startup_small_reads"], 120, "{v}");
    let load = |name: &str| {
        v["loads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["load"] == name)
            .unwrap_or_else(|| panic!("{name} missing: {v}"))
            .clone()
    };
    let (idle, light) = (load("no_load"), load("light_io_load"));
    for l in [&idle, &light] {
        assert_eq!(l["runs"], 1, "{l}");
        assert_eq!(l["failed"], serde_json::json!([]), "{l}");
        let t = l["time_s"].as_f64().unwrap();
        // A start-up of 184 reads takes more than 0 and, on a loop device, far less than 60 s.
        assert!(t > 0.0 && t < 60.0, "{l}");
    }
    assert!(idle["loads"].is_null(), "no_load has no background: {idle}");
    // light_io_load's writers count MiB written while the start-up ran: at most the cap
    // times its time, plus the one write each of the two writers may have under way.
    let t = light["time_s"].as_f64().unwrap();
    let mib = light["loads"].as_f64().unwrap();
    assert!(
        mib >= 0.0 && mib <= CAP_MIB_S * t + 2.0,
        "{mib} MiB in {t} s"
    );
    assert!(light["lcpu_pct"].as_f64().is_some(), "{light}");
    assert!(loops_under(tmp.path()).is_empty(), "loop device left");
    assert!(mounts_under(tmp.path()).is_empty(), "mount left");
}

#[test]
fn a_simulation_without_judge_figures_is_refused_with_the_reason() {
    let env = common::Env::new();
    let out = env
        .cmd(&[
            "bench",
            "--sim",
            "data/surfaces/seed-2.5.39-mm1-fifo_batch.toml",
            "--startup",
            "--runs",
            "1",
        ])
        .output()
        .unwrap();
    let (code, err) = common::code_and_stderr(out);
    assert_eq!(code, Some(2), "{err}");
    // Whatever the simulator's reason (a surface without judge figures), it is named.
    assert!(err.contains("--startup: "), "{err}");
}
