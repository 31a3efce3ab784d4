//! argmin observers for the tune: the one-line log per trial and the progress bar. (No
//! checkpoint file: every run and trial is already in SQLite as it finishes, which is what
//! `history` and recovery read; a solver checkpoint was written after every trial and never
//! read, a needless write per trial on an SD card.)
//!
//! - [`TrialLog`]: one "what and why" line per trial on stderr (unless quiet), and an
//!   indicatif progress bar of load runs against the run budget ([`Progress`]), with the time
//!   left at most and the current best, when stderr is a TTY.

use crate::tune::progress::Progress;
use crate::tune::solver::TuneState;
use argmin::core::observers::Observe;
use argmin::core::{Error as ArgminError, KV};
use indicatif::{ProgressBar, ProgressStyle};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::rc::Rc;
use std::time::Instant;

/// What [`TrialLog::on_step`] calls after every trial.
type OnStep = Box<dyn FnMut(&Progress)>;

/// Logs each trial and drives the progress bar.
pub struct TrialLog {
    labels: Vec<String>,
    /// Characters of the longest label: the setting column's width.
    width: usize,
    objective: String,
    quiet: bool,
    bar: Option<ProgressBar>,
    /// Load runs against the run budget, what the bar shows.
    progress: Progress,
    /// Load runs replayed so far (`--resume`), if any are: they took no time.
    replayed: Option<Box<dyn Fn() -> u64>>,
    /// Called with the progress after every trial (tests watch the bar's counts by it).
    on_step: Option<OnStep>,
    values: BTreeMap<usize, Vec<f64>>,
    /// Mean loaded Times (s) of the screen's trials of the loaded runs only, by point: what
    /// the incumbent column shows for a leader that has no Ratio of its own yet.
    loaded: BTreeMap<usize, Vec<f64>>,
    minimize: bool,
    /// The incumbent of the previous line.
    last_inc: Option<usize>,
    /// Settings with a trial that broke a guard rail, or failed.
    broke: BTreeMap<usize, String>,
    /// The incumbent of the latest line, shared with [`TrialLog::incumbent`].
    seen: Rc<Cell<Option<usize>>>,
}

