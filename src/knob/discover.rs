//! Discovery of the knobs a device offers right now:
//!
//! - `queue/scheduler` (an enum of the offered schedulers; on a host-managed zoned disk before
//!   Linux 6.10 the zone-aware ones only, [`super::zoned`]);
//! - every file in `queue/iosched/` of the active scheduler, listed, not hard-coded (a file the
//!   [`catalogue`] does not know is an integer knob with its current value);
//! - `queue/` knobs in `catalogue::QUEUE_KNOBS` that exist;
//! - host-wide `/proc/sys/vm` knobs in `catalogue::VM_KNOBS` that exist;
//! - host-wide CPU-scheduler knobs ([`super::sched`]): the `sched_*` sysctls that exist, and
//!   debugfs `sched/` when it can be read.
//!
//! `find` looks a knob up by name and explains bad names: an unknown knob lists the valid
//! ones; a knob of another scheduler says which scheduler has it and which one is active.

use super::{ApplyOrder, Domain, Knob, KnobValue, catalogue, io::parse_int};
use crate::device::{Device, parse_scheduler, read_attr};
use crate::sysroot::SysRoot;
use crate::{Error, Result};
use std::path::Path;

/// Every knob of `device` plus the host-wide knobs (`host_knobs`), in apply order.
/// Errors: [`Error::Io`] when the device's `queue/` directory cannot be read.
pub fn knobs(root: &SysRoot, device: &Device) -> Result<Vec<Knob>> {
    let mut out = device_knobs(root, &device.name)?;
    out.extend(host_knobs(root));
    Ok(out)
}

/// The host-wide knobs under `root`, in apply order: `/proc/sys/vm`, then the CPU
/// scheduler's ([`super::sched::knobs`]; debugfs ones only when it can be read).
pub(crate) fn host_knobs(root: &SysRoot) -> Vec<Knob> {
    let mut out = vm_knobs(root);
    out.extend(super::sched::knobs(root).0);
    out
}

/// The host-wide knobs that exist (or would) but cannot be tuned now, each with the reason:
/// an unused member of an exclusive vm pair ([`unused_pair_members`]) and the debugfs knobs
/// when debugfs is unmounted or locked down ([`super::sched::unavailable`]).
pub(crate) fn host_unusable(root: &SysRoot) -> Vec<(String, String)> {
    let mut out = unused_pair_members(&vm_knobs(root));
    out.extend(super::sched::unavailable(&super::sched::debugfs(root)));
    out
}

/// The knobs of the disk `name` (scheduler, iosched/*, queue/*), in apply order.
pub(crate) fn device_knobs(root: &SysRoot, name: &str) -> Result<Vec<Knob>> {
    let q = root.block_dev(name).join("queue");
    if !q.is_dir() {
        return Err(Error::io(
            format!("reading {}", q.display()),
            std::io::Error::from(std::io::ErrorKind::NotFound),
        ));
    }
    let mut out = Vec::new();
    let mut active = None;
    if let Some(text) = read_attr(&q.join("scheduler")) {
        let (offered, act) = parse_scheduler(&text);
        if let Some(a) = &act {
            // A host-managed zoned disk before 6.10: zone-aware schedulers only (zoned.rs).
            let source = match super::zoned::restriction(root, name) {
                Some(why) => format!(
                    "{}; {why}: {} only",
                    catalogue::SCHEDULER_SOURCE,
                    super::zoned::ZONE_AWARE.join(", ")
                ),
                None => catalogue::SCHEDULER_SOURCE.into(),
            };
            out.push(Knob {
                name: "scheduler".into(),
                path: q.join("scheduler"),
                order: ApplyOrder::Scheduler,
                domain: Domain::Choice(super::zoned::domain(root, name, offered)),
                unit: String::new(),
                scheduler: None,
                current: KnobValue::Name(a.clone()),
                known: true,
                source: Some(source),
            });
        }
        active = act;
    }
    for name in catalogue::QUEUE_KNOBS {
        if let Some(mut k) = int_knob(&q.join(name), None) {
            if *name == "max_sectors_kb"
                && let (Domain::Int { max, .. }, Some(hw)) = (
                    &mut k.domain,
                    read_attr(&q.join("max_hw_sectors_kb")).and_then(|s| parse_int(&s)),
                )
            {
                *max = (*max).min(hw);
            }
            out.push(k);
        }
    }
    if let Some(a) = active.filter(|a| a != "none") {
        out.extend(iosched_knobs(&q.join("iosched"), &a));
    }
    out.sort_by_key(|k| k.order);
    Ok(out)
}

