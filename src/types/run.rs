//! What one run measured, and what was measured: contest's columns for one run of one load,
//! and the target's label, identity and kernel.

use crate::types::Load;
use serde::Serialize;

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

/// What an emulated device counted (`crate::bench::emulate`): during one run when it comes
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
    pub(crate) fn since(&self, before: &IoCounters) -> IoCounters {
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
