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
    /// The last tune: `#id status date`.
    pub last_tune: Option<String>,
    /// The sweet spot's knob changes (`knob=value`), or `keep the default`.
    pub sweet_spot: String,
    /// `managed`, `contested: <knob> (another writer keeps <value>)`, `absent`, or `daemon not running`.
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
    let interval_s = cfg.interval_s().ceil() as i64;
    let waits = st.as_ref().map(|v| v["waits"].clone());
    let mut devices = Vec::new();
    for (identity, spot) in latest {
        let dev = present
            .iter()
            .find(|d| d.identity == identity)
            .map(|d| d.name.clone());
        let last_tune = store.tunes(Some(&identity))?.into_iter().last().map(|t| {
            format!(
                "#{} {} {}",
                t.id,
                t.status,
                rfc3339(t.finished_at.unwrap_or(t.started_at))
            )
        });
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
