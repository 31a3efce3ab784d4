//! Undo: putting journaled knobs back once the writer that changed them is gone.
//!
//! Every knob write goes through [`crate::knob::apply`], which journals the original in the
//! store ([`crate::store::journal`], owners [`crate::types::Owner`]) durably before it writes;
//! [`crate::knob::restore`] writes originals back. This module decides *whose* entries may be
//! written back *when*: a writer holds its device's lock ([`crate::lock`]) while it runs, so an
//! entry is put back only under that lock, once its writer is gone.
//!
//! - [`recover`]: a killed tune (a `tunes` row still `running` whose lock is free) or a killed
//!   `bench` has its own entries restored and the tune is marked `recovered`; `tune`, `bench`,
//!   `restore` and the daemon call it first. `restore`'s own work, every idle entry
//!   ([`restore_idle`]), and the writers' locks are here too.
//! - [`hostwide`]: which host-wide knobs (vm, CPU scheduler) `restore <DEVICE>` puts back, and
//!   which stay changed because another command journaled them too.
//! - [`killed_bench`]: the knobs a killed `bench` or `tune --scratch` left open, for `status`
//!   and `history` to name.
//!
//! It sits above [`crate::bench`] (a host tune's identity) and below [`crate::tune`],
//! [`crate::daemon`] and [`crate::cli`], which call it. A killed run's leftover directories,
//! mounts and loop devices are swept by [`crate::bench::stale`], which `bench` itself runs
//! before every scratch run, so it stays in `bench`.

pub mod hostwide;
pub mod killed_bench;
pub mod recover;

pub use killed_bench::{OpenKnob, killed_bench_knobs, note};
pub use recover::{
    HostLeft, Recovered, Restored, alive, recover, recover_benches, recover_with, restore_idle,
    tune_lock, undo_command,
};
