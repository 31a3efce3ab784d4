//! Applying a profile to the disks present now: each device entry finds its disks by
//! identity (or model, for a fleet entry), never by name, and its knobs go through the
//! journaled write path ([`crate::knob::apply`]) under the owner `profile`, so `restore`
//! undoes a profile like any other change. Host-wide knobs (`[host]`: the host's own sweet
//! spot and those of device tunes) are applied once, under the host's lock
//! ([`crate::lock::HOST`]), with a warning when the host sweet spot was tuned on another
//! kernel.

use super::model::{DeviceEntry, Profile};
use super::{attr_path, in_apply_order};
use crate::device::{self, Device};
use crate::knob::apply::apply_with;
use crate::knob::io::{KnobIo, RealIo};
use crate::lock::{DeviceLock, Holder};
use crate::store::Store;
use crate::sysroot::SysRoot;
use crate::types::{Owner, Setting};
use crate::{Error, Result};
use std::path::Path;

/// What happened to one device entry on one disk.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum ApplyStatus {
    /// Written and read back: `knob from → to` per knob (knobs already at their value are
    /// not listed).
    Applied {
        /// `(knob, from, to)`.
        changes: Vec<(String, String, String)>,
    },
    /// `--dry-run`: the shell commands that would do it.
    DryRun {
        /// One `echo VALUE > FILE` per knob, in apply order.
        commands: Vec<String>,
    },
    /// A "keep the default" entry: nothing to write.
    Nothing,
    /// No present disk matches the entry's identity: skipped.
    Absent {
        /// What the entry looks for (`super::model::Match::describe`).
        wanted: String,
    },
    /// The kernel refused or did not honour a write (the message names knob, value, errno);
    /// what the apply had written before was put back ([`super::rollback`]).
    Failed {
        /// The error, and what the rollback could not put back.
        error: String,
    },
    /// Not applied because another entry's write failed: `changes` had been written and were
    /// put back (`put_back`), or (both empty) it was not reached.
    RolledBack {
        /// `(knob, from, to)` written, then undone.
        changes: Vec<(String, String, String)>,
        /// `(knob, value)` written back on this disk (or the host).
        put_back: Vec<(String, String)>,
    },
}

/// One line of the apply report.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ApplyOutcome {
    /// The entry's name when tuned, or `host` for the host-wide knobs.
    pub entry: String,
    /// The present disk it matched (`None` when absent or for the host).
    pub device: Option<String>,
    /// Set when the running kernel differs from the one it was tuned on.
    pub kernel_warning: Option<String>,
    /// What happened.
    #[serde(flatten)]
    pub status: ApplyStatus,
}

/// Applies `profile` (only the entries matching `only`, a present kernel name, when given)
/// to `root`, each disk under its device lock ([`crate::lock`], held by `command`); `dry_run`
/// writes nothing and takes no lock.
///
/// A disk several entries match gets the narrowest one only ([`super::overlap`]: one disk
/// over model and firmware over model alone), with a warning naming them.
///
/// All or nothing up front: every entry and the host knobs are checked against the disks as
/// they are now (`crate::knob::apply::check`: a knob the scheduler lacks, both members of a
/// dirty pair, a value the kernel's domain refuses) and every lock is taken before the first
/// write, so a bad profile or a busy disk changes nothing. Errors: those (bad input, exit 2,
/// naming the entry and disk; a held lock names its holder) and the store's. A write the
/// kernel then refuses or does not honour stops the apply and puts back every knob it had
/// written ([`super::rollback`]), so it stays all or nothing: an outcome, not an error (that
/// entry [`ApplyStatus::Failed`], the others [`ApplyStatus::RolledBack`]).
pub fn apply(
    store: &mut Store,
    root: &SysRoot,
    db: &Path,
    profile: &Profile,
    only: Option<&str>,
    dry_run: bool,
    command: &str,
) -> Result<Vec<ApplyOutcome>> {
    apply_through(&RealIo, store, root, db, profile, only, dry_run, command)
}

