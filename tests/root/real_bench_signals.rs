//! Killing `sweetspot bench --scratch` mid-run with SIGTERM or SIGINT leaves no loop device, no
//! mount, no backing file and no job or load process (root; real loop devices).
//!
//! SIGKILL cannot be caught: after `kill -9` the loop device, its mount and the backing file
//! under `$TMPDIR/sweetspot-scratch-*` remain, but the job and the load die with sweetspot
//! (PR_SET_PDEATHSIG), and the next `sweetspot restore` removes the leftovers while leaving a
//! live run's scratch device alone.
#![allow(clippy::unwrap_used)]

use crate::common;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// (pid, ppid, cmdline) of every process.
fn processes() -> Vec<(i32, i32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
            continue;
        };
        let ppid = rest.split_whitespace().nth(1).unwrap().parse().unwrap();
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        out.push((pid, ppid, cmd));
    }
    out
}

fn descendants(root: i32) -> Vec<(i32, String)> {
    let all = processes();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(all.iter().filter(|(_, pp, _)| *pp == p).map(|(c, _, _)| *c));
        i += 1;
    }
    all.into_iter()
        .filter(|(p, _, _)| *p != root && found.contains(p))
        .map(|(p, _, c)| (p, c))
        .collect()
}

fn text(cmd: &str, args: &[&str]) -> String {
    String::from_utf8_lossy(&Command::new(cmd).args(args).output().unwrap().stdout).into_owned()
}

/// Asserts that no loop device and no mount under `tag` is left.
fn assert_nothing_left(tag: &str) {
    assert!(!text("losetup", &["-a"]).contains(tag), "loop device left");
    assert!(
        !std::fs::read_to_string("/proc/mounts")
            .unwrap()
            .contains(tag),
        "mount left"
    );
}

/// Unmounts and detaches whatever a test's scratch runs left under `tag`, even on panic.
struct Leftovers {
    tag: String,
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        for line in std::fs::read_to_string("/proc/mounts")
            .unwrap_or_default()
            .lines()
        {
            if let Some(m) = line.split(' ').nth(1).filter(|m| m.contains(&self.tag)) {
                let _ = Command::new("umount").args(["-l", m]).status();
            }
        }
        for line in text("losetup", &["-a"]).lines() {
            if line.contains(&self.tag)
                && let Some(dev) = line.split(':').next()
            {
                let _ = Command::new("losetup").args(["-d", dev]).status();
            }
        }
    }
}

/// Starts `bench --scratch` with its `$TMPDIR` and database in `tmp`, and waits until both the
/// job and io_load run. Returns the child and its workers.
fn start_bench(tmp: &Path) -> (std::process::Child, Vec<(i32, String)>) {
    start_bench_with(tmp, &[])
}

/// [`start_bench`] with `extra` arguments.
fn start_bench_with(tmp: &Path, extra: &[&str]) -> (std::process::Child, Vec<(i32, String)>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sweetspot"))
        .args([
            "bench",
            "--scratch",
            "--loads",
            "no_load,io_load",
            "--runs",
            "20",
            "--job-scale",
            "0.02",
            "--lead",
            "0.3",
            "--load-mib",
            "32",
            "-q",
        ])
        .args(extra)
        .env("TMPDIR", tmp)
        .env("SWEETSPOT_DB", tmp.join("s.db"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    // Wait until io_load and the job both run: the signal lands mid-run.
    let deadline = Instant::now() + Duration::from_secs(120);
    let workers = loop {
        let d = descendants(pid);
        let load = d
            .iter()
            .any(|(_, c)| c.contains("__worker load") && c.contains("io_load"));
        let job = d.iter().any(|(_, c)| c.contains("__worker job"));
        if load && job {
            break d;
        }
        assert!(Instant::now() < deadline, "bench never reached io_load");
        assert!(child.try_wait().unwrap().is_none(), "bench ended early");
        std::thread::sleep(Duration::from_millis(20));
    };
    (child, workers)
}

fn interrupt_mid_run(sig: Signal) {
    let tmp = tempfile::tempdir().unwrap();
    let tag = tmp.path().to_str().unwrap().to_string();
    let _guard = Leftovers { tag: tag.clone() };
    let (mut child, workers) = start_bench(tmp.path());
    let pid = child.id() as i32;
    assert!(text("losetup", &["-a"]).contains(&tag));
    assert!(
        std::fs::read_to_string("/proc/mounts")
            .unwrap()
            .contains(&tag)
    );

    let sent = Instant::now();
    kill(Pid::from_raw(pid), sig).unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(30),
            "bench did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(sent.elapsed() < Duration::from_secs(10), "stopped promptly");

    assert_nothing_left(&tag);
    for (p, c) in &workers {
        assert!(
            !Path::new(&format!("/proc/{p}")).exists(),
            "process {p} ({c}) left"
        );
    }
    let left: Vec<_> = processes()
        .into_iter()
        .filter(|(_, _, c)| c.contains(&tag))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let files: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().starts_with("sweetspot-"))
        .collect();
    assert!(files.is_empty(), "{files:?}");
}

#[test]
fn sigterm_mid_run_leaves_nothing_behind() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    interrupt_mid_run(Signal::SIGTERM);
}

