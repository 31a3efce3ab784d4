//! `sweetspot tune --sim`: the optimiser end to end on simulated surfaces, the stored sweet
//! spot, history, the one-tune-per-device lock, recovery of a killed tune, and bad policies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use serde_json::Value;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn surface(name: &str) -> String {
    root()
        .join("data/surfaces")
        .join(name)
        .display()
        .to_string()
}

fn tune_json(db: &Path, args: &[&str]) -> Value {
    let out = common::ok_stdout(
        assert_cmd::Command::cargo_bin("sweetspot")
            .unwrap()
            .arg("--db")
            .arg(db)
            .arg("tune")
            .args(args)
            .arg("--json")
            .output()
            .unwrap(),
    );
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn seed_surface_finds_fifo_batch_8_or_2_significantly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let seed = surface("seed-2.5.39-mm1-fifo_batch.toml");
    let mut good = 0;
    let mut seen = Vec::new();
    for s in 1..=10 {
        let v = tune_json(&db, &["--sim", &seed, "--seed", &s.to_string()]);
        let fb = v["best"]["fifo_batch"].as_i64().unwrap();
        let sig = v["significant"].as_bool().unwrap();
        // The cost of a tune: 12 trials of no_load + io_load at most (policy quick).
        assert!(v["runs"].as_u64().unwrap() <= 24, "{v}");
        assert_eq!(v["default"]["fifo_batch"], 32);
        // The seed it ran with, so that `--seed` repeats it.
        assert_eq!(v["seed"], s, "{v}");
        if sig && (fb == 8 || fb == 2) {
            good += 1;
            let r = v["objective"]["improvement"]["ratio"].as_f64().unwrap();
            // True Ratio 3.54 → 1.61 (8) or 1.66 (2): about 2.1–2.2× better.
            assert!((1.6..3.0).contains(&r), "{v}");
            let ci = v["objective"]["improvement"]["ci95"].as_array().unwrap();
            assert!(ci[0].as_f64().unwrap() <= r && r <= ci[1].as_f64().unwrap());
            // The printed "default → best" divides to the printed ratio.
            let (d, b) = (
                v["objective"]["default"].as_f64().unwrap(),
                v["objective"]["best"].as_f64().unwrap(),
            );
            assert!((d / b / r - 1.0).abs() < 1e-9, "{d} / {b} vs {r}");
        }
        seen.push((fb, sig));
    }
    // The shoot-out measures 86–88% (400 and 50 seeds); allow two misses in ten.
    assert!(good >= 8, "{seen:?}");
}

#[test]
fn a_kept_default_reports_the_defaults_figure_as_best_and_the_candidates_apart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    // The flat surface: seed 2 keeps the default (fifo_batch 32) after a check of 16.
    let v = tune_json(
        &db,
        &[
            "--sim",
            &surface("flat-fifo_batch.toml"),
            "--seed",
            "2",
            "--budget",
            "12",
        ],
    );
    let o = &v["objective"];
    assert_eq!(v["significant"], false, "{v}");
    assert_eq!(v["best"], v["default"], "{v}");
    assert_eq!(v["candidate"]["fifo_batch"], 16, "{v}");
    // `best` and `objective.best` are one setting: the default.
    let d = o["default"].as_f64().unwrap();
    assert_eq!(o["best"].as_f64(), Some(d), "{v}");
    assert_eq!(o["improvement"], Value::Null, "{v}");
    // What the default was compared with, and the check's ratio, are the candidate's.
    let c = o["candidate"].as_f64().unwrap();
    assert!((c - d).abs() > 1e-6, "{v}");
    let r = o["candidate_improvement"]["ratio"].as_f64().unwrap();
    assert!((d / c / r - 1.0).abs() < 1e-9, "{d} / {c} vs {r}");
    assert!(r < 1.0, "{v}");

    // A significant sweet spot: best is the candidate, and both figures agree.
    let v = tune_json(
        &db,
        &[
            "--sim",
            &surface("seed-2.5.39-mm1-fifo_batch.toml"),
            "--seed",
            "7",
        ],
    );
    let o = &v["objective"];
    assert_eq!(v["significant"], true, "{v}");
    assert_eq!(v["best"], v["candidate"], "{v}");
    assert_eq!(o["best"], o["candidate"], "{v}");
    assert_eq!(o["improvement"], o["candidate_improvement"], "{v}");
    let (d, b) = (o["default"].as_f64().unwrap(), o["best"].as_f64().unwrap());
    let r = o["improvement"]["ratio"].as_f64().unwrap();
    assert!((d / b / r - 1.0).abs() < 1e-9, "{d} / {b} vs {r}");
}

