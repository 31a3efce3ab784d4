//! `sweetspot status`: per enrolled device, its last tune, its sweet spot, whether the daemon
//! keeps it there (managed, or contested by another writer), and when a retune is due and why;
//! above them, the knobs a killed benchmark left open ([`crate::undo::killed_bench`]).
//! The daemon's own state comes from the file it writes when that state changes
//! ([`super::state_path`], `write_state`).

use super::config::{DaemonConfig, Enroll};
use super::due::Wait;
use super::manage::Manager;
use crate::Result;
use crate::device;
use crate::profile::Match;
use crate::profile::build::changed;
use crate::store::Store;
use crate::store::tunes::SweetSpotRow;
use crate::sysroot::SysRoot;
use crate::types::TuneStatus;
use crate::types::time::rfc3339;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

mod typed;
pub(crate) use typed::{ConfigShown, ConfigSource, Contest, Off, Retune, State};

/// What the daemon last wrote to its state file ([`write_state`]).
#[derive(Debug, Default)]
pub(crate) struct Written {
    /// The text written.
    text: Option<String>,
    /// The same with the digits of every wait's words left out: what changes when a device's
    /// state, a managed knob, a wait's kind, date or reason does, not when its figures do.
    shape: Option<String>,
    /// When it was written.
    at: Option<std::time::Instant>,
}

/// A change of a wait's figures alone (`idle for 15 s of 600 s` → `idle for 20 s of 600 s`,
/// the load now) is written at most this often, s; any other change at once.
pub(crate) const FIGURES_EVERY_S: u64 = 60;

/// Writes the manager's state atomically (a temporary file and a rename), only when it
/// changed since `last` or the file is gone: a daemon with nothing to do writes nothing (an
/// SD card's wear; a disk left to spin down). A change in a wait's figures alone is written
/// at most every [`FIGURES_EVERY_S`]. Failures only warn (and are tried again at the next call).
pub(crate) fn write_state(
    path: &Path,
    m: &Manager,
    waits: &BTreeMap<String, Wait>,
    last: &mut Written,
) {
    let rows: Vec<serde_json::Value> = m
        .managed
        .iter()
        .map(|((id, k), v)| {
            serde_json::json!({"identity": id, "knob": k, "device": v.device,
            "expected": v.expected, "contested": v.contested})
        })
        .collect();
    let state = |waits: &BTreeMap<String, Wait>| {
        serde_json::json!({ "pid": std::process::id(), "managed": rows, "waits": waits,
            "released": m.released })
        .to_string()
    };
    let text = state(waits);
    let wordless: BTreeMap<String, Wait> = waits
        .iter()
        .map(|(k, w)| {
            let mut w = w.clone();
            w.detail.retain(|c| !c.is_ascii_digit());
            (k.clone(), w)
        })
        .collect();
    let shape = state(&wordless);
    let figures_due = last
        .at
        .is_none_or(|at| at.elapsed() >= std::time::Duration::from_secs(FIGURES_EVERY_S));
    let unchanged =
        last.shape.as_ref() == Some(&shape) && (last.text.as_ref() == Some(&text) || !figures_due);
    if unchanged && path.exists() {
        return;
    }
    let tmp = path.with_extension("tmp");
    match std::fs::write(&tmp, &text).and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => {
            *last = Written {
                text: Some(text),
                shape: Some(shape),
                at: Some(std::time::Instant::now()),
            }
        }
        Err(e) => tracing::warn!("cannot write the daemon state {}: {e}", path.display()),
    }
}

