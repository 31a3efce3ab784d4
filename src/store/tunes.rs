//! Tunes and sweet spots: the `tunes` rows (running → done / interrupted / failed /
//! recovered) and the best setting found per (identity, kernel, policy) with its evidence.

use super::{Store, now};
use crate::Result;
use crate::types::{Setting, TargetInfo, TuneStatus};
use rusqlite::params;
use std::path::{Path, PathBuf};

/// A `tunes` row.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TuneRow {
    /// Row id (the journal owner is `tune:<id>`).
    pub id: i64,
    /// Device identity.
    pub identity: String,
    /// Kernel release, or `sim`.
    pub kernel: String,
    /// Kernel device name (sda, loop0), `None` for a simulated device.
    pub device: Option<String>,
    /// Target label.
    pub target: String,
    /// Policy name.
    pub policy: String,
    /// Process id of the tune.
    pub pid: i64,
    /// Unix seconds (in `history --json` as RFC 3339 with `started_at_epoch_s` beside it,
    /// docs/json.md: not serialized here).
    #[serde(skip_serializing)]
    pub started_at: i64,
    /// Unix seconds, once finished (as `started_at` in `history --json`).
    #[serde(skip_serializing)]
    pub finished_at: Option<i64>,
    /// Where it stands (stored as its text; never [`TuneStatus::Killed`] as read).
    pub status: TuneStatus,
    /// The lock file the tune holds while it runs (its target's, [`crate::lock`]), absolute:
    /// whether it is still running is judged by it. `None` for a tune stored by an older
    /// sweetspot, or inserted without one ([`Store::insert_tune`]). Not in `history --json`.
    #[serde(skip)]
    pub lock_file: Option<PathBuf>,
    /// Bytes the tune wrote to its device (its `stat` counters at the start and the end,
    /// `crate::device::stat::WriteMeter`); `None` for a simulated device, a tune still
    /// running, or one whose counters could not be read.
    pub bytes_written: Option<u64>,
}

/// What one tune wrote to its device ([`Store::tune_writes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TuneWrite {
    /// When it started, Unix s.
    pub started_at: i64,
    /// Bytes it wrote; `None` when not counted (a simulated device, one still running).
    pub bytes: Option<u64>,
}

/// A stored sweet spot.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SweetSpotRow {
    /// Row id.
    pub id: i64,
    /// Device identity.
    pub identity: String,
    /// Kernel release.
    pub kernel: String,
    /// Policy name.
    pub policy: String,
    /// The tune that found it.
    pub tune_id: Option<i64>,
    /// The setting to use (the default when not significant).
    pub setting: Setting,
    /// The default setting it was compared with.
    pub default_setting: Setting,
    /// True when it beat the default significantly (by at least the minimum effect).
    pub significant: bool,
    /// The tune's JSON report.
    pub evidence: serde_json::Value,
    /// Unix seconds (in `history --json` as RFC 3339 with `created_at_epoch_s` beside it,
    /// docs/json.md: not serialized here).
    #[serde(skip_serializing)]
    pub created_at: i64,
}

impl SweetSpotRow {
    /// Whether this sweet spot, stored after `old` of the same device, is the one that rules
    /// it, in order:
    /// 1. `named` (the policy the daemon's config names for the device, `[keep]` or an
    ///    identity's `[policy]` entry: the user's decision) is the ruling policy: its sweet
    ///    spot rules over any other policy's, whatever it found;
    /// 2. the running `kernel`'s over another kernel's;
    /// 3. the newer, except that another policy's answer that is not significant ("keep the
    ///    default") never replaces a significant sweet spot: the policy that found it is kept.
    ///
    /// The daemon, `status` and the profile builder pick by this one rule, so they agree on a
    /// device's sweet spot (and the daemon and `status` on its due date).
    pub(crate) fn rules_over(&self, old: &SweetSpotRow, kernel: &str, named: Option<&str>) -> bool {
        if let Some(p) = named
            && (self.policy == p) != (old.policy == p)
        {
            return self.policy == p;
        }
        let (new_k, old_k) = (self.kernel == kernel, old.kernel == kernel);
        if new_k != old_k {
            return new_k;
        }
        !(old.significant && !self.significant && old.policy != self.policy)
    }

