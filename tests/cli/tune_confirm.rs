//! `sweetspot tune --confirm`: a known sweet spot checked before any search, from the
//! store (this device's, or a named identity's), and the refusals.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn surface(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data/surfaces")
        .join(name)
        .display()
        .to_string()
}

fn tune(db: &Path, args: &[&str]) -> std::process::Output {
    let mut a = vec!["tune"];
    a.extend_from_slice(args);
    common::sweetspot(db, &a)
}

/// `history`'s text, its words joined by single spaces (a long line is wrapped).
fn history_words(db: &Path) -> String {
    let out = common::ok_stdout(common::sweetspot(db, &["history"]));
    String::from_utf8(out)
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn json(out: std::process::Output) -> Value {
    serde_json::from_slice(&common::ok_stdout(out)).unwrap()
}

#[test]
fn a_stored_sweet_spot_that_holds_ends_the_next_tune_after_its_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let seed = surface("seed-2.5.39-mm1-fifo_batch.toml");
    let first = json(tune(&db, &["--sim", &seed, "--seed", "7", "--json"]));
    assert_eq!(first["significant"], true, "{first}");
    let stored = first["best"]["fifo_batch"].clone();
    let out = tune(&db, &["--sim", &seed, "--seed", "8", "--confirm", "--json"]);
    let (_, err) = common::code_and_stderr(out.clone());
    assert!(
        err.contains(&format!("confirming fifo_batch={stored}")),
        "{err}"
    );
    let r = json(out);
    let c = &r["confirm"];
    assert_eq!(
        (&c["held"], &c["pairs"], &c["runs"]),
        (&true.into(), &3.into(), &12.into())
    );
    assert_eq!(
        (&r["best"]["fifo_batch"], &r["significant"]),
        (&stored, &true.into())
    );
    assert_eq!(
        (&r["trials"], &r["runs"], &r["alpha"]),
        (&6.into(), &12.into(), &0.01.into())
    );
    assert!(
        c["source"]
            .as_str()
            .unwrap()
            .starts_with("stored sweet spot #1 of sim:seed-2.5.39"),
        "{c}"
    );
    // The same, named by its identity; and the text report says what held.
    let out = tune(
        &db,
        &[
            "--sim",
            &seed,
            "--seed",
            "9",
            "--confirm",
            "sim:seed-2.5.39-mm1-fifo_batch",
        ],
    );
    let text = String::from_utf8(common::ok_stdout(out)).unwrap();
    assert!(text.contains("  confirm: fifo_batch="), "{text}");
    let h = history_words(&db);
    assert!(
        h.contains("; confirmed from stored sweet spot #1 of sim:seed-2.5.39-mm1-fifo_batch")
            && h.contains("(kernel sim, policy quick) (3 pairs) #3"),
        "{h}"
    );
    assert!(
        text.contains("held:") && text.contains("(12 load runs)"),
        "{text}"
    );
    assert!(
        text.contains("(the confirm asks < 0.01, its share of alpha)"),
        "{text}"
    );
}

#[test]
fn confirm_without_a_known_sweet_spot_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let seed = surface("seed-2.5.39-mm1-fifo_batch.toml");
    let (code, err) = common::code_and_stderr(tune(&db, &["--sim", &seed, "--confirm"]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("no significant sweet spot for policy 'quick' is stored for sim:seed"),
        "{err}"
    );
    let (code, err) =
        common::code_and_stderr(tune(&db, &["--sim", &seed, "--confirm", "wwid:naa.1"]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--confirm wwid:naa.1: neither a profile file nor a device identity"),
        "{err}"
    );
    // A file that is not a profile names its line and field.
    let (code, err) = common::code_and_stderr(tune(&db, &["--sim", &seed, "--confirm", &seed]));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("seed-2.5.39-mm1-fifo_batch.toml"), "{err}");
    // Nothing was tuned or stored.
    let h = json(common::sweetspot(&db, &["history", "--json"]));
    assert_eq!(h["tunes"], serde_json::json!([]), "{h}");
}

#[test]
fn a_known_spot_that_does_not_hold_hands_over_to_the_search_at_the_rest_of_alpha() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let basins = surface("two-basins-fifo_batch.toml");
    let first = json(tune(&db, &["--sim", &basins, "--seed", "7", "--json"]));
    assert_eq!(first["significant"], true, "{first}");
    // The same fifo_batch on a surface where nothing beats the default.
    let flat = surface("flat-fifo_batch.toml");
    let r = json(tune(
        &db,
        &[
            "--sim",
            &flat,
            "--seed",
            "8",
            "--confirm",
            "sim:two-basins-fifo_batch",
            "--json",
        ],
    ));
    let c = &r["confirm"];
    assert_eq!(
        (&c["held"], &c["alpha"]),
        (&false.into(), &0.01.into()),
        "{c}"
    );
    // The search ran, with the policy's budget on top of the confirm's 12 runs, its check
    // at the rest of alpha.
    assert_eq!(r["alpha"], 0.04, "{r}");
    assert!(r["runs"].as_u64().unwrap() > 12, "{r}");
    assert_eq!(r["significant"], false, "{r}");
    // `history` says so beside the verdict.
    let h = history_words(&db);
    assert!(
        h.contains("of sim:two-basins-fifo_batch (kernel")
            && h.contains(&format!(
                ") did not hold (p {:.3}, at level 0.01): searched",
                c["p_value"].as_f64().unwrap()
            )),
        "{h}"
    );
}

#[test]
fn a_known_spot_this_policy_cannot_set_is_refused_before_it_is_announced() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let seed = surface("seed-2.5.39-mm1-fifo_batch.toml");
    let first = json(tune(&db, &["--sim", &seed, "--seed", "7", "--json"]));
    assert_eq!(first["significant"], true, "{first}");
    // A policy of the same name (its file's stem) that tunes wbt_lat_usec alone, on a
    // surface that has fifo_batch too.
    let policy = dir.path().join("quick.toml");
    std::fs::write(
        &policy,
        "loads = [\"no_load\", \"io_load\"]\nbudget = 12\n[objective]\nminimize = \"ratio\"\n\
         loads = [\"io_load\"]\n[knobs.wbt_lat_usec]\n",
    )
    .unwrap();
    let three = surface("one-of-three-knobs.toml");
    let (code, err) = common::code_and_stderr(tune(
        &db,
        &[
            "--sim",
            &three,
            "--policy",
            policy.to_str().unwrap(),
            "--confirm",
            "sim:seed-2.5.39-mm1-fifo_batch",
        ],
    ));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--confirm: the known sweet spot (stored sweet spot #1 of sim:seed-2.5.39")
            && err.contains("sets fifo_batch, which this policy does not tune on this device"),
        "{err}"
    );
    assert!(
        !err.contains("confirming"),
        "announced, then refused: {err}"
    );
}
