//! A TuneD profile: the text of `tuned.conf` for a directory `/etc/tuned/sweetspot/`
//! (tuned.conf(5)). One `[disk]` plugin instance per device entry sets `elevator` and
//! `readahead` (KiB, TuneD's disk plugin unit), matched by `devices_udev_regex` (a regex over
//! the disk's udev properties, one `KEY=value` per line); a `[sysfs]` instance after it sets
//! the iosched and other queue files, so the scheduler is in place before its iosched/ values
//! are written; `[sysctl]` takes the host-wide knobs (the host's own sweet spot's, `tune
//! --host`, and those of device tunes); `summary=` names the provenance.
//!
//! Every entry is matched by an identity, as the README promises, never by a kernel name
//! that may swap; what TuneD cannot match that way is refused (exit 2), naming the entry, its
//! knobs and why, and pointing to the udev rules or the TOML, which can:
//! - `[disk]` matches udev properties: a SCSI/ATA `naa.` wwid is `ID_WWN=0x…` (lower case),
//!   `eui.`/`nvme.` ones `ID_WWN`, a serial `ID_SERIAL_SHORT`, a model (`--match model`)
//!   `ID_MODEL`, a bus path `DEVPATH`. A `t10.` wwid has no udev property, nor has a loop
//!   device's backing file: refused.
//! - `[sysfs]` takes paths and matches no device: the knobs only it can set (nr_requests,
//!   iosched/*, the other queue files) go to the disk's bus path under `/sys/devices` (its
//!   `by_path` identity, or, for a disk present at export, the bus path it has here, which
//!   follows the port, as a comment says). A disk with no bus path here (absent, virtual) has
//!   only its kernel name: refused. So is a `--match model` entry with such knobs: a fleet
//!   profile goes to other machines, where this one's paths name other disks or none.

use super::escape::{self, tuned as esc};
use super::model::{DeviceEntry, Match, Profile};
use super::{attr_path, describe, in_apply_order};
use crate::device;
use crate::sysroot::SysRoot;
use crate::{Error, Result};

/// `tuned.conf` for `profile`; `root` resolves present devices to their sysfs bus paths.
///
/// Every line is written through [`super::escape::tuned`].
///
/// Errors (exit 2): entries TuneD cannot match by identity (see the module doc), each named
/// with its knobs and why; a control character in a field the file carries, or a name,
/// value or path TuneD would not read back as written, naming the field and the entry.
pub(crate) fn render(profile: &Profile, root: &SysRoot) -> Result<String> {
    escape::profile_fields("tuned", profile)?;
    let mut out = main_section(profile)?;
    let present = device::list(root).unwrap_or_default();
    let mut refused = Vec::new();
    for (i, d) in profile.devices.iter().enumerate() {
        match entry(root, &present, i, d)? {
            Entry::Sections(text) => out.push_str(&text),
            Entry::Unmatched(why) => refused.push(why),
        }
    }
    if !refused.is_empty() {
        let (these, them) = if refused.len() == 1 {
            ("this entry", "it")
        } else {
            ("these entries", "them")
        };
        return Err(Error::BadInput(format!(
            "--format tuned: TuneD cannot match {these} by the disk's identity: {}; export \
             {them} with --format udev or toml, which match every disk by its identity",
            refused.join("; ")
        )));
    }
    out.push_str(&sysctl_section(profile, root)?);
    Ok(out)
}

/// The file's head and `[main]`, whose `summary=` names the entries and the host.
fn main_section(profile: &Profile) -> Result<String> {
    let names: Vec<&str> = profile.devices.iter().map(|d| d.name.as_str()).collect();
    let mut of = Vec::new();
    if !names.is_empty() {
        of.push(format!("{} device(s): {}", names.len(), names.join(", ")));
    }
    if let Some(h) = &profile.host {
        of.push(match &h.name {
            Some(n) if h.is_tuned() => format!("the host ({n})"),
            _ => "host-wide knobs".into(),
        });
    }
    let summary = format!(
        "sweetspot sweet spots of {}",
        if of.is_empty() {
            "no lasting device".to_string()
        } else {
            of.join("; ")
        }
    );
    Ok(format!(
        "# sweetspot sweet spots as a TuneD profile (`sweetspot profile export --format tuned`).\n\
         # Install as /etc/tuned/sweetspot/tuned.conf, then `tuned-adm profile sweetspot`.\n\
         \n[main]\nsummary={}\n",
        esc::text(
            "summary (the names of the entries and the host)",
            "the profile",
            &summary
        )?
    ))
}

