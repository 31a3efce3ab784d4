//! Block devices: whole disks under `/sys/block`, their stable identity and their mounts.
//! Works without udev. Filled in by the Foundation issue.

use crate::sysroot::SysRoot;
use crate::{Error, Result};
use serde::Serialize;

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
    /// Schedulers offered (`queue/scheduler`).
    pub schedulers: Vec<String>,
    /// The active scheduler (the bracketed one).
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

/// Every whole disk under `<sys>/block`. A device that cannot be read is skipped with a
/// warning, not fatal.
pub fn list(root: &SysRoot) -> Result<Vec<Device>> {
    let _ = root;
    Err(Error::Failed("device discovery is not built yet".into()))
}

/// The whole disk named `name`; a partition name resolves to its parent disk.
/// Errors: exit 2 for an unknown name or one containing `/` or `..`.
pub fn find(root: &SysRoot, name: &str) -> Result<Device> {
    let _ = (root, name);
    Err(Error::Failed("device discovery is not built yet".into()))
}

/// The running kernel's release (`uname -r`).
pub fn kernel_release() -> String {
    nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown".into())
}