#[test]
fn a_scheduler_only_tune_picks_the_best_measured_scheduler_and_checks_it() {
    // The Hardening issue's tune: scheduler only, io_load Loads, budget 8, 2 check pairs, from
    // bfq; true Loads kyber 10,056, mq-deadline 9,382, none 9,216, bfq 8,135, noise 9% a run.
    // Within noise of kyber (9%): every scheduler but bfq. One tune picked bfq, with
    // "nothing beat the default" and no check.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let surf = surface("scheduler-loop-throughput.toml");
    let pol = root().join("tests/policies/scheduler-throughput.toml");
    let pol = pol.display().to_string();
    let (mut near, mut kyber, mut checked) = (0, 0, 0);
    let n = 60;
    for s in 1..=n {
        let v = tune_json(
            &db,
            &["--sim", &surf, "--policy", &pol, "--seed", &s.to_string()],
        );
        assert_eq!(v["default"]["scheduler"], "bfq", "{v}");
        let cand = v["candidate"]["scheduler"].as_str().unwrap().to_string();
        let reason = v["reason"].as_str().unwrap();
        near += (cand != "bfq") as u32;
        kyber += (cand == "kyber") as u32;
        if v["p_value"].is_number() {
            checked += 1;
        } else {
            // No check only when the default measured best, and then the report says so.
            assert_eq!(cand, "bfq", "{v}");
            assert!(
                reason.contains("no setting measured better than the default"),
                "{v}"
            );
        }
        assert!(v["runs"].as_u64().unwrap() <= 16, "{v}");
    }
    // Measured: 99 of 100 seeds pick a scheduler other than bfq (51 kyber), and 99 check.
    assert!(near >= n * 95 / 100, "{near} of {n}");
    assert!(checked >= n * 95 / 100, "{checked} of {n}");
    assert!(kyber >= n / 3, "{kyber} of {n}");
}

#[test]
fn a_large_budget_is_a_bound_not_a_target() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let seed = surface("seed-2.5.39-mm1-fifo_batch.toml");
    let v = tune_json(&db, &["--sim", &seed, "--seed", "3", "--budget", "1000"]);
    // The two best are separated up to SEPARATE_CAP (20) trials each, and the check takes
    // at most CHECK_CAP × check_pairs = 16 pairs: it was 485 pairs, or 333 search trials.
    let n = v["trials"].as_u64().unwrap();
    assert!((20..=100).contains(&n), "{n} trials");
    assert_eq!(v["significant"], true, "{v}");
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .contains("in 16 interleaved pairs"),
        "{v}"
    );
}

#[test]
fn same_seed_same_answer() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let seed = surface("seed-2.5.39-mm1-fifo_batch.toml");
    let a = tune_json(&db, &["--sim", &seed, "--seed", "7"]);
    let b = tune_json(&db, &["--sim", &seed, "--seed", "7"]);
    assert_eq!(a["best"], b["best"]);
    assert_eq!(a["objective"], b["objective"]);
    assert_eq!(a["runs"], b["runs"]);
}

#[test]
fn flat_surface_keeps_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let flat = surface("flat-fifo_batch.toml");
    let mut claims = 0;
    for s in 1..=10 {
        let v = tune_json(&db, &["--sim", &flat, "--seed", &s.to_string()]);
        if v["significant"].as_bool().unwrap() {
            claims += 1;
        } else {
            assert_eq!(v["best"], v["default"], "{v}");
            assert!(v["reason"].as_str().unwrap().contains("keep the default"));
        }
    }
    // Each claim is a false positive; the test level is 5% (the shoot-out: 4–6%).
    assert!(claims <= 1, "{claims} false positives in 10");
}

