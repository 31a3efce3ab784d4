//! Ctrl-C and SIGTERM. [`install`] registers the handlers; long work polls them.
//!
//! - `interrupted`: a stop was asked for (one signal or more). Checked between runs: no new
//!   run starts, the device is restored, finished runs and trials are kept (exit 130).
//! - [`abort_run`]: the run in progress must be abandoned now (its job and load are killed).
//!   By default the first signal does that (`bench`). After [`finish_current_run`] (`tune`,
//!   as its issue asks: "stops after the current run"), the first signal lets the run in
//!   progress finish and only a second one abandons it.
//! - `request_stop`: the same stop raised by code (the daemon: the machine stopped being
//!   idle), taken back with `clear_stop`.
//! - `close_output`: a write to stdout or stderr failed with `EPIPE` (`| head -1`): the same
//!   stop as a second signal. `output_closed` says not to write more;
//!   `stopped_by_closed_output` says whether the closed pipe is what stopped the work (it
//!   came before any signal or `request_stop`), which `main` ends with exit 0 (130 when a
//!   signal came first).

use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// SIGINT and SIGTERM received since [`install`].
static COUNT: AtomicUsize = AtomicUsize::new(0);
/// True when the first signal lets the current run finish.
static GRACEFUL: AtomicBool = AtomicBool::new(false);
static INSTALL: Once = Once::new();
/// True once stdout or stderr turned out to be a closed pipe (`| head -1`).
static CLOSED: AtomicBool = AtomicBool::new(false);
/// True once stdout turned out to be a closed pipe.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
/// True when a closed pipe asked for the stop before any signal or [`request_stop`] did.
static STOPPED_BY_CLOSED: AtomicBool = AtomicBool::new(false);
/// True while [`request_stop`] asks the work in progress to stop (until [`clear_stop`]).
static STOP: AtomicBool = AtomicBool::new(false);

/// Registers SIGINT and SIGTERM to count (idempotent). A graceful first signal also says on
/// stderr what happens next.
pub fn install() {
    INSTALL.call_once(|| {
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // SAFETY: the handler only does an atomic add, an atomic load and a write(2) of a
            // static buffer, all async-signal-safe (signal-safety(7)); it allocates nothing
            // and takes no lock.
            let _ = unsafe {
                signal_hook::low_level::register(sig, || {
                    let before = COUNT.fetch_add(1, Ordering::SeqCst);
                    if before == 0 && GRACEFUL.load(Ordering::SeqCst) {
                        const NOTE: &[u8] = b"\nsweetspot: stopping after the current run \
                            (a second Ctrl-C or SIGTERM abandons it now)\n";
                        let _ = nix::unistd::write(std::io::stderr(), NOTE);
                    }
                })
            };
        }
    });
}

/// Makes the first signal stop after the run in progress instead of abandoning it.
pub fn finish_current_run(on: bool) {
    GRACEFUL.store(on, Ordering::SeqCst);
}

/// True once SIGINT or SIGTERM arrived after [`install`]: start no new run.
pub(crate) fn interrupted() -> bool {
    COUNT.load(Ordering::SeqCst) > 0 || STOP.load(Ordering::SeqCst)
}

/// True when the run in progress must be abandoned now: a second signal, or the first one
/// unless [`finish_current_run`] is on.
pub fn abort_run() -> bool {
    let n = COUNT.load(Ordering::SeqCst);
    n >= 2 || (n == 1 && !GRACEFUL.load(Ordering::SeqCst)) || STOP.load(Ordering::SeqCst)
}

/// Asks the work in progress to stop now, as a second Ctrl-C would: the run in progress is
/// abandoned, the device restored, the finished trials kept ([`crate::Error::Interrupted`]).
/// Unlike a signal it can be taken back ([`clear_stop`]): the daemon raises it when the
/// machine stops being idle mid-retune, or on SIGTERM, from its own thread.
#[cfg(any(feature = "daemon", test))]
pub(crate) fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

/// Takes back [`request_stop`] (once the stopped work has ended), so the next work runs.
#[cfg(any(feature = "daemon", test))]
pub(crate) fn clear_stop() {
    STOP.store(false, Ordering::SeqCst);
}

/// The output a write failed on ([`close_output`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    /// The command's output (`| head`).
    Stdout,
    /// Messages and the log (`2>&1 | head`, `2> >(head -1)`).
    Stderr,
}

/// Called when writing to `out` failed with `EPIPE` (the reader of `| head -1` has gone):
/// stops like a second Ctrl-C (the run in progress is abandoned, the device restored,
/// finished trials kept, the tune recorded as interrupted), and [`output_closed`] turns true
/// so nothing more is written. When no stop was asked for before (no signal, no
/// [`request_stop`]) the closed pipe is what stopped the work: [`stopped_by_closed_output`]
/// turns true, and the exit is quiet (0), as in ripgrep. A pipe that closes only after a
/// signal leaves the exit to the signal (130).
pub(crate) fn close_output(out: Output) {
    CLOSED.store(true, Ordering::SeqCst);
    if out == Output::Stdout {
        STDOUT_CLOSED.store(true, Ordering::SeqCst);
    }
    // One atomic step decides which came first: a signal's add lands either before this one
    // (it is seen here) or after it (the pipe came first).
    let asked_before = COUNT.fetch_add(2, Ordering::SeqCst) > 0 || STOP.load(Ordering::SeqCst);
    if !asked_before {
        STOPPED_BY_CLOSED.store(true, Ordering::SeqCst);
    }
}

/// True once [`close_output`] was called, for stdout or stderr: write no more messages.
pub(crate) fn output_closed() -> bool {
    CLOSED.load(Ordering::SeqCst)
}

/// True once [`close_output`] was called for stdout: what is left to print on stdout (a
/// stopped tune's JSON) has no reader. A closed stderr leaves stdout to be written.
pub(crate) fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::SeqCst)
}

/// True when a closed pipe stopped the work ([`close_output`] before any signal or
/// [`request_stop`]): [`crate::Error::Interrupted`] then exits 0, not 130.
pub(crate) fn stopped_by_closed_output() -> bool {
    STOPPED_BY_CLOSED.load(Ordering::SeqCst)
}

/// Writes one line to stderr without panicking; a closed pipe calls [`close_output`].
pub(crate) fn eprint_line(s: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    if let Err(e) = writeln!(err, "{s}")
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        close_output(Output::Stderr);
    }
}
