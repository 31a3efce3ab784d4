//! A run on a device's own filesystem (`bench --device`) works in `.sweetspot-bench-*` there:
//! the job's files and the loads' data, hundreds of MiB at the default sizes. SIGKILL leaves
//! that directory behind; `restore` (and the next run on that filesystem) removes it, but never
//! the directory of a run that is alive. Real loop device with ext4, as root.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn work_dirs(mnt: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(mnt)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".sweetspot-bench-")
        })
        .map(|e| e.path())
        .collect()
}

fn restore(tmp: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_sweetspot"))
        .arg("restore")
        .env("SWEETSPOT_DB", tmp.join("s.db"))
        .env("TMPDIR", tmp)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "restore: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn a_killed_runs_work_directory_is_removed_by_restore_a_live_ones_is_not() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let mut dev = common::LoopDev::new(256);
    let mnt = dev.mount_ext4();
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sweetspot"))
        .args(["bench", "--device", &dev.name, "--loads", "no_load,io_load"])
        .args(["--runs", "20", "--job-scale", "0.02", "--lead", "0.3"])
        .args(["--load-mib", "32", "-q"])
        .env("SWEETSPOT_DB", tmp.path().join("s.db"))
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the run has its work directory with the job's files in it.
    let deadline = Instant::now() + Duration::from_secs(120);
    while !work_dirs(&mnt)
        .first()
        .is_some_and(|d| d.join("job").is_dir())
    {
        assert!(Instant::now() < deadline, "no work directory in {mnt:?}");
        assert!(child.try_wait().unwrap().is_none(), "bench ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    // A live run's directory is not a leftover.
    let out = restore(tmp.path());
    assert!(!out.contains(".sweetspot-bench-"), "{out}");
    assert_eq!(work_dirs(&mnt).len(), 1);
    assert!(child.try_wait().unwrap().is_none(), "bench died");

    child.kill().unwrap(); // SIGKILL: no Drop runs
    child.wait().unwrap();
    let left = work_dirs(&mnt);
    assert_eq!(left.len(), 1, "SIGKILL cleaned up after all?");
    let out = restore(tmp.path());
    assert!(
        out.contains(&format!(
            "leftover of a killed run: removed {}",
            left[0].display()
        )),
        "{out}"
    );
    assert!(work_dirs(&mnt).is_empty());
    // A directory of that name without an owner lock (not ours) is never touched.
    let foreign = mnt.join(".sweetspot-bench-foreign");
    std::fs::create_dir(&foreign).unwrap();
    restore(tmp.path());
    assert!(foreign.is_dir());
}
