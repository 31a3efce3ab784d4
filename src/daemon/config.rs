//! The daemon's configuration: TOML, by default `/etc/sweetspot/daemon.toml`, built-in
//! defaults when the file is absent. Every option is in `examples/daemon.toml`, commented.
//! Errors name the file, line and field (exit 2).

use crate::Result;
use crate::tomlfile::{TomlFile, span_of};
use crate::trust::{self, Origin};
use serde::Deserialize;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Where the daemon looks for its config when `--config` is not given.
pub(crate) use crate::types::paths::DAEMON_CONFIG as DEFAULT_PATH;

/// Which devices the daemon manages.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Enroll {
    /// `"tuned"`: every device tuned once by hand (it has a sweet spot in the database).
    Tuned(String),
    /// These identities only (as `sweetspot history` and `devices` show them).
    Identities(Vec<String>),
}

/// Idle criteria: all below their threshold for `for_s` seconds.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Idle {
    /// 1-minute load average at most this.
    pub load_avg_max: f64,
    /// CPU busy % (all CPUs, over the last poll) at most this.
    pub cpu_busy_pct_max: f64,
    /// The device's own I/O (`/sys/block/*/stat` sectors read + written) at most this, KiB/s.
    pub device_kib_per_s_max: f64,
    /// For this long, s: 0 ..= `MAX_IDLE_FOR_S` (a day).
    pub for_s: u64,
}

impl Default for Idle {
    fn default() -> Self {
        Idle {
            load_avg_max: 0.5,
            cpu_busy_pct_max: 10.0,
            device_kib_per_s_max: 64.0,
            for_s: 600,
        }
    }
}

/// How a retune measures (the `tune` command's `--budget`, `--job-scale`, `--load-mib`,
/// `--lead`); the defaults are the command's.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Retune {
    /// Most trials, 1 ..= 10000 (a policy's `budget` range); default the policy's budget.
    pub budget: Option<u32>,
    /// Scale of the built-in job (1.0: no_load ≈ 6 s on 2 cores), in (0, 100] (the range of
    /// `--job-scale`).
    pub job_scale: f64,
    /// Size of the loads' files and buffer, MiB: 1 ..= `MAX_LOAD_MIB` (1 TiB).
    pub load_mib: u64,
    /// Seconds a load runs before the job starts, 0–60.
    pub lead_s: f64,
}

impl Default for Retune {
    fn default() -> Self {
        Retune {
            budget: None,
            job_scale: 1.0,
            load_mib: 256,
            lead_s: crate::bench::contest_run::LEAD_S,
        }
    }
}

/// Longest retune interval, days: ten years. The due date is the last tune's time plus the
/// interval, in whole seconds (`i64`): `1e308` days wrapped it into the past ("due now").
pub(crate) const MAX_INTERVAL_DAYS: f64 = 3650.0;

/// Largest `[retune] load_mib`: 1 TiB. Bytes are `load_mib × 2^20` in a `u64`, which
/// overflows above 2^44 MiB; no device here has room for more.
pub(crate) const MAX_LOAD_MIB: u64 = 1 << 20;

/// Longest `[idle] for_s`, s: a day. Longer, and a device with a 7-day interval might never
/// be idle long enough, which would look like a daemon that never retunes.
pub(crate) const MAX_IDLE_FOR_S: u64 = 86_400;

/// The device classes `[policy]` may name besides identities.
pub(crate) const CLASSES: [&str; 4] = ["rotational", "ssd", "nvme", "mmc"];

