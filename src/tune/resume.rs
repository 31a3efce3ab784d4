//! Resuming an interrupted tune: the finished trials of the newest tune of the same
//! (identity, kernel release, policy) are replayed, and the tune goes on live from there.
//!
//! The optimiser is deterministic given its seed and the results it is fed (its design,
//! model and tie-breaks all come from the seed). A resumed tune therefore runs with the
//! interrupted tune's seed and budget (`crate::store::Store::resumable_tune`), and while
//! the solver asks for the same settings, in the same order, as the interrupted tune
//! measured, it is answered from the store: `ReplayBed` gives back the stored runs instead
//! of running the loads, `ReplayRecorder` hands back the stored trial (moved to the new
//! tune, `crate::store::Store::adopt_trial`) instead of inserting a copy. The solver's
//! state after the replay is the one the interrupted tune had, so what follows is the same
//! search, only its next trials are measured now. A simulator also draws, and drops, the
//! noise of every replayed run ([`Testbed::replayed`]), so a resumed `--sim` tune measures
//! what the uninterrupted one would have and ends as it does.
//!
//! The first request that differs (another setting, or the same setting with other loads)
//! ends the replay: the rest of the stored trials stay with the old tune and every later
//! trial is measured live. Only finished trials are replayed (a trial stopped between its
//! runs is no measurement). Settings are still applied during the replay (cheap sysfs
//! writes), so the device is at the solver's setting when the live part starts.

use crate::bench::{Load, Run, SpaceKnob, TargetInfo, Testbed};
use crate::knob::Setting;
use crate::store::Store;
use crate::store::tunes::TuneRow;
use crate::tune::evaluator::Recorder;
use crate::types::TuneStatus;
use crate::{Error, Result};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

/// One stored trial to replay.
#[derive(Clone, Debug)]
struct Stored {
    id: i64,
    setting: Setting,
    runs: Vec<Run>,
}

/// An interrupted tune to resume.
#[derive(Clone, Debug)]
pub struct Resume {
    /// The interrupted tune's id.
    pub from_tune: i64,
    /// Its seed: the resumed tune's.
    pub seed: u64,
    /// Its trial budget: the resumed tune's.
    pub budget: u32,
    trials: Vec<Stored>,
}

/// What a resumed tune reused, for its report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Resumed {
    /// The interrupted tune it resumed.
    pub from_tune: i64,
    /// Its finished trials replayed (taken over by this tune).
    pub trials: usize,
    /// Their load runs (not run again).
    pub runs: u64,
}

impl Resume {
    /// The newest tune of (`target`'s identity and kernel, `policy`) when it was
    /// interrupted, its budget is `budget`, and it has finished trials all measured with
    /// `sizes` (the testbed's job and load sizes); else `None` (a fresh tune).
    pub(crate) fn find(
        store: &Store,
        target: &TargetInfo,
        policy: &str,
        budget: u32,
        sizes: &serde_json::Value,
    ) -> Result<Option<Resume>> {
        Ok(Resume::find_or_why(store, target, policy, budget, sizes)?.resume())
    }

