//! Prometheus metrics: the daemon's state as a node_exporter textfile (`metrics_dir` in
//! daemon.toml, `Exporter`), and `sweetspot status --format prometheus` for a cron job
//! where no daemon runs (`from_status`). Both render with `render`, so their common
//! series are the same text. The names, labels and units are in `docs/metrics.md`.
//!
//! The text exposition format (version 0.0.4) is written by hand (`encode`: a few dozen
//! lines): `prometheus-client`'s encoder would add a registry, atomics and a derive macro for
//! a dozen families written at most once a poll. No sample has a timestamp: node_exporter's
//! textfile collector refuses files that carry them.
//!
//! The daemon writes its file only when its text changed (an idle poll writes nothing: SD
//! cards), atomically (a temporary file in the same directory, then a rename), mode 0644 so
//! that the `prometheus` user reads it. Its resident set size moves a little at every poll,
//! so it is rewritten only when it moved by `RESIDENT_STEP` or with any other change.

use super::manage::{self, Manager};
use crate::Result;
use crate::device::Device;
use crate::store::Store;
use crate::store::tunes::SweetSpotRow;
use crate::sysroot::SysRoot;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file the daemon writes in `metrics_dir` (node_exporter reads `*.prom` files).
pub(crate) const FILE_NAME: &str = "sweetspot.prom";

/// The daemon's resident set size is rewritten when it moved by this much (or with any
/// other change), bytes: 1 MiB, so that page-level noise does not rewrite the file at every
/// poll.
pub(crate) const RESIDENT_STEP: u64 = 1 << 20;

/// A metric family's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A value that goes up and down.
    Gauge,
    /// A count that only goes up (its name ends in `_total`).
    Counter,
}

/// One metric family: its name, help text, type and samples (labels, value).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Family {
    /// Full name, e.g. `sweetspot_drift`.
    pub name: &'static str,
    /// The `# HELP` text (one line).
    pub help: &'static str,
    /// The `# TYPE`.
    pub kind: Kind,
    /// Samples: label pairs in order, and the value.
    pub samples: Samples,
}

/// A label value escaped as the text format wants it: backslash, double quote and newline
/// as `\\`, `\"` and `\n`.
pub(crate) fn escape_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// A sample value in the text format: integers without a fraction, `NaN`, `+Inf`, `-Inf`.
pub(crate) fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// The families in the text exposition format, each with its `# HELP` and `# TYPE` line;
/// a family without samples is left out. No timestamps.
pub(crate) fn encode(families: &[Family]) -> String {
    let mut out = String::new();
    for f in families.iter().filter(|f| !f.samples.is_empty()) {
        let help = f.help.replace('\\', "\\\\").replace('\n', "\\n");
        let kind = match f.kind {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
        };
        out.push_str(&format!(
            "# HELP {} {help}\n# TYPE {} {kind}\n",
            f.name, f.name
        ));
        for (labels, v) in &f.samples {
            out.push_str(f.name);
            if !labels.is_empty() {
                let l: Vec<String> = labels
                    .iter()
                    .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
                    .collect();
                out.push_str(&format!("{{{}}}", l.join(",")));
            }
            out.push_str(&format!(" {}\n", format_value(*v)));
        }
    }
    out
}

/// What is exported for one enrolled device present now.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct DeviceMetrics {
    /// Kernel name (`sda`): node_exporter's `device` label.
    pub device: String,
    /// The numeric knobs the daemon keeps (the sweet spot's changes, host-wide ones left
    /// out): knob → (value now, if readable; target), in the knob's own unit.
    pub knobs: BTreeMap<String, (Option<i64>, i64)>,
    /// The active scheduler, when the device has a scheduler file.
    pub scheduler: Option<String>,
    /// The sweet spot's scheduler, when it changes it.
    pub scheduler_target: Option<String>,
    /// How many of the kept knobs (scheduler included) are not at their target now.
    pub drift: u64,
    /// How many of its knobs another writer keeps (the daemon left them alone).
    pub contested_knobs: u64,
    /// Finished tunes by result (`done`, `interrupted`, `failed`, `recovered`), from the
    /// database.
    pub retunes: BTreeMap<String, u64>,
    /// When its last tune finished, Unix s.
    pub last_tune_at: Option<i64>,
    /// The kept sweet spot's improvement ratio and its 95% CI, when it is significant.
    pub improvement: Option<[f64; 3]>,
}