/// The whole configuration.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DaemonConfig {
    /// Which devices are managed; default `"tuned"`.
    pub enroll: Enroll,
    /// Policy for a device class (`rotational`, `ssd`, `nvme`, `mmc`) or an identity; the
    /// fallback is `default_policy`.
    pub policy: std::collections::BTreeMap<String, String>,
    /// The policy where `policy` names none; default `quick`.
    pub default_policy: String,
    /// Per device identity, the policy whose sweet spot rules it (a policy name as
    /// `sweetspot history` shows it: a built-in name or a policy file's stem), the user's
    /// decision when several policies have one (`crate::store::tunes::SweetSpotRow::rules_over`).
    /// The daemon retunes the device with that policy when a retune can run it (a built-in
    /// or `/etc/sweetspot/policies/<name>.toml` policy of contest's loads), else it keeps the
    /// sweet spot and does not retune the device. Without an entry (and without an identity's
    /// `[policy]` entry), the policy that found the ruling sweet spot is kept.
    pub keep: std::collections::BTreeMap<String, String>,
    /// Retune after this many days, in (0, `MAX_INTERVAL_DAYS`] (ten years); default 7.
    pub retune_interval_days: f64,
    /// The interval in seconds instead (wins over `retune_interval_days`; for tests), in (0,
    /// `MAX_INTERVAL_DAYS` × 86400].
    pub retune_interval_s: Option<f64>,
    /// How a retune measures.
    pub retune: Retune,
    /// Idle criteria for a retune.
    pub idle: Idle,
    /// No retune inside this local-time window, `"HH:MM-HH:MM"` (may wrap midnight).
    pub quiet_hours: Option<String>,
    /// The database: used unless `--db` or `SWEETSPOT_DB` names one (those win), and wins
    /// over the built-in default (`super::db_path`). An absolute path: `""` would be
    /// SQLite's temporary database, and a relative one depends on the daemon's directory.
    pub db: Option<PathBuf>,
    /// How often devices are listed and managed values checked for drift, s: 1–3600; default 5.
    pub poll_s: u64,
    /// Where the daemon writes its Prometheus metrics for node_exporter's textfile collector
    /// (the daemon's `metrics` module): an existing directory, an absolute path; `None` (the default):
    /// no metrics.
    pub metrics_dir: Option<PathBuf>,
    /// The most that tunes may write to a non-rotational device (by its own `stat`
    /// counters), MiB a day on average with at most `super::write_budget::SAVED_DAYS` days'
    /// worth saved up, by device class (`ssd`, `nvme`, `mmc`) or identity (an identity's entry
    /// wins): a retune waits until the budget holds what it writes (`status`: `write
    /// budget`; [`super::write_budget`]). A device whose class and identity are not in the
    /// table has no budget. Default `{ mmc = 100 }`: an SD card or eMMC; a table given
    /// replaces it (an empty one: no budget at all). Each value in (0,
    /// `MAX_WRITE_MIB_PER_DAY`].
    pub max_write_mib_per_day: std::collections::BTreeMap<String, f64>,
}

/// Largest `max_write_mib_per_day` entry, MiB a day: 1 TiB.
pub(crate) const MAX_WRITE_MIB_PER_DAY: f64 = 1_048_576.0;

/// The classes `max_write_mib_per_day` may name: the non-rotational ones of [`CLASSES`].
pub(crate) const FLASH_CLASSES: [&str; 3] = ["ssd", "nvme", "mmc"];

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            enroll: Enroll::Tuned("tuned".into()),
            policy: Default::default(),
            default_policy: "quick".into(),
            keep: Default::default(),
            retune_interval_days: 7.0,
            retune_interval_s: None,
            retune: Retune::default(),
            idle: Idle::default(),
            quiet_hours: None,
            db: None,
            poll_s: 5,
            metrics_dir: None,
            max_write_mib_per_day: [("mmc".to_string(), 100.0)].into(),
        }
    }
}

impl DaemonConfig {
    /// The retune interval, s.
    pub(crate) fn interval_s(&self) -> f64 {
        self.retune_interval_s
            .unwrap_or(self.retune_interval_days * 86_400.0)
    }

    /// The interval as people read it: `7 days`, `2 s`.
    pub fn interval_label(&self) -> String {
        match self.retune_interval_s {
            Some(s) => format!("{s} s"),
            None => format!("{} days", self.retune_interval_days),
        }
    }

    /// The policy name for a device of `class` ([`CLASSES`]) and `identity`: `[policy]`'s
    /// entry for the identity, else for the class, else `default_policy`.
    pub(crate) fn policy_for(&self, identity: &str, class: &str) -> &str {
        self.policy
            .get(identity)
            .or_else(|| self.policy.get(class))
            .unwrap_or(&self.default_policy)
    }
}

impl DaemonConfig {
    /// The identities the config enrolls by name, tuned or not: the `enroll` list, or with
    /// `enroll = "tuned"` the identities `[policy]` and `[keep]` name (a device class is no
    /// identity).
    pub fn named(&self) -> Vec<String> {
        match &self.enroll {
            Enroll::Identities(ids) => ids.clone(),
            Enroll::Tuned(_) => {
                let mut ids: Vec<String> = self
                    .policy
                    .keys()
                    .chain(self.keep.keys())
                    .filter(|k| !CLASSES.contains(&k.as_str()))
                    .cloned()
                    .collect();
                ids.sort();
                ids.dedup();
                ids
            }
        }
    }

