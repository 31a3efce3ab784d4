//! A disk's own I/O counters: `/sys/block/<dev>/stat` (Documentation/block/stat.rst). Its
//! sector fields count 512-byte units whatever the device's logical block size
//! (block/genhd.c `diskstats_show`, `part_stat_read(..., sectors[...])`).

use crate::sysroot::SysRoot;

/// Bytes per sector in the `stat` counters (a fixed 512, `SECTOR_SHIFT` 9 in
/// include/linux/blk_types.h).
pub(crate) const SECTOR_BYTES: u64 = 512;

/// Sectors read (field 3) and written (field 7) of a `stat` line; a missing or unreadable
/// field counts 0.
pub(crate) fn sectors(stat: &str) -> (u64, u64) {
    let f: Vec<u64> = stat
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    (
        f.get(2).copied().unwrap_or(0),
        f.get(6).copied().unwrap_or(0),
    )
}

/// Bytes written to disk `dev` since boot, from `<root.sys>/block/<dev>/stat`; `None` when
/// there is no such file (a fake tree, a simulated device) or it does not read as a stat line.
pub(crate) fn bytes_written(root: &SysRoot, dev: &str) -> Option<u64> {
    let s = std::fs::read_to_string(root.sys.join("block").join(dev).join("stat")).ok()?;
    (s.split_whitespace().count() >= 7).then(|| sectors(&s).1 * SECTOR_BYTES)
}

/// What a piece of work wrote to a disk: its `stat` write counter at the start, read again
/// at the end. Everything written to the disk in between counts, the work's own writes and
/// any other process's (a tune runs on an idle disk).
#[derive(Clone, Debug)]
pub(crate) struct WriteMeter {
    root: SysRoot,
    dev: String,
    start: u64,
}

impl WriteMeter {
    /// Starts counting writes to `dev`; `None` when its counters cannot be read.
    pub(crate) fn start(root: &SysRoot, dev: &str) -> Option<WriteMeter> {
        Some(WriteMeter {
            root: root.clone(),
            dev: dev.to_string(),
            start: bytes_written(root, dev)?,
        })
    }

    /// Bytes written since [`WriteMeter::start`]; `None` when the counters can no longer be
    /// read (the disk is gone). A counter that went down (the device was re-created under
    /// its name, its counters zeroed) counts from zero.
    pub(crate) fn bytes(&self) -> Option<u64> {
        let now = bytes_written(&self.root, &self.dev)?;
        Some(now.checked_sub(self.start).unwrap_or(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stat line of Linux 6.x: 17 fields (reads, merges, sectors, ticks, writes, ...).
    const LINE: &str = "    4381      120   350874     1722     9043     5311   806576    14470        0    12024    16802        0        0        0        0      518      609\n";

    #[test]
    fn sectors_are_fields_3_and_7() {
        assert_eq!(sectors(LINE), (350_874, 806_576));
        assert_eq!(sectors(""), (0, 0));
    }

    #[test]
    fn a_meter_counts_the_bytes_written_since_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::new(dir.path().join("sys"), dir.path().join("proc"));
        let stat = dir.path().join("sys/block/mmcblk0/stat");
        std::fs::create_dir_all(stat.parent().unwrap()).unwrap();
        std::fs::write(&stat, LINE).unwrap();
        let m = WriteMeter::start(&root, "mmcblk0").unwrap();
        assert_eq!(m.bytes(), Some(0));
        // 2048 more sectors written: 1 MiB.
        std::fs::write(&stat, LINE.replace("806576", "808624")).unwrap();
        assert_eq!(m.bytes(), Some(1 << 20));
        // Counters zeroed (a loop device detached and attached again): from zero.
        std::fs::write(&stat, LINE.replace("806576", "4096")).unwrap();
        assert_eq!(m.bytes(), Some(4096 * 512));
        // No such disk, or a file that is not a stat line: nothing to count.
        assert!(WriteMeter::start(&root, "sdz").is_none());
        std::fs::write(&stat, "garbage\n").unwrap();
        assert_eq!(m.bytes(), None);
    }
}