    /// The sweet spot in words: `policy quick on 6.18: read_ahead_kb 16 → 256, 1.54× better`
    /// (the knobs it changed from their defaults and its improvement from its stored report),
    /// or `policy quick on 6.18: keep the default (not significant)`.
    pub(crate) fn describe(&self) -> String {
        let changed: Vec<String> = self
            .setting
            .iter()
            .filter(|(k, v)| self.default_setting.get(*k) != Some(*v))
            .map(|(k, v)| match self.default_setting.get(k) {
                Some(d) => format!("{k} {d} → {v}"),
                None => format!("{k} {v}"),
            })
            .collect();
        let what = if !self.significant || changed.is_empty() {
            "keep the default (not significant)".to_string()
        } else {
            let ratio = self.evidence["objective"]["improvement"]["ratio"].as_f64();
            format!(
                "{}{}",
                changed.join(", "),
                ratio.map_or_else(String::new, |r| format!(", {r:.2}× better"))
            )
        };
        format!("policy {} on {}: {what}", self.policy, self.kernel)
    }
}

/// The sweet spot that rules each device of `rows` (oldest first, as
/// [`Store::sweet_spots`] gives them) by [`SweetSpotRow::rules_over`]; `named` gives the
/// policy the daemon's config names for an identity.
pub(crate) fn ruling(
    rows: impl IntoIterator<Item = SweetSpotRow>,
    kernel: &str,
    named: &dyn Fn(&str) -> Option<String>,
) -> std::collections::BTreeMap<String, SweetSpotRow> {
    let mut out = std::collections::BTreeMap::<String, SweetSpotRow>::new();
    for s in rows {
        let p = named(&s.identity);
        if out
            .get(&s.identity)
            .is_none_or(|old| s.rules_over(old, kernel, p.as_deref()))
        {
            out.insert(s.identity.clone(), s);
        }
    }
    out
}

fn json_err(e: serde_json::Error) -> crate::Error {
    crate::Error::Failed(format!("database: bad JSON: {e}"))
}

fn tune_row(r: &rusqlite::Row) -> rusqlite::Result<TuneRow> {
    Ok(TuneRow {
        id: r.get(0)?,
        identity: r.get(1)?,
        kernel: r.get(2)?,
        device: r.get(3)?,
        target: r.get(4)?,
        policy: r.get(5)?,
        pid: r.get(6)?,
        started_at: r.get(7)?,
        finished_at: r.get(8)?,
        status: r.get::<_, String>(9)?.parse().map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(9, rusqlite::types::Type::Text, Box::new(e))
        })?,
        lock_file: r.get::<_, Option<String>>(10)?.map(PathBuf::from),
        bytes_written: r.get::<_, Option<i64>>(11)?.map(|b| b.max(0) as u64),
    })
}

const TUNE_COLS: &str = "id, identity, kernel, device, target, policy, pid, started_at, \
                         finished_at, status, lock_file, bytes_written";

impl Store {
    /// Inserts a running tune of this process, with no lock file: it is judged alive by the
    /// lock its identity maps to, as a row of an older sweetspot is. A tune that holds a lock calls
    /// `Store::insert_tune_holding`. Returns its id.
    pub fn insert_tune(
        &self,
        target: &TargetInfo,
        device: Option<&str>,
        policy: &str,
    ) -> Result<i64> {
        self.insert_tune_with(target, device, policy, None)
    }

    /// Inserts a running tune of this process that holds the lock at `lock_file` (its
    /// target's, [`crate::lock`]) for as long as it runs: the other commands judge whether it
    /// is still alive by that lock ([`TuneRow::lock_file`]). A relative `lock_file` is stored
    /// made absolute (against the current directory). Returns its id.
    pub(crate) fn insert_tune_holding(
        &self,
        target: &TargetInfo,
        device: Option<&str>,
        policy: &str,
        lock_file: &Path,
    ) -> Result<i64> {
        let abs = std::path::absolute(lock_file).unwrap_or_else(|_| lock_file.to_path_buf());
        self.insert_tune_with(target, device, policy, Some(&abs))
    }