/// A device entry as TuneD's file carries it ([`entry`]).
enum Entry {
    /// Its provenance, then its `[disk_…]` and `[sysfs_…]` instances.
    Sections(String),
    /// Why TuneD cannot match it by identity: the entry, its knobs and why.
    Unmatched(String),
}

/// Device entry `i`, `d` as TuneD's file carries it; the error (exit 2) is a field the file
/// cannot carry.
fn entry(root: &SysRoot, present: &[device::Device], i: usize, d: &DeviceEntry) -> Result<Entry> {
    let of = escape::of_entry(d);
    let mut out = String::from("\n");
    out.push_str(&esc::comment("the entry's provenance", &of, &describe(d))?);
    if d.knobs.is_empty() {
        out.push_str("# keep the default: no significant improvement, nothing set\n");
        return Ok(Entry::Sections(out));
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
    let (disk, sysfs): (Vec<_>, Vec<_>) = knobs
        .iter()
        .partition(|(k, _)| k == "scheduler" || k == "read_ahead_kb");
    let who = |ks: &[&(String, String)], why: String| {
        let ks: Vec<&str> = ks.iter().map(|(k, _)| k.as_str()).collect();
        format!(
            "{} ({}): {}: {why}",
            d.name,
            d.matches.describe(),
            ks.join(", ")
        )
    };
    let (regex, note) = match udev_regex(&d.matches) {
        Ok(r) => r,
        Err(why) => {
            return Ok(Entry::Unmatched(who(
                &knobs.iter().collect::<Vec<_>>(),
                why,
            )));
        }
    };
    let bases = if sysfs.is_empty() {
        None
    } else {
        match sysfs_bases(root, present, d) {
            Ok(b) => Some(b),
            Err(why) => return Ok(Entry::Unmatched(who(&sysfs, why))),
        }
    };
    if let Some(n) = note {
        out.push_str(&esc::comment("match.firmware", &of, &n)?);
    }
    out.push_str(&format!(
        "[disk_{inst}]\ntype=disk\ndevices_udev_regex={regex}\n"
    ));
    for (k, v) in &disk {
        let option = if k == "scheduler" {
            "elevator"
        } else {
            "readahead"
        };
        let v = esc::value(&format!("knobs.{k}"), &of, v)?;
        out.push_str(&format!("{option}={v}\n"));
    }
    if let Some((bases, note)) = bases {
        if let Some(n) = note {
            out.push_str(&esc::comment("the disk's bus path", &of, &n)?);
        }
        out.push_str(&format!("\n[sysfs_{inst}]\ntype=sysfs\n"));
        for base in &bases {
            for (k, v) in &sysfs {
                let path = format!("{base}/{}", attr_path(k));
                let path = esc::key(
                    "the disk's sysfs path (match.by_path, knobs)",
                    &of,
                    &path,
                    true,
                )?;
                let v = esc::value(&format!("knobs.{k}"), &of, v)?;
                out.push_str(&format!("{path}={v}\n"));
            }
        }
    }
    Ok(Entry::Sections(out))
}

/// The host-wide knobs' `[sysctl]` (those `root`'s `/proc/sys` has), after the host's
/// provenance; empty when there is neither.
fn sysctl_section(profile: &Profile, root: &SysRoot) -> Result<String> {
    let mut out = String::new();
    let (have, notes) = super::sysctl::present(profile, root);
    let described = profile.host.as_ref().and_then(super::describe_host);
    if let Some(d) = &described {
        out.push('\n');
        out.push_str(&esc::comment("the host's provenance", "the host", d)?);
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
            out.push_str(&esc::comment("host.knobs", "the host", &n)?);
        }
        for (k, v) in have {
            let key = esc::key("host.knobs (a sysctl key)", "the host", &k, false)?;
            let v = esc::value(&format!("host.knobs.{k}"), "the host", &v)?;
            out.push_str(&format!("{key}={v}\n"));
        }
    }
    Ok(out)
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

/// The `devices_udev_regex` of a match, and a note when it is not exact; `Err(why)` when udev
/// has no property for the identity (a `t10.` wwid, a loop device's backing file).
fn udev_regex(m: &Match) -> std::result::Result<(String, Option<String>), String> {
    if let Some(w) = &m.wwid {
        return match w.split_once('.') {
            Some(("naa", hex)) => Ok((
                format!(
                    "^ID_WWN(_WITH_EXTENSION)?=0x{}$",
                    esc::regex_literal(&hex.to_lowercase())
                ),
                None,
            )),
            Some(("eui" | "nvme", _)) => Ok((format!("^ID_WWN={}$", esc::regex_literal(w)), None)),
            _ => Err(format!(
                "udev has no property for wwid {w}, so TuneD's [disk] plugin could match it \
                 only by its kernel name, which may change"
            )),
        };
    }
    if let Some(s) = &m.serial {
        return Ok((format!("^ID_SERIAL_SHORT={}$", esc::regex_literal(s)), None));
    }
    if let Some(md) = &m.model {
        // udev's ID_MODEL keeps spaces (NVMe) or has them as '_' (ata_id), and ata_id's full
        // IDENTIFY model can be longer than sysfs's 16-byte SCSI one: spaces either way, and a
        // prefix match.
        let words: Vec<String> = md.split_whitespace().map(esc::regex_literal).collect();
        return Ok((
            format!("^ID_MODEL={}", words.join("[ _]")),
            m.firmware
                .as_ref()
                .map(|f| format!("firmware {f} is not part of TuneD's match (one regex)")),
        ));
    }
    if let Some(p) = &m.by_path {
        return Ok((
            format!("^DEVPATH=/devices/{}/block/[^/]+$", esc::regex_literal(p)),
            None,
        ));
    }
    Err(
        "udev has no property for a loop device's backing file, so TuneD's [disk] plugin \
         could match it only by its kernel name, which may change"
            .into(),
    )
}

/// The `[sysfs]` base directories of an entry's disk, and a note on what they follow;
/// `Err(why)` when no path follows the entry's identity: a model entry (its disks on other
/// machines have other paths), or a disk with no bus path here (absent, or virtual), which
/// only its kernel name would reach.
fn sysfs_bases(
    root: &SysRoot,
    present: &[device::Device],
    d: &DeviceEntry,
) -> std::result::Result<(Vec<String>, Option<String>), String> {
    if let Some(p) = &d.matches.by_path {
        return Ok((vec![format!("/sys/devices/{p}/{}*", block_dir(p))], None));
    }
    if d.matches.is_model_class() {
        return Err(
            "TuneD's [sysfs] plugin takes paths and matches no device, so a fleet \
                    profile (--match model) would write them to whatever disks have this \
                    machine's paths, or names, on every machine"
                .into(),
        );
    }
    let found = present
        .iter()
        .find(|p| Match::from_identity(&p.identity).is_some_and(|m| m == d.matches));
    match found.and_then(|dev| bus_base(root, dev).map(|b| (dev, b))) {
        Some((dev, base)) => Ok((
            vec![base],
            Some(format!(
                "TuneD's [sysfs] takes paths: {}'s bus path here, which follows the port it \
                 is on, not the disk",
                dev.name
            )),
        )),
        None => Err(format!(
            "TuneD's [sysfs] plugin takes paths and matches no device, and {} has no bus path \
             under /sys/devices here (absent now, or a virtual device): only its kernel name, \
             which may change",
            d.name
        )),
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
        let (r, note) = udev_regex(&m).unwrap();
        assert_eq!(r, "^ID_WWN(_WITH_EXTENSION)?=0x5000c500aaaa000a$");
        assert!(note.is_none());
        let m = Match::from_identity("loop:/tmp/x.img").unwrap_or_default();
        let why = udev_regex(&m).unwrap_err();
        assert!(why.contains("backing file"), "{why}");
        let m = Match::from_identity("wwid:t10.ATA QEMU HARDDISK").unwrap_or_default();
        let why = udev_regex(&m).unwrap_err();
        assert!(why.contains("no property for wwid t10."), "{why}");
    }
}
