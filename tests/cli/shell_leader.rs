//! A user's shell command with its watchdog (`bench::leader`): the command's whole process
//! group dies with sweetspot (a thread that ends without `Drop`, or the real binary SIGKILLed
//! mid-tune), a group's SIGTERM or SIGINT does not remove the watchdog, and the command is as
//! it was without one: its shell leads the group, exits as before, and starts with the same
//! signal dispositions and mask.
//!
//! Each test runs in a process of its own (`common::alone`): they count the test process's
//! children and its process groups, which other tests of a shared binary also make.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use sweetspot::bench::group::{Group, members};
use sweetspot::bench::leader;

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_sweetspot"))
}

/// State letter of `/proc/PID/stat` (`None` once the pid is gone).
fn state(pid: i32) -> Option<char> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s[s.rfind(')')? + 2..].chars().next()
}

fn running(pid: i32) -> bool {
    state(pid).is_some_and(|s| s != 'Z')
}

/// Waits up to 5 s until none of `pids` runs; true if none does.
fn all_gone(pids: &[i32]) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|&p| running(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    !pids.iter().any(|&p| running(p))
}

/// Processes of group `pgid` running `sleep`.
fn sleeps_in(pgid: i32) -> Vec<i32> {
    members(pgid)
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c == "sleep\n")
        })
        .collect()
}

/// Spawns `command` the way `spawn` says in a thread that then ends without `Drop` running,
/// as a SIGKILLed sweetspot's would, once `sleeps` sleeps run in the group; returns the group
/// id and its members then. Every member is SIGKILLed when the returned guard drops.
fn spawn_and_abandon(
    command: &'static str,
    sleeps: usize,
    spawn: fn(&str) -> Group,
) -> (i32, Vec<i32>, KillGroupOnDrop) {
    let (pgid, pids) = std::thread::spawn(move || {
        let g = spawn(command);
        let pgid = g.pid();
        let t0 = Instant::now();
        while sleeps_in(pgid).len() < sleeps && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let pids = members(pgid);
        std::mem::forget(g);
        (pgid, pids)
    })
    .join()
    .unwrap();
    (pgid, pids, KillGroupOnDrop(pgid))
}

/// Members that are neither `sh` nor `sleep`: the watchdog, a fork of this test's process
/// (`sh -c` may exec its last command, so the shell itself is not always there).
fn watchdogs(pids: &[i32]) -> usize {
    pids.iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm"))
                .is_ok_and(|c| c != "sh\n" && c != "sleep\n")
        })
        .count()
}

fn sh(command: &str) -> Command {
    let mut c = Command::new("sh");
    c.args(["-c", command]);
    c
}

fn watched(command: &str) -> Group {
    leader::spawn(&mut sh(command)).unwrap()
}

fn bare(command: &str) -> Group {
    Group::spawn(&mut sh(command)).unwrap()
}

/// A SIGKILLed sweetspot is a spawning thread that ends without `Drop` running: the command's
/// background `sleep`s die too, not only its shell.
#[test]
fn a_commands_whole_group_dies_with_the_thread_that_spawned_it() {
    if !common::alone::in_own_process() {
        return;
    }
    let (pgid, pids, _guard) = spawn_and_abandon("sleep 30 & sleep 31 & sleep 32", 3, watched);
    assert_eq!(watchdogs(&pids), 1, "{pids:?}");
    assert!(all_gone(&pids), "left running: {:?}", members(pgid));
}

/// Without the watchdog (`sh -c` alone), the same thread's end leaves the sleeps running:
/// what the watchdog is for.
#[test]
fn without_the_watchdog_the_commands_children_outlive_the_thread() {
    if !common::alone::in_own_process() {
        return;
    }
    let (pgid, _, _guard) = spawn_and_abandon("sleep 40 & sleep 41 & wait", 2, bare);
    let sleeps = sleeps_in(pgid);
    assert_eq!(sleeps.len(), 2, "{:?}", members(pgid));
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        sleeps.iter().all(|&p| running(p)),
        "the sleeps died without a watchdog"
    );
}

/// A command that signals its own group at once, as `kill 0` or a service manager does
/// (SIGTERM, SIGHUP, …), does not remove the watchdog: the group still dies with the thread.
#[test]
fn the_watchdog_outlives_the_signals_a_group_is_sent() {
    if !common::alone::in_own_process() {
        return;
    }
    let (pgid, pids, _guard) = spawn_and_abandon(
        "trap '' HUP INT QUIT TERM USR1 USR2 ALRM; for s in HUP INT QUIT TERM USR1 USR2 ALRM; \
         do kill -$s 0; done; sleep 50 & sleep 51",
        2,
        watched,
    );
    // The sleeps started after the signals: the watchdog was there then.
    assert_eq!(watchdogs(&pids), 1, "{pids:?}");
    assert!(all_gone(&pids), "left running: {:?}", members(pgid));
}

/// A command that execs a program which waits for every child still ends: the watchdog is
/// sweetspot's child, not the command's.
#[test]
fn an_execd_program_that_waits_for_every_child_still_ends() {
    if !common::alone::in_own_process() {
        return;
    }
    let mut g = watched("exec perl -e '1 while wait != -1; exit 5'");
    let running = g.sleep_while_running(Duration::from_secs(10)).unwrap();
    let e = g.finish();
    assert!(!running, "still waiting: {e:?}");
    assert_eq!(e.code, Some(5));
}

