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
}
