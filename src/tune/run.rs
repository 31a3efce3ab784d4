//! The `tune` command's work around the optimiser:
//!
//! 1. Before it, `crate::undo::recover`: an unfinished tune or benchmark has its knobs restored
//!    from its own journal entries (`tune/recover.rs`).
//! 2. One writer per device: the caller takes the target's [`crate::lock::DeviceLock`] before
//!    it builds the testbed ([`Request::lock`]); the tune writes its id into it. `restore`
//!    locks each device it writes and leaves held ones alone.
//! 3. A `tunes` row (running → done / interrupted / failed), trials and runs stored as they
//!    finish, the sweet spot stored with its evidence, the device restored unless `--apply`
//!    and significant. Ctrl-C/SIGTERM stop after the current run, restore, keep the trials
//!    (`Ended::Stopped`: what the store has of the stopped tune).

use crate::bench::{Run, TargetInfo, Testbed};
use crate::device::stat::WriteMeter;
use crate::knob::Setting;
use crate::lock::DeviceLock;
use crate::store::Store;
use crate::tune::evaluator::Recorder;
use crate::tune::policy::Policy;
use crate::tune::report::{self, Report};
use crate::tune::resume::{Replay, ReplayBed, ReplayRecorder, Resume};
use crate::tune::solver::confirm::KnownPoint;
use crate::tune::space::Space;
use crate::tune::stopped::Stopped;
use crate::tune::{Options, observe, optimise};
use crate::undo::undo_command;
use crate::{Error, Result};
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

/// Writes trials and runs to the store as they finish.
pub(crate) struct StoreRecorder<'a> {
    store: &'a Store,
    target: TargetInfo,
    sizes: serde_json::Value,
    tune_id: i64,
}

impl Recorder for StoreRecorder<'_> {
    fn trial_started(&mut self, setting: &Setting) -> Result<i64> {
        self.store
            .insert_trial(&self.target, setting, &self.sizes, Some(self.tune_id))
    }
    fn run_finished(&mut self, trial: i64, index: usize, run: &Run) -> Result<()> {
        self.store.insert_run(trial, index, run).map(|_| ())
    }
    fn trial_finished(&mut self, trial: i64) -> Result<()> {
        self.store.finish_trial(trial)
    }
    fn judge_run(&mut self, judge: &str, setting: &Setting, run: &Run) -> Result<()> {
        let id = self.store.insert_judge_trial(
            &self.target,
            setting,
            &self.sizes,
            self.tune_id,
            judge,
        )?;
        self.store.insert_run(id, 0, run)?;
        self.store.finish_trial(id)
    }
}

/// The policy knobs that `space` dropped, with the reason: the testbed's own when it has the
/// knob but cannot tune it now (`unusable`), else that the device does not have it.
pub(crate) fn dropped_knobs(
    space: &Space,
    unusable: &[(String, String)],
    target: &TargetInfo,
) -> Vec<report::Dropped> {
    space
        .skipped
        .iter()
        .map(|k| report::Dropped {
            knob: k.clone(),
            reason: unusable
                .iter()
                .find(|(n, _)| n == k)
                .map_or_else(|| format!("not on {}", target.label), |(_, r)| r.clone()),
        })
        .collect()
}

/// A tune request.
pub struct Request<'a> {
    /// The policy.
    pub policy: &'a Policy,
    /// Overrides the policy's budget.
    pub budget: Option<u32>,
    /// Seed of the optimiser's design.
    pub seed: u64,
    /// Leave a significant sweet spot applied.
    pub apply: bool,
    /// No log lines or progress bar.
    pub quiet: bool,
    /// The lock the tune holds as its target's ([`crate::lock::path`]: a device's identity,
    /// `$TMPDIR`'s disk for `--scratch`, the host's for `--host`), taken by the caller before
    /// the testbed was built and held until the tune ends; the tune's id is written into it,
    /// and its file into the tune's row, by which the other commands judge whether the tune is
    /// still running (`crate::undo::alive`: its holder must name this process,
    /// whose pid the row stores, so the caller takes it with [`crate::lock::Holder::me`]).
    pub lock: &'a DeviceLock,
    /// An interrupted tune to resume ([`crate::tune::resume`]): its seed is used instead of
    /// `seed`, and its finished trials are replayed before anything is measured.
    pub resume: Option<&'a Resume>,
    /// A known sweet spot to confirm against the default before any search
    /// ([`crate::tune::known`]); it must be a point of the policy's grid on this device.
    pub confirm: Option<&'a crate::tune::known::Known>,
}

