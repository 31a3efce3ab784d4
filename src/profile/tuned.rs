//! A TuneD profile: the text of `tuned.conf` for a directory `/etc/tuned/sweetspot/`
//! (tuned.conf(5)). One `[disk]` plugin instance per device entry sets `elevator` and
//! `readahead` (KiB, TuneD's disk plugin unit), matched by `devices_udev_regex` (a regex over
//! the disk's udev properties, one `KEY=value` per line); a `[sysfs]` instance after it sets
//! the iosched and other queue files, so the scheduler is in place before its iosched/ values
//! are written; `[sysctl]` takes the host-wide knobs (the host's own sweet spot's, `tune
//! --host`, and those of device tunes); `summary=` names the provenance.
//!
//! What TuneD cannot match as exactly as the udev rules do, each said in a comment:
//! - `[sysfs]` takes paths, not udev properties: the disk's bus path under `/sys/devices`
//!   (stable for fixed hardware), read from the present device, or else its name when tuned;
//!   for a model entry, those of every disk of the model present at export;
//! - a SCSI/ATA `naa.` wwid is udev's `ID_WWN=0x…` (lower case); a `t10.` wwid has no udev
//!   property, and neither has a loop device's backing file: those are matched by name.

use super::model::{DeviceEntry, Match, Profile};
use super::{attr_path, describe, in_apply_order};
use crate::device;
use crate::sysroot::SysRoot;

/// `tuned.conf` for `profile`; `root` resolves present devices to their sysfs bus paths.
pub fn render(profile: &Profile, root: &SysRoot) -> String {
    let names: Vec<&str> = profile.devices.iter().map(|d| d.name.as_str()).collect();
    let host = profile.host.as_ref();
    let mut of = Vec::new();
    if !names.is_empty() {
        of.push(format!("{} device(s): {}", names.len(), names.join(", ")));
    }
    if let Some(h) = host {
        of.push(match &h.name {
            Some(n) if h.is_tuned() => format!("the host ({n})"),
            _ => "host-wide knobs".into(),
        });
    }
    let mut out = format!(
        "# sweetspot sweet spots as a TuneD profile (`sweetspot profile export --format tuned`).\n\
         # Install as /etc/tuned/sweetspot/tuned.conf, then `tuned-adm profile sweetspot`.\n\
         \n[main]\nsummary=sweetspot sweet spots of {}\n",
        if of.is_empty() {
            "no lasting device".to_string()
        } else {
            of.join("; ")
        }
    );
    let present = device::list(root).unwrap_or_default();
    for (i, d) in profile.devices.iter().enumerate() {
        out.push_str(&format!("\n# {}\n", describe(d)));
        if d.knobs.is_empty() {
            out.push_str("# keep the default: no significant improvement, nothing set\n");
            continue;
        }
        let inst = format!(
            "{}{}",
            sanitize(&d.name),
            if d.name.is_empty() {
                i.to_string()
            } else {
                String::new()
            }
        );
        let knobs = in_apply_order(&d.knobs);
        let (regex, note) = udev_regex(&d.matches, &d.name);
        if let Some(n) = note {
            out.push_str(&format!("# {n}\n"));
        }
        out.push_str(&format!(
            "[disk_{inst}]\ntype=disk\ndevices_udev_regex={regex}\n"
        ));
        let mut sysfs = Vec::new();
        for (k, v) in &knobs {
            match k.as_str() {
                "scheduler" => out.push_str(&format!("elevator={v}\n")),
                "read_ahead_kb" => out.push_str(&format!("readahead={v}\n")),
                _ => sysfs.push((k, v)),
            }
        }
        if !sysfs.is_empty() {
            let (bases, note) = sysfs_bases(root, &present, d);
            if let Some(n) = note {
                out.push_str(&format!("# {n}\n"));
            }
            out.push_str(&format!("\n[sysfs_{inst}]\ntype=sysfs\n"));
            for base in &bases {
                for (k, v) in &sysfs {
                    out.push_str(&format!("{base}/{}={v}\n", attr_path(k)));
                }
            }
        }
    }
    let (have, notes) = super::sysctl::present(profile, root);
    let described = host.and_then(super::describe_host);
    if let Some(d) = &described {
        out.push_str(&format!("\n# {d}\n"));
        if have.is_empty() && notes.is_empty() {
            out.push_str("# keep the default: no significant improvement, nothing set\n");
        }
    }
    if !have.is_empty() || !notes.is_empty() {
        out.push_str(if described.is_some() {
            "[sysctl]\n"
        } else {
            "\n[sysctl]\n"
        });
        for n in notes {
            out.push_str(&format!("# {n}\n"));
        }
        for (k, v) in have {
            out.push_str(&format!("{k}={v}\n"));
        }
    }
    out
}

