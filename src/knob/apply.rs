//! The journaled apply path and restore. Filled in by the Foundation issue.