    /// The policy whose sweet spot rules the device `identity` by the user's decision (as
    /// stored sweet spots name it): its `[keep]` entry, else its `[policy]` identity entry
    /// (the stem of a policy file); `None` when the config names none for it (the policy
    /// that found its ruling sweet spot is kept).
    pub(crate) fn ruling_policy(&self, identity: &str) -> Option<String> {
        if let Some(p) = self.keep.get(identity) {
            return Some(p.clone());
        }
        self.policy.get(identity).map(|spec| policy_name(spec))
    }
}

impl DaemonConfig {
    /// [`DaemonConfig::ruling_policy`] of every identity the config names one for (`[keep]`, and
    /// `[policy]`'s identity entries): identity → policy name.
    pub(crate) fn ruling_policies(&self) -> std::collections::BTreeMap<String, String> {
        self.policy
            .keys()
            .chain(self.keep.keys())
            .filter(|k| !CLASSES.contains(&k.as_str()))
            .filter_map(|id| Some((id.clone(), self.ruling_policy(id)?)))
            .collect()
    }
}

/// The name a policy given as `spec` (a built-in or system name, or a file path) stores its
/// sweet spots under: the name itself, or the file's stem ([`crate::tune::policy::resolve`]).
pub(crate) fn policy_name(spec: &str) -> String {
    if spec.contains('/') || spec.ends_with(".toml") {
        Path::new(spec)
            .file_stem()
            .map_or_else(|| spec.to_string(), |s| s.to_string_lossy().into_owned())
    } else {
        spec.to_string()
    }
}

/// Why a retune cannot run `pol` (named `name` in messages), or `None`: a retune measures
/// with contest's loads on the device's own filesystem, so a policy that optimises its own
/// benchmark (`[benchmark]`), or runs io_other (another filesystem) or a load this machine
/// lacks, would fail every retune.
pub(crate) fn cannot_retune(pol: &crate::tune::policy::Policy, name: &str) -> Option<String> {
    if let crate::tune::policy::Objective::Benchmark(job) = &pol.objective {
        return Some(format!(
            "'{name}': it optimises its own benchmark (`[benchmark]`: {}), which a retune \
             cannot run (a retune measures with contest's loads): give a policy with `loads`, \
             or tune it by hand with `sweetspot tune --device D --policy {name}`",
            job.label()
        ));
    }
    pol.loads.iter().find_map(|&l| match l {
        crate::bench::Load::IoOther => Some(format!(
            "'{name}': it runs io_other, which writes to another filesystem, and a retune has \
             none: give a policy without io_other"
        )),
        _ => crate::bench::loads::check_available(l, None)
            .err()
            .map(|e| format!("'{name}': {e}")),
    })
}

/// Reads `path`, after checking who may have written it ([`crate::trust`]: the config names
/// the policies, and so the knobs and commands, root's retunes use); an absent file at the
/// default path gives the defaults, an absent file named by `--config` is an error.
///
/// `origin`: the daemon reads its config under [`Origin::System`] whether or not `--config`
/// names it: it runs unattended and re-reads the file on SIGHUP, long after an admin typed
/// the command, so the file's owner could change every later retune; only root may be that
/// owner. `status` (which writes no knob and runs nothing) reads a `--config FILE` under
/// [`Origin::Named`].
///
/// Errors: [`crate::Error::BadInput`] (exit 2) when the file cannot be read or is refused by
/// [`crate::trust`] (naming its owner, mode and the fix); [`crate::Error::BadFile`] for its
/// contents ([`parse`]).
pub(crate) fn load(path: &Path, explicit: bool, origin: Origin) -> Result<DaemonConfig> {
    // Absent is checked before the open, which reports every failure as text: a file created
    // in between is read and checked like any other.
    if !explicit
        && let Err(e) = std::fs::metadata(path)
        && e.kind() == std::io::ErrorKind::NotFound
    {
        return Ok(DaemonConfig::default());
    }
    let text = trust::read_to_string(path, "daemon config", origin)?;
    parse(&text, path)
}

/// The identity forms a device can have ([`crate::device::identity`]), for messages.
const IDENTITY_FORMS: &str =
    "wwid:WWID, model-serial:MODEL:SERIAL, by-path:PATH, loop:BACKING_FILE, virtual:NAME";