/// Everything [`render`] writes.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Snapshot {
    /// Per enrolled device present now, by kernel name.
    pub devices: Vec<DeviceMetrics>,
    /// The daemon's contest counts since it started, by kernel name (`None`: not the daemon).
    pub contested_total: Option<BTreeMap<String, u64>>,
    /// The daemon's resident set size, bytes (`None`: not the daemon).
    pub resident_bytes: Option<u64>,
}

/// Samples of one family: label pairs in order, and the value.
pub(crate) type Samples = Vec<(Vec<(&'static str, String)>, f64)>;

/// Each device's samples of one family, devices in order.
fn each(s: &Snapshot, f: impl Fn(&DeviceMetrics) -> Samples) -> Samples {
    s.devices.iter().flat_map(f).collect()
}

/// A device's one sample labelled `device`, if it has a value.
fn one(d: &DeviceMetrics, v: Option<f64>) -> Samples {
    v.map(|v| (vec![("device", d.device.clone())], v))
        .into_iter()
        .collect()
}

/// A device's samples labelled `device` and `key`.
fn by(
    d: &DeviceMetrics,
    key: &'static str,
    xs: impl IntoIterator<Item = (String, f64)>,
) -> Samples {
    xs.into_iter()
        .map(|(x, v)| (vec![("device", d.device.clone()), (key, x)], v))
        .collect()
}

fn family(name: &'static str, kind: Kind, help: &'static str, samples: Samples) -> Family {
    Family {
        name,
        help,
        kind,
        samples,
    }
}

/// The snapshot in the text format (the families and their help texts: `docs/metrics.md`).
pub(crate) fn render(s: &Snapshot) -> String {
    use Kind::{Counter, Gauge};
    let mut families = state_families(s);
    if let Some(t) = &s.contested_total {
        families.push(family(
            "sweetspot_contested_total",
            Counter,
            "Times another writer changed a knob the daemon keeps, since the daemon started.",
            each(s, |d| {
                one(d, Some(t.get(&d.device).copied().unwrap_or(0) as f64))
            }),
        ));
    }
    families.extend(tune_families(s));
    if let Some(b) = s.resident_bytes {
        families.push(family(
            "sweetspot_daemon_resident_bytes",
            Gauge,
            "The daemon's resident set size, bytes.",
            vec![(vec![], b as f64)],
        ));
    }
    encode(&families)
}

/// The families of the build and of the devices' state now: the version, the kept knobs'
/// values and targets, the schedulers, drift and contested knobs, in that order.
fn state_families(s: &Snapshot) -> Vec<Family> {
    use Kind::Gauge;
    let knobs = |target: bool| {
        each(s, |d| {
            let v = |(now, want): &(Option<i64>, i64)| if target { Some(*want) } else { *now };
            by(
                d,
                "knob",
                d.knobs
                    .iter()
                    .filter_map(|(k, x)| v(x).map(|v| (k.clone(), v as f64))),
            )
        })
    };
    let version = env!("CARGO_PKG_VERSION").to_string();
    vec![
        family(
            "sweetspot_build_info",
            Gauge,
            "sweetspot's version; always 1.",
            vec![(vec![("version", version)], 1.0)],
        ),
        family(
            "sweetspot_knob_value",
            Gauge,
            "A kept numeric knob's value now, in the knob's own unit (as in its sysfs file).",
            knobs(false),
        ),
        family(
            "sweetspot_knob_target",
            Gauge,
            "A kept numeric knob's value at the sweet spot, in the knob's own unit.",
            knobs(true),
        ),
        family(
            "sweetspot_scheduler_info",
            Gauge,
            "The device's active I/O scheduler; always 1.",
            each(s, |d| {
                by(d, "scheduler", d.scheduler.clone().map(|x| (x, 1.0)))
            }),
        ),
        family(
            "sweetspot_scheduler_target_info",
            Gauge,
            "The I/O scheduler of the device's sweet spot, when it changes it; always 1.",
            each(s, |d| {
                by(d, "scheduler", d.scheduler_target.clone().map(|x| (x, 1.0)))
            }),
        ),
        family(
            "sweetspot_drift",
            Gauge,
            "How many of the device's kept knobs are not at their sweet spot now.",
            each(s, |d| one(d, Some(d.drift as f64))),
        ),
        family(
            "sweetspot_contested_knobs",
            Gauge,
            "How many of the device's knobs another writer keeps (the daemon left them alone).",
            each(s, |d| one(d, Some(d.contested_knobs as f64))),
        ),
    ]
}

/// The families of the devices' tunes, from the database: finished tunes by result, the last
/// finish time, and the improvement ratio with its 95% CI, in that order.
fn tune_families(s: &Snapshot) -> Vec<Family> {
    use Kind::{Counter, Gauge};
    let imp = |i: usize| each(s, |d| one(d, d.improvement.map(|x| x[i])));
    vec![
        family(
            "sweetspot_retunes_total",
            Counter,
            "Finished tunes of the device by result, from the database.",
            each(s, |d| {
                by(
                    d,
                    "result",
                    d.retunes.iter().map(|(r, n)| (r.clone(), *n as f64)),
                )
            }),
        ),
        family(
            "sweetspot_last_tune_timestamp_seconds",
            Gauge,
            "When the device's last tune finished, Unix time.",
            each(s, |d| one(d, d.last_tune_at.map(|t| t as f64))),
        ),
        family(
            "sweetspot_improvement_ratio",
            Gauge,
            "The sweet spot's improvement over the default (> 1: better), when significant.",
            imp(0),
        ),
        family(
            "sweetspot_improvement_ratio_ci_low",
            Gauge,
            "The low end of the improvement ratio's 95% confidence interval.",
            imp(1),
        ),
        family(
            "sweetspot_improvement_ratio_ci_high",
            Gauge,
            "The high end of the improvement ratio's 95% confidence interval.",
            imp(2),
        ),
    ]
}

/// Finished tunes per identity: result → count, and the last finish time.
type Results = BTreeMap<String, (BTreeMap<String, u64>, i64)>;

fn results(store: Option<&Store>) -> Result<Results> {
    let mut out = Results::new();
    for (id, status, n, at) in match store {
        Some(s) => s.tune_results()?,
        None => vec![],
    } {
        let e = out.entry(id).or_default();
        e.0.insert(status, n);
        e.1 = e.1.max(at);
    }
    Ok(out)
}

/// The improvement ratio and its 95% CI of a significant sweet spot, from its stored report
/// (`objective.improvement`); read from the database when `spot`'s evidence was dropped.
pub(crate) fn improvement(store: Option<&Store>, spot: &SweetSpotRow) -> Option<[f64; 3]> {
    if !spot.significant {
        return None;
    }
    let from = |ev: &serde_json::Value| {
        let i = &ev["objective"]["improvement"];
        let ci = i["ci95"].as_array()?;
        Some([
            i["ratio"].as_f64()?,
            ci.first()?.as_f64()?,
            ci.get(1)?.as_f64()?,
        ])
    };
    if !spot.evidence.is_null() {
        return from(&spot.evidence);
    }
    let rows = store?.sweet_spots(Some(&spot.identity)).ok()?;
    rows.iter()
        .find(|r| r.id == spot.id)
        .and_then(|r| from(&r.evidence))
}

/// One device's metrics: its knobs read now against its sweet spot's changes.
fn device_metrics(
    root: &SysRoot,
    dev: &Device,
    spot: Option<&SweetSpotRow>,
    results: &Results,
    improvement: Option<[f64; 3]>,
    contested_knobs: u64,
) -> DeviceMetrics {
    let now = crate::knob::discover::knobs(root, dev).unwrap_or_default();
    let kept: crate::types::Setting = spot
        .map(crate::profile::build::changed)
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| !crate::knob::catalogue::order_of(k).is_some_and(|o| o.is_host()))
        .collect();
    let mut m = DeviceMetrics {
        device: dev.name.clone(),
        scheduler: (!dev.schedulers.is_empty()).then(|| dev.scheduler.clone()),
        contested_knobs,
        improvement,
        ..Default::default()
    };
    for (k, want) in &kept {
        let found = now.iter().find(|x| &x.name == k);
        if !found.is_some_and(|x| crate::knob::apply::knob_holds(x, want)) {
            m.drift += 1;
        }
        match want {
            crate::types::KnobValue::Int(v) => {
                m.knobs
                    .insert(k.clone(), (found.and_then(|x| x.current.as_int()), *v));
            }
            crate::types::KnobValue::Name(s) if k == "scheduler" => {
                m.scheduler_target = Some(s.clone())
            }
            crate::types::KnobValue::Name(_) => {}
        }
    }
    if let Some((r, at)) = results.get(&dev.identity) {
        m.retunes = r.clone();
        m.last_tune_at = Some(*at);
    }
    m
}

/// The enrolled devices' metrics ([`super::due::enrolled`]'s list); `contested` counts a
/// device's contested knobs by identity; `improvements` caches [`improvement`] by sweet spot
/// row id.
pub(crate) fn collect(
    store: Option<&Store>,
    root: &SysRoot,
    devices: &[(Device, Option<SweetSpotRow>)],
    contested: &dyn Fn(&str) -> u64,
    improvements: &mut BTreeMap<i64, Option<[f64; 3]>>,
) -> Result<Vec<DeviceMetrics>> {
    let res = results(store)?;
    let mut out: Vec<DeviceMetrics> = devices
        .iter()
        .map(|(d, spot)| {
            let imp = spot.as_ref().and_then(|s| {
                *improvements
                    .entry(s.id)
                    .or_insert_with(|| improvement(store, s))
            });
            device_metrics(root, d, spot.as_ref(), &res, imp, contested(&d.identity))
        })
        .collect();
    out.sort_by(|a, b| a.device.cmp(&b.device));
    Ok(out)
}

/// `sweetspot status --format prometheus`: the metrics `status` can know without the daemon
/// (not its contest counter nor its memory), from the database, sysfs and, while the daemon
/// runs, its state file `state` (contested knobs).
pub(crate) fn from_status(
    store: Option<&Store>,
    root: &SysRoot,
    cfg: &super::config::DaemonConfig,
    state: &Path,
) -> Result<String> {
    let spots = match store {
        Some(s) => super::due::latest_spots(s, cfg)?,
        None => Default::default(),
    };
    let devices = super::due::enrolled(root, cfg, &spots)?;
    let contested = contested_in_state(state);
    let devices = collect(
        store,
        root,
        &devices,
        &|id| contested.get(id).copied().unwrap_or(0),
        &mut BTreeMap::new(),
    )?;
    Ok(render(&Snapshot {
        devices,
        ..Default::default()
    }))
}

/// Contested knobs by identity in the daemon's state file, when its process is alive.
fn contested_in_state(state: &Path) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let Some(v) = std::fs::read_to_string(state)
        .ok()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
    else {
        return out;
    };
    let alive = v["pid"]
        .as_i64()
        .and_then(|p| i32::try_from(p).ok())
        .is_some_and(|p| nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), None).is_ok());
    if alive {
        for r in v["managed"].as_array().into_iter().flatten() {
            if let (Some(id), false) = (r["identity"].as_str(), r["contested"].is_null()) {
                *out.entry(id.to_string()).or_default() += 1;
            }
        }
    }
    out
}

