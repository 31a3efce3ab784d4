//! The catalogue of known knobs: unit, safe bounds and caps, with the kernel source file each
//! fact comes from. Discovery ([`super::discover`]) lists what a device offers now and takes
//! domains from here; an iosched file the catalogue does not know is still offered, as an
//! integer knob (see `UNKNOWN_DOMAIN`).
//!
//! "Safe bounds" are what sweetspot lets `set` and the tuner write. They are the kernel's own
//! limits where those are tight (`front_merges` 0..1, `nomerges` 0..2) and a sane range where the
//! kernel accepts anything up to `INT_MAX` (`fifo_batch` 1..1024). Caps that protect against a
//! kernel quirk say so in `note` (bfq `slice_idle` wraps above 4294 ms: it is stored as
//! `u32`-overflowing nanoseconds, measured here: 5000 reads back as 705).
//!
//! Which `ms` knobs the kernel keeps in jiffies is a per-knob fact (`Fact::jiffies`): only
//! those read back rounded to a jiffy, so only those are compared with
//! `JIFFY_TOLERANCE_MS`; every other knob must read back exactly what was written.

use super::ApplyOrder;

/// What the kernel sources say about one knob.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fact {
    /// File base name, e.g. `fifo_batch`.
    pub name: &'static str,
    /// The scheduler whose `iosched/` holds it; `None` for queue and vm knobs.
    pub scheduler: Option<&'static str>,
    /// Where it lives (and its apply order).
    pub order: ApplyOrder,
    /// Unit: `ms`, `µs`, `ns`, `KiB`, `requests`, `sectors`, `bytes`, `%`, `cs`, `bool`, or ``.
    pub unit: &'static str,
    /// Smallest safe value.
    pub min: i64,
    /// Largest safe value.
    pub max: i64,
    /// Kernel source file the facts come from.
    pub source: &'static str,
    /// Kernel default or a quirk worth knowing.
    pub note: &'static str,
    /// True when the kernel keeps the value in jiffies: its store function converts the
    /// written milliseconds with `msecs_to_jiffies` (which rounds up to a whole jiffy) and its
    /// show function prints `jiffies_to_msecs`, so a write of `v` reads back as `v` rounded up
    /// to a jiffy. The sources, per knob:
    /// - mq-deadline `read_expire`, `write_expire`, `prio_aging_expire`: block/mq-deadline.c,
    ///   `SHOW_JIFFIES`/`STORE_JIFFIES`; the legacy deadline's `*_expire` the same
    ///   (block/deadline-iosched.c);
    /// - bfq `timeout_sync`: block/bfq-iosched.c, `SHOW_FUNCTION(…, bfqd->bfq_timeout, 1)`
    ///   (`__CONV == 1`: jiffies). bfq's `slice_idle` and `fifo_expire_sync`/`_async` are kept
    ///   in ns (`__CONV == 2`: `div_u64(…, NSEC_PER_MSEC)` on show, `* NSEC_PER_MSEC` on
    ///   store), so they read back exactly;
    /// - cfq's time knobs: block/cfq-iosched.c kept them in jiffies until 4.10 (commit
    ///   "cfq-iosched: Convert from jiffies to nanoseconds"), in ns from 4.10 to its removal
    ///   in 5.0: the tolerance covers the older kernels;
    /// - anticipatory's: block/as-iosched.c, `jiffies_to_msecs` on show.
    ///
    /// kyber's `*_lat_nsec` are ns, and `sched_rr_timeslice_ms` reads back the milliseconds
    /// written (kernel/sched/rt.c `sched_rr_handler` keeps `sysctl_sched_rr_timeslice` as
    /// written and converts a copy): all compared exactly.
    pub jiffies: bool,
}

/// Domain given to an iosched file the catalogue does not know: a non-negative C `int`
/// (most iosched store functions parse into an `int`).
pub(crate) const UNKNOWN_DOMAIN: (i64, i64) = (0, i32::MAX as i64);

