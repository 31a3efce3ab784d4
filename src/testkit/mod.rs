//! Test helpers (compiled only for unit tests): fake sysfs/procfs trees under a temp dir, and
//! [`kernel::FakeKernel`], a small simulation of the kernel's knob behaviour behind
//! [`crate::knob::io::KnobIo`].

pub mod kernel;
pub mod profile;
pub mod tree;

/// True as root. Otherwise prints `skipped (needs root: WHAT): TEST` to stderr (past the test
/// harness's capture) and returns false: the test returns at once. `tests/common/root.rs` does
/// the same for the integration tests; CONTRIBUTING.md has the rules.
///
/// # Panics
/// When not root and `SWEETSPOT_TESTS_REQUIRE_ROOT` is `1` (CI runs every test as root).
pub(crate) fn needs_root(what: &str) -> bool {
    use std::io::Write;
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    let test = std::thread::current()
        .name()
        .unwrap_or("(unnamed test)")
        .to_string();
    if std::env::var_os("SWEETSPOT_TESTS_REQUIRE_ROOT").is_some_and(|v| v == "1") {
        panic!("{test} needs root ({what}) and SWEETSPOT_TESTS_REQUIRE_ROOT=1");
    }
    let _ = writeln!(std::io::stderr(), "skipped (needs root: {what}): {test}");
    false
}
