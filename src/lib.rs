//! sweetspot: finds the per-device "sweet spot" of Linux block-layer and VM knobs.
//!
//! It changes a knob, reruns a short subset of Con Kolivas's *contest* benchmark, and lets an
//! optimiser pick the next setting until it converges. The data flow through the modules:
//!
//! ```text
//! device ─► knob ─► bench ─► tune ─► store ─────────► profile ──► daemon
//!  (what    (typed,  (contest  (argmin   (SQLite:         (export,    (keeps disks
//!  disks)   journaled loads,   Solver)   journal, trials, apply,     at their
//!           writes)  Testbed)            sweet spots)     verify)     sweet spot)
//! ```
//!
//! Imports point down only, with no cycles: `cli` (imported by nothing) → `daemon` →
//! `profile`, `plot` → `tune`, `output` → `undo` → `bench` → `knob` → `store`, `lock` →
//! `device` → `types`, `sysroot`, `trust`, `stats`, `signals`, `tomlfile` → `error`.
//! `store` sits below the stages that write to it, so it imports none of `knob`, `bench` or
//! `tune`; the values they share are in [`types`].
//!
//! - [`device`]: whole disks under `/sys/block`, their stable identity and mounts.
//! - [`knob`]: the knobs a device offers now, their domains (from kernel sources), and the
//!   journaled apply/restore path. No knob is written before its original is durably recorded.
//! - [`mod@bench`]: the contest subset behind the [`bench::Testbed`] seam (real device or simulated
//!   surface).
//! - [`stats`]: mean, sd, 95% CI, median, MAD outliers, paired tests; used by bench and tune.
//! - [`tune`]: policies, the search space and the Bayesian optimiser.
//! - [`undo`]: the journaled knobs of writers that are gone put back (killed tunes and
//!   benchmarks, `restore`), each under its device's lock.
//! - [`store`]: the rusqlite database with versioned migrations.
//! - [`profile`]: sweet spots exported for boot (sweetspot's TOML, udev rules, sysctl.d, TuneD).
//! - [`trust`]: who may have written a file root acts on (owner and mode of policies,
//!   configs, profiles, the database).
//! - [`lock`]: one writer per device: the per-device lock every command that writes knobs
//!   takes, naming its holder to a second writer.
//! - [`plot`]: a stored tune drawn: `sweetspot plot`'s SVG and the tune report's sparklines.
//! - [`output`]: how a command prints: a result as its table or versioned JSON, and `bench`'s
//!   contest table, JSON and CSV behind one trait.
//! - [`tomlfile`]: one TOML input file: the line of a span and errors naming file, line and
//!   field, for every loader (policies, surfaces, profiles, the daemon's config).
//! - [`types`]: the plain values every stage shares (`Setting`, `KnobValue`, `Load`, `Run`, …).
//! - [`daemon`]: `sweetspot daemon`, keeping devices at their sweet spot (tokio, one thread).
//! - [`cli`]: the clap command line; `main.rs` only calls [`cli::main`].

pub mod bench;
pub mod cli;
pub mod daemon;
pub mod device;
pub mod error;
pub mod knob;
pub mod lock;
pub mod output;
pub mod plot;
pub mod profile;
pub mod signals;
pub mod stats;
pub mod store;
pub mod sysroot;
pub mod tomlfile;
pub mod trust;
pub mod tune;
pub mod types;
pub mod undo;

#[cfg(test)]
pub(crate) mod testkit;

pub use error::{Error, Result};