/// How [`tune_or_stop`] ended, short of an error.
#[derive(Debug)]
pub(crate) enum Ended {
    /// The tune finished: its report, stored with the sweet spot.
    Done(Box<Report>),
    /// Ctrl-C or SIGTERM stopped it: the testbed was restored and the tune recorded as
    /// `interrupted`, and this is what the store has of it.
    Stopped(Box<Stopped>),
}

/// Runs a whole tune on `testbed` and stores it. On any error, and on Ctrl-C/SIGTERM, the
/// testbed is restored and the tune marked `interrupted`/`failed`; finished trials stay.
/// When every trial at the default setting failed (the reference), the tune fails with
/// [`Error::Failed`] (exit 1) giving the trial's reason, and no sweet spot is stored.
/// Stopped by Ctrl-C/SIGTERM, it returns [`Error::Interrupted`] (`tune_or_stop` says
/// what was stopped).
pub fn tune(store: &Store, db: &Path, testbed: &mut dyn Testbed, req: &Request) -> Result<Report> {
    match run(store, db, testbed, req, false)? {
        Ended::Done(rep) => Ok(*rep),
        Ended::Stopped(_) => Err(Error::Interrupted),
    }
}

/// [`tune`], but a tune stopped by Ctrl-C/SIGTERM is [`Ended::Stopped`] with what the store
/// recorded of it ([`Stopped::read`]). It is still [`Error::Interrupted`] when it cannot be
/// read back (said as a warning).
pub(crate) fn tune_or_stop(
    store: &Store,
    db: &Path,
    testbed: &mut dyn Testbed,
    req: &Request,
) -> Result<Ended> {
    run(store, db, testbed, req, true)
}

