//! Block devices: whole disks under `/sys/block`, their stable identity and their mounts.
//! Works without udev: everything is read from sysfs and `/proc/self/mountinfo`.
//!
//! - [`identity`]: the stable identity (wwid, model+serial, by-path, loop backing file).
//! - [`mountinfo`]: which filesystems are mounted on a disk or its partitions.
//! - [`stat`]: a disk's own I/O counters (bytes a tune wrote to it).

pub mod identity;
pub mod mountinfo;
pub mod stat;

use crate::sysroot::SysRoot;
use crate::{Error, Result};
use serde::Serialize;
use std::path::Path;

/// A whole disk as found under `/sys/block`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Device {
    /// Kernel name, e.g. `sda`, `nvme0n1`, `loop0`.
    pub name: String,
    /// Stable identity: `wwid:...`, `model-serial:...`, `by-path:...`, or `loop:<backing file>`.
    pub identity: String,
    /// `major:minor`.
    pub dev: String,
    /// `queue/rotational`.
    pub rotational: bool,
    /// `queue/zoned`: `none`, `host-aware` or `host-managed`.
    pub zoned: String,
    /// Schedulers offered (`queue/scheduler`). Empty for a bio-based device (zram, some
    /// device-mapper targets) that has no `queue/scheduler` file.
    pub schedulers: Vec<String>,
    /// The active scheduler (the bracketed one); `none` when the device has no scheduler file.
    pub scheduler: String,
    /// Size in bytes (`size` × 512).
    pub size_bytes: u64,
    /// True when the device's `queue/` files can be written by this process.
    pub writable: bool,
    /// Mounted filesystems on it or its partitions (from `/proc/self/mountinfo`).
    pub mounts: Vec<Mount>,
}

/// A mounted filesystem on a device.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Mount {
    /// The partition or disk mounted, e.g. `sda1`.
    pub source: String,
    /// Mount point.
    pub target: std::path::PathBuf,
    /// Filesystem type, e.g. `ext4`.
    pub fstype: String,
    /// Mounted read-write.
    pub writable: bool,
}

impl Device {
    /// A fingerprint of what the device offers (schedulers, rotational, zoned, size), as JSON
    /// text: stored with the identity so a changed device is noticed.
    pub(crate) fn fingerprint(&self) -> String {
        serde_json::json!({
            "schedulers": self.schedulers,
            "rotational": self.rotational,
            "zoned": self.zoned,
            "size_bytes": self.size_bytes,
        })
        .to_string()
    }
}

/// Reads a sysfs/procfs attribute, trimmed; `None` when it is missing or unreadable.
pub(crate) fn read_attr(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Parses `queue/scheduler` (`[none] mq-deadline kyber bfq`, or legacy
/// `noop anticipatory deadline [cfq]`): the offered names and the bracketed active one.
pub(crate) fn parse_scheduler(text: &str) -> (Vec<String>, Option<String>) {
    let mut offered = Vec::new();
    let mut active = None;
    for word in text.split_whitespace() {
        match word.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
            Some(name) => {
                active = Some(name.to_string());
                offered.push(name.to_string());
            }
            None => offered.push(word.to_string()),
        }
    }
    (offered, active)
}

/// Every whole disk under `<sys>/block`, sorted by name. Unattached loop devices (no backing
/// file) are left out. A device that cannot be read is skipped with a warning, not fatal.
pub(crate) fn list(root: &SysRoot) -> Result<Vec<Device>> {
    let dir = root.block();
    let entries =
        std::fs::read_dir(&dir).map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mounts = mountinfo::read(root);
    let mut out = Vec::new();
    for name in names {
        if name.starts_with("loop") && !root.block_dev(&name).join("loop/backing_file").exists() {
            continue;
        }
        match read_device(root, &name, &mounts) {
            Ok(d) => out.push(d),
            Err(e) => tracing::warn!("skipping {name}: {e}"),
        }
    }
    Ok(out)
}

/// Checks a device name given by the user: no `/` (beyond a leading `/dev/`), no `..`, not
/// empty. Returns the bare kernel name. Errors: [`Error::BadInput`] (exit 2).
pub(crate) fn check_name(name: &str) -> Result<&str> {
    let bare = name.strip_prefix("/dev/").unwrap_or(name);
    if bare.is_empty() || bare.contains('/') || bare.contains("..") || bare.starts_with('.') {
        return Err(Error::BadInput(format!(
            "bad device name '{name}': give a kernel name such as sda, nvme0n1 or loop0"
        )));
    }
    Ok(bare)
}

/// The whole disk named `name` (a leading `/dev/` is accepted); a partition name resolves to
/// its parent disk. Errors: exit 2 for an unknown name or one containing `/` or `..`.
pub fn find(root: &SysRoot, name: &str) -> Result<Device> {
    let bare = check_name(name)?;
    let disk = if root.block_dev(bare).join("dev").exists() {
        bare.to_string()
    } else {
        parent_of_partition(root, bare).ok_or_else(|| unknown_device(root, name))?
    };
    read_device(root, &disk, &mountinfo::read(root))
}

fn unknown_device(root: &SysRoot, name: &str) -> Error {
    let known = list(root)
        .map(|ds| {
            ds.into_iter()
                .map(|d| d.name)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    Error::BadInput(format!("unknown device '{name}'; devices here: {known}"))
}

/// The disk under `<sys>/block` that has a partition directory called `part`.
fn parent_of_partition(root: &SysRoot, part: &str) -> Option<String> {
    let entries = std::fs::read_dir(root.block()).ok()?;
    entries
        .filter_map(|e| e.ok())
        .find(|e| e.path().join(part).join("partition").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
}

fn read_device(root: &SysRoot, name: &str, mounts: &[mountinfo::MountEntry]) -> Result<Device> {
    let base = root.block_dev(name);
    let dev = read_attr(&base.join("dev"))
        .ok_or_else(|| Error::Failed(format!("{}: no dev file", base.display())))?;
    let q = base.join("queue");
    let (schedulers, active) = read_attr(&q.join("scheduler"))
        .map(|s| parse_scheduler(&s))
        .unwrap_or_default();
    let sectors: u64 = read_attr(&base.join("size"))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let probe = if q.join("scheduler").exists() {
        q.join("scheduler")
    } else {
        q.join("read_ahead_kb")
    };
    Ok(Device {
        name: name.to_string(),
        identity: identity::identity(root, name),
        rotational: read_attr(&q.join("rotational")).as_deref() == Some("1"),
        zoned: read_attr(&q.join("zoned")).unwrap_or_else(|| "none".into()),
        scheduler: active.unwrap_or_else(|| "none".into()),
        schedulers,
        size_bytes: sectors * 512,
        writable: nix::unistd::access(&probe, nix::unistd::AccessFlags::W_OK).is_ok(),
        mounts: mountinfo::mounts_on(&base, &dev, mounts),
        dev,
    })
}

/// The running kernel's release (`uname -r`).
pub fn kernel_release() -> String {
    nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown".into())
}

#[cfg(test)]
mod tests;
