//! `sweetspot status`: per enrolled device, its last tune, its sweet spot, whether the daemon
//! keeps it there (managed, or contested by another writer), and when a retune is due and why;
//! above them, the knobs a killed benchmark left open ([`crate::tune::killed`]).
//! The daemon's own state comes from the file it rewrites every poll ([`super::state_path`]).

use super::config::{Config, Enroll};
use super::manage::Manager;
use super::plan::Wait;
use crate::Result;
use crate::device;
use crate::profile::Match;
use crate::profile::build::{changed, rfc3339};
use crate::store::Store;
use crate::sysroot::SysRoot;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The `status --json` format's version: 2 since `sweet_spot_knobs` type a numeric knob's value as a
/// number (1: every value a string).
pub const JSON_VERSION: u32 = 2;

/// Writes the manager's state atomically (a temporary file and a rename); failures only warn.
pub fn write_state(path: &Path, m: &Manager, waits: &BTreeMap<String, Wait>) {
    let rows: Vec<serde_json::Value> = m
        .managed
        .iter()
        .map(|((id, k), v)| {
            serde_json::json!({"identity": id, "knob": k, "device": v.device,
            "expected": v.expected, "contested": v.contested})
        })
        .collect();
    let text = serde_json::json!({ "pid": std::process::id(), "managed": rows, "waits": waits,
        "released": m.released })
    .to_string();
    let tmp = path.with_extension("tmp");
    if let Err(e) = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path)) {
        tracing::warn!("cannot write the daemon state {}: {e}", path.display());
    }
}

/// One enrolled device.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeviceStatus {
    /// Stable identity.
    pub identity: String,
    /// Kernel name now, if present.
    pub device: Option<String>,
    /// The last tune: `#id status date`, and `(resumed tune #N: T trials, R runs reused)`.
    pub last_tune: Option<String>,
    /// The last tune's row id (`history`'s `#id`).
    pub last_tune_id: Option<i64>,
    /// The last tune's status (`done`, `interrupted`, `failed`, `running`, or `killed`: stored
    /// as `running`, but its process is gone, as in `history`; the next `tune`, `daemon` or
    /// `restore` recovers it).
    pub last_tune_status: Option<String>,
    /// When the last tune finished (or started, when it has not), RFC 3339.
    pub last_tune_at: Option<String>,
    /// The sweet spot's knob changes (`knob=value`), `keep the default`, or `none yet`.
    pub sweet_spot: String,
    /// The sweet spot's knob changes as an object, each value as `tune --json` and `history
    /// --json` print it ([`crate::types::KnobValue`]: a number for a numeric knob, a string
    /// for a scheduler: `{"read_ahead_kb": 256, "scheduler": "bfq"}`); empty when it keeps
    /// the default; `None` when never tuned.
    pub sweet_spot_knobs: Option<crate::types::Setting>,
    /// What holds for the device now: `managed` (the daemon applied its sweet spot, its
    /// host-wide knobs included, and watches it; `managed, but not its host-wide <knob>: …`
    /// when those are not applied yet or were restored), `contested: <knob> (another writer
    /// keeps <value>)`, `not applied yet` (the daemon runs but has not applied it),
    /// ``restored by `sweetspot restore` at <RFC 3339>: ...`` (the daemon leaves it alone
    /// until it restarts or reloads), `absent`,
    /// `never tuned` (`never tuned, absent`), or with the daemon stopped `not managed (the
    /// daemon is not running): at its sweet spot` / `...: <knob> is <now>, sweet spot
    /// <value>`.
    pub state: String,
    /// When the next retune is due and why: `due now: never tuned`, `due now: tuned on
    /// <kernel>, ...`, `due now (the interval elapsed at <RFC 3339>; every <interval>)`,
    /// `due <RFC 3339> (every <interval>)` (in the future), `due <RFC 3339> (the last retune
    /// failed; every <interval>)` (the daemon's back-off), `tuning now`; for an absent
    /// device `due when it is present: never tuned`, or one of those followed by `, when it
    /// is present`. The date is the daemon's ([`super::retune::due`], from the sweet spot it
    /// keeps), the one its `interval` wait names.
    pub retune: String,
    /// What the daemon waits for before it retunes this device (its latest poll): `tuning`,
    /// `not idle`, `quiet hours`, `interval`, `contested`, `busy`, `failed`, `no filesystem`,
    /// `restored`; `None` when the daemon is not running.
    pub waiting: Option<String>,
    /// The same in words (the criterion over its threshold, the window, the holder).
    pub waiting_detail: Option<String>,
}

