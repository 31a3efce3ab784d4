//! Recovery of killed writers: a tune left `running` whose process is gone, and a killed
//! `bench` or `tune --scratch` (owner `bench`), each has its own journal entries put back
//! under its device's lock before anything else; the tune is marked `recovered`. `tune`,
//! `bench` (on a device), `restore` and the daemon call [`recover`] first.

use super::writers::{Writer, alive, open_devices, restore_owned, take_writer};
use crate::Result;
use crate::knob::vet::Refused;
use crate::store::Store;
use crate::sysroot::SysRoot;
use crate::types::Owner;

/// What [`recover`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Recovered {
    /// Killed tunes marked `recovered`.
    pub tunes: usize,
    /// Knobs written back from their journal entries.
    pub knobs: usize,
    /// The killed tunes' knobs among them: device, knob, value (not those of killed
    /// `bench` runs, which [`recover`] counts in `knobs` only).
    pub put: Vec<crate::knob::apply::PutBack>,
    /// Journal rows of killed tunes refused and left open ([`crate::knob::vet`]; each
    /// reported on stderr): such a tune stays `running`.
    pub refused: Vec<Refused>,
}

/// Finds tunes left `running` by a process that is gone (SIGKILL, power loss) and restores
/// their devices from their own journal entries (owner `tune:<id>`) first, each under its
/// device lock ([`crate::lock`]) and their host-wide knobs under the host's ([`crate::lock::HOST`]);
/// what another writer's lock guards now is left for a later call; marks them `recovered`.
/// Call it at the start of `tune`, `bench` (on a device), `restore` and `daemon`. A tune
/// whose process is alive is left alone.
///
/// Errors: those of the journaled restore (the tune stays `running`, so the next call retries);
/// [`crate::Error::Failed`] when it refused journal rows ([`crate::knob::vet`]: each reported on
/// stderr, skipped, the rest restored).
pub(crate) fn recover(store: &mut Store, root: &SysRoot) -> Result<Recovered> {
    let io = crate::knob::io::RealIo;
    let mut n = recover_with(&io, store, root)?;
    n.knobs += benches(&io, store, root, &mut n.refused)?;
    match n.refused.len() {
        0 => Ok(n),
        k => Err(crate::knob::restore::refused_error(k)),
    }
}

/// "1 knob", "2 knobs": a count of knobs for a message.
fn knobs(n: usize) -> String {
    if n == 1 {
        "1 knob".to_string()
    } else {
        format!("{n} knobs")
    }
}

/// Restores the open entries of owner `bench` ([`Owner::Bench`]) whose writer is
/// gone: a killed `bench`, or a killed `tune --scratch`, whose loop device's baseline is
/// journaled under `bench` before the tune has an id. No `tunes` row names them, so
/// [`recover_with`] leaves them. Each device (the host for vm knobs) is written only under its
/// lock; a bench that is still running holds it and is left alone. Entries of a device that
/// is gone are closed with one line saying so ([`crate::knob::apply::restore_with`]).
/// `restore` does not call this: it restores every idle entry itself and lists them.
/// Returns how many knobs were written back. Errors: those of the restore; [`crate::Error::Failed`]
/// when it refused journal rows (each reported on stderr, skipped, the rest restored).
#[cfg(test)]
pub(crate) fn recover_benches(
    io: &dyn crate::knob::io::KnobIo,
    store: &mut Store,
    root: &SysRoot,
) -> Result<usize> {
    let mut refused = Vec::new();
    let n = benches(io, store, root, &mut refused)?;
    match refused.len() {
        0 => Ok(n),
        k => Err(crate::knob::restore::refused_error(k)),
    }
}

