//! The seam between the optimiser and the world. The optimiser never knows whether a trial was
//! simulated (SimDevice, a surface file) or real (RealDevice: journaled knobs, real loads).

use crate::Result;
use crate::types::{Domain, KnobValue, Load, Run, Setting, TargetInfo};
use serde::Serialize;

/// One knob of a testbed's search space.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SpaceKnob {
    /// Knob name, e.g. `fifo_batch`, `scheduler`.
    pub name: String,
    /// Accepted values (for a real device: the catalogue's safe bounds ∩ what the kernel takes).
    pub domain: Domain,
    /// The value before tuning (the device's current value, or the surface's `default`).
    pub default: KnobValue,
    /// The schedulers under which this knob exists (`fifo_batch` only under (mq-)deadline);
    /// `None` when it does not depend on the scheduler.
    pub schedulers: Option<Vec<String>>,
}

/// A device the optimiser can drive: list the search space, apply a setting, measure, restore.
pub trait Testbed {
    /// What is measured (label, identity, kernel).
    fn target(&self) -> TargetInfo;

    /// The knobs that can be tuned here, with domains and defaults.
    fn space(&self) -> Vec<SpaceKnob>;

    /// Knobs this testbed has but that cannot be tuned now, each with the reason (a
    /// `dirty_ratio` that reads 0 because `dirty_bytes` rules: its default is not a value of
    /// it). They are not in [`Testbed::space`]; a policy naming one is told why.
    fn unusable(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// Knobs this testbed cannot touch at all now, each group said once with the reason
    /// (debugfs locked down: its CPU-scheduler knobs are left out). A tune prints them and
    /// puts them in its report.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// Why runs of `load` here can never report `metric` (a column of [`Run`]: `time_s`,
    /// `cpu_pct`, `loads`, `lcpu_pct`), or `None` when they can; a tune checks what its policy
    /// needs with this before the first trial. The default is a real device's: every load
    /// gives Time and CPU%, and every load with a background process (all but no_load and
    /// cacherun, [`crate::bench::loads::has_process`]) gives Loads and LCPU%.
    fn lacks(&self, load: Load, metric: &str) -> Option<String> {
        match metric {
            "loads" | "lcpu_pct" if !crate::bench::loads::has_process(load) => Some(format!(
                "{load} runs no background load, so it has no `{metric}`"
            )),
            _ => None,
        }
    }

    /// Applies a setting (a value for some or all knobs of [`Testbed::space`]). A real device
    /// journals every original first. Errors: a value outside its domain (bad input), or the
    /// kernel refusing it.
    fn apply(&mut self, setting: &Setting) -> Result<()>;

    /// One run of `load` at the applied setting.
    fn run(&mut self, load: Load) -> Result<Run>;

    /// Why this testbed cannot run the start-up judge ([`Testbed::run_startup`]), or `None`
    /// when it can. A tune whose policy has judges checks this before the first trial.
    fn lacks_startup(&self) -> Option<String> {
        Some("this testbed has no start-up judge".into())
    }

    /// One run of the start-up judge at the applied setting: the cold start-up of the
    /// reference application tree ([`crate::bench::startup`]) with `load` in the background.
    /// `time_s` is the start-up's wall time, s; `loads`/`lcpu_pct` are the background's, as
    /// for the reference job. Errors: a testbed without the judge ([`Testbed::lacks_startup`],
    /// exit 2), or a run that could not be made.
    fn run_startup(&mut self, load: Load) -> Result<Run> {
        Err(crate::Error::BadInput(format!(
            "start-up under {load}: {}",
            self.lacks_startup().unwrap_or_default()
        )))
    }

    /// A run of `load` at the applied setting answered from the store instead (a resumed
    /// tune's replay, [`crate::tune::resume`]). A simulator draws and drops the noise that
    /// run drew, so the live part goes on with the interrupted tune's stream and a resumed
    /// `--sim` tune ends as the uninterrupted one; a real device has nothing to do.
    fn replayed(&mut self, _load: Load) {}

    /// The job and load sizes in use (recorded with every trial), e.g.
    /// `{"job_files": 400, "io_load_mib": 512}`.
    fn sizes(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// Sets the journal owner (a tune's is `tune:<id>`), so restore touches only its entries.
    /// A simulation journals nothing and ignores it.
    fn set_owner(&mut self, _owner: &crate::types::Owner) {}

    /// Kernel device name (for the tunes row and recovery); `None` for a simulation.
    fn device_name(&self) -> Option<String> {
        None
    }

    /// The sysfs/procfs roots a real device is read and written through; `None` for a
    /// simulation.
    fn root(&self) -> Option<crate::sysroot::SysRoot> {
        None
    }

    /// `queue/zoned` of the device (`none`, `host-managed`, ...), if real.
    fn zoned(&self) -> Option<String> {
        None
    }

    /// Puts every knob back as it was before the first [`Testbed::apply`].
    fn restore(&mut self) -> Result<()>;

    /// Leaves what is applied now in place when the testbed is dropped (`tune --apply`): a
    /// real device's journal entries stay open, so `sweetspot restore` can still undo it. A
    /// later [`Testbed::apply`] makes the testbed restore on drop again. A simulation keeps
    /// nothing and ignores it.
    fn keep(&mut self) {}

    /// `runs` runs of each load, run-major (`no_load io_load no_load io_load ...`), so drift
    /// hits every load alike.
    fn measure(&mut self, loads: &[Load], runs: u32) -> Result<Vec<Run>> {
        let mut out = Vec::with_capacity(loads.len() * runs as usize);
        for _ in 0..runs {
            for &load in loads {
                out.push(self.run(load)?);
            }
        }
        Ok(out)
    }
}
