//! Child processes of a run, each the leader of its own process group: the reference job and
//! the background load.
//!
//! - Spawned with `process_group(0)`, so a terminal's Ctrl-C reaches only sweetspot, which then
//!   stops them itself, and so the whole group (a load's ring of relays, dbench's clients, a
//!   user job's background processes) can be stopped with one `kill(-pgid, SIGKILL)`.
//! - The leader's exit is observed with `waitid(WNOWAIT)`: it stays a zombie until the group has
//!   been killed, so its pid (= pgid) cannot be reused by another group in between.
//! - sweetspot makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`), so members orphaned by
//!   the kill are reparented to it and reaped with `wait4(2)`. Their rusage is added to the
//!   leader's (`wait4` reports the leader's own usage plus every child it reaped), which makes a
//!   load's CPU time exact for the whole group.
//! - The leader gets `PR_SET_PDEATHSIG(SIGKILL)`: if sweetspot itself is killed with SIGKILL
//!   (which it cannot catch), the job and the load die with it instead of running on as
//!   orphans (an io_load would otherwise write forever). prctl(2): the signal fires when the
//!   spawning *thread* exits, so a group must not outlive the thread that spawned it. It
//!   reaches the leader alone: a user's shell command, whose own children would run on,
//!   gets a watchdog that takes its whole group down ([`super::leader`]).

use crate::{Error, Result};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

/// How a group's leader ended and what the group used.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Exit {
    /// Wall time from spawn to the leader's exit (or to the kill), s.
    pub wall_s: f64,
    /// user + sys CPU time of the leader, its reaped children and every reaped member, s.
    pub cpu_s: f64,
    /// Exit code, when the leader exited by itself.
    pub code: Option<i32>,
    /// The signal that ended the leader, if one did (9 when sweetspot killed it).
    pub signal: Option<i32>,
}

impl Exit {
    /// CPU% = cpu / wall × 100 (contest's CPU% and LCPU%).
    pub(crate) fn cpu_pct(&self) -> f64 {
        if self.wall_s > 0.0 {
            100.0 * self.cpu_s / self.wall_s
        } else {
            0.0
        }
    }
}

/// A running process group (see the module docs). Dropping it kills and reaps the group.
#[derive(Debug)]
pub struct Group {
    pid: i32,
    started: Instant,
    ended: Option<Instant>,
    done: Option<Exit>,
}

/// Makes this process a child subreaper once (Linux ≥ 3.4); failure only costs accuracy of
/// LCPU% for multi-process loads, so it is logged, not fatal.
fn ensure_subreaper() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
            tracing::warn!("cannot become a child subreaper ({e}); LCPU% may miss orphans");
        }
    });
}

impl Group {
    /// Spawns `cmd` as the leader of a new process group. Stdio is whatever `cmd` says.
    /// The leader is SIGKILLed by the kernel if this thread dies first (see the module docs).
    pub fn spawn(cmd: &mut Command) -> Result<Group> {
        ensure_subreaper();
        cmd.process_group(0);
        let parent = nix::unistd::getpid().as_raw();
        // SAFETY: the closure runs between fork and exec and only makes two
        // async-signal-safe system calls (prctl, getppid); it allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent died before the prctl took effect: do not start at all.
                if libc::getppid() != parent {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| Error::io(format!("starting {:?}", cmd.get_program()), e))?;
        let pid = child.id() as i32;
        // std's Child never reaps on drop; from here on the pid is ours to wait for.
        drop(child);
        Ok(Group {
            pid,
            started: Instant::now(),
            ended: None,
            done: None,
        })
    }

