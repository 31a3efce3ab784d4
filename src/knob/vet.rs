//! Which journal rows a restore may write. The database is not trusted to name a file or a
//! value: anyone who can write it (a mode-0666 file, a copied database, a bug) could otherwise
//! make root write any text to any path. So every row is re-validated before it is written
//! (`vet`), the way `set` validates its input:
//!
//! - its file is rebuilt from the knob's catalogue entry under the run's roots, never taken
//!   from the row: `<sys>/block/<device>/queue/{scheduler,<queue knob>}`,
//!   `<sys>/block/<device>/queue/iosched/<knob>` (an iosched file the catalogue does not know
//!   is still one, as discovery offers it), `<proc>/sys/vm/<knob>`,
//!   `<proc>/sys/kernel/<sched_* knob>`, debugfs `sched/<knob>` and `sched/features` (or
//!   `sched_features` before 5.13). The device, knob and scheduler names must be plain names
//!   (no `/`, no `..`, no control character), and the row's stored path must be exactly the
//!   rebuilt one (no `..`, no other shape);
//! - its apply order and scheduler are the catalogue's for that knob (a device knob has a
//!   device, a host-wide one none; only an iosched knob has a scheduler);
//! - its original parses in the knob's domain (`validate::check_domain`, the check `set`
//!   makes): an integer in the catalogue's range (0 too for a member of an exclusive vm pair,
//!   which reads 0 while its partner rules), a plain scheduler name the kernel has offered
//!   (`catalogue::ELEVATORS`, or one the device offers now), or for `sched/features` flags
//!   only (`X` or `NO_X`).
//!
//! A row under other roots than the run's (another fake tree, or the real ones from a fake
//! run: `SysRoot::other_for`) is never written; it is left alone, as before, only when it
//! has one of these shapes there. Everything else is refused: the caller reports it (knob, row
//! id, why), skips it, restores the rest and fails (exit 1).

use super::{ApplyOrder, Domain, Knob, KnobValue, catalogue, io::parse_int};
use crate::store::journal::JournalEntry;
use crate::sysroot::SysRoot;
use std::path::{Component, Path, PathBuf};

/// What [`vet`] found of one journal row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum VetVerdict {
    /// A catalogue knob file under the run's roots (this path, rebuilt), its original in the
    /// knob's domain: restore may write it.
    Here(PathBuf),
    /// A catalogue knob file under other roots, its original in the knob's domain: left alone
    /// (named with those roots).
    Elsewhere(SysRoot),
    /// Not a row sweetspot wrote: why.
    Refused(String),
}

/// A journal row a restore refused to write (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    /// The row's id.
    pub id: i64,
    /// The knob it names (as stored; `?` when unreadable).
    pub knob: String,
    /// Why it was refused.
    pub why: String,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "journal row {} (knob '{}') refused, not written: {}",
            self.id,
            self.knob.escape_debug(),
            self.why
        )
    }
}

/// Judges journal row `e` for a restore under `root` (see the module docs).
pub(crate) fn vet(root: &SysRoot, e: &JournalEntry) -> VetVerdict {
    match judge(root, e) {
        Ok(v) => v,
        Err(why) => VetVerdict::Refused(why),
    }
}

fn judge(root: &SysRoot, e: &JournalEntry) -> Result<VetVerdict, String> {
    let shown = e.path.display().to_string().escape_debug().to_string();
    plain_path(&e.path, &shown)?;
    if e.path.starts_with(&root.sys) || e.path.starts_with(&root.proc) {
        let path = check(root, e, &e.path, true)?;
        return Ok(VetVerdict::Here(path));
    }
    let r = root
        .other_for(&e.path)
        .ok_or_else(|| format!("its path '{shown}' is no knob file sweetspot writes"))?;
    check(&r, e, &e.path, false)?;
    Ok(VetVerdict::Elsewhere(r))
}

/// Refuses a path with `.` or `..` components (`<proc>/../../etc/passwd`).
fn plain_path(path: &Path, shown: &str) -> Result<(), String> {
    if path
        .components()
        .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
    {
        Ok(())
    } else {
        Err(format!("its path '{shown}' has '.' or '..' components"))
    }
}

