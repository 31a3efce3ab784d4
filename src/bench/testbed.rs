//! The seam between the optimiser and the world. The optimiser never knows whether a trial was
//! simulated (SimDevice, a surface file) or real (RealDevice: journaled knobs, real loads).

use crate::Result;
use crate::bench::Load;
use crate::knob::{Domain, KnobValue, Setting};
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

/// What a testbed measures, for reports and the store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TargetInfo {
    /// Shown in reports, e.g. `loop0 (scratch)`, `sim:seed-2.5.39-mm1-fifo_batch`.
    pub label: String,
    /// Stable identity used as the store key (wwid, model+serial, by-path, loop backing file,
    /// or `sim:<file stem>`).
    pub identity: String,
    /// Kernel release (`uname -r`), or `sim` for a simulated device.
    pub kernel: String,
}

/// One run of one load at the applied setting: contest's columns, raw.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Run {
    /// The load that ran beside the job.
    pub load: Load,
    /// The job's wall time, s.
    pub time_s: f64,
    /// The job's (user+sys)/wall, %.
    pub cpu_pct: f64,
    /// Work units the load completed (None for no_load/cacherun, which have no load).
    pub loads: Option<f64>,
    /// The load's own (user+sys)/wall, % (None when there is no load).
    pub lcpu_pct: Option<f64>,
    /// Why the run failed (e.g. the load completed no work), if it did. A failed run is never
    /// reported as a clean number.
    pub failed: Option<String>,
    /// What an emulated device (`--emulate`) saw during the run; `None` elsewhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io: Option<IoCounters>,
}

/// What an emulated device counted ([`crate::bench::emulate`]): during one run when it comes
/// with a [`Run`]. Times are µs of the device's own clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct IoCounters {
    /// Read requests.
    pub reads: u64,
    /// Write requests.
    pub writes: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Requests that did not start where the previous one ended.
    pub seeks: u64,
    /// Their total distance from where the previous request ended, bytes.
    pub seek_bytes: u64,
    /// Time spent positioning (seek, rotation, gaps), µs; 0 on a flash-like device.
    pub position_us: u64,
    /// Time spent serving requests, µs (summed over channels).
    pub busy_us: u64,
    /// The most requests outstanding at the device at once.
    pub max_depth: u64,
    /// The number outstanding (itself included) summed over arrivals: ÷ requests = the mean.
    pub depth_sum: u64,
}

impl IoCounters {
    /// The counts since `before` (the maximum depth is this one's: reset it at the start).
    pub fn since(&self, before: &IoCounters) -> IoCounters {
        IoCounters {
            reads: self.reads.saturating_sub(before.reads),
            writes: self.writes.saturating_sub(before.writes),
            read_bytes: self.read_bytes.saturating_sub(before.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(before.write_bytes),
            seeks: self.seeks.saturating_sub(before.seeks),
            seek_bytes: self.seek_bytes.saturating_sub(before.seek_bytes),
            position_us: self.position_us.saturating_sub(before.position_us),
            busy_us: self.busy_us.saturating_sub(before.busy_us),
            max_depth: self.max_depth,
            depth_sum: self.depth_sum.saturating_sub(before.depth_sum),
        }
    }

    /// Reads + writes.
    pub fn requests(&self) -> u64 {
        self.reads + self.writes
    }

    /// The mean number of requests outstanding at an arrival (0 without requests).
    pub fn mean_depth(&self) -> f64 {
        match self.requests() {
            0 => 0.0,
            n => self.depth_sum as f64 / n as f64,
        }
    }
}

/// A device the optimiser can drive: list the search space, apply a setting, measure, restore.
pub trait Testbed {
    /// What is measured (label, identity, kernel).
    fn target(&self) -> TargetInfo;

    /// The knobs that can be tuned here, with domains and defaults.
    fn space(&self) -> Vec<SpaceKnob>;

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

    /// The job and load sizes in use (recorded with every trial), e.g.
    /// `{"job_files": 400, "io_load_mib": 512}`.
    fn sizes(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// Puts every knob back as it was before the first [`Testbed::apply`].
    fn restore(&mut self) -> Result<()>;

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
