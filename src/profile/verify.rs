//! `verify`: the profile's expected values against what the present disks and host have now,
//! per device and knob (as saptune's `verify` does). Drift is any knob whose value differs or
//! that does not exist now (its scheduler is not active); an entry whose disk is absent is
//! reported, not counted as drift. A disk several entries match is checked against the one
//! that applies to it ([`super::overlap`]), and the table ends with a line naming them.

use super::model::Profile;
use super::overlap::{Overlap, resolve};
use crate::Result;
use crate::device;
use crate::knob::apply::knob_holds;
use crate::knob::{Knob, discover};
use crate::sysroot::SysRoot;
use crate::types::KnobValue;
use serde::Serialize;

/// One row: device / knob / expected / actual / status.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The present disk (kernel name), `host`, or the entry's name when absent.
    pub device: String,
    /// Knob name (`-` for an absent disk).
    pub knob: String,
    /// The profile's value (in JSON a number for a numeric knob, as `tune --json` has it).
    #[serde(serialize_with = "crate::types::setting::serialize_printed")]
    pub expected: String,
    /// The value now (`None`: the knob or disk does not exist now).
    #[serde(serialize_with = "crate::types::setting::serialize_printed_opt")]
    pub actual: Option<String>,
    /// `ok`, `drift`, `missing` (the knob does not exist now) or `absent` (no disk matches).
    pub status: &'static str,
}

/// The whole verification, as `verify --json` prints it (after its `version`,
/// [`crate::output::json::VERSION`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verification {
    /// True when no row is `drift` or `missing`.
    pub clean: bool,
    /// Every row.
    pub rows: Vec<Row>,
    /// The present disks several entries match, and which one applies (the narrowest; only
    /// its knobs are in `rows`).
    pub overlaps: Vec<Overlap>,
}

/// Compares `profile` with `root` now. Errors: those of `resolve` (two entries equally
/// narrow on one disk, exit 2) and of reading sysfs.
pub fn verify(root: &SysRoot, profile: &Profile) -> Result<Verification> {
    let present = device::list(root)?;
    let mut rows = Vec::new();
    // Judged as the write path judges "honoured" (a knob kept in jiffies rounded up to one).
    let row = |device: &str, knob: &str, want: &KnobValue, found: Option<&Knob>| {
        let expected = want.to_string();
        let actual = found.map(|k| k.current.to_string());
        let status = match &actual {
            None => "missing",
            Some(_) if found.is_some_and(|k| knob_holds(k, want)) => "ok",
            Some(_) => "drift",
        };
        Row {
            device: device.to_string(),
            knob: knob.to_string(),
            expected,
            actual,
            status,
        }
    };
    let resolved = resolve(root, &present, profile, None)?;
    // The disks each entry applies to, in the order of `targets` (one pass, not one per entry).
    let mut disks: Vec<Vec<&device::Device>> = vec![Vec::new(); profile.devices.len()];
    for (i, dev) in &resolved.targets {
        disks[*i].push(dev);
    }
    for (i, d) in profile.devices.iter().enumerate() {
        if d.knobs.is_empty() {
            continue;
        }
        if !resolved.matched[i] {
            rows.push(Row {
                device: d.name.clone(),
                knob: "-".into(),
                expected: "-".into(),
                actual: None,
                status: "absent",
            });
        }
        for dev in &disks[i] {
            let knobs = discover::knobs(root, dev)?;
            for (k, v) in &d.knobs {
                rows.push(row(&dev.name, k, v, knobs.iter().find(|x| &x.name == k)));
            }
        }
    }
    if let Some(h) = &profile.host {
        let vm = discover::host_knobs(root);
        for (k, v) in &h.knobs {
            rows.push(row("host", k, v, vm.iter().find(|x| &x.name == k)));
        }
    }
    Ok(Verification {
        clean: rows
            .iter()
            .all(|r| r.status == "ok" || r.status == "absent"),
        rows,
        overlaps: resolved.overlaps,
    })
}

/// The table: `device  knob  expected  actual  status`.
pub(crate) fn table(v: &Verification) -> String {
    let mut out = format!(
        "{:<12} {:<24} {:>12} {:>12}  status\n",
        "device", "knob", "expected", "actual"
    );
    for r in &v.rows {
        out.push_str(&format!(
            "{:<12} {:<24} {:>12} {:>12}  {}\n",
            r.device,
            r.knob,
            r.expected,
            r.actual.as_deref().unwrap_or("-"),
            r.status
        ));
    }
    if !v.overlaps.is_empty() {
        out.push('\n');
    }
    for o in &v.overlaps {
        out.push_str(&format!("{}\n", o.message));
    }
    out
}
