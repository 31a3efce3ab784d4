//! A disk's stable identity, without udev. Kernel names (sda, nvme0n1) are not stable across
//! boots, so sweet spots are keyed by, in order of preference:
//!
//! 1. `loop:<backing file>` for a loop device (`loop/backing_file`);
//! 2. `wwid:<wwid>` (`<disk>/wwid` for NVMe, `<disk>/device/wwid` for SCSI);
//! 3. `model-serial:<model>:<serial>` (`device/model` and `device/serial` or `<disk>/serial`),
//!    each field percent-encoded where it must be (`model_serial`);
//! 4. `by-path:<path>`: where `<disk>/device` resolves under `/sys/devices` (the bus path);
//! 5. `virtual:<name>` for a device with none of these (zram, ram): unstable, said so.

use super::read_attr;
use crate::sysroot::SysRoot;

/// The stable identity of the whole disk `name` (see the module docs for the order).
pub(crate) fn identity(root: &SysRoot, name: &str) -> String {
    let base = root.block_dev(name);
    let nonempty = |p: std::path::PathBuf| read_attr(&p).filter(|s| !s.is_empty());
    if let Some(file) = nonempty(base.join("loop/backing_file")) {
        return format!("loop:{file}");
    }
    if let Some(w) = nonempty(base.join("wwid")).or_else(|| nonempty(base.join("device/wwid"))) {
        return format!("wwid:{w}");
    }
    let serial = nonempty(base.join("device/serial")).or_else(|| nonempty(base.join("serial")));
    if let (Some(model), Some(serial)) = (nonempty(base.join("device/model")), serial) {
        return model_serial(&model, &serial);
    }
    if let Ok(target) = std::fs::canonicalize(base.join("device")) {
        let devices = std::fs::canonicalize(root.sys.join("devices"))
            .unwrap_or_else(|_| root.sys.join("devices"));
        let rel = target.strip_prefix(&devices).unwrap_or(&target);
        return format!("by-path:{}", rel.display());
    }
    format!("virtual:{name}")
}

/// The `model-serial:` identity of a disk: `model-serial:<model>:<serial>`, where a `%` and
/// a control character (or line separator) in either field, and a `:` in the serial, are
/// percent-encoded as their UTF-8 bytes (`%25`, `%0A`, `%3A`). The serial, with no raw `:`,
/// is then the last field whatever the model holds, so [`parse_model_serial`] gives back both
/// exactly; a model's `:` stays as it is, so the identities of such disks read before this
/// encoding (and every identity without a `%`) are unchanged.
pub(crate) fn model_serial(model: &str, serial: &str) -> String {
    format!(
        "model-serial:{}:{}",
        encode(model, false),
        encode(serial, true)
    )
}

fn encode(s: &str, colon: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '%' || (colon && c == ':') || crate::types::text::is_control(c) {
            let mut buf = [0; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `s` with every `%XX` (two hex digits) decoded to its byte; a `%` not followed by two hex
/// digits stays as it is (identities stored before the encoding could hold one).
fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .filter(|h| h.chars().all(|c| c.is_ascii_hexdigit()))
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The model and serial of a `model-serial:` identity's rest (`<model>:<serial>`, as
/// [`model_serial`] writes it, or as stored before it encoded anything); `None` without a
/// `:`.
pub(crate) fn parse_model_serial(rest: &str) -> Option<(String, String)> {
    let (model, serial) = rest.rsplit_once(':')?;
    Some((decode(model), decode(serial)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_serial_round_trips_any_serial() {
        for (m, s) in [
            ("M", "S:3"),
            ("WDC WD5000:v2", "WD-123"),
            ("50%", "%3A"),
            ("M\"\\$(id)#${x}", "S\n[script]\ntype=script"),
            ("Ünï", "\u{1b}[31m"),
        ] {
            let id = model_serial(m, s);
            let rest = id.strip_prefix("model-serial:").unwrap_or_default();
            assert_eq!(
                parse_model_serial(rest),
                Some((m.to_string(), s.to_string())),
                "{id}"
            );
            assert!(!id.contains(['\n', '\u{1b}']), "{id}");
        }
        assert_eq!(model_serial("M", "S:3"), "model-serial:M:S%3A3");
        // Stored before the encoding: the same as the old reading (the serial last).
        assert_eq!(
            parse_model_serial("WDC WD5000:v2:WD-123"),
            Some(("WDC WD5000:v2".into(), "WD-123".into()))
        );
        assert_eq!(
            parse_model_serial("M 100%:S"),
            Some(("M 100%".into(), "S".into()))
        );
        assert_eq!(
            model_serial("WDC WD5000:v2", "WD-123"),
            "model-serial:WDC WD5000:v2:WD-123"
        );
    }
}
