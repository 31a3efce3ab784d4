//! Every command's JSON types a knob's value alike, as `tune --json` and `history --json` do
//! (`KnobValue`): a number for a numeric knob, a string for a scheduler. `status --json`'s
//! `sweet_spot_knobs` and `verify --json`'s `expected`/`actual` printed numbers as strings
//! (`"256"`). On a fake sysfs (one mq-deadline disk with a wwid) and procfs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use serde_json::{Value, json};

#[test]
fn status_verify_and_history_print_numeric_knob_values_as_numbers_and_schedulers_as_strings() {
    let env = common::Env::new();
    let sys = env.dir.path().join("sys");
    let d = sys.join("block/sda");
    for (rel, v) in [
        ("dev", "8:0"),
        ("size", "2097152"),
        ("device/wwid", "naa.5000c500a1b2c3d4"),
        ("queue/scheduler", "none [mq-deadline] kyber bfq"),
        ("queue/nr_requests", "64"),
        ("queue/read_ahead_kb", "128"),
        ("queue/rotational", "1"),
        ("queue/iosched/fifo_batch", "16"),
    ] {
        std::fs::create_dir_all(d.join(rel).parent().unwrap()).unwrap();
        std::fs::write(d.join(rel), format!("{v}\n")).unwrap();
    }
    let db = env.db();
    common::store_sweet_spot(
        &db,
        "wwid:naa.5000c500a1b2c3d4",
        "sda",
        &sweetspot::device::kernel_release(),
        &[("scheduler", "bfq"), ("read_ahead_kb", "256")],
        &[("scheduler", "mq-deadline"), ("read_ahead_kb", "128")],
        2.0,
    );
    let config = env.dir.path().join("daemon.toml");
    std::fs::write(&config, "").unwrap();
    let run = |args: &[&str]| {
        let mut a = vec!["--sysfs-root", sys.to_str().unwrap()];
        a.extend_from_slice(args);
        env.cmd(&a).output().unwrap()
    };
    let json_of = |out: std::process::Output| -> Value {
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
        })
    };
    let want = json!({"read_ahead_kb": 256, "scheduler": "bfq"});

    // The reference: `history --json` (and `tune --json`) type the setting so.
    let h = json_of(run(&["history", "--json"]));
    assert_eq!(h["sweet_spots"][0]["setting"], want, "{h}");

    let s = json_of(run(&[
        "status",
        "--json",
        "--config",
        config.to_str().unwrap(),
    ]));
    assert_eq!(s["devices"][0]["sweet_spot_knobs"], want, "{s}");
    assert_eq!(s["version"], 3, "the typed values are format 2 and later");

    let p = env.dir.path().join("p.toml");
    let out = run(&["profile", "export", "--out", p.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(&["verify", p.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1), "drift");
    let v = json_of(out);
    assert_eq!(v["version"], 3, "the typed values are format 2 and later");
    let rows: Vec<(Value, Value, Value)> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["knob"].clone(),
                r["expected"].clone(),
                r["actual"].clone(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (json!("read_ahead_kb"), json!(256), json!(128)),
            (json!("scheduler"), json!("bfq"), json!("mq-deadline")),
        ],
        "{v}"
    );
}