/// This process's resident set size, bytes (`/proc/self/statm`'s second field × the page
/// size); `None` when unreadable.
pub(crate) fn resident_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = s.split_whitespace().nth(1)?.parse().ok()?;
    let page = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()?;
    Some(pages * u64::try_from(page).ok()?)
}

/// `dir` opened as a directory without following a symlink at any of its components: the
/// directory may lie below one another user owns (Debian's `/var/lib/prometheus` is the
/// `prometheus` user's), who could otherwise swap a component for a symlink and have root
/// write elsewhere.
fn open_dir(dir: &Path) -> std::io::Result<std::os::fd::OwnedFd> {
    use nix::fcntl::{OFlag, open, openat};
    use nix::sys::stat::Mode;
    let flags = OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC;
    let mut fd = open("/", flags, Mode::empty())?;
    for c in dir.components() {
        if let std::path::Component::Normal(name) = c {
            fd = openat(&fd, name, flags | OFlag::O_NOFOLLOW, Mode::empty())?;
        } else if c == std::path::Component::ParentDir {
            fd = openat(&fd, "..", flags, Mode::empty())?;
        }
    }
    Ok(fd)
}

/// Writes `text` to `dir/`[`FILE_NAME`] atomically: a temporary file in `dir` (created anew
/// with `O_EXCL`, so never through a symlink left there; not `*.prom`, so node_exporter skips
/// it), mode 0644 whatever the umask, then a rename over the old file; `dir` is reached
/// without following symlinks (`open_dir`).
pub(crate) fn write_atomic(dir: &Path, text: &str) -> std::io::Result<()> {
    use nix::fcntl::{OFlag, openat, renameat};
    use nix::sys::stat::{Mode, fchmod};
    use nix::unistd::{UnlinkatFlags, unlinkat};
    use std::io::Write;
    let d = open_dir(dir)?;
    let tmp = format!(".{FILE_NAME}.{}.tmp", std::process::id());
    let _ = unlinkat(&d, tmp.as_str(), UnlinkatFlags::NoRemoveDir);
    let mode = Mode::from_bits_truncate(0o644);
    let r = (|| -> std::io::Result<()> {
        let flags =
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let fd = openat(&d, tmp.as_str(), flags, mode)?;
        fchmod(&fd, mode)?;
        std::fs::File::from(fd).write_all(text.as_bytes())?;
        Ok(renameat(&d, tmp.as_str(), &d, FILE_NAME)?)
    })();
    if r.is_err() {
        let _ = unlinkat(&d, tmp.as_str(), UnlinkatFlags::NoRemoveDir);
    }
    r
}