/// One enrolled device.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct DeviceStatus {
    /// Stable identity.
    pub identity: String,
    /// Kernel name now, if present.
    pub device: Option<String>,
    /// The last tune in words: `#id status date`, and `(resumed tune #N: T trials, R runs
    /// reused)` (the text table's; in JSON its parts are the `last_tune_*` fields).
    #[serde(skip)]
    pub last_tune: Option<String>,
    /// The last tune's row id (`history`'s `#id`).
    pub last_tune_id: Option<i64>,
    /// The last tune's status (`done`, `interrupted`, `failed`, `running`, or `killed`: stored
    /// as `running`, but its process is gone, as in `history`; the next `tune`, `daemon` or
    /// `restore` recovers it).
    pub last_tune_status: Option<String>,
    /// When the last tune finished (or started, when it has not), RFC 3339.
    pub last_tune_at: Option<String>,
    /// The same, Unix s.
    pub last_tune_at_epoch_s: Option<i64>,
    /// The interrupted tune the last tune resumed, and the trials and runs of it reused.
    pub last_tune_resumed: Option<crate::tune::resume::Resumed>,
    /// Bytes the last tune wrote to the device (its own `stat` counters,
    /// [`crate::store::tunes::TuneRow::bytes_written`]); `None` when not counted.
    pub last_tune_bytes_written: Option<u64>,
    /// The sweet spot's knob changes in words (`knob=value`), `keep the default`, or `none
    /// yet` (the text table's; in JSON: `sweet_spot_knobs`).
    #[serde(skip)]
    pub sweet_spot: String,
    /// The sweet spot's knob changes as an object, each value as `tune --json` and `history
    /// --json` print it ([`crate::types::KnobValue`]: a number for a numeric knob, a string
    /// for a scheduler: `{"read_ahead_kb": 256, "scheduler": "bfq"}`); empty when it keeps
    /// the default; `None` when never tuned.
    pub sweet_spot_knobs: Option<crate::types::Setting>,
    /// What holds for the device now ([`State`]; in the text table, its sentence).
    pub state: State,
    /// When the next retune is due and why ([`Retune`]): the daemon's date
    /// ([`super::retune::due`], from the sweet spot it keeps), the one its `interval` wait
    /// names.
    pub retune: Retune,
    /// [`State::text`]: the text table's sentence.
    #[serde(skip)]
    pub state_text: String,
    /// [`Retune::text`]: the text table's sentence.
    #[serde(skip)]
    pub retune_text: String,
    /// What the daemon waits for before it retunes this device (its latest poll): `tuning`,
    /// `not idle`, `quiet hours`, `interval`, `contested`, `busy`, `failed`, `no filesystem`,
    /// `restored`, `kept` (its sweet spot's policy is one a retune cannot run), `write budget`
    /// (a flash device's retunes would write more than its budget); `None` when the daemon is
    /// not running.
    pub waiting: Option<String>,
    /// The same in words (the criterion over its threshold, the window, the holder).
    pub waiting_detail: Option<String>,
}

/// The whole status.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct DaemonStatus {
    /// True when the daemon's state file is present and its pid alive.
    pub daemon_running: bool,
    /// The config whose enrolled devices and retune interval are shown; `None` when the
    /// caller did not say.
    pub config: Option<ConfigShown>,
    /// Its retune interval, s.
    pub retune_interval_s: f64,
    /// Per enrolled device.
    pub devices: Vec<DeviceStatus>,
    /// The knobs a killed `bench` or `tune --scratch` journaled and nobody has put back yet
    /// (`device`, `identity`, `knob`, `original`; `device` null for a host-wide knob): the
    /// next `tune`, `bench` on a device, `daemon` or `restore` writes them back ([`crate::undo::killed_bench`]). Empty
    /// when there are none.
    pub killed_bench_knobs: Vec<crate::undo::OpenKnob>,
}

/// Builds the status from the database (`None`: it does not exist yet, so nothing is tuned;
/// enrolled identities are still listed), sysfs and the daemon's state file.
pub(crate) fn status(
    store: Option<&Store>,
    root: &SysRoot,
    cfg: &DaemonConfig,
    state: &Path,
) -> Result<DaemonStatus> {
    let st: Option<serde_json::Value> = std::fs::read_to_string(state)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok());
    let running = st
        .as_ref()
        .and_then(|v| v["pid"].as_i64())
        .is_some_and(|pid| {
            i32::try_from(pid)
                .is_ok_and(|p| nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), None).is_ok())
        });
    let present = device::list(root).unwrap_or_default();
    let kernel = device::kernel_release();
    let rows = enrolled(store, cfg, &kernel)?;
    // The `[host]` the daemon applies ([`super::profile`]): a device's host-wide knob counts
    // in its state only when that is the value exported (another sweet spot's newer value,
    // the host's own tune, or an exclusive partner may have superseded it).
    // Built quietly: its warnings (which sweet spot's value wins) are `profile export`'s.
    let built_host = store
        .and_then(|s| {
            let quiet = tracing::subscriber::NoSubscriber::default();
            tracing::subscriber::with_default(quiet, || super::profile(s, root, cfg)).ok()
        })
        .map(|p| super::manage::host_setting(&p));
    let seen = Seen {
        store,
        root,
        cfg,
        daemon: st.as_ref(),
        running,
        present: &present,
        kernel: &kernel,
        built_host: built_host.as_ref(),
    };
    let mut devices = rows
        .into_iter()
        .map(|(identity, spot)| seen.device(identity, spot))
        .collect::<Result<Vec<_>>>()?;
    let killed_bench_knobs = match store {
        Some(st) => crate::undo::killed_bench_knobs(st, root)?,
        None => vec![],
    };
    for d in &mut devices {
        d.state_text = d.state.text(d.device.is_some());
        d.retune_text = d.retune.text(&cfg.interval_label(), d.device.is_some());
    }
    Ok(DaemonStatus {
        daemon_running: running,
        config: None,
        retune_interval_s: cfg.interval_s(),
        devices,
        killed_bench_knobs,
    })
}