/// Read-back tolerance for the `ms` knobs the kernel keeps in jiffies ([`Fact::jiffies`]):
/// `msecs_to_jiffies` rounds a written value up to a whole jiffy, so it reads back at most one
/// jiffy less 1 ms above what was written, never below, and 0 as 0. HZ is not visible from
/// userspace, and one jiffy is at most 10 ms (HZ=100). Measured here: mq-deadline
/// `read_expire` 501 reads back as 504 (HZ=250).
pub(crate) const JIFFY_TOLERANCE_MS: i64 = 10;

#[allow(clippy::too_many_arguments)] // one row of the table below
const fn f(
    name: &'static str,
    scheduler: Option<&'static str>,
    order: ApplyOrder,
    unit: &'static str,
    min: i64,
    max: i64,
    source: &'static str,
    note: &'static str,
) -> Fact {
    Fact {
        name,
        scheduler,
        order,
        unit,
        min,
        max,
        source,
        note,
        jiffies: false,
    }
}

impl Fact {
    /// The same fact, for a knob the kernel keeps in jiffies ([`Fact::jiffies`]).
    const fn in_jiffies(self) -> Fact {
        Fact {
            jiffies: true,
            ..self
        }
    }
}

use ApplyOrder::{Iosched as I, NrRequests, Queue as Q, Sched as S, Vm as V};
const MQD: Option<&str> = Some("mq-deadline");
const DL: Option<&str> = Some("deadline");
const BFQ: Option<&str> = Some("bfq");
const KY: Option<&str> = Some("kyber");
const CFQ: Option<&str> = Some("cfq");
const AS: Option<&str> = Some("anticipatory");
const MQD_C: &str = "block/mq-deadline.c";
const DL_C: &str = "block/deadline-iosched.c (removed in 5.0)";
const BFQ_C: &str = "block/bfq-iosched.c";
const KY_C: &str = "block/kyber-iosched.c";
const CFQ_C: &str = "block/cfq-iosched.c (removed in 5.0)";
const AS_C: &str = "block/as-iosched.c (removed in 2.6.33)";
const SYSFS_C: &str = "block/blk-sysfs.c";
const PWB_C: &str = "mm/page-writeback.c";
const NS_MAX: i64 = 10_000_000_000;
const FAIR_C: &str = "kernel/sched/fair.c";
const OLD_SYSCTL: &str = "kernel/sched/fair.c (a sysctl before 5.13, kernel/sysctl.c)";
const DEBUG_C: &str = "kernel/sched/debug.c (debugfs, 5.13+)";
/// One second in ns: the legacy sysctls' upper bound (`max_sched_granularity_ns`, kernel/sysctl.c).
const SEC_NS: i64 = 1_000_000_000;

