//! The plain value types at the bottom of the module graph: what every stage passes around and
//! the store keeps. They import nothing of sweetspot's other modules, so `knob`, `bench`,
//! `tune` and `store` can all use them without importing each other.
//!
//! - [`setting`]: [`KnobValue`], [`Setting`], [`Domain`], [`ApplyOrder`].
//! - [`load`]: contest's loads, [`Load`].
//! - [`run`]: one run's contest columns, [`Run`], and the measured target, [`TargetInfo`].
//! - [`text`]: free text from outside checked and shown on one line.
//! - [`time`]: Unix seconds as RFC 3339 text and back.
//! - [`owner`]: who journaled an undo entry, [`Owner`].
//! - [`paths`]: fixed system paths several layers name (the daemon's config).
//! - [`tune_status`]: where a tune stands, [`TuneStatus`].

pub mod load;
pub mod owner;
pub mod paths;
pub mod run;
pub mod setting;
pub mod text;
pub mod time;
pub mod tune_status;

pub use load::Load;
pub use owner::Owner;
pub use run::{IoCounters, Run, TargetInfo};
pub use setting::{ApplyOrder, Domain, KnobValue, Setting, setting_label};
pub use tune_status::TuneStatus;
