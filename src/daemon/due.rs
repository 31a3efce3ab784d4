//! Per poll, for each enrolled device present: is it due for a retune, and if so what it
//! waits for (quiet hours, idleness, a contested knob, another writer, an earlier failure).
//! `status` shows the answer (`Wait`).

use super::config::{DaemonConfig, Enroll, quiet_window};
use super::idle::Tracker;
use super::retune::{due, in_window, local_minutes};
use crate::Result;
use crate::device::{self, Device};
use crate::store::Store;
use crate::store::tunes::SweetSpotRow;
use crate::sysroot::SysRoot;
use serde::Serialize;
use std::collections::BTreeMap;

/// What an enrolled device waits for, as `status` shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Wait {
    /// The disk's kernel name.
    pub device: String,
    /// `tuning`, `not idle`, `quiet hours`, `interval`, `contested` (a knob another writer
    /// keeps, or another owner's change of its knobs journaled and not restored:
    /// [`super::retune::journaled`]), `busy`, `failed`, `no filesystem`, `restored`
    /// (`sweetspot restore` put it back: left alone until the daemon restarts or reloads),
    /// `kept` (its sweet spot's policy is one a retune cannot run: [`super::retune::policy_of`]),
    /// `write budget` (a retune would take a flash device's writes over its budget:
    /// [`super::write_budget`]), or `due` (it starts at this poll).
    pub kind: &'static str,
    /// In words: the criterion over its threshold, the window, the due time, the holder; for
    /// `due` (and a started retune) why it is due. The reason a retune is due is not repeated
    /// here for the other kinds: `status` shows it under `retune`.
    pub detail: String,
    /// When the next retune is due (Unix s); `None` when due now.
    pub due_at: Option<i64>,
}

/// Each device's ruling sweet spot by identity
/// ([`crate::store::tunes::SweetSpotRow::rules_over`]).
pub(crate) type Spots = BTreeMap<String, SweetSpotRow>;

/// [`Spots`] from the database: the sweet spot that rules each device
/// ([`crate::store::tunes::ruling`], with the policy `cfg` names for it).
pub(crate) fn latest_spots(store: &Store, cfg: &DaemonConfig) -> Result<Spots> {
    let kernel = device::kernel_release();
    let mut spots = crate::store::tunes::ruling(store.sweet_spots(None)?, &kernel, &|id| {
        cfg.ruling_policy(id)
    });
    // Of the evidence (a whole report) only the improvement is kept, which
    // [`SweetSpotRow::describe`] and the metrics name.
    for s in spots.values_mut() {
        let imp = s.evidence["objective"]["improvement"].take();
        s.evidence = serde_json::json!({"objective": {"improvement": imp}});
    }
    Ok(spots)
}

/// The enrolled devices present now with their latest sweet spot: `enroll = "tuned"` takes
/// every device with a sweet spot and those `[policy]` names by identity, a list of
/// identities takes those (tuned or not) ([`DaemonConfig::named`]).
pub(crate) fn enrolled(
    root: &SysRoot,
    cfg: &DaemonConfig,
    spots: &Spots,
) -> Result<Vec<(Device, Option<SweetSpotRow>)>> {
    Ok(enrolled_of(device::list(root)?, cfg, spots))
}

/// [`enrolled`] among the disks `present` (the daemon's last listing).
pub(crate) fn enrolled_of(
    present: Vec<Device>,
    cfg: &DaemonConfig,
    spots: &Spots,
) -> Vec<(Device, Option<SweetSpotRow>)> {
    let mut out = Vec::new();
    let named = cfg.named();
    for d in present {
        let spot = spots.get(&d.identity).cloned();
        let on = match &cfg.enroll {
            Enroll::Tuned(_) => spot.is_some() || named.contains(&d.identity),
            Enroll::Identities(ids) => ids.contains(&d.identity),
        };
        if on {
            out.push((d, spot));
        }
    }
    out
}

/// A device whose retune failed waits this long (or the interval when shorter) before the
/// next try, s.
pub(crate) const FAILED_BACKOFF_S: i64 = 3600;

/// What `dev` waits for at `now` (Unix s); `kind == "due"` when a retune may start now.
/// `contested` are its contested knobs; `failed_until` an earlier failure's back-off.
pub(crate) fn wait_of(
    dev: &Device,
    spot: Option<&SweetSpotRow>,
    cfg: &DaemonConfig,
    idle: &Tracker,
    contested: &[String],
    failed_until: Option<i64>,
    now: i64,
) -> Wait {
    let w = |kind, detail: String, due_at| Wait {
        device: dev.name.clone(),
        kind,
        detail,
        due_at,
    };
    if !contested.is_empty() {
        return w(
            "contested",
            format!(
                "{}; not retuned while another writer changes it",
                contested.join(", ")
            ),
            None,
        );
    }
    let why = match due(spot, &device::kernel_release(), now, cfg) {
        Ok(why) => why,
        Err(at) => {
            return w(
                "interval",
                format!(
                    "next retune due after {} (every {})",
                    crate::types::time::rfc3339(at),
                    cfg.interval_label()
                ),
                Some(at),
            );
        }
    };
    if let Err(why) = super::retune::policy_of(cfg, dev, spot) {
        return w("kept", why, None);
    }
    if let Some(until) = failed_until.filter(|&u| u > now) {
        return w(
            "failed",
            format!(
                "the last retune failed; next try after {}",
                crate::types::time::rfc3339(until)
            ),
            Some(until),
        );
    }
    if let Some(q) = cfg.quiet_hours.as_deref()
        && let Some(win) = quiet_window(q)
        && in_window(local_minutes(), win)
    {
        return w("quiet hours", format!("{q} (local time)"), None);
    }
    if !dev.mounts.iter().any(|m| m.writable) {
        return w(
            "no filesystem",
            "it has no writable mounted filesystem for the loads".to_string(),
            None,
        );
    }
    if let Err(e) = idle.idle_for(&dev.name, &cfg.idle) {
        return w("not idle", e.to_string(), None);
    }
    w("due", why, None)
}