/// The tune of [`tune`] and [`tune_or_stop`]; a stopped tune is read back from the store only
/// when `read_back` (the daemon's retunes never ask: it would be read for nothing).
fn run(
    store: &Store,
    db: &Path,
    testbed: &mut dyn Testbed,
    req: &Request,
    read_back: bool,
) -> Result<Ended> {
    let started = std::time::Instant::now();
    let target = testbed.target();
    let space = Space::build(&testbed.space(), req.policy, testbed.zoned().as_deref())?;
    crate::tune::config(req.policy, req.budget, req.seed)?;
    crate::tune::needs::check(&*testbed, req.policy)?;
    let dropped = dropped_knobs(&space, &testbed.unusable(), &target);
    let not_touched = warn_dropped(&*testbed, req.policy, &space, &dropped);
    if let Some(n) = crate::tune::judge_note(&*testbed, req.policy) {
        tracing::info!("{n}");
    }
    let confirm = known_point(&space, req)?;
    if let Some(k) = req.confirm.filter(|_| !req.quiet) {
        crate::signals::eprint_line(&format!(
            "sweetspot: confirming {} ({}) before any search",
            crate::knob::setting_label(&k.setting),
            k.source
        ));
    }
    let (opened, seed) = open_tune(store, testbed, req, &target, &space)?;
    let tune_id = opened.id;
    let mut rec = StoreRecorder {
        store,
        target: target.clone(),
        sizes: testbed.sizes(),
        tune_id,
    };
    let replay = Replay::new(req.resume);
    let judged = crate::tune::judge_note(&*testbed, req.policy).is_none();
    let log = trial_log(&space, req, judged, &replay, confirm);
    let incumbent = log.incumbent();
    let res = optimise(
        &mut ReplayBed {
            inner: &mut *testbed,
            replay: replay.clone(),
        },
        &space,
        req.policy,
        &mut ReplayRecorder {
            inner: &mut rec,
            replay: replay.clone(),
            store,
            tune_id,
        },
        Options {
            confirm,
            ..Options::logged(seed, req.budget, log)
        },
    );
    let resumed = replay.borrow().resumed();
    let out = match res {
        Ok(o) => o,
        Err(e) => {
            let best = incumbent.get();
            return ended_early(
                store, testbed, &opened, e, read_back, req, &space, best, resumed,
            );
        }
    };
    if let Some(e) = failed_at_default(&out, &space, req.policy) {
        let r = testbed.restore();
        opened.finish(store, crate::types::TuneStatus::Failed)?;
        r?;
        return Err(e);
    }
    let significant = out.verdict.as_ref().is_some_and(|v| v.significant);
    let applied = req.apply && significant;
    let mut rep = report::build_with(
        &target,
        req.policy,
        &space,
        &out,
        Some(tune_id),
        applied,
        dropped,
    );
    rep.not_touched = not_touched;
    rep.notes
        .extend(crate::tune::judge_note(&*testbed, req.policy));
    rep.resumed = resumed;
    rep.seed = Some(seed);
    if let (Some(c), Some(k)) = (rep.confirm.as_mut(), req.confirm) {
        c.source.clone_from(&k.source);
    }
    rep.elapsed_s = Some(started.elapsed().as_secs_f64());
    if let Err(e) = leave_device(testbed, &mut rep, applied, db) {
        let _ = testbed.restore();
        opened.finish(store, crate::types::TuneStatus::Failed)?;
        return Err(e);
    }
    rep.bytes_written = opened.record_bytes(store);
    store_sweet_spot(store, &target, &req.policy.name, tune_id, &rep, significant)?;
    Ok(Ended::Done(Box::new(rep)))
}

/// Leaves the device as the tune ends: the sweet spot applied and kept when `applied`
/// (`--apply`; the command that undoes it goes into `rep`), else restored.
fn leave_device(
    testbed: &mut dyn Testbed,
    rep: &mut Report,
    applied: bool,
    db: &Path,
) -> Result<()> {
    if !applied {
        return testbed.restore();
    }
    // The sweet spot stays on the device after the testbed is gone, journaled under this
    // tune, so `restore` still undoes it.
    let fin = testbed.apply(&rep.best).map(|()| testbed.keep());
    let root = testbed.root().unwrap_or_default();
    rep.undo = Some(undo_command(db, &root, testbed.device_name().as_deref()));
    fin
}

/// The grid point of the known sweet spot `req` confirms, if any. Errors (exit 2): it is
/// not a point of the policy's grid on this device ([`crate::tune::known::grid_point`]).
fn known_point(space: &Space, req: &Request) -> Result<Option<KnownPoint>> {
    req.confirm
        .map(|k| {
            crate::tune::known::grid_point(space, k).map(|point| KnownPoint {
                point,
                improvement: k.improvement,
            })
        })
        .transpose()
}

/// A tune's row and what it writes to its device, counted from when the row was opened.
struct Opened {
    /// The `tunes` row.
    id: i64,
    /// The device's write counter (`None`: a simulated device, or counters that do not read).
    meter: Option<WriteMeter>,
}

impl Opened {
    /// Stores the bytes written to the device so far ([`crate::store::tunes::TuneRow::bytes_written`])
    /// and returns them. A figure that cannot be stored is said as a warning: it must not
    /// keep the tune from ending or its sweet spot from being stored.
    fn record_bytes(&self, store: &Store) -> Option<u64> {
        let bytes = self.meter.as_ref().and_then(WriteMeter::bytes);
        if let Some(b) = bytes
            && let Err(e) = store.set_tune_bytes_written(self.id, b)
        {
            tracing::warn!("tune #{}: the bytes it wrote were not stored: {e}", self.id);
        }
        bytes
    }