    /// As [`Resume::find`]; when there is nothing to resume, why, for `tune --resume` to say:
    /// the interrupted tune of the target there is and why it is not resumed (another
    /// budget, policy or kernel, a newer tune, other job or load sizes, no finished trial),
    /// and what to give to resume it where a flag would, e.g. `tune #1 (interrupted, 648
    /// finished trials) was made with budget 3000, not 1000: a fresh tune; give --budget 3000
    /// to resume it`.
    pub(crate) fn find_or_why(
        store: &Store,
        target: &TargetInfo,
        policy: &str,
        budget: u32,
        sizes: &serde_json::Value,
    ) -> Result<Found> {
        let Some((tune, seed, b)) =
            store.resumable_tune(&target.identity, &target.kernel, policy)?
        else {
            return Ok(Found::Fresh(why_not_newest(store, target, policy)?));
        };
        // Only the last trial can be unfinished (the tune stopped there).
        let finished: Vec<_> = store
            .trials_of_tune(tune.id)?
            .into_iter()
            .take_while(|t| t.finished_at.is_some())
            .collect();
        let other_sizes = finished.iter().find(|t| &t.sizes != sizes);
        let this = stopped(tune.id, tune.status, finished.len());
        if finished.is_empty() {
            return Ok(Found::Fresh(format!(
                "tune #{} ({}) stopped before its first trial finished: a fresh tune",
                tune.id, tune.status
            )));
        }
        if b != budget {
            return Ok(Found::Fresh(format!(
                "{this} was made with budget {b}, not {budget}: a fresh tune; give --budget {b} \
                 to resume it"
            )));
        }
        if let Some(old) = other_sizes {
            return Ok(Found::Fresh(format!(
                "{this} was measured with other job or load sizes ({}): a fresh tune",
                differences(&old.sizes, sizes)
            )));
        }
        // Resumable: only now are the runs read.
        let mut trials = Vec::with_capacity(finished.len());
        for t in finished {
            let runs = store.runs(t.id)?.into_iter().map(|r| r.run).collect();
            trials.push(Stored {
                id: t.id,
                setting: t.setting,
                runs,
            });
        }
        Ok(Found::Resume(Resume {
            from_tune: tune.id,
            seed,
            budget,
            trials,
        }))
    }

    /// Finished trials it holds.
    pub(crate) fn trials(&self) -> usize {
        self.trials.len()
    }
}

/// What [`Resume::find_or_why`] finds.
#[derive(Debug)]
pub(crate) enum Found {
    /// The stopped tune to resume.
    Resume(Resume),
    /// Why none is resumed (a fresh tune), for `tune --resume` to say.
    Fresh(String),
}

impl Found {
    /// The tune to resume, if any.
    pub fn resume(self) -> Option<Resume> {
        match self {
            Found::Resume(r) => Some(r),
            Found::Fresh(_) => None,
        }
    }

    /// The tune to resume, if any, borrowed.
    pub fn as_resume(&self) -> Option<&Resume> {
        match self {
            Found::Resume(r) => Some(r),
            Found::Fresh(_) => None,
        }
    }
}

/// `tune #3 (interrupted, 2 finished trials)`.
fn stopped(id: i64, status: TuneStatus, finished: usize) -> String {
    let s = if finished == 1 { "" } else { "s" };
    format!("tune #{id} ({status}, {finished} finished trial{s})")
}

/// Why no tune of `target` with `policy` is resumable although the newest of them was not
/// stopped (or there is none): the newest stopped tune of the target, if any, is not the
/// newest of its kernel and policy, or was made with another policy or on another kernel.
fn why_not_newest(store: &Store, target: &TargetInfo, policy: &str) -> Result<String> {
    let tunes = store.tunes(Some(&target.identity))?;
    let is_stopped = |t: &&TuneRow| t.status.is_resumable();
    let same = |t: &&TuneRow| t.kernel == target.kernel && t.policy == policy;
    let Some(t) = tunes
        .iter()
        .rev()
        .filter(is_stopped)
        .find(same)
        .or_else(|| tunes.iter().rev().find(is_stopped))
    else {
        return Ok("no interrupted tune; a fresh tune".into());
    };
    let finished = store
        .trials_of_tune(t.id)?
        .iter()
        .filter(|r| r.finished_at.is_some())
        .count();
    let this = stopped(t.id, t.status, finished);
    Ok(if t.kernel != target.kernel {
        format!(
            "{this} was made on kernel {}, not {}: a fresh tune (a tune is resumed only on its \
             own kernel)",
            t.kernel, target.kernel
        )
    } else if t.policy != policy {
        format!(
            "{this} was made with policy '{}', not '{policy}': a fresh tune; give --policy {} \
             to resume it",
            t.policy, t.policy
        )
    } else {
        match tunes.iter().rev().find(same) {
            Some(newer) if newer.id != t.id => format!(
                "{this} is not the newest tune of {} with policy {policy} (tune #{}, {}, came \
                 after it): a fresh tune; only the newest one is resumed",
                target.label, newer.id, newer.status
            ),
            // The newest, stopped, without a seed or budget (stopped before its plan was
            // stored, or stored before tunes had one).
            _ => format!("{this} has no seed or budget stored: a fresh tune"),
        }
    })
}

