//! The contest subset: a reference job timed while one of contest's background loads competes
//! with it, behind the [`Testbed`] seam that the optimiser drives.
//!
//! Real measurement: [`job`] (the built-in reference job), [`loads`] (one file per load),
//! [`group`] (process groups: spawn, time, kill, reap with rusage), [`runner`] (one run),
//! [`scratch`] (`--scratch`), [`real`] (`RealDevice`, the real [`Testbed`]), [`worker`] (the
//! hidden `__worker` subcommand the job and loads run as).

pub mod fsutil;
pub mod group;
pub mod job;
pub mod load;
pub mod loads;
pub mod real;
pub mod runner;
pub mod scratch;
pub mod target;
pub mod testbed;
pub mod worker;

pub use load::Load;
pub use testbed::{Run, SpaceKnob, TargetInfo, Testbed};