/// The whole status.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Status {
    /// [`JSON_VERSION`].
    pub version: u32,
    /// True when the daemon's state file is present and its pid alive.
    pub daemon_running: bool,
    /// Per enrolled device.
    pub devices: Vec<DeviceStatus>,
    /// The knobs a killed `bench` or `tune --scratch` journaled and nobody has put back yet
    /// (`device`, `identity`, `knob`, `original`; `device` null for a host-wide knob): the
    /// next `tune`, `bench` on a device, `daemon` or `restore` writes them back ([`crate::tune::killed`]). Empty
    /// when there are none.
    pub killed_bench_knobs: Vec<crate::tune::killed::OpenKnob>,
}

/// Builds the status from the database (`None`: it does not exist yet, so nothing is tuned;
/// enrolled identities are still listed), sysfs and the daemon's state file.
pub fn status(store: Option<&Store>, root: &SysRoot, cfg: &Config, state: &Path) -> Result<Status> {
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
    let mut latest = BTreeMap::new();
    let spots = match store {
        Some(st) => st.sweet_spots(None)?,
        None => vec![],
    };
    // The sweet spot the daemon keeps and retunes from ([`SweetSpotRow::supersedes`](crate::store::tunes::SweetSpotRow::supersedes)), so
    // that its due date here is the daemon's.
    for s in spots {
        if Match::from_identity(&s.identity).is_some()
            && latest
                .get(&s.identity)
                .is_none_or(|old| s.supersedes(old, &kernel))
        {
            latest.insert(s.identity.clone(), s);
        }
    }
    if let Enroll::Identities(ids) = &cfg.enroll {
        latest.retain(|i, _| ids.contains(i));
    }
    // Enrolled by name but never tuned: listed too, with no sweet spot.
    let mut rows: BTreeMap<String, Option<crate::store::tunes::SweetSpotRow>> =
        latest.into_iter().map(|(i, s)| (i, Some(s))).collect();
    for id in cfg.named() {
        rows.entry(id).or_insert(None);
    }
    let waits = st.as_ref().map(|v| v["waits"].clone());
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
    let mut devices = Vec::new();
    for (identity, spot) in rows {
        let dev = present
            .iter()
            .find(|d| d.identity == identity)
            .map(|d| d.name.clone());
        // A `running` tune whose process is gone was killed, as `history` says too.
        let last = match store {
            Some(st) => st.tunes(Some(&identity))?.into_iter().last().map(|mut t| {
                if t.status == "running" && !crate::tune::recover::alive(st.path(), root, &t) {
                    t.status = "killed".into();
                }
                t
            }),
            None => None,
        };
        let last_tune_id = last.as_ref().map(|t| t.id);
        let last_tune_status = last.as_ref().map(|t| t.status.to_string());
        let last_tune_at = last
            .as_ref()
            .map(|t| rfc3339(t.finished_at.unwrap_or(t.started_at)));
        let last_tune = last.as_ref().map(|t| {
            // A tune that resumed an interrupted one says how many of its trials it reused.
            let resumed = spot
                .as_ref()
                .filter(|s| s.tune_id == Some(t.id))
                .and_then(|s| {
                    serde_json::from_value::<crate::tune::resume::Resumed>(
                        s.evidence["resumed"].clone(),
                    )
                    .ok()
                })
                .map_or_else(String::new, |r| {
                    format!(
                        " (resumed tune #{}: {} trials, {} runs reused)",
                        r.from_tune, r.trials, r.runs
                    )
                });
            format!(
                "#{} {} {}{resumed}",
                t.id,
                t.status,
                rfc3339(t.finished_at.unwrap_or(t.started_at))
            )
        });
        let w = waits
            .as_ref()
            .filter(|_| running)
            .map(|v| v[identity.as_str()].clone())
            .filter(|v| v.is_object());
        let waiting = w
            .as_ref()
            .and_then(|v| v["kind"].as_str().map(String::from));
        let waiting_detail = w
            .as_ref()
            .and_then(|v| v["detail"].as_str().map(String::from));
        let tuning = waiting.as_deref() == Some("tuning");
        let Some(spot) = spot else {
            devices.push(DeviceStatus {
                identity,
                state: if dev.is_some() {
                    "never tuned".to_string()
                } else {
                    "never tuned, absent".to_string()
                },
                retune: if tuning {
                    "tuning now".to_string()
                } else if dev.is_some() {
                    "due now: never tuned".to_string()
                } else {
                    "due when it is present: never tuned".to_string()
                },
                device: dev,
                last_tune,
                last_tune_id,
                last_tune_status,
                last_tune_at,
                sweet_spot: "none yet".to_string(),
                sweet_spot_knobs: None,
                waiting,
                waiting_detail,
            });
            continue;
        };
        let knobs = changed(&spot);
        let sweet_spot = if knobs.is_empty() {
            "keep the default".to_string()
        } else {
            crate::types::setting_label(&knobs)
        };
        let managed_rows = |id: &str| -> Vec<serde_json::Value> {
            st.as_ref()
                .and_then(|v| v["managed"].as_array().cloned())
                .unwrap_or_default()
                .into_iter()
                .filter(|r| r["identity"] == id)
                .collect()
        };
        let rows = managed_rows(&identity);
        // Its host-wide knobs: the daemon manages them once for the host ([`manage::HOST`]).
        let host_knobs: Vec<&String> = knobs
            .iter()
            .filter(|(k, _)| crate::knob::catalogue::order_of(k).is_some_and(|o| o.is_host()))
            .filter(|(k, v)| built_host.as_ref().is_none_or(|h| h.get(*k) == Some(*v)))
            .map(|(k, _)| k)
            .collect();
        // What holds for this device: its own knobs, and the host-wide ones it still decides.
        let effective: crate::types::Setting = knobs
            .iter()
            .filter(|(k, _)| {
                !crate::knob::catalogue::order_of(k).is_some_and(|o| o.is_host())
                    || host_knobs.contains(k)
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let host_rows: Vec<serde_json::Value> = managed_rows(super::manage::HOST)
            .into_iter()
            .filter(|r| host_knobs.iter().any(|k| r["knob"] == k.as_str()))
            .collect();
        let unmanaged_host: Vec<&str> = host_knobs
            .iter()
            .filter(|k| !host_rows.iter().any(|r| r["knob"] == k.as_str()))
            .map(|k| k.as_str())
            .collect();
        let contested: Vec<String> = rows
            .iter()
            .chain(&host_rows)
            .filter(|r| !r["contested"].is_null())
            .map(|r| {
                format!(
                    "{} (another writer keeps {})",
                    r["knob"].as_str().unwrap_or("?"),
                    r["contested"]
                )
            })
            .collect();
        let released_at = |id: &str| {
            st.as_ref()
                .filter(|_| running)
                .and_then(|v| v["released"][id]["at"].as_i64())
        };
        let host_released = released_at(super::manage::HOST);
        let device_knobs = knobs
            .keys()
            .any(|k| !crate::knob::catalogue::order_of(k).is_some_and(|o| o.is_host()));
        // Only host-wide knobs, and `restore` put those back: the sweet spot is restored.
        let released = released_at(&identity).or(host_released.filter(|_| !device_knobs));
        let state = match (&dev, running, released) {
            (None, _, _) => "absent".to_string(),
            (Some(name), false, _) => format!(
                "not managed (the daemon is not running): {}",
                against_now(root, &present, name, &effective)
            ),
            (Some(_), true, Some(at)) => released_state(at),
            (Some(_), true, None) if !contested.is_empty() => {
                format!("contested: {}", contested.join(", "))
            }
            // A sweet spot with changes the daemon manages none of: not applied (yet).
            (Some(_), true, None)
                if rows.is_empty() && host_rows.is_empty() && !knobs.is_empty() =>
            {
                "not applied yet (the daemon has not applied its sweet spot)".to_string()
            }
            (Some(_), true, None) if !unmanaged_host.is_empty() => match host_released {
                Some(at) => format!(
                    "managed, but not its host-wide {}: restored by `sweetspot restore` at {}, \
                     not managed until the daemon restarts or reloads its config (SIGHUP)",
                    unmanaged_host.join(", "),
                    rfc3339(at)
                ),
                None => format!(
                    "managed, but not its host-wide {}: not applied yet",
                    unmanaged_host.join(", ")
                ),
            },
            (Some(_), true, None) => "managed".to_string(),
        };
        // When the daemon retunes it: [`super::retune::due`], as the daemon decides, or the
        // daemon's own later date when a failed retune backs off.
        let now = crate::store::now();
        let failed_until = w
            .as_ref()
            .filter(|v| v["kind"] == "failed")
            .and_then(|v| v["due_at"].as_i64())
            .filter(|&at| at > now);
        let when = match (
            super::retune::due(Some(&spot), &kernel, now, cfg),
            failed_until,
        ) {
            (Ok(_), Some(at)) => format!(
                "due {} (the last retune failed; every {})",
                rfc3339(at),
                cfg.interval_label()
            ),
            (Ok(_), None) if spot.kernel != kernel => format!(
                "due now: tuned on {}, running {kernel} (the sweet spot is stale)",
                spot.kernel
            ),
            (Ok(_), None) => format!(
                "due now (the interval elapsed at {}; every {})",
                rfc3339(super::retune::interval_due_at(&spot, cfg)),
                cfg.interval_label()
            ),
            (Err(at), _) => format!("due {} (every {})", rfc3339(at), cfg.interval_label()),
        };
        let retune = if tuning {
            "tuning now".to_string()
        } else if dev.is_none() {
            format!("{when}, when it is present")
        } else {
            when
        };
        // Values as `tune` and `history` print them: numbers for numeric knobs.
        let sweet_spot_knobs = Some(knobs.clone());
        devices.push(DeviceStatus {
            identity,
            device: dev,
            last_tune,
            last_tune_id,
            last_tune_status,
            last_tune_at,
            sweet_spot,
            sweet_spot_knobs,
            state,
            retune,
            waiting,
            waiting_detail,
        });
    }
    let killed_bench_knobs = match store {
        Some(st) => crate::tune::killed::killed_bench_knobs(st, root)?,
        None => vec![],
    };
    Ok(Status {
        version: JSON_VERSION,
        daemon_running: running,
        devices,
        killed_bench_knobs,
    })
}

/// The state of a device `sweetspot restore` put back at `at` (Unix s) while the daemon
/// managed it.
fn released_state(at: i64) -> String {
    format!(
        "restored by `sweetspot restore` at {}: not managed until the daemon restarts or \
         reloads its config (SIGHUP)",
        rfc3339(at)
    )
}

/// A knob the daemon manages: `(device, knob, expected)`.
pub type ManagedKnob = (String, String, String);

/// The running daemon's pid and the knobs it manages now, `(device, knob, expected)` (the
/// disk's kernel name), from its state file `state` ([`super::state_path`]); `None` when it
/// is not running. `sweetspot restore` says when the daemon will leave a disk alone.
pub fn running_daemon(state: &Path) -> Option<(i32, Vec<ManagedKnob>)> {
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

/// Whether disk `name` is at the sweet spot's `knobs` now (read from sysfs/procfs):
/// `at its sweet spot`, or each knob that differs, `<knob> is <now>, sweet spot <value>`.
fn against_now(
    root: &SysRoot,
    present: &[device::Device],
    name: &str,
    knobs: &crate::types::Setting,
) -> String {
    let now = present
        .iter()
        .find(|d| d.name == name)
        .and_then(|d| crate::knob::discover::knobs(root, d).ok())
        .unwrap_or_default();
    let off: Vec<String> = knobs
        .iter()
        .filter_map(|(k, want)| {
            let found = now.iter().find(|x| &x.name == k);
            // Judged as `verify` judges drift (a knob kept in jiffies rounded up to one).
            if found.is_some_and(|x| crate::knob::apply::knob_holds(x, want)) {
                return None;
            }
            let found = found.map_or_else(|| "absent".to_string(), |x| x.current.to_string());
            Some(format!("{k} is {found}, sweet spot {want}"))
        })
        .collect();
    if off.is_empty() {
        "at its sweet spot".to_string()
    } else {
        off.join("; ")
    }
}

/// The human table, for database `db` and roots `root` (named in the `restore` command of a
/// note on what a killed benchmark left open).
pub fn text(s: &Status, db: &Path, root: &SysRoot) -> String {
    let mut out = format!(
        "daemon: {}\n",
        if s.daemon_running {
            "running"
        } else {
            "not running"
        }
    );
    if let Some(n) = crate::tune::killed::note(&s.killed_bench_knobs, db, root) {
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
            d.state,
            d.retune,
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
mod tests {
    use super::*;
    use crate::testkit::tree::FakeTree;

    #[test]
    fn an_enrolled_device_never_tuned_is_listed_with_what_it_waits_for() {
        let t = FakeTree::new();
        t.mq_deadline_disk()
            .disk("sdb", "8:16", "none [mq-deadline]", 64);
        t.set("sda", "device/wwid", "naa.5000c500a1b2c3d4");
        t.set("sdb", "device/wwid", "naa.5000c500deadbeef");
        let store = Store::open(&t.dir.path().join("s.db")).unwrap();
        let sda = device::find(&t.root, "sda").unwrap().identity;
        let sdb = device::find(&t.root, "sdb").unwrap().identity;
        assert!(sda.starts_with("wwid:"), "{sda}");
        // Enrolled by identity (sda, present) and one that is not attached; sdb is not.
        let cfg = super::super::config::parse(
            &format!("enroll = [\"{sda}\", \"wwid:naa.gone\"]\n"),
            Path::new("d.toml"),
        )
        .unwrap();
        // The daemon's state (this process stands for it): sda waits for an idle window.
        let state = t.dir.path().join("s.db.daemon.json");
        std::fs::write(
            &state,
            serde_json::json!({"pid": std::process::id(), "managed": [], "waits": {
                sda.as_str(): {"device": "sda", "kind": "not idle",
                    "detail": "CPU busy 55% > 10%", "due_at": null}}})
            .to_string(),
        )
        .unwrap();
        let s = status(Some(&store), &t.root, &cfg, &state).unwrap();
        assert!(s.daemon_running);
        let ids: Vec<&str> = s.devices.iter().map(|d| d.identity.as_str()).collect();
        assert_eq!(ids, [sda.as_str(), "wwid:naa.gone"]);
        let a = &s.devices[0];
        assert_eq!(a.device.as_deref(), Some("sda"));
        assert_eq!(
            (
                a.state.as_str(),
                a.sweet_spot.as_str(),
                a.last_tune.as_deref()
            ),
            ("never tuned", "none yet", None)
        );
        assert_eq!(a.retune, "due now: never tuned");
        assert_eq!(a.waiting.as_deref(), Some("not idle"));
        assert!(
            a.waiting_detail
                .as_deref()
                .unwrap()
                .contains("CPU busy 55%")
        );
        assert_eq!(s.devices[1].state, "never tuned, absent");
        assert_eq!(s.devices[1].retune, "due when it is present: never tuned");
        assert_eq!(s.devices[1].waiting, None);
        let txt = text(&s, store.path(), &t.root);
        assert!(txt.contains("state:      never tuned\n"), "{txt}");
        assert!(
            txt.contains("waiting:    not idle: CPU busy 55% > 10%\n"),
            "{txt}"
        );
        assert!(txt.contains("retune:     due now: never tuned\n"), "{txt}");

        // `enroll = "tuned"` lists a device [policy] names by identity, not a class.
        let cfg = super::super::config::parse(
            &format!("[policy]\n\"{sdb}\" = \"quick\"\nssd = \"quick\"\n"),
            Path::new("d.toml"),
        )
        .unwrap();
        let s = status(Some(&store), &t.root, &cfg, &state).unwrap();
        let ids: Vec<&str> = s.devices.iter().map(|d| d.identity.as_str()).collect();
        assert_eq!(ids, [sdb.as_str()]);
        assert_eq!(s.devices[0].state, "never tuned");
        // Nothing from the daemon about sdb yet; the daemon takes it as enrolled.
        assert_eq!(s.devices[0].waiting, None);
        let on = super::super::plan::enrolled(&t.root, &cfg, &Default::default()).unwrap();
        let names: Vec<&str> = on.iter().map(|(d, _)| d.name.as_str()).collect();
        assert_eq!(names, ["sdb"]);
    }

    /// "At its sweet spot" is judged as `verify` judges drift: a knob the kernel keeps in
    /// jiffies (mq-deadline `read_expire`) may read back rounded up to one, bfq's ns-based
    /// `slice_idle` must read back exactly.
    #[test]
    fn at_its_sweet_spot_agrees_with_verify() {
        let t = FakeTree::new();
        t.mq_deadline_disk().bfq_disk();
        t.set("sda", "queue/iosched/read_expire", "12")
            .set("sdb", "queue/iosched/slice_idle", "8");
        let present = device::list(&t.root).unwrap();
        let knobs =
            |k: &str, v: i64| -> crate::types::Setting { [(k.to_string(), v.into())].into() };
        assert_eq!(
            against_now(&t.root, &present, "sda", &knobs("read_expire", 10)),
            "at its sweet spot"
        );
        assert_eq!(
            against_now(&t.root, &present, "sda", &knobs("read_expire", 16)),
            "read_expire is 12, sweet spot 16"
        );
        assert_eq!(
            against_now(&t.root, &present, "sdb", &knobs("slice_idle", 0)),
            "slice_idle is 8, sweet spot 0"
        );
    }

    /// Stores a sweet spot `read_ahead_kb = 256` (default 128) for `identity`, tune #1 done.
    fn spot(store: &Store, identity: &str) {
        use crate::types::{Setting, TargetInfo};
        let target = TargetInfo {
            label: "sda".into(),
            identity: identity.into(),
            kernel: device::kernel_release(),
        };
        let set = |v: i64| -> Setting { [("read_ahead_kb".to_string(), v.into())].into() };
        let tune = store.insert_tune(&target, Some("sda"), "quick").unwrap();
        store
            .insert_sweet_spot(
                &target,
                "quick",
                Some(tune),
                &set(256),
                &set(128),
                true,
                &serde_json::json!({}),
            )
            .unwrap();
        store.finish_tune(tune, "done").unwrap();
    }

    #[test]
    fn each_field_of_a_tuned_device_says_one_thing() {
        let t = FakeTree::new();
        t.mq_deadline_disk();
        t.set("sda", "device/wwid", "naa.5000c500a1b2c3d4");
        let store = Store::open(&t.dir.path().join("s.db")).unwrap();
        let sda = device::find(&t.root, "sda").unwrap().identity;
        spot(&store, &sda);
        spot(&store, "wwid:naa.gone");
        let cfg = Config::default();
        let state = t.dir.path().join("s.db.daemon.json");
        let write = |managed: serde_json::Value, waits: serde_json::Value| {
            std::fs::write(
                &state,
                serde_json::json!({"pid": std::process::id(), "managed": managed,
                    "waits": waits})
                .to_string(),
            )
            .unwrap();
        };

        // The daemon is stopped: not managed, and whether the disk is at its sweet spot now.
        let s = status(Some(&store), &t.root, &cfg, &state).unwrap();
        assert!(!s.daemon_running);
        let (a, gone) = (&s.devices[0], &s.devices[1]);
        assert_eq!(a.identity, sda);
        assert_eq!(
            a.state,
            "not managed (the daemon is not running): read_ahead_kb is 128, sweet spot 256"
        );
        assert!(
            a.retune.starts_with("due 20") && a.retune.ends_with("(every 7 days)"),
            "{}",
            a.retune
        );
        // Eight days later the interval has elapsed: due now, not due at a past date.
        store
            .conn()
            .execute(
                "UPDATE sweet_spots SET created_at = created_at - 8 * 86400",
                [],
            )
            .unwrap();
        let created: i64 = store
            .conn()
            .query_row("SELECT MIN(created_at) FROM sweet_spots", [], |r| r.get(0))
            .unwrap();
        let late = status(Some(&store), &t.root, &cfg, &state).unwrap();
        assert_eq!(
            late.devices[0].retune,
            format!(
                "due now (the interval elapsed at {}; every 7 days)",
                crate::profile::build::rfc3339(created + 7 * 86400)
            )
        );
        // An absent device: the same words, then when it is retuned (no nested brackets).
        let gone_at: i64 = store
            .conn()
            .query_row(
                "SELECT created_at FROM sweet_spots WHERE identity = 'wwid:naa.gone'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(
            late.devices[1].retune,
            format!(
                "due now (the interval elapsed at {}; every 7 days), when it is present",
                crate::profile::build::rfc3339(gone_at + 7 * 86400)
            )
        );
        store
            .conn()
            .execute(
                "UPDATE sweet_spots SET created_at = created_at + 8 * 86400",
                [],
            )
            .unwrap();
        assert_eq!(
            (a.last_tune_id, a.last_tune_status.as_deref()),
            (Some(1), Some("done"))
        );
        // A tune left `running` by a process that is gone (here: no lock held) reads `killed`,
        // in `last_tune` too, as `history` says; the database row is not changed.
        let target = crate::types::TargetInfo {
            label: "sda".into(),
            identity: sda.clone(),
            kernel: device::kernel_release(),
        };
        let dead = store.insert_tune(&target, Some("sda"), "quick").unwrap();
        let k = status(Some(&store), &t.root, &cfg, &state).unwrap();
        assert_eq!(
            (
                k.devices[0].last_tune_id,
                k.devices[0].last_tune_status.as_deref()
            ),
            (Some(dead), Some("killed"))
        );
        let line = k.devices[0].last_tune.as_deref().unwrap();
        assert!(line.starts_with(&format!("#{dead} killed ")), "{line}");
        assert_eq!(store.running_tunes().unwrap().len(), 1);
        store.finish_tune(dead, "interrupted").unwrap();
        assert!(
            a.last_tune_at
                .as_deref()
                .is_some_and(|x| x.starts_with("20"))
        );
        let knobs = a.sweet_spot_knobs.as_ref().unwrap();
        assert_eq!(
            knobs.get("read_ahead_kb"),
            Some(&crate::types::KnobValue::Int(256))
        );
        // A number, as `tune --json` and `history --json` print a numeric knob.
        let json = serde_json::to_value(a).unwrap();
        assert_eq!(
            json["sweet_spot_knobs"],
            serde_json::json!({"read_ahead_kb": 256})
        );
        assert_eq!(json["sweet_spot"], "read_ahead_kb=256");
        assert_eq!(gone.state, "absent");
        assert!(
            gone.retune.starts_with("due 20")
                && gone.retune.ends_with(" (every 7 days), when it is present"),
            "{}",
            gone.retune
        );
        t.set("sda", "queue/read_ahead_kb", "256");
        let s = status(Some(&store), &t.root, &cfg, &state).unwrap();
        assert_eq!(
            s.devices[0].state,
            "not managed (the daemon is not running): at its sweet spot"
        );

        // Running, but the daemon manages none of its knobs: not called managed.
        write(serde_json::json!([]), serde_json::json!({}));
        let s = status(Some(&store), &t.root, &cfg, &state).unwrap();
        assert!(s.daemon_running);
        assert_eq!(
            s.devices[0].state,
            "not applied yet (the daemon has not applied its sweet spot)"
        );
        // Managed, and a retune in progress: `tuning now`, not `due`.
        write(
            serde_json::json!([{"identity": sda, "knob": "read_ahead_kb", "device": "sda",
                "expected": "256", "contested": null}]),
            serde_json::json!({sda.as_str(): {"device": "sda", "kind": "tuning",
                "detail": "retuning with policy quick (the retune interval (7 days) elapsed)",
                "due_at": null}}),
        );
        let s = status(Some(&store), &t.root, &cfg, &state).unwrap();
        assert_eq!(s.devices[0].state, "managed");
        assert_eq!(s.devices[0].retune, "tuning now");
        assert_eq!(s.devices[0].waiting.as_deref(), Some("tuning"));
    }

    /// `status` and the daemon name one due date. sda was tuned on the running kernel, then
    /// on another (booted once): the daemon keeps the running kernel's sweet spot and waits
    /// for its interval, `status` took the newer row and said `due now: tuned on …` beside
    /// the daemon's `interval: next retune due after <date>`. And a failed retune's back-off
    /// is the due date, not `due now`.
    #[test]
    fn the_retune_line_names_the_daemons_due_date() {
        let t = FakeTree::new();
        t.mq_deadline_disk();
        t.set("sda", "device/wwid", "naa.5000c500a1b2c3d4");
        let store = Store::open(&t.dir.path().join("s.db")).unwrap();
        let sda = device::find(&t.root, "sda").unwrap().identity;
        spot(&store, &sda);
        let other = crate::types::TargetInfo {
            label: "sda".into(),
            identity: sda.clone(),
            kernel: "2.6.0-another".into(),
        };
        let set =
            |v: i64| -> crate::types::Setting { [("read_ahead_kb".to_string(), v.into())].into() };
        store
            .insert_sweet_spot(
                &other,
                "quick",
                None,
                &set(512),
                &set(128),
                true,
                &serde_json::json!({}),
            )
            .unwrap();
        // The running kernel's sweet spot is a day old: due in six days.
        store
            .conn()
            .execute(
                "UPDATE sweet_spots SET created_at = created_at - 86400 WHERE kernel != ?1",
                ["2.6.0-another"],
            )
            .unwrap();
        let cfg = Config::default();
        let spots = super::super::plan::latest_spots(&store).unwrap();
        let kept = &spots[&sda];
        assert_eq!(kept.kernel, device::kernel_release());
        let now = crate::store::now();
        let at = super::super::retune::due(Some(kept), &kept.kernel, now, &cfg).unwrap_err();
        assert_eq!(at, kept.created_at + 7 * 86400);
        let state = t.dir.path().join("s.db.daemon.json");
        let s = status(Some(&store), &t.root, &cfg, &state).unwrap();
        assert_eq!(s.devices.len(), 1);
        assert_eq!(s.devices[0].sweet_spot, "read_ahead_kb=256");
        assert_eq!(
            s.devices[0].retune,
            format!("due {} (every 7 days)", rfc3339(at))
        );
        // Eight days on the interval has elapsed, but the last retune failed: the daemon
        // tries again after its back-off, and that is the due date.
        store
            .conn()
            .execute(
                "UPDATE sweet_spots SET created_at = created_at - 7 * 86400",
                [],
            )
            .unwrap();
        let until = now + 3600;
        std::fs::write(
            &state,
            serde_json::json!({"pid": std::process::id(), "managed": [], "released": {},
                "waits": {sda.as_str(): {"device": "sda", "kind": "failed",
                "detail": "the last retune failed; next try after x", "due_at": until}}})
            .to_string(),
        )
        .unwrap();
        let s = status(Some(&store), &t.root, &cfg, &state).unwrap();
        assert_eq!(
            s.devices[0].retune,
            format!(
                "due {} (the last retune failed; every 7 days)",
                rfc3339(until)
            )
        );
        assert_eq!(s.devices[0].waiting.as_deref(), Some("failed"));
    }

    /// A sweet spot with a host-wide knob is `managed` only when the daemon manages that
    /// knob too (once, for the host); otherwise `status` says which and why.
    #[test]
    fn a_sweet_spots_host_wide_knob_counts_in_its_state() {
        use crate::types::{Setting, TargetInfo};
        let t = FakeTree::new();
        t.mq_deadline_disk();
        t.set("sda", "device/wwid", "naa.5000c500a1b2c3d4");
        let store = Store::open(&t.dir.path().join("s.db")).unwrap();
        let sda = device::find(&t.root, "sda").unwrap().identity;
        let target = TargetInfo {
            label: "sda".into(),
            identity: sda.clone(),
            kernel: device::kernel_release(),
        };
        let set = |ra: i64, dr: i64| -> Setting {
            [
                ("read_ahead_kb".to_string(), ra.into()),
                ("dirty_ratio".to_string(), dr.into()),
            ]
            .into()
        };
        store
            .insert_sweet_spot(
                &target,
                "quick",
                None,
                &set(256, 10),
                &set(128, 20),
                true,
                &serde_json::json!({}),
            )
            .unwrap();
        let state = t.dir.path().join("s.db.daemon.json");
        let row = |id: &str, dev: &str, knob: &str, v: &str| {
            serde_json::json!({"identity": id, "knob": knob, "device": dev, "expected": v,
                "contested": null})
        };
        let disk = row(&sda, "sda", "read_ahead_kb", "256");
        let host = row("host", "host-wide", "dirty_ratio", "10");
        let state_of = |managed: serde_json::Value, released: serde_json::Value| {
            std::fs::write(
                &state,
                serde_json::json!({"pid": std::process::id(), "managed": managed,
                    "waits": {}, "released": released})
                .to_string(),
            )
            .unwrap();
            status(Some(&store), &t.root, &Config::default(), &state)
                .unwrap()
                .devices[0]
                .state
                .clone()
        };
        assert_eq!(
            state_of(serde_json::json!([disk, host]), serde_json::json!({})),
            "managed"
        );
        assert_eq!(
            state_of(serde_json::json!([disk]), serde_json::json!({})),
            "managed, but not its host-wide dirty_ratio: not applied yet"
        );
        let released = state_of(
            serde_json::json!([disk]),
            serde_json::json!({"host": {"device": "host-wide", "at": 0}}),
        );
        assert_eq!(
            released,
            "managed, but not its host-wide dirty_ratio: restored by `sweetspot restore` at \
             1970-01-01T00:00:00Z, not managed until the daemon restarts or reloads its config \
             (SIGHUP)"
        );
        let mut contested = host.clone();
        contested["contested"] = serde_json::json!("30");
        assert_eq!(
            state_of(serde_json::json!([disk, contested]), serde_json::json!({})),
            "contested: dirty_ratio (another writer keeps \"30\")"
        );
        // The host's own later tune keeps dirty_ratio at 20: the daemon's `[host]` has no
        // dirty_ratio, so sda's 10 is superseded, not "not applied yet".
        let host_target = TargetInfo {
            label: "host".into(),
            identity: crate::bench::userbed::host_identity(&t.root),
            kernel: device::kernel_release(),
        };
        let kept: Setting = [("dirty_ratio".to_string(), 20.into())].into();
        store
            .insert_sweet_spot(
                &host_target,
                "host",
                None,
                &kept,
                &kept,
                true,
                &serde_json::json!({}),
            )
            .unwrap();
        assert_eq!(
            state_of(serde_json::json!([disk]), serde_json::json!({})),
            "managed"
        );
        // The daemon stopped: sda is judged by its own knobs and the host-wide ones it still
        // decides (none: the host's tune keeps dirty_ratio), not by its superseded 10.
        std::fs::remove_file(&state).unwrap();
        let st = status(Some(&store), &t.root, &Config::default(), &state).unwrap();
        assert_eq!(
            st.devices[0].state,
            "not managed (the daemon is not running): read_ahead_kb is 128, sweet spot 256"
        );
    }
}
