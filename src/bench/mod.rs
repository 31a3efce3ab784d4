//! The contest subset: a reference job timed while one of contest's background loads competes
//! with it, behind the [`Testbed`] seam that the optimiser drives.
//!
//! Real measurement: [`job`] (the built-in reference job), [`startup`] (the start-up judge: a
//! cold application start-up timed instead of the job), [`loads`] (one file per load),
//! [`group`] (process groups: spawn, time, kill, reap with rusage), [`leader`] (the leader of a
//! user's shell command, which takes its group down with sweetspot), [`contest_run`] (one real run),
//! [`scratch`] (`--scratch`), [`stale`] (leftovers of SIGKILLed `--scratch` runs), `mounts`
//! (the mount, unmount and tool helpers both share), [`device_testbed`]
//! (`RealDevice`, the real [`Testbed`]), [`emulate`] (`--emulate`: a slow device served over FUSE), [`worker`] (the hidden `__worker` subcommand the job
//! and loads run as). Simulation: [`surface`], [`sim`].
//! Measuring trials and summarising them: [`trial`], [`summary`]. The user's own benchmark
//! instead of contest: [`user_job`] (a command and how to read its figure), [`user_testbed`] (its
//! testbed, and the host alone for host-wide knobs).

pub mod contest_run;
pub mod device_testbed;
pub mod emulate;
pub mod fsutil;
pub mod group;
pub mod job;
pub mod journal_db;
pub mod leader;
pub mod loads;
mod mounts;
pub mod scratch;
pub mod sim;
pub mod stale;
pub mod startup;
pub mod summary;
pub mod surface;
pub mod testbed;
pub mod trial;
pub mod user_job;
pub mod user_testbed;
pub mod worker;

pub use crate::types::{IoCounters, Load, Run, TargetInfo};
pub use sim::SimDevice;
pub use testbed::{SpaceKnob, Testbed};
