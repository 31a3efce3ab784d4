//! list_load: walk a large tree and `lstat` every entry (contest's `ls -lR`).

use super::counter::Counter;
use crate::{Error, Result};
use std::path::Path;

pub(super) fn run(tree: &Path, counter: &Counter) -> Result<()> {
    loop {
        let n = walk(tree)?;
        if n == 0 {
            return Err(Error::Failed(format!("{}: empty tree", tree.display())));
        }
        counter.add(1);
    }
}

/// Entries seen under `dir`.
fn walk(dir: &Path) -> Result<u64> {
    let err = |e| Error::io(format!("listing {}", dir.display()), e);
    let mut n = 0;
    for e in std::fs::read_dir(dir).map_err(err)? {
        let e = e.map_err(err)?;
        let m = std::fs::symlink_metadata(e.path()).map_err(err)?;
        n += 1;
        if m.is_dir() {
            n += walk(&e.path())?;
        }
    }
    Ok(n)
}
