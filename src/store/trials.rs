//! Trials and runs: every setting measured (by `bench` or a tune) and every run of it, written
//! as soon as it finishes so a crash loses at most the run in progress. Also the `devices` row
//! of what was measured.

use super::{Store, now};
use crate::Result;
use crate::types::{Load, Run, Setting, TargetInfo};
use rusqlite::params;

/// A stored trial: one setting measured.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TrialRow {
    /// Row id.
    pub id: i64,
    /// The tune it belongs to, if any (`None` for `bench`).
    pub tune_id: Option<i64>,
    /// Device identity (`TargetInfo::identity`).
    pub identity: String,
    /// Kernel release, or `sim`.
    pub kernel: String,
    /// Target label as shown in reports.
    pub target: String,
    /// Knob → value.
    pub setting: Setting,
    /// Job and load sizes used (`Testbed::sizes`).
    pub sizes: serde_json::Value,
    /// Unix seconds (in `history --json` as RFC 3339 with `started_at_epoch_s` beside it,
    /// docs/json.md: not serialized here).
    #[serde(skip_serializing)]
    pub started_at: i64,
    /// Unix seconds when its last run finished; `None` when it was stopped before that
    /// (Ctrl-C or SIGTERM between its runs): its runs are kept, but it is no measurement.
    /// Not serialized here, as `started_at`.
    #[serde(skip_serializing)]
    pub finished_at: Option<i64>,
}

/// A stored run.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RunRow {
    /// Row id.
    pub id: i64,
    /// The trial it belongs to.
    pub trial_id: i64,
    /// 0-based position within the trial, in the order the runs happened.
    pub run_index: i64,
    /// The raw values.
    pub run: Run,
    /// Unix seconds.
    pub finished_at: i64,
}

fn json_err(e: serde_json::Error) -> crate::Error {
    crate::Error::Failed(format!("database: bad JSON: {e}"))
}

impl Store {
    /// Records that `target` was seen now (insert, or update `name`, `fingerprint` and
    /// `last_seen` of the existing (identity, kernel) row). Returns the row id.
    pub(crate) fn touch_device(
        &self,
        target: &TargetInfo,
        fingerprint: &serde_json::Value,
    ) -> Result<i64> {
        let t = now();
        let id = self.conn().query_row(
            "INSERT INTO devices (identity, kernel, name, fingerprint, first_seen, last_seen)
             VALUES (?1, ?2, ?3, ?4, ?5, ?5)
             ON CONFLICT (identity, kernel) DO UPDATE SET
                 name = excluded.name, fingerprint = excluded.fingerprint,
                 last_seen = excluded.last_seen
             RETURNING id",
            params![
                target.identity,
                target.kernel,
                target.label,
                fingerprint.to_string(),
                t
            ],
            |r| r.get(0),
        )?;
        Ok(id)
    }

    /// Inserts a trial of `setting` on `target`, with the sizes in use and its tune (if any).
    /// Returns the trial id.
    pub(crate) fn insert_trial(
        &self,
        target: &TargetInfo,
        setting: &Setting,
        sizes: &serde_json::Value,
        tune_id: Option<i64>,
    ) -> Result<i64> {
        self.insert_trial_of(target, setting, sizes, tune_id, None)
    }

    /// Inserts a trial of `setting` on a judge of tune `tune_id`'s policy (`judge`, e.g.
    /// `startup`: its runs time the start-up job, the tune's judges). Such trials are
    /// left out of [`Store::trials`] and [`Store::trials_of_tune`]; read them with
    /// [`Store::judge_trials_of_tune`]. Returns the trial id.
    pub(crate) fn insert_judge_trial(
        &self,
        target: &TargetInfo,
        setting: &Setting,
        sizes: &serde_json::Value,
        tune_id: i64,
        judge: &str,
    ) -> Result<i64> {
        self.insert_trial_of(target, setting, sizes, Some(tune_id), Some(judge))
    }