    fn insert_tune_with(
        &self,
        target: &TargetInfo,
        device: Option<&str>,
        policy: &str,
        lock_file: Option<&Path>,
    ) -> Result<i64> {
        self.conn().execute(
            "INSERT INTO tunes (identity, kernel, device, target, policy, pid, started_at, status,
                                lock_file)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'running', ?8)",
            params![
                target.identity,
                target.kernel,
                device,
                target.label,
                policy,
                std::process::id() as i64,
                now(),
                // A path that is not UTF-8 would be stored as another path: none then, so
                // the row is judged by its identity's lock, as an older row is.
                lock_file.and_then(|p| p.to_str().map(str::to_string))
            ],
        )?;
        Ok(self.conn().last_insert_rowid())
    }

    /// Marks a tune finished with `status` (done, interrupted, failed, recovered).
    pub fn finish_tune(&self, id: i64, status: TuneStatus) -> Result<()> {
        self.conn().execute(
            "UPDATE tunes SET status = ?2, finished_at = ?3 WHERE id = ?1",
            params![id, status.as_str(), now()],
        )?;
        Ok(())
    }

    /// Records the bytes tune `id` wrote to its device ([`TuneRow::bytes_written`]).
    pub fn set_tune_bytes_written(&self, id: i64, bytes: u64) -> Result<()> {
        self.conn().execute(
            "UPDATE tunes SET bytes_written = ?2 WHERE id = ?1",
            params![id, i64::try_from(bytes).unwrap_or(i64::MAX)],
        )?;
        Ok(())
    }

    /// What each tune of `identity` wrote to its device, oldest first: the daemon's write
    /// budget (`daemon::write_budget`).
    pub(crate) fn tune_writes(&self, identity: &str) -> Result<Vec<TuneWrite>> {
        let mut st = self.conn().prepare(
            "SELECT started_at, bytes_written FROM tunes WHERE identity = ?1
              ORDER BY started_at, id",
        )?;
        let writes = st
            .query_map(params![identity], |r| {
                Ok(TuneWrite {
                    started_at: r.get(0)?,
                    bytes: r.get::<_, Option<i64>>(1)?.map(|b| b.max(0) as u64),
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(writes)
    }

    /// Records the optimiser's seed and trial budget of tune `id` (what
    /// [`Store::resumable_tune`] needs to resume it). The seed's 64 bits are stored as
    /// SQLite's signed integer.
    pub(crate) fn set_tune_plan(&self, id: i64, seed: u64, budget: u32) -> Result<()> {
        self.conn().execute(
            "UPDATE tunes SET seed = ?2, budget = ?3 WHERE id = ?1",
            params![id, seed as i64, budget],
        )?;
        Ok(())
    }

    /// The newest tune of (`identity`, `kernel`, `policy`) when it was stopped (`interrupted`
    /// by a signal, or `recovered` after its process was killed: SIGKILL, OOM, power loss)
    /// and has a seed ([`Store::set_tune_plan`]): (the tune, its seed, its budget). `None`
    /// when the newest ended otherwise (done, failed, resumed...), or there is none.
    pub(crate) fn resumable_tune(
        &self,
        identity: &str,
        kernel: &str,
        policy: &str,
    ) -> Result<Option<(TuneRow, u64, u32)>> {
        let mut st = self.conn().prepare(&format!(
            "SELECT {TUNE_COLS}, seed, budget FROM tunes
             WHERE identity = ?1 AND kernel = ?2 AND policy = ?3 ORDER BY id DESC LIMIT 1"
        ))?;
        let row = st
            .query_map(params![identity, kernel, policy], |r| {
                Ok((
                    tune_row(r)?,
                    r.get::<_, Option<i64>>(12)?,
                    r.get::<_, Option<u32>>(13)?,
                ))
            })?
            .next()
            .transpose()?;
        Ok(match row {
            Some((t, Some(seed), Some(budget))) if t.status.is_resumable() => {
                Some((t, seed as u64, budget))
            }
            _ => None,
        })
    }

    /// Tune `id`; `None` when there is no such tune.
    pub fn tune(&self, id: i64) -> Result<Option<TuneRow>> {
        let mut st = self
            .conn()
            .prepare(&format!("SELECT {TUNE_COLS} FROM tunes WHERE id = ?1"))?;
        Ok(st.query_map(params![id], tune_row)?.next().transpose()?)
    }

    /// The plan of tune `id`, (seed, trial budget), as [`Store::set_tune_plan`] stored it;
    /// `None` when there is no such tune or it has no plan (stored by an older sweetspot).
    pub(crate) fn tune_plan(&self, id: i64) -> Result<Option<(u64, u32)>> {
        let mut st = self
            .conn()
            .prepare("SELECT seed, budget FROM tunes WHERE id = ?1")?;
        let row = st
            .query_map(params![id], |r| {
                Ok((r.get::<_, Option<i64>>(0)?, r.get::<_, Option<u32>>(1)?))
            })?
            .next()
            .transpose()?;
        Ok(row.and_then(|(s, b)| Some((s? as u64, b?))))
    }

    /// Marks tune `id` `resumed`: a later tune took its finished trials over
    /// ([`Store::adopt_trial`]), so it is not resumed again.
    pub(crate) fn mark_resumed(&self, id: i64) -> Result<()> {
        self.conn().execute(
            "UPDATE tunes SET status = 'resumed' WHERE id = ?1",
            params![id],
        )?;
        Ok(())
    }

    /// Moves trial `trial` (with its runs) to tune `tune`: a resumed tune reuses it.
    pub(crate) fn adopt_trial(&self, trial: i64, tune: i64) -> Result<()> {
        self.conn().execute(
            "UPDATE trials SET tune_id = ?2 WHERE id = ?1",
            params![trial, tune],
        )?;
        Ok(())
    }

    /// Tunes still marked running (oldest first).
    pub(crate) fn running_tunes(&self) -> Result<Vec<TuneRow>> {
        let mut st = self.conn().prepare(&format!(
            "SELECT {TUNE_COLS} FROM tunes WHERE status = 'running' ORDER BY id"
        ))?;
        let rows = st
            .query_map([], tune_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Every tune, oldest first; only those of `identity` when given.
    pub fn tunes(&self, identity: Option<&str>) -> Result<Vec<TuneRow>> {
        let mut st = self.conn().prepare(&format!(
            "SELECT {TUNE_COLS} FROM tunes WHERE ?1 IS NULL OR identity = ?1 ORDER BY id"
        ))?;
        let rows = st
            .query_map(params![identity], tune_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Finished tunes per identity and status, for the daemon's metrics: `(identity, status,
    /// count, latest finished_at in Unix s)`, ordered by identity and status. A tune still
    /// `running` has no result yet and is left out.
    pub(crate) fn tune_results(&self) -> Result<Vec<(String, String, u64, i64)>> {
        let mut st = self.conn().prepare(
            "SELECT identity, status, COUNT(*), MAX(finished_at) FROM tunes
             WHERE finished_at IS NOT NULL GROUP BY identity, status ORDER BY identity, status",
        )?;
        let rows = st
            .query_map([], |r| {
                let n: i64 = r.get(2)?;
                Ok((r.get(0)?, r.get(1)?, n.max(0) as u64, r.get(3)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Stores a sweet spot. Returns its id.
    #[allow(clippy::too_many_arguments)]
    pub fn insert_sweet_spot(
        &self,
        target: &TargetInfo,
        policy: &str,
        tune_id: Option<i64>,
        setting: &Setting,
        default_setting: &Setting,
        significant: bool,
        evidence: &serde_json::Value,
    ) -> Result<i64> {
        self.conn().execute(
            "INSERT INTO sweet_spots (identity, kernel, policy, tune_id, setting, default_setting,
                                      significant, evidence, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                target.identity,
                target.kernel,
                policy,
                tune_id,
                serde_json::to_string(setting).map_err(json_err)?,
                serde_json::to_string(default_setting).map_err(json_err)?,
                significant,
                evidence.to_string(),
                now()
            ],
        )?;
        Ok(self.conn().last_insert_rowid())
    }

    /// The newest sweet spot's row id (0 when there is none): a cheap check whether any was
    /// stored since the last look (the daemon rebuilds its profile only then).
    #[cfg(any(feature = "daemon", test))]
    pub(crate) fn sweet_spot_max_id(&self) -> Result<i64> {
        Ok(self
            .conn()
            .query_row("SELECT COALESCE(MAX(id), 0) FROM sweet_spots", [], |r| {
                r.get(0)
            })?)
    }

    /// Sweet spots, oldest first; only those of `identity` when given.
    pub fn sweet_spots(&self, identity: Option<&str>) -> Result<Vec<SweetSpotRow>> {
        let mut st = self.conn().prepare(
            "SELECT id, identity, kernel, policy, tune_id, setting, default_setting, significant,
                    evidence, created_at
             FROM sweet_spots WHERE ?1 IS NULL OR identity = ?1 ORDER BY id",
        )?;
        let raw = st
            .query_map(params![identity], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, Option<i64>>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, String>(6)?,
                    r.get::<_, bool>(7)?,
                    r.get::<_, String>(8)?,
                    r.get::<_, i64>(9)?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        // A row whose JSON does not read is skipped with a warning, not fatal: one damaged row
        // must not stop the daemon keeping every other disk, nor hide the other sweet spots.
        Ok(raw
            .into_iter()
            .filter_map(
                |(id, identity, kernel, policy, tune_id, s, d, sig, ev, at)| {
                    let row = (|| -> Result<SweetSpotRow> {
                        Ok(SweetSpotRow {
                            id,
                            identity: identity.clone(),
                            kernel,
                            policy,
                            tune_id,
                            setting: serde_json::from_str(&s).map_err(json_err)?,
                            default_setting: serde_json::from_str(&d).map_err(json_err)?,
                            significant: sig,
                            evidence: serde_json::from_str(&ev).map_err(json_err)?,
                            created_at: at,
                        })
                    })();
                    row.map_err(|e| {
                        tracing::warn!(
                            "sweet spot row {id} ({}) skipped: {e}",
                            crate::types::text::shown(&identity)
                        );
                    })
                    .ok()
                },
            )
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweet_spot_row_whose_json_does_not_read_is_skipped_and_the_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("s.db")).unwrap();
        let t = TargetInfo {
            label: "sda".into(),
            identity: "wwid:a".into(),
            kernel: "6.18".into(),
        };
        let setting: crate::types::Setting = [("fifo_batch".to_string(), 8.into())].into();
        let ev = serde_json::json!({});
        let good = s
            .insert_sweet_spot(&t, "quick", None, &setting, &setting, true, &ev)
            .unwrap();
        let bad = s
            .insert_sweet_spot(&t, "quick", None, &setting, &setting, true, &ev)
            .unwrap();
        s.conn()
            .execute(
                "UPDATE sweet_spots SET setting = 'garbage' WHERE id = ?1",
                [bad],
            )
            .unwrap();
        let ids: Vec<i64> = s.sweet_spots(None).unwrap().iter().map(|r| r.id).collect();
        assert_eq!(ids, [good]);
    }

    fn spot(id: i64, policy: &str, kernel: &str, ra: i64, significant: bool) -> SweetSpotRow {
        SweetSpotRow {
            id,
            identity: "loop:/srv/d.img".into(),
            kernel: kernel.into(),
            policy: policy.into(),
            tune_id: None,
            setting: [("read_ahead_kb".to_string(), ra.into())].into(),
            default_setting: [("read_ahead_kb".to_string(), 16.into())].into(),
            significant,
            evidence: serde_json::json!({"objective": {"improvement": {"ratio": 1.54}}}),
            created_at: id,
        }
    }

    /// Issue 36 item 7: `tune --policy fio-readahead` found read_ahead_kb 16 → 256 (1.54×,
    /// significant); the daemon's `quick` retune answered "keep the default" and its row,
    /// being newer, ruled the device (read_ahead_kb went back).
    #[test]
    fn a_newer_answer_of_another_policy_that_is_not_significant_does_not_rule() {
        let k = "6.18";
        let fio = spot(1, "fio-readahead", k, 256, true);
        let quick_default = spot(2, "quick", k, 16, false);
        let rules = |rows: Vec<SweetSpotRow>, named: Option<&str>| {
            let named = named.map(str::to_string);
            ruling(rows, k, &|_| named.clone())["loop:/srv/d.img"].clone()
        };
        assert_eq!(rules(vec![fio.clone(), quick_default.clone()], None).id, 1);
        // Its own policy's newer answer replaces it (a retune of the same question).
        let fio_default = spot(3, "fio-readahead", k, 16, false);
        assert_eq!(rules(vec![fio.clone(), fio_default], None).id, 3);
        // Another policy's newer significant sweet spot replaces it.
        let desktop = spot(4, "desktop", k, 1024, true);
        assert_eq!(rules(vec![fio.clone(), desktop.clone()], None).id, 4);
        // The config's decision wins both ways, whatever each found.
        assert_eq!(
            rules(vec![fio.clone(), quick_default.clone()], Some("quick")).id,
            2
        );
        assert_eq!(
            rules(vec![fio.clone(), desktop.clone()], Some("fio-readahead")).id,
            1
        );
        // The running kernel's before another's, as before.
        let old_kernel = spot(5, "desktop", "6.1", 1024, true);
        assert_eq!(rules(vec![fio.clone(), old_kernel], None).id, 1);
        assert_eq!(
            fio.describe(),
            "policy fio-readahead on 6.18: read_ahead_kb 16 → 256, 1.54× better"
        );
        assert_eq!(
            quick_default.describe(),
            "policy quick on 6.18: keep the default (not significant)"
        );
    }

    #[test]
    fn a_tune_and_its_plan_are_read_back_by_id() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("s.db")).unwrap();
        let t = TargetInfo {
            label: "sda".into(),
            identity: "sim:x".into(),
            kernel: "6.18".into(),
        };
        let id = s.insert_tune(&t, Some("sda"), "quick").unwrap();
        let row = s.tune(id).unwrap().unwrap();
        assert_eq!(
            (row.id, row.target.as_str(), row.policy.as_str()),
            (id, "sda", "quick")
        );
        assert_eq!(row.status, TuneStatus::Running);
        assert_eq!(s.tune_plan(id).unwrap(), None, "no plan stored yet");
        // A seed above i64::MAX comes back whole (stored as SQLite's signed integer).
        s.set_tune_plan(id, u64::MAX - 1, 12).unwrap();
        assert_eq!(s.tune_plan(id).unwrap(), Some((u64::MAX - 1, 12)));
        assert_eq!(s.tune(id + 1).unwrap(), None);
        assert_eq!(s.tune_plan(id + 1).unwrap(), None);
    }

    #[test]
    fn an_unknown_tune_status_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("s.db")).unwrap();
        let t = TargetInfo {
            label: "sda".into(),
            identity: "sim:x".into(),
            kernel: "6.18".into(),
        };
        let id = s.insert_tune(&t, Some("sda"), "quick").unwrap();
        s.conn()
            .execute("UPDATE tunes SET status = 'paused' WHERE id = ?1", [id])
            .unwrap();
        let e = s.tune(id).unwrap_err().to_string();
        assert!(e.contains("unknown tune status 'paused'"), "{e}");
        let e = s.tunes(None).unwrap_err().to_string();
        assert!(e.contains("unknown tune status 'paused'"), "{e}");
    }
}
