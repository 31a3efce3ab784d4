//! The profile: sweetspot's own TOML, version 1. This shape is a contract (docs/DESIGN.md
//! "Profiles"): extend it, never break it.
//!
//! ```toml
//! version = 1
//! [[device]]
//! name = "sda"                                   # the name when tuned (informational only)
//! match = { wwid = "naa.5000c500aaaa000A" }      # or serial+model, by_path, backing_file; or model
//! kernel = "6.18.0"
//! policy = "quick"
//! tuned_at = "2026-12-01T08:00:00Z"
//! improvement = { objective = "io_load Ratio", ratio = 2.20, ci95 = [2.05, 2.37], runs = 24 }
//! knobs = { scheduler = "mq-deadline", fifo_batch = 8 }   # applied in the kernel's order
//! baseline = { scheduler = "none", fifo_batch = 16 }
//! [host]                                        # host-wide knobs; the rest is optional
//! name = "vm"                                   # the host sweet spot's (`tune --host`)
//! kernel = "6.18.0"                             # provenance, as a device entry has it
//! policy = "host"
//! tuned_at = "2026-12-01T08:00:00Z"
//! improvement = { objective = "t (s)", ratio = 1.30, ci95 = [1.27, 1.33], runs = 16 }
//! knobs = { dirty_ratio = 10 }
//! baseline = { dirty_ratio = 20 }
//! ```

use crate::types::Setting;
use serde::{Deserialize, Serialize};

/// The profile format's version; a file with another one is refused.
pub(crate) const VERSION: u32 = 1;

/// A whole profile. Two profiles are equal when their files say the same: [`Profile::origin`]
/// is left out.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Always `VERSION`.
    pub version: u32,
    /// One entry per device (identity, or model for a fleet), in export order.
    #[serde(default, rename = "device")]
    pub devices: Vec<DeviceEntry>,
    /// Host-wide knobs (vm, kernel.sched_*), never per device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Host>,
    /// The file it was read from, for messages naming file and line; `None` when built from
    /// the database. Not part of the format.
    #[serde(skip)]
    pub origin: Option<Origin>,
}

/// Where a profile was read from ([`super::file::parse`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Origin {
    /// The file.
    pub path: std::path::PathBuf,
    /// The 1-based line of each device entry's `match`, by entry index (`None` where the
    /// parser could not tell).
    pub match_lines: Vec<Option<usize>>,
}

/// How a device entry finds its disk. Exactly one way: `wwid`; `serial` with `model`;
/// `by_path`; `backing_file` (a loop device); or, for a fleet, `model` alone (with `firmware`
/// where sysfs has one), which matches every disk of that model.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Match {
    /// `wwid` from sysfs (`<disk>/wwid` or `<disk>/device/wwid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wwid: Option<String>,
    /// `device/serial` or `<disk>/serial`; with `model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    /// `device/model`: with `serial` one disk, alone a class of disks (`--match model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `device/rev` (firmware revision), narrowing a model match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<String>,
    /// Where `<disk>/device` resolves under `/sys/devices` (the bus path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_path: Option<String>,
    /// A loop device's `loop/backing_file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing_file: Option<String>,
}

impl Match {
    /// Each match field by its name in the profile file, in the order messages name them.
    pub(crate) fn fields(&self) -> [(&'static str, &Option<String>); 6] {
        [
            ("wwid", &self.wwid),
            ("model", &self.model),
            ("serial", &self.serial),
            ("firmware", &self.firmware),
            ("by_path", &self.by_path),
            ("backing_file", &self.backing_file),
        ]
    }

    /// What the match looks for, for messages: `wwid naa.5000…`, `model X serial Y`,
    /// `by_path …`, `backing_file /srv/disk.img`, `model X` (with `firmware F`).
    pub(crate) fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (k, v) in self.fields() {
            if let Some(v) = v {
                parts.push(format!("{k} {v}"));
            }
        }
        parts.join(" ")
    }