    /// The leader's pid, which is also the group id.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// True once the leader has exited (it is left a zombie until [`Group::finish`]).
    pub(crate) fn exited(&mut self) -> bool {
        if self.ended.is_some() || self.done.is_some() {
            return true;
        }
        // SAFETY: waitid with a zeroed siginfo out-parameter; WNOWAIT leaves the zombie.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                self.pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: si_pid is valid to read for a WEXITED result (0 when nothing exited yet).
        let exited = r == 0 && unsafe { info.si_pid() } == self.pid;
        let gone = r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD);
        if exited || gone {
            self.ended = Some(Instant::now());
        }
        exited || gone
    }

    /// Waits until the leader exits, polling every `every` and checking
    /// [`crate::signals::abort_run`]. When the run must be abandoned, the group is killed and
    /// reaped and the result is [`Error::Interrupted`].
    pub fn wait(&mut self, every: Duration) -> Result<()> {
        while !self.exited() {
            if crate::signals::abort_run() {
                self.finish();
                return Err(Error::Interrupted);
            }
            std::thread::sleep(every);
        }
        Ok(())
    }

    /// Sleeps `d` unless the leader exits first (returns false then) or an interrupt arrives
    /// ([`Error::Interrupted`], after killing the group).
    pub fn sleep_while_running(&mut self, d: Duration) -> Result<bool> {
        let until = Instant::now() + d;
        while Instant::now() < until {
            if self.exited() {
                return Ok(false);
            }
            if crate::signals::abort_run() {
                self.finish();
                return Err(Error::Interrupted);
            }
            std::thread::sleep(Duration::from_millis(10).min(until - Instant::now()));
        }
        Ok(!self.exited())
    }

    /// Kills the whole group with SIGKILL (also when the leader already exited, to stop strays),
    /// reaps the leader and every member, and returns the leader's exit and the group's CPU
    /// time. Idempotent.
    pub fn finish(&mut self) -> Exit {
        if let Some(done) = self.done {
            return done;
        }
        let before: Vec<i32> = members(self.pid)
            .into_iter()
            .filter(|&p| p != self.pid)
            .collect();
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.pid),
            nix::sys::signal::Signal::SIGKILL,
        );
        let ended = *self.ended.get_or_insert_with(Instant::now);
        let (status, mut cpu_s) = reap(self.pid, true).unwrap_or((0, 0.0));
        // Members orphaned by the kill come to us (subreaper); catch late forks too.
        let mut pending = before;
        pending.extend(members(self.pid).into_iter().filter(|&p| p != self.pid));
        pending.sort_unstable();
        pending.dedup();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !pending.is_empty() && Instant::now() < deadline {
            pending.retain(|&p| match reap(p, false) {
                Some((_, cpu)) => {
                    cpu_s += cpu;
                    false
                }
                None => in_group(p, self.pid),
            });
            if !pending.is_empty() {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        if !pending.is_empty() {
            tracing::warn!("process group {}: members {pending:?} not reaped", self.pid);
        }
        let exit = Exit {
            wall_s: ended.duration_since(self.started).as_secs_f64(),
            cpu_s,
            code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
            signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
        };
        self.done = Some(exit);
        exit
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.finish();
    }
}

/// `wait4(pid)` (blocking when `block`): the wait status and user+sys CPU s, or None when the
/// pid is not (yet) a child of ours or has not exited.
fn reap(pid: i32, block: bool) -> Option<(i32, f64)> {
    let flags = if block { 0 } else { libc::WNOHANG };
    loop {
        let mut status = 0;
        // SAFETY: plain wait4 with out-parameters we own.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::wait4(pid, &mut status, flags, &mut ru) };
        if r == pid {
            let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
            return Some((status, tv(ru.ru_utime) + tv(ru.ru_stime)));
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        return None;
    }
}

/// Fields of `/proc/<pid>/stat` after the command name: (state, ppid, pgrp).
fn stat_of(pid: i32) -> Option<(char, i32, i32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

fn in_group(pid: i32, pgid: i32) -> bool {
    stat_of(pid).is_some_and(|(_, _, g)| g == pgid)
}

/// Every process (zombies included) whose process group is `pgid`, from `/proc`.
pub fn members(pgid: i32) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&p| in_group(p, pgid))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kills_the_whole_group_and_reaps_it() {
        let mut g =
            Group::spawn(Command::new("sh").args(["-c", "sleep 30 & sleep 30 & wait"])).unwrap();
        let pgid = g.pid();
        std::thread::sleep(Duration::from_millis(200));
        assert!(members(pgid).len() >= 3, "{:?}", members(pgid));
        assert!(g.sleep_while_running(Duration::from_millis(20)).unwrap());
        let e = g.finish();
        assert_eq!(e.signal, Some(9));
        assert!(e.wall_s >= 0.2 && e.wall_s < 5.0, "{e:?}");
        assert!(members(pgid).is_empty(), "{:?}", members(pgid));
    }

    #[test]
    fn times_a_cpu_bound_child_and_counts_its_cpu() {
        let mut g = Group::spawn(Command::new("sh").args([
            "-c",
            "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exit 3",
        ]))
        .unwrap();
        g.wait(Duration::from_millis(2)).unwrap();
        let e = g.finish();
        assert_eq!(e.code, Some(3));
        assert!(e.cpu_s > 0.05, "{e:?}");
        // One single-threaded child: at most one core. No lower bound on the share: on a busy
        // 2-core machine (parallel tests, CI) it got 38% of the wall time.
        assert!(e.cpu_pct() <= 105.0, "{e:?}");
        assert!(
            (e.cpu_pct() - 100.0 * e.cpu_s / e.wall_s).abs() < 1e-9,
            "{e:?}"
        );
        assert_eq!(g.finish(), e, "idempotent");
    }

    #[test]
    fn leader_dies_with_the_thread_that_spawned_it() {
        // As if sweetspot were SIGKILLed: the spawning thread ends without Drop running.
        let pid = std::thread::spawn(|| {
            let g = Group::spawn(Command::new("sleep").arg("30")).unwrap();
            let pid = g.pid();
            std::mem::forget(g);
            pid
        })
        .join()
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while stat_of(pid).is_some_and(|(st, _, _)| st != 'Z') && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let st = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None).unwrap();
        assert_eq!(
            st,
            nix::sys::wait::WaitStatus::Signaled(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
                false
            )
        );
    }

    #[test]
    fn drop_kills_strays() {
        let pgid = {
            let g = Group::spawn(Command::new("sleep").arg("30")).unwrap();
            g.pid()
        };
        assert!(members(pgid).is_empty());
    }
}
