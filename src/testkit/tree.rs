//! Fake sysfs/procfs trees: a current mq-deadline SATA disk, a bfq disk, a legacy 2.6-style cfq
//! disk, an NVMe device offering only `none`, and a fake `/proc/sys/vm`.

use crate::sysroot::SysRoot;
use std::path::Path;

/// A temp dir holding `sys/` and `proc/`; dropped with the test.
pub struct FakeTree {
    /// Keeps the directory alive.
    pub dir: tempfile::TempDir,
    /// Roots pointing into it.
    pub root: SysRoot,
}

fn put(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("{text}\n")).unwrap();
}

/// Default iosched files of a scheduler, as a 6.x (or, for the legacy ones, 2.6) kernel shows
/// them. `nr` is nr_requests (mq-deadline's async_depth follows it).
pub fn iosched_defaults(sched: &str, nr: i64) -> Vec<(&'static str, i64)> {
    match sched {
        "mq-deadline" => vec![
            ("async_depth", nr),
            ("fifo_batch", 16),
            ("front_merges", 1),
            ("prio_aging_expire", 10000),
            ("read_expire", 500),
            ("write_expire", 5000),
            ("writes_starved", 2),
        ],
        "bfq" => vec![
            ("back_seek_max", 16384),
            ("back_seek_penalty", 2),
            ("fifo_expire_async", 250),
            ("fifo_expire_sync", 125),
            ("low_latency", 1),
            ("max_budget", 0),
            ("slice_idle", 8),
            ("slice_idle_us", 8000),
            ("strict_guarantees", 0),
            ("timeout_sync", 124),
        ],
        "kyber" => vec![("read_lat_nsec", 2_000_000), ("write_lat_nsec", 10_000_000)],
        "cfq" => vec![
            ("back_seek_max", 16384),
            ("back_seek_penalty", 2),
            ("fifo_expire_async", 248),
            ("fifo_expire_sync", 124),
            ("quantum", 4),
            ("slice_async", 40),
            ("slice_async_rq", 2),
            ("slice_idle", 8),
            ("slice_sync", 100),
        ],
        "deadline" => vec![
            ("fifo_batch", 16),
            ("front_merges", 1),
            ("read_expire", 500),
            ("write_expire", 5000),
            ("writes_starved", 2),
        ],
        _ => vec![],
    }
}

impl FakeTree {
    /// An empty tree with a fake `/proc/sys/vm` (dirty_ratio 20, dirty_bytes 0, ...).
    pub fn new() -> FakeTree {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::new(dir.path().join("sys"), dir.path().join("proc"));
        std::fs::create_dir_all(root.block()).unwrap();
        for (k, v) in [
            ("dirty_ratio", 20),
            ("dirty_bytes", 0),
            ("dirty_background_ratio", 10),
            ("dirty_background_bytes", 0),
            ("dirty_expire_centisecs", 3000),
            ("dirty_writeback_centisecs", 500),
            ("swappiness", 60),
            ("vfs_cache_pressure", 100),
        ] {
            put(&root.vm().join(k), &v.to_string());
        }
        FakeTree { dir, root }
    }

    /// A disk `name` with `dev` (`8:0`) whose `queue/scheduler` reads `sched_line`
    /// (e.g. `none [mq-deadline] kyber bfq`), with default iosched files for the active one.
    pub fn disk(&self, name: &str, dev: &str, sched_line: &str, nr_requests: i64) -> &Self {
        let base = self.root.block_dev(name);
        put(&base.join("dev"), dev);
        put(&base.join("size"), "2097152");
        let q = base.join("queue");
        put(&q.join("scheduler"), sched_line);
        put(&q.join("nr_requests"), &nr_requests.to_string());
        put(&q.join("read_ahead_kb"), "128");
        put(&q.join("max_sectors_kb"), "1280");
        put(&q.join("max_hw_sectors_kb"), "32767");
        put(&q.join("nomerges"), "0");
        put(&q.join("rq_affinity"), "1");
        put(&q.join("rotational"), "1");
        let active = crate::device::parse_scheduler(sched_line).1.unwrap();
        for (k, v) in iosched_defaults(&active, nr_requests) {
            put(&q.join("iosched").join(k), &v.to_string());
        }
        self
    }

    /// Writes a file under the tree (relative to `sys/block/<dev>` when `dev` is given).
    pub fn set(&self, dev: &str, rel: &str, text: &str) -> &Self {
        put(&self.root.block_dev(dev).join(rel), text);
        self
    }

    /// Reads a device file, trimmed.
    pub fn get(&self, dev: &str, rel: &str) -> String {
        std::fs::read_to_string(self.root.block_dev(dev).join(rel))
            .unwrap()
            .trim()
            .to_string()
    }

    /// Reads a fake vm knob.
    pub fn vm(&self, name: &str) -> String {
        std::fs::read_to_string(self.root.vm().join(name))
            .unwrap()
            .trim()
            .to_string()
    }

    /// A current SATA disk `sda` (8:0) on mq-deadline, with a WWID, a partition `sda1` and
    /// writeback throttling at 75000 µs.
    pub fn mq_deadline_disk(&self) -> &Self {
        self.disk("sda", "8:0", "none [mq-deadline] kyber bfq", 64)
            .set("sda", "device/wwid", "naa.5000c500a1b2c3d4")
            .set("sda", "device/model", "ST2000DM008")
            .set("sda", "sda1/partition", "1")
            .set("sda", "sda1/dev", "8:1")
            .set("sda", "queue/wbt_lat_usec", "75000")
    }

    /// A disk `sdb` (8:16) on bfq, identified by model and serial.
    pub fn bfq_disk(&self) -> &Self {
        self.disk("sdb", "8:16", "mq-deadline kyber [bfq] none", 64)
            .set("sdb", "device/model", "WDC WD10EZEX")
            .set("sdb", "device/serial", "WD-WCC6Y1234567")
            .set("sdb", "queue/wbt_lat_usec", "0")
    }

    /// A legacy 2.6-style disk `hda` (3:0) on cfq with `quantum`, no wbt, no identity files.
    pub fn legacy_cfq_disk(&self) -> &Self {
        self.disk("hda", "3:0", "noop anticipatory deadline [cfq]", 128)
    }

    /// An NVMe namespace `nvme0n1` (259:0) offering only `none`, with a `wwid` at the top.
    pub fn nvme_none(&self) -> &Self {
        self.disk("nvme0n1", "259:0", "[none]", 1023)
            .set("nvme0n1", "wwid", "eui.0025388b71b2c3d4")
            .set("nvme0n1", "queue/rotational", "0")
            .set("nvme0n1", "queue/wbt_lat_usec", "2000")
    }
}