/// True when `id` has the form of a device's identity ([`crate::device::identity`]): a known
/// kind, a colon and a non-empty rest (`model-serial:` with both its fields).
fn is_identity(id: &str) -> bool {
    match id.split_once(':') {
        Some(("virtual", rest)) => !rest.is_empty(),
        Some((_, rest)) if !rest.is_empty() => crate::profile::Match::from_identity(id)
            .is_some_and(|m| {
                m.fields()
                    .iter()
                    .all(|(_, v)| v.as_deref().is_none_or(|v| !v.is_empty()))
            }),
        _ => false,
    }
}

/// Parses and checks a config text (`path` names it in errors).
pub fn parse(text: &str, path: &Path) -> Result<DaemonConfig> {
    let f = TomlFile::new(path, text);
    let (c, doc): (DaemonConfig, _) = f.parse_with_doc()?;
    let at = |keys: &[&str]| span_of(doc.get_ref(), keys, None);
    if let Enroll::Tuned(s) = &c.enroll
        && s != "tuned"
    {
        let msg = format!("'{s}': give \"tuned\" or a list of identities");
        return Err(f.err_at(at(&["enroll"]), "enroll", msg));
    }
    if let Enroll::Identities(ids) = &c.enroll
        && let Some((i, id)) = ids.iter().enumerate().find(|(_, id)| !is_identity(id))
    {
        return Err(f.err_at(
            span_of(doc.get_ref(), &["enroll"], Some(i)),
            format!("enroll[{i}]"),
            format!(
                "'{id}' is not a device identity, so no device would ever be enrolled by it: \
                 give one as `sweetspot devices` shows it ({IDENTITY_FORMS}); a kernel name \
                 (sda, loop1) changes across boots"
            ),
        ));
    }
    if let Some((table, key, msg)) = out_of_range(&c) {
        let keys: Vec<&str> = [table, key].into_iter().filter(|k| !k.is_empty()).collect();
        return Err(f.err_at(at(&keys), keys.join("."), msg));
    }
    if let Some(msg) = c.metrics_dir.as_deref().and_then(check_metrics_dir) {
        return Err(f.err_at(at(&["metrics_dir"]), "metrics_dir", msg));
    }
    check_policies(&c, &f, &at)?;
    check_keep(&c, &f, &at)?;
    check_write_budget(&c, &f, &at)?;
    if let Some(q) = &c.quiet_hours {
        let why = match quiet_window(q) {
            None => "expected HH:MM-HH:MM",
            // An empty window would silently never be quiet (or, read as a whole day, never
            // retune): either way the user meant something else.
            Some((a, b)) if a == b => {
                "start and end are equal, an empty window (omit quiet_hours for none)"
            }
            Some(_) => return Ok(c),
        };
        let msg = format!("'{q}': {why}");
        return Err(f.err_at(at(&["quiet_hours"]), "quiet_hours", msg));
    }
    Ok(c)
}

/// The span of a key of the config, by its path.
type At<'a> = dyn Fn(&[&str]) -> Option<Range<usize>> + 'a;

/// `[policy]`'s keys (a class or an identity) and every policy it and `default_policy` name:
/// one the daemon can resolve, whose budget a retune can spend, and that a retune can run.
fn check_policies(c: &DaemonConfig, f: &TomlFile, at: &At) -> Result<()> {
    for key in c.policy.keys() {
        if !CLASSES.contains(&key.as_str()) && crate::profile::Match::from_identity(key).is_none() {
            let msg = format!(
                "'{key}': give a device class ({}) or an identity",
                CLASSES.join(", ")
            );
            return Err(f.err_at(at(&["policy", key]), format!("policy.{key}"), msg));
        }
    }
    let sys = Path::new(crate::tune::policy::SYSTEM_DIR);
    let named = c
        .policy
        .iter()
        .map(|(k, v)| (vec!["policy", k.as_str()], v));
    for (keys, name) in named.chain(std::iter::once((vec!["default_policy"], &c.default_policy))) {
        let (field, span) = (keys.join("."), at(&keys));
        // The daemon reads these unattended, at every retune: System, even a path.
        let pol = crate::tune::policy::resolve(name, sys, Origin::System)
            .map_err(|e| f.err_at(span.clone(), &field, format!("'{name}': {e}")))?;
        if let Err(e) = crate::tune::config(&pol, c.retune.budget, 0) {
            let budget = at(&["retune", "budget"]);
            return Err(f.err_at(budget, "retune.budget", e.to_string()));
        }
        // A retune measures with contest's loads on the device's own filesystem: a policy
        // it cannot run (its own `[benchmark]`, io_other) would fail every retune (after
        // restoring the device): refused here.
        if let Some(why) = cannot_retune(&pol, name) {
            return Err(f.err_at(span, field, why));
        }
    }
    Ok(())
}