/// Every known knob.
#[rustfmt::skip]
pub(crate) static FACTS: &[Fact] = &[
    // mq-deadline (current kernels).
    f("read_expire", MQD, I, "ms", 1, 60_000, MQD_C, "default 500 (HZ/2); kept in jiffies").in_jiffies(),
    f("write_expire", MQD, I, "ms", 1, 120_000, MQD_C, "default 5000 (5*HZ); kept in jiffies").in_jiffies(),
    f("writes_starved", MQD, I, "", 0, 64, MQD_C, "default 2"),
    f("front_merges", MQD, I, "bool", 0, 1, MQD_C, "default 1"),
    f("fifo_batch", MQD, I, "requests", 1, 1024, MQD_C, "default 16; kernel clamps below 0"),
    f("async_depth", MQD, I, "requests", 1, 2048, MQD_C, "reset to nr_requests when nr_requests is written"),
    f("prio_aging_expire", MQD, I, "ms", 0, 120_000, MQD_C, "default 10000; kept in jiffies").in_jiffies(),
    // bfq.
    f("back_seek_max", BFQ, I, "KiB", 0, 1 << 20, BFQ_C, "default 16384"),
    f("back_seek_penalty", BFQ, I, "", 1, 1024, BFQ_C, "default 2"),
    f("fifo_expire_async", BFQ, I, "ms", 1, 60_000, BFQ_C, "default 250"),
    f("fifo_expire_sync", BFQ, I, "ms", 1, 60_000, BFQ_C, "default 125"),
    f("low_latency", BFQ, I, "bool", 0, 1, BFQ_C, "default 1"),
    f("max_budget", BFQ, I, "sectors", 0, 1 << 20, BFQ_C, "0 = auto"),
    f("slice_idle", BFQ, I, "ms", 0, 4294, BFQ_C, "default 8; wraps above 4294 (ns overflow)"),
    f("slice_idle_us", BFQ, I, "µs", 0, 4_294_967, BFQ_C, "default 8000; wraps above 4294967"),
    f("strict_guarantees", BFQ, I, "bool", 0, 1, BFQ_C, "default 0"),
    f("timeout_sync", BFQ, I, "ms", 1, 60_000, BFQ_C, "default 125; kept in jiffies").in_jiffies(),
    // kyber.
    f("read_lat_nsec", KY, I, "ns", 1, NS_MAX, KY_C, "default 2000000"),
    f("write_lat_nsec", KY, I, "ns", 1, NS_MAX, KY_C, "default 10000000"),
    // Legacy deadline (before 5.0).
    f("read_expire", DL, I, "ms", 1, 60_000, DL_C, "default 500 (HZ/2)").in_jiffies(),
    f("write_expire", DL, I, "ms", 1, 120_000, DL_C, "default 5000 (5*HZ)").in_jiffies(),
    f("writes_starved", DL, I, "", 0, 64, DL_C, "default 2"),
    f("front_merges", DL, I, "bool", 0, 1, DL_C, "default 1"),
    f("fifo_batch", DL, I, "requests", 1, 1024, DL_C, "default 16 (32 in early 2.5)"),
    // Legacy cfq (before 5.0).
    f("quantum", CFQ, I, "requests", 1, 64, CFQ_C, "default 8 (4 in 2.6.x)"),
    f("fifo_expire_sync", CFQ, I, "ms", 1, 60_000, CFQ_C, "default 125").in_jiffies(),
    f("fifo_expire_async", CFQ, I, "ms", 1, 60_000, CFQ_C, "default 250").in_jiffies(),
    f("back_seek_max", CFQ, I, "KiB", 0, 1 << 20, CFQ_C, "default 16384"),
    f("back_seek_penalty", CFQ, I, "", 1, 1024, CFQ_C, "default 2"),
    f("slice_sync", CFQ, I, "ms", 1, 10_000, CFQ_C, "default 100").in_jiffies(),
    f("slice_async", CFQ, I, "ms", 1, 10_000, CFQ_C, "default 40").in_jiffies(),
    f("slice_async_rq", CFQ, I, "requests", 1, 64, CFQ_C, "default 2"),
    f("slice_idle", CFQ, I, "ms", 0, 1000, CFQ_C, "default 8").in_jiffies(),
    f("group_idle", CFQ, I, "ms", 0, 1000, CFQ_C, "default 8").in_jiffies(),
    f("low_latency", CFQ, I, "bool", 0, 1, CFQ_C, "default 1"),
    f("target_latency", CFQ, I, "ms", 1, 10_000, CFQ_C, "default 300").in_jiffies(),
    // Legacy anticipatory (before 2.6.33).
    f("read_expire", AS, I, "ms", 1, 60_000, AS_C, "default 125").in_jiffies(),
    f("read_batch_expire", AS, I, "ms", 1, 60_000, AS_C, "default 500").in_jiffies(),
    f("write_expire", AS, I, "ms", 1, 120_000, AS_C, "default 250").in_jiffies(),
    f("write_batch_expire", AS, I, "ms", 1, 60_000, AS_C, "default 125").in_jiffies(),
    f("antic_expire", AS, I, "ms", 0, 1000, AS_C, "default 6").in_jiffies(),
    // queue/ (any scheduler).
    f("nr_requests", None, NrRequests, "requests", 4, 2048, SYSFS_C,
      "clamped below 4 (BLKDEV_MIN_RQ); EINVAL above the tag depth or 2048; reset by a scheduler switch"),
    f("read_ahead_kb", None, Q, "KiB", 0, 65_536, SYSFS_C, "default 128"),
    f("max_sectors_kb", None, Q, "KiB", 4, 1 << 20, SYSFS_C, "bounded by max_hw_sectors_kb"),
    f("nomerges", None, Q, "", 0, 2, SYSFS_C, "0 merges, 1 simple only, 2 none"),
    f("rq_affinity", None, Q, "", 0, 2, SYSFS_C, "1 same group, 2 same CPU"),
    f("wbt_lat_usec", None, Q, "µs", 0, 10_000_000, "block/blk-wbt.c",
      "0 disables writeback throttling; -1 resets to a device default, so never restored as -1"),
    // /proc/sys/vm (host-wide).
    f("dirty_ratio", None, V, "%", 0, 100, PWB_C, "exclusive with dirty_bytes (writing one zeroes the other)"),
    f("dirty_bytes", None, V, "bytes", 8192, 1 << 40, PWB_C, "min 2 pages; exclusive with dirty_ratio"),
    f("dirty_background_ratio", None, V, "%", 0, 100, PWB_C, "exclusive with dirty_background_bytes"),
    f("dirty_background_bytes", None, V, "bytes", 1, 1 << 40, PWB_C, "exclusive with dirty_background_ratio"),
    f("dirty_expire_centisecs", None, V, "cs", 0, 360_000, PWB_C, "default 3000"),
    f("dirty_writeback_centisecs", None, V, "cs", 0, 360_000, PWB_C, "default 500; 0 disables"),
    f("swappiness", None, V, "", 0, 200, "mm/vmscan.c", "default 60; max 200 since 5.8"),
    f("vfs_cache_pressure", None, V, "", 0, 1000, "fs/dcache.c", "default 100"),
    // CPU scheduler (host-wide), /proc/sys/kernel/sched_* on current kernels.
    f("sched_autogroup_enabled", None, S, "bool", 0, 1, "kernel/sched/autogroup.c",
      "default 1 (CONFIG_SCHED_AUTOGROUP): one task group per session"),
    f("sched_cfs_bandwidth_slice_us", None, S, "µs", 1, 1_000_000, FAIR_C,
      "default 5000; at least 1 (proc_dointvec_minmax, SYSCTL_ONE)"),
    f("sched_rr_timeslice_ms", None, S, "ms", 1, 10_000, "kernel/sched/rt.c",
      "default 100 (RR_TIMESLICE); reads back as written (a copy is kept in jiffies); <= 0 resets to the default"),
    // The same before 5.13 (moved to debugfs sched/ then, and the first three went in 6.6).
    f("sched_latency_ns", None, S, "ns", 100_000, SEC_NS, OLD_SYSCTL,
      "default 6000000 x (1 + ilog2(CPUs)); bounds min/max_sched_granularity_ns"),
    f("sched_min_granularity_ns", None, S, "ns", 100_000, SEC_NS, OLD_SYSCTL,
      "default 750000 x (1 + ilog2(CPUs))"),
    f("sched_wakeup_granularity_ns", None, S, "ns", 0, SEC_NS, OLD_SYSCTL,
      "default 1000000 x (1 + ilog2(CPUs))"),
    f("sched_migration_cost_ns", None, S, "ns", 0, 100_000_000, OLD_SYSCTL, "default 500000"),
    // debugfs sched/ (kernel/sched/debug.c creates them; u32 files).
    f("base_slice_ns", None, S, "ns", 100_000, 100_000_000, "kernel/sched/fair.c, debug.c (6.6+, EEVDF)",
      "default 750000 x (1 + ilog2(min(CPUs, 8))) with tunable_scaling 1"),
    f("migration_cost_ns", None, S, "ns", 0, 100_000_000, DEBUG_C, "default 500000 (fair.c)"),
    f("nr_migrate", None, S, "tasks", 1, 1024, "kernel/sched/core.c, debug.c (5.13+)",
      "default 32 (8 with PREEMPT_RT)"),
    f("latency_ns", None, S, "ns", 100_000, SEC_NS, "kernel/sched/fair.c, debug.c (5.13-6.5)",
      "default 6000000 x (1 + ilog2(CPUs))"),
    f("min_granularity_ns", None, S, "ns", 100_000, SEC_NS, "kernel/sched/fair.c, debug.c (5.13-6.5)",
      "default 750000 x (1 + ilog2(CPUs))"),
    f("wakeup_granularity_ns", None, S, "ns", 0, SEC_NS, "kernel/sched/fair.c, debug.c (5.13-6.5)",
      "default 1000000 x (1 + ilog2(CPUs))"),
];

