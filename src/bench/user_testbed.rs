//! Testbeds for the user's benchmark ([`super::user_job`]):
//!
//! - `UserBench` wraps another testbed (a real device, or the host): its knobs, journal and
//!   restore are the inner testbed's, but a run is one run of the user's command, in the
//!   inner testbed's work directory (on the device's filesystem) or the given directory.
//! - `HostBed`: no device at all, only the host-wide knobs (vm, CPU scheduler), journaled
//!   like every other knob (`tune --host`). It cannot run contest's loads itself.

use super::user_job::UserJob;
use super::{Load, Run, SpaceKnob, TargetInfo, Testbed};
use crate::knob::{Setting, discover};
use crate::store::Store;
use crate::sysroot::SysRoot;
use crate::types::Owner;
use crate::{Error, Result};
use std::path::PathBuf;

/// A testbed whose runs are the user's benchmark (see the module docs).
pub(crate) struct UserBench {
    inner: Box<dyn Testbed>,
    job: UserJob,
    dir: PathBuf,
}

impl UserBench {
    /// Runs `job` in `dir`, with `inner`'s knobs.
    pub(crate) fn new(inner: Box<dyn Testbed>, job: UserJob, dir: PathBuf) -> UserBench {
        UserBench { inner, job, dir }
    }
}

impl Testbed for UserBench {
    fn target(&self) -> TargetInfo {
        self.inner.target()
    }
    fn space(&self) -> Vec<SpaceKnob> {
        self.inner.space()
    }
    fn unusable(&self) -> Vec<(String, String)> {
        self.inner.unusable()
    }
    /// Only `no_load` runs (the command alone): Time, CPU% and its figure (in `loads`).
    fn lacks(&self, load: Load, metric: &str) -> Option<String> {
        if load != Load::NoLoad {
            return Some(format!(
                "a user benchmark runs alone: it has no {load} (only no_load)"
            ));
        }
        (metric == "lcpu_pct").then(|| "a user benchmark has no background load".to_string())
    }
    fn apply(&mut self, setting: &Setting) -> Result<()> {
        self.inner.apply(setting)
    }
    /// One run of the benchmark; `load` must be `no_load`.
    fn run(&mut self, load: Load) -> Result<Run> {
        if load != Load::NoLoad {
            return Err(Error::BadInput(format!(
                "a user benchmark runs alone: no {load}"
            )));
        }
        self.job.run(&self.dir)
    }
    fn sizes(&self) -> serde_json::Value {
        let mut v = self.job.record();
        if let (Some(m), inner) = (v.as_object_mut(), self.inner.sizes())
            && !inner.is_null()
        {
            m.insert("target".into(), inner);
        }
        v
    }
    fn set_owner(&mut self, owner: &Owner) {
        self.inner.set_owner(owner);
    }
    fn device_name(&self) -> Option<String> {
        self.inner.device_name()
    }
    fn root(&self) -> Option<SysRoot> {
        self.inner.root()
    }
    fn zoned(&self) -> Option<String> {
        self.inner.zoned()
    }
    fn restore(&mut self) -> Result<()> {
        self.inner.restore()
    }
    fn keep(&mut self) {
        self.inner.keep();
    }
    fn notes(&self) -> Vec<String> {
        self.inner.notes()
    }
}

/// The host as a testbed: only host-wide knobs (see the module docs). Restores what it
/// changed on drop unless [`Testbed::keep`] was called after the last apply.
pub(crate) struct HostBed {
    root: SysRoot,
    store: Store,
    owner: Owner,
    owners: Vec<Owner>,
    applied: bool,
}

/// The identity a host tune is stored under: `host:<hostname>` ([`HOST_PREFIX`]). It is locked
/// under the host-wide knobs' lock, [`crate::lock::HOST`], which is how other commands judge
/// whether such a tune is still running (the tune module's recovery maps the identity to it).
pub(crate) fn host_identity(root: &SysRoot) -> String {
    let name = std::fs::read_to_string(root.proc.join("sys/kernel/hostname"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    format!(
        "{HOST_PREFIX}{}",
        if name.is_empty() { "localhost" } else { &name }
    )
}

/// The identity prefix of the host's own tunes and sweet spots (`tune --host`):
/// [`host_identity`], `host:<hostname>`.
pub(crate) const HOST_PREFIX: &str = "host:";

/// True when `identity` is a host tune's or sweet spot's (`host:<hostname>`).
pub(crate) fn is_host_identity(identity: &str) -> bool {
    identity.starts_with(HOST_PREFIX)
}

impl HostBed {
    /// The host under `root`, journaling into `store` (owner `bench` until a tune sets one).
    pub(crate) fn new(store: Store, root: &SysRoot) -> HostBed {
        HostBed {
            root: root.clone(),
            store,
            owner: Owner::Bench,
            owners: Vec::new(),
            applied: false,
        }
    }
}

impl Testbed for HostBed {
    fn target(&self) -> TargetInfo {
        TargetInfo {
            label: "host".into(),
            identity: host_identity(&self.root),
            kernel: crate::device::kernel_release(),
        }
    }
    /// The host-wide knobs ([`super::device_testbed::host_space`]).
    fn space(&self) -> Vec<SpaceKnob> {
        super::device_testbed::host_space(&self.root)
    }
    fn unusable(&self) -> Vec<(String, String)> {
        discover::host_unusable(&self.root)
    }
    fn notes(&self) -> Vec<String> {
        crate::knob::sched::debugfs(&self.root)
            .why()
            .into_iter()
            .collect()
    }
    fn apply(&mut self, setting: &Setting) -> Result<()> {
        self.applied = true;
        if !self.owners.contains(&self.owner) {
            self.owners.push(self.owner.clone());
        }
        crate::knob::apply::apply_host(&mut self.store, &self.root, setting, &self.owner)
    }
    fn run(&mut self, load: Load) -> Result<Run> {
        Err(Error::BadInput(format!(
            "the host alone cannot run {load}: give a benchmark (a policy's [benchmark], or \
             --job CMD --metric ...)"
        )))
    }
    fn set_owner(&mut self, owner: &Owner) {
        self.owner = owner.clone();
    }
    fn root(&self) -> Option<SysRoot> {
        Some(self.root.clone())
    }
    fn keep(&mut self) {
        self.applied = false;
    }
    /// Restores the host-wide entries of every owner it journaled under, newest first.
    fn restore(&mut self) -> Result<()> {
        let owners: Vec<Owner> = if self.owners.is_empty() {
            vec![self.owner.clone()]
        } else {
            self.owners.iter().rev().cloned().collect()
        };
        for owner in &owners {
            crate::knob::apply::restore_except(
                &crate::knob::io::RealIo,
                &mut self.store,
                &self.root,
                None,
                Some(owner),
                &|e| e.device.is_some(),
            )?;
        }
        self.applied = false;
        Ok(())
    }
}

impl Drop for HostBed {
    fn drop(&mut self) {
        if self.applied
            && let Err(e) = self.restore()
        {
            tracing::error!("host: restoring knobs failed: {e}");
        }
    }
}