/// The surface where one of three knobs carries the effect (wbt_lat_usec 4096 → 1024, 2×;
/// fifo_batch and read_ahead_kb flat): every tune finds wbt_lat_usec 1024 significantly, and
/// when its best changed two or more knobs the report lists each with its finding, `from` the
/// default's value and `to` the check's best's; a knob left at its default is not changed in
/// `best`. Seed 4's best changed all three and the check took every run the search left: each
/// is kept, "not tested: no budget left".
#[test]
fn one_of_three_knobs_reports_each_changed_knob() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let s = surface("one-of-three-knobs.toml");
    let policy = root().join("tests/policies/one-of-three.toml");
    for seed in 1..=4 {
        let v = tune_json(
            &db,
            &[
                "--sim",
                &s,
                "--seed",
                &seed.to_string(),
                "--policy",
                policy.to_str().unwrap(),
            ],
        );
        assert_eq!(v["significant"], true, "{v}");
        assert_eq!(v["best"]["wbt_lat_usec"], 1024, "{v}");
        let knobs = v["knobs"].as_array().cloned().unwrap_or_default();
        for k in &knobs {
            let name = k["knob"].as_str().unwrap();
            assert_eq!(k["from"], v["default"][name], "{k}");
            let left = k["finding"] == "left_at_default";
            assert_eq!(v["best"][name] == v["default"][name], left, "{v}");
        }
        if seed == 4 {
            let found: Vec<(&str, &str, &str)> = knobs
                .iter()
                .map(|k| {
                    (
                        k["knob"].as_str().unwrap(),
                        k["finding"].as_str().unwrap(),
                        k["why"].as_str().unwrap(),
                    )
                })
                .collect();
            let untested = ("not_tested", "not tested: no budget left");
            assert_eq!(
                found,
                [
                    ("wbt_lat_usec", untested.0, untested.1),
                    ("fifo_batch", untested.0, untested.1),
                    ("read_ahead_kb", untested.0, untested.1),
                ],
                "{v}"
            );
            assert_eq!(
                (&v["best"]["fifo_batch"], &v["best"]["read_ahead_kb"]),
                (&8.into(), &64.into())
            );
        }
    }
}

#[test]
fn synthetic_2d_improves_on_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let bowl = surface("synthetic-2d-deadline.toml");
    // True Ratio: 1.856 at the default (16, 128); optimum 1.600 at (8, 512).
    let truth = |fb: i64, ra: i64| {
        let (x, y) = ((fb as f64).log2() - 3.0, (ra as f64).log2() - 9.0);
        1.6 * (1.0 + 0.06 * x * x + 0.04 * y * y + 0.03 * x * y)
    };
    let mut within5 = 0;
    for s in 1..=5 {
        let v = tune_json(
            &db,
            &[
                "--sim",
                &bowl,
                "--seed",
                &s.to_string(),
                "--policy",
                root().join("tests/policies/bowl.toml").to_str().unwrap(),
                "--budget",
                "40",
            ],
        );
        let b = &v["best"];
        let r = truth(
            b["fifo_batch"].as_i64().unwrap(),
            b["read_ahead_kb"].as_i64().unwrap(),
        );
        // Never worse than the default, whatever it answers.
        assert!(r <= truth(16, 128) + 1e-9, "{v}");
        if r <= 1.05 * 1.6 {
            within5 += 1;
        }
    }
    // The issue asks for within 5% of the optimum in every seed; the shoot-out measures 98%
    // of held-out seeds at this budget (40 trials, 80 runs), so allow one miss in five. (At
    // the policy's 80 trials the smallest-change step has runs, and may leave fifo_batch at
    // its default when its 6% is within the check's CI: `docs/solver.md`.)
    assert!(within5 >= 4, "{within5} of 5 within 5%");
}