/// The enrolled identities, each with the sweet spot the daemon keeps and retunes from
/// ([`SweetSpotRow::rules_over`](crate::store::tunes::SweetSpotRow::rules_over), so that its
/// due date here is the daemon's); one enrolled by name but never tuned has none.
fn enrolled(
    store: Option<&Store>,
    cfg: &DaemonConfig,
    kernel: &str,
) -> Result<BTreeMap<String, Option<SweetSpotRow>>> {
    let mut latest = BTreeMap::new();
    let spots = match store {
        Some(st) => st.sweet_spots(None)?,
        None => vec![],
    };
    let latest_all = crate::store::tunes::ruling(spots, kernel, &|id| cfg.ruling_policy(id));
    for (id, s) in latest_all {
        if Match::from_identity(&id).is_some() {
            latest.insert(id, s);
        }
    }
    if let Enroll::Identities(ids) = &cfg.enroll {
        latest.retain(|i, _| ids.contains(i));
    }
    let mut rows: BTreeMap<String, Option<SweetSpotRow>> =
        latest.into_iter().map(|(i, s)| (i, Some(s))).collect();
    for id in cfg.named() {
        rows.entry(id).or_insert(None);
    }
    Ok(rows)
}

/// What [`status`] read once and judges every device by.
struct Seen<'a> {
    store: Option<&'a Store>,
    root: &'a SysRoot,
    cfg: &'a DaemonConfig,
    /// The daemon's state file, if it parsed ([`write_state`]).
    daemon: Option<&'a serde_json::Value>,
    /// True when the daemon that wrote it is alive.
    running: bool,
    present: &'a [device::Device],
    kernel: &'a str,
    /// The host-wide knobs of the `[host]` the daemon applies.
    built_host: Option<&'a crate::types::Setting>,
}

/// A device's last tune, as [`DeviceStatus`] shows it (its `last_tune*` fields).
struct LastTune {
    text: Option<String>,
    id: Option<i64>,
    status: Option<String>,
    at: Option<String>,
    at_epoch_s: Option<i64>,
    resumed: Option<crate::tune::resume::Resumed>,
    bytes_written: Option<u64>,
}

/// What the daemon waits for before it retunes a device (its state file's `waits` entry,
/// while it runs).
struct Waiting {
    /// The entry.
    wait: Option<serde_json::Value>,
    kind: Option<String>,
    detail: Option<String>,
}

