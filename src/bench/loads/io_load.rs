//! io_load / io_other: keep writing a large file (contest's `dd if=/dev/zero of=file`), in
//! 1 MiB writes; each pass over the file ends with `fdatasync`, so the writer cannot run ahead
//! of the device by more than one file (RAM here may be far larger than the file).

use super::counter::Counter;
use crate::{Error, Result};
use std::io::Write;
use std::path::Path;

pub(super) fn run(out: &Path, mib: u64, counter: &Counter) -> Result<()> {
    let p = out.join("io_load.dat");
    let mut buf = vec![0u8; 1 << 20];
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
    let err = |e| Error::io(format!("writing {}", p.display()), e);
    loop {
        let mut f = std::fs::File::create(&p).map_err(err)?;
        for _ in 0..mib.max(1) {
            f.write_all(&buf).map_err(err)?;
            counter.add(1);
        }
        f.sync_data().map_err(err)?;
    }
}
