//! Block devices: whole disks under `/sys/block`, their identity, and their mounts.
//! Filled in by the Foundation issue.