#[test]
fn guard_rail_excludes_the_ratio_best_setting() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let s = root().join("tests/surfaces/guard-fifo_batch.toml");
    let s = s.to_str().unwrap();
    let guarded = root().join("tests/policies/guarded.toml");
    let unguarded = root().join("tests/policies/unguarded.toml");
    let mut sixteen = 0;
    let mut eight = 0;
    for seed in 1..=5 {
        let seed = seed.to_string();
        let g = tune_json(
            &db,
            &[
                "--sim",
                s,
                "--seed",
                &seed,
                "--policy",
                guarded.to_str().unwrap(),
            ],
        );
        let fb = g["best"]["fifo_batch"].as_i64().unwrap();
        assert_ne!(fb, 8, "the guard rail must exclude fifo_batch 8: {g}");
        sixteen += (fb == 16 && g["significant"] == true) as u32;
        let u = tune_json(
            &db,
            &[
                "--sim",
                s,
                "--seed",
                &seed,
                "--policy",
                unguarded.to_str().unwrap(),
            ],
        );
        eight += (u["best"]["fifo_batch"] == 8) as u32;
    }
    assert!(sixteen >= 4, "guarded answer 16 in {sixteen} of 5");
    assert!(eight >= 4, "unguarded answer 8 in {eight} of 5");
}

#[test]
fn stores_sweet_spot_and_history_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let seed = surface("seed-2.5.39-mm1-fifo_batch.toml");
    let v = tune_json(&db, &["--sim", &seed, "--seed", "3"]);
    let out = assert_cmd::Command::cargo_bin("sweetspot")
        .unwrap()
        .arg("--db")
        .arg(&db)
        .args(["history", "sim:seed-2.5.39-mm1-fifo_batch", "--json"])
        .output()
        .unwrap();
    let out = common::ok_stdout(out);
    let h: Value = serde_json::from_slice(&out).unwrap();
    let spots = h["sweet_spots"].as_array().unwrap();
    assert_eq!(spots.len(), 1);
    assert_eq!(spots[0]["setting"], v["best"]);
    assert_eq!(spots[0]["policy"], "quick");
    assert_eq!(spots[0]["significant"], v["significant"]);
    assert_eq!(h["tunes"][0]["status"], "done");
    assert_eq!(
        h["trials"].as_array().unwrap().len() as u64,
        v["trials"].as_u64().unwrap()
    );
    assert!(
        h["trials"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["finished_at_epoch_s"].is_i64() && t["finished_at"].is_string()),
        "every trial of a finished tune is finished"
    );
    // A device the database never saw (and sysfs lacks) is bad input, not an empty history.
    let out = assert_cmd::Command::cargo_bin("sweetspot")
        .unwrap()
        .arg("--db")
        .arg(&db)
        .args(["history", "sim:nothing", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn history_shows_the_newest_sweet_spot_per_device_with_its_tune() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let seed = surface("seed-2.5.39-mm1-fifo_batch.toml");
    tune_json(&db, &["--sim", &seed, "--seed", "1"]);
    let v = tune_json(&db, &["--sim", &seed, "--seed", "2"]);
    let out = assert_cmd::Command::cargo_bin("sweetspot")
        .unwrap()
        .arg("--db")
        .arg(&db)
        .arg("history")
        .output()
        .unwrap();
    let text = String::from_utf8(common::ok_stdout(out)).unwrap();
    let spots = text.split("\ntunes:").next().unwrap();
    assert_eq!(spots.matches("policy quick:").count(), 1, "{text}");
    assert!(spots.contains(&format!("tune #{}", v["tune_id"])), "{text}");
    assert!(spots.contains("1 earlier sweet spot of it"), "{text}");
    assert!(spots.contains(" UTC"), "{text}");
}

#[test]
fn history_of_a_database_not_yet_created_is_empty_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sub/none.db");
    for json in [true, false] {
        let mut cmd = assert_cmd::Command::cargo_bin("sweetspot").unwrap();
        cmd.arg("--db").arg(&db).arg("history");
        if json {
            cmd.arg("--json");
        }
        let out = String::from_utf8(common::ok_stdout(cmd.output().unwrap())).unwrap();
        if json {
            let h: Value = serde_json::from_str(&out).unwrap();
            assert_eq!(h["tunes"].as_array().unwrap().len(), 0);
            assert_eq!(h["sweet_spots"].as_array().unwrap().len(), 0);
        } else {
            assert!(out.contains("does not exist yet"), "{out}");
        }
    }
    assert!(
        !dir.path().join("sub").exists(),
        "history created the --db's directory"
    );
}

