//! Discovery of the knobs a device offers right now. Filled in by the Foundation issue.
