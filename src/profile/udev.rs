//! udev rules: one rule per device entry, on `ACTION=="add|change"`, `SUBSYSTEM=="block"`,
//! `ENV{DEVTYPE}=="disk"`, matching the entry's identity and assigning its knobs in the
//! kernel's order in the same rule (udev applies a rule's assignments left to right), so the
//! scheduler is set before the iosched attributes it creates. They need no sweetspot binary at
//! boot. Install as `/etc/udev/rules.d/99-sweetspot.rules` (after udev's own
//! 60-persistent-storage.rules, which set the `ID_*` properties used here).
//!
//! Matches (udev(7): `ATTR`/`ATTRS` compare sysfs attributes, trailing whitespace ignored;
//! `ATTRS` walks up to the parents, all on one device):
//! - `wwid`: `ATTRS{wwid}`, the sysfs value sweetspot keyed on. udev's `ID_WWN` spells it
//!   differently for SCSI/ATA (`0x5000c500…` for `naa.5000C500…`), so it is not used.
//! - `serial` + `model`: `ENV{ID_SERIAL_SHORT}` (set from `device/serial` or `serial` by
//!   udev's ata_id/scsi_id/virtio rules) and `ATTRS{model}`.
//! - `by_path`: `DEVPATH=="/devices/<by_path>/*"` (udev globs match `/` too; the disk is
//!   `…/block/sda` for SCSI/ATA, the namespace `…/nvme0n1` for NVMe; DEVTYPE keeps partitions
//!   out).
//! - `backing_file` (loop): `ATTR{loop/backing_file}`; losetup emits a `change` event when it
//!   attaches a file, so the rule fires then.
//! - a model class (`--match model`): `ATTRS{model}`, and `ATTRS{rev}` for the firmware
//!   (SCSI/ATA `device/rev`; NVMe firmware is not part of a model match).
//!
//! Every value and comment is written by [`super::escape::udev`], which quotes a `"` or `\`
//! (as `e"…"`) so udev reads the value back exactly. A match value is compared as udev(7)
//! compares it: `*`, `?`, `[]` are globs and `|` separates alternatives, with no escape. A
//! value holding one of them (a backing file `/srv/img/disk|old [v2]*.img`), or a control
//! character, cannot be matched exactly, so the export is refused (exit 2), naming the field
//! and entry; the TOML matches it exactly (a control character is refused there too).

use super::escape::{self, udev as esc};
use super::model::{DeviceEntry, Match, Profile};
use super::{attr_path, describe, in_apply_order};
use crate::{Error, Result};

/// The rules file for `profile`. Every value and comment is written through
/// [`super::escape::udev`]. Errors (exit 2): a control character in any field the file
/// carries, or a match value a udev rule cannot match literally (a glob or alternative
/// character `*?[]|`, or an empty one), naming the field and the entry.
pub(crate) fn render(profile: &Profile) -> Result<String> {
    escape::profile_fields("udev", profile)?;
    let mut out = String::from(
        "# sweetspot sweet spots as udev rules (`sweetspot profile export --format udev`).\n\
         # Install as /etc/udev/rules.d/99-sweetspot.rules, then:\n\
         #   udevadm control --reload && udevadm trigger --subsystem-match=block --action=change\n",
    );
    for d in &profile.devices {
        let of = escape::of_entry(d);
        out.push('\n');
        out.push_str(&esc::comment("the entry's provenance", &of, &describe(d))?);
        if d.knobs.is_empty() {
            out.push_str("# keep the default: no significant improvement, so no rule\n");
            continue;
        }
        out.push_str(&rule(d, &of)?);
    }
    if let Some(h) = &profile.host {
        if let Some(d) = super::describe_host(h) {
            out.push('\n');
            out.push_str(&esc::comment("the host's provenance", "the host", &d)?);
        } else {
            out.push('\n');
        }
        if h.knobs.is_empty() {
            out.push_str("# keep the default: no significant improvement, nothing set\n");
        } else {
            out.push_str(&esc::comment(
                "host.knobs",
                "the host",
                &format!(
                    "host-wide knobs ({}) are sysctls, which a udev rule cannot set: export \
                     them with --format sysctl (or tuned, or apply the toml)",
                    h.knobs
                        .iter()
                        .map(|(k, v)| format!("{k} = {v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )?);
        }
    }
    Ok(out)
}

/// The one rule line of entry `d` (`of` names it): its matches, then its knobs in the
/// kernel's order.
fn rule(d: &DeviceEntry, of: &str) -> Result<String> {
    let mut keys = vec![
        r#"ACTION=="add|change""#.to_string(),
        r#"SUBSYSTEM=="block""#.to_string(),
        r#"ENV{DEVTYPE}=="disk""#.to_string(),
    ];
    keys.extend(match_keys(&d.matches, of)?);
    for (k, v) in in_apply_order(&d.knobs) {
        let attr = attr_path(&k);
        keys.push(format!(
            "ATTR{{{}}}={}",
            esc::attr("knobs (a knob's name)", of, &attr)?,
            esc::assign_value(&format!("knobs.{k}"), of, &v)?
        ));
    }
    Ok(format!("{}\n", keys.join(", ")))
}

fn match_keys(m: &Match, of: &str) -> Result<Vec<String>> {
    let mut keys = Vec::new();
    let q = |field: &str, v: &str| esc::match_value(&format!("match.{field}"), of, v);
    if let Some(w) = &m.wwid {
        keys.push(format!("ATTRS{{wwid}}=={}", q("wwid", w)?));
    }
    if let Some(s) = &m.serial {
        keys.push(format!("ENV{{ID_SERIAL_SHORT}}=={}", q("serial", s)?));
    }
    if let Some(md) = &m.model {
        keys.push(format!("ATTRS{{model}}=={}", q("model", md)?));
        if let Some(fw) = &m.firmware {
            keys.push(format!("ATTRS{{rev}}=={}", q("firmware", fw)?));
        }
    }
    if let Some(p) = &m.by_path {
        keys.push(format!(
            "DEVPATH=={}",
            esc::glob_prefix("match.by_path", of, &format!("/devices/{p}"), "/*")?
        ));
    }
    if let Some(f) = &m.backing_file {
        keys.push(format!(
            "ATTR{{loop/backing_file}}=={}",
            q("backing_file", f)?
        ));
    }
    if keys.is_empty() {
        return Err(Error::BadInput(format!(
            "a device entry ({of}) has an empty match: nothing to find its disk by"
        )));
    }
    Ok(keys)
}