/// The host-wide CPU-scheduler sysctls discovered under `/proc/sys/kernel` (when the file
/// exists): the current ones and those of kernels before 5.13.
pub(crate) const SCHED_SYSCTL_KNOBS: &[&str] = &[
    "sched_autogroup_enabled",
    "sched_cfs_bandwidth_slice_us",
    "sched_rr_timeslice_ms",
    "sched_latency_ns",
    "sched_min_granularity_ns",
    "sched_wakeup_granularity_ns",
    "sched_migration_cost_ns",
];

/// The CPU scheduler's integer knobs discovered under debugfs `sched/` (when readable); the
/// feature flags of `sched/features` come from [`super::features`].
pub(crate) const SCHED_DEBUGFS_KNOBS: &[&str] = &[
    "base_slice_ns",
    "migration_cost_ns",
    "nr_migrate",
    "latency_ns",
    "min_granularity_ns",
    "wakeup_granularity_ns",
];

/// Source of the `scheduler` knob's facts.
pub(crate) const SCHEDULER_SOURCE: &str = "block/elevator.c";

/// Every I/O scheduler name a mainline kernel has offered in `queue/scheduler`: blk-mq's
/// `none` (block/elevator.c), `mq-deadline` (block/mq-deadline.c, which also answers to its
/// alias `deadline`), `bfq` (block/bfq-iosched.c) and `kyber` (block/kyber-iosched.c), and the
/// legacy single-queue `noop`, `deadline` and `cfq` (removed in Linux 5.0) and `anticipatory`
/// (removed in 2.6.33). A policy value outside this list that the device does not offer
/// either is a typo; an out-of-tree scheduler a device offers is accepted.
pub(crate) const ELEVATORS: &[&str] = &[
    "none",
    "mq-deadline",
    "bfq",
    "kyber",
    "noop",
    "deadline",
    "cfq",
    "anticipatory",
];

