//! The leader of a user's shell command (a `[benchmark]` command, `--job`): `sweetspot
//! __worker shell -- COMMAND`, which runs `sh -c COMMAND` in its own process group and takes
//! the whole group down if sweetspot is SIGKILLed.
//!
//! Why a leader: a group's leader gets a parent-death signal ([`super::group`]), but that
//! signal reaches the leader alone. With `sh -c COMMAND` as the leader, a SIGKILLed sweetspot
//! took only the shell with it, and what the command had started (a `sleep`, an fio, a load
//! generator) ran on as an orphan. The leader here asks for SIGHUP as its parent-death signal
//! ([`spawn`]) and answers it by SIGKILLing its own group (`kill(0, SIGKILL)`), itself
//! included.
//!
//! - The command is a *foreground* child (`sh -c COMMAND`, waited for), not a background job of
//!   a shell: a non-interactive shell starts its background jobs with SIGINT and SIGQUIT
//!   ignored (POSIX, "Shell Command Language" 2.11), which breaks benchmarks that stop a
//!   helper with `kill -INT`. The leader also sets SIGINT and SIGQUIT back to their default
//!   actions before it starts the command.
//! - Any SIGHUP kills the group, as SIGHUP's default action would have killed a `sh -c`
//!   leader: the parent-death signal fires when the *thread* that spawned the group exits
//!   ([`super::group`]), which leaves the parent's pid unchanged, so the leader cannot tell a
//!   parent's death from a `kill -HUP` by its pid.
//! - Its exit is the command's: the same exit code, or death by the same signal (re-raised with
//!   its default action, core dumps off), so a failed run reads as before.

use super::group::Group;
use crate::{Error, Result};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;

/// SIGHUP handler of the leader: SIGKILLs the whole group, the leader included.
extern "C" fn on_hangup(_: libc::c_int) {
    // SAFETY: kill(2) is async-signal-safe (signal-safety(7)).
    unsafe {
        libc::kill(0, libc::SIGKILL);
    }
}

/// Spawns `COMMAND` as a user's shell command in its own process group ([`Group`]), with
/// `configure` applied first (working directory, stdio, `pre_exec` settings such as nice and
/// CPU affinity, all inherited by the command).
///
/// With `leader` (sweetspot's own binary) the group is led by `leader __worker shell --
/// COMMAND` (see the module docs); without it, by `sh -c COMMAND` itself, whose background
/// processes may outlive a SIGKILLed sweetspot (unit tests, which have no sweetspot binary).
/// Errors: the process cannot be started (exit 1).
pub fn spawn(
    command: &str,
    leader: Option<&Path>,
    configure: impl FnOnce(&mut Command),
) -> Result<Group> {
    match leader {
        Some(exe) => {
            let mut cmd = Command::new(exe);
            cmd.args(["__worker", "shell", "--", command]);
            configure(&mut cmd);
            Group::spawn_with(&mut cmd, libc::SIGHUP)
        }
        None => {
            let mut cmd = Command::new("sh");
            cmd.args(["-c", command]);
            configure(&mut cmd);
            Group::spawn(&mut cmd)
        }
    }
}

/// The body of `sweetspot __worker shell -- COMMAND` (see the module docs): runs `sh -c
/// COMMAND`, waits for it, and exits as it did. Returns only on an error: the shell cannot be
/// started (exit 1).
pub fn lead(command: &str) -> Result<()> {
    // SAFETY: installs an async-signal-safe handler (`on_hangup`) and default actions; no other
    // thread runs yet. A parent that died before this line sent a SIGHUP whose default action
    // ended the leader before it started anything.
    unsafe {
        libc::signal(libc::SIGHUP, on_hangup as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGQUIT, libc::SIG_DFL);
    }
    let status = Command::new("sh")
        .arg("-c")
        .arg(command)
        .status()
        .map_err(|e| Error::io("starting sh", e))?;
    if let Some(code) = status.code() {
        std::process::exit(code);
    }
    let sig = status.signal().unwrap_or(libc::SIGKILL);
    // SAFETY: plain system calls on this process: no core file, the default action for `sig`,
    // unblocked, then raised.
    unsafe {
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &none);
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
    }
    // A signal whose default action is not to terminate (SIGCHLD, …) cannot end a shell.
    std::process::exit(128 + sig)
}
