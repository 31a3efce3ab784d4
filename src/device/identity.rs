//! A disk's stable identity, without udev. Kernel names (sda, nvme0n1) are not stable across
//! boots, so sweet spots are keyed by, in order of preference:
//!
//! 1. `loop:<backing file>` for a loop device (`loop/backing_file`);
//! 2. `wwid:<wwid>` (`<disk>/wwid` for NVMe, `<disk>/device/wwid` for SCSI);
//! 3. `model-serial:<model>:<serial>` (`device/model` and `device/serial` or `<disk>/serial`);
//! 4. `by-path:<path>`: where `<disk>/device` resolves under `/sys/devices` (the bus path);
//! 5. `virtual:<name>` for a device with none of these (zram, ram): unstable, said so.

use super::read_attr;
use crate::sysroot::SysRoot;

/// The stable identity of the whole disk `name` (see the module docs for the order).
pub fn identity(root: &SysRoot, name: &str) -> String {
    let base = root.block_dev(name);
    let nonempty = |p: std::path::PathBuf| read_attr(&p).filter(|s| !s.is_empty());
    if let Some(file) = nonempty(base.join("loop/backing_file")) {
        return format!("loop:{file}");
    }
    if let Some(w) = nonempty(base.join("wwid")).or_else(|| nonempty(base.join("device/wwid"))) {
        return format!("wwid:{w}");
    }
    let serial = nonempty(base.join("device/serial")).or_else(|| nonempty(base.join("serial")));
    if let (Some(model), Some(serial)) = (nonempty(base.join("device/model")), serial) {
        return format!("model-serial:{model}:{serial}");
    }
    if let Ok(target) = std::fs::canonicalize(base.join("device")) {
        let devices = std::fs::canonicalize(root.sys.join("devices"))
            .unwrap_or_else(|_| root.sys.join("devices"));
        let rel = target.strip_prefix(&devices).unwrap_or(&target);
        return format!("by-path:{}", rel.display());
    }
    format!("virtual:{name}")
}
