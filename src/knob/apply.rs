//! The journaled apply path and restore: the safe write path for every feature.
//! Filled in by the Foundation issue.

use crate::device::Device;
use crate::knob::Setting;
use crate::store::Store;
use crate::sysroot::SysRoot;
use crate::{Error, Result};

/// Applies `setting` to `device` (device knobs) and the host (vm knobs), journaling under
/// `owner` (`"set"` or `"tune:<id>"`) every knob the writes can change before the first write.
/// Order: scheduler → nr_requests → iosched → other queue → vm. Every value is validated first
/// (exit 2, nothing changed); each write is read back (NotHonoured on mismatch).
pub fn apply(
    store: &mut Store,
    root: &SysRoot,
    device: &Device,
    setting: &Setting,
    owner: &str,
) -> Result<()> {
    let _ = (store, root, device, setting, owner);
    Err(Error::Failed("journaled apply is not built yet".into()))
}

/// Restores open journal entries in apply order and marks them restored. `device` limits it to
/// one device (kernel name); `owner` to one owner (a tune restores only its own entries). With
/// several open entries for one file, the oldest (the true original) is written.
/// Returns how many knobs were written back.
pub fn restore(
    store: &mut Store,
    root: &SysRoot,
    device: Option<&str>,
    owner: Option<&str>,
) -> Result<usize> {
    let _ = (store, root, device, owner);
    Err(Error::Failed("restore is not built yet".into()))
}
