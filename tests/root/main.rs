//! The integration tests that need root: real loop devices, mounts, FUSE (`--emulate`),
//! `chown`, the real `/proc/sys`. One test binary (one link); each module is one former
//! `tests/*.rs` file. Run by another user, each test that needs root says
//! `skipped (needs root: ...)` on stderr and passes (`common::root`); CI runs them as root
//! with `SWEETSPOT_TESTS_REQUIRE_ROOT=1`, which fails a skip. `cargo test --test root` runs
//! them, `cargo test --test root MODULE::` one file's.
#![allow(clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;

mod bench_work_dir;
mod daemon_real;
mod db_read_only;
mod db_trust_locks;
mod emulate;
mod file_trust;
mod loop_knobs;
mod profile_files;
mod profile_real;
mod profile_rollback;
mod real_bench_signals;
mod real_loads;
mod restore_detached_loop;
mod restore_leftovers;
mod restore_live_scratch;
mod sched_knobs;
mod scratch_other_db;
mod startup_judge;
mod tune_real;
mod tune_real_refused;
mod tune_user;