/// Checks `e` against the catalogue under roots `r`: its rebuilt file must be `stored`, and
/// its original in the knob's domain. `live`: the roots are the run's own, so the device's
/// offered schedulers may be read. Returns the rebuilt file.
fn check(r: &SysRoot, e: &JournalEntry, stored: &Path, live: bool) -> Result<PathBuf, String> {
    let (path, domain, unit) = rebuild(r, e)?;
    if path != stored {
        return Err(format!(
            "its path '{}' is not the file of {} {}, {}",
            stored.display().to_string().escape_debug(),
            e.device
                .as_deref()
                .map_or_else(|| "host-wide".to_string(), |d| d.to_string()),
            e.knob,
            path.display()
        ));
    }
    match domain {
        None if e.order == ApplyOrder::SchedFeature => features(&e.original)?,
        None => {
            // The scheduler: a name some kernel offered, or one this device offers now.
            let mut names: Vec<String> =
                catalogue::ELEVATORS.iter().map(|s| s.to_string()).collect();
            if live && let Some(text) = crate::device::read_attr(&path) {
                names.extend(crate::device::parse_scheduler(&text).0);
            }
            in_domain(
                e,
                &path,
                Domain::Choice(names),
                "",
                KnobValue::Name(e.original.clone()),
            )?;
        }
        Some(d) => {
            let v = parse_int(&e.original).ok_or_else(|| {
                format!(
                    "its original '{}' is not an integer",
                    e.original.escape_debug()
                )
            })?;
            in_domain(e, &path, d, unit, KnobValue::Int(v))?;
        }
    }
    Ok(path)
}

/// The knob's domain check of `set` ([`super::validate::check_domain`]) on the row's original.
fn in_domain(
    e: &JournalEntry,
    path: &Path,
    domain: Domain,
    unit: &str,
    v: KnobValue,
) -> Result<(), String> {
    let k = Knob {
        name: e.knob.clone(),
        path: path.to_path_buf(),
        order: e.order,
        domain,
        unit: unit.to_string(),
        scheduler: e.scheduler.clone(),
        current: v.clone(),
        known: true,
        source: None,
    };
    super::validate::check_domain(&k, &v).map_err(|err| match err {
        crate::Error::BadInput(msg) => format!("its original: {}", msg.escape_debug()),
        other => other.to_string(),
    })
}

/// The original of `sched/features`: the whole file as it was, flags only (`X` or `NO_X`).
fn features(original: &str) -> Result<(), String> {
    for (flag, _) in super::features::parse_features(original) {
        let ok = !flag.is_empty()
            && flag
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
        if !ok {
            return Err(format!(
                "its original holds '{}', which is not a scheduler feature flag",
                flag.escape_debug()
            ));
        }
    }
    Ok(())
}

/// A device, knob or scheduler name as the kernel makes them: not empty, no `/`, no `..`, not
/// starting with `.` ([`super::discover::check_knob_name`]), no whitespace or control
/// character.
fn plain(what: &str, name: &str) -> Result<(), String> {
    let bad = super::discover::check_knob_name(name).is_err()
        || name.chars().any(|c| c.is_whitespace() || c.is_control());
    if bad {
        return Err(format!(
            "its {what} '{}' is not a plain name",
            name.escape_debug()
        ));
    }
    Ok(())
}

