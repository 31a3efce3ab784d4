//! How a command prints: `bench`'s formats behind one trait, one small file per format (as
//! hyperfine's `export/`):
//!
//! - [`table`]: contest's table, one block per load (`<setting> [runs] Time CPU% Loads LCPU%
//!   Ratio`), with mean ± sd, 95% CI, median, range and warnings beneath.
//! - [`json`]: `bench --json` (docs/DESIGN.md "External contract").
//! - [`csv`]: one row per run.
//!
//! Every exporter renders a `BenchReport` to a `String`; the caller prints it with
//! `cli::print_out`. Output depends only on the report, never on time or ids, so a seeded
//! simulation prints byte-identical output.
//!
//! The other commands' results go through [`mod@format`]: one `format::render` for a value
//! that is both a table (`format::Table`) and `Serialize`, as `--json` asks.

pub mod csv;
pub mod format;
pub mod json;
pub mod table;

use crate::bench::TargetInfo;
use crate::bench::summary::TrialSummary;

/// What `bench` measured: the target, the sizes in use, and one trial's summary.
#[derive(Clone, Debug)]
pub(crate) struct BenchReport {
    /// What was measured.
    pub target: TargetInfo,
    /// Job and load sizes (`Testbed::sizes`); for a simulation, the surface and seed.
    pub sizes: serde_json::Value,
    /// The trial, summarised per load.
    pub trial: TrialSummary,
}

/// An output format.
pub(crate) trait Exporter {
    /// Renders the report as this format's text (ending in a newline).
    fn render(&self, report: &BenchReport) -> crate::Result<String>;
}