/// [`recover_benches`], adding the rows it refused to `refused`.
fn benches(
    io: &dyn crate::knob::io::KnobIo,
    store: &mut Store,
    root: &SysRoot,
    refused: &mut Vec<Refused>,
) -> Result<usize> {
    let owner = &Owner::Bench;
    let db = store.path().to_path_buf();
    let mut n = 0;
    for name in open_devices(store, owner)? {
        let _lock = match take_writer(&db, root, name.as_deref())? {
            Writer::Ours(l) => l,
            Writer::Held(_) => continue,
        };
        let done = restore_owned(io, store, root, name.as_deref(), owner)?;
        refused.extend(done.refused);
        let put = done.put;
        if !put.is_empty() {
            tracing::warn!(
                "a killed `sweetspot bench` or `tune --scratch` left {} of {} changed; \
                 restored them",
                knobs(put.len()),
                name.as_deref().unwrap_or("the host")
            );
        }
        n += put.len();
    }
    Ok(n)
}

/// [`recover`] through `io`. Every open entry of the tune is restored: its device's knobs
/// (marked restored unwritten when the device is gone, e.g. a scratch loop device) and the
/// host-wide vm knobs it changed. One writer per device: each device's entries are written
/// only under its lock, and the host-wide ones only under the host's ([`crate::lock::HOST`]). When
/// another writer holds one of those, its entries are left open and the tune stays `running`,
/// so a later call finishes it; one warning says what was restored and what waits for whom.
pub(crate) fn recover_with(
    io: &dyn crate::knob::io::KnobIo,
    store: &mut Store,
    root: &SysRoot,
) -> Result<Recovered> {
    let mut n = Recovered::default();
    let db = store.path().to_path_buf();
    for t in store.running_tunes()? {
        if alive(&db, root, &t) {
            continue;
        }
        let owner = Owner::Tune(t.id);
        let mut k = 0;
        let mut left: Vec<String> = Vec::new();
        for name in open_devices(store, &owner)? {
            let _lock = match take_writer(&db, root, name.as_deref())? {
                Writer::Ours(l) => l,
                Writer::Held(h) => {
                    let who = h.map_or_else(|| "another sweetspot".to_string(), |h| h.to_string());
                    left.push(match &name {
                        Some(d) => {
                            format!("its device {d} is in use by {who}, so it is restored later")
                        }
                        None => {
                            let mut knobs: Vec<String> = store
                                .journal_open(None, Some(&owner))?
                                .into_iter()
                                .filter(|e| e.device.is_none())
                                .map(|e| e.knob)
                                .collect();
                            knobs.sort();
                            knobs.dedup();
                            format!(
                                "{who} holds the host-wide knobs' lock, so {} {} restored later",
                                knobs.join(", "),
                                if knobs.len() == 1 { "is" } else { "are" }
                            )
                        }
                    });
                    continue;
                }
            };
            let done = restore_owned(io, store, root, name.as_deref(), &owner)?;
            k += done.put.len();
            n.put.extend(done.put);
            if !done.refused.is_empty() {
                left.push(format!(
                    "{} of its journal rows {} refused (see above), so it stays running",
                    done.refused.len(),
                    if done.refused.len() == 1 { "is" } else { "are" }
                ));
                n.refused.extend(done.refused);
            }
        }
        n.knobs += k;
        if !left.is_empty() {
            // Still `running`: the next call restores the rest, then marks it recovered.
            tracing::warn!(
                "tune {} on {} was killed (pid {}); {}{}",
                t.id,
                t.target,
                t.pid,
                if k == 0 {
                    String::new()
                } else {
                    format!(
                        "restored {k} knob{} it changed; ",
                        if k == 1 { "" } else { "s" }
                    )
                },
                left.join("; ")
            );
            continue;
        }
        tracing::warn!(
            "tune {} on {} was killed (pid {}); {}",
            t.id,
            t.target,
            t.pid,
            match &t.device {
                _ if k == 0 => "nothing of it was left to restore".to_string(),
                Some(d) if crate::device::find(root, d).is_err() => {
                    format!("restored {} ({d} is gone: a scratch device?)", knobs(k))
                }
                Some(d) => format!("restored {} it changed (on {d} or host-wide)", knobs(k)),
                None => format!("restored {}", knobs(k)),
            }
        );
        store.finish_tune(t.id, crate::types::TuneStatus::Recovered)?;
        n.tunes += 1;
    }
    Ok(n)
}