#[test]
fn sigint_mid_run_leaves_nothing_behind() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    interrupt_mid_run(Signal::SIGINT);
}

/// `restore` with `tmp`'s `$TMPDIR` and database: its exit code, stdout and stderr.
fn restore_out(tmp: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sweetspot"))
        .arg("restore")
        .env("TMPDIR", tmp)
        .env("SWEETSPOT_DB", tmp.join("s.db"))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// [`restore_out`], asserting exit 0; its stdout.
fn restore_in(tmp: &Path) -> String {
    let (code, stdout, stderr) = restore_out(tmp);
    assert_eq!(code, Some(0), "stdout: {stdout}\nstderr: {stderr}");
    stdout
}

fn scratch_dirs(tmp: &Path) -> Vec<std::ffi::OsString> {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| {
            let n = n.to_string_lossy();
            n.starts_with("sweetspot-scratch-") || n.starts_with("sweetspot-run-")
        })
        .collect()
}

/// A SIGKILLed `bench --scratch` leaves its mount and loop device; `restore` leaves them while
/// the run lives (exit 1, naming it), and removes them, its knob put back, once it is dead.
#[test]
fn sigkill_leftovers_are_removed_by_restore_but_a_live_run_is_not() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let tag = tmp.path().to_str().unwrap().to_string();
    let _guard = Leftovers { tag: tag.clone() };
    // With a knob set, the live run has journaled its loop device whatever state an earlier
    // run left its queue in (a loop queue outlives `losetup -d`, so a fresh bench may journal
    // a reset too): restore's answer does not depend on which loop device the run got.
    let (mut child, workers) = start_bench_with(tmp.path(), &["--set", "read_ahead_kb=512"]);

    // A live run's scratch device is not a leftover: restore leaves it and the run alone, and
    // says so with exit 1 (a knob it was asked to restore is still changed).
    let (code, out, err) = restore_out(tmp.path());
    assert_eq!(code, Some(1), "stdout: {out}\nstderr: {err}");
    let pid = format!("(pid {}", child.id());
    assert!(
        out.lines()
            .any(|l| l.starts_with("left alone: loop") && l.contains(&pid)),
        "{out}"
    );
    // Its read_ahead_kb, and any knob it reset on a queue an earlier run left changed.
    assert!(
        err.contains("1 knob left changed") || err.contains("2 knobs left changed"),
        "{err}"
    );
    assert!(
        text("losetup", &["-a"]).contains(&tag),
        "live loop device detached"
    );
    // The scratch directory and the run's own (counter, logs), both owner-locked.
    assert_eq!(scratch_dirs(tmp.path()).len(), 2);
    assert!(child.try_wait().unwrap().is_none(), "bench died");

    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // The job and the load die with it (PR_SET_PDEATHSIG), not run on as orphans.
    let deadline = Instant::now() + Duration::from_secs(10);
    for (p, c) in &workers {
        while Path::new(&format!("/proc/{p}")).exists() {
            assert!(
                Instant::now() < deadline,
                "process {p} ({c}) outlived sweetspot"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    // What SIGKILL cannot clean: the mount and the loop device are still there ...
    assert!(text("losetup", &["-a"]).contains(&tag));
    assert!(
        std::fs::read_to_string("/proc/mounts")
            .unwrap()
            .contains(&tag)
    );

    // ... until restore removes them.
    let out = restore_in(tmp.path());
    assert!(out.contains("leftover of a killed run"), "{out}");
    assert_nothing_left(&tag);
    assert!(scratch_dirs(tmp.path()).is_empty());
}

/// A sweep with a database of `tmp` (none exists there).
fn sweep(tmp: &Path) -> sweetspot::bench::stale::Swept {
    sweetspot::bench::stale::sweep(tmp, &tmp.join("s.db"))
}

#[test]
fn a_scratch_dir_without_an_owner_lock_is_never_swept() {
    // Made by an older sweetspot or by someone else: not provably a leftover.
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("sweetspot-scratch-foreign");
    std::fs::create_dir_all(d.join("mnt")).unwrap();
    std::fs::write(d.join("backing.img"), b"x").unwrap();
    assert_eq!(sweep(tmp.path()), Default::default());
    assert!(d.join("backing.img").exists());
    // A live owner's lock keeps it; once the owner is gone it is swept.
    let lock = sweetspot::bench::stale::own(&d).unwrap();
    assert_eq!(sweep(tmp.path()), Default::default());
    assert!(d.join("backing.img").exists());
    drop(lock);
    let done = sweep(tmp.path());
    assert_eq!((done.removed.len(), done.left.len()), (1, 0), "{done:?}");
    assert!(!d.exists());
}

#[test]
fn another_users_dead_scratch_or_work_dir_is_never_swept() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    use std::os::unix::fs::chown;
    // `$TMPDIR` and a measured filesystem may be anyone's: a directory named like ours, with a
    // free owner lock but another user's, is theirs to remove, not root's.
    let tmp = tempfile::tempdir().unwrap();
    for name in ["sweetspot-scratch-foreign", ".sweetspot-bench-foreign"] {
        let d = tmp.path().join(name);
        std::fs::create_dir_all(d.join("mnt")).unwrap();
        std::fs::write(d.join("backing.img"), b"x").unwrap();
        drop(sweetspot::bench::stale::own(&d).unwrap());
        chown(&d, Some(65534), Some(65534)).unwrap();
    }
    assert_eq!(sweep(tmp.path()), Default::default());
    assert!(sweetspot::bench::stale::sweep_work(tmp.path()).is_empty());
    assert!(
        tmp.path()
            .join("sweetspot-scratch-foreign/backing.img")
            .exists()
    );
    assert!(
        tmp.path()
            .join(".sweetspot-bench-foreign/backing.img")
            .exists()
    );
    // Ours, the same otherwise, is swept.
    for name in ["sweetspot-scratch-foreign", ".sweetspot-bench-foreign"] {
        chown(tmp.path().join(name), Some(0), Some(0)).unwrap();
    }
    assert_eq!(sweep(tmp.path()).removed.len(), 1);
    assert_eq!(sweetspot::bench::stale::sweep_work(tmp.path()).len(), 1);
}

/// A SIGKILLed `bench --scratch --set read_ahead_kb=512` leaves its loop device with the knob
/// journaled open in its database. The next `bench --scratch` on that database puts the knob
/// back and removes the leftover before it starts, as `tune --scratch` does (it used to leave
/// it: "left alone: … journaled in …; `restore` puts them back").
#[test]
fn the_next_bench_scratch_removes_a_killed_runs_journaled_leftover() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let tag = tmp.path().to_str().unwrap().to_string();
    let _guard = Leftovers { tag: tag.clone() };
    let (mut child, _) = start_bench_with(tmp.path(), &["--set", "read_ahead_kb=512"]);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(
        text("losetup", &["-a"]).contains(&tag),
        "nothing left to sweep"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_sweetspot"))
        .args([
            "bench",
            "--scratch",
            "--loads",
            "no_load",
            "--runs",
            "1",
            "--job-scale",
            "0.02",
            "--load-mib",
            "32",
        ])
        .env("TMPDIR", tmp.path())
        .env("SWEETSPOT_DB", tmp.path().join("s.db"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("leftover of a killed run"), "{err}");
    assert!(!err.contains("left alone"), "{err}");
    // Its own scratch device is gone too: nothing of either run is left.
    assert_nothing_left(&tag);
    assert!(scratch_dirs(tmp.path()).is_empty());
}