/// Children of this process whose group's leader is gone: watchdogs left by a failed spawn.
fn stray_watchdogs() -> Vec<i32> {
    let me = std::process::id() as i32;
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| {
            let Ok(st) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
                return false;
            };
            let f: Vec<&str> = st[st.rfind(')').unwrap() + 2..].split(' ').collect();
            f[1] == me.to_string() && !Path::new(&format!("/proc/{}", f[2])).exists()
        })
        .collect()
}

/// A spawn that fails after the watchdog was cloned (exec's E2BIG: one argument over 128 KiB)
/// leaves no watchdog behind, running or a zombie.
#[test]
fn a_failed_spawn_leaves_no_watchdog() {
    if !common::alone::in_own_process() {
        return;
    }
    let long = format!("true {}", "x".repeat(200_000));
    assert!(leader::spawn(&mut sh(&long)).is_err());
    // A watchdog ends within milliseconds; 10 s is for a machine loaded by other tests.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !stray_watchdogs().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(stray_watchdogs(), Vec::<i32>::new());
}

/// The command's shell leads its group (`kill -- -$$` works), exits as before, and starts
/// with the signal dispositions and mask that `sh -c` alone had.
#[test]
fn the_command_is_as_it_was_without_the_watchdog() {
    if !common::alone::in_own_process() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let run = |cmd: &str, watch: bool| {
        let out = tempfile::NamedTempFile::new().unwrap();
        let file = out.reopen().unwrap();
        let mut c = sh(cmd);
        c.current_dir(dir.path()).stdout(file).stdin(Stdio::null());
        let mut g = if watch {
            leader::spawn(&mut c).unwrap()
        } else {
            Group::spawn(&mut c).unwrap()
        };
        g.wait(Duration::from_millis(2)).unwrap();
        let e = g.finish();
        (
            (e.code, e.signal),
            std::fs::read_to_string(out.path()).unwrap(),
        )
    };
    for (cmd, code, signal) in [
        ("exit 0", Some(0), None),
        ("exit 3", Some(3), None),
        ("kill -TERM $$", None, Some(libc::SIGTERM)),
        ("kill -HUP $$", None, Some(libc::SIGHUP)),
        ("trap 'exit 7' TERM; kill 0; sleep 5", Some(7), None),
        ("sleep 30 & kill -- -$$", None, Some(libc::SIGTERM)),
    ] {
        assert_eq!(run(cmd, true).0, (code, signal), "{cmd}");
    }
    // $$ is the group id.
    let (exit, _) = run("set -- $(cat /proc/$$/stat); [ \"$5\" = \"$$\" ]", true);
    assert_eq!(exit, (Some(0), None));
    let sig = "grep -E '^Sig(Blk|Ign|Cgt)' /proc/self/status";
    let (with, without) = (run(sig, true).1, run(sig, false).1);
    assert_eq!(with.lines().count(), 3, "{with}");
    assert_eq!(with, without);
}

/// SIGKILLs a process group and reaps its members when dropped (this process is their
/// subreaper, as `Group` made it): a failed test leaves nothing running.
struct KillGroupOnDrop(i32);

impl Drop for KillGroupOnDrop {
    fn drop(&mut self) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.0),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = all_gone(&members(self.0));
        for p in members(self.0) {
            let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(p), None);
        }
    }
}

/// SIGKILLs its pids when dropped (a failed test leaves no process behind).
struct KillOnDrop(Vec<i32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for &p in &self.0 {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(p),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// The product end to end: `tune --host --job` with a job that starts a background `sleep`;
/// SIGKILL sweetspot mid-run, and the `sleep` dies with it (fake sysfs/procfs roots: no
/// knob of this machine is touched).
#[test]
fn a_sigkilled_tune_takes_its_jobs_background_processes_with_it() {
    if !common::alone::in_own_process() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let (sys, proc_, policy) = common::autogroup_host(t.path());
    // A unique argument finds the job's sleep among the machine's processes.
    let mark = format!("{}.{}", 700 + std::process::id() % 100, std::process::id());
    let mut child = Command::new(bin())
        .env("SWEETSPOT_DB", t.path().join("s.db"))
        .arg("--sysfs-root")
        .arg(&sys)
        .arg("--procfs-root")
        .arg(&proc_)
        .args(["tune", "--host", "-q", "--policy"])
        .arg(&policy)
        .args(["--job", &format!("sleep {mark} & wait")])
        .args(["--metric", r"regex:rate: (\d+)", "--maximize", "rate"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let find = || -> Vec<i32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| c == format!("sleep\0{mark}\0").as_bytes())
            })
            .collect()
    };
    let t0 = Instant::now();
    let mut sleeps = find();
    while sleeps.is_empty() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
        sleeps = find();
    }
    // Whatever the outcome, no sleep is left behind.
    let _strays = KillOnDrop(sleeps.clone());
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(sleeps.len(), 1, "the job's sleep never started");
    assert!(all_gone(&sleeps), "the job's sleep outlived sweetspot");
}
