//! Test helpers (compiled only for unit tests): fake sysfs/procfs trees under a temp dir, and
//! [`kernel::FakeKernel`], a small simulation of the kernel's knob behaviour behind
//! [`crate::knob::io::KnobIo`].

pub mod kernel;
pub mod profile;
pub mod tree;
