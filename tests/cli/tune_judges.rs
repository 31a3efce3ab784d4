//! The second judges as a user sees them (issue #36): `tune` on simulated devices with start-up
//! figures, its first screen's `judge` lines, a refused sweet spot's trade in plain words, the
//! JSON's `judges`, and the judge trials kept out of `history`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use std::path::{Path, PathBuf};

fn path(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(rel)
        .display()
        .to_string()
}

/// `sweetspot --db DB ARGS`: (stdout, stderr), asserting exit 0.
fn run(db: &Path, args: &[&str]) -> (String, String) {
    let out = assert_cmd::Command::cargo_bin("sweetspot")
        .unwrap()
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap();
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{args:?}: {o}\n{e}");
    (o, e)
}

fn flat(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn a_refused_sweet_spot_keeps_the_default_and_says_what_it_would_have_traded() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let hurts = path("data/surfaces/startup-hurts-fifo_batch.toml");
    let pol = path("tests/policies/judged-two.toml");
    let (text, err) = run(
        &db,
        &["tune", "--sim", &hurts, "--policy", &pol, "--seed", "3"],
    );
    // The prose wraps at 100 columns: compare with every run of white space as one space.
    let text = flat(&text);
    // The first screen: the default kept, the trade, the judge's verdict.
    assert!(
        text.contains(
            "kept the default [fifo_batch=32]: the best setting found, fifo_batch=8, failed a judge"
        ),
        "{text}"
    );
    assert!(
        text.contains("nothing: it would have traded io_load Ratio"),
        "{text}"
    );
    assert!(
        text.contains("for start-up under light_io_load 1.2"),
        "{text}"
    );
    assert!(
        text.contains("judge start-up under light_io_load: hurt (1.2"),
        "{text}"
    );
    // Every judge run is a log line: 6 pairs.
    assert_eq!(
        err.matches("judge  start-up under light_io_load").count(),
        12,
        "{err}"
    );
    // The JSON: not significant, the judge's figures.
    let (json, _) = run(
        &db,
        &[
            "tune", "--sim", &hurts, "--policy", &pol, "--seed", "3", "--json",
        ],
    );
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["significant"], false, "{v}");
    assert_eq!(v["best"]["fifo_batch"], 32, "{v}");
    let j = &v["judges"][0];
    assert_eq!(
        (j["judge"].as_str(), j["load"].as_str()),
        (Some("startup"), Some("light_io_load"))
    );
    assert_eq!(
        (
            j["effect"].as_str(),
            j["holds"].as_bool(),
            j["pairs"].as_u64()
        ),
        (Some("hurt"), Some(false), Some(6))
    );
    let r = j["ratio"][0].as_f64().unwrap();
    assert!((r - 2.16 / 1.66).abs() < 0.06, "{r}");
    // The runs count the judge's 12.
    let trial_runs: u64 = v["loads"]
        .as_object()
        .unwrap()
        .values()
        .map(|x| x[0]["trials"].as_u64().unwrap() + x[1]["trials"].as_u64().unwrap())
        .sum();
    assert!(v["runs"].as_u64().unwrap() >= 12 + trial_runs / 2, "{v}");
    // history shows the reference job's trials only: none of the judge's light_io_load runs.
    let (hist, _) = run(&db, &["history", "--json"]);
    let h: Value = serde_json::from_str(&hist).unwrap();
    let trials = h["trials"].as_array().unwrap();
    assert!(!trials.is_empty());
    assert!(
        trials.iter().all(|t| t["figures"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["load"] == "no_load" || f["load"] == "io_load")),
        "{hist}"
    );
}

#[test]
fn a_sweet_spot_that_holds_shows_its_judge_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let holds = path("data/surfaces/startup-holds-fifo_batch.toml");
    let (text, _) = run(
        &db,
        &["tune", "--sim", &holds, "--seed", "3", "--budget", "12"],
    );
    let text = flat(&text);
    assert!(text.contains("kept fifo_batch 32 → 8"), "{text}");
    assert!(
        text.contains("judge start-up under light_io_load: changed nothing (0.9"),
        "{text}"
    );
    // No "judges did not run" note on a surface that has start-up figures.
    assert!(!text.contains("did not run"), "{text}");
}
