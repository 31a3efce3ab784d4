//! A user's shell command (a `[benchmark]` command, `--job`) in its own process group, with a
//! watchdog that takes the whole group down if sweetspot is SIGKILLed.
//!
//! Why: the group's leader, `sh -c COMMAND`, gets a parent-death SIGKILL ([`super::group`]),
//! but that signal reaches the leader alone, and what the command had started (a `sleep`, an
//! fio, a load generator) ran on as an orphan. So between fork and exec the leader forks a
//! *watchdog*, a bare copy of itself that never execs, in the same group:
//!
//! - Its parent-death signal is SIGHUP, and its handler SIGKILLs the group (`kill(0,
//!   SIGKILL)`) when its parent, the leader, is gone (`getppid(2)` changed). The leader dies
//!   with sweetspot, so the group dies with the leader. A leader that exits by itself also ends
//!   the group, which [`Group::finish`] did anyway. A `kill -HUP 0` by the command leaves the
//!   watchdog in place.
//! - It ignores the signals a command or a service manager sends a whole group (SIGINT,
//!   SIGQUIT, SIGTERM, SIGUSR1/2, SIGALRM, SIGPIPE, job control), so `kill 0` does not remove
//!   the guard; it closes every file descriptor first, so it holds no file, pipe or lock of
//!   sweetspot's (std's exec-error pipe among them, whose EOF `spawn` waits for); and it only
//!   makes async-signal-safe calls (signal-safety(7)) until it is killed.
//! - The command itself is unchanged: `sh -c COMMAND` still leads the group (`$$` is its
//!   group id, so `kill -- -$$` works), with the signal dispositions, mask and exit it had.
//!   (A first version put sweetspot's own binary in front as the leader; a review found that
//!   it died of a group's SIGTERM before the command's trap ran, broke `kill -- -$$`, and left
//!   signals 32 and 33 ignored in the command.)
//!
//! The watchdog is one more member of the group: idle (`pause(2)`), reaped with the rest. Its
//! memory is a copy-on-write image of sweetspot's at the fork, so a page sweetspot writes
//! while the command runs is copied once: at most sweetspot's anonymous memory (0.9 MiB in the
//! daemon, `examples/daemon-footprint.md`); its code pages are shared.

use super::group::Group;
use crate::Result;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};

/// The watchdog's leader (set in the watchdog only, after its fork).
static LEADER: AtomicI32 = AtomicI32::new(0);

/// Signals a whole group may be sent, which the watchdog ignores.
const IGNORED: [libc::c_int; 10] = [
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGPIPE,
    libc::SIGTSTP,
    libc::SIGTTIN,
    libc::SIGTTOU,
];

/// The watchdog's SIGHUP handler: SIGKILLs its group once its leader is gone.
extern "C" fn on_hangup(_: libc::c_int) {
    // SAFETY: getppid(2) and kill(2) are async-signal-safe; an atomic load takes no lock.
    unsafe {
        if libc::getppid() != LEADER.load(Ordering::SeqCst) {
            libc::kill(0, libc::SIGKILL);
        }
    }
}

/// The watchdog's body, in the child of a fork made between fork and exec: never returns.
///
/// # Safety
/// Only async-signal-safe calls: it runs in a copy of one thread of a multi-threaded process.
unsafe fn watch(leader: libc::pid_t) -> ! {
    // SAFETY: close_range(2), close(2), sigaction(2), sigprocmask(2), prctl(2), getppid(2),
    // kill(2) and pause(2) are plain system calls; nothing is allocated.
    unsafe {
        LEADER.store(leader, Ordering::SeqCst);
        if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
            // Before Linux 5.9: close them one by one.
            for fd in 0..4096 {
                libc::close(fd);
            }
        }
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = libc::SIG_IGN;
        for s in IGNORED {
            libc::sigaction(s, &act, std::ptr::null_mut());
        }
        act.sa_sigaction = on_hangup as *const () as libc::sighandler_t;
        libc::sigaction(libc::SIGHUP, &act, std::ptr::null_mut());
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGHUP);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGHUP);
        // The leader died before the prctl: no signal is coming.
        if libc::getppid() != leader {
            libc::kill(0, libc::SIGKILL);
        }
        loop {
            libc::pause();
        }
    }
}

/// Spawns `sh -c COMMAND` as the leader of its own process group ([`Group`]) with its
/// watchdog (see the module docs), `configure` applied first (working directory, stdio,
/// `pre_exec` settings such as nice and CPU affinity, which the command inherits).
/// Errors: the shell or the watchdog cannot be started (exit 1).
pub fn spawn(command: &str, configure: impl FnOnce(&mut Command)) -> Result<Group> {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", command]);
    configure(&mut cmd);
    // SAFETY: between fork and exec the closure makes only async-signal-safe calls (getpid,
    // fork, and in the watchdog those of `watch`); it allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            let leader = libc::getpid();
            match libc::fork() {
                -1 => Err(std::io::Error::last_os_error()),
                0 => watch(leader),
                _ => Ok(()),
            }
        });
    }
    Group::spawn(&mut cmd)
}
