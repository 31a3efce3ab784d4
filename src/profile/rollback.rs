//! `profile apply` all or nothing after its checks too: when the kernel refuses (or does not
//! honour) a write half-way, every knob this apply had already written is put back before it
//! returns, so the disks are as they were before it.
//!
//! The journal says what to put back: the entries of the owner [`Owner::Profile`] that
//! this apply opened (not open when it began), on the disks it wrote (and the host, when it
//! wrote host knobs), are restored through the journal's own restore
//! (`crate::knob::apply::restore_except`, the others skipped), which writes their originals
//! in the kernel's order and closes them. A knob that already had an open `profile` entry
//! (an earlier apply's, say the daemon's at boot) gets no new entry when written again; its
//! value from just before this apply, read before the first write (`Recorder`), is written
//! back directly, and its older entry stays open, still holding the value from before
//! sweetspot touched it. A `sched/features` flag of that kind is not written back (the file
//! holds every flag; `restore` undoes it) and is said so.

use crate::knob::apply::{PutBack, restore_except};
use crate::knob::io::KnobIo;
use crate::store::Store;
use crate::store::journal::JournalEntry;
use crate::sysroot::SysRoot;
use crate::types::Owner;
use crate::{Error, Result};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A [`KnobIo`] that remembers, per file, its content before the first write through it.
pub(crate) struct Recorder<'a> {
    inner: &'a dyn KnobIo,
    before: RefCell<Vec<(PathBuf, String)>>,
}

impl<'a> Recorder<'a> {
    /// Writes and reads through `inner`.
    pub(crate) fn new(inner: &'a dyn KnobIo) -> Recorder<'a> {
        Recorder {
            inner,
            before: RefCell::new(Vec::new()),
        }
    }
}

impl KnobIo for Recorder<'_> {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        self.inner.read(path)
    }

    fn write(&self, path: &Path, text: &str) -> std::io::Result<()> {
        let seen = self.before.borrow().iter().any(|(p, _)| p == path);
        if !seen && let Ok(v) = self.inner.read(path) {
            self.before.borrow_mut().push((path.to_path_buf(), v));
        }
        self.inner.write(path, text)
    }
}

/// The journal as an apply began: the ids of the open `profile` entries then.
pub(crate) struct Undo {
    open_before: BTreeSet<i64>,
}

/// What a rollback did.
#[derive(Debug, Default)]
pub(crate) struct Undone {
    /// Every knob written back.
    pub put_back: Vec<PutBack>,
    /// What could not be put back, each with why (a failed write, a feature flag).
    pub left: Vec<String>,
}

impl Undo {
    /// Notes the open `profile` entries before the first write. Errors: the store's.
    pub(crate) fn begin(store: &Store) -> Result<Undo> {
        let open_before = store
            .journal_open(None, Some(&Owner::Profile))?
            .into_iter()
            .map(|e| e.id)
            .collect();
        Ok(Undo { open_before })
    }

    /// Puts back what this apply wrote on the disks named `disks` (and the host knobs when
    /// `host`), as the module docs say; `recorder` is the io the writes went through. Never
    /// fails as a whole: what it could not put back is in [`Undone::left`].
    pub(crate) fn run(
        self,
        io: &dyn KnobIo,
        store: &mut Store,
        root: &SysRoot,
        disks: &[&str],
        host: bool,
        recorder: &Recorder<'_>,
    ) -> Undone {
        let mine = |e: &JournalEntry| {
            e.owner == Owner::Profile
                && !self.open_before.contains(&e.id)
                && match &e.device {
                    Some(d) => disks.contains(&d.as_str()),
                    None => host,
                }
        };
        let mut undone = Undone::default();
        let journaled: BTreeSet<PathBuf> = match store.journal_open(None, Some(&Owner::Profile)) {
            Ok(open) => open.into_iter().filter(mine).map(|e| e.path).collect(),
            Err(e) => {
                undone
                    .left
                    .push(format!("the journal could not be read: {e}"));
                return undone;
            }
        };
        match restore_except(io, store, root, None, Some(&Owner::Profile), &|e| !mine(e)) {
            Ok(put) => undone.put_back = put,
            Err(e) => undone.left.push(e.to_string()),
        }
        // Written without a new entry: an earlier apply's entry holds the true original.
        for (path, was) in recorder.before.borrow().iter() {
            if journaled.contains(path) || !path.exists() {
                continue;
            }
            let knob = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let value = match knob.as_str() {
                "scheduler" => crate::device::parse_scheduler(was).1.unwrap_or(was.clone()),
                "features" | "sched_features" => {
                    undone.left.push(format!(
                        "{}: a scheduler feature flag is not written back here; `sweetspot \
                         restore` undoes it",
                        path.display()
                    ));
                    continue;
                }
                _ => was.clone(),
            };
            if io.read(path).ok().as_deref().is_some_and(|now| {
                now == was
                    || (knob == "scheduler"
                        && crate::device::parse_scheduler(now).1.as_deref() == Some(&value))
            }) {
                continue;
            }
            let device = path
                .strip_prefix(root.block())
                .ok()
                .and_then(|r| r.iter().next())
                .map(|d| d.to_string_lossy().into_owned());
            match io.write(path, &format!("{value}\n")) {
                Ok(()) => undone.put_back.push(PutBack {
                    device,
                    knob,
                    value,
                }),
                Err(e) => undone.left.push(
                    Error::KnobWrite {
                        knob,
                        value,
                        path: path.clone(),
                        source: e,
                    }
                    .to_string(),
                ),
            }
        }
        undone
    }
}