/// Every file in `iosched_dir` as a knob of `scheduler`, sorted by name.
pub(crate) fn iosched_knobs(iosched_dir: &Path, scheduler: &str) -> Vec<Knob> {
    let Ok(rd) = std::fs::read_dir(iosched_dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
        .map(|e| e.path())
        .collect();
    files.sort();
    files
        .iter()
        .filter_map(|p| int_knob(p, Some(scheduler)))
        .collect()
}

/// The host-wide `/proc/sys/vm` knobs that exist under `root`.
pub(crate) fn vm_knobs(root: &SysRoot) -> Vec<Knob> {
    catalogue::VM_KNOBS
        .iter()
        .filter_map(|n| int_knob(&root.vm().join(n), None))
        .collect()
}

/// The members of exclusive vm pairs that read 0 because the other member rules
/// (`dirty_bytes` 0 while `dirty_ratio` is set, or the reverse), each with the reason. Their
/// 0 means "unused", not a value: a tune could not measure or restore its default through
/// them (writing one zeroes the other), so they are not tunable until the pair is switched.
pub(crate) fn unused_pair_members(vm: &[Knob]) -> Vec<(String, String)> {
    let value = |n: &str| {
        vm.iter()
            .find(|k| k.name == n)
            .and_then(|k| k.current.as_int())
    };
    vm.iter()
        .filter_map(|k| {
            let partner = catalogue::exclusive_partner(&k.name)?;
            let p = value(partner)?;
            (k.current.as_int() == Some(0) && p != 0).then(|| {
                (
                    k.name.clone(),
                    format!(
                        "host-wide {} is 0, unused while {partner} = {p} rules; tune \
                         {partner} instead",
                        k.name
                    ),
                )
            })
        })
        .collect()
}

/// An integer knob read from `path`; `None` when missing or not an integer.
fn int_knob(path: &Path, scheduler: Option<&str>) -> Option<Knob> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let text = read_attr(path)?;
    let Some(current) = parse_int(&text) else {
        tracing::debug!("{}: not an integer ('{text}'), not a knob", path.display());
        return None;
    };
    let fact = catalogue::lookup(scheduler, &name);
    let order = match (scheduler, fact) {
        (Some(_), _) => ApplyOrder::Iosched,
        (None, Some(f)) => f.order,
        (None, None) => ApplyOrder::Queue,
    };
    let (min, max) = fact
        .map(|f| (f.min, f.max))
        .unwrap_or(catalogue::UNKNOWN_DOMAIN);
    Some(Knob {
        path: path.to_path_buf(),
        order,
        domain: Domain::Int { min, max },
        unit: fact.map(|f| f.unit).unwrap_or("").to_string(),
        scheduler: scheduler.map(str::to_string),
        current: KnobValue::Int(current),
        known: fact.is_some(),
        source: fact.map(|f| f.source.to_string()),
        name,
    })
}

/// The knob called `name` among `knobs` (as discovered for `device`).
///
/// Errors ([`Error::BadInput`], exit 2): a name with `/` or `..`; a knob that belongs to a
/// scheduler other than the active one ("knob 'fifo_batch' exists under scheduler
/// mq-deadline, but loop0's active scheduler is none"); an unknown knob, listing the valid ones.
pub(crate) fn find<'a>(knobs: &'a [Knob], device: &Device, name: &str) -> Result<&'a Knob> {
    check_knob_name(name)?;
    knobs
        .iter()
        .find(|k| k.name == name)
        .ok_or_else(|| not_here(knobs, device, name))
}

/// Rejects knob names that could escape the knob directories.
pub(crate) fn check_knob_name(name: &str) -> Result<()> {
    if name.is_empty() || name.contains('/') || name.contains("..") || name.starts_with('.') {
        return Err(Error::BadInput(format!("bad knob name '{name}'")));
    }
    Ok(())
}

/// The error for a knob `name` that `device` does not offer now; a misspelt one gets the
/// closest name it offers or sweetspot knows ([`catalogue::did_you_mean`]).
pub(crate) fn not_here(knobs: &[Knob], device: &Device, name: &str) -> Error {
    let active = knobs
        .iter()
        .find(|k| k.order == ApplyOrder::Scheduler)
        .map(|k| k.current.to_string())
        .unwrap_or_else(|| device.scheduler.clone());
    let owners = catalogue::schedulers_with(name);
    if !owners.is_empty() {
        let offered: Vec<&str> = owners
            .iter()
            .copied()
            .filter(|s| device.schedulers.iter().any(|o| o == s))
            .collect();
        let hint = match offered.first() {
            Some(s) => format!("; set scheduler={s} first (or in the same command)"),
            None => format!("; {} does not offer it", device.name),
        };
        return Error::BadInput(format!(
            "knob '{name}' exists under scheduler {}, but {}'s active scheduler is {active}{hint}",
            owners.join(" and "),
            device.name
        ));
    }
    let valid: Vec<&str> = knobs.iter().map(|k| k.name.as_str()).collect();
    let known = catalogue::known_names();
    let hint = catalogue::did_you_mean(name, valid.iter().copied().chain(known));
    Error::BadInput(format!(
        "unknown knob '{name}' for {}{hint}; valid knobs: {}",
        device.name,
        valid.join(", ")
    ))
}
