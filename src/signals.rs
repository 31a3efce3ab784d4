//! Ctrl-C and SIGTERM: long work (bench, tune) stops after the current run, restores and
//! cleans up. [`install`] registers the handlers; [`interrupted`] is polled between runs.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Registers SIGINT and SIGTERM to set the interrupted flag (idempotent).
pub fn install() {
    let flag = FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, Arc::clone(flag));
    }
}

/// True once SIGINT or SIGTERM arrived after [`install`].
pub fn interrupted() -> bool {
    FLAG.get().is_some_and(|f| f.load(Ordering::SeqCst))
}