/// What differs between a stopped tune's job and load sizes and the testbed's now, e.g.
/// `surface data/s.toml, now ./data/s.toml`.
fn differences(old: &serde_json::Value, new: &serde_json::Value) -> String {
    let text = |v: Option<&serde_json::Value>| match v {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "none".into(),
    };
    match (old.as_object(), new.as_object()) {
        (Some(a), Some(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            keys.into_iter()
                .filter(|k| a.get(*k) != b.get(*k))
                .map(|k| format!("{k} {}, now {}", text(a.get(k)), text(b.get(k))))
                .collect::<Vec<_>>()
                .join("; ")
        }
        _ => format!("{}, now {}", text(Some(old)), text(Some(new))),
    }
}

/// The replay's state, shared by [`ReplayBed`] and [`ReplayRecorder`].
#[derive(Debug, Default)]
pub(crate) struct Replay {
    pending: VecDeque<Stored>,
    /// The stored trial being replayed now: its id and the runs not given back yet.
    current: Option<(i64, VecDeque<Run>)>,
    done: Resumed,
}

impl Replay {
    /// A replay of `r`'s trials; an empty one (everything live) for `None`.
    pub(crate) fn new(r: Option<&Resume>) -> Rc<RefCell<Replay>> {
        Rc::new(RefCell::new(Replay {
            pending: r
                .map(|r| r.trials.iter().cloned().collect())
                .unwrap_or_default(),
            current: None,
            done: Resumed {
                from_tune: r.map_or(0, |r| r.from_tune),
                ..Resumed::default()
            },
        }))
    }

    /// What was reused so far; `None` when nothing was.
    pub(crate) fn resumed(&self) -> Option<Resumed> {
        (self.done.trials > 0).then_some(self.done)
    }

    /// Load runs given back from the store so far (not run again); the progress bar leaves
    /// them out of its run time.
    pub(crate) fn replayed_runs(&self) -> u64 {
        self.done.runs
    }
}

/// A testbed that answers runs of a replayed trial from the store and passes everything else
/// to the real one.
pub(crate) struct ReplayBed<'a> {
    /// The real testbed.
    pub inner: &'a mut dyn Testbed,
    /// The shared replay.
    pub replay: Rc<RefCell<Replay>>,
}

impl Testbed for ReplayBed<'_> {
    fn target(&self) -> TargetInfo {
        self.inner.target()
    }
    fn space(&self) -> Vec<SpaceKnob> {
        self.inner.space()
    }
    fn unusable(&self) -> Vec<(String, String)> {
        self.inner.unusable()
    }
    fn notes(&self) -> Vec<String> {
        self.inner.notes()
    }
    fn lacks(&self, load: Load, metric: &str) -> Option<String> {
        self.inner.lacks(load, metric)
    }
    fn apply(&mut self, setting: &Setting) -> Result<()> {
        self.inner.apply(setting)
    }
    fn run(&mut self, load: Load) -> Result<Run> {
        let mut g = self.replay.borrow_mut();
        let r = &mut *g;
        if let Some((id, runs)) = r.current.as_mut() {
            return match runs.pop_front() {
                Some(run) if run.load == load => {
                    r.done.runs += 1;
                    drop(g);
                    self.inner.replayed(load);
                    Ok(run)
                }
                other => Err(Error::Failed(format!(
                    "resuming tune #{}: trial {id} ran {} where {load} is asked now (the \
                     search is not the one that was interrupted)",
                    r.done.from_tune,
                    other.map_or_else(|| "no more runs".to_string(), |o| o.load.to_string())
                ))),
            };
        }
        drop(g);
        self.inner.run(load)
    }
    fn lacks_startup(&self) -> Option<String> {
        self.inner.lacks_startup()
    }
    fn run_startup(&mut self, load: Load) -> Result<Run> {
        self.inner.run_startup(load)
    }
    fn sizes(&self) -> serde_json::Value {
        self.inner.sizes()
    }
    fn set_owner(&mut self, owner: &crate::types::Owner) {
        self.inner.set_owner(owner)
    }
    fn device_name(&self) -> Option<String> {
        self.inner.device_name()
    }
    fn root(&self) -> Option<crate::sysroot::SysRoot> {
        self.inner.root()
    }
    fn zoned(&self) -> Option<String> {
        self.inner.zoned()
    }
    fn restore(&mut self) -> Result<()> {
        self.inner.restore()
    }
    fn keep(&mut self) {
        self.inner.keep()
    }
}

