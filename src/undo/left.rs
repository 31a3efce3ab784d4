//! What a `restore` left changed of what it was asked to restore, by writer and by file:
//! the knobs a running tune or another writer holds, which its "left alone" lines name and its
//! exit status counts.

use super::idle::Restored;
use super::writers::tune_lock;
use crate::lock::{self, Holder};
use crate::store::journal::JournalEntry;
use crate::store::tunes::TuneRow;
use crate::sysroot::SysRoot;
use crate::types::Owner;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The writers a [`Restored`] left alone, and the files they stand for.
#[derive(Debug, Default)]
pub(crate) struct LeftAlone<'a> {
    /// Running tunes of a device (a simulated tune, with none, changes no knobs).
    pub device_tunes: Vec<&'a TuneRow>,
    /// The host's own running tunes (`tune --host`) and the host-wide knobs each journaled,
    /// sorted.
    pub host_tunes: Vec<(&'a TuneRow, Vec<String>)>,
    /// Devices another writer (not a running tune) holds, with the holder when known.
    pub held: Vec<(&'a str, &'a Option<Holder>)>,
    /// The open files under `root` those writers hold, and the host-wide ones of
    /// [`Restored::host_left`]. With `dev`, a running tune of another device or of the host
    /// is not what it was asked about, so its files are not counted.
    pub files: BTreeSet<PathBuf>,
}

/// What `r`, a restore of `dev` (or everything) under `root`, left alone, with `open` the
/// journal's open entries after it.
pub(crate) fn left_alone<'a>(
    r: &'a Restored,
    open: &[JournalEntry],
    root: &SysRoot,
    dev: Option<&str>,
) -> LeftAlone<'a> {
    let ours = |p: &Path| p.starts_with(&root.sys) || p.starts_with(&root.proc);
    let mut files = BTreeSet::new();
    let mut leave = |keep: &dyn Fn(&JournalEntry) -> bool| {
        files.extend(
            open.iter()
                .filter(|e| ours(&e.path) && keep(e))
                .map(|e| e.path.clone()),
        )
    };
    let device_tunes: Vec<&TuneRow> = r.busy.iter().filter(|t| t.device.is_some()).collect();
    for t in &device_tunes {
        // Its device and every file it journaled (host-wide ones too).
        if dev.is_none() {
            let owner = Owner::Tune(t.id);
            leave(&|e| e.owner == owner || e.device == t.device);
        }
    }
    let mut host_tunes = Vec::new();
    for t in r
        .busy
        .iter()
        .filter(|t| t.device.is_none() && tune_lock(&t.identity) == lock::HOST)
    {
        let owner = Owner::Tune(t.id);
        let mut knobs: Vec<String> = open
            .iter()
            .filter(|e| e.owner == owner && e.device.is_none())
            .map(|e| e.knob.clone())
            .collect();
        knobs.sort_unstable();
        knobs.dedup();
        host_tunes.push((t, knobs));
        if dev.is_none() {
            leave(&|e| e.owner == owner);
        }
    }
    let held: Vec<(&str, &Option<Holder>)> = r
        .held
        .iter()
        .filter(|(d, _)| !r.busy.iter().any(|t| t.device.as_deref() == Some(d)))
        .map(|(d, h)| (d.as_str(), h))
        .collect();
    for (d, _) in &held {
        leave(&|e| e.device.as_deref() == Some(*d));
    }
    if let Some(h) = &r.host_left {
        leave(&|e| e.device.is_none() && h.knobs.contains(&e.knob));
    }
    LeftAlone {
        device_tunes,
        host_tunes,
        held,
        files,
    }
}

/// How many of `files` (journaled knobs left changed) count: a file that only rows `r`
/// refused name is counted by those rows (each reported on stderr), not here.
pub(crate) fn counted(files: &BTreeSet<PathBuf>, open: &[JournalEntry], r: &Restored) -> usize {
    let refused: BTreeSet<i64> = r.refused.iter().map(|x| x.id).collect();
    files
        .iter()
        .filter(|p| {
            open.iter()
                .any(|e| &e.path == *p && !refused.contains(&e.id))
        })
        .count()
}
