//! `sweetspot bench --sim`: bad surface files, reproducible seeded output, and the simulated
//! device's means against the surface's points.
#![allow(clippy::unwrap_used)]

use assert_cmd::Command;
use std::path::Path;

const SEED: &str = "data/surfaces/seed-2.5.39-mm1-fifo_batch.toml";

fn bench(db: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("sweetspot")
        .expect("binary")
        .env("SWEETSPOT_DB", db)
        .arg("bench")
        .args(args)
        .assert()
}

fn stdout(db: &Path, args: &[&str]) -> String {
    let out = bench(db, args).success().get_output().stdout.clone();
    String::from_utf8(out).expect("utf-8")
}

#[test]
fn bad_surfaces_name_file_line_and_field_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let cases = [
        (
            "missing_time_s",
            15,
            "point[2].io_load.time_s",
            "missing (required)",
        ),
        (
            "unknown_load",
            10,
            "point[1].io-load",
            "unknown load 'io-load'",
        ),
        (
            "knob_out_of_range",
            12,
            "point[2].knobs.fifo_batch",
            "512 is outside [1, 256]",
        ),
        (
            "undeclared_knob",
            8,
            "point[1].knobs.quantum",
            "knob 'quantum' is not declared",
        ),
        (
            "not_a_grid",
            12,
            "point",
            "points do not form a full grid: no point for fifo_batch=16 read_ahead_kb=256",
        ),
        (
            "default_out_of_range",
            3,
            "knobs.fifo_batch.default",
            "300 is outside [1, 256]",
        ),
        (
            "zero_time_s",
            13,
            "point[2].no_load.time_s",
            "must be a finite number > 0, not 0",
        ),
        (
            "negative_time_s",
            13,
            "point[2].no_load.time_s",
            "must be a finite number > 0, not -5",
        ),
        (
            "relative_sigma_too_large",
            8,
            "noise.relative_sigma",
            "must be in [0, 1), not 1e300 (the sd of a run's noise, as a fraction of the figure)",
        ),
        (
            "drift_sigma_too_large",
            9,
            "noise.drift_sigma",
            "must be in (0, 1], not 1e6 (the drift's sd, ln units)",
        ),
        (
            "misspelt_knob",
            7,
            "knobs.fifo_btach",
            "unknown knob 'fifo_btach' (did you mean 'fifo_batch'?): not a knob sweetspot knows",
        ),
        ("bad_toml", 9, "syntax", ""),
        (
            "time_s_overflowing",
            14,
            "point[2].no_load.time_s",
            "must be 0.001–1000000 s (no contest run is shorter than 1 ms or longer than 11.6 \
             days), not 1e308",
        ),
        (
            "knob_range_beyond_catalogue",
            5,
            "knobs.read_ahead_kb.max",
            "99999999999 is outside read_ahead_kb's safe bounds 0–65536 (src/knob/catalogue.rs)",
        ),
    ];
    for (name, line, field, msg) in cases {
        let file = format!("tests/invalid_surfaces/{name}.toml");
        let out = bench(&db, &["--sim", &file])
            .code(2)
            .get_output()
            .stderr
            .clone();
        let err = String::from_utf8(out).unwrap();
        let want = format!("{file}:{line}: {field}: {msg}");
        assert!(err.contains(&want), "{name}: want '{want}' in:\n{err}");
    }
    // Nothing was measured, so nothing was stored.
    let store = sweetspot::store::Store::open(&db).unwrap();
    assert!(store.trials(None).unwrap().is_empty());
}