/// `[keep]`: identities naming policies by name, not contradicting `[policy]`.
fn check_keep(c: &DaemonConfig, f: &TomlFile, at: &At) -> Result<()> {
    for (id, name) in &c.keep {
        let bad = |msg: String| f.err_at(at(&["keep", id]), format!("keep.{id}"), msg);
        if !is_identity(id) {
            return Err(bad(format!(
                "'{id}' is not a device identity: give one as `sweetspot devices` shows it \
                 ({IDENTITY_FORMS})"
            )));
        }
        if name.trim().is_empty() || name.contains('/') {
            return Err(bad(format!(
                "'{name}': give a policy's name as `sweetspot history` shows it (a built-in \
                 name or a policy file's stem), not a path"
            )));
        }
        if let Some(spec) = c.policy.get(id)
            && policy_name(spec) != *name
        {
            return Err(bad(format!(
                "'{name}': [policy] names '{spec}' for this device: one policy rules a \
                 device, name it once"
            )));
        }
    }
    Ok(())
}

/// `max_write_mib_per_day`'s keys (a flash class or an identity) and values (MiB a day).
fn check_write_budget(c: &DaemonConfig, f: &TomlFile, at: &At) -> Result<()> {
    for (key, mib) in &c.max_write_mib_per_day {
        let bad = |msg: String| {
            f.err_at(
                at(&["max_write_mib_per_day", key]),
                format!("max_write_mib_per_day.{key}"),
                msg,
            )
        };
        if key == "rotational" {
            return Err(bad(
                "'rotational': a spinning disk does not wear out by writes; give ssd, nvme, mmc \
                 or an identity"
                    .into(),
            ));
        }
        if !FLASH_CLASSES.contains(&key.as_str()) && !is_identity(key) {
            return Err(bad(format!(
                "'{key}': give a device class ({}) or an identity as `sweetspot devices` shows \
                 it ({IDENTITY_FORMS})",
                FLASH_CLASSES.join(", ")
            )));
        }
        if !(mib.is_finite() && *mib > 0.0 && *mib <= MAX_WRITE_MIB_PER_DAY) {
            return Err(bad(format!(
                "{mib}: give MiB a day in (0, {MAX_WRITE_MIB_PER_DAY}] (omit the entry for no \
                 budget)"
            )));
        }
    }
    Ok(())
}

/// The first duration, count or path of `c` outside its documented range (the field docs of
/// [`DaemonConfig`], [`Retune`] and [`Idle`], and `examples/daemon.toml`): (its table, `""` at the
/// top level, its key, the message), or `None`.
fn out_of_range(c: &DaemonConfig) -> Option<(&'static str, &'static str, String)> {
    let poll: RangeCheck = (
        "poll_s",
        "",
        c.poll_s as f64,
        (1..=3600).contains(&c.poll_s),
        "1–3600 s".into(),
    );
    let mut checks = interval_checks(c)
        .into_iter()
        .chain(retune_checks(&c.retune))
        .chain(idle_checks(&c.idle))
        .chain([poll]);
    // Every check's `ok` is false for NaN (a comparison with NaN is false).
    if let Some((key, table, v, _, range)) = checks.find(|c| !c.3) {
        // `1e308`, not its 309 digits.
        let v = if v.is_finite() && v.abs() >= 1e15 {
            format!("{v:e}")
        } else {
            format!("{v}")
        };
        let table = table.trim_end_matches('.');
        return Some((table, key, format!("'{v}': must be {range}")));
    }
    db_out_of_range(c)
}

/// One range check of [`out_of_range`]: (key, its table with a trailing `.`, `""` at the
/// top level, the value as a number, whether it is in range, the range as the message says
/// it).
type RangeCheck = (&'static str, &'static str, f64, bool, String);

/// The range checks of the top-level retune intervals (`retune_interval_days`, `_s`).
fn interval_checks(c: &DaemonConfig) -> [RangeCheck; 2] {
    let max_s = MAX_INTERVAL_DAYS * 86_400.0;
    [
        (
            "retune_interval_days",
            "",
            c.retune_interval_days,
            c.retune_interval_days > 0.0 && c.retune_interval_days <= MAX_INTERVAL_DAYS,
            format!("in (0, {MAX_INTERVAL_DAYS}] days (ten years)"),
        ),
        (
            "retune_interval_s",
            "",
            c.retune_interval_s.unwrap_or(1.0),
            c.retune_interval_s.is_none_or(|s| s > 0.0 && s <= max_s),
            format!("in (0, {max_s}] s (ten years)"),
        ),
    ]
}

