//! The contest subset: a reference job timed while one of contest's background loads competes
//! with it, behind the [`Testbed`] seam that the optimiser drives.

pub mod load;
pub mod runner;
pub mod sim;
pub mod summary;
pub mod surface;
pub mod target;
pub mod testbed;

pub use load::Load;
pub use sim::SimDevice;
pub use testbed::{Run, SpaceKnob, TargetInfo, Testbed};
