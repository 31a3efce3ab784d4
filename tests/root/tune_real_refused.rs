//! `sweetspot tune --device` on a real scratch loop device (root), for the Hardening issue
//! (#9): a setting the kernel refuses (EINVAL: `nr_requests` above the loop device's tag depth
//! under `none`) is infeasible and the tune finishes, naming it with the errno, with the
//! device back as it was; and a host-wide vm knob (`dirty_ratio`, in a fake procfs so the
//! host's is never touched) is tuned, marked host-wide and restored.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;
use sweetspot::bench::scratch::Scratch;

const FAST: [&str; 6] = ["--job-scale", "0.02", "--lead", "0.3", "--load-mib", "32"];

fn queue(dev: &str, k: &str) -> String {
    std::fs::read_to_string(Path::new("/sys/block").join(dev).join("queue").join(k))
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn open_entries(db: &Path) -> i64 {
    let store = sweetspot::store::Store::open(db).unwrap();
    store
        .conn()
        .query_row(
            "SELECT count(*) FROM journal WHERE restored_at IS NULL",
            [],
            |r| r.get(0),
        )
        .unwrap()
}

/// A policy file `<name>.toml` in `dir` tuning `knob` (its TOML table) for io_load Ratio.
fn policy(dir: &Path, name: &str, knob: &str) -> String {
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(
        &p,
        format!(
            "loads = [\"no_load\", \"io_load\"]\nbudget = 7\ncheck_pairs = 2\n\
             [objective]\nminimize = \"ratio\"\nloads = [\"io_load\"]\n{knob}\n"
        ),
    )
    .unwrap();
    p.display().to_string()
}

#[test]
fn einval_from_the_kernel_marks_the_setting_infeasible_and_the_tune_finishes() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let scratch =
        Scratch::create(512, std::path::Path::new("/nonexistent/sweetspot-test.db")).unwrap();
    let dev = scratch.device_name();
    let before = (queue(&dev, "scheduler"), queue(&dev, "nr_requests"));
    assert_eq!(before.1, "128", "a loop device's tag depth");
    let env = common::Env::new();
    // 2048 is inside the catalogue's safe domain (4–2048) but above this tag depth: EINVAL.
    let pol = policy(
        env.dir.path(),
        "nr_requests",
        "[knobs.nr_requests]\nvalues = [32, 2048]",
    );
    let out = env
        .cmd(&[
            "tune", "--device", &dev, "--policy", &pol, "--seed", "1", "--json",
        ])
        // The fake procfs has no mountinfo: name the scratch mount.
        .arg("--dir")
        .arg(scratch.mount_point())
        .args(FAST)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let v: serde_json::Value = serde_json::from_slice(&common::ok_stdout(out)).unwrap();
    let refused = v["refused"].as_array().unwrap();
    assert_eq!(refused.len(), 1, "{v}");
    assert_eq!(refused[0]["setting"]["nr_requests"], 2048);
    let e = refused[0]["error"].as_str().unwrap();
    assert!(
        e.starts_with("nr_requests: writing '2048' to /sys/block/")
            && e.ends_with("EINVAL (Invalid argument)"),
        "{e}"
    );
    assert!(
        err.contains("refused: nr_requests: writing '2048'"),
        "{err}"
    );
    assert_ne!(v["best"]["nr_requests"], 2048);
    assert_eq!(
        (queue(&dev, "scheduler"), queue(&dev, "nr_requests")),
        before,
        "the device is back as it was"
    );
    assert_eq!(
        open_entries(&env.db()),
        0,
        "nothing left open in the journal"
    );
}

#[test]
fn a_host_wide_vm_knob_is_tuned_marked_and_restored() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let scratch =
        Scratch::create(512, std::path::Path::new("/nonexistent/sweetspot-test.db")).unwrap();
    let dev = scratch.device_name();
    let env = common::Env::new();
    assert_eq!(env.vm("dirty_ratio"), "20");
    let pol = policy(
        env.dir.path(),
        "dirty_ratio",
        "[knobs.dirty_ratio]\nvalues = [5, 40]",
    );
    let out = env
        .cmd(&[
            "tune", "--device", &dev, "--policy", &pol, "--seed", "1", "--json",
        ])
        // The fake procfs has no mountinfo: name the scratch mount.
        .arg("--dir")
        .arg(scratch.mount_point())
        .args(FAST)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let v: serde_json::Value = serde_json::from_slice(&common::ok_stdout(out)).unwrap();
    assert!(!err.contains("dropped"), "{err}");
    assert_eq!(v["host_wide"], serde_json::json!(["dirty_ratio"]), "{v}");
    assert_eq!(v["default"]["dirty_ratio"], 20);
    assert!(v["trials"].as_u64().unwrap() >= 3, "{v}");
    assert_eq!(env.vm("dirty_ratio"), "20", "restored at the end");
    assert_eq!(env.vm("dirty_bytes"), "0");
    assert_eq!(
        open_entries(&env.db()),
        0,
        "nothing left open in the journal"
    );
}