impl TrialLog {
    /// A log for grid points labelled `labels`; `run_budget` load runs at most
    /// ([`crate::tune::run_budget`]). The bar appears only when stderr is a TTY and not
    /// `quiet`; lines are printed unless `quiet`.
    pub fn new(labels: Vec<String>, objective: String, run_budget: u64, quiet: bool) -> Self {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let b = ProgressBar::new(run_budget);
            if let Ok(style) =
                ProgressStyle::with_template("{bar:30} {pos}/{len} load runs  {elapsed}  {msg}")
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
            progress: Progress::new(run_budget, Instant::now()),
            replayed: None,
            on_step: None,
            values: BTreeMap::new(),
            loaded: BTreeMap::new(),
            minimize: true,
            last_inc: None,
            broke: BTreeMap::new(),
            seen: Rc::default(),
        }
    }

    /// The incumbent (grid index into the space's points) after the latest trial, as its
    /// line names it, shared: it outlives the log, which the optimiser takes and drops, so a
    /// tune stopped mid-way can still say what its search had found. `None` until a trial
    /// is observed, whether the log is quiet or not.
    pub(crate) fn incumbent(&self) -> Rc<Cell<Option<usize>>> {
        Rc::clone(&self.seen)
    }

    /// `replayed()` says how many load runs a resumed tune has replayed from the store so far
    /// ([`crate::tune::resume::Replay::replayed_runs`]): they count as done but not in the
    /// time a run takes.
    pub(crate) fn replayed(mut self, replayed: impl Fn() -> u64 + 'static) -> Self {
        self.replayed = Some(Box::new(replayed));
        self
    }

    /// Calls `f` with the progress after every trial, as the bar is then drawn (with or
    /// without a bar): a test watches the counts over a whole tune by it.
    pub fn on_step(mut self, f: impl FnMut(&Progress) + 'static) -> Self {
        self.on_step = Some(Box::new(f));
        self
    }

    /// Whether a smaller objective is better (Ratio; the default) or a larger one (Loads):
    /// says when the incumbent column moves to a worse-looking setting.
    pub(crate) fn minimize(mut self, minimize: bool) -> Self {
        self.minimize = minimize;
        self
    }

    fn geomean_of(&self, p: usize) -> f64 {
        self.values
            .get(&p)
            .map(|v| crate::stats::geomean(v))
            .unwrap_or(f64::NAN)
    }

    /// Why the incumbent moved from `prev` to `inc` although `inc` looks worse by the
    /// geometric mean of its trials (the column shows that mean), or `None` when it does not.
    fn jump_reason(&self, prev: usize, inc: usize, point: usize) -> Option<String> {
        let (a, b) = (self.geomean_of(prev), self.geomean_of(inc));
        let worse = if self.minimize { b > a } else { b < a };
        let looks_worse = a.is_finite() && b.is_finite() && worse;
        if !looks_worse && !self.broke.contains_key(&prev) {
            return None;
        }
        let was = self.labels.get(prev).cloned().unwrap_or_default();
        let n = |p: usize| self.values.get(&p).map_or(0, Vec::len);
        let reason = match self.broke.get(&prev) {
            Some(why) => why.clone(),
            None if point == prev => {
                format!("re-measured, now {} over {} trials", fmt_value(a), n(prev))
            }
            None => format!(
                "ranked lower by the score (its mean over {} trial{} shrunk toward the \
                 model's prediction, plus 1.5 sd; {} trials here)",
                n(prev),
                if n(prev) == 1 { "" } else { "s" },
                n(inc)
            ),
        };
        Some(format!("; was {was} ({}): {reason}", fmt_value(a)))
    }

    /// A printer for lines outside argmin's iterations (the judges' runs,
    /// [`crate::tune::judge`]): each line above the progress bar as the trial lines are, the
    /// bar advanced by the runs it reports; `None` when quiet.
    pub(crate) fn printer(&self) -> Option<Box<crate::tune::judge::LineLog>> {
        if self.quiet {
            return None;
        }
        let bar = self.bar.clone();
        Some(Box::new(move |s: &str, runs: u64| match &bar {
            Some(b) => {
                b.inc(runs);
                b.println(s)
            }
            None => crate::signals::eprint_line(s),
        }))
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

    /// Records a trial of `point`: its objective `value` when it is finite and the trial did
    /// not fail, and why the setting is out when the trial `failed` or broke the `guards`.
    fn record(&mut self, point: usize, value: f64, failed: &str, guards: &str) {
        if value.is_finite() && failed.is_empty() {
            self.values.entry(point).or_default().push(value);
        }
        if !failed.is_empty() {
            self.broke.insert(point, format!("failed: {failed}"));
        } else if !guards.is_empty() {
            self.broke
                .insert(point, format!("broke a guard rail: {guards}"));
        }
    }

    /// The figure a trial line shows: `failed`, the Time (s) of a screen trial of the
    /// `part` of its loads only (`time`), else the objective and its `value`.
    fn shown_figure(&self, failed: &str, value: f64, part: &str, time: Option<f64>) -> String {
        if !failed.is_empty() {
            "failed".to_string()
        } else if value.is_nan() && (part == "loaded" || part == "no_load") {
            // A screen trial of some loads only: no Ratio of its own; its Time instead.
            format!(
                "{part} Time {} s",
                time.map_or("?".into(), crate::tune::evaluator::figure)
            )
        } else {
            format!("{} {}", self.objective, fmt_value(value))
        }
    }

    /// The incumbent `inc`'s figure: `best_v`, the geometric mean of its trials' objective,
    /// when it has one.
    fn best_figure(&self, best_v: f64, inc: usize) -> String {
        // A screen leader measured by its loaded runs only has no Ratio yet: its loaded Time
        // (the geometric mean of its trials', as the screen ranks them) instead.
        if best_v.is_finite() {
            fmt_value(best_v)
        } else if let Some(t) = self.loaded.get(&inc) {
            format!(
                "loaded {} s",
                crate::tune::evaluator::figure(crate::stats::geomean(t))
            )
        } else {
            "–".to_string()
        }
    }

    /// Counts the load runs done after a trial (`runs` of `kv`, else as before), tells
    /// [`TrialLog::on_step`], and redraws the bar with the time left and the incumbent
    /// `best` and its figure `best_v`.
    fn advance(&mut self, kv: &KV, best: &str, best_v: &str) {
        let replayed = self.replayed.as_ref().map_or(0, |f| f());
        let runs = get_u(kv, "runs").unwrap_or(self.progress.done());
        self.progress.step(runs, replayed, Instant::now());
        if let Some(f) = &mut self.on_step {
            f(&self.progress);
        }
        if let Some(b) = &self.bar {
            b.set_length(self.progress.total());
            b.set_position(self.progress.done());
            let eta = self.progress.eta_text();
            let eta = if eta.is_empty() {
                eta
            } else {
                format!("{eta}  ")
            };
            b.set_message(format!("{eta}incumbent {best} ({best_v})"));
        }
    }
}