#[test]
fn a_second_tune_on_the_same_device_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let target = sweetspot::bench::TargetInfo {
        label: "sim:seed-2.5.39-mm1-fifo_batch".into(),
        identity: "sim:seed-2.5.39-mm1-fifo_batch".into(),
        kernel: "sim".into(),
    };
    let root = sweetspot::sysroot::SysRoot::default();
    let _held = sweetspot::lock::DeviceLock::acquire(
        &sweetspot::lock::path(&db, &root, &target.identity),
        &target.label,
        sweetspot::lock::Holder::me("tune"),
    )
    .unwrap();
    let out = assert_cmd::Command::cargo_bin("sweetspot")
        .unwrap()
        .arg("--db")
        .arg(&db)
        .args(["tune", "--sim", &surface("seed-2.5.39-mm1-fifo_batch.toml")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "sim:seed-2.5.39-mm1-fifo_batch is in use by `sweetspot tune` (pid {}",
            std::process::id()
        )),
        "{err}"
    );
}

/// A database holding one tune of a dead process, still marked running.
fn db_with_killed_tune(db: &std::path::Path) {
    let store = sweetspot::store::Store::open(db).unwrap();
    let t = sweetspot::bench::TargetInfo {
        label: "sim:x".into(),
        identity: "sim:x".into(),
        kernel: "sim".into(),
    };
    let id = store.insert_tune(&t, None, "quick").unwrap();
    // A pid that cannot be alive (above pid_max).
    store
        .conn()
        .execute("UPDATE tunes SET pid = 99999999 WHERE id = ?1", [id])
        .unwrap();
}

#[test]
fn history_shows_a_killed_tune_as_killed_not_running() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    db_with_killed_tune(&db);
    let out = assert_cmd::Command::cargo_bin("sweetspot")
        .unwrap()
        .arg("--db")
        .arg(&db)
        .args(["history", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let h: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(h["tunes"][0]["status"], "killed", "{h}");
    let out = assert_cmd::Command::cargo_bin("sweetspot")
        .unwrap()
        .arg("--db")
        .arg(&db)
        .arg("history")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(" killed "), "{text}");
    // The hint is a command that works when pasted: it names this database.
    let hint = format!("`sweetspot --db {} restore`", db.display());
    assert!(text.contains(&hint), "{text}");
    // history only reads: the tune is still unfinished in the database.
    let store = sweetspot::store::Store::open(&db).unwrap();
    assert_eq!(store.tunes(None).unwrap()[0].status, "running");
}

#[test]
fn a_killed_tune_is_recovered_by_restore() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    db_with_killed_tune(&db);
    assert_cmd::Command::cargo_bin("sweetspot")
        .unwrap()
        .arg("--db")
        .arg(&db)
        .arg("restore")
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "restored 0 knobs (finished 1 killed tune first)",
        ));
    let store = sweetspot::store::Store::open(&db).unwrap();
    assert_eq!(store.tunes(None).unwrap()[0].status, "recovered");
}

#[test]
fn a_killed_tune_is_recovered_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    db_with_killed_tune(&db);
    tune_json(
        &db,
        &["--sim", &surface("flat-fifo_batch.toml"), "--seed", "1"],
    );
    let store = sweetspot::store::Store::open(&db).unwrap();
    let tunes = store.tunes(None).unwrap();
    assert_eq!(tunes[0].status, "recovered");
    assert_eq!(tunes[1].status, "done");
}

