//! `sweetspot status`: per enrolled device, its last tune, its sweet spot, whether the daemon
//! keeps it there (managed, or contested by another writer), and when a retune is due and why.
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

/// The `status --json` format's version.
pub const JSON_VERSION: u32 = 1;

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
    let text = serde_json::json!({ "pid": std::process::id(), "managed": rows, "waits": waits })
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
    /// The sweet spot's knob changes (`knob=value`), `keep the default`, or `none yet`.
    pub sweet_spot: String,
    /// `managed`, `contested: <knob> (another writer keeps <value>)`, `absent`, `daemon not
    /// running`, or `never tuned` (enrolled by name, no sweet spot yet; `never tuned, absent`).
    pub state: String,
    /// When the next retune is due (RFC 3339), and why: interval, or a kernel change now.
    pub retune: String,
    /// What the daemon waits for before it retunes this device (its latest poll): `tuning`,
    /// `not idle`, `quiet hours`, `interval`, `contested`, `busy`, `failed`, `no filesystem`;
    /// `None` when the daemon is not running.
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
}

/// Builds the status from the database, sysfs and the daemon's state file.
pub fn status(store: &Store, root: &SysRoot, cfg: &Config, state: &Path) -> Result<Status> {
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
    for s in store.sweet_spots(None)? {
        if Match::from_identity(&s.identity).is_some() {
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
    let interval_s = cfg.interval_s().ceil() as i64;
    let waits = st.as_ref().map(|v| v["waits"].clone());
    let mut devices = Vec::new();
    for (identity, spot) in rows {
        let dev = present
            .iter()
            .find(|d| d.identity == identity)
            .map(|d| d.name.clone());
        let last = store.tunes(Some(&identity))?.into_iter().last();
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
        let Some(spot) = spot else {
            devices.push(DeviceStatus {
                identity,
                state: if dev.is_some() {
                    "never tuned".to_string()
                } else {
                    "never tuned, absent".to_string()
                },
                device: dev,
                last_tune,
                sweet_spot: "none yet".to_string(),
                retune: "due now: never tuned (once the daemon sees an idle window)".to_string(),
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
        let contested: Vec<String> = st
            .as_ref()
            .and_then(|v| v["managed"].as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r["identity"] == identity.as_str() && !r["contested"].is_null())
            .map(|r| {
                format!(
                    "{} (another writer keeps {})",
                    r["knob"].as_str().unwrap_or("?"),
                    r["contested"]
                )
            })
            .collect();
        let state = match (&dev, running) {
            (None, _) => "absent".to_string(),
            (Some(_), false) => "daemon not running".to_string(),
            (Some(_), true) if !contested.is_empty() => {
                format!("contested: {}", contested.join(", "))
            }
            (Some(_), true) => "managed".to_string(),
        };
        let retune = if spot.kernel != kernel {
            format!(
                "due now: tuned on {}, running {kernel} (the sweet spot is stale)",
                spot.kernel
            )
        } else {
            let due = spot.created_at + interval_s;
            format!("due {} (every {})", rfc3339(due), cfg.interval_label())
        };
        devices.push(DeviceStatus {
            identity,
            device: dev,
            last_tune,
            sweet_spot,
            state,
            retune,
            waiting,
            waiting_detail,
        });
    }
    Ok(Status {
        version: JSON_VERSION,
        daemon_running: running,
        devices,
    })
}

/// The human table.
pub fn text(s: &Status) -> String {
    let mut out = format!(
        "daemon: {}\n",
        if s.daemon_running {
            "running"
        } else {
            "not running"
        }
    );
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
                    "detail": "never tuned; not idle: CPU busy 55% > 10%", "due_at": null}}})
            .to_string(),
        )
        .unwrap();
        let s = status(&store, &t.root, &cfg, &state).unwrap();
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
        assert!(a.retune.starts_with("due now: never tuned"), "{}", a.retune);
        assert_eq!(a.waiting.as_deref(), Some("not idle"));
        assert!(
            a.waiting_detail
                .as_deref()
                .unwrap()
                .contains("CPU busy 55%")
        );
        assert_eq!(s.devices[1].state, "never tuned, absent");
        assert_eq!(s.devices[1].waiting, None);
        let txt = text(&s);
        assert!(txt.contains("state:      never tuned\n"), "{txt}");
        assert!(
            txt.contains("waiting:    not idle: never tuned; not idle: CPU busy 55%"),
            "{txt}"
        );

        // `enroll = "tuned"` lists a device [policy] names by identity, not a class.
        let cfg = super::super::config::parse(
            &format!("[policy]\n\"{sdb}\" = \"quick\"\nssd = \"quick\"\n"),
            Path::new("d.toml"),
        )
        .unwrap();
        let s = status(&store, &t.root, &cfg, &state).unwrap();
        let ids: Vec<&str> = s.devices.iter().map(|d| d.identity.as_str()).collect();
        assert_eq!(ids, [sdb.as_str()]);
        assert_eq!(s.devices[0].state, "never tuned");
        // Nothing from the daemon about sdb yet; the daemon takes it as enrolled.
        assert_eq!(s.devices[0].waiting, None);
        let on = super::super::plan::enrolled(&t.root, &cfg, &Default::default()).unwrap();
        let names: Vec<&str> = on.iter().map(|(d, _)| d.name.as_str()).collect();
        assert_eq!(names, ["sdb"]);
    }
}
