//! read_load: re-read a large file cold, in 1 MiB reads; the file's pages are evicted with
//! `posix_fadvise(DONTNEED)` before every pass.

use super::counter::Counter;
use crate::{Error, Result};
use std::io::{Read, Write};
use std::path::Path;

const NAME: &str = "read_load.dat";

/// The file read_load reads: `mib` MiB, written once and fsync'd.
pub(super) fn make_file(fixtures: &Path, mib: u64) -> Result<()> {
    let p = fixtures.join(NAME);
    if p.metadata().map(|m| m.len() == mib << 20).unwrap_or(false) {
        return Ok(());
    }
    std::fs::create_dir_all(fixtures)
        .map_err(|e| Error::io(format!("creating {}", fixtures.display()), e))?;
    let err = |e| Error::io(format!("writing {}", p.display()), e);
    let mut f = std::fs::File::create(&p).map_err(err)?;
    let buf: Vec<u8> = (0..1usize << 20).map(|i| (i % 253) as u8).collect();
    for _ in 0..mib {
        if crate::signals::interrupted() {
            return Err(Error::Interrupted);
        }
        f.write_all(&buf).map_err(err)?;
    }
    f.sync_all().map_err(err)
}

pub(super) fn run(fixtures: &Path, counter: &Counter) -> Result<()> {
    let p = fixtures.join(NAME);
    let err = |e| Error::io(format!("reading {}", p.display()), e);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let mut f = std::fs::File::open(&p).map_err(err)?;
        crate::bench::fsutil::evict_file(&f).map_err(err)?;
        loop {
            let mut got = 0;
            while got < buf.len() {
                let n = f.read(&mut buf[got..]).map_err(err)?;
                if n == 0 {
                    break;
                }
                got += n;
            }
            if got == 0 {
                break;
            }
            counter.add(1);
        }
    }
}