#[test]
fn invalid_policies_name_file_line_and_field() {
    let dir = root().join("tests/invalid_policies");
    let cases = [
        (
            "unknown_load.toml",
            "unknown_load.toml:1: loads[1]: unknown load 'io_lod'",
        ),
        ("unknown_field.toml", "unknown_field.toml:3: runz:"),
        (
            "ratio_without_no_load.toml",
            ":4: objective.minimize: Ratio needs no_load",
        ),
        (
            "bad_alpha.toml",
            "bad_alpha.toml:3: alpha: must be in (0, 0.5]",
        ),
        ("budget_too_small.toml", ":2: budget: 5 trials is too few"),
        (
            "guard_bad_metric.toml",
            ":9: guard[0].metric: unknown metric 'throughput'",
        ),
        ("objective_both.toml", ":3: objective: give exactly one of"),
        (
            "wrong_type.toml",
            "wrong_type.toml:3: runs: invalid type: string \"one\", expected an integer",
        ),
        (
            "misspelled_knob.toml",
            "misspelled_knob.toml:7: knobs.fifo_btach: unknown knob 'fifo_btach' (did you mean \
             'fifo_batch'?)",
        ),
        (
            "no_knob_here.toml",
            "no_knob_here.toml: knobs: none of policy 'no_knob_here's knobs exists on this \
             device: quantum, slice_idle (it offers: fifo_batch)",
        ),
        ("syntax_error.toml", "syntax_error.toml:2: syntax: "),
        // Bounds and values outside the surface's min/max (1–256) are errors, not clamped.
        (
            "bounds_outside_domain.toml",
            "bounds_outside_domain.toml:8: knobs.fifo_batch.min: 0 is outside the safe \
             domain of fifo_batch here, 1–256",
        ),
        (
            "value_outside_domain.toml",
            "value_outside_domain.toml:7: knobs.fifo_batch.values: 5000 is outside the safe \
             domain of fifo_batch here, 1–256",
        ),
    ];
    let tmp = tempfile::tempdir().unwrap();
    for (file, want) in cases {
        let p = dir.join(file);
        let out = assert_cmd::Command::cargo_bin("sweetspot")
            .unwrap()
            .arg("--db")
            .arg(tmp.path().join("s.db"))
            .args(["tune", "--sim", &surface("flat-fifo_batch.toml")])
            .arg("--policy")
            .arg(&p)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{file}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{file}: {err}");
    }
    // Nothing was stored for any of them.
    let store = sweetspot::store::Store::open(&tmp.path().join("s.db")).unwrap();
    assert!(store.tunes(None).unwrap().is_empty());
}

/// A bad surface is refused by `tune --sim` as by `bench --sim` (exit 2, file:line: field:
/// message), before a tune is stored: noise that would make the Times infinite, or
/// 300 digits long, is no "keep the default" sweet spot, and a misspelt knob is no policy
/// error naming `policies/quick.toml`.
#[test]
fn a_bad_surface_is_refused_before_a_tune_is_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let cases = [
        (
            "relative_sigma_too_large",
            "8: noise.relative_sigma: must be in [0, 1), not 1e300",
        ),
        (
            "drift_sigma_too_large",
            "9: noise.drift_sigma: must be in (0, 1], not 1e6",
        ),
        // The surface is blamed, not the policy (its knob missing from the device).
        (
            "misspelt_knob",
            "7: knobs.fifo_btach: unknown knob 'fifo_btach' (did you mean 'fifo_batch'?): not a \
             knob sweetspot knows",
        ),
        (
            "time_s_overflowing",
            "14: point[2].no_load.time_s: must be 0.001–1000000 s",
        ),
        (
            "knob_range_beyond_catalogue",
            "5: knobs.read_ahead_kb.max: 99999999999 is outside read_ahead_kb's safe bounds \
             0–65536",
        ),
    ];
    for (name, want) in cases {
        let file = format!("tests/invalid_surfaces/{name}.toml");
        let out = assert_cmd::Command::cargo_bin("sweetspot")
            .unwrap()
            .arg("--db")
            .arg(&db)
            .args(["tune", "--sim", &file, "--seed", "1", "-vv"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(out.stdout.is_empty(), "{name}: no report");
        let want = format!("sweetspot: error: {file}:{want}");
        assert!(err.contains(&want), "{name}: want '{want}' in {err}");
    }
    let store = sweetspot::store::Store::open(&db).unwrap();
    assert!(store.tunes(None).unwrap().is_empty());
    assert!(store.sweet_spots(None).unwrap().is_empty());
}

/// A reference trial that fails at the default measured nothing to tune against: the tune
/// fails (exit 1) with the trial's own reason, as a user benchmark failing at the default
/// does, and stores no sweet spot (it was exit 0, "keep the default", stored).
#[test]
fn a_failed_reference_trial_fails_the_tune_with_its_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let file = root().join("tests/surfaces/no-work-at-default.toml");
    let out = assert_cmd::Command::cargo_bin("sweetspot")
        .unwrap()
        .arg("--db")
        .arg(&db)
        .args(["tune", "--policy", "throughput", "--seed", "1", "--sim"])
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty(), "no report: {err}");
    assert_eq!(
        err.lines().last().unwrap(),
        "sweetspot: error: the reference trial (fifo_batch=32) failed at the default setting, \
         so there is nothing to tune against: no io_load Loads measured"
    );
    let store = sweetspot::store::Store::open(&db).unwrap();
    let tunes = store.tunes(None).unwrap();
    assert_eq!(tunes.len(), 1);
    assert_eq!(tunes[0].status, "failed");
    assert!(store.sweet_spots(None).unwrap().is_empty());
}