fn get_u(kv: &KV, k: &str) -> Option<u64> {
    kv.get(k).and_then(|v| v.get_uint())
}

/// A trial `line` with, below it, the error of a trial that `failed` or the guard rails it
/// broke (`guards`), each wrapped.
fn with_trouble(mut line: String, failed: &str, guards: &str) -> String {
    if !failed.is_empty() {
        line.push('\n');
        line.push_str(&wrap_line(&format!("          {failed}")));
    } else if !guards.is_empty() {
        line.push('\n');
        line.push_str(&wrap_line(&format!(
            "          excluded: it breaks the guard rail {guards}"
        )));
    }
    line
}

impl Observe<TuneState> for TrialLog {
    fn observe_iter(&mut self, _state: &TuneState, kv: &KV) -> Result<(), ArgminError> {
        let (Some(point), Some(inc)) = (get_u(kv, "point"), get_u(kv, "incumbent")) else {
            return Ok(());
        };
        let (point, inc) = (point as usize, inc as usize);
        self.seen.set(Some(inc));
        let value = kv
            .get("value")
            .and_then(|v| v.get_float())
            .unwrap_or(f64::NAN);
        let why = kv
            .get("why")
            .and_then(|v| v.get_string())
            .unwrap_or_default();
        let n = get_u(kv, "trials").unwrap_or(0);
        let text = |k: &str| kv.get(k).and_then(|v| v.get_string()).unwrap_or_default();
        let (failed, guards) = (text("failed"), text("guards"));
        self.record(point, value, &failed, &guards);
        let label = self.labels.get(point).cloned().unwrap_or_default();
        let best = self.labels.get(inc).cloned().unwrap_or_default();
        // The incumbent after this trial (the screen's leader; on the GP's search a new best
        // only after a paired race), with the geometric mean of its trials, as the report
        // averages.
        let best_v = self.geomean_of(inc);
        let moved = self.last_inc != Some(inc);
        let jump = match self.last_inc {
            Some(prev) if prev != inc => self.jump_reason(prev, inc, point).unwrap_or_default(),
            _ => String::new(),
        };
        self.last_inc = Some(inc);
        let part = text("part");
        let time = kv.get("time").and_then(|v| v.get_float());
        let shown = self.shown_figure(&failed, value, &part, time);
        if part == "loaded"
            && failed.is_empty()
            && let Some(t) = time.filter(|t| t.is_finite())
        {
            self.loaded.entry(point).or_default().push(t);
        }
        let best_v = self.best_figure(best_v, inc);
        // The incumbent is named when it changes (the bar shows it all along). At the check's
        // first trial it changes when the search's answer is picked (after the no_load test,
        // by each finalist's Ratio), not because of the default's trial on this line.
        let lead = match (moved, point == inc && jump.is_empty()) {
            (false, _) => String::new(),
            (true, _) if why.starts_with("final check") => {
                format!("; the search's answer is {best} ({best_v})")
            }
            // This trial's setting now leads: its figure is on the line already.
            (true, true) => "; new best".to_string(),
            (true, false) => format!("; new best {best} ({best_v}{jump})"),
        };
        let line = wrap_line(&format!(
            "trial {n:>2}  {label:<w$}  {shown:<m$}  {why}{lead}",
            w = self.width,
            m = self.objective.chars().count() + 7,
        ));
        self.line(with_trouble(line, &failed, &guards));
        self.advance(kv, &best, &best_v);
        Ok(())
    }

    fn observe_final(&mut self, _state: &TuneState) -> Result<(), ArgminError> {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
        Ok(())
    }
}

/// A trial-log line wrapped at [`crate::tune::report::WIDTH`] columns, continuations
/// indented under the setting.
fn wrap_line(line: &str) -> String {
    let mut s = crate::tune::report::wrap("", 10, line);
    s.pop();
    s
}

/// An objective value in the log: 3 decimals (a Ratio), or 3 significant digits below 0.1 or
/// from 1000 up (a benchmark's figure: 0.00412, 2673178, not 2673178.000), never a zero that
/// was not measured.
fn fmt_value(x: f64) -> String {
    if (0.1..1000.0).contains(&x.abs()) || x == 0.0 || !x.is_finite() {
        format!("{x:.3}")
    } else {
        crate::tune::evaluator::figure(x)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn values_print_with_sensible_precision() {
        assert_eq!(super::fmt_value(1.6049), "1.605");
        assert_eq!(super::fmt_value(0.004123), "0.00412");
        assert_eq!(super::fmt_value(2673178.0), "2673178");
        assert_eq!(super::fmt_value(4724075.29), "4724075");
    }
}
