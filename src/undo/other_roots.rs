//! Open journal entries written under other `--sysfs-root`/`--procfs-root` than this run's:
//! `restore` cannot put them back, so it names them by tree, with the command that can.

use crate::Result;
use crate::device;
use crate::knob::vet::{VetVerdict, vet};
use crate::store::Store;
use crate::sysroot::SysRoot;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One tree of other roots and the knobs journaled under it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tree {
    /// Its roots (a sysfs and a procfs root that are siblings, `…/sys` and `…/proc`, make one
    /// tree).
    pub root: SysRoot,
    /// `<device or host-wide> <knob>`, in journal order, once each.
    pub knobs: Vec<String>,
    /// Its roots that are not found here now, shown on one line each. Its entries stay open
    /// all the same: a missing path says nothing of whether its knobs are still changed (an
    /// unmounted or bind-mounted sysfs).
    pub missing: Vec<String>,
}

/// What [`other_roots`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct OtherRoots {
    /// The trees, in the order their first entry was journaled.
    pub trees: Vec<Tree>,
    /// The files of all those entries.
    pub files: BTreeSet<PathBuf>,
}

/// The open entries of `dev` and the host-wide ones journaled for it alone (or all, without
/// `dev`) written under other roots than `root`, grouped by tree. A row that fails
/// re-validation ([`vet`]) is left out: the restore counts and reports it. Errors: the store's.
pub(crate) fn other_roots(store: &Store, root: &SysRoot, dev: Option<&str>) -> Result<OtherRoots> {
    let mut entries = store.journal_open(dev, None)?;
    if let Some(d) = dev {
        // The device's identities: here now, and as journaled (closed entries too).
        let mut ids: Vec<String> = store
            .journal_all(Some(d))?
            .into_iter()
            .filter_map(|e| e.identity)
            .collect();
        ids.extend(device::find(root, d).ok().map(|x| x.identity));
        entries.extend(store.journal_open(None, None)?.into_iter().filter(|e| {
            e.device.is_none() && e.for_identity.as_ref().is_some_and(|i| ids.contains(i))
        }));
    }
    let ours = |p: &Path| p.starts_with(&root.sys) || p.starts_with(&root.proc);
    let mut found = OtherRoots::default();
    let mut roots: Vec<(SysRoot, Vec<String>)> = Vec::new();
    for e in entries.iter().filter(|e| !ours(&e.path)) {
        let VetVerdict::Elsewhere(r) = vet(root, e) else {
            continue;
        };
        found.files.insert(e.path.clone());
        let knob = format!("{} {}", e.device.as_deref().unwrap_or("host-wide"), e.knob);
        match roots.iter_mut().find(|(o, _)| *o == r) {
            Some((_, knobs)) if knobs.contains(&knob) => {}
            Some((_, knobs)) => knobs.push(knob),
            None => roots.push((r, vec![knob])),
        }
    }
    found.trees = trees(root, roots)
        .into_iter()
        .map(|(r, knobs)| {
            let missing = [&r.sys, &r.proc]
                .into_iter()
                .filter(|t| **t != root.sys && **t != root.proc)
                .filter(|t| matches!(t.try_exists(), Ok(false)))
                .map(|t| crate::types::text::shown(&t.to_string_lossy()))
                .collect();
            Tree {
                root: r,
                knobs,
                missing,
            }
        })
        .collect();
    Ok(found)
}

/// `roots` with a derived sysfs root and a derived procfs root of one parent made one tree.
fn trees(root: &SysRoot, roots: Vec<(SysRoot, Vec<String>)>) -> Vec<(SysRoot, Vec<String>)> {
    let sys_only = |r: &SysRoot| r.sys != root.sys && r.proc == root.proc;
    let proc_only = |r: &SysRoot| r.sys == root.sys && r.proc != root.proc;
    fn parent(r: &SysRoot, sys_side: bool) -> Option<&Path> {
        if sys_side {
            r.sys.parent()
        } else {
            r.proc.parent()
        }
    }
    let mut trees: Vec<(SysRoot, Vec<String>)> = Vec::new();
    for (r, knobs) in roots {
        let sibling = trees.iter_mut().find(|(t, _)| {
            ((sys_only(&r) && proc_only(t)) || (proc_only(&r) && sys_only(t)))
                && parent(&r, sys_only(&r)).is_some()
                && parent(&r, sys_only(&r)) == parent(t, sys_only(t))
        });
        let Some((t, k)) = sibling else {
            trees.push((r, knobs));
            continue;
        };
        if sys_only(&r) {
            t.sys = r.sys;
        } else {
            t.proc = r.proc;
        }
        k.extend(knobs);
    }
    trees
}