#[test]
fn a_policy_needing_a_metric_the_surface_lacks_is_refused_before_the_first_trial() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let seed = surface("seed-2.5.39-mm1-fifo_batch.toml");
    let guarded = root().join("tests/policies/guarded.toml");
    let cases = [
        (
            "throughput".to_string(),
            "policy 'throughput' (policies/throughput.toml) maximises io_load Loads".to_string(),
        ),
        (
            guarded.display().to_string(),
            format!(
                "policy 'guarded' ({}) has the guard rail io_load loads >= 0.5x default",
                guarded.display()
            ),
        ),
    ];
    for (policy, why) in cases {
        let out = assert_cmd::Command::cargo_bin("sweetspot")
            .unwrap()
            .arg("--db")
            .arg(&db)
            .args(["tune", "--sim", &seed, "--policy", &policy, "--json"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{policy}");
        assert!(out.stdout.is_empty(), "{policy}: no report");
        let err = String::from_utf8_lossy(&out.stderr);
        let want = format!("{seed}: no point gives io_load `loads`; {why}");
        assert!(err.contains(&want), "{policy}: want '{want}' in {err}");
    }
    // No tune, trial or sweet spot was stored.
    let store = sweetspot::store::Store::open(&db).unwrap();
    assert!(store.tunes(None).unwrap().is_empty());
    assert!(store.trials(None).unwrap().is_empty());
}

#[test]
fn apply_is_refused_with_sim_and_scratch_before_anything_is_made() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let seed = surface("seed-2.5.39-mm1-fifo_batch.toml");
    for target in [vec!["--sim", seed.as_str()], vec!["--scratch"]] {
        let out = assert_cmd::Command::cargo_bin("sweetspot")
            .unwrap()
            .arg("--db")
            .arg(&db)
            .arg("tune")
            .args(&target)
            .arg("--apply")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{target:?}");
        assert!(out.stdout.is_empty(), "{target:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "sweetspot: error: --apply needs --device: a --sim/--scratch device does not \
             outlive the tune\n",
            "{target:?}"
        );
    }
    // Refused before the database (or a scratch device) was made.
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

/// The trial log (stderr) of a tune of `surface_file` with `--seed seed --budget budget`.
fn trial_log(surface_file: &str, seed: &str, budget: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = assert_cmd::Command::cargo_bin("sweetspot")
        .unwrap()
        .arg("--db")
        .arg(dir.path().join("s.db"))
        .args(["tune", "--sim", surface(surface_file).as_str()])
        .args(["--seed", seed, "--budget", budget])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_trial_logs_incumbent_includes_the_trial_on_its_line() {
    // 26 runs: the 9-setting grid is screened whole (its screen takes 38.5% of them).
    let log = trial_log("seed-2.5.39-mm1-fifo_batch.toml", "7", "13");
    // During the screen (one loaded run of each setting), the leader is the setting with the
    // shortest loaded Time so far; the line where it takes the lead names it ("new best"), not
    // one trial later, and a line where the lead does not change names no leader.
    let mut best: Option<f64> = None;
    let mut checked = 0;
    let lines: Vec<&str> = log.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        if !l.contains("screen: each setting once") {
            continue;
        }
        // A line that wraps goes on, indented, on the next.
        let whole = match lines.get(i + 1) {
            Some(next) if next.starts_with("          ") => format!("{l} {}", next.trim()),
            _ => l.to_string(),
        };
        let shown = whole
            .split("loaded Time ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .unwrap();
        let t: f64 = shown.parse().unwrap();
        if best.is_none_or(|b| t < b) {
            best = Some(t);
            // It is this line's own setting: its figure is on the line already.
            assert!(whole.ends_with("; new best"), "{whole}");
        } else {
            assert!(!whole.contains("new best"), "{whole}");
        }
        assert!(whole.chars().count() <= 2 * 100, "{whole}");
        checked += 1;
    }
    assert_eq!(checked, 8, "{log}");
}

#[test]
fn real_run_options_are_refused_with_sim_before_anything_is_made() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let seed = surface("seed-2.5.39-mm1-fifo_batch.toml");
    let cases: [&[&str]; 8] = [
        &["--emulate", "hdd-5400"],
        &["--dir", "/tmp"],
        &["--other-dir", "/tmp"],
        &["--job-scale", "0.1"],
        &["--job", "true"],
        &["--drop-caches"],
        &["--lead", "9"],
        &["--load-mib", "64"],
    ];
    for cmd in ["bench", "tune"] {
        for extra in cases {
            let out = assert_cmd::Command::cargo_bin("sweetspot")
                .unwrap()
                .arg("--db")
                .arg(&db)
                .args([cmd, "--sim", seed.as_str()])
                .args(extra)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2), "{cmd} {extra:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.starts_with("error: the argument '--sim <FILE>' cannot be used with '")
                    && err.contains(extra[0]),
                "{cmd} {extra:?}: {err}"
            );
        }
    }
    // --emulate slows a scratch device only, --dir names a place on --device only.
    let clashes: [(&[&str], &str); 2] = [
        (
            &["--device", "loop0", "--emulate", "emmc"],
            "--device <DEVICE>",
        ),
        (&["--scratch", "--dir", "/tmp"], "--scratch"),
    ];
    for (args, clash) in clashes {
        let out = assert_cmd::Command::cargo_bin("sweetspot")
            .unwrap()
            .arg("--db")
            .arg(&db)
            .arg("bench")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("'{clash}' cannot be used with")),
            "{err}"
        );
    }
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn unknown_policy_name_lists_the_built_in_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let out = assert_cmd::Command::cargo_bin("sweetspot")
        .unwrap()
        .arg("--db")
        .arg(tmp.path().join("s.db"))
        .args([
            "tune",
            "--sim",
            &surface("flat-fifo_batch.toml"),
            "--policy",
            "fastest",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown policy 'fastest'")
            && err.contains("desktop, quick, slowdisk, throughput")
    );
}