    /// Ends the row with `status`, with the bytes written.
    fn finish(&self, store: &Store, status: crate::types::TuneStatus) -> Result<()> {
        self.record_bytes(store);
        store.finish_tune(self.id, status)
    }
}

/// Stores the tune's sweet spot (its report as the evidence) and marks the tune done.
fn store_sweet_spot(
    store: &Store,
    target: &TargetInfo,
    policy: &str,
    tune_id: i64,
    rep: &Report,
    significant: bool,
) -> Result<()> {
    let evidence = serde_json::to_value(rep).map_err(|e| Error::Failed(e.to_string()))?;
    store.insert_sweet_spot(
        target,
        policy,
        Some(tune_id),
        &rep.best,
        &rep.default,
        significant,
        &evidence,
    )?;
    store.finish_tune(tune_id, crate::types::TuneStatus::Done)
}

/// Says which of the policy's knobs and values this tune leaves out (`dropped`,
/// `space.dropped_values`), as warnings the user sees (not behind -v): a testbed's note
/// (e.g. debugfs locked down) once per group, only when the policy asked for a knob it keeps
/// out. Returns those notes, for the report.
fn warn_dropped(
    testbed: &dyn Testbed,
    policy: &Policy,
    space: &Space,
    dropped: &[report::Dropped],
) -> Vec<String> {
    // Said once per group (not per knob): e.g. debugfs locked down; only when the policy asked
    // for a knob it keeps out (a block-only policy is not told about debugfs).
    let not_touched: Vec<String> = testbed
        .notes()
        .into_iter()
        .filter(|n| dropped.iter().any(|d| &d.reason == n))
        .collect();
    for n in &not_touched {
        tracing::warn!("{n}");
    }
    // A warning the user sees (not behind -v): the policy asked for these knobs. Those left
    // out for a reason just said are named together.
    let (grouped, own): (Vec<&report::Dropped>, Vec<&report::Dropped>) = dropped
        .iter()
        .partition(|d| not_touched.contains(&d.reason));
    for d in own {
        tracing::warn!(
            "policy '{}': knob {} dropped: {}",
            policy.name,
            d.knob,
            d.reason
        );
    }
    if !grouped.is_empty() {
        let names: Vec<&str> = grouped.iter().map(|d| d.knob.as_str()).collect();
        tracing::warn!(
            "policy '{}': knobs {} dropped (see above)",
            policy.name,
            names.join(", ")
        );
    }
    for v in &space.dropped_values {
        tracing::warn!("policy '{}': {v}", policy.name);
    }
    not_touched
}

/// A tune's optimise returned `e`: the device is restored and the tune marked interrupted
/// or failed. A stopped tune (`Error::Interrupted`) is read back as [`Ended::Stopped`] when
/// `read_back`; any other error (or a read-back that failed, warned) is returned.
#[allow(clippy::too_many_arguments)]
fn ended_early(
    store: &Store,
    testbed: &mut dyn Testbed,
    tune: &Opened,
    e: Error,
    read_back: bool,
    req: &Request,
    space: &Space,
    incumbent: Option<usize>,
    resumed: Option<crate::tune::resume::Resumed>,
) -> Result<Ended> {
    let status = if matches!(e, Error::Interrupted) {
        crate::types::TuneStatus::Interrupted
    } else {
        crate::types::TuneStatus::Failed
    };
    let r = testbed.restore();
    tune.finish(store, status)?;
    r?;
    let tune_id = tune.id;
    if !read_back || !matches!(e, Error::Interrupted) {
        return Err(e);
    }
    match Stopped::read(store, tune_id, req.policy, space, incumbent, resumed) {
        Ok(s) => Ok(Ended::Stopped(Box::new(s))),
        Err(why) => {
            tracing::warn!("tune #{tune_id} stopped, but reading it back failed: {why}");
            Err(e)
        }
    }
}