/// [`apply`] with its writes through `io` (unit tests put a kernel that refuses behind it).
// The arguments are apply's and the io seam; a struct for them would only rename them.
#[allow(clippy::too_many_arguments)]
pub(crate) fn apply_through(
    io: &dyn KnobIo,
    store: &mut Store,
    root: &SysRoot,
    db: &Path,
    profile: &Profile,
    only: Option<&str>,
    dry_run: bool,
    command: &str,
) -> Result<Vec<ApplyOutcome>> {
    let present = device::list(root)?;
    let kernel = device::kernel_release();
    let mut out = Vec::new();
    // Each disk once, with the narrowest entry that matches it (refused when two tie).
    let resolved = super::overlap::resolve(root, &present, profile, only)?;
    for o in &resolved.overlaps {
        tracing::warn!("{}", o.message);
    }
    if only.is_none() {
        for (d, _) in profile
            .devices
            .iter()
            .zip(&resolved.matched)
            .filter(|(_, m)| !**m)
        {
            out.push(ApplyOutcome {
                entry: d.name.clone(),
                device: None,
                kernel_warning: None,
                status: ApplyStatus::Absent {
                    wanted: d.matches.describe(),
                },
            });
        }
    }
    let targets: Vec<(&DeviceEntry, &Device)> = resolved
        .targets
        .iter()
        .map(|(i, dev)| (&profile.devices[*i], *dev))
        .collect();
    // The host's entry: its knobs, or a "keep the default" host sweet spot to report.
    let host = profile
        .host
        .as_ref()
        .filter(|h| only.is_none() && (!h.knobs.is_empty() || h.is_tuned()));
    for (d, dev) in &targets {
        if !d.knobs.is_empty() {
            crate::knob::apply::check(root, dev, &d.knobs)
                .map_err(|e| context(e, &d.name, &dev.name))?;
        }
    }
    let host_commands = match host {
        Some(h) if h.knobs.is_empty() => Some(Vec::new()),
        Some(h) => Some(
            crate::knob::apply::check_host(root, &h.knobs)
                .map_err(|e| context(e, "host", "[host]"))?,
        ),
        None => None,
    };
    let mut locks = Vec::new();
    if !dry_run {
        let mut ids: Vec<&Device> = targets
            .iter()
            .filter(|(d, _)| !d.knobs.is_empty())
            .map(|(_, dev)| *dev)
            .collect();
        ids.dedup_by(|a, b| a.identity == b.identity);
        for dev in ids {
            locks.push(DeviceLock::acquire(
                &crate::lock::path(db, root, &dev.identity),
                &dev.name,
                Holder::me(command),
            )?);
        }
        if let Some(h) = host.filter(|h| !h.knobs.is_empty()) {
            let names: Vec<&str> = h.knobs.keys().map(String::as_str).collect();
            locks.push(DeviceLock::acquire(
                &crate::lock::path(db, root, crate::lock::HOST),
                &crate::lock::host_label(&names),
                Holder::me(command),
            )?);
        }
    }
    let jobs = jobs(root, &targets, host.zip(host_commands), &kernel, dry_run);
    out.extend(run(io, store, root, jobs)?);
    drop(locks);
    Ok(out)
}

/// The jobs of an apply: each target disk's entry, then the host's knobs (with their dry-run
/// commands), each with its outcome to fill in; the kernel warnings said against `kernel`.
fn jobs<'a>(
    root: &SysRoot,
    targets: &[(&'a DeviceEntry, &'a Device)],
    host: Option<(&'a super::model::Host, Vec<String>)>,
    kernel: &str,
    dry_run: bool,
) -> Vec<(ApplyOutcome, Job<'a>)> {
    let warn_kernel = |tuned_on: &str| {
        (tuned_on != kernel).then(|| {
            format!(
                "tuned on {tuned_on}, running {kernel}: {}; a retune is advised",
                if dry_run {
                    "would be applied"
                } else {
                    "applied"
                }
            )
        })
    };
    let mut jobs: Vec<(ApplyOutcome, Job)> = Vec::new();
    for &(d, dev) in targets {
        let job = if d.knobs.is_empty() {
            Job::Done(ApplyStatus::Nothing)
        } else if dry_run {
            Job::Done(ApplyStatus::DryRun {
                commands: commands(root, &dev.name, &d.knobs),
            })
        } else {
            Job::Disk(dev, &d.knobs)
        };
        let outcome = ApplyOutcome {
            entry: d.name.clone(),
            device: Some(dev.name.clone()),
            kernel_warning: warn_kernel(&d.kernel),
            status: ApplyStatus::Nothing,
        };
        jobs.push((outcome, job));
    }
    if let Some((h, commands)) = host {
        let job = if h.knobs.is_empty() {
            Job::Done(ApplyStatus::Nothing)
        } else if dry_run {
            Job::Done(ApplyStatus::DryRun { commands })
        } else {
            Job::Host(&h.knobs)
        };
        let outcome = ApplyOutcome {
            entry: "host".into(),
            device: None,
            kernel_warning: h.kernel.as_deref().and_then(warn_kernel),
            status: ApplyStatus::Nothing,
        };
        jobs.push((outcome, job));
    }
    jobs
}

