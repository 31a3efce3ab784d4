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

/// What tells this boot from earlier ones (see `SysRoot::boot`).
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
    pub(crate) fn block(&self) -> PathBuf {
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
    pub(crate) fn boot(&self) -> Boot {
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
    pub(crate) fn kernel_sysctl(&self) -> PathBuf {
        self.proc.join("sys/kernel")
    }

    /// Where debugfs is mounted: `<sys>/kernel/debug` (its usual mount point; a fake tree puts
    /// a fake debugfs there). Its `sched/` holds the CPU scheduler's debug knobs.
    pub(crate) fn debugfs(&self) -> PathBuf {
        self.sys.join("kernel/debug")
    }

    /// The roots a journaled knob file `path` outside these roots was written under, read off
    /// the knob file shapes sweetspot writes, from the end of the path: `<sys>/block/<dev>/
    /// queue[/iosched]/<knob>`, `<sys>/kernel/debug/sched/<knob>`, `<proc>/sys/{vm,kernel}/
    /// <knob>`. The other half is the real one when the derived half is (`/sys` goes with
    /// `/proc`), else this run's. `None` when `path` lies under these roots, is relative, or
    /// has none of those shapes.
    pub(crate) fn other_for(&self, path: &Path) -> Option<SysRoot> {
        if !path.is_absolute() || path.starts_with(&self.sys) || path.starts_with(&self.proc) {
            return None;
        }
        let up = |n: usize| path.ancestors().nth(n);
        let named = |n: usize, name: &str| up(n).and_then(Path::file_name) == Some(name.as_ref());
        // <sys>/block/<dev>/queue/<knob> or <sys>/block/<dev>/queue/iosched/<knob>.
        let sys = if named(1, "queue") && named(3, "block") {
            up(4)
        } else if named(1, "iosched") && named(2, "queue") && named(4, "block") {
            up(5)
        } else if named(1, "sched") && named(2, "debug") && named(3, "kernel") {
            up(4)
        } else {
            None
        };
        if let Some(sys) = sys {
            let proc = if sys == Path::new("/sys") {
                PathBuf::from("/proc")
            } else {
                self.proc.clone()
            };
            return Some(SysRoot::new(sys, proc));
        }
        if (named(1, "vm") || named(1, "kernel")) && named(2, "sys") {
            let proc = up(3)?;
            let sys = if proc == Path::new("/proc") {
                PathBuf::from("/sys")
            } else {
                self.sys.clone()
            };
            return Some(SysRoot::new(sys, proc));
        }
        None
    }

    /// True when this is the real `/sys` (so tests never touch the host's knobs by accident).
    pub(crate) fn is_real(&self) -> bool {
        self.sys == Path::new("/sys")
    }

    /// True when this is the real `/proc`, where the host-wide knobs (`/proc/sys/vm/*`,
    /// `/proc/sys/kernel/*`) live.
    pub(crate) fn is_real_proc(&self) -> bool {
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
        let r = |a: &str, b: &str| Some(SysRoot::new(a, b));
        assert_eq!(
            real.other_for(&p("/sys/block/sda/queue/read_ahead_kb")),
            None
        );
        assert_eq!(real.other_for(&p("/proc/sys/vm/swappiness")), None);
        assert_eq!(
            real.other_for(&p("/tmp/rr/sys/block/sda/queue/read_ahead_kb")),
            r("/tmp/rr/sys", "/proc")
        );
        // Read from the end: a root that itself holds `block` or `sys` components.
        assert_eq!(
            real.other_for(&p("/srv/block/sys/block/sda/queue/iosched/fifo_batch")),
            r("/srv/block/sys", "/proc")
        );
        assert_eq!(
            real.other_for(&p("/t/sys/kernel/debug/sched/features")),
            r("/t/sys", "/proc")
        );
        assert_eq!(
            real.other_for(&p("/t/block/proc/sys/vm/swappiness")),
            r("/sys", "/t/block/proc")
        );
        assert_eq!(
            real.other_for(&p("/block/sda/queue/nr_requests")),
            r("/", "/proc")
        );
        // From a fake tree: the real roots go together.
        let fake = SysRoot::new("/t/sys", "/t/proc");
        assert_eq!(
            fake.other_for(&p("/sys/block/sda/queue/nr_requests")),
            r("/sys", "/proc")
        );
        assert_eq!(
            fake.other_for(&p("/u/sys/block/sda/queue/nr_requests")),
            r("/u/sys", "/t/proc")
        );
        assert_eq!(
            fake.other_for(&p("/t/sys/block/sda/queue/nr_requests")),
            None
        );
        assert_eq!(real.other_for(&p("sys/block/sda/queue/nr_requests")), None);
        assert_eq!(real.other_for(&p("/elsewhere/file")), None);
    }
}