    /// The match for a stored identity (`wwid:…`, `model-serial:<model>:<serial>` with its
    /// fields percent-decoded,
    /// `by-path:…`, `loop:<file>`; [`crate::device::identity`]); `None` for a `virtual:` or
    /// `sim:`/`scratch:` identity, which names nothing that survives a reboot.
    pub(crate) fn from_identity(identity: &str) -> Option<Match> {
        let (kind, rest) = identity.split_once(':')?;
        let m = match kind {
            "wwid" => Match {
                wwid: Some(rest.to_string()),
                ..Match::default()
            },
            "model-serial" => {
                // Percent-encoded fields, the serial last ([`crate::device::identity`]).
                let (model, serial) = crate::device::identity::parse_model_serial(rest)?;
                Match {
                    model: Some(model),
                    serial: Some(serial),
                    ..Match::default()
                }
            }
            "by-path" => Match {
                by_path: Some(rest.to_string()),
                ..Match::default()
            },
            "loop" => Match {
                backing_file: Some(rest.to_string()),
                ..Match::default()
            },
            _ => return None,
        };
        Some(m)
    }

    /// True when this is a class (fleet) match: a model without a serial.
    pub(crate) fn is_model_class(&self) -> bool {
        self.model.is_some() && self.serial.is_none()
    }
}

/// What the tune measured: the objective's improvement with its 95% CI, and its cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileImprovement {
    /// e.g. `io_load Ratio`.
    pub objective: String,
    /// default ÷ best for a Ratio, best ÷ default for Loads (> 1: better).
    pub ratio: f64,
    /// 95% CI of the ratio.
    pub ci95: [f64; 2],
    /// Load runs the tune spent, no_load included.
    pub runs: u64,
}

/// One device's sweet spot. Two entries are equal when their files say the same:
/// [`DeviceEntry::also`], a comment, is left out.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceEntry {
    /// The kernel name when tuned (informational only: never used to match).
    pub name: String,
    /// How to find the disk.
    #[serde(rename = "match")]
    pub matches: Match,
    /// The kernel release it was tuned on.
    pub kernel: String,
    /// The policy it was tuned for.
    pub policy: String,
    /// When, RFC 3339 UTC.
    pub tuned_at: String,
    /// The evidence; absent for a "keep the default" sweet spot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub improvement: Option<ProfileImprovement>,
    /// Only the knobs the sweet spot changed from its baseline; applied in the kernel's order
    /// (scheduler → nr_requests → iosched/* → other queue/*), not the file's.
    #[serde(default)]
    pub knobs: Setting,
    /// What the tune measured against (the device's values then).
    #[serde(default)]
    pub baseline: Setting,
    /// The other disks whose sweet spots this entry carries too, as `name (identity)`: a
    /// `--match model` export of disks of one model whose sweet spots set the same knobs
    /// ([`super::fleet`]). Written as a comment only, not part of the format.
    #[serde(skip)]
    pub also: Vec<String>,
}

impl PartialEq for Profile {
    fn eq(&self, o: &Self) -> bool {
        let Profile {
            version,
            devices,
            host,
            origin: _,
        } = self;
        (version, devices, host) == (&o.version, &o.devices, &o.host)
    }
}

impl PartialEq for DeviceEntry {
    fn eq(&self, o: &Self) -> bool {
        let DeviceEntry {
            name,
            matches,
            kernel,
            policy,
            tuned_at,
            improvement,
            knobs,
            baseline,
            also: _,
        } = self;
        (name, matches, kernel, policy, tuned_at, improvement)
            == (
                &o.name,
                &o.matches,
                &o.kernel,
                &o.policy,
                &o.tuned_at,
                &o.improvement,
            )
            && (knobs, baseline) == (&o.knobs, &o.baseline)
    }
}

