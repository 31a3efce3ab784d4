//! The leader of a user's shell command (`sweetspot __worker shell`, `bench::leader`): the
//! command's whole process group dies with sweetspot, the command starts with SIGINT and
//! SIGQUIT at their default actions, and its exit is passed on.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use sweetspot::bench::group::members;
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

/// A SIGKILLed sweetspot is a spawning thread that ends without `Drop` running: the command's
/// background `sleep`s die too, not only the leader.
#[test]
fn a_commands_whole_group_dies_with_the_thread_that_spawned_it() {
    let (pgid, pids) = std::thread::spawn(|| {
        let g = leader::spawn("sleep 30 & sleep 31 & sleep 32", Some(bin()), |_| {}).unwrap();
        let pgid = g.pid();
        // The leader, its sh and the three sleeps.
        let t0 = Instant::now();
        while members(pgid).len() < 5 && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let pids = members(pgid);
        std::mem::forget(g);
        (pgid, pids)
    })
    .join()
    .unwrap();
    assert_eq!(pids.len(), 5, "{pids:?}");
    assert!(all_gone(&pids), "left running: {:?}", members(pgid));
    // Reap the zombies (Group made this process their subreaper).
    for p in members(pgid) {
        let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(p), None);
    }
}

/// Without the leader (`sh -c` leading), the same thread's end leaves the sleeps running:
/// what the leader is for.
#[test]
fn without_the_leader_the_commands_children_outlive_the_thread() {
    let (pgid, sleeps) = std::thread::spawn(|| {
        let g = leader::spawn("sleep 40 & sleep 41 & wait", None, |_| {}).unwrap();
        let pgid = g.pid();
        let t0 = Instant::now();
        while members(pgid).len() < 3 && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let sleeps: Vec<i32> = members(pgid).into_iter().filter(|&p| p != pgid).collect();
        std::mem::forget(g);
        (pgid, sleeps)
    })
    .join()
    .unwrap();
    assert_eq!(sleeps.len(), 2, "{sleeps:?}");
    assert!(!all_gone(&sleeps), "the sleeps died without a leader");
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pgid),
        nix::sys::signal::Signal::SIGKILL,
    );
    assert!(all_gone(&sleeps));
    for p in members(pgid) {
        let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(p), None);
    }
}

/// The leader exits as the command did: its code, or death by its signal.
#[test]
fn the_leader_exits_as_the_command_did() {
    for (cmd, code, signal) in [
        ("exit 0", Some(0), None),
        ("exit 3", Some(3), None),
        ("kill -TERM $$", None, Some(libc::SIGTERM)),
        ("kill -KILL $$", None, Some(libc::SIGKILL)),
        ("kill -SEGV $$", None, Some(libc::SIGSEGV)),
    ] {
        let mut g = leader::spawn(cmd, Some(bin()), |_| {}).unwrap();
        g.wait(Duration::from_millis(2)).unwrap();
        let e = g.finish();
        assert_eq!((e.code, e.signal), (code, signal), "{cmd}");
    }
}

/// SIGIgn bits of SIGINT (2) and SIGQUIT (3) in what `grep SigIgn /proc/self/status` printed.
fn int_quit_ignored(out: &str) -> (bool, bool) {
    let mask = out
        .trim()
        .strip_prefix("SigIgn:")
        .map(|m| u64::from_str_radix(m.trim(), 16).unwrap())
        .unwrap_or_else(|| panic!("no SigIgn in {out:?}"));
    (
        mask & (1 << (libc::SIGINT - 1)) != 0,
        mask & (1 << (libc::SIGQUIT - 1)) != 0,
    )
}

/// Runs `grep SigIgn /proc/self/status` as a user's command whose leader starts with SIGINT
/// and SIGQUIT ignored (as under `nohup … &`), and returns what it printed.
fn sig_ign_of_command(leader_bin: Option<&Path>) -> String {
    let out = tempfile::NamedTempFile::new().unwrap();
    let file = out.reopen().unwrap();
    let mut g = leader::spawn("grep SigIgn /proc/self/status", leader_bin, |cmd| {
        cmd.stdout(file).stdin(Stdio::null());
        // SAFETY: signal(2) is async-signal-safe; nothing is allocated.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(cmd, || {
                libc::signal(libc::SIGINT, libc::SIG_IGN);
                libc::signal(libc::SIGQUIT, libc::SIG_IGN);
                Ok(())
            });
        }
    })
    .unwrap();
    g.wait(Duration::from_millis(2)).unwrap();
    assert_eq!(g.finish().code, Some(0));
    std::fs::read_to_string(out.path()).unwrap()
}

/// A benchmark that stops a helper with `kill -INT` needs SIGINT at its default action: the
/// leader sets SIGINT and SIGQUIT back to default even when sweetspot started with them
/// ignored; `sh -c` alone passes the ignored dispositions on.
#[test]
fn the_command_starts_with_sigint_and_sigquit_at_their_defaults() {
    assert_eq!(
        int_quit_ignored(&sig_ign_of_command(Some(bin()))),
        (false, false)
    );
    assert_eq!(int_quit_ignored(&sig_ign_of_command(None)), (true, true));
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
    let t = tempfile::tempdir().unwrap();
    let proc_ = t.path().join("proc");
    std::fs::create_dir_all(proc_.join("sys/kernel")).unwrap();
    std::fs::create_dir_all(proc_.join("sys/vm")).unwrap();
    std::fs::create_dir_all(t.path().join("sys/block")).unwrap();
    std::fs::write(proc_.join("sys/kernel/sched_autogroup_enabled"), "1\n").unwrap();
    let policy = t.path().join("p.toml");
    std::fs::write(
        &policy,
        "loads = [\"no_load\", \"io_load\"]\nbudget = 6\ncheck_pairs = 2\n[objective]\n\
         minimize = \"ratio\"\nloads = [\"io_load\"]\n[knobs.sched_autogroup_enabled]\n",
    )
    .unwrap();
    // A unique argument finds the job's sleep among the machine's processes.
    let mark = format!("{}.{}", 700 + std::process::id() % 100, std::process::id());
    let mut child = Command::new(bin())
        .env("SWEETSPOT_DB", t.path().join("s.db"))
        .arg("--sysfs-root")
        .arg(t.path().join("sys"))
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
