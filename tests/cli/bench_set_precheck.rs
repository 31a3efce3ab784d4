//! `bench --scratch --set` with a misspelt knob or a value out of every bound is refused with
//! exit 2 before anything is built: no loop device, no scratch directory, no seed line.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

/// Loop devices whose backing file is under `dir`.
fn loops_under(dir: &Path) -> usize {
    std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .filter(|e| {
            let b = std::fs::read_to_string(e.path().join("loop/backing_file")).unwrap_or_default();
            Path::new(b.trim()).starts_with(dir)
        })
        .count()
}

/// Runs `bench --scratch --set SET` and checks that it is refused with exit 2 and `message`
/// before anything is built; gives its stderr.
fn refused(set: &str, message: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let out = assert_cmd::Command::cargo_bin("sweetspot")
        .unwrap()
        .env("TMPDIR", tmp.path())
        .arg("--db")
        .arg(tmp.path().join("s.db"))
        .args(["bench", "--scratch", "--set", set])
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(message), "{err}");
    assert!(!err.contains("seed"), "{err}");
    assert_eq!(loops_under(tmp.path()), 0);
    let made: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(made.is_empty(), "made in TMPDIR: {made:?}");
    err.into_owned()
}

#[test]
fn a_misspelt_set_knob_is_refused_before_the_scratch_device_is_built() {
    let err = refused(
        "fifo_btach=8",
        "--set: unknown knob 'fifo_btach' (did you mean 'fifo_batch'?)",
    );
    assert_eq!(
        err,
        "sweetspot: error: --set: unknown knob 'fifo_btach' (did you mean 'fifo_batch'?)\n"
    );
    // Two edits away (a transposition and a dropped letter), and a host-wide knob.
    refused(
        "read_ahaed_k=256",
        "--set: unknown knob 'read_ahaed_k' (did you mean 'read_ahead_kb'?)",
    );
    refused(
        "dirty_rato=10",
        "--set: unknown knob 'dirty_rato' (did you mean 'dirty_ratio'?)",
    );
    // Nothing close: no hint.
    let err = refused("colour=red", "--set: unknown knob 'colour'");
    assert_eq!(err, "sweetspot: error: --set: unknown knob 'colour'\n");
}

#[test]
fn a_set_value_out_of_every_bound_is_refused_before_the_scratch_device_is_built() {
    refused(
        "fifo_batch=0",
        "--set: fifo_batch: value '0' is not accepted (domain 1–1024)",
    );
    refused("read_ahead_kb=lots", "--set: read_ahead_kb: value 'lots'");
    refused("fifo_batch", "--set 'fifo_batch': expected KNOB=VALUE");
}