/// Host-wide knobs, and where the host's own sweet spot came from.
///
/// `knobs` gathers the host-wide knobs of every exported sweet spot: those a device tune
/// changed (a policy with vm knobs) and those of the host's own sweet spot (`tune --host`),
/// which wins where both set one. The other fields are that host sweet spot's provenance, as
/// a device entry has them; all are optional, so a `[host]` with `knobs` alone (the only
/// shape written before host sweet spots were exported) still reads, and they are absent when
/// no host tune was exported.
///
/// ```toml
/// [host]
/// name = "vm"                      # the hostname when tuned (informational only)
/// kernel = "6.18.0"
/// policy = "host"
/// tuned_at = "2026-12-01T08:00:00Z"
/// improvement = { objective = "t (s)", ratio = 1.30, ci95 = [1.27, 1.33], runs = 16 }
/// knobs = { swappiness = 10 }
/// baseline = { swappiness = 60 }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// The host's name when its own sweet spot was tuned (`/proc/sys/kernel/hostname`;
    /// informational only: a host entry applies to whichever host applies the profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The kernel release the host sweet spot was tuned on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The policy it was tuned for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// When, RFC 3339 UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tuned_at: Option<String>,
    /// The evidence; absent for a "keep the default" host sweet spot (and for knobs of device
    /// tunes only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub improvement: Option<ProfileImprovement>,
    /// e.g. `dirty_ratio = 10`: only knobs a sweet spot changed from its baseline.
    #[serde(default)]
    pub knobs: Setting,
    /// What the host sweet spot measured against (the host's values then).
    #[serde(default, skip_serializing_if = "Setting::is_empty")]
    pub baseline: Setting,
}

impl Host {
    /// True when the entry carries a host sweet spot's provenance (`tune --host`), not only
    /// host knobs gathered from device tunes.
    pub(crate) fn is_tuned(&self) -> bool {
        self.tuned_at.is_some()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn identities_become_matches() {
        let m = Match::from_identity("wwid:naa.5000c500aaaa000A").unwrap();
        assert_eq!(m.wwid.as_deref(), Some("naa.5000c500aaaa000A"));
        let m = Match::from_identity("model-serial:WDC WD5000:v2:WD-123").unwrap();
        assert_eq!(
            (m.model.as_deref(), m.serial.as_deref()),
            (Some("WDC WD5000:v2"), Some("WD-123"))
        );
        let m = Match::from_identity("loop:/var/disk.img").unwrap();
        assert_eq!(m.backing_file.as_deref(), Some("/var/disk.img"));
        assert!(Match::from_identity("virtual:zram0").is_none());
        assert!(Match::from_identity("sim:seed").is_none());
    }

    #[test]
    fn toml_round_trips_and_keeps_the_contract_shape() {
        let mut knobs = Setting::new();
        knobs.insert("scheduler".into(), "mq-deadline".into());
        knobs.insert("fifo_batch".into(), 8.into());
        let p = Profile {
            version: VERSION,
            devices: vec![DeviceEntry {
                name: "sda".into(),
                matches: Match::from_identity("wwid:naa.5000c500aaaa000A").unwrap(),
                kernel: "6.18.0".into(),
                policy: "quick".into(),
                tuned_at: "2026-12-01T08:00:00Z".into(),
                improvement: Some(ProfileImprovement {
                    objective: "io_load Ratio".into(),
                    ratio: 2.2,
                    ci95: [2.05, 2.37],
                    runs: 24,
                }),
                knobs,
                baseline: Setting::new(),
                also: Vec::new(),
            }],
            host: None,
            origin: None,
        };
        let text = p.to_toml().unwrap();
        assert!(text.contains("[[device]]"), "{text}");
        assert!(text.contains("version = 1"), "{text}");
        let back: Profile = toml::from_str(&text).unwrap();
        assert_eq!(back, p);
        // The contract's own example parses.
        let example = r#"
version = 1
[[device]]
name = "sda"
match = { wwid = "naa.5000c500aaaa000A" }
kernel = "6.18.0"
policy = "quick"
tuned_at = "2026-12-01T08:00:00Z"
improvement = { objective = "io_load Ratio", ratio = 2.20, ci95 = [2.05, 2.37], runs = 24 }
knobs = { scheduler = "mq-deadline", fifo_batch = 8 }
baseline = { scheduler = "none", fifo_batch = 16 }
[host]
knobs = { dirty_ratio = 10 }
"#;
        let p: Profile = toml::from_str(example).unwrap();
        assert_eq!(p.devices[0].knobs["fifo_batch"], 8.into());
        assert_eq!(p.host.unwrap().knobs["dirty_ratio"], 10.into());
    }
}