/// Where a disk's directory sits under its bus path: `block/<name>` for SCSI/ATA/virtio, the
/// namespace itself for NVMe (`…/nvme/nvme0/nvme0n1`).
fn block_dir(by_path: &str) -> &'static str {
    if by_path.contains("/nvme/") {
        ""
    } else {
        "block/"
    }
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// `regex::escape`'s set, for the few values put into a TuneD regex.
fn escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The `devices_udev_regex` of a match, and a note when it is not exact.
fn udev_regex(m: &Match, name: &str) -> (String, Option<String>) {
    let by_name = |why: &str| {
        (
            format!("^DEVNAME=/dev/{}$", escape(name)),
            Some(format!(
                "{why}: matched by its name when tuned ({name}), which may change"
            )),
        )
    };
    if let Some(w) = &m.wwid {
        return match w.split_once('.') {
            Some(("naa", hex)) => (
                format!(
                    "^ID_WWN(_WITH_EXTENSION)?=0x{}$",
                    escape(&hex.to_lowercase())
                ),
                None,
            ),
            Some(("eui" | "nvme", _)) => (format!("^ID_WWN={}$", escape(w)), None),
            _ => by_name(&format!("udev has no property for wwid {w}")),
        };
    }
    if let Some(s) = &m.serial {
        return (format!("^ID_SERIAL_SHORT={}$", escape(s)), None);
    }
    if let Some(md) = &m.model {
        // udev's ID_MODEL keeps spaces (NVMe) or has them as '_' (ata_id), and ata_id's full
        // IDENTIFY model can be longer than sysfs's 16-byte SCSI one: spaces either way, and a
        // prefix match.
        let words: Vec<String> = md.split_whitespace().map(escape).collect();
        return (
            format!("^ID_MODEL={}", words.join("[ _]")),
            m.firmware
                .as_ref()
                .map(|f| format!("firmware {f} is not part of TuneD's match (one regex)")),
        );
    }
    if let Some(p) = &m.by_path {
        return (
            format!("^DEVPATH=/devices/{}/block/[^/]+$", escape(p)),
            None,
        );
    }
    by_name("udev has no property for a loop device's backing file")
}

/// The `[sysfs]` base directories of an entry's disks, and a note when they are by name. A
/// model entry's are those of every present disk of the model (TuneD's [sysfs] takes paths,
/// not a model): one attached later gets the [disk] instance's knobs only, as the note says.
fn sysfs_bases(
    root: &SysRoot,
    present: &[device::Device],
    d: &DeviceEntry,
) -> (Vec<String>, Option<String>) {
    if let Some(p) = &d.matches.by_path {
        return (vec![format!("/sys/devices/{p}/{}*", block_dir(p))], None);
    }
    let by_name = |name: &str| {
        (
            vec![format!("/sys/block/{name}")],
            Some(format!(
                "TuneD's [sysfs] takes paths: {name} by its name when tuned, which may change"
            )),
        )
    };
    if d.matches.is_model_class() {
        let disks = super::apply::disks_of(root, present, d);
        if disks.is_empty() {
            return by_name(&d.name);
        }
        let names: Vec<&str> = disks.iter().map(|p| p.name.as_str()).collect();
        let mut named = Vec::new();
        let mut bases = Vec::new();
        for p in disks {
            bases.push(bus_base(root, p).unwrap_or_else(|| {
                named.push(p.name.as_str());
                format!("/sys/block/{}", p.name)
            }));
        }
        let mut note = format!(
            "TuneD's [sysfs] takes paths, not a model: those of the disks of this model \
             present at export ({}); one attached later gets only the [disk] settings",
            names.join(", ")
        );
        if !named.is_empty() {
            note.push_str(&format!("; {} by name, which may change", named.join(", ")));
        }
        return (bases, Some(note));
    }
    let found = present
        .iter()
        .find(|p| Match::from_identity(&p.identity).is_some_and(|m| m == d.matches));
    match found.and_then(|dev| bus_base(root, dev)) {
        Some(base) => (vec![base], None),
        None => by_name(&d.name),
    }
}

/// `/sys/devices/…/block/*`: the glob over the disk's directory under its bus path; `None`
/// for a virtual device (or a fake tree without `/sys/devices`).
fn bus_base(root: &SysRoot, dev: &device::Device) -> Option<String> {
    let path = std::fs::canonicalize(root.block_dev(&dev.name)).ok()?;
    let rel = path.strip_prefix(&root.sys).ok()?;
    if !rel.starts_with("devices") || rel.starts_with("devices/virtual") {
        return None;
    }
    let parent = rel
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    Some(format!("/sys/{parent}/*"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regex_of_an_naa_wwid_is_udevs_id_wwn() {
        let m = Match::from_identity("wwid:naa.5000C500AAAA000A").unwrap_or_default();
        let (r, note) = udev_regex(&m, "sda");
        assert_eq!(r, "^ID_WWN(_WITH_EXTENSION)?=0x5000c500aaaa000a$");
        assert!(note.is_none());
        let m = Match::from_identity("loop:/tmp/x.img").unwrap_or_default();
        let (r, note) = udev_regex(&m, "loop0");
        assert_eq!(r, "^DEVNAME=/dev/loop0$");
        assert!(note.is_some_and(|n| n.contains("backing file")));
    }
}