/// The queue/ knobs discovered on every device (when the file exists).
pub(crate) const QUEUE_KNOBS: &[&str] = &[
    "nr_requests",
    "read_ahead_kb",
    "max_sectors_kb",
    "nomerges",
    "rq_affinity",
    "wbt_lat_usec",
];

/// The host-wide `/proc/sys/vm` knobs discovered (when the file exists).
pub(crate) const VM_KNOBS: &[&str] = &[
    "dirty_ratio",
    "dirty_bytes",
    "dirty_background_ratio",
    "dirty_background_bytes",
    "dirty_expire_centisecs",
    "dirty_writeback_centisecs",
    "swappiness",
    "vfs_cache_pressure",
];

/// An integer domain as people write it: `1–1024` (not Rust's `1..=1024`).
pub(crate) fn domain_text(min: i64, max: i64) -> String {
    format!("{min}–{max}")
}

/// The fact for `name` under `scheduler` (iosched knobs), or for a queue/vm knob when
/// `scheduler` is `None`.
pub(crate) fn lookup(scheduler: Option<&str>, name: &str) -> Option<&'static Fact> {
    FACTS
        .iter()
        .find(|f| f.name == name && f.scheduler == scheduler)
}

/// The safe bounds of `name` over every entry of [`FACTS`] for it (a knob several schedulers
/// have takes the widest); `None` for `scheduler`, a feature flag or an unknown name.
pub(crate) fn bounds(name: &str) -> Option<(i64, i64)> {
    FACTS
        .iter()
        .filter(|f| f.name == name)
        .map(|f| (f.min, f.max))
        .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)))
}

/// The schedulers whose `iosched/` has a knob called `name` (empty for queue/vm knobs).
pub(crate) fn schedulers_with(name: &str) -> Vec<&'static str> {
    FACTS
        .iter()
        .filter(|f| f.name == name)
        .filter_map(|f| f.scheduler)
        .collect()
}

/// True when `name` is a knob sweetspot knows on some kernel and scheduler: `scheduler` or a
/// name in [`FACTS`]. A policy naming anything else has a typo (no device can have it).
pub(crate) fn is_known(name: &str) -> bool {
    name == "scheduler" || FACTS.iter().any(|f| f.name == name) || super::features::is_feature(name)
}