impl Seen<'_> {
    /// The status of the enrolled `identity`, whose ruling sweet spot is `spot`.
    fn device(&self, identity: String, spot: Option<SweetSpotRow>) -> Result<DeviceStatus> {
        let dev = self
            .present
            .iter()
            .find(|d| d.identity == identity)
            .map(|d| d.name.clone());
        let last = self.last_tune(&identity, spot.as_ref())?;
        let waiting = self.waiting(&identity);
        let tuning = waiting.kind.as_deref() == Some("tuning");
        let Some(spot) = spot else {
            return Ok(DeviceStatus {
                identity,
                state: State::NeverTuned,
                state_text: String::new(),
                retune_text: String::new(),
                retune: if tuning {
                    Retune::Tuning
                } else {
                    write_budget_wait(&waiting).unwrap_or(Retune::NeverTuned)
                },
                device: dev,
                last_tune: last.text,
                last_tune_id: last.id,
                last_tune_status: last.status,
                last_tune_at: last.at,
                last_tune_at_epoch_s: last.at_epoch_s,
                last_tune_resumed: last.resumed,
                last_tune_bytes_written: last.bytes_written,
                sweet_spot: "none yet".to_string(),
                sweet_spot_knobs: None,
                waiting: waiting.kind,
                waiting_detail: waiting.detail,
            });
        };
        let knobs = changed(&spot);
        let sweet_spot = if knobs.is_empty() {
            "keep the default".to_string()
        } else {
            crate::types::setting_label(&knobs)
        };
        let state = self.state(&identity, dev.as_deref(), &knobs);
        let retune = self.retune(&waiting, tuning, &spot);
        // Values as `tune` and `history` print them: numbers for numeric knobs.
        let sweet_spot_knobs = Some(knobs);
        Ok(DeviceStatus {
            identity,
            device: dev,
            last_tune: last.text,
            last_tune_id: last.id,
            last_tune_status: last.status,
            last_tune_at: last.at,
            last_tune_at_epoch_s: last.at_epoch_s,
            last_tune_resumed: last.resumed,
            last_tune_bytes_written: last.bytes_written,
            sweet_spot,
            sweet_spot_knobs,
            state,
            retune,
            state_text: String::new(),
            retune_text: String::new(),
            waiting: waiting.kind,
            waiting_detail: waiting.detail,
        })
    }

    /// The last tune of `identity`; `spot` says how many trials it reused when it resumed an
    /// interrupted one.
    fn last_tune(&self, identity: &str, spot: Option<&SweetSpotRow>) -> Result<LastTune> {
        // A `running` tune whose process is gone was killed, as `history` says too.
        let last = match self.store {
            Some(st) => st.tunes(Some(identity))?.into_iter().last().map(|mut t| {
                if t.status == TuneStatus::Running && !crate::undo::alive(st.path(), self.root, &t)
                {
                    t.status = TuneStatus::Killed;
                }
                t
            }),
            None => None,
        };
        let at_epoch_s = last.as_ref().map(|t| t.finished_at.unwrap_or(t.started_at));
        // A tune that resumed an interrupted one says how many of its trials it reused.
        let resumed = last.as_ref().and_then(|t| {
            spot.filter(|s| s.tune_id == Some(t.id)).and_then(|s| {
                serde_json::from_value::<crate::tune::resume::Resumed>(
                    s.evidence["resumed"].clone(),
                )
                .ok()
            })
        });
        let text = last.as_ref().map(|t| {
            let resumed = resumed.as_ref().map_or_else(String::new, |r| {
                format!(
                    " (resumed tune #{}: {} trials, {} runs reused)",
                    r.from_tune, r.trials, r.runs
                )
            });
            let written = t.bytes_written.map_or_else(String::new, |b| {
                format!(", {} written", crate::types::text::bytes(b))
            });
            format!(
                "#{} {} {}{resumed}{written}",
                t.id,
                t.status,
                rfc3339(t.finished_at.unwrap_or(t.started_at))
            )
        });
        Ok(LastTune {
            text,
            id: last.as_ref().map(|t| t.id),
            status: last.as_ref().map(|t| t.status.to_string()),
            at: at_epoch_s.map(rfc3339),
            at_epoch_s,
            resumed,
            bytes_written: last.as_ref().and_then(|t| t.bytes_written),
        })
    }

    /// What the running daemon waits for before it retunes `identity`.
    fn waiting(&self, identity: &str) -> Waiting {
        let wait = self
            .daemon
            .map(|v| v["waits"].clone())
            .filter(|_| self.running)
            .map(|v| v[identity].clone())
            .filter(|v| v.is_object());
        Waiting {
            kind: wait
                .as_ref()
                .and_then(|v| v["kind"].as_str().map(String::from)),
            detail: wait
                .as_ref()
                .and_then(|v| v["detail"].as_str().map(String::from)),
            wait,
        }
    }

    /// The daemon's state file's rows of the knobs it manages for `id` (an identity, or
    /// [`super::manage::HOST`]).
    fn managed_rows(&self, id: &str) -> Vec<serde_json::Value> {
        self.daemon
            .and_then(|v| v["managed"].as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r["identity"] == id)
            .collect()
    }

    /// When the running daemon last saw `restore` put `id`'s knobs back.
    fn released_at(&self, id: &str) -> Option<i64> {
        self.daemon
            .filter(|_| self.running)
            .and_then(|v| v["released"][id]["at"].as_i64())
    }

    /// What holds for the device `identity` (present as `dev`) whose sweet spot changes
    /// `knobs`: its own knobs, and the host-wide ones it still decides.
    fn state(&self, identity: &str, dev: Option<&str>, knobs: &crate::types::Setting) -> State {
        let is_host = |k: &str| crate::knob::catalogue::order_of(k).is_some_and(|o| o.is_host());
        let rows = self.managed_rows(identity);
        // Its host-wide knobs: the daemon manages them once for the host ([`manage::HOST`]).
        let host_knobs: Vec<&String> = knobs
            .iter()
            .filter(|(k, _)| is_host(k))
            .filter(|(k, v)| self.built_host.is_none_or(|h| h.get(*k) == Some(*v)))
            .map(|(k, _)| k)
            .collect();
        let effective: crate::types::Setting = knobs
            .iter()
            .filter(|(k, _)| !is_host(k) || host_knobs.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let host_rows: Vec<serde_json::Value> = self
            .managed_rows(super::manage::HOST)
            .into_iter()
            .filter(|r| host_knobs.iter().any(|k| r["knob"] == k.as_str()))
            .collect();
        let unmanaged_host: Vec<&str> = host_knobs
            .iter()
            .filter(|k| !host_rows.iter().any(|r| r["knob"] == k.as_str()))
            .map(|k| k.as_str())
            .collect();
        let contested: Vec<Contest> = rows
            .iter()
            .chain(&host_rows)
            .filter(|r| !r["contested"].is_null())
            .map(|r| Contest {
                knob: r["knob"].as_str().unwrap_or("?").to_string(),
                value: r["contested"].as_str().unwrap_or("?").to_string(),
            })
            .collect();
        let host_released = self.released_at(super::manage::HOST);
        let device_knobs = knobs.keys().any(|k| !is_host(k));
        // Only host-wide knobs, and `restore` put those back: the sweet spot is restored.
        let released = self
            .released_at(identity)
            .or(host_released.filter(|_| !device_knobs));
        match (dev, self.running, released) {
            (None, _, _) => State::Absent,
            (Some(name), false, _) => State::NotManaged {
                off: against_now(self.root, self.present, name, &effective),
            },
            (Some(_), true, Some(at)) => State::Restored { at, at_epoch_s: at },
            (Some(_), true, None) if !contested.is_empty() => State::Contested { knobs: contested },
            // A sweet spot with changes the daemon manages none of: not applied (yet).
            (Some(_), true, None)
                if rows.is_empty() && host_rows.is_empty() && !knobs.is_empty() =>
            {
                State::NotApplied
            }
            (Some(_), true, None) => State::Managed {
                host_not_managed: unmanaged_host.iter().map(|k| k.to_string()).collect(),
                host_restored_at: host_released.filter(|_| !unmanaged_host.is_empty()),
                host_restored_at_epoch_s: host_released.filter(|_| !unmanaged_host.is_empty()),
            },
        }
    }

    /// When the daemon retunes a device at `spot`: [`super::retune::due`], as the daemon
    /// decides, or the daemon's own later date when a failed retune backs off.
    fn retune(&self, waiting: &Waiting, tuning: bool, spot: &SweetSpotRow) -> Retune {
        let now = crate::store::now();
        let failed_until = waiting
            .wait
            .as_ref()
            .filter(|v| v["kind"] == "failed")
            .and_then(|v| v["due_at"].as_i64())
            .filter(|&at| at > now);
        match (
            tuning,
            super::retune::due(Some(spot), self.kernel, now, self.cfg),
            failed_until,
        ) {
            (true, _, _) => Retune::Tuning,
            _ if waiting.kind.as_deref() == Some("kept") => Retune::Kept,
            _ if let Some(r) = write_budget_wait(waiting) => r,
            (false, Ok(_), Some(at)) => Retune::Backoff { at, at_epoch_s: at },
            (false, Ok(_), None) if spot.kernel != self.kernel => Retune::KernelChanged {
                tuned_on: spot.kernel.clone(),
                running: self.kernel.to_string(),
            },
            (false, Ok(_), None) => {
                let at = super::retune::interval_due_at(spot, self.cfg);
                Retune::IntervalElapsed { at, at_epoch_s: at }
            }
            (false, Err(at), _) => Retune::Scheduled { at, at_epoch_s: at },
        }
    }
}

