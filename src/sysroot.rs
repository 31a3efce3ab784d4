//! Where sysfs and procfs live. Tests point these at fake trees under a temp dir
//! (`--sysfs-root`, `--procfs-root`); production uses `/sys` and `/proc`.

use std::path::{Path, PathBuf};

/// The roots of sysfs and procfs used for every read and write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SysRoot {
    /// Usually `/sys`.
    pub sys: PathBuf,
    /// Usually `/proc`.
    pub proc: PathBuf,
}

impl Default for SysRoot {
    fn default() -> Self {
        SysRoot {
            sys: PathBuf::from("/sys"),
            proc: PathBuf::from("/proc"),
        }
    }
}

/// What tells this boot from earlier ones (see [`SysRoot::boot`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Boot {
    /// The kernel's boot id.
    pub id: Option<String>,
    /// When this boot started, Unix seconds.
    pub booted_at: Option<i64>,
}

impl SysRoot {
    /// A root pair for fake trees (tests).
    pub fn new(sys: impl Into<PathBuf>, proc: impl Into<PathBuf>) -> Self {
        SysRoot {
            sys: sys.into(),
            proc: proc.into(),
        }
    }

    /// `<sys>/block`.
    pub fn block(&self) -> PathBuf {
        self.sys.join("block")
    }

    /// `<sys>/block/<dev>`.
    pub fn block_dev(&self, dev: &str) -> PathBuf {
        self.block().join(dev)
    }

    /// This boot's id, `<proc>/sys/kernel/random/boot_id` (a random UUID the kernel makes at
    /// boot; drivers/char/random.c), and its start, `btime` of `<proc>/stat` (Unix seconds;
    /// Documentation/filesystems/proc.rst); each `None` when unreadable or empty (a fake tree
    /// without them).
    pub fn boot(&self) -> Boot {
        let id = std::fs::read_to_string(self.proc.join("sys/kernel/random/boot_id"))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        let booted_at = std::fs::read_to_string(self.proc.join("stat"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("btime "))
                    .and_then(|v| v.trim().parse().ok())
            });
        Boot { id, booted_at }
    }

    /// `<proc>/sys/vm`.
    pub fn vm(&self) -> PathBuf {
        self.proc.join("sys/vm")
    }

    /// `<proc>/sys/kernel` (the `sched_*` sysctls).
    pub fn kernel_sysctl(&self) -> PathBuf {
        self.proc.join("sys/kernel")
    }

    /// Where debugfs is mounted: `<sys>/kernel/debug` (its usual mount point; a fake tree puts
    /// a fake debugfs there). Its `sched/` holds the CPU scheduler's debug knobs.
    pub fn debugfs(&self) -> PathBuf {
        self.sys.join("kernel/debug")
    }

    /// The roots a journaled knob file `path` was written under, when they are not these:
    /// `self` with its sysfs root replaced by what precedes `/block/` or `/kernel/debug/` in
    /// `path`, or its procfs root by what precedes `/sys/vm/` or `/sys/kernel/`. `None` when
    /// `path` lies under these roots already, or has none of those shapes.
    pub fn other_for(&self, path: &Path) -> Option<SysRoot> {
        if path.starts_with(&self.sys) || path.starts_with(&self.proc) {
            return None;
        }
        let text = path.to_str()?;
        let before = |mark: &str| text.find(mark).map(|i| PathBuf::from(&text[..i]));
        if let Some(sys) = before("/block/").or_else(|| before("/kernel/debug/")) {
            return Some(SysRoot::new(sys, self.proc.clone()));
        }
        let proc = before("/sys/vm/").or_else(|| before("/sys/kernel/"))?;
        Some(SysRoot::new(self.sys.clone(), proc))
    }

    /// True when this is the real `/sys` (so tests never touch the host's knobs by accident).
    pub fn is_real(&self) -> bool {
        self.sys == Path::new("/sys")
    }

    /// True when this is the real `/proc`, where the host-wide knobs (`/proc/sys/vm/*`,
    /// `/proc/sys/kernel/*`) live.
    pub fn is_real_proc(&self) -> bool {
        self.proc == Path::new("/proc")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_roots_a_journaled_path_was_written_under() {
        let real = SysRoot::default();
        let p = |s: &str| PathBuf::from(s);
        let sys = |s: &str| Some(SysRoot::new(s, "/proc"));
        assert_eq!(
            real.other_for(&p("/sys/block/sda/queue/read_ahead_kb")),
            None
        );
        assert_eq!(real.other_for(&p("/proc/sys/vm/swappiness")), None);
        assert_eq!(
            real.other_for(&p("/tmp/rr/sys/block/sda/queue/read_ahead_kb")),
            sys("/tmp/rr/sys")
        );
        assert_eq!(
            real.other_for(&p("/t/sys/kernel/debug/sched/features")),
            sys("/t/sys")
        );
        assert_eq!(
            real.other_for(&p("/t/proc/sys/vm/swappiness")),
            Some(SysRoot::new("/sys", "/t/proc"))
        );
        let fake = SysRoot::new("/t/sys", "/t/proc");
        assert_eq!(
            fake.other_for(&p("/sys/block/sda/queue/nr_requests")),
            Some(SysRoot::new("/sys", "/t/proc"))
        );
        assert_eq!(
            fake.other_for(&p("/t/sys/block/sda/queue/nr_requests")),
            None
        );
        assert_eq!(real.other_for(&p("/elsewhere/file")), None);
    }
}
