//! The `scheduler` knob's domain on a host-managed zoned disk (`queue/zoned` reads
//! `host-managed`): before Linux 6.10 only a zone-aware scheduler, `mq-deadline` or `none`.
//!
//! Kernel facts (checked in the kernel sources and the 6.10 block pull):
//! - Before 6.10, a host-managed zoned disk's driver (`sd_zbc_read_zones`, null_blk, ublk)
//!   calls `blk_queue_required_elevator_features(q, ELEVATOR_F_ZBD_SEQ_WRITE)`, and only
//!   mq-deadline declares that feature (`.elevator_features = ELEVATOR_F_ZBD_SEQ_WRITE`,
//!   block/mq-deadline.c: its zone write locking). In block/elevator.c, `elevator_match()`
//!   (later the callers, through `elv_support_features()`) refuses an elevator lacking a
//!   required feature, so writing `bfq` or `kyber` to `queue/scheduler` is EINVAL;
//!   `elv_iosched_show()` leaves such elevators out of the list it prints. `none` needs no
//!   feature and is always accepted.
//! - Linux 6.10 moved zone write ordering into the block layer ("block: Introduce zone write
//!   plugging", dd291d77cc90) and removed the required features ("block: Remove elevator
//!   required features", e4eb37cc0f3e; "block: mq-deadline: Remove support for zone write
//!   locking", fde02699c242): from 6.10 on any scheduler is accepted.
//!
//! So the list the kernel prints already lacks bfq and kyber on such a disk; the domain is
//! narrowed here too, so a value that list does not show (a profile or policy from another
//! machine, a fake tree, a list read before a driver rescan) is refused before any write,
//! naming the disk, knob and value, instead of being half-applied into an EINVAL. The kernel
//! release is `<proc>/sys/kernel/osrelease` under the run's proc root (so fake trees test
//! both sides of 6.10); when it cannot be read or parsed the narrower domain holds: refusing a
//! scheduler costs a choice, writing one costs a failed apply.

use crate::sysroot::SysRoot;
use crate::{Error, Result};

/// The schedulers a host-managed zoned disk accepts before [`PLUGGING_SINCE`]: those with
/// `ELEVATOR_F_ZBD_SEQ_WRITE` (mq-deadline) and `none`.
pub(crate) const ZONE_AWARE: [&str; 2] = ["mq-deadline", "none"];

/// The first release (major, minor) with zone write plugging, where any scheduler is accepted.
pub(crate) const PLUGGING_SINCE: (u32, u32) = (6, 10);

/// The running kernel's release as `<proc>/sys/kernel/osrelease` reads (`6.8.0-45-generic`);
/// `None` when unreadable or empty.
pub(crate) fn release(root: &SysRoot) -> Option<String> {
    std::fs::read_to_string(root.kernel_sysctl().join("osrelease"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// `(major, minor)` of a release string (`6.8.0-45-generic` → `(6, 8)`); `None` when it does
/// not start with two dot-separated numbers.
pub(crate) fn version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(['.', '-', '+']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// Why disk `name` accepts only [`ZONE_AWARE`] schedulers now: `Some("a host-managed zoned
/// disk on kernel 6.8.0 (before 6.10)")`; `None` when it is not host-managed or the kernel is
/// 6.10 or later.
pub(crate) fn restriction(root: &SysRoot, name: &str) -> Option<String> {
    let zoned = crate::device::read_attr(&root.block_dev(name).join("queue/zoned"))?;
    if zoned != "host-managed" {
        return None;
    }
    let release = release(root);
    let (major, minor) = PLUGGING_SINCE;
    match release.as_deref().map(|r| (r, version(r))) {
        Some((_, Some(v))) if v >= PLUGGING_SINCE => None,
        Some((r, Some(_))) => Some(format!(
            "a host-managed zoned disk on kernel {r} (before {major}.{minor})"
        )),
        Some((r, None)) => Some(format!(
            "a host-managed zoned disk on kernel '{r}' (not a release this can compare with \
             {major}.{minor})"
        )),
        None => Some(format!(
            "a host-managed zoned disk on a kernel whose release is unknown (no readable \
             sys/kernel/osrelease; taken as before {major}.{minor})"
        )),
    }
}

/// `offered` as the domain of disk `name`'s `scheduler`: only the [`ZONE_AWARE`] ones while
/// [`restriction`] holds, else all of them.
pub(crate) fn domain(root: &SysRoot, name: &str, offered: Vec<String>) -> Vec<String> {
    if restriction(root, name).is_none() {
        return offered;
    }
    offered
        .into_iter()
        .filter(|s| ZONE_AWARE.contains(&s.as_str()))
        .collect()
}

/// Refuses `scheduler = value` on disk `name` when [`restriction`] holds and `value` is not
/// zone-aware. Errors: [`Error::BadInput`] (exit 2) naming disk, knob, value and why.
pub(crate) fn check(root: &SysRoot, name: &str, value: &str) -> Result<()> {
    if ZONE_AWARE.contains(&value) {
        return Ok(());
    }
    match restriction(root, name) {
        None => Ok(()),
        Some(why) => Err(Error::BadInput(format!(
            "{name}: knob 'scheduler': bad value '{value}': {why} accepts only a zone-aware \
             scheduler ({}); the kernel would refuse it (EINVAL)",
            ZONE_AWARE.join(" or ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::testkit::tree::FakeTree;

    fn zoned(release: Option<&str>) -> FakeTree {
        let t = FakeTree::new();
        t.disk("sdz", "8:0", "none [mq-deadline] kyber bfq", 64)
            .set("sdz", "queue/zoned", "host-managed");
        if let Some(r) = release {
            std::fs::create_dir_all(t.root.kernel_sysctl()).unwrap();
            std::fs::write(t.root.kernel_sysctl().join("osrelease"), format!("{r}\n")).unwrap();
        }
        t
    }

    #[test]
    fn releases_parse_to_major_and_minor() {
        assert_eq!(version("6.8.0-45-generic"), Some((6, 8)));
        assert_eq!(version("6.10.0"), Some((6, 10)));
        assert_eq!(version("5.15.167+rpt-rpi-v8"), Some((5, 15)));
        assert_eq!(version("6"), None);
        assert_eq!(version("linux"), None);
    }

    #[test]
    fn before_6_10_only_zone_aware_schedulers_are_in_the_domain() {
        let all: Vec<String> = ["none", "mq-deadline", "kyber", "bfq"]
            .map(Into::into)
            .into();
        let t = zoned(Some("6.9.12"));
        assert_eq!(domain(&t.root, "sdz", all.clone()), ["none", "mq-deadline"]);
        let e = check(&t.root, "sdz", "bfq").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            "sdz: knob 'scheduler': bad value 'bfq': a host-managed zoned disk on kernel 6.9.12 \
             (before 6.10) accepts only a zone-aware scheduler (mq-deadline or none); the \
             kernel would refuse it (EINVAL)"
        );
        assert!(check(&t.root, "sdz", "mq-deadline").is_ok());
        assert!(check(&t.root, "sdz", "none").is_ok());
        // No release to read: the narrower domain holds.
        let t = zoned(None);
        assert!(check(&t.root, "sdz", "kyber").is_err());
        // From 6.10 on, or on a disk that is not host-managed, every scheduler.
        let t = zoned(Some("6.10.0"));
        assert_eq!(domain(&t.root, "sdz", all.clone()), all);
        assert!(check(&t.root, "sdz", "bfq").is_ok());
        let t = zoned(Some("6.1.0"));
        t.set("sdz", "queue/zoned", "host-aware");
        assert!(check(&t.root, "sdz", "bfq").is_ok());
    }
}
