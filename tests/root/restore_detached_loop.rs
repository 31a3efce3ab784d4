//! `restore` after `losetup -d`: a loop device's request queue outlives the detach and keeps
//! sweetspot's value, so the journaled original is written back to that queue while the loop
//! number serves no file; once it serves another file, that file's queue is left alone and the
//! warning says so (needs root and a real loop device; CI runs as root).
//!
//! The only test of its binary: test binaries run one after another, so no other test of this
//! suite can take the loop number between the detach and the restore.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

#[test]
fn restore_writes_the_original_back_to_a_detached_loop_queue() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
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

    // The same number attached to the first file again, changed, detached, and then attached
    // to another file: that file's queue is not written, and the warning names the file and
    // the journaled original.
    let dev = lo.dev.clone();
    let losetup = |args: &[&std::ffi::OsStr]| {
        let ok = std::process::Command::new("losetup")
            .args(args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "losetup {args:?}");
    };
    losetup(&[dev.as_os_str(), lo.file.as_os_str()]);
    let first = Detach(dev.clone());
    // The attach computes read-ahead afresh: this is the original `set` journals now.
    let original = lo.read("queue/read_ahead_kb");
    env.cmd(&["set", &lo.name, &format!("read_ahead_kb={changed}")])
        .assert()
        .success();
    drop(first);
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.img");
    std::fs::File::create(&other)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    losetup(&[dev.as_os_str(), other.as_os_str()]);
    let _other = Detach(dev.clone());
    let out = env.cmd(&["restore"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{0}: 1 journaled knobs of loop:{1} closed without writing them back: {0} is now \
             attached to another file (loop:{2}), and its queue serves that file now, so they \
             are not written into it (journaled originals: read_ahead_kb={original};",
            lo.name,
            lo.file.display(),
            other.display()
        )),
        "{stderr}"
    );
    assert_eq!(lo.read("queue/read_ahead_kb"), changed.to_string());
    // Closed: a second restore has nothing to say about it.
    let again = env.cmd(&["restore"]).output().unwrap();
    assert_eq!(again.status.code(), Some(0));
    assert!(
        !String::from_utf8_lossy(&again.stderr).contains("journaled knobs"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
}

/// `losetup -d` of a device on drop.
struct Detach(std::path::PathBuf);

impl Drop for Detach {
    fn drop(&mut self) {
        let _ = std::process::Command::new("losetup")
            .arg("-d")
            .arg(&self.0)
            .status();
    }
}
