//! The fuzz corpora on stable: every file of `fuzz/corpus/<target>/` (the minimised corpus of
//! the libFuzzer campaign) and `fuzz/regressions/<target>/` (inputs that once crashed a parser)
//! goes through the same checks as the fuzz targets (`fuzz/src/checks.rs`: no panic, a
//! refusal is exit 2 naming the file and a real line, and each parser's invariant), so every
//! `cargo test` checks them without a nightly toolchain. Non-UTF-8 files are skipped, as the
//! targets skip them.

#[path = "../../fuzz/src/checks.rs"]
mod checks;

use std::path::{Path, PathBuf};

/// The files of `fuzz/<kind>/<target>/`, sorted; none when the directory is absent.
fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join(kind)
        .join(target);
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = rd
        .map(|e| e.expect("listing a corpus").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Runs every corpus and regression input of `target` through `check`; fails naming each input
/// that panicked. Asserts the corpus is there (a lost corpus would pass silently otherwise).
fn replay(target: &str, check: fn(&str)) {
    let corpus = inputs("corpus", target);
    assert!(
        !corpus.is_empty(),
        "fuzz/corpus/{target}/ is empty or missing"
    );
    let mut failed = Vec::new();
    let mut run = 0;
    for f in corpus.iter().chain(&inputs("regressions", target)) {
        let bytes = std::fs::read(f).expect("reading a corpus file");
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        run += 1;
        if std::panic::catch_unwind(|| check(text)).is_err() {
            failed.push(f.display().to_string());
        }
    }
    assert!(failed.is_empty(), "{target}: failed on {failed:#?}");
    assert!(run > 0, "{target}: no UTF-8 input replayed");
}

#[test]
fn policy_corpus_replays() {
    replay("policy", checks::policy);
}

#[test]
fn surface_corpus_replays() {
    replay("surface", checks::surface);
}

#[test]
fn profile_corpus_replays() {
    replay("profile", checks::profile);
}

#[test]
fn daemon_config_corpus_replays() {
    replay("daemon_config", checks::daemon_config);
}

#[test]
fn emulate_spec_corpus_replays() {
    replay("emulate_spec", checks::emulate_spec);
}
