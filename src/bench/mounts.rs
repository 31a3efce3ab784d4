//! Mounts and the tools around them, for `--scratch` ([`crate::bench::scratch`]) and the
//! sweep of killed runs' leftovers ([`crate::bench::stale`]): whether something is mounted on
//! a path, killing the processes that use a mount, unmounting (retried, then lazily), and
//! running an external tool (`losetup`, `mkfs.ext4`) with its stderr as the error.

use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// True when something is mounted on `mnt` (per `/proc/self/mountinfo`).
pub(crate) fn mounted(mnt: &Path) -> bool {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    crate::device::mountinfo::parse(&text)
        .iter()
        .any(|m| m.target == mnt)
}

/// Runs an external tool; a non-zero exit is an error with its stderr.
pub(crate) fn tool(name: &str, args: &[&std::ffi::OsStr]) -> Result<String> {
    let out = Command::new(name)
        .args(args)
        .output()
        .map_err(|e| Error::io(format!("running {name} (is it installed?)"), e))?;
    if !out.status.success() {
        return Err(Error::Failed(format!(
            "{name} {}: {}",
            args.iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `umount`, retried for up to 2 s while busy, then lazily (`MNT_DETACH`) as a last resort.
pub(crate) fn unmount(mnt: &Path) -> Result<()> {
    use nix::mount::{MntFlags, umount2};
    let mut last = nix::errno::Errno::UnknownErrno;
    for _ in 0..20 {
        match umount2(mnt, MntFlags::empty()) {
            Ok(()) => return Ok(()),
            Err(nix::errno::Errno::EINVAL) => return Ok(()), // not mounted
            Err(e) => last = e,
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    tracing::warn!("{}: busy ({last}); detaching lazily", mnt.display());
    umount2(mnt, MntFlags::MNT_DETACH)
        .map_err(|e| Error::io(format!("unmounting {}", mnt.display()), e.into()))
}

/// SIGKILLs every other process whose cwd or an open file is under `mnt` (stray loads), and
/// reaps those that are our children.
pub(crate) fn kill_users(mnt: &Path) {
    let me = std::process::id() as i32;
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return;
    };
    let mut killed = Vec::new();
    for pid in rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()) {
        if pid == me {
            continue;
        }
        let base = PathBuf::from(format!("/proc/{pid}"));
        let uses = |l: PathBuf| std::fs::read_link(l).is_ok_and(|t| t.starts_with(mnt));
        let fds = std::fs::read_dir(base.join("fd"))
            .map(|r| r.flatten().any(|e| uses(e.path())))
            .unwrap_or(false);
        if uses(base.join("cwd")) || fds {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
            killed.push(pid);
        }
    }
    if !killed.is_empty() {
        tracing::warn!("scratch: killed stray processes {killed:?}");
        std::thread::sleep(Duration::from_millis(100));
        for p in killed {
            let _ = nix::sys::wait::waitpid(
                nix::unistd::Pid::from_raw(p),
                Some(nix::sys::wait::WaitPidFlag::WNOHANG),
            );
        }
    }
}