/// A recorder that hands back the stored trial while the replay matches (moving it to tune
/// `tune_id`), and records live trials through the real one.
pub(crate) struct ReplayRecorder<'a> {
    /// The real recorder.
    pub inner: &'a mut dyn Recorder,
    /// The shared replay.
    pub replay: Rc<RefCell<Replay>>,
    /// The store the stored trials are in.
    pub store: &'a Store,
    /// The resumed tune.
    pub tune_id: i64,
}

impl Recorder for ReplayRecorder<'_> {
    fn trial_started(&mut self, setting: &Setting) -> Result<i64> {
        let mut r = self.replay.borrow_mut();
        r.current = None;
        if r.pending.front().is_some_and(|t| &t.setting == setting)
            && let Some(t) = r.pending.pop_front()
        {
            self.store.adopt_trial(t.id, self.tune_id)?;
            r.done.trials += 1;
            r.current = Some((t.id, t.runs.into()));
            return Ok(t.id);
        }
        if let Some(t) = r.pending.front() {
            tracing::info!(
                "resuming tune #{}: the search asks for {} where {} was measured; the rest is \
                 measured live ({} stored trials not reused)",
                r.done.from_tune,
                crate::knob::setting_label(setting),
                crate::knob::setting_label(&t.setting),
                r.pending.len()
            );
            r.pending.clear();
        }
        drop(r);
        self.inner.trial_started(setting)
    }
    fn run_finished(&mut self, trial: i64, index: usize, run: &Run) -> Result<()> {
        if self
            .replay
            .borrow()
            .current
            .as_ref()
            .is_some_and(|(id, _)| *id == trial)
        {
            return Ok(());
        }
        self.inner.run_finished(trial, index, run)
    }
    fn trial_finished(&mut self, trial: i64) -> Result<()> {
        let mut r = self.replay.borrow_mut();
        if let Some((id, left)) = r.current.take_if(|(id, _)| *id == trial) {
            if !left.is_empty() {
                return Err(Error::Failed(format!(
                    "resuming tune #{}: trial {id} has {} more runs than asked now (the \
                     search is not the one that was interrupted)",
                    r.done.from_tune,
                    left.len()
                )));
            }
            return Ok(());
        }
        drop(r);
        self.inner.trial_finished(trial)
    }
    fn judge_run(&mut self, judge: &str, setting: &Setting, run: &Run) -> Result<()> {
        self.inner.judge_run(judge, setting, run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::SimDevice;
    use crate::lock::{DeviceLock, Holder};
    use crate::tune::run::{Request, tune};
    use std::path::Path;

    fn settings(store: &Store, tune: i64) -> Vec<Setting> {
        store
            .trials_of_tune(tune)
            .unwrap()
            .into_iter()
            .filter(|t| t.finished_at.is_some())
            .map(|t| t.setting)
            .collect()
    }

    #[test]
    fn a_resumed_tune_replays_the_stopped_ones_trials_and_asks_what_it_would_have_asked() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.db");
        let store = Store::open(&db).unwrap();
        let surface = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml");
        let policy = crate::tune::policy::resolve(
            "quick",
            Path::new("/nonexistent"),
            crate::trust::Origin::Named,
        )
        .unwrap();
        let bed = |stop_at| SimDevice::open(&surface, 11).unwrap().stop_after(stop_at);
        let lock = DeviceLock::acquire(
            &crate::lock::path(&db, &crate::sysroot::SysRoot::default(), "sim:x"),
            "sim",
            Holder::me("tune"),
        )
        .unwrap();
        let req = |resume| Request {
            policy: &policy,
            budget: None,
            seed: 5,
            apply: false,
            quiet: true,
            lock: &lock,
            resume,
            confirm: None,
        };
        // The whole tune, for reference; then the same tune stopped at its 9th run (the
        // screen's trials are 1 or 2 runs each).
        let full = tune(&store, &db, &mut bed(usize::MAX), &req(None)).unwrap();
        let reference = settings(&store, full.tune_id.unwrap());
        let target = bed(0).target();
        let sizes = bed(0).sizes();
        let e = tune(&store, &db, &mut bed(8), &req(None)).unwrap_err();
        assert!(matches!(e, Error::Interrupted), "{e:?}");
        let r = Resume::find(&store, &target, "quick", policy.budget, &sizes)
            .unwrap()
            .expect("the stopped tune is resumable");
        let stopped: Vec<_> = store
            .trials_of_tune(r.from_tune)
            .unwrap()
            .into_iter()
            .filter(|t| t.finished_at.is_some())
            .collect();
        let k = stopped.len();
        let k_runs: usize = stopped
            .iter()
            .map(|t| store.runs(t.id).unwrap().len())
            .sum();
        assert!(k >= 2 && k_runs <= 8, "{k} trials, {k_runs} runs");
        assert_eq!((r.seed, r.trials()), (5, k));
        // Another budget or other load sizes: a fresh tune.
        assert!(
            Resume::find(&store, &target, "quick", policy.budget + 1, &sizes)
                .unwrap()
                .is_none()
        );
        assert!(
            Resume::find(
                &store,
                &target,
                "quick",
                policy.budget,
                &serde_json::json!({"x": 1})
            )
            .unwrap()
            .is_none()
        );

        // Resumed under another seed argument: the stopped tune's seed is used.
        let mut b = bed(usize::MAX);
        let req2 = Request {
            seed: 999,
            ..req(Some(&r))
        };
        let rep = tune(&store, &db, &mut b, &req2).unwrap();
        let x = rep.resumed.expect("it resumed");
        assert_eq!(
            (x.from_tune, x.trials, x.runs),
            (r.from_tune, k, k_runs as u64)
        );
        assert_eq!(
            b.runs_made() as u64,
            rep.runs - k_runs as u64,
            "the reused runs were not run again"
        );
        assert!(rep.runs <= full.runs + 2, "{} vs {}", rep.runs, full.runs);
        // The trials moved to the resumed tune, and its next setting is the reference's:
        // the solver's state after the replay is the stopped tune's.
        let got = settings(&store, rep.tune_id.unwrap());
        assert_eq!(got[..=k], reference[..=k]);
        assert!(settings(&store, r.from_tune).is_empty());
        let old = store.tunes(None).unwrap();
        assert_eq!(old[1].status, crate::types::TuneStatus::Resumed);
        assert!(
            crate::tune::report::text(&rep).contains(&format!(
                "resumed tune #{}: reused its {k} finished trials ({k_runs} runs)",
                r.from_tune
            )),
            "{}",
            crate::tune::report::text(&rep)
        );
        // Not resumed twice.
        assert!(
            Resume::find(&store, &target, "quick", policy.budget, &sizes)
                .unwrap()
                .is_none()
        );
    }

    /// `--resume` with nothing to resume says which stopped tune there is and why it is not
    /// resumed, from the first reason that applies.
    #[test]
    fn nothing_to_resume_names_the_stopped_tune_and_why() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db")).unwrap();
        let on = |kernel: &str| TargetInfo {
            label: "sda".into(),
            identity: "sim:fake-sda".into(),
            kernel: kernel.into(),
        };
        let sizes = serde_json::json!({"surface": "s.toml", "seed": 1});
        // A tune of `policy` on `kernel` with `budget`, `finished` finished trials (measured
        // with `sz`) and one stopped mid-way, ended with `status`.
        let tune = |kernel: &str,
                    policy: &str,
                    budget: u32,
                    finished: usize,
                    sz: &serde_json::Value,
                    status: &str| {
            let t = on(kernel);
            let id = store.insert_tune(&t, Some("sda"), policy).unwrap();
            store.set_tune_plan(id, 7, budget).unwrap();
            for i in 0..=finished {
                let setting: Setting = [(
                    "fifo_batch".to_string(),
                    crate::knob::KnobValue::Int(i as i64),
                )]
                .into();
                let trial = store.insert_trial(&t, &setting, sz, Some(id)).unwrap();
                if i < finished {
                    store.finish_trial(trial).unwrap();
                }
            }
            store.finish_tune(id, status.parse().unwrap()).unwrap();
            id
        };
        let why = |policy: &str, budget: u32| match Resume::find_or_why(
            &store,
            &on("6.18"),
            policy,
            budget,
            &sizes,
        )
        .unwrap()
        {
            Found::Fresh(why) => why,
            Found::Resume(r) => panic!("tune #{} would be resumed", r.from_tune),
        };
        assert_eq!(why("quick", 12), "no interrupted tune; a fresh tune");
        tune("6.18", "quick", 12, 0, &sizes, "interrupted");
        assert_eq!(
            why("quick", 30),
            "tune #1 (interrupted) stopped before its first trial finished: a fresh tune"
        );
        tune("6.18", "quick", 3000, 648, &sizes, "interrupted");
        assert_eq!(
            why("quick", 1000),
            "tune #2 (interrupted, 648 finished trials) was made with budget 3000, not 1000: a \
             fresh tune; give --budget 3000 to resume it"
        );
        assert!(
            Resume::find(&store, &on("6.18"), "quick", 3000, &sizes)
                .unwrap()
                .is_some()
        );
        let other = serde_json::json!({"surface": "./s.toml", "seed": 1});
        tune("6.18", "quick", 12, 1, &other, "recovered");
        assert_eq!(
            why("quick", 12),
            "tune #3 (recovered, 1 finished trial) was measured with other job or load sizes \
             (surface ./s.toml, now s.toml): a fresh tune"
        );
        tune("6.18", "quick", 12, 2, &sizes, "done");
        assert_eq!(
            why("quick", 12),
            "tune #3 (recovered, 1 finished trial) is not the newest tune of sda with policy \
             quick (tune #4, done, came after it): a fresh tune; only the newest one is resumed"
        );
        tune("6.18", "desktop", 30, 2, &sizes, "interrupted");
        // The stopped tune of the same policy comes first; else another policy's.
        assert!(why("quick", 12).starts_with("tune #3 (recovered"));
        assert_eq!(
            why("throughput", 30),
            "tune #5 (interrupted, 2 finished trials) was made with policy 'desktop', not \
             'throughput': a fresh tune; give --policy desktop to resume it"
        );
        tune("6.19", "throughput", 30, 2, &sizes, "interrupted");
        assert_eq!(
            why("throughput", 30),
            "tune #6 (interrupted, 2 finished trials) was made on kernel 6.19, not 6.18: a \
             fresh tune (a tune is resumed only on its own kernel)"
        );
    }
}