#[test]
fn the_readme_example_counts_settings_as_evaluations_and_trials_apart() {
    // README: `tune --sim data/surfaces/seed-2.5.39-mm1-fifo_batch.toml --seed 7` reports
    // "14 trials of 6 settings, 15 load runs" and fifo_batch 32 → 8, significant. DESIGN.md's
    // JSON contract: `evaluations` is the settings measured; `trials` counts repeats too.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let seed = surface("seed-2.5.39-mm1-fifo_batch.toml");
    let v = tune_json(&db, &["--sim", &seed, "--seed", "7"]);
    assert_eq!(v["evaluations"], 6, "{v}");
    assert_eq!(v["trials"], 14, "{v}");
    assert_eq!(v["runs"], 15, "{v}");
    assert_eq!(v["best"]["fifo_batch"], 8, "{v}");
    assert_eq!(v["significant"], true, "{v}");
    assert!(v.get("settings").is_none(), "{v}");
}

/// When the search's answer is picked at the check's start (here after the no_load test:
/// fifo_batch 1 over 8, by each one's Ratio with its own no_load), the check's first line
/// says so, not "new best" on the default's trial.
#[test]
fn the_check_names_the_searchs_answer_when_the_pick_changes_the_leader() {
    let log = trial_log("noload-depends-fifo_batch.toml", "10", "12");
    // Trial lines with their wrapped continuations joined.
    let mut trials: Vec<String> = Vec::new();
    for l in log.lines() {
        match trials.last_mut() {
            Some(t) if l.starts_with("          ") => {
                t.push(' ');
                t.push_str(l.trim());
            }
            _ if l.starts_with("trial ") => trials.push(l.to_string()),
            _ => {}
        }
    }
    let check: Vec<&String> = trials
        .iter()
        .filter(|t| t.contains("final check"))
        .collect();
    assert!(!check.is_empty(), "{log}");
    assert!(
        check[0].contains("; the search's answer is fifo_batch=1 (loaded "),
        "{}",
        check[0]
    );
    assert!(check.iter().all(|t| !t.contains("new best")), "{log}");
}
