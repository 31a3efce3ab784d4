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
//! A match value is compared as udev(7) compares it: `*`, `?`, `[]` are globs and `|`
//! separates alternatives, with no escape. A value holding one of them (a backing file
//! `/srv/img/disk|old [v2]*.img`), or a `"` or a line break, cannot be matched exactly, so the
//! export is refused (exit 2), naming the field and value; the TOML matches it exactly.

use super::model::{Match, Profile};
use super::{attr_path, describe, in_apply_order};
use crate::{Error, Result};

/// The rules file for `profile`. Errors (exit 2): a match value with a `"` or a line break,
/// which a udev rule cannot quote, or with a glob or alternative character (`*?[]|`), which
/// it cannot match literally.
pub fn render(profile: &Profile) -> Result<String> {
    let mut out = String::from(
        "# sweetspot sweet spots as udev rules (`sweetspot profile export --format udev`).\n\
         # Install as /etc/udev/rules.d/99-sweetspot.rules, then:\n\
         #   udevadm control --reload && udevadm trigger --subsystem-match=block --action=change\n",
    );
    for d in &profile.devices {
        out.push_str(&format!("\n# {}\n", describe(d)));
        if d.knobs.is_empty() {
            out.push_str("# keep the default: no significant improvement, so no rule\n");
            continue;
        }
        let mut keys = vec![
            r#"ACTION=="add|change""#.to_string(),
            r#"SUBSYSTEM=="block""#.to_string(),
            r#"ENV{DEVTYPE}=="disk""#.to_string(),
        ];
        keys.extend(match_keys(&d.matches)?);
        for (k, v) in in_apply_order(&d.knobs) {
            keys.push(format!(r#"ATTR{{{}}}="{v}""#, attr_path(&k)));
        }
        out.push_str(&keys.join(", "));
        out.push('\n');
    }
    if let Some(h) = &profile.host {
        if let Some(d) = super::describe_host(h) {
            out.push_str(&format!("\n# {d}"));
        }
        if h.knobs.is_empty() {
            out.push_str("\n# keep the default: no significant improvement, nothing set\n");
        } else {
            out.push_str(&format!(
                "\n# host-wide knobs ({}) are sysctls, which a udev rule cannot set: export \
                 them with --format sysctl (or tuned, or apply the toml)\n",
                h.knobs
                    .iter()
                    .map(|(k, v)| format!("{k} = {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    Ok(out)
}

/// The characters udev(7) reads as a pattern in a match value: `*`, `?` and `[…]` are shell
/// globs, and `|` separates alternatives (`abc|x*` matches `abc` or `x*`). udev splits a
/// value at every `|` before it matches, and its rule syntax has no escape for them (systemd
/// and older udev alike; an `fnmatch` backslash escape is not something a rule can rely on),
/// so a value holding one would match other devices' values, or not its own.
const PATTERN_CHARS: &[char] = &['*', '?', '[', ']', '|'];

/// `v` as a match value, refused (exit 2) when a udev rule cannot match it exactly: a `"` or
/// a line break (no quoting) or one of [`PATTERN_CHARS`].
fn quoted(field: &str, v: &str) -> Result<String> {
    if v.contains('"') || v.contains('\n') {
        return Err(Error::BadInput(format!(
            "match.{field} '{v}': a udev rule cannot quote '\"' or a line break"
        )));
    }
    if let Some(c) = v.chars().find(|c| PATTERN_CHARS.contains(c)) {
        return Err(Error::BadInput(format!(
            "match.{field} '{v}': a udev rule cannot match '{c}' literally (udev reads '*', \
             '?' and '[]' as globs and '|' as alternatives, with no escape); export it with \
             --format toml, which `profile apply` matches exactly"
        )));
    }
    Ok(v.to_string())
}

fn match_keys(m: &Match) -> Result<Vec<String>> {
    let mut keys = Vec::new();
    if let Some(w) = &m.wwid {
        keys.push(format!(r#"ATTRS{{wwid}}=="{}""#, quoted("wwid", w)?));
    }
    if let Some(s) = &m.serial {
        keys.push(format!(
            r#"ENV{{ID_SERIAL_SHORT}}=="{}""#,
            quoted("serial", s)?
        ));
    }
    if let Some(md) = &m.model {
        keys.push(format!(r#"ATTRS{{model}}=="{}""#, quoted("model", md)?));
        if let Some(fw) = &m.firmware {
            keys.push(format!(r#"ATTRS{{rev}}=="{}""#, quoted("firmware", fw)?));
        }
    }
    if let Some(p) = &m.by_path {
        keys.push(format!(
            r#"DEVPATH=="/devices/{}/*""#,
            quoted("by_path", p)?
        ));
    }
    if let Some(f) = &m.backing_file {
        keys.push(format!(
            r#"ATTR{{loop/backing_file}}=="{}""#,
            quoted("backing_file", f)?
        ));
    }
    if keys.is_empty() {
        return Err(Error::BadInput(
            "a device entry has an empty match: nothing to find its disk by".into(),
        ));
    }
    Ok(keys)
}
