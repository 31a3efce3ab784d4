//! Validation of a setting against what a device offers, and the journal set: every knob the
//! writes can change, side effects included. Nothing here writes a knob.
//!
//! Side effects journaled (docs/DESIGN.md "Kernel facts"):
//! - a scheduler switch destroys the old scheduler's `iosched/` values, resets `nr_requests`,
//!   and (bfq) may turn off writeback throttling (`wbt_lat_usec`);
//! - writing `nr_requests` resets mq-deadline's `async_depth` (measured here: 64 → 64, 32 → 32),
//!   so the active scheduler's `iosched/` values are journaled too;
//! - `dirty_bytes` zeroes `dirty_ratio` and the reverse (likewise the background pair);
//! - writing `max_sectors_kb` recomputes `read_ahead_kb` ([`resets`]), so it is journaled too
//!   and written (and restored) before `read_ahead_kb`;
//! - the CPU scheduler's feature flags share one file, `sched/features`: it is journaled once,
//!   whole (every flag as it was), and restore writes back each flag that differs.

use super::io::{KnobIo, read_knob, read_value};
use super::{ApplyOrder, Domain, Knob, KnobValue, Setting, catalogue, discover};
use crate::device::Device;
use crate::store::journal::NewEntry;
use crate::sysroot::SysRoot;
use crate::{Error, Result};
use std::path::PathBuf;

/// One validated write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Write {
    pub name: String,
    pub path: PathBuf,
    pub value: KnobValue,
    pub order: ApplyOrder,
    pub scheduler: Option<String>,
}

/// Validated writes in apply order, and the originals to journal before them: `before[i]`
/// lists (as indices into `journal`) the knobs that `writes[i]` can change, itself and its
/// side effects. Only a write that changes its knob journals them (a no-op journals nothing,
/// so a later `restore` cannot overwrite a value sweetspot never wrote), and durably before
/// it writes.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub writes: Vec<Write>,
    pub journal: Vec<NewEntry>,
    pub before: Vec<Vec<usize>>,
}

/// Validates every pair of `setting` for `device` and lists what to journal.
/// Errors: [`Error::BadInput`] (exit 2) for a bad name, an unknown or absent knob, or a value
/// outside its domain; [`Error::KnobWrite`] (exit 1) when a knob file is not writable (EROFS,
/// EACCES). Nothing has been changed when it fails.
pub(crate) fn plan(
    io: &dyn KnobIo,
    root: &SysRoot,
    device: &Device,
    setting: &Setting,
) -> Result<Plan> {
    let knobs = discover::knobs(root, device)?;
    let sched_knob = knobs.iter().find(|k| k.order == ApplyOrder::Scheduler);
    let active = sched_knob.map(|k| k.current.to_string());
    let mut writes = Vec::new();
    let target = match setting.get("scheduler") {
        Some(v) => {
            let k = discover::find(&knobs, device, "scheduler")?;
            super::zoned::check(root, &device.name, &v.to_string())?;
            check_domain(k, v)?;
            writes.push(write_for(k, v));
            Some(v.to_string())
        }
        None => active.clone(),
    };
    let switching = target != active;
    for (name, value) in setting.iter().filter(|(n, _)| *n != "scheduler") {
        discover::check_knob_name(name)?;
        let found = knobs.iter().find(|k| &k.name == name);
        let w = match found {
            Some(k) if k.order != ApplyOrder::Iosched || !switching => {
                check_domain(k, value)?;
                write_for(k, value)
            }
            _ if switching && catalogue::schedulers_with(name).is_empty() && found.is_none() => {
                return Err(discover::not_here(&knobs, device, name));
            }
            _ if switching => iosched_of_target(root, device, target.as_deref(), name, value)?,
            _ => return Err(discover::not_here(&knobs, device, name)),
        };
        writes.push(w);
    }
    check_pairs(setting)?;
    writes.sort_by_key(|w| (w.order, rank(&w.name)));
    check_writable(&writes)?;
    let (journal, before) = journal_set(io, Some(device), &knobs, &writes, switching)?;
    Ok(Plan {
        writes,
        journal,
        before,
    })
}

