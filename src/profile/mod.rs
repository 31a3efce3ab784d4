//! Profiles: sweet spots exported so they outlive a reboot, keyed by stable device identity,
//! never by a kernel name like `sdb` that may swap on the next boot.
//!
//! - [`model`]: the profile itself, sweetspot's own versioned TOML (docs/DESIGN.md
//!   "Profiles"): `version`, `[[device]]` entries with `match`, `kernel`, `policy`,
//!   `tuned_at`, `improvement`, `knobs` and `baseline`, and a `[host]` table for host-wide knobs
//!   (with the same provenance fields when the host's own sweet spot, `tune --host`, is in it).
//! - [`build`]: the profile of the sweet spots in the database (the latest per identity,
//!   kernel and policy), carrying only the knobs a sweet spot changed from its baseline, and
//!   the scheduler its iosched knobs exist under;
//!   [`fleet`] merges `--match model` entries of one model that set the same knobs;
//!   [`host_knobs`] gathers the host-wide ones, the host's own sweet spot deciding those it
//!   tuned.
//! - [`facts`]: what a `match` is compared with on a present disk, read once per disk.
//! - [`overlap`]: of the entries matching one disk, the narrowest applies (one disk over
//!   model and firmware over model alone); equally narrow ones are refused.
//! - One file per output format: [`udev`] (rules, no sweetspot binary needed at boot),
//!   [`sysctl`] (`sysctl.d`, the host knobs only), [`tuned`] (a TuneD profile directory, host
//!   knobs in `[sysctl]`). udev rules cannot set sysctls: they name the host knobs in a comment.
//!   The TOML is [`toml_text`] (`Profile::to_toml`). [`mod@format`] puts the four behind one
//!   trait, which `profile export` uses.

pub mod apply;
pub mod build;
pub mod escape;
pub mod facts;
pub mod file;
pub mod fleet;
pub mod format;
pub mod host_knobs;
pub mod model;
pub mod overlap;
pub mod rollback;
pub mod sysctl;
pub mod toml_text;
pub mod tuned;
pub mod udev;
pub mod verify;

pub(crate) use model::{DeviceEntry, Host, Match, Profile};

use crate::knob::catalogue;
use crate::types::{ApplyOrder, Setting};

/// One comment line on where an entry comes from (and, for an entry several disks of one
/// model share, which other sweet spots set the same knobs).
pub(crate) fn describe(d: &DeviceEntry) -> String {
    let also = if d.also.is_empty() {
        String::new()
    } else {
        format!(
            "; the sweet spots of {} set the same knobs",
            d.also.join(", ")
        )
    };
    format!(
        "{} when tuned: kernel {}, policy {}, {}: {}{also}",
        d.name,
        d.kernel,
        d.policy,
        d.tuned_at,
        evidence(d.improvement.as_ref())
    )
}

/// One comment line on where the host's own sweet spot comes from (`host (vm) when tuned:
/// …`); `None` when `[host]` only gathers host-wide knobs of device tunes.
pub(crate) fn describe_host(h: &Host) -> Option<String> {
    let at = h.tuned_at.as_deref()?;
    let or_dash = |s: &Option<String>| s.clone().unwrap_or_else(|| "-".into());
    Some(format!(
        "host ({}) when tuned: kernel {}, policy {}, {at}: {}",
        or_dash(&h.name),
        or_dash(&h.kernel),
        or_dash(&h.policy),
        evidence(h.improvement.as_ref())
    ))
}

fn evidence(i: Option<&model::ProfileImprovement>) -> String {
    i.map_or_else(
        || "kept the default".to_string(),
        |i| {
            format!(
                "{} {:.2}× better (95% CI {:.2}–{:.2}, {} runs)",
                i.objective, i.ratio, i.ci95[0], i.ci95[1], i.runs
            )
        },
    )
}

/// The knobs in the kernel's apply order (scheduler → nr_requests → iosched/* → queue/*),
/// names within one order alphabetically.
pub(crate) fn in_apply_order(knobs: &Setting) -> Vec<(String, String)> {
    let mut v: Vec<(ApplyOrder, String, String)> = knobs
        .iter()
        .map(|(k, val)| {
            let order = catalogue::order_of(k).unwrap_or(ApplyOrder::Iosched);
            (order, k.clone(), val.to_string())
        })
        .collect();
    v.sort();
    v.into_iter().map(|(_, k, val)| (k, val)).collect()
}

/// The knob's file under the disk's sysfs directory: `queue/scheduler`, `queue/nr_requests`,
/// `queue/iosched/<name>` or `queue/<name>`.
pub(crate) fn attr_path(knob: &str) -> String {
    match catalogue::order_of(knob) {
        Some(ApplyOrder::Scheduler) => "queue/scheduler".into(),
        Some(ApplyOrder::Queue | ApplyOrder::NrRequests) => format!("queue/{knob}"),
        _ => format!("queue/iosched/{knob}"),
    }
}

#[cfg(test)]
mod apply_tests;
#[cfg(test)]
mod scale_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_escape;
#[cfg(test)]
mod tests_vet;