/// The file of row `e`'s knob under roots `r` as the catalogue places it, with its domain
/// (`None`: the scheduler's or the features file's, checked apart) and unit. Errors: why the
/// row's device, knob, order or scheduler do not fit the catalogue.
fn rebuild(
    r: &SysRoot,
    e: &JournalEntry,
) -> Result<(PathBuf, Option<Domain>, &'static str), String> {
    let knob = e.knob.as_str();
    plain("knob", knob)?;
    let order = e.order;
    let sched_col = |want: bool| match (&e.scheduler, want) {
        (Some(s), true) => plain("scheduler", s),
        (None, false) => Ok(()),
        (Some(s), false) => Err(format!(
            "it names scheduler '{}' for {knob}, which is no iosched knob",
            s.escape_debug()
        )),
        (None, true) => Err(format!("iosched knob {knob} names no scheduler")),
    };
    let int = |f: &catalogue::Fact| {
        Some(Domain::Int {
            min: f.min,
            max: f.max,
        })
    };
    if order.is_host() {
        if let Some(d) = &e.device {
            return Err(format!(
                "host-wide knob {knob} is journaled for device '{}'",
                d.escape_debug()
            ));
        }
        sched_col(false)?;
        let fact = catalogue::lookup(None, knob).filter(|f| f.order == order);
        return Ok(match (order, fact) {
            (ApplyOrder::Vm, Some(f)) if catalogue::VM_KNOBS.contains(&knob) => {
                // A member of an exclusive pair reads 0 while its partner rules.
                let min = if catalogue::exclusive_partner(knob).is_some() {
                    0
                } else {
                    f.min
                };
                let d = Domain::Int { min, max: f.max };
                (r.vm().join(knob), Some(d), f.unit)
            }
            (ApplyOrder::Sched, Some(f)) if catalogue::SCHED_SYSCTL_KNOBS.contains(&knob) => {
                (r.kernel_sysctl().join(knob), int(f), f.unit)
            }
            (ApplyOrder::Sched, Some(f)) if catalogue::SCHED_DEBUGFS_KNOBS.contains(&knob) => {
                (r.debugfs().join("sched").join(knob), int(f), f.unit)
            }
            (ApplyOrder::SchedFeature, _) if knob == "features" => {
                (r.debugfs().join("sched/features"), None, "")
            }
            (ApplyOrder::SchedFeature, _) if knob == "sched_features" => {
                (r.debugfs().join("sched_features"), None, "")
            }
            _ => return Err(format!("{knob} is no host-wide knob of order {order:?}")),
        });
    }
    let dev = e
        .device
        .as_deref()
        .ok_or_else(|| format!("device knob {knob} is journaled without a device"))?;
    plain("device", dev)?;
    let q = r.block_dev(dev).join("queue");
    match order {
        ApplyOrder::Scheduler if knob == "scheduler" => {
            sched_col(false)?;
            Ok((q.join("scheduler"), None, ""))
        }
        ApplyOrder::Iosched => {
            sched_col(true)?;
            // An iosched file the catalogue does not know is an integer knob, as discovery
            // offers it.
            let (min, max, unit) = catalogue::lookup(e.scheduler.as_deref(), knob).map_or(
                (catalogue::UNKNOWN_DOMAIN.0, catalogue::UNKNOWN_DOMAIN.1, ""),
                |f| (f.min, f.max, f.unit),
            );
            Ok((
                q.join("iosched").join(knob),
                Some(Domain::Int { min, max }),
                unit,
            ))
        }
        ApplyOrder::NrRequests | ApplyOrder::Queue => {
            sched_col(false)?;
            match catalogue::lookup(None, knob) {
                Some(f) if f.order == order && catalogue::QUEUE_KNOBS.contains(&knob) => {
                    Ok((q.join(knob), int(f), f.unit))
                }
                _ => Err(format!("{knob} is no queue knob of order {order:?}")),
            }
        }
        _ => Err(format!("{knob} is no device knob of order {order:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        device: Option<&str>,
        knob: &str,
        path: &str,
        original: &str,
        order: ApplyOrder,
    ) -> JournalEntry {
        JournalEntry {
            id: 7,
            device: device.map(Into::into),
            identity: device.map(|d| format!("wwn:{d}")),
            for_identity: None,
            knob: knob.into(),
            path: PathBuf::from(path),
            original: original.into(),
            order,
            scheduler: (order == ApplyOrder::Iosched).then(|| "mq-deadline".to_string()),
            owner: crate::types::Owner::Set,
            recorded_at: 0,
            restored_at: None,
            boot_id: None,
        }
    }

    fn why(v: VetVerdict) -> String {
        match v {
            VetVerdict::Refused(w) => w,
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn a_row_is_written_only_at_its_catalogue_file_with_an_original_in_its_domain() {
        let root = SysRoot::new("/t/sys", "/t/proc");
        let ok = row(
            Some("sda"),
            "fifo_batch",
            "/t/sys/block/sda/queue/iosched/fifo_batch",
            "16",
            ApplyOrder::Iosched,
        );
        assert_eq!(
            vet(&root, &ok),
            VetVerdict::Here(PathBuf::from("/t/sys/block/sda/queue/iosched/fifo_batch"))
        );
        let vm = row(
            None,
            "dirty_bytes",
            "/t/proc/sys/vm/dirty_bytes",
            "0",
            ApplyOrder::Vm,
        );
        assert!(matches!(vet(&root, &vm), VetVerdict::Here(_)));
        // The reproductions.
        let passwd = JournalEntry {
            original: "pwned::0:0::/:/bin/sh".into(),
            ..row(
                None,
                "dirty_ratio",
                "/t/proc/../../victim/passwd",
                "",
                ApplyOrder::Vm,
            )
        };
        assert!(why(vet(&root, &passwd)).contains("'..'"));
        let core = row(
            None,
            "core_pattern",
            "/t/proc/sys/kernel/core_pattern",
            "|/tmp/evil %p",
            ApplyOrder::Queue,
        );
        assert!(why(vet(&root, &core)).contains("device knob core_pattern is journaled without"));
        let core = JournalEntry {
            order: ApplyOrder::Sched,
            ..core
        };
        assert!(why(vet(&root, &core)).contains("core_pattern is no host-wide knob"));
        // A scheduler row with any text: only a scheduler name.
        let sched = row(
            Some("sda"),
            "scheduler",
            "/t/sys/block/sda/queue/scheduler",
            "|/tmp/evil %p",
            ApplyOrder::Scheduler,
        );
        assert!(why(vet(&root, &sched)).contains("expected one of none, mq-deadline"));
        // Out of range, a device name that climbs, a path that is not the rebuilt one.
        let big = JournalEntry {
            original: "99999".into(),
            ..ok.clone()
        };
        assert!(why(vet(&root, &big)).contains("expected an integer in 1–1024"));
        let climb = JournalEntry {
            device: Some("..".into()),
            path: PathBuf::from("/t/sys/block/../queue/iosched/fifo_batch"),
            ..ok.clone()
        };
        assert!(why(vet(&root, &climb)).contains("'..'"));
        let moved = JournalEntry {
            path: PathBuf::from("/t/sys/block/sdb/queue/iosched/fifo_batch"),
            ..ok.clone()
        };
        assert!(why(vet(&root, &moved)).contains("is not the file of sda fifo_batch"));
        let nodev = JournalEntry {
            device: None,
            ..ok.clone()
        };
        assert!(why(vet(&root, &nodev)).contains("without a device"));
        let feat = row(
            None,
            "features",
            "/t/sys/kernel/debug/sched/features",
            "PLACE_LAG NO_NEXT_BUDDY",
            ApplyOrder::SchedFeature,
        );
        assert!(matches!(vet(&root, &feat), VetVerdict::Here(_)));
        let feat = JournalEntry {
            original: "PLACE_LAG |/tmp/evil".into(),
            ..feat
        };
        assert!(why(vet(&root, &feat)).contains("not a scheduler feature flag"));
    }

    #[test]
    fn a_row_under_other_roots_is_left_alone_only_with_a_knob_files_shape() {
        let root = SysRoot::new("/t/sys", "/t/proc");
        let other = row(
            Some("sda"),
            "read_ahead_kb",
            "/u/sys/block/sda/queue/read_ahead_kb",
            "128",
            ApplyOrder::Queue,
        );
        assert_eq!(
            vet(&root, &other),
            VetVerdict::Elsewhere(SysRoot::new("/u/sys", "/t/proc"))
        );
        // A relative path is no file sweetspot journals: refused, never written, also where,
        // made absolute, it would lie under the run's roots.
        let rel = JournalEntry {
            path: PathBuf::from("sys/block/sda/queue/read_ahead_kb"),
            ..other.clone()
        };
        assert!(why(vet(&SysRoot::default(), &rel)).contains("no knob file sweetspot writes"));
        let passwd = JournalEntry {
            path: PathBuf::from("/etc/passwd"),
            ..other.clone()
        };
        assert!(why(vet(&root, &passwd)).contains("no knob file sweetspot writes"));
        // The shape, but another knob's file.
        let wrong = JournalEntry {
            knob: "nomerges".into(),
            ..other
        };
        assert!(why(vet(&root, &wrong)).contains("is not the file of sda nomerges"));
    }
}