/// [`plan`] for a setting of host-wide knobs only ([`discover::host_knobs`]), with no device:
/// a device knob, or a host knob this host lacks, is bad input naming the valid ones.
pub(crate) fn plan_host(io: &dyn KnobIo, root: &SysRoot, setting: &Setting) -> Result<Plan> {
    let knobs = discover::host_knobs(root);
    let mut writes = Vec::new();
    for (name, value) in setting {
        discover::check_knob_name(name)?;
        let Some(k) = knobs.iter().find(|k| &k.name == name) else {
            let why = match catalogue::order_of(name) {
                Some(o) if !o.is_host() => "a device knob (give --device or --scratch)".into(),
                _ => {
                    let valid: Vec<&str> = knobs.iter().map(|k| k.name.as_str()).collect();
                    let unusable = discover::host_unusable(root);
                    match unusable.iter().find(|(n, _)| n == name) {
                        Some((_, why)) => why.clone(),
                        None => format!(
                            "not a host-wide knob here; host-wide knobs: {}",
                            valid.join(", ")
                        ),
                    }
                }
            };
            return Err(Error::BadInput(format!("knob '{name}': {why}")));
        };
        check_domain(k, value)?;
        writes.push(write_for(k, value));
    }
    check_pairs(setting)?;
    writes.sort_by_key(|w| w.order);
    check_writable(&writes)?;
    let (journal, before) = journal_set(io, None, &knobs, &writes, false)?;
    Ok(Plan {
        writes,
        journal,
        before,
    })
}

/// Refuses both members of an exclusive vm pair in one setting.
fn check_pairs(setting: &Setting) -> Result<()> {
    for (a, b) in [
        ("dirty_ratio", "dirty_bytes"),
        ("dirty_background_ratio", "dirty_background_bytes"),
    ] {
        if setting.contains_key(a) && setting.contains_key(b) {
            return Err(Error::BadInput(format!(
                "{a} and {b} are exclusive (writing one zeroes the other): set only one"
            )));
        }
    }
    Ok(())
}

/// The queue knob whose value a write of `name` recomputes, if any. Writing `max_sectors_kb`
/// commits new queue limits (block/blk-sysfs.c `queue_max_sectors_store`), and committing
/// limits recomputes the read-ahead window (block/blk-settings.c `blk_apply_bdi_limits`).
/// Measured on a loop device here (6.18): `read_ahead_kb` 512 became 2560 when
/// `max_sectors_kb` 1280 was written.
pub(crate) fn resets(name: &str) -> Option<&'static str> {
    (name == "max_sectors_kb").then_some("read_ahead_kb")
}

/// Order among knobs of one [`ApplyOrder`]: a knob that [`resets`] another goes first, so the
/// other's own value (written or restored after it) is the one that stays.
pub(crate) fn rank(name: &str) -> u8 {
    if resets(name).is_some() { 0 } else { 1 }
}

fn write_for(k: &Knob, v: &KnobValue) -> Write {
    Write {
        name: k.name.clone(),
        path: k.path.clone(),
        value: v.clone(),
        order: k.order,
        scheduler: k.scheduler.clone(),
    }
}

/// An iosched knob of the scheduler this setting switches to: its file does not exist yet, so
/// the catalogue must know it to validate the value.
fn iosched_of_target(
    root: &SysRoot,
    device: &Device,
    target: Option<&str>,
    name: &str,
    value: &KnobValue,
) -> Result<Write> {
    let target = target.unwrap_or("none");
    let fact = catalogue::lookup(Some(target), name).ok_or_else(|| {
        let owners = catalogue::schedulers_with(name);
        let has = if owners.is_empty() {
            "the active scheduler".to_string()
        } else {
            format!("scheduler {}", owners.join(" and "))
        };
        Error::BadInput(format!(
            "knob '{name}' does not exist under scheduler {target}, which this setting switches \
             {} to; it exists under {has}",
            device.name
        ))
    })?;
    let domain = Domain::Int {
        min: fact.min,
        max: fact.max,
    };
    let k = Knob {
        name: name.to_string(),
        path: root
            .block_dev(&device.name)
            .join("queue/iosched")
            .join(name),
        order: ApplyOrder::Iosched,
        domain,
        unit: fact.unit.to_string(),
        scheduler: Some(target.to_string()),
        current: KnobValue::Int(0),
        known: true,
        source: Some(fact.source.to_string()),
    };
    check_domain(&k, value)?;
    Ok(write_for(&k, value))
}

