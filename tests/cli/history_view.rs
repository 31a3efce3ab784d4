//! `history` shows the latest tunes with their verdicts, not every trial (issue #32 item 5: 99
//! lines after two tunes): `--limit N`, `--all`, `--tune ID` for one tune's trials, columns
//! that a long policy name does not shift, and `--json` as complete as before. The database
//! is made by real `--sim` tunes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use serde_json::Value;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A `--sim` tune's JSON report.
fn tune(db: &Path, args: &[&str]) -> Value {
    let surface = root().join("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml");
    let mut all = vec!["tune", "--sim", surface.to_str().unwrap(), "--json"];
    all.extend(args);
    serde_json::from_slice(&common::ok_stdout(common::sweetspot(db, &all))).unwrap()
}

fn history(db: &Path, args: &[&str]) -> String {
    let mut all = vec!["history"];
    all.extend(args);
    String::from_utf8(common::ok_stdout(common::sweetspot(db, &all))).unwrap()
}

/// The lines of tune #ID's entry: its line and its verdict line.
fn entry(text: &str, id: i64) -> (String, String) {
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with(&format!("  #{id:<4} ")));
    let head = lines
        .next()
        .unwrap_or_else(|| panic!("no tune #{id}:\n{text}"));
    (
        head.to_string(),
        lines.next().unwrap_or_default().to_string(),
    )
}

/// What `history` says of a tune whose report is `rep`.
fn verdict_of(rep: &Value) -> String {
    if rep["significant"].as_bool().unwrap() {
        let fb = &rep["best"]["fifo_batch"];
        format!("→ fifo_batch={fb} (")
    } else {
        "→ keep the default fifo_batch=16 (no significant improvement)".to_string()
    }
}

