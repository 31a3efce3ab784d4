//! The catalogue of known knobs: unit, safe bounds and caps, with the kernel source file each
//! fact comes from. Filled in by the Foundation issue.
