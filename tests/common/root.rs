//! Tests that need root (loop devices, mounts, FUSE, `chown`, the real `/proc/sys`).
//!
//! Each such test starts with [`needs_root`]. Run by another user it prints one line to stderr,
//! `skipped (needs root: WHAT): TEST`, and returns: `cargo test` passes for a contributor
//! without root, and says at the end how many tests it skipped. CI runs as root with
//! `SWEETSPOT_TESTS_REQUIRE_ROOT=1` (`.ci/run`), which turns a skip into a failure.
//!
//! The lines go to the process's stderr directly, not through `eprintln!`, which the test
//! harness captures (and shows only for a failing test).
//!
//! As root, [`needs_root`] also returns a [`Gate`]: the root tests of one former test file
//! (one module of `tests/root/`) run in parallel with each other, as when each file was a test
//! binary of its own, but not with another module's. They share the machine's loop devices,
//! `/run/sweetspot/locks`, the real `/proc/sys` and the disks' bandwidth, and some measure
//! time (an emulated device's latency within 20 %). Each runs in a process of its own, as
//! [`needs_root`] says: they spawn process groups with parent-death signals, make the test
//! process a child subreaper, and sweep leftovers by process, none of which a test of another
//! file should share (in one process, a job and a `restore` of two tests died of SIGKILL).

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, Once};

/// Set to `1` (CI): a root test run by another user fails instead of skipping.
pub const REQUIRE_ROOT: &str = "SWEETSPOT_TESTS_REQUIRE_ROOT";

/// Tests skipped in this process.
static SKIPPED: AtomicUsize = AtomicUsize::new(0);
static SUMMARY: Once = Once::new();

/// The module (former test file) whose root tests run now, and how many of them.
static GATE: Mutex<(Option<String>, usize)> = Mutex::new((None, 0));
static GATE_FREE: Condvar = Condvar::new();

/// The running test's name (`loop_knobs::set_then_restore`): the test harness names each
/// test's thread after it.
pub fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("(unnamed test)")
        .to_string()
}

/// Returns `None` after printing `skipped (needs root: WHAT): TEST` to stderr when this process
/// is not root (the caller returns at once). As root, waits for the [`Gate`] of the test's
/// module, then runs the test again in a process of its own ([`super::alone`]) and returns
/// `None` once it passed there (the caller returns at once; a failure there panics here);
/// in that process it returns the gate and the test goes on. `what` says what the test
/// needs root for (`loop devices`).
///
/// # Panics
/// When not root and [`REQUIRE_ROOT`] is `1`.
#[must_use = "returns None when the test must return (skipped), and holds the gate"]
pub fn needs_root(what: &str) -> Option<Gate> {
    let test = test_name();
    if nix::unistd::geteuid().is_root() {
        let gate = Gate::enter(&test);
        // The test itself runs in a process of its own, holding its module's gate here.
        return super::alone::in_own_process().then_some(gate);
    }
    if std::env::var_os(REQUIRE_ROOT).is_some_and(|v| v == "1") {
        panic!("{test} needs root ({what}) and {REQUIRE_ROOT}=1: run the tests as root");
    }
    SKIPPED.fetch_add(1, Ordering::SeqCst);
    SUMMARY.call_once(|| {
        // SAFETY: `summary` is an `extern "C" fn()` that only reads an atomic and write(2)s a
        // buffer; registering it has no other effect.
        unsafe {
            libc::atexit(summary);
        }
    });
    let _ = writeln!(std::io::stderr(), "skipped (needs root: {what}): {test}");
    None
}

/// At exit, after the harness's `test result:` line: how many tests were skipped.
extern "C" fn summary() {
    let n = SKIPPED.load(Ordering::SeqCst);
    let _ = writeln!(
        std::io::stderr(),
        "{n} test(s) skipped: they need root (the `skipped (needs root: ...)` lines above); \
         CONTRIBUTING.md says how to run them"
    );
}

/// Held by a root test while it runs: no root test of another module runs meanwhile.
pub struct Gate {
    _private: (),
}

impl Gate {
    /// Waits until no root test of a module other than `test`'s runs, then enters.
    fn enter(test: &str) -> Gate {
        let module = test.split("::").next().unwrap_or(test).to_string();
        let mut g = GATE.lock().unwrap_or_else(|e| e.into_inner());
        while g.0.as_ref().is_some_and(|m| *m != module) {
            g = GATE_FREE.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        g.0 = Some(module);
        g.1 += 1;
        Gate { _private: () }
    }
}

impl Drop for Gate {
    /// Leaves; the last root test of its module lets another module's in.
    fn drop(&mut self) {
        let mut g = GATE.lock().unwrap_or_else(|e| e.into_inner());
        g.1 -= 1;
        if g.1 == 0 {
            g.0 = None;
            GATE_FREE.notify_all();
        }
    }
}