#[test]
fn history_shows_the_latest_five_tunes_with_their_verdicts_and_one_tunes_trials_on_demand() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let reps: Vec<Value> = (1..=7)
        .map(|seed| tune(&db, &["--seed", &seed.to_string()]))
        .collect();
    let ids: Vec<i64> = reps
        .iter()
        .map(|r| r["tune_id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, (1..=7).collect::<Vec<_>>());

    let text = history(&db, &[]);
    assert!(
        text.contains("\ntunes: the latest 5 of 7 (--limit N or --all"),
        "{text}"
    );
    assert!(
        !text.contains("trials:"),
        "no trial is listed by default:\n{text}"
    );
    for id in 1..=2 {
        assert!(!text.contains(&format!("  #{id} ")), "{text}");
    }
    for (id, rep) in ids.iter().zip(&reps).skip(2) {
        let (head, verdict) = entry(&text, *id);
        assert!(head.contains(" trials  done "), "{head}");
        assert!(head.contains("  quick  "), "{head}");
        assert!(head.ends_with("sim:seed-2.5.39-mm1-fifo_batch"), "{head}");
        assert!(
            verdict.trim_start().starts_with(&verdict_of(rep)),
            "#{id}: {verdict} for {rep}"
        );
    }
    // Sweet spots (2 lines) + header + 5 tunes of 2 lines: a screen, not 99 lines.
    assert!(text.lines().count() <= 16, "{text}");

    // The trial count on the tune's line is its stored finished trials.
    let json: Value = serde_json::from_str(&history(&db, &["--json"])).unwrap();
    let of = |id: i64| {
        json["trials"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["tune_id"] == id)
            .count()
    };
    let (head, _) = entry(&text, 7);
    assert!(head.contains(&format!(" {} trials ", of(7))), "{head}");

    let two = history(&db, &["--limit", "2"]);
    assert!(two.contains("tunes: the latest 2 of 7"), "{two}");
    assert_eq!(two.matches("\n  #").count(), 2, "{two}");
    let all = history(&db, &["--all"]);
    assert!(all.contains("tunes: all 7 "), "{all}");
    assert_eq!(all.matches("\n  #").count(), 7, "{all}");

    // --tune 3: its line, its verdict and each of its trials with what it measured.
    let one = history(&db, &["--tune", "3"]);
    let (_, verdict) = entry(&one, 3);
    assert!(
        verdict.trim_start().starts_with(&verdict_of(&reps[2])),
        "{one}"
    );
    assert!(
        !one.contains("#4 ") && !one.contains("sweet spots:"),
        "{one}"
    );
    let trials: Vec<&str> = one
        .lines()
        .skip_while(|l| *l != "trials:")
        .skip(1)
        .filter(|l| l.starts_with("  trial "))
        .collect();
    assert_eq!(trials.len(), of(3), "{one}");
    // Numbered in the order they ran, as the tune's log numbers them.
    assert!(trials[0].starts_with("  trial 1 "), "{one}");
    assert!(trials.iter().all(|l| l.contains("fifo_batch=")), "{one}");
    assert!(one.contains("\n             io_load "), "{one}");

    // --json is whole: every tune and trial, whatever the limit; with --tune, that tune's.
    assert_eq!(json["tunes"].as_array().unwrap().len(), 7, "{json}");
    let n: usize = (1..=7).map(of).sum();
    assert_eq!(json["trials"].as_array().unwrap().len(), n);
    for key in ["tunes", "trials", "sweet_spots", "killed_bench_knobs"] {
        assert!(json.get(key).is_some(), "{key}");
    }
    let t3: Value = serde_json::from_str(&history(&db, &["--tune", "3", "--json"])).unwrap();
    assert_eq!(t3["tunes"].as_array().unwrap().len(), 1);
    assert_eq!(t3["tunes"][0]["id"], 3);
    assert_eq!(t3["trials"].as_array().unwrap().len(), of(3));
}

#[test]
fn a_long_policy_name_is_cut_and_the_columns_stay_put() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let long = dir.path().join("a-very-long-policy-name-indeed.toml");
    std::fs::copy(root().join("policies/quick.toml"), &long).unwrap();
    tune(&db, &["--seed", "1"]);
    tune(&db, &["--seed", "2", "--policy", long.to_str().unwrap()]);
    let text = history(&db, &[]);
    let (short, _) = entry(&text, 1);
    let (cut, _) = entry(&text, 2);
    assert!(cut.contains("  a-very-long…  "), "{text}");
    let at = |l: &str| l.split("sim:seed").next().unwrap().chars().count();
    assert_eq!(at(&short), at(&cut), "{text}");
    // The whole name with --tune, and in --json.
    let one = history(&db, &["--tune", "2"]);
    assert!(
        one.contains("\n        policy a-very-long-policy-name-indeed\n"),
        "{one}"
    );
}

/// `bench` stores trials of no tune: counted under the tunes, listed by --json.
#[test]
fn benchs_trials_are_counted_not_listed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let surface = root().join("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml");
    let s = surface.to_str().unwrap();
    common::ok_stdout(common::sweetspot(
        &db,
        &["bench", "--sim", s, "--runs", "1", "--seed", "1"],
    ));
    tune(&db, &["--seed", "1"]);
    let text = history(&db, &[]);
    assert!(
        text.ends_with("\n(and 1 trial of `sweetspot bench`, of no tune: --json lists them)\n"),
        "{text}"
    );
    let json: Value = serde_json::from_str(&history(&db, &["--json"])).unwrap();
    let benched = json["trials"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["tune_id"].is_null())
        .count();
    assert_eq!(benched, 1, "{json}");
}

#[test]
fn an_unknown_tune_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    tune(&db, &["--seed", "1"]);
    let out = common::sweetspot(&db, &["history", "--tune", "9"]);
    let (code, err) = common::code_and_stderr(out);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("history --tune 9: no such tune in ") && err.contains("--all"),
        "{err}"
    );
    let out = common::sweetspot(&db, &["history", "--limit", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let out = common::sweetspot(&db, &["history", "--all", "--limit", "3"]);
    assert_eq!(out.status.code(), Some(2));
}
