//! argmin observers for the tune: the one-line log per trial and the progress bar. (No
//! checkpoint file: every run and trial is already in SQLite as it finishes, which is what
//! `history` and recovery read; a solver checkpoint was written after every trial and never
//! read, a needless write per trial on an SD card.)
//!
//! - [`TrialLog`]: one "what and why" line per trial on stderr (unless quiet), and an
//!   indicatif progress bar with the current best when stderr is a TTY.
//! - [`FileCheckpoint`]: argmin's [`Checkpoint`] as a JSON file (solver and state) written
//!   after every trial, so the optimiser's state at any moment is on disk.

use crate::tune::solver::TuneState;
use argmin::core::observers::Observe;
use argmin::core::{Error as ArgminError, KV};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::io::IsTerminal;

/// Logs each trial and drives the progress bar.
pub struct TrialLog {
    labels: Vec<String>,
    /// Characters of the longest label: the setting column's width.
    width: usize,
    objective: String,
    quiet: bool,
    bar: Option<ProgressBar>,
    values: BTreeMap<usize, Vec<f64>>,
}

impl TrialLog {
    /// A log for grid points labelled `labels`; `budget` trials at most. The bar appears only
    /// when stderr is a TTY and not `quiet`; lines are printed unless `quiet`.
    pub fn new(labels: Vec<String>, objective: String, budget: u64, quiet: bool) -> Self {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let b = ProgressBar::new(budget);
            if let Ok(style) =
                ProgressStyle::with_template("{bar:30} {pos}/{len} trials  {elapsed}  {msg}")
            {
                b.set_style(style);
            }
            b
        });
        TrialLog {
            width: labels.iter().map(|l| l.chars().count()).max().unwrap_or(0),
            labels,
            objective,
            quiet,
            bar,
            values: BTreeMap::new(),
        }
    }

    fn line(&self, s: String) {
        if self.quiet {
            return;
        }
        match &self.bar {
            Some(b) => b.println(s),
            None => crate::signals::eprint_line(&s),
        }
    }
}

fn get_u(kv: &KV, k: &str) -> Option<u64> {
    kv.get(k).and_then(|v| v.get_uint())
}

impl Observe<TuneState> for TrialLog {
    fn observe_iter(&mut self, _state: &TuneState, kv: &KV) -> Result<(), ArgminError> {
        let (Some(point), Some(inc)) = (get_u(kv, "point"), get_u(kv, "incumbent")) else {
            return Ok(());
        };
        let (point, inc) = (point as usize, inc as usize);
        let value = kv
            .get("value")
            .and_then(|v| v.get_float())
            .unwrap_or(f64::NAN);
        let why = kv
            .get("why")
            .and_then(|v| v.get_string())
            .unwrap_or_default();
        let n = get_u(kv, "trials").unwrap_or(0);
        if value.is_finite() {
            self.values.entry(point).or_default().push(value);
        }
        let label = self.labels.get(point).cloned().unwrap_or_default();
        let best = self.labels.get(inc).cloned().unwrap_or_default();
        // The incumbent (a new best only after a paired race), with the geometric mean of
        // its trials, as the report averages.
        let best_v = self
            .values
            .get(&inc)
            .map(|v| crate::stats::geomean(v))
            .unwrap_or(f64::NAN);
        self.line(format!(
            "trial {n:>2}  {label:<w$}  {} {value:>8.3}   incumbent {best} ({best_v:.3})   why: {why}",
            self.objective,
            w = self.width,
        ));
        if let Some(b) = &self.bar {
            b.set_position(n);
            b.set_message(format!("incumbent {best} ({best_v:.3})"));
        }
        Ok(())
    }

    fn observe_final(&mut self, _state: &TuneState) -> Result<(), ArgminError> {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
        Ok(())
    }
}