/// Every distinct known knob name ([`is_known`]), for "did you mean" hints.
pub(crate) fn known_names() -> Vec<&'static str> {
    let mut v: Vec<&str> = FACTS.iter().map(|f| f.name).collect();
    v.extend(super::features::FEATURES.iter().map(|f| f.name));
    v.push("scheduler");
    v.sort_unstable();
    v.dedup();
    v
}

/// The closest of `names` to a misspelt `name` (Damerau–Levenshtein distance ≤ 2; the first
/// in alphabetical order among equals), never `name` itself: a name that is known but not
/// valid here (a scheduler this disk does not offer) gets no "did you mean" itself.
fn closest_of<'a>(name: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    names
        .into_iter()
        .filter(|n| *n != name)
        .map(|n| (strsim::damerau_levenshtein(name, n), n))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, n)| n)
}

/// ` (did you mean 'x'?)` for the closest of `names` to `name` (Damerau–Levenshtein distance
/// ≤ 2), else empty: the hint an "unknown knob" error carries.
pub(crate) fn did_you_mean<'a>(name: &str, names: impl IntoIterator<Item = &'a str>) -> String {
    closest_of(name, names)
        .map(|n| format!(" (did you mean '{n}'?)"))
        .unwrap_or_default()
}

/// The other member of an exclusive vm pair: writing one zeroes the other
/// (`dirty_ratio`↔`dirty_bytes`, `dirty_background_ratio`↔`dirty_background_bytes`;
/// mm/page-writeback.c `dirty_ratio_handler`/`dirty_bytes_handler`).
pub(crate) fn exclusive_partner(name: &str) -> Option<&'static str> {
    match name {
        "dirty_ratio" => Some("dirty_bytes"),
        "dirty_bytes" => Some("dirty_ratio"),
        "dirty_background_ratio" => Some("dirty_background_bytes"),
        "dirty_background_bytes" => Some("dirty_background_ratio"),
        _ => None,
    }
}

/// Where the knob `name` lives, which is also its apply order: `scheduler`, a queue or vm
/// knob of [`FACTS`], or an iosched knob of some scheduler; `None` for an unknown name.
pub(crate) fn order_of(name: &str) -> Option<ApplyOrder> {
    if name == "scheduler" {
        return Some(ApplyOrder::Scheduler);
    }
    if let Some(f) = lookup(None, name) {
        return Some(f.order);
    }
    if super::features::is_feature(name) {
        return Some(ApplyOrder::SchedFeature);
    }
    FACTS.iter().find(|f| f.name == name).map(|f| f.order)
}

/// True when the kernel keeps knob `name` (of `scheduler`, for an iosched knob) in jiffies, so
/// it reads back rounded up to a jiffy ([`Fact::jiffies`]); false for every other knob and for
/// a knob the catalogue does not know.
pub(crate) fn kept_in_jiffies(scheduler: Option<&str>, name: &str) -> bool {
    lookup(scheduler, name).is_some_and(|f| f.jiffies)
}

/// True for the `*_bytes` member of an exclusive pair (0 is not writable there: EINVAL).
pub(crate) fn is_bytes_member(name: &str) -> bool {
    exclusive_partner(name).is_some() && name.ends_with("_bytes")
}

#[cfg(test)]
mod tests {
    use super::super::features::FEATURES;
    use super::*;

    #[test]
    fn did_you_mean_never_offers_the_name_itself() {
        let offered = ["none", "mq-deadline", "kyber", "bfq"];
        // Known but not valid here: no hint that repeats it.
        assert_eq!(did_you_mean("bfq", ["none", "bfq"]), "");
        assert_eq!(did_you_mean("bfx", offered), " (did you mean 'bfq'?)");
        assert_eq!(
            did_you_mean("kyber", offered.iter().copied().chain(["kyber"])),
            ""
        );
        assert_eq!(did_you_mean("fifo_batch", known_names()), "");
        assert_eq!(
            did_you_mean("fifo_btach", known_names()),
            " (did you mean 'fifo_batch'?)"
        );
    }