/// One disk's or the host's part of an apply.
enum Job<'a> {
    /// Nothing to write: its status already.
    Done(ApplyStatus),
    /// The knobs to write on a disk.
    Disk(&'a Device, &'a Setting),
    /// The host-wide knobs to write.
    Host(&'a Setting),
}

/// Writes the jobs in order through the journal; at the first write the kernel refuses or
/// does not honour, stops and puts back what the earlier ones wrote ([`super::rollback`]).
/// Errors: the store's, before the first write.
fn run(
    io: &dyn KnobIo,
    store: &mut Store,
    root: &SysRoot,
    jobs: Vec<(ApplyOutcome, Job<'_>)>,
) -> Result<Vec<ApplyOutcome>> {
    let writes = jobs.iter().any(|(_, j)| !matches!(j, Job::Done(_)));
    let undo = if writes {
        Some(super::rollback::Undo::begin(store)?)
    } else {
        None
    };
    let recorder = super::rollback::Recorder::new(io);
    let mut out = Vec::new();
    let mut failed: Option<(usize, Error)> = None;
    let mut wrote: Vec<&str> = Vec::new();
    let mut host_wrote = false;
    for (i, (mut outcome, job)) in jobs.into_iter().enumerate() {
        let result = match job {
            Job::Done(status) => {
                outcome.status = status;
                out.push(outcome);
                continue;
            }
            _ if failed.is_some() => Ok(Vec::new()),
            Job::Disk(dev, knobs) => {
                wrote.push(&dev.name);
                apply_with(&recorder, store, root, dev, knobs, &Owner::Profile)
            }
            Job::Host(knobs) => {
                host_wrote = true;
                crate::knob::apply::apply_host_with(&recorder, store, root, knobs, &Owner::Profile)
            }
        };
        outcome.status = match result {
            Ok(changes) if failed.is_some() => ApplyStatus::RolledBack {
                changes: changes
                    .into_iter()
                    .map(|c| (c.knob, c.from, c.to))
                    .collect(),
                put_back: Vec::new(),
            },
            Ok(changes) => applied(changes),
            Err(e) => {
                failed = Some((i, e));
                ApplyStatus::Nothing
            }
        };
        out.push(outcome);
    }
    let (Some((at, error)), Some(undo)) = (failed, undo) else {
        return Ok(out);
    };
    let undone = undo.run(io, store, root, &wrote, host_wrote, &recorder);
    Ok(rolled_back(out, at, &error, undone))
}

/// The outcomes after a rollback: the failed job's with its error (and what could not be put
/// back), every other written one as [`ApplyStatus::RolledBack`] with what was put back on it.
fn rolled_back(
    out: Vec<ApplyOutcome>,
    at: usize,
    error: &Error,
    undone: super::rollback::Undone,
) -> Vec<ApplyOutcome> {
    out.into_iter()
        .enumerate()
        .map(|(i, mut o)| {
            let put_back: Vec<(String, String)> = undone
                .put_back
                .iter()
                .filter(|p| p.device == o.device)
                .map(|p| (p.knob.clone(), p.value.clone()))
                .collect();
            o.status = match o.status {
                _ if i == at => ApplyStatus::Failed {
                    error: match undone.left.is_empty() {
                        true => format!("{error}; the apply was rolled back"),
                        false => format!(
                            "{error}; the rollback left: {}; run `sweetspot restore`",
                            undone.left.join("; ")
                        ),
                    },
                },
                ApplyStatus::Applied { changes } | ApplyStatus::RolledBack { changes, .. } => {
                    ApplyStatus::RolledBack { changes, put_back }
                }
                other => other,
            };
            o
        })
        .collect()
}

/// An error of checking entry `entry` on disk `disk`, with both named; the exit code stays.
fn context(e: Error, entry: &str, disk: &str) -> Error {
    match e {
        Error::BadInput(m) => Error::BadInput(format!(
            "profile entry {entry} on {disk}: {m}; nothing was applied"
        )),
        other => other,
    }
}

fn applied(changes: Vec<crate::knob::apply::KnobChange>) -> ApplyStatus {
    ApplyStatus::Applied {
        changes: changes
            .into_iter()
            .map(|c| (c.knob, c.from, c.to))
            .collect(),
    }
}

/// `echo VALUE > FILE` per knob, in the kernel's apply order.
fn commands(root: &SysRoot, name: &str, knobs: &Setting) -> Vec<String> {
    in_apply_order(knobs)
        .into_iter()
        .map(|(k, v)| {
            format!(
                "echo {v} > {}",
                root.block_dev(name).join(attr_path(&k)).display()
            )
        })
        .collect()
}
