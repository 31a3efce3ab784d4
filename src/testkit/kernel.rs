//! [`FakeKernel`]: the knob behaviour of a kernel, simulated on a fake tree, honestly limited
//! to what docs/DESIGN.md's "Kernel facts" and measurements on this machine say:
//!
//! - writing `scheduler` moves the brackets, removes `iosched/` and recreates it with the new
//!   scheduler's defaults, and resets `nr_requests` (256 with a scheduler, 128 with `none`);
//!   a name that is not offered is EINVAL; the same name is a no-op;
//! - switching to bfq turns writeback throttling off (`wbt_lat_usec` 0);
//! - `nr_requests` is clamped below 4, EINVAL above 2048, and resets mq-deadline's
//!   `async_depth`;
//! - mq-deadline `*_expire` values round up to a jiffy (HZ=250, 4 ms);
//! - `dirty_bytes` zeroes `dirty_ratio` and the reverse (and the background pair);
//! - writing `X` or `NO_X` to debugfs `sched/features` turns that one flag on or off and
//!   leaves the others; a flag the file does not list is EINVAL (`sched_feat_set`);
//! - a path can be told to fail with an errno, or to read back something else (a clamp).

use super::tree::iosched_defaults;
use crate::device::parse_scheduler;
use crate::knob::catalogue::exclusive_partner;
use crate::knob::io::{KnobIo, RealIo};
use std::cell::RefCell;
use std::path::{Path, PathBuf};

/// The simulation; see the module docs.
#[derive(Default)]
pub(crate) struct FakeKernel {
    refuse: RefCell<Vec<(PathBuf, i32)>>,
    clamp: RefCell<Vec<(PathBuf, String)>>,
    /// Every write, in order: (file name, text written, trimmed).
    pub log: RefCell<Vec<(String, String)>>,
}

impl FakeKernel {
    /// Writes to `path` fail with `errno`.
    pub(crate) fn refuse(&self, path: PathBuf, errno: i32) {
        self.refuse.borrow_mut().push((path, errno));
    }

    /// Writes to `path` store `value` instead (the kernel clamped it).
    pub(crate) fn clamp(&self, path: PathBuf, value: &str) {
        self.clamp.borrow_mut().push((path, value.to_string()));
    }

    fn einval() -> std::io::Error {
        std::io::Error::from_raw_os_error(libc::EINVAL)
    }
}

fn put(path: &Path, v: &str) -> std::io::Result<()> {
    std::fs::write(path, format!("{v}\n"))
}

impl KnobIo for FakeKernel {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        RealIo.read(path)
    }

    fn write(&self, path: &Path, text: &str) -> std::io::Result<()> {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let v = text.trim().to_string();
        self.log.borrow_mut().push((name.clone(), v.clone()));
        if let Some((_, e)) = self.refuse.borrow().iter().find(|(p, _)| p == path) {
            return Err(std::io::Error::from_raw_os_error(*e));
        }
        if let Some((_, c)) = self.clamp.borrow().iter().find(|(p, _)| p == path) {
            return put(path, c);
        }
        let dir = path.parent().unwrap();
        match name.as_str() {
            "scheduler" => switch(dir, &RealIo.read(path)?, &v),
            "features" | "sched_features" => {
                let (flag, on) = match v.strip_prefix("NO_") {
                    Some(f) => (f, false),
                    None => (v.as_str(), true),
                };
                let mut flags = crate::knob::features::parse_features(&RealIo.read(path)?);
                let f = flags
                    .iter_mut()
                    .find(|(n, _)| n == flag)
                    .ok_or_else(Self::einval)?;
                f.1 = on;
                let line: Vec<String> = flags
                    .iter()
                    .map(|(n, on)| if *on { n.clone() } else { format!("NO_{n}") })
                    .collect();
                put(path, &line.join(" "))
            }
            "nr_requests" => {
                let n: i64 = v.parse().map_err(|_| Self::einval())?;
                if n > 2048 {
                    return Err(Self::einval());
                }
                let n = n.max(4);
                put(path, &n.to_string())?;
                let ad = dir.join("iosched/async_depth");
                if ad.exists() {
                    put(&ad, &n.to_string())?;
                }
                Ok(())
            }
            // Committing new limits recomputes read-ahead: 2 × max_sectors_kb, as measured
            // on a loop device (knob::validate::resets).
            "max_sectors_kb" => {
                put(path, &v)?;
                let n: i64 = v.parse().map_err(|_| Self::einval())?;
                put(&dir.join("read_ahead_kb"), &(2 * n).to_string())
            }
            "read_expire" | "write_expire" | "prio_aging_expire" => {
                let ms: i64 = v.parse().map_err(|_| Self::einval())?;
                put(path, &((ms + 3) / 4 * 4).to_string())
            }
            _ => {
                put(path, &v)?;
                if let Some(p) = exclusive_partner(&name).filter(|_| v != "0") {
                    put(&dir.join(p), "0")?;
                }
                Ok(())
            }
        }
    }
}

/// A scheduler switch on the queue directory `q`.
fn switch(q: &Path, line: &str, to: &str) -> std::io::Result<()> {
    let (offered, active) = parse_scheduler(line);
    if !offered.iter().any(|s| s == to) {
        return Err(FakeKernel::einval());
    }
    if active.as_deref() == Some(to) {
        return Ok(());
    }
    let new_line = offered
        .iter()
        .map(|s| if s == to { format!("[{s}]") } else { s.clone() })
        .collect::<Vec<_>>()
        .join(" ");
    put(&q.join("scheduler"), &new_line)?;
    let io = q.join("iosched");
    if io.exists() {
        std::fs::remove_dir_all(&io)?;
    }
    let nr = if to == "none" { 128 } else { 256 };
    put(&q.join("nr_requests"), &nr.to_string())?;
    let defaults = iosched_defaults(to, nr);
    if !defaults.is_empty() {
        std::fs::create_dir_all(&io)?;
    }
    for (k, v) in defaults {
        put(&io.join(k), &v.to_string())?;
    }
    if to == "bfq" && q.join("wbt_lat_usec").exists() {
        put(&q.join("wbt_lat_usec"), "0")?;
    }
    Ok(())
}