/// A reference trial that failed at the default setting measured nothing to tune against:
/// that is the job failing (exit 1) with the trial's own reason, not a "keep the default"
/// sweet spot. The same for contest loads as for a user benchmark. `None` when some trial at
/// the default (or none at all) succeeded.
fn failed_at_default(
    out: &crate::tune::TuneOutcome,
    space: &Space,
    policy: &Policy,
) -> Option<Error> {
    let at_default: Vec<&crate::tune::evaluator::Trial> = out
        .trials
        .iter()
        .filter(|t| t.point == space.default)
        .collect();
    if at_default.is_empty() || at_default.iter().any(|t| t.failed.is_none()) {
        return None;
    }
    let why = at_default[0].failed.clone().unwrap_or_default();
    let what = match &policy.objective {
        crate::tune::policy::Objective::Benchmark(job) => {
            format!("the benchmark `{}`", job.command)
        }
        _ => format!(
            "the reference trial ({})",
            crate::knob::setting_label(&space.points[space.default])
        ),
    };
    Some(Error::Failed(format!(
        "{what} failed at the default setting, so there is nothing to tune against: {why}"
    )))
}

/// Opens the tune's row (holding its lock's path, with its seed and budget), marks a resumed
/// tune, makes the testbed journal under it and starts counting what it writes to the
/// device. Returns the row and the tune's seed (a resumed tune's own).
fn open_tune(
    store: &Store,
    testbed: &mut dyn Testbed,
    req: &Request,
    target: &TargetInfo,
    space: &Space,
) -> Result<(Opened, u64)> {
    store.touch_device(target, &serde_json::json!({ "space": space.knobs }))?;
    // The lock it holds goes into its row: the other commands judge by it whether it is alive
    // (a scratch tune's identity names no lock).
    let tune_id = store.insert_tune_holding(
        target,
        testbed.device_name().as_deref(),
        &req.policy.name,
        req.lock.path(),
    )?;
    req.lock.set_tune(tune_id)?;
    let seed = req.resume.map_or(req.seed, |r| r.seed);
    store.set_tune_plan(tune_id, seed, req.budget.unwrap_or(req.policy.budget))?;
    if let Some(r) = req.resume {
        store.mark_resumed(r.from_tune)?;
    }
    testbed.set_owner(&crate::types::Owner::Tune(tune_id));
    let meter = testbed
        .device_name()
        .zip(testbed.root())
        .and_then(|(dev, root)| WriteMeter::start(&root, &dev));
    Ok((Opened { id: tune_id, meter }, seed))
}

/// The tune's trial log and progress bar: one label per setting, the run budget (with the
/// judges' runs when `judged`, and a confirm's of grid point `confirm` if it may not hold),
/// runs replayed from a resumed tune counted as done.
fn trial_log(
    space: &Space,
    req: &Request,
    judged: bool,
    replay: &Rc<RefCell<Replay>>,
    confirm: Option<KnownPoint>,
) -> observe::TrialLog {
    let labels = space
        .points
        .iter()
        .map(crate::knob::setting_label)
        .collect();
    let full =
        crate::tune::evaluator::Part::Full.loads(req.policy).len() * req.policy.runs as usize;
    let confirm =
        crate::tune::confirm_trials(req.policy, req.budget, confirm, space.default) * full;
    let runs = crate::tune::run_budget(req.policy, req.budget, judged) + confirm as u64;
    observe::TrialLog::new(labels, req.policy.objective.label(), runs, req.quiet)
        .minimize(req.policy.objective.minimize())
        .replayed({
            let replay = replay.clone();
            move || replay.borrow().replayed_runs()
        })
}
