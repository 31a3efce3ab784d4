//! The optimiser loop. Filled in by the Optimiser issue.