    #[test]
    fn every_feature_is_known_to_the_catalogue_once() {
        for f in FEATURES {
            assert!(is_known(f.name), "{}", f.name);
            assert_eq!(order_of(f.name), Some(ApplyOrder::SchedFeature));
            assert_eq!(FEATURES.iter().filter(|g| g.name == f.name).count(), 1);
            assert!(lookup(None, f.name).is_none(), "{}", f.name);
        }
        for n in SCHED_SYSCTL_KNOBS.iter().chain(SCHED_DEBUGFS_KNOBS) {
            let f = lookup(None, n).unwrap();
            assert_eq!(f.order, ApplyOrder::Sched, "{n}");
            assert!(f.source.starts_with("kernel/sched/"), "{n}: {}", f.source);
        }
    }

    #[test]
    fn every_fact_is_consistent() {
        for f in FACTS {
            assert!(f.min <= f.max, "{}", f.name);
            assert!(!f.source.is_empty(), "{}", f.name);
            assert_eq!(
                f.scheduler.is_some(),
                f.order == ApplyOrder::Iosched,
                "{}",
                f.name
            );
            assert_eq!(lookup(f.scheduler, f.name), Some(f), "duplicate {}", f.name);
        }
    }

    #[test]
    fn known_names_cover_every_fact_and_the_scheduler_only() {
        assert!(is_known("scheduler") && is_known("fifo_batch") && is_known("quantum"));
        assert!(is_known("dirty_ratio") && is_known("wbt_lat_usec"));
        assert!(!is_known("fifo_btach") && !is_known("") && !is_known("iosched/fifo_batch"));
        let names = known_names();
        assert_eq!(names.iter().filter(|n| **n == "fifo_batch").count(), 1);
        assert!(FACTS.iter().all(|f| names.contains(&f.name)));
    }

    #[test]
    fn bfq_slice_idle_is_capped_below_the_wrap() {
        let f = lookup(Some("bfq"), "slice_idle").unwrap();
        assert_eq!(f.max, 4294);
        assert_eq!(f.unit, "ms");
        assert_eq!(lookup(Some("cfq"), "quantum").unwrap().source, CFQ_C);
    }

    /// The knobs kept in jiffies, as the kernel sources named in [`Fact::jiffies`] say; bfq's
    /// `slice_idle` and `fifo_expire_*` (ns), kyber's (ns) and every non-`ms` knob are not.
    #[test]
    fn only_knobs_kept_in_jiffies_say_so() {
        let mut jiffies: Vec<String> = FACTS
            .iter()
            .filter(|f| f.jiffies)
            .map(|f| format!("{}/{}", f.scheduler.unwrap_or("-"), f.name))
            .collect();
        jiffies.sort();
        assert_eq!(
            jiffies,
            [
                "anticipatory/antic_expire",
                "anticipatory/read_batch_expire",
                "anticipatory/read_expire",
                "anticipatory/write_batch_expire",
                "anticipatory/write_expire",
                "bfq/timeout_sync",
                "cfq/fifo_expire_async",
                "cfq/fifo_expire_sync",
                "cfq/group_idle",
                "cfq/slice_async",
                "cfq/slice_idle",
                "cfq/slice_sync",
                "cfq/target_latency",
                "deadline/read_expire",
                "deadline/write_expire",
                "mq-deadline/prio_aging_expire",
                "mq-deadline/read_expire",
                "mq-deadline/write_expire",
            ]
        );
        assert!(FACTS.iter().filter(|f| f.jiffies).all(|f| f.unit == "ms"));
        assert!(!kept_in_jiffies(Some("bfq"), "slice_idle"));
        assert!(kept_in_jiffies(Some("cfq"), "slice_idle"));
        assert!(!kept_in_jiffies(None, "sched_rr_timeslice_ms"));
        assert!(!kept_in_jiffies(Some("bfq"), "no_such_knob"));
    }

    #[test]
    fn fifo_batch_belongs_to_both_deadlines() {
        assert_eq!(
            schedulers_with("fifo_batch"),
            vec!["mq-deadline", "deadline"]
        );
        assert!(schedulers_with("nr_requests").is_empty());
        assert_eq!(exclusive_partner("dirty_bytes"), Some("dirty_ratio"));
        assert!(is_bytes_member("dirty_background_bytes"));
        assert!(!is_bytes_member("dirty_ratio"));
    }
}