/// [`Retune::WriteBudget`] when the daemon waits for the device's write budget, with the date
/// its wait names.
fn write_budget_wait(waiting: &Waiting) -> Option<Retune> {
    let at = waiting
        .wait
        .as_ref()
        .filter(|v| v["kind"] == "write budget")?["due_at"]
        .as_i64()?;
    Some(Retune::WriteBudget { at, at_epoch_s: at })
}

/// A knob the daemon manages: `(device, knob, expected)`.
pub(crate) type ManagedKnob = (String, String, String);

/// The running daemon's pid and the knobs it manages now, `(device, knob, expected)` (the
/// disk's kernel name), from its state file `state` ([`super::state_path`]); `None` when it
/// is not running. `sweetspot restore` says when the daemon will leave a disk alone.
pub(crate) fn running_daemon(state: &Path) -> Option<(i32, Vec<ManagedKnob>)> {
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(state).ok()?).ok()?;
    let pid = i32::try_from(v["pid"].as_i64()?).ok()?;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).ok()?;
    let managed = v["managed"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["contested"].is_null())
        .filter_map(|r| {
            Some((
                r["device"].as_str()?.to_string(),
                r["knob"].as_str()?.to_string(),
                r["expected"].as_str()?.to_string(),
            ))
        })
        .collect();
    Some((pid, managed))
}