#[test]
fn seeded_json_is_byte_identical_and_the_seed_matters() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let args = ["--sim", SEED, "--seed", "7", "--json"];
    let a = stdout(&db, &args);
    let b = stdout(&db, &args);
    assert_eq!(a, b);
    let c = stdout(&db, &["--sim", SEED, "--seed", "8", "--json"]);
    assert_ne!(a, c);
    let v: serde_json::Value = serde_json::from_str(&a).unwrap();
    assert_eq!(v["target"]["identity"], "sim:seed-2.5.39-mm1-fifo_batch");
    assert_eq!(v["setting"]["fifo_batch"], 32);
    let io = &v["loads"][1];
    assert_eq!(io["load"], "io_load");
    assert_eq!(io["runs"], 3);
    assert_eq!(io["raw"].as_array().unwrap().len(), 3);
    // io_load Ratio at the default 32: 239.5 / 67.7 = 3.54, within 3 runs of 4% noise.
    let ratio = io["ratio"].as_f64().unwrap();
    assert!((ratio - 3.54).abs() < 0.3, "{ratio}");
    // Every run was stored: two benches of 6 runs each with seed 7, one with seed 8.
    let store = sweetspot::store::Store::open(&db).unwrap();
    let trials = store
        .trials(Some("sim:seed-2.5.39-mm1-fifo_batch"))
        .unwrap();
    assert_eq!(trials.len(), 3);
    assert_eq!(store.runs(trials[0].id).unwrap().len(), 6);
}

#[test]
fn set_benches_another_setting_and_rejects_bad_values() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let args = [
        "--sim",
        SEED,
        "--seed",
        "1",
        "--set",
        "fifo_batch=8",
        "--runs",
        "40",
        "--json",
    ];
    let v: serde_json::Value = serde_json::from_str(&stdout(&db, &args)).unwrap();
    assert_eq!(v["label"], "fifo_batch=8");
    // The thread's figure at fifo_batch 8: 109.1 s, Ratio 1.61; 40 runs of 4% noise.
    let t = v["loads"][1]["time_s"].as_f64().unwrap();
    assert!((t - 109.1).abs() < 2.5, "{t}");
    let r = v["loads"][1]["ratio"].as_f64().unwrap();
    assert!((r - 1.61).abs() < 0.05, "{r}");
    let err = bench(&db, &["--sim", SEED, "--set", "fifo_batch=512"]).code(2);
    let err = String::from_utf8(err.get_output().stderr.clone()).unwrap();
    assert!(err.contains("fifo_batch: value '512'"), "{err}");
    bench(&db, &["--sim", SEED, "--set", "quantum=4"]).code(2);
    // A knob given twice is refused as `set` refuses it, not the last one silently used.
    let fresh = dir.path().join("fresh.db");
    let args = [
        "--sim",
        SEED,
        "--set",
        "fifo_batch=8",
        "--set",
        "fifo_batch=16",
    ];
    let err = bench(&fresh, &args).code(2);
    let err = String::from_utf8(err.get_output().stderr.clone()).unwrap();
    assert_eq!(
        err.trim_end(),
        "sweetspot: error: --set: knob 'fifo_batch' given twice"
    );
    assert!(!fresh.exists(), "the refused bench created its database");
    bench(&db, &["--sim", SEED, "--loads", "mem_load"]).code(2);
}

#[test]
fn table_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let table = stdout(&db, &["--sim", SEED, "--seed", "7", "--runs", "2"]);
    assert!(table.starts_with("sim:seed-2.5.39-mm1-fifo_batch (kernel sim)\n\nno_load:\n"));
    assert!(table.contains("\nio_load:\nSetting [runs]"), "{table}");
    assert!(table.contains("\nfifo_batch=32 [2] "), "{table}");
    let only_io = stdout(
        &db,
        &[
            "--sim", SEED, "--seed", "7", "--loads", "io_load", "--runs", "1",
        ],
    );
    assert!(only_io.contains("n/a"), "{only_io}");
    assert!(only_io.contains("warning: Ratio n/a"), "{only_io}");
    let csv = stdout(&db, &["--sim", SEED, "--seed", "7", "--runs", "2", "--csv"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 5);
    assert!(lines[1].starts_with("sim:seed-2.5.39-mm1-fifo_batch,fifo_batch=32,no_load,1,"));
    assert!(lines[4].starts_with("sim:seed-2.5.39-mm1-fifo_batch,fifo_batch=32,io_load,2,"));
}
