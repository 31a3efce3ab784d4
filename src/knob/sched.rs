//! Host-wide CPU-scheduler knobs: the `sched_*` sysctls under `/proc/sys/kernel`, the integer
//! files of debugfs `sched/`, and the feature flags of debugfs `sched/features`, each flag a
//! boolean knob of its own.
//!
//! - The sysctls are plain integer files (facts in [`super::catalogue`]).
//! - debugfs may be unmounted, or mounted but locked down. On the machine this was written on
//!   (6.18, a Firecracker guest) `mount -t debugfs none /sys/kernel/debug` works, `sched/`
//!   lists its files, and every one of them answers EPERM ("Operation not permitted") to a
//!   read, as root. [`debugfs`] finds which case holds, once per discovery, and [`Debugfs::why`]
//!   says it in one sentence; the knobs are then left out of the search, and the tune goes on.
//! - `sched/features` is one file holding every flag (its format: [`super::features`]). A
//!   feature knob is named by its flag (`NEXT_BUDDY`), has the domain 0–1 and reads as 1 or 0
//!   (see `super::features::feature_state`); the journal keeps that 1 or 0.

use super::features::{FEATURES, FEATURES_SOURCE, parse_features};
use super::{ApplyOrder, Domain, Knob, KnobValue, catalogue, io::parse_int};
use crate::device::read_attr;
use crate::sysroot::SysRoot;
use std::path::{Path, PathBuf};

/// What debugfs `sched/` offers on this host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Debugfs {
    /// The feature flags are readable at this path: `sched/features`, or `sched_features` at
    /// the top of debugfs before 5.13 (where the 2009 debate's NEW_FAIR_SLEEPERS lived).
    Available(PathBuf),
    /// Nothing is mounted at the debugfs directory (it is missing or empty).
    Unmounted(PathBuf),
    /// debugfs is there, but has no `sched/` (a kernel without `CONFIG_SCHED_DEBUG`, or before
    /// 5.13, when these were sysctls).
    NoSched(PathBuf),
    /// `sched/` exists but its files cannot be read: the path and the error (EPERM when the
    /// kernel locks debugfs down).
    Refused(PathBuf, String),
}

impl Debugfs {
    /// Why its knobs are left out, in one sentence; `None` when [`Debugfs::Available`].
    pub fn why(&self) -> Option<String> {
        let names = "base_slice_ns, migration_cost_ns, nr_migrate and the sched/features flags";
        match self {
            Debugfs::Available(_) => None,
            Debugfs::Unmounted(d) => Some(format!(
                "debugfs is not mounted at {} (mount -t debugfs none {}), so {names} are left \
                 out",
                d.display(),
                d.display()
            )),
            Debugfs::NoSched(d) => Some(format!(
                "{} has no sched/ (kernel without CONFIG_SCHED_DEBUG, or before 5.13), so \
                 {names} are left out",
                d.display()
            )),
            Debugfs::Refused(p, e) => Some(format!(
                "debugfs is locked down here: reading {} fails ({e}), so {names} are left out",
                p.display()
            )),
        }
    }
}

/// Finds what debugfs offers under `root` (`SysRoot::debugfs`) by reading its feature
/// flags: `sched/features`, or `sched_features` before 5.13.
pub fn debugfs(root: &SysRoot) -> Debugfs {
    let d = root.debugfs();
    let empty = std::fs::read_dir(&d).map_or(true, |mut rd| rd.next().is_none());
    if empty {
        return Debugfs::Unmounted(d);
    }
    let f = if d.join("sched").is_dir() {
        d.join("sched/features")
    } else if d.join("sched_features").exists() {
        d.join("sched_features")
    } else {
        return Debugfs::NoSched(d);
    };
    match std::fs::read_to_string(&f) {
        Ok(_) => Debugfs::Available(f),
        Err(e) => Debugfs::Refused(f, errno_text(&e)),
    }
}

/// `Operation not permitted (EPERM)`: the message and the errno's name.
fn errno_text(e: &std::io::Error) -> String {
    let Some(n) = e.raw_os_error() else {
        return e.to_string();
    };
    let text = std::io::Error::from_raw_os_error(n).to_string();
    let msg = text.split(" (os error").next().unwrap_or_default();
    format!("{msg} ({:?})", nix::errno::Errno::from_raw(n))
}

/// The host-wide CPU-scheduler knobs under `root` that exist and can be read, with what debugfs
/// offers: the `sched_*` sysctls, then (when debugfs is [`Debugfs::Available`]) the integer
/// files of `sched/` and one boolean knob per flag of the features file.
pub fn knobs(root: &SysRoot) -> (Vec<Knob>, Debugfs) {
    let mut out: Vec<Knob> = catalogue::SCHED_SYSCTL_KNOBS
        .iter()
        .filter_map(|n| int_knob(&root.kernel_sysctl().join(n)))
        .collect();
    let state = debugfs(root);
    let Debugfs::Available(path) = &state else {
        return (out, state);
    };
    let sched = root.debugfs().join("sched");
    out.extend(
        catalogue::SCHED_DEBUGFS_KNOBS
            .iter()
            .filter_map(|n| int_knob(&sched.join(n))),
    );
    if let Some(text) = read_attr(path) {
        for (name, on) in parse_features(&text) {
            let fact = FEATURES.iter().find(|f| f.name == name);
            out.push(Knob {
                path: path.to_path_buf(),
                order: ApplyOrder::SchedFeature,
                domain: Domain::Int { min: 0, max: 1 },
                unit: "bool".into(),
                scheduler: None,
                current: KnobValue::Int(i64::from(on)),
                known: fact.is_some(),
                source: fact.map(|_| FEATURES_SOURCE.to_string()),
                name,
            });
        }
    }
    (out, state)
}

/// A known scheduler integer knob read from `path`; `None` when missing or unreadable.
fn int_knob(path: &Path) -> Option<Knob> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let current = parse_int(&read_attr(path)?)?;
    let fact = catalogue::lookup(None, &name)?;
    Some(Knob {
        path: path.to_path_buf(),
        order: ApplyOrder::Sched,
        domain: Domain::Int {
            min: fact.min,
            max: fact.max,
        },
        unit: fact.unit.to_string(),
        scheduler: None,
        current: KnobValue::Int(current),
        known: true,
        source: Some(fact.source.to_string()),
        name,
    })
}

/// The knobs debugfs would offer but cannot now, each with [`Debugfs::why`]: the catalogue's
/// `sched/` integers and feature flags. Empty when debugfs is available.
pub(crate) fn unavailable(state: &Debugfs) -> Vec<(String, String)> {
    let Some(why) = state.why() else {
        return Vec::new();
    };
    catalogue::SCHED_DEBUGFS_KNOBS
        .iter()
        .copied()
        .chain(FEATURES.iter().map(|f| f.name))
        .map(|n| (n.to_string(), why.clone()))
        .collect()
}