/// The daemon's side: counts contests as the manager reports them, and rewrites the file
/// when its text changed.
#[derive(Debug, Default)]
pub(crate) struct Exporter {
    /// Contests since the start, by kernel name (process lifetime).
    contested_total: BTreeMap<String, u64>,
    /// [`improvement`] by sweet spot row id.
    improvements: BTreeMap<i64, Option<[f64; 3]>>,
    /// Where the last text was written, that text without the resident set size, and the
    /// size written with it.
    written: Option<(PathBuf, String, u64)>,
    /// The last write error logged (a failure that repeats is logged once).
    failed: Option<String>,
}

impl Exporter {
    /// Counts a manager event: a contest of a disk's knob (host-wide ones have no device).
    pub(crate) fn saw(&mut self, e: &manage::Event) {
        if let manage::Event::Contested(dev, ..) = e
            && dev != manage::HOST_LABEL
        {
            *self.contested_total.entry(dev.clone()).or_default() += 1;
        }
    }

    /// At the end of a poll: renders the metrics of `devices` (enrolled, present) and writes
    /// `dir/`[`FILE_NAME`] when they changed. Nothing when `dir` is `None`. Returns true
    /// when it wrote. A failure is logged (once while it repeats), not returned: the
    /// metrics never stop the daemon.
    pub(crate) fn update(
        &mut self,
        dir: Option<&Path>,
        store: &Store,
        root: &SysRoot,
        devices: &[(Device, Option<SweetSpotRow>)],
        manager: &Manager,
    ) -> bool {
        // A reload that changed or unset `metrics_dir`: the old file goes.
        if let Some((old, ..)) = &self.written
            && dir != Some(old.as_path())
        {
            Self::remove(Some(old));
            self.written = None;
        }
        let Some(dir) = dir else { return false };
        let rss = resident_bytes().unwrap_or(0);
        let r = collect(
            Some(store),
            root,
            devices,
            &|id| manager.contested(id).len() as u64,
            &mut self.improvements,
        )
        .and_then(|devices| {
            let mut s = Snapshot {
                devices,
                contested_total: Some(self.contested_total.clone()),
                resident_bytes: None,
            };
            let body = render(&s);
            if let Some((_, old, old_rss)) = &self.written
                && *old == body
                && old_rss.abs_diff(rss) < RESIDENT_STEP
            {
                return Ok(false);
            }
            s.resident_bytes = Some(rss);
            write_atomic(dir, &render(&s))
                .map_err(|e| crate::Error::io(format!("writing {}", path(dir).display()), e))?;
            self.written = Some((dir.to_path_buf(), body, rss));
            Ok(true)
        });
        match r {
            Ok(w) => {
                self.failed = None;
                w
            }
            Err(e) => {
                let msg = e.to_string();
                if self.failed.as_deref() != Some(msg.as_str()) {
                    tracing::warn!("metrics not written: {msg}");
                }
                self.failed = Some(msg);
                false
            }
        }
    }

    /// When the daemon stops: its file is removed, so that no stale values are scraped
    /// (alert on `absent(sweetspot_build_info)`).
    pub(crate) fn remove(dir: Option<&Path>) {
        if let Some(d) = dir.and_then(|d| open_dir(d).ok()) {
            let _ = nix::unistd::unlinkat(&d, FILE_NAME, nix::unistd::UnlinkatFlags::NoRemoveDir);
        }
    }
}

/// `dir/`[`FILE_NAME`].
pub(crate) fn path(dir: &Path) -> PathBuf {
    dir.join(FILE_NAME)
}

#[cfg(test)]
mod tests;
