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

/// light_io_load's writers. S (github.com/Algodev-github/S, `comm_startup_lat`) starts two
/// background writers and, on a rotational disk, caps them; see `docs/judges.md`.
pub(super) const LIGHT_WRITERS: u32 = 2;
/// light_io_load's cap for all its writers together, MiB/s: S's cap on a rotational disk,
/// `MAXRATE=4000` in `comm_startup_lat.sh`, given to fio as `rate=2000k` per writer, and
/// fio's `k` is 1024 (`kb_base=1024`, its default): 4000 KiB/s = 3.906 MiB/s.
pub(super) const LIGHT_MIB_S: f64 = 4000.0 / 1024.0;
/// How often light_io_load writes its filesystem back, s. S's writers (fio, buffered, no
/// fsync) are flushed by a `sync` it starts every 2 s while they run ("increase difficulty
/// by periodically syncing"): without it their pages would sit dirty for up to 30 s
/// (`vm.dirty_expire_centisecs`) and a start-up would seldom meet them at the device. Ours
/// is a `syncfs(2)` of the load's own filesystem, one at a time (S's `sync &` piles up
/// when a sync takes longer than 2 s, and syncs every filesystem of the machine).
pub(super) const LIGHT_SYNC_S: f64 = 2.0;
/// Size of each light writer's file, MiB (at most `--load-mib`): at 2 MiB/s a pass takes 32 s.
pub(super) const LIGHT_MIB: u64 = 64;

/// light_io_load: [`LIGHT_WRITERS`] threads each keep writing their own file as io_load does,
/// paced so that together they write at most [`LIGHT_MIB_S`] MiB/s (each 1 MiB write waits
/// for its slot: writer start + n / rate). A device slower than the cap makes the writers
/// fall behind their slots; they then write as fast as it takes, never in a burst to catch up
/// more than one write. A further thread writes the filesystem back every [`LIGHT_SYNC_S`].
pub(super) fn run_light(out: &Path, mib: u64, counter: &Counter) -> Result<()> {
    let per_writer = LIGHT_MIB_S / f64::from(LIGHT_WRITERS);
    let size = mib.clamp(1, LIGHT_MIB);
    std::thread::scope(|s| {
        let mut writers: Vec<_> = (0..LIGHT_WRITERS)
            .map(|w| {
                s.spawn(move || {
                    paced_writer(
                        &out.join(format!("light_io_load.{w}.dat")),
                        size,
                        per_writer,
                        counter,
                    )
                })
            })
            .collect();
        writers.push(s.spawn(move || {
            loop {
                std::thread::sleep(std::time::Duration::from_secs_f64(LIGHT_SYNC_S));
                crate::bench::fsutil::syncfs(out)?;
            }
        }));
        // Each writer loops until the process is killed; the first error ends the load.
        writers
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(Error::Failed("a light_io_load writer panicked".into()))
                })
            })
            .find(Result::is_err)
            .unwrap_or(Ok(()))
    })
}

/// One paced writer of [`run_light`]: `size` MiB per pass at `mib_s` MiB/s, `fdatasync` per
/// pass.
fn paced_writer(p: &Path, size: u64, mib_s: f64, counter: &Counter) -> Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i % 241) as u8;
    }
    let err = |e| Error::io(format!("writing {}", p.display()), e);
    let interval = std::time::Duration::from_secs_f64(1.0 / mib_s);
    let mut slot = std::time::Instant::now();
    loop {
        let mut f = std::fs::File::create(p).map_err(err)?;
        for _ in 0..size {
            let now = std::time::Instant::now();
            if slot > now {
                std::thread::sleep(slot - now);
            }
            // Behind by more than one write (a device slower than the cap): no burst to catch up.
            slot = (slot + interval).max(now);
            f.write_all(&buf).map_err(err)?;
            counter.add(1);
        }
        f.sync_data().map_err(err)?;
    }
}
