//! `restore` after `losetup -d`: a loop device's request queue outlives the detach and keeps
//! sweetspot's value, so the journaled original is written back to that queue (needs root and
//! a real loop device; CI runs as root).
//!
//! The only test of its binary: test binaries run one after another, so no other test of this
//! suite can take the loop number between the detach and the restore.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

#[test]
fn restore_writes_the_original_back_to_a_detached_loop_queue() {
    let env = common::Env::new();
    let mut lo = common::LoopDev::new(64);
    // Put back by hand too if an assertion fails before `restore` runs.
    let _queue = common::QueueBackup::save(&lo.name, &["read_ahead_kb"]);
    let original: u32 = lo.read("queue/read_ahead_kb").parse().unwrap();
    let changed = if original == 4096 { 2048 } else { 4096 };

    env.cmd(&["set", &lo.name, &format!("read_ahead_kb={changed}")])
        .assert()
        .success();
    assert_eq!(lo.read("queue/read_ahead_kb"), changed.to_string());

    lo.detach();
    // The premise: the queue is still there and keeps sweetspot's value after the detach.
    assert_eq!(lo.read("queue/read_ahead_kb"), changed.to_string());

    let out = env.cmd(&["restore"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("{} read_ahead_kb = {original}", lo.name)),
        "{stdout}"
    );
    assert_eq!(lo.read("queue/read_ahead_kb"), original.to_string());

    // Nothing is left open: a second restore has nothing to put back.
    let again = env.cmd(&["restore"]).output().unwrap();
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(lo.read("queue/read_ahead_kb"), original.to_string());
}
