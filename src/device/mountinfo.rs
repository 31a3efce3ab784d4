//! `/proc/self/mountinfo`: which filesystems are mounted on a disk or its partitions, matched
//! by `major:minor` (field 3), so it works without udev and for any device node name.
//! Format: proc(5), "/proc/pid/mountinfo".

use super::{Mount, read_attr};
use crate::sysroot::SysRoot;
use std::path::{Path, PathBuf};

/// One line of mountinfo.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MountEntry {
    /// `major:minor` of the mounted device.
    pub dev: String,
    /// Mount point (octal escapes decoded).
    pub target: PathBuf,
    /// Filesystem type.
    pub fstype: String,
    /// Mounted read-write (`rw` in the per-mount options).
    pub writable: bool,
}

/// Reads `<proc>/self/mountinfo`; empty when it is missing (a fake procfs tree).
pub(crate) fn read(root: &SysRoot) -> Vec<MountEntry> {
    std::fs::read_to_string(root.proc.join("self/mountinfo"))
        .map(|t| parse(&t))
        .unwrap_or_default()
}

/// Parses mountinfo text; malformed lines are skipped.
pub(crate) fn parse(text: &str) -> Vec<MountEntry> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<MountEntry> {
    let fields: Vec<&str> = line.split(' ').collect();
    let sep = fields.iter().position(|f| *f == "-")?;
    if sep < 6 {
        return None;
    }
    Some(MountEntry {
        dev: fields[2].to_string(),
        target: PathBuf::from(unescape(fields[4])),
        writable: fields[5].split(',').any(|o| o == "rw"),
        fstype: fields.get(sep + 1)?.to_string(),
    })
}

/// Decodes mountinfo's `\NNN` octal escapes (space, tab, newline, backslash).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let oct = std::str::from_utf8(&b[i + 1..i + 4]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(oct, 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mounts on the disk at `disk_dir` (`<sys>/block/<name>`, whose `dev` is `disk_dev`) or
/// on any of its partitions (subdirectories with a `partition` file).
pub(crate) fn mounts_on(disk_dir: &Path, disk_dev: &str, entries: &[MountEntry]) -> Vec<Mount> {
    let name = disk_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut devs = vec![(disk_dev.to_string(), name)];
    if let Ok(rd) = std::fs::read_dir(disk_dir) {
        for e in rd.filter_map(|e| e.ok()) {
            let p = e.path();
            if p.join("partition").exists()
                && let Some(d) = read_attr(&p.join("dev"))
            {
                devs.push((d, e.file_name().to_string_lossy().into_owned()));
            }
        }
    }
    entries
        .iter()
        .filter_map(|m| {
            let (_, source) = devs.iter().find(|(d, _)| *d == m.dev)?;
            Some(Mount {
                source: source.clone(),
                target: m.target.clone(),
                fstype: m.fstype.clone(),
                writable: m.writable,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_mountinfo_with_optional_fields_and_escapes() {
        let text = "27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard\n\
                    40 27 7:3 / /mnt/my\\040disk ro,relatime - ext4 /dev/loop3 ro\n\
                    garbage line\n";
        let e = parse(text);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].dev, "254:0");
        assert_eq!(e[0].fstype, "ext4");
        assert!(e[0].writable);
        assert_eq!(e[1].target, PathBuf::from("/mnt/my disk"));
        assert!(!e[1].writable);
    }
}
