//! ctar_load: repeatedly create a tar archive of the tree (the `tar` crate).

use super::counter::Counter;
use crate::{Error, Result};
use std::path::Path;

pub(super) fn run(fixtures: &Path, out: &Path, counter: &Counter) -> Result<()> {
    let tree = fixtures.join("tree");
    let p = out.join("ctar.tar");
    let err = |e| Error::io(format!("writing {}", p.display()), e);
    loop {
        let f = std::fs::File::create(&p).map_err(err)?;
        let mut b = tar::Builder::new(std::io::BufWriter::new(f));
        b.append_dir_all("tree", &tree).map_err(err)?;
        b.into_inner()
            .and_then(|w| w.into_inner().map_err(|e| e.into_error()))
            .map_err(err)?;
        counter.add(1);
    }
}
