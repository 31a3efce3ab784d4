//! The integration tests that need no root: `sweetspot` on fake sysfs/procfs trees
//! (`--sysfs-root`/`--procfs-root`), simulated devices (`--sim`), files and the library in
//! process. One test binary (one link); each module is one former `tests/*.rs` file.
//! `cargo test --test cli` runs them, `cargo test --test cli MODULE::` one file's.
#![allow(clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;

mod architecture_doc;
mod bench_set_precheck;
mod bench_sim;
mod boot_examples;
mod cli_edges;
mod completions;
mod daemon_keep;
mod daemon_proc;
mod db_path;
mod devices_table;
mod fuzz_corpus;
mod help_budget;
mod history_view;
mod input_refused;
mod interrupt;
mod interrupt_tune;
mod interrupt_tune_json;
mod json_knob_values;
mod json_schemas;
mod killed_bench_note;
mod knobs_cli;
mod man_pages;
mod metrics;
mod plot;
mod policy_doc;
mod profile_boot;
mod profile_fleet;
mod profile_host;
mod restore_live_host;
mod restore_untrusted;
mod set_restore;
mod shell_leader;
mod tune_confirm;
mod tune_first_screen;
mod tune_judges;
mod tune_progress;
mod tune_report;
mod tune_resume;
mod tune_screen;
mod tune_sim;
mod user_benchmark;
mod version;
mod zoned_scheduler;