/// The sweet spot's `knobs` that disk `name` does not hold now (read from sysfs/procfs;
/// empty: it is at its sweet spot), judged as `verify` judges drift (a knob kept in jiffies
/// rounded up to one).
fn against_now(
    root: &SysRoot,
    present: &[device::Device],
    name: &str,
    knobs: &crate::types::Setting,
) -> Vec<Off> {
    let now = present
        .iter()
        .find(|d| d.name == name)
        .and_then(|d| crate::knob::discover::knobs(root, d).ok())
        .unwrap_or_default();
    knobs
        .iter()
        .filter_map(|(k, want)| {
            let found = now.iter().find(|x| &x.name == k);
            if found.is_some_and(|x| crate::knob::apply::knob_holds(x, want)) {
                return None;
            }
            Some(Off {
                knob: k.clone(),
                now: found.map(|x| x.current.clone()),
                sweet_spot: want.clone(),
            })
        })
        .collect()
}

/// The human table, for database `db` and roots `root` (named in the `restore` command of a
/// note on what a killed benchmark left open).
pub(crate) fn text(s: &DaemonStatus, db: &Path, root: &SysRoot) -> String {
    let mut out = format!(
        "daemon: {}\n",
        if s.daemon_running {
            "running"
        } else {
            "not running"
        }
    );
    if let Some(c) = &s.config {
        out.push_str(&format!("config: {}\n", c.text()));
    }
    if let Some(n) = crate::undo::note(&s.killed_bench_knobs, db, root) {
        out.push_str(&format!("{n}\n"));
    }
    if s.devices.is_empty() {
        out.push_str("no enrolled device (tune one with `sweetspot tune --device D`)\n");
    }
    for d in &s.devices {
        out.push_str(&format!(
            "{} ({})\n  sweet spot: {}\n  last tune:  {}\n  state:      {}\n  retune:     {}\n  \
             waiting:    {}\n",
            d.device.as_deref().unwrap_or("-"),
            d.identity,
            d.sweet_spot,
            d.last_tune.as_deref().unwrap_or("-"),
            d.state_text,
            d.retune_text,
            match (&d.waiting, &d.waiting_detail) {
                (Some(k), Some(x)) => format!("{k}: {x}"),
                (Some(k), None) => k.clone(),
                _ => "- (the daemon is not running)".to_string(),
            },
        ));
    }
    out
}

#[cfg(test)]
mod tests;