/// The range checks of `[retune]`: budget, job scale, load size (MiB) and lead time (s).
fn retune_checks(r: &Retune) -> [RangeCheck; 4] {
    [
        (
            "budget",
            "retune.",
            f64::from(r.budget.unwrap_or(1)),
            r.budget.is_none_or(|b| (1..=10_000).contains(&b)),
            "1–10000 trials".into(),
        ),
        (
            "job_scale",
            "retune.",
            r.job_scale,
            r.job_scale > 0.0 && r.job_scale <= 100.0,
            "in (0, 100]".into(),
        ),
        (
            "load_mib",
            "retune.",
            r.load_mib as f64,
            (1..=MAX_LOAD_MIB).contains(&r.load_mib),
            format!("1–{MAX_LOAD_MIB} MiB (1 TiB)"),
        ),
        (
            "lead_s",
            "retune.",
            r.lead_s,
            (0.0..=60.0).contains(&r.lead_s),
            "0–60 s".into(),
        ),
    ]
}

/// The range checks of `[idle]`: load average, CPU busy %, device KiB/s and how long (s).
fn idle_checks(i: &Idle) -> [RangeCheck; 4] {
    [
        (
            "load_avg_max",
            "idle.",
            i.load_avg_max,
            i.load_avg_max >= 0.0 && i.load_avg_max.is_finite(),
            "≥ 0".into(),
        ),
        (
            "cpu_busy_pct_max",
            "idle.",
            i.cpu_busy_pct_max,
            (0.0..=100.0).contains(&i.cpu_busy_pct_max),
            "0–100 %".into(),
        ),
        (
            "device_kib_per_s_max",
            "idle.",
            i.device_kib_per_s_max,
            i.device_kib_per_s_max >= 0.0 && i.device_kib_per_s_max.is_finite(),
            "≥ 0 KiB/s".into(),
        ),
        (
            "for_s",
            "idle.",
            i.for_s as f64,
            i.for_s <= MAX_IDLE_FOR_S,
            format!("0–{MAX_IDLE_FOR_S} s (a day)"),
        ),
    ]
}

/// Why the `db` path is refused (empty or relative), as [`out_of_range`] says it, or `None`.
fn db_out_of_range(c: &DaemonConfig) -> Option<(&'static str, &'static str, String)> {
    match c.db.as_deref() {
        Some(db) if db.as_os_str().is_empty() => Some((
            "",
            "db",
            "'': give an absolute path (an empty one is SQLite's temporary database, gone \
             when the daemon stops)"
                .into(),
        )),
        Some(db) if !db.is_absolute() => Some((
            "",
            "db",
            format!(
                "'{}': give an absolute path (a relative one depends on the directory the \
                 daemon starts in)",
                db.display()
            ),
        )),
        _ => None,
    }
}

/// `"HH:MM-HH:MM"` as minutes after midnight `(start, end)`.
pub fn quiet_window(s: &str) -> Option<(u32, u32)> {
    let minutes = |t: &str| -> Option<u32> {
        let (h, m) = t.trim().split_once(':')?;
        let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
        // Not `then_some`: its argument is computed first, and an hour such as 99287727
        // overflows it (found by the daemon_config fuzz target).
        if h < 24 && m < 60 {
            Some(h * 60 + m)
        } else {
            None
        }
    };
    let (a, b) = s.split_once('-')?;
    Some((minutes(a)?, minutes(b)?))
}

/// Why `metrics_dir` is refused, or `None`: it must be an absolute path of an existing
/// directory (node_exporter's `--collector.textfile.directory`; Debian's is
/// `/var/lib/prometheus/node-exporter`).
fn check_metrics_dir(dir: &Path) -> Option<String> {
    if !dir.is_absolute() {
        return Some(format!(
            "'{}': give an absolute path (node_exporter's --collector.textfile.directory, \
             e.g. /var/lib/prometheus/node-exporter)",
            dir.display()
        ));
    }
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => None,
        Ok(_) => Some(format!("'{}': not a directory", dir.display())),
        Err(e) => Some(format!(
            "'{}': {e} (create it, or install prometheus-node-exporter)",
            dir.display()
        )),
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod range_tests;
