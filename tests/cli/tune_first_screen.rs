//! A tune report's first screen answers, in one labelled line each, what was kept, by how
//! much, how sure, how long it took and how to undo it; the statistics follow under
//! "details"; prose wraps at 100 columns (issue #32, item 3).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;

fn surface(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(rel)
        .display()
        .to_string()
}

/// The text report of `tune --sim SURFACE --seed 7` on a fresh database.
fn report(rel: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let out = assert_cmd::Command::cargo_bin("sweetspot")
        .unwrap()
        .arg("--db")
        .arg(tmp.path().join("s.db"))
        .args(["tune", "--sim", &surface(rel), "--seed", "7"])
        .output()
        .unwrap();
    String::from_utf8(common::ok_stdout(out)).unwrap()
}

/// The labels of the lines before the first blank line (continuations have none).
fn labels(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.strip_prefix("  ").filter(|l| !l.starts_with(' ')))
        .map(|l| l.split("  ").next().unwrap().trim().to_string())
        .collect()
}

#[test]
fn a_sweet_spot_found_reads_kept_by_how_sure_took_undo_first() {
    let t = report("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml");
    assert_eq!(
        labels(&t),
        ["kept", "by", "how sure", "took", "undo"],
        "{t}"
    );
    assert!(t.contains("\n  kept       fifo_batch 32 → 8\n"), "{t}");
    assert!(
        t.contains("\n  by         io_load Ratio 3.69 → 1.58: 2.33× better"),
        "{t}"
    );
    assert!(
        t.contains("\n  how sure   sure: p = 1.1e-6 (the policy asks < 0.05)"),
        "{t}"
    );
    assert!(
        t.contains(" s: 14 trials of 6 settings, 15 load runs\n"),
        "{t}"
    );
    assert!(t.contains("\n  undo       nothing to undo: the device is back as it was"));
    // The table's second column is the sweet spot, and the statistics come after the screen.
    assert!(t.contains("sweet spot [fifo_batch=8]"), "{t}");
    let details = t.find("\ndetails\n").unwrap();
    assert!(t.find("verdict: significant").unwrap() > details, "{t}");
    assert!(t.lines().all(|l| l.chars().count() <= 100), "{t}");
}

#[test]
fn a_kept_default_says_so_and_names_the_best_other_setting_not_best_found() {
    let t = report("data/surfaces/flat-fifo_batch.toml");
    assert_eq!(
        labels(&t),
        ["kept", "by", "how sure", "took", "undo"],
        "{t}"
    );
    assert!(
        t.contains("\n  kept       the default [fifo_batch=32]: no other setting was shown"),
        "{t}"
    );
    assert!(t.contains("\n  by         nothing: "), "{t}");
    assert!(t.contains("\n  how sure   not sure enough: p = "), "{t}");
    assert!(!t.contains("best found"), "{t}");
    assert!(!t.contains("sweet spot ["), "{t}");
    assert!(t.lines().all(|l| l.chars().count() <= 100), "{t}");
}
