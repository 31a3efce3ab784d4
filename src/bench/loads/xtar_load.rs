//! xtar_load: repeatedly extract a tar archive of the tree (the `tar` crate), removing the
//! previous extraction first.

use super::counter::Counter;
use crate::{Error, Result};
use std::path::Path;

const NAME: &str = "tree.tar";

/// The archive xtar_load extracts: a tar of `fixtures/tree`, written once and fsync'd.
pub(super) fn make_tarball(fixtures: &Path) -> Result<()> {
    let p = fixtures.join(NAME);
    if p.exists() {
        return Ok(());
    }
    let tmp = fixtures.join("tree.tar.part");
    let err = |e| Error::io(format!("writing {}", tmp.display()), e);
    let f = std::fs::File::create(&tmp).map_err(err)?;
    let mut b = tar::Builder::new(f);
    b.append_dir_all("tree", fixtures.join("tree"))
        .map_err(err)?;
    let f = b.into_inner().map_err(err)?;
    f.sync_all().map_err(err)?;
    std::fs::rename(&tmp, &p).map_err(err)
}

pub(super) fn run(fixtures: &Path, out: &Path, counter: &Counter) -> Result<()> {
    let src = fixtures.join(NAME);
    let dest = out.join("x");
    loop {
        match std::fs::remove_dir_all(&dest) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(format!("removing {}", dest.display()), e)),
        }
        let f = std::fs::File::open(&src)
            .map_err(|e| Error::io(format!("opening {}", src.display()), e))?;
        tar::Archive::new(std::io::BufReader::new(f))
            .unpack(&dest)
            .map_err(|e| {
                Error::io(
                    format!("extracting {} to {}", src.display(), dest.display()),
                    e,
                )
            })?;
        counter.add(1);
    }
}
