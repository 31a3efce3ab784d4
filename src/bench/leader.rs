//! A user's shell command (a `[benchmark]` command, `--job`) in its own process group, with a
//! watchdog that takes the whole group down if sweetspot is SIGKILLed.
//!
//! Why: the group's leader, `sh -c COMMAND`, gets a parent-death SIGKILL ([`super::group`]),
//! but that signal reaches the leader alone, and what the command had started (a `sleep`, an
//! fio, a load generator) ran on as an orphan. So between fork and exec the leader clones a
//! *watchdog* into its group, a bare copy of itself that never execs:
//!
//! - It is sweetspot's child, not the command's (`CLONE_PARENT`): a command that execs a
//!   program which waits for every child (`exec perl …`, or a shell that execs its last
//!   command) would otherwise wait for it forever.
//! - Its parent-death signal is `death_signal`, a real-time signal no command sends to a
//!   group; its handler SIGKILLs the group (`kill(0, SIGKILL)`). It fires when the thread of
//!   sweetspot that spawned the group ends, which a SIGKILL of sweetspot does; the leader
//!   dies of its own parent-death SIGKILL then.
//! - It ignores the signals a command or a service manager sends a whole group (SIGHUP,
//!   SIGINT, SIGQUIT, SIGTERM, SIGUSR1/2, SIGALRM, SIGPIPE, job control), so `kill 0` does not
//!   remove the guard. Every signal is blocked from before the clone until those dispositions
//!   are set, so a signal the command sends at once cannot reach it half set up.
//! - It closes every file descriptor first, so it holds no file, pipe or lock of sweetspot's
//!   (std's exec-error pipe among them, whose EOF `spawn` waits for), and it makes only
//!   async-signal-safe calls (signal-safety(7)) until it is killed: [`Group::finish`] kills
//!   and reaps it with the rest of the group. When the spawn fails (exec's E2BIG, say), its
//!   pid, sent over a pipe, lets [`spawn`] kill and reap it.
//! - The command itself is unchanged: `sh -c COMMAND` still leads the group (`$$` is its
//!   group id, so `kill -- -$$` works), with the signal dispositions, mask and exit it had.
//!   (A first version put sweetspot's own binary in front as the leader; a review found that
//!   it died of a group's SIGTERM before the command's trap ran, broke `kill -- -$$`, and left
//!   signals 32 and 33 ignored in the command.)
//!
//! Its memory is a copy-on-write image of sweetspot's at the clone, so a page sweetspot writes
//! while the command runs is copied once: at most sweetspot's anonymous memory (0.9 MiB in the
//! daemon, `docs/footprint.md`); its code pages are shared.
//!
//! Not covered: a command that moves its children to another session or group (`setsid`,
//! coreutils `timeout`) escapes the watchdog, as it escapes [`Group::finish`]'s group kill; a
//! group stopped with SIGSTOP takes the signal when it is continued.

use super::group::Group;
use crate::{Error, Result};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Signals a whole group may be sent, which the watchdog ignores.
const IGNORED: [libc::c_int; 11] = [
    libc::SIGHUP,
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

/// The watchdog's parent-death signal: SIGRTMAX − 2, a real-time signal no command sends to
/// its group (glibc keeps the lowest ones, 32 and 33, for itself).
pub(crate) fn death_signal() -> libc::c_int {
    libc::SIGRTMAX() - 2
}

/// The watchdog's handler of [`death_signal`]: SIGKILLs its group, itself included.
extern "C" fn on_parent_death(_: libc::c_int) {
    // SAFETY: kill(2) is async-signal-safe.
    unsafe {
        libc::kill(0, libc::SIGKILL);
    }
}

/// The watchdog's body, in the clone made between fork and exec: never returns. `parent` is
/// sweetspot's pid, `death` [`death_signal`]; every signal is blocked on entry.
///
/// # Safety
/// Only async-signal-safe calls: it runs in a copy of one thread of a multi-threaded process.
unsafe fn watch(parent: libc::pid_t, death: libc::c_int) -> ! {
    // SAFETY: close_range(2), close(2), getrlimit(2), sigaction(2), sigprocmask(2), prctl(2),
    // getppid(2), kill(2) and pause(2) are plain system calls; nothing is allocated.
    unsafe {
        if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
            // Before Linux 5.9: close them one by one, up to the limit.
            let mut lim: libc::rlimit = std::mem::zeroed();
            let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
                lim.rlim_cur.min(1 << 20) as libc::c_int
            } else {
                1 << 16
            };
            for fd in 0..top {
                libc::close(fd);
            }
        }
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = libc::SIG_IGN;
        for s in IGNORED {
            libc::sigaction(s, &act, std::ptr::null_mut());
        }
        act.sa_sigaction = on_parent_death as *const () as libc::sighandler_t;
        libc::sigaction(death, &act, std::ptr::null_mut());
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::prctl(libc::PR_SET_PDEATHSIG, death);
        // Sweetspot died before the prctl: no signal is coming.
        if libc::getppid() != parent {
            libc::kill(0, libc::SIGKILL);
        }
        loop {
            libc::pause();
        }
    }
}

/// Spawns `cmd`, a user's `sh -c COMMAND` with its working directory, stdio and `pre_exec`
/// settings (nice, CPU affinity: the command inherits them) in place, as [`Group::spawn`]
/// does, with its watchdog (see the module docs). Errors: the shell or the watchdog cannot be
/// started (exit 1); the watchdog of a failed spawn is killed and reaped.
pub fn spawn(cmd: &mut Command) -> Result<Group> {
    let (rx, tx) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|e| Error::io("a pipe for the watchdog", e.into()))?;
    let txfd: RawFd = tx.as_raw_fd();
    let death = death_signal();
    // SAFETY: between fork and exec the closure makes only async-signal-safe calls
    // (sigprocmask, getppid, the clone system call, write, and in the watchdog those of
    // `watch`); it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::sigprocmask(libc::SIG_BLOCK, &all, &mut old);
            let parent = libc::getppid();
            let flags = (libc::CLONE_PARENT as libc::c_ulong) | (libc::SIGCHLD as libc::c_ulong);
            let pid = libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize);
            match pid {
                -1 => {
                    let e = std::io::Error::last_os_error();
                    libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
                    Err(e)
                }
                0 => watch(parent, death),
                pid => {
                    let bytes = (pid as i32).to_ne_bytes();
                    libc::write(txfd, bytes.as_ptr().cast(), bytes.len());
                    libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
                    Ok(())
                }
            }
        });
    }
    let spawned = Group::spawn(cmd);
    drop(tx);
    if spawned.is_err() {
        let mut buf = [0u8; 4];
        if nix::unistd::read(&rx, &mut buf) == Ok(4) {
            let pid = nix::unistd::Pid::from_raw(i32::from_ne_bytes(buf));
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            let _ = nix::sys::wait::waitpid(pid, None);
        }
    }
    spawned
}
