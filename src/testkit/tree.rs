//! Fake sysfs/procfs trees: a current mq-deadline SATA disk, a bfq disk, a legacy 2.6-style cfq
//! disk, an NVMe device offering only `none`, a fake `/proc/sys/vm`, and the CPU-scheduler
//! knobs of a current kernel, a legacy one and a locked-down debugfs.

use crate::sysroot::SysRoot;
use std::path::Path;

/// A temp dir holding `sys/` and `proc/`; dropped with the test.
pub(crate) struct FakeTree {
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
pub(crate) fn iosched_defaults(sched: &str, nr: i64) -> Vec<(&'static str, i64)> {
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

/// `sched/features` with the defaults of kernel/sched/features.h as of 6.12–6.18 (from the
/// source: this machine's debugfs answers EPERM, so it was not read here).
pub(crate) const CURRENT_FEATURES: &str = "PLACE_LAG PLACE_DEADLINE_INITIAL PLACE_REL_DEADLINE \
    RUN_TO_PARITY PREEMPT_SHORT NO_NEXT_BUDDY PICK_BUDDY CACHE_HOT_BUDDY DELAY_DEQUEUE DELAY_ZERO \
    WAKEUP_PREEMPTION NO_HRTICK NO_HRTICK_DL NONTASK_CAPACITY TTWU_QUEUE SIS_UTIL \
    NO_WARN_DOUBLE_CLOCK RT_PUSH_IPI NO_RT_RUNTIME_SHARE NO_LB_MIN ATTACH_AGE_LOAD WA_IDLE \
    WA_WEIGHT WA_BIAS UTIL_EST NO_LATENCY_WARN";

impl FakeTree {
    /// An empty tree with a fake `/proc/sys/vm` (dirty_ratio 20, dirty_bytes 0, ...).
    pub(crate) fn new() -> FakeTree {
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
    pub(crate) fn disk(&self, name: &str, dev: &str, sched_line: &str, nr_requests: i64) -> &Self {
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
    pub(crate) fn set(&self, dev: &str, rel: &str, text: &str) -> &Self {
        put(&self.root.block_dev(dev).join(rel), text);
        self
    }

    /// Reads a device file, trimmed.
    pub(crate) fn get(&self, dev: &str, rel: &str) -> String {
        std::fs::read_to_string(self.root.block_dev(dev).join(rel))
            .unwrap()
            .trim()
            .to_string()
    }

    /// Reads a fake vm knob.
    pub(crate) fn vm(&self, name: &str) -> String {
        std::fs::read_to_string(self.root.vm().join(name))
            .unwrap()
            .trim()
            .to_string()
    }

    /// A current kernel's (6.18, 2 CPUs) CPU-scheduler knobs: the three `sched_*` sysctls,
    /// and a readable debugfs `sched/` with base_slice_ns, migration_cost_ns, nr_migrate and
    /// features ([`CURRENT_FEATURES`]).
    pub(crate) fn sched_current(&self) -> &Self {
        let k = self.root.kernel_sysctl();
        put(&k.join("sched_autogroup_enabled"), "1");
        put(&k.join("sched_cfs_bandwidth_slice_us"), "5000");
        put(&k.join("sched_rr_timeslice_ms"), "100");
        let d = self.root.debugfs().join("sched");
        put(&d.join("base_slice_ns"), "1500000");
        put(&d.join("migration_cost_ns"), "500000");
        put(&d.join("nr_migrate"), "32");
        put(&d.join("preempt"), "none voluntary (full) lazy");
        put(&d.join("features"), CURRENT_FEATURES);
        self
    }

    /// A legacy kernel's (5.4) CPU-scheduler knobs: the `sched_*` sysctls of before 5.13
    /// (latency, granularities, migration cost) and the feature flags at the top of debugfs
    /// (`sched_features`), with GENTLE_FAIR_SLEEPERS and START_DEBIT.
    pub(crate) fn sched_legacy(&self) -> &Self {
        let k = self.root.kernel_sysctl();
        for (n, v) in [
            ("sched_autogroup_enabled", "1"),
            ("sched_cfs_bandwidth_slice_us", "5000"),
            ("sched_rr_timeslice_ms", "100"),
            ("sched_latency_ns", "12000000"),
            ("sched_min_granularity_ns", "1500000"),
            ("sched_wakeup_granularity_ns", "2000000"),
            ("sched_migration_cost_ns", "500000"),
        ] {
            put(&k.join(n), v);
        }
        put(
            &self.root.debugfs().join("sched_features"),
            "GENTLE_FAIR_SLEEPERS START_DEBIT NO_NEXT_BUDDY LAST_BUDDY CACHE_HOT_BUDDY \
             WAKEUP_PREEMPTION NO_HRTICK NO_DOUBLE_TICK NONTASK_CAPACITY TTWU_QUEUE NO_SIS_AVG_CPU \
             SIS_PROP NO_WARN_DOUBLE_CLOCK RT_PUSH_IPI RT_RUNTIME_SHARE NO_LB_MIN ATTACH_AGE_LOAD \
             WA_IDLE WA_WEIGHT WA_BIAS UTIL_EST UTIL_EST_FASTUP",
        );
        self
    }

    /// A locked-down debugfs: `sched/` lists its files but they cannot be read. A fake tree
    /// cannot make root's reads fail with EPERM (root passes permission checks), so here
    /// `features` and the integer files are directories (EISDIR); the real EPERM is tested on
    /// the real debugfs (tests/root/sched_knobs.rs).
    pub(crate) fn sched_locked(&self) -> &Self {
        let k = self.root.kernel_sysctl();
        put(&k.join("sched_autogroup_enabled"), "1");
        put(&k.join("sched_rr_timeslice_ms"), "100");
        let d = self.root.debugfs().join("sched");
        for f in [
            "features",
            "base_slice_ns",
            "migration_cost_ns",
            "nr_migrate",
        ] {
            std::fs::create_dir_all(d.join(f)).unwrap();
        }
        self
    }

    /// Reads a file under the fake `/proc/sys/kernel` or debugfs (`rel` to the tree's
    /// `sys/kernel/debug` when it starts with `debug/`), trimmed.
    pub(crate) fn host(&self, rel: &str) -> String {
        let p = match rel.strip_prefix("debug/") {
            Some(r) => self.root.debugfs().join(r),
            None => self.root.kernel_sysctl().join(rel),
        };
        std::fs::read_to_string(p).unwrap().trim().to_string()
    }

    /// A current SATA disk `sda` (8:0) on mq-deadline, with a WWID, a partition `sda1` and
    /// writeback throttling at 75000 µs.
    pub(crate) fn mq_deadline_disk(&self) -> &Self {
        self.disk("sda", "8:0", "none [mq-deadline] kyber bfq", 64)
            .set("sda", "device/wwid", "naa.5000c500a1b2c3d4")
            .set("sda", "device/model", "ST2000DM008")
            .set("sda", "sda1/partition", "1")
            .set("sda", "sda1/dev", "8:1")
            .set("sda", "queue/wbt_lat_usec", "75000")
    }

    /// A disk `sdb` (8:16) on bfq, identified by model and serial.
    pub(crate) fn bfq_disk(&self) -> &Self {
        self.disk("sdb", "8:16", "mq-deadline kyber [bfq] none", 64)
            .set("sdb", "device/model", "WDC WD10EZEX")
            .set("sdb", "device/serial", "WD-WCC6Y1234567")
            .set("sdb", "queue/wbt_lat_usec", "0")
    }

    /// A legacy 2.6-style disk `hda` (3:0) on cfq with `quantum`, no wbt, no identity files.
    pub(crate) fn legacy_cfq_disk(&self) -> &Self {
        self.disk("hda", "3:0", "noop anticipatory deadline [cfq]", 128)
    }

    /// An NVMe namespace `nvme0n1` (259:0) offering only `none`, with a `wwid` at the top.
    pub(crate) fn nvme_none(&self) -> &Self {
        self.disk("nvme0n1", "259:0", "[none]", 1023)
            .set("nvme0n1", "wwid", "eui.0025388b71b2c3d4")
            .set("nvme0n1", "queue/rotational", "0")
            .set("nvme0n1", "queue/wbt_lat_usec", "2000")
    }
}
