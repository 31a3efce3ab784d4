//! A tune's progress as the bar shows it: load runs made against the run budget, and an
//! estimate of the time left from the runs measured so far.
//!
//! What is bounded is load runs, not trials: the policy's budget is in full trials (every
//! load of the policy, `runs` times each; [`crate::tune::run_budget`]), and the screen makes
//! trials of some loads only, so a tune of budget 12 may list 22 trials but never more than
//! 12 × (its runs per full trial) runs (`solver/screen.rs` keeps every plan within them, the
//! GP search stops at `budget` full trials). The budget is a bound, not a target: a tune
//! whose final check is decided early ends before the bar is full, so the estimate is an
//! upper bound too ("at most").

use std::time::{Duration, Instant};

/// Runs done against the run budget, and the time they took.
#[derive(Clone, Debug)]
pub struct Progress {
    /// The run budget: the most load runs the tune makes. Grows to [`Progress::done`] if a
    /// tune ever made more (it does not; the bar then stays honest, never past full).
    total: u64,
    /// Load runs made, replayed ones included.
    done: u64,
    /// Runs replayed from an interrupted tune (`--resume`): they took no time.
    replayed: u64,
    /// When the previous step was observed (or the tune started).
    last: Instant,
    /// Seconds and count of the runs measured live (not replayed).
    live_secs: f64,
    live_runs: u64,
}

impl Progress {
    /// A tune that may make `total` load runs, starting at `now`.
    pub(crate) fn new(total: u64, now: Instant) -> Self {
        Progress {
            total,
            done: 0,
            replayed: 0,
            last: now,
            live_secs: 0.0,
            live_runs: 0,
        }
    }

    /// After a trial observed at `now`: `done` load runs made so far, of which `replayed`
    /// were replayed (both counts since the tune started). A step whose runs were all
    /// replayed adds no time to the estimate; one with live runs adds the time since the
    /// previous step to them.
    pub(crate) fn step(&mut self, done: u64, replayed: u64, now: Instant) {
        let runs = done.saturating_sub(self.done);
        let live = runs.saturating_sub(replayed.saturating_sub(self.replayed));
        if live > 0 {
            self.live_secs += now.saturating_duration_since(self.last).as_secs_f64();
            self.live_runs += live;
        }
        self.done = done.max(self.done);
        self.replayed = replayed;
        self.total = self.total.max(self.done);
        self.last = now;
    }

    /// Load runs made.
    pub fn done(&self) -> u64 {
        self.done
    }

    /// The run budget (never less than [`Progress::done`]).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The most time left: the mean time of the runs measured live so far × the runs left in
    /// the budget; `None` before a run was measured live.
    pub(crate) fn eta(&self) -> Option<Duration> {
        if self.live_runs == 0 {
            return None;
        }
        let mean = self.live_secs / self.live_runs as f64;
        Duration::try_from_secs_f64(mean * (self.total - self.done) as f64).ok()
    }

    /// The bar's message part for the time left: `at most 12 minutes left`, or `""` before
    /// a run was measured.
    pub(crate) fn eta_text(&self) -> String {
        match self.eta() {
            Some(d) if self.done < self.total => {
                // Whole seconds: indicatif's HumanDuration rounds to its largest unit.
                let d = Duration::from_secs(d.as_secs().max(1));
                format!("at most {} left", indicatif::HumanDuration(d))
            }
            _ => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_is_the_mean_live_run_time_times_the_runs_left() {
        let t0 = Instant::now();
        let mut p = Progress::new(24, t0);
        assert_eq!(p.eta(), None);
        assert_eq!(p.eta_text(), "");
        // A full trial of 2 runs in 10 s: 5 s a run, 22 left.
        p.step(2, 0, t0 + Duration::from_secs(10));
        assert_eq!(p.eta(), Some(Duration::from_secs(110)));
        // A loaded trial of 1 run in 7 s: 17 s for 3 runs, 21 left.
        p.step(3, 0, t0 + Duration::from_secs(17));
        assert_eq!(p.eta(), Some(Duration::from_secs(119)));
        assert_eq!((p.done(), p.total()), (3, 24));
    }

    #[test]
    fn replayed_runs_count_as_done_but_not_in_the_run_time() {
        let t0 = Instant::now();
        let mut p = Progress::new(24, t0);
        // 10 runs replayed from the database at once, then one run of 6 s measured.
        p.step(10, 10, t0 + Duration::from_millis(5));
        assert_eq!(p.eta(), None);
        p.step(11, 10, t0 + Duration::from_millis(6005));
        assert_eq!(p.done(), 11);
        assert_eq!(p.eta(), Some(Duration::from_secs(6 * 13)));
        assert_eq!(p.eta_text(), "at most 78 seconds left");
    }

    #[test]
    fn more_runs_than_the_budget_grow_it_so_the_bar_is_never_past_full() {
        let t0 = Instant::now();
        let mut p = Progress::new(4, t0);
        p.step(6, 0, t0 + Duration::from_secs(6));
        assert_eq!((p.done(), p.total()), (6, 6));
        assert_eq!(p.eta(), Some(Duration::ZERO));
        assert_eq!(p.eta_text(), "");
    }
}