    fn insert_trial_of(
        &self,
        target: &TargetInfo,
        setting: &Setting,
        sizes: &serde_json::Value,
        tune_id: Option<i64>,
        judge: Option<&str>,
    ) -> Result<i64> {
        let setting = serde_json::to_string(setting).map_err(json_err)?;
        self.conn().execute(
            "INSERT INTO trials (tune_id, identity, kernel, target, setting, sizes, started_at,
                                 judge)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                tune_id,
                target.identity,
                target.kernel,
                target.label,
                setting,
                sizes.to_string(),
                now(),
                judge
            ],
        )?;
        Ok(self.conn().last_insert_rowid())
    }

    /// Marks trial `id` finished (all its runs done), now.
    pub(crate) fn finish_trial(&self, id: i64) -> Result<()> {
        self.conn().execute(
            "UPDATE trials SET finished_at = ?2 WHERE id = ?1",
            params![id, now()],
        )?;
        Ok(())
    }

    /// Inserts one finished run of a trial (committed at once: autocommit, WAL,
    /// `synchronous=FULL`). Returns the run id.
    pub(crate) fn insert_run(&self, trial_id: i64, run_index: usize, run: &Run) -> Result<i64> {
        self.conn().execute(
            "INSERT INTO runs (trial_id, load, run_index, time_s, cpu_pct, loads, lcpu_pct,
                               failed, finished_at, io)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                trial_id,
                run.load.name(),
                run_index as i64,
                run.time_s,
                run.cpu_pct,
                run.loads,
                run.lcpu_pct,
                run.failed,
                now(),
                run.io
                    .map(|c| serde_json::to_string(&c))
                    .transpose()
                    .map_err(json_err)?,
            ],
        )?;
        Ok(self.conn().last_insert_rowid())
    }

    /// Reference-job trials, oldest first; only those of `identity` when given.
    pub fn trials(&self, identity: Option<&str>) -> Result<Vec<TrialRow>> {
        self.read_trials(
            "(?1 IS NULL OR identity = ?1) AND judge IS NULL",
            params![identity],
        )
    }

    /// The reference-job trials of tune `tune`, oldest first.
    pub fn trials_of_tune(&self, tune: i64) -> Result<Vec<TrialRow>> {
        self.read_trials("tune_id = ?1 AND judge IS NULL", params![tune])
    }

    /// The trials of tune `tune` on its policy's judge `judge` (e.g. `startup`), oldest
    /// first ([`Store::insert_judge_trial`]).
    #[cfg(test)]
    pub(crate) fn judge_trials_of_tune(&self, tune: i64, judge: &str) -> Result<Vec<TrialRow>> {
        self.read_trials("tune_id = ?1 AND judge = ?2", params![tune, judge])
    }

    /// One trial by id.
    #[cfg(test)]
    pub(crate) fn trial(&self, id: i64) -> Result<Option<TrialRow>> {
        Ok(self.read_trials("id = ?1", params![id])?.pop())
    }

    fn read_trials(&self, filter: &str, p: impl rusqlite::Params) -> Result<Vec<TrialRow>> {
        let mut st = self.conn().prepare(&format!(
            "SELECT id, tune_id, identity, kernel, target, setting, sizes, started_at, \
             finished_at FROM trials WHERE {filter} ORDER BY id"
        ))?;
        let rows = st.query_map(p, |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, Option<i64>>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, String>(6)?,
                r.get::<_, i64>(7)?,
                r.get::<_, Option<i64>>(8)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, tune_id, identity, kernel, target, setting, sizes, started_at, finished_at) =
                row?;
            out.push(TrialRow {
                id,
                tune_id,
                identity,
                kernel,
                target,
                setting: serde_json::from_str(&setting).map_err(json_err)?,
                sizes: serde_json::from_str(&sizes).map_err(json_err)?,
                started_at,
                finished_at,
            });
        }
        Ok(out)
    }

    /// The runs of a trial, in the order they ran.
    pub fn runs(&self, trial_id: i64) -> Result<Vec<RunRow>> {
        let mut st = self.conn().prepare(
            "SELECT id, trial_id, run_index, load, time_s, cpu_pct, loads, lcpu_pct, failed,
                    finished_at, io
             FROM runs WHERE trial_id = ?1 ORDER BY run_index, id",
        )?;
        let rows = st.query_map([trial_id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, String>(3)?,
                Run {
                    load: Load::NoLoad,
                    time_s: r.get(4)?,
                    cpu_pct: r.get(5)?,
                    loads: r.get(6)?,
                    lcpu_pct: r.get(7)?,
                    failed: r.get(8)?,
                    io: None,
                },
                r.get::<_, i64>(9)?,
                r.get::<_, Option<String>>(10)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, trial_id, run_index, load, mut run, finished_at, io) = row?;
            run.io = io
                .map(|t| serde_json::from_str(&t))
                .transpose()
                .map_err(json_err)?;
            run.load = load
                .parse()
                .map_err(|e: String| crate::Error::Failed(format!("database: runs.load: {e}")))?;
            out.push(RunRow {
                id,
                trial_id,
                run_index,
                run,
                finished_at,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::KnobValue;

    fn target() -> TargetInfo {
        TargetInfo {
            label: "sim:x".into(),
            identity: "sim:x".into(),
            kernel: "sim".into(),
        }
    }

    #[test]
    fn trials_and_runs_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("s.db")).unwrap();
        let d1 = s
            .touch_device(&target(), &serde_json::json!({"k": 1}))
            .unwrap();
        let d2 = s
            .touch_device(&target(), &serde_json::json!({"k": 2}))
            .unwrap();
        assert_eq!(d1, d2);
        let fp: String = s
            .conn()
            .query_row("SELECT fingerprint FROM devices WHERE id = ?1", [d1], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(fp, r#"{"k":2}"#);

        let setting = Setting::from([("fifo_batch".to_string(), KnobValue::Int(8))]);
        let sizes = serde_json::json!({"seed": 7});
        let t = s.insert_trial(&target(), &setting, &sizes, None).unwrap();
        let a = Run {
            load: Load::IoLoad,
            time_s: 109.1,
            cpu_pct: 68.0,
            loads: Some(12.0),
            lcpu_pct: None,
            failed: None,
            io: Some(crate::types::IoCounters {
                reads: 3,
                seek_bytes: 1 << 20,
                max_depth: 2,
                ..Default::default()
            }),
        };
        let b = Run {
            load: Load::NoLoad,
            failed: Some("the load completed no work".into()),
            loads: None,
            io: None,
            ..a.clone()
        };
        s.insert_run(t, 0, &b).unwrap();
        s.insert_run(t, 1, &a).unwrap();
        let trials = s.trials(Some("sim:x")).unwrap();
        assert_eq!(trials.len(), 1);
        assert_eq!(
            (trials[0].setting.clone(), trials[0].sizes.clone()),
            (setting, sizes)
        );
        assert!(s.trials(Some("other")).unwrap().is_empty());
        let runs = s.runs(t).unwrap();
        assert_eq!(
            runs.iter().map(|r| r.run.clone()).collect::<Vec<_>>(),
            vec![b, a]
        );
        assert_eq!(s.trial(t).unwrap().unwrap().id, t);
        assert!(s.trial(t + 1).unwrap().is_none());
    }

    #[test]
    fn judge_trials_are_kept_apart_from_the_reference_jobs() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("s.db")).unwrap();
        let tune = s.insert_tune(&target(), None, "quick").unwrap();
        let setting = Setting::from([("fifo_batch".to_string(), KnobValue::Int(8))]);
        let sizes = serde_json::json!({});
        let t = s
            .insert_trial(&target(), &setting, &sizes, Some(tune))
            .unwrap();
        let j = s
            .insert_judge_trial(&target(), &setting, &sizes, tune, "startup")
            .unwrap();
        let run = Run {
            load: Load::LightIoLoad,
            time_s: 1.66,
            cpu_pct: 100.0,
            loads: None,
            lcpu_pct: None,
            failed: None,
            io: None,
        };
        s.insert_run(j, 0, &run).unwrap();
        let ids = |rows: Vec<TrialRow>| rows.iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(ids(s.trials_of_tune(tune).unwrap()), vec![t]);
        assert_eq!(ids(s.trials(None).unwrap()), vec![t]);
        assert_eq!(
            ids(s.judge_trials_of_tune(tune, "startup").unwrap()),
            vec![j]
        );
        assert_eq!(s.runs(j).unwrap()[0].run, run);
    }
}
