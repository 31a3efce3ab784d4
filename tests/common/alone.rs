//! Tests that need a process of their own: they install sweetspot's signal handlers in the test
//! process and raise SIGINT at it (`sweetspot::signals` counts signals process-wide). In a test
//! binary shared with other tests, that would catch the signals of the whole binary and let
//! one test's Ctrl-C stop another's work. Tests that count the process's children or process
//! groups (`shell_leader`) use it too: other tests of the binary make both.

/// The variable that tells a child of [`in_own_process`] which test it is to run.
const ALONE: &str = "SWEETSPOT_TEST_ALONE";

/// Returns true in a process that runs only the calling test: there the test goes on. Called
/// from the test binary's own harness, it runs the test binary again with only this test
/// (`--exact`, one thread), checks that the test passed there, and returns false (the caller
/// returns at once).
///
/// # Panics
/// When the test failed in its own process (its output is in the message).
pub fn in_own_process() -> bool {
    let test = super::root::test_name();
    if std::env::var_os(ALONE).is_some_and(|v| *v == *test) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = std::process::Command::new(exe)
        .args([test.as_str(), "--exact", "--test-threads=1", "--nocapture"])
        .env(ALONE, &test)
        .output()
        .expect("run the test binary again");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("1 passed"),
        "{test} in its own process: {:?}\n{text}",
        out.status
    );
    false
}