/// Exit 2 when `v` is not in the knob's domain.
pub(crate) fn check_domain(k: &Knob, v: &KnobValue) -> Result<()> {
    if k.domain.contains(v) {
        return Ok(());
    }
    let shown = match &k.domain {
        Domain::Int { min, max } => format!(
            "an integer in {} {}",
            catalogue::domain_text(*min, *max),
            k.unit
        ),
        Domain::Choice(c) => format!("one of {}", c.join(", ")),
    };
    Err(Error::BadInput(format!(
        "knob '{}': bad value '{v}': expected {}",
        k.name,
        shown.trim_end()
    )))
}

/// Refuses up front when a knob file cannot be written (read-only /sys: EROFS; not root:
/// EACCES), so nothing is half-applied.
fn check_writable(writes: &[Write]) -> Result<()> {
    use nix::unistd::{AccessFlags, access};
    for w in writes.iter().filter(|w| w.path.exists()) {
        if let Err(errno) = access(&w.path, AccessFlags::W_OK) {
            return Err(Error::KnobWrite {
                knob: w.name.clone(),
                value: w.value.to_string(),
                path: w.path.clone(),
                source: std::io::Error::from_raw_os_error(errno as i32),
            });
        }
    }
    Ok(())
}

/// The originals to journal: each written knob that exists now, plus side effects, all read
/// now (before any write), and per write the indices of those it can change ([`Plan::before`]).
/// Host-wide knobs are journaled without a device, for `device` (`for_identity`; `None` for a
/// host-only plan).
fn journal_set<'k>(
    io: &dyn KnobIo,
    device: Option<&Device>,
    knobs: &'k [Knob],
    writes: &[Write],
    switching: bool,
) -> Result<(Vec<NewEntry>, Vec<Vec<usize>>)> {
    let mut set: Vec<&Knob> = Vec::new();
    let by_name = |n: &str| knobs.iter().find(|k| k.name == n);
    let mut before = Vec::with_capacity(writes.len());
    for w in writes {
        let mut touched: Vec<usize> = Vec::new();
        let mut add = |k: &'k Knob| {
            let i = match set.iter().position(|s| s.path == k.path) {
                Some(i) => i,
                None => {
                    set.push(k);
                    set.len() - 1
                }
            };
            if !touched.contains(&i) {
                touched.push(i);
            }
        };
        if let Some(k) = knobs.iter().find(|k| k.path == w.path) {
            add(k);
        }
        let touches_iosched =
            w.order == ApplyOrder::Scheduler && switching || w.order == ApplyOrder::NrRequests;
        if touches_iosched {
            knobs
                .iter()
                .filter(|k| k.order == ApplyOrder::Iosched)
                .for_each(&mut add);
        }
        if w.order == ApplyOrder::Scheduler && switching {
            ["nr_requests", "wbt_lat_usec"]
                .into_iter()
                .filter_map(by_name)
                .for_each(&mut add);
        }
        if let Some(p) = catalogue::exclusive_partner(&w.name).and_then(by_name) {
            add(p);
        }
        if let Some(p) = resets(&w.name).and_then(by_name) {
            add(p);
        }
        before.push(touched);
    }
    let journal = set
        .into_iter()
        .map(|k| {
            // The feature flags share one file (and the journal keeps one open entry per
            // path): its entry is the whole file, every flag as it was, under the file's name.
            let (knob, original) = if k.order == ApplyOrder::SchedFeature {
                let file = k.path.file_name().map(|f| f.to_string_lossy().into_owned());
                (file.unwrap_or_default(), read_knob(io, &k.path)?)
            } else {
                (k.name.clone(), read_value(io, &k.path, k.order, &k.name)?)
            };
            let dev = device.filter(|_| !k.order.is_host());
            Ok(NewEntry {
                device: dev.map(|d| d.name.clone()),
                identity: dev.map(|d| d.identity.clone()),
                for_identity: device
                    .filter(|_| k.order.is_host())
                    .map(|d| d.identity.clone()),
                knob,
                path: k.path.clone(),
                original,
                order: k.order,
                scheduler: k.scheduler.clone(),
                boot_id: None,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((journal, before))
}
