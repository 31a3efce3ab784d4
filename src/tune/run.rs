//! The `tune` command's work around the optimiser (filled in below).

use crate::Result;
use crate::store::Store;
use crate::sysroot::SysRoot;

/// Finds unfinished tunes whose process is gone and restores their devices first.
pub fn recover(store: &mut Store, root: &SysRoot) -> Result<usize> {
    let _ = (store, root);
    Ok(0)
}
