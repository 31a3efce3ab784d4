//! Reading and writing knob files. The journaled apply path goes through [`KnobIo`] so that
//! unit tests can put a small kernel simulation (scheduler switch recreates `iosched/`, resets
//! `nr_requests`, ...) behind fake sysfs trees; production uses [`RealIo`].

use crate::types::{ApplyOrder, KnobValue};
use crate::{Error, Result};
use std::io::Write;
use std::path::Path;

/// Reads and writes knob files.
pub trait KnobIo {
    /// The file's content, trimmed.
    fn read(&self, path: &Path) -> std::io::Result<String>;
    /// Writes `text` (already `"{v}\n"`) to an existing file.
    fn write(&self, path: &Path, text: &str) -> std::io::Result<()>;
}

/// The real filesystem: one `write(2)` per value, never creating files.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealIo;

impl KnobIo for RealIo {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        std::fs::read_to_string(path).map(|s| s.trim().to_string())
    }

    fn write(&self, path: &Path, text: &str) -> std::io::Result<()> {
        // O_TRUNC is ignored by sysfs/procfs and makes plain files (fake trees) behave.
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(path)?;
        f.write_all(text.as_bytes())
    }
}

/// Parses an integer knob value as the kernel prints it (decimal, optional sign).
pub(crate) fn parse_int(text: &str) -> Option<i64> {
    text.trim().parse().ok()
}

/// Reads a knob file through `io`, as an [`Error::Io`] naming the file on failure.
pub(crate) fn read_knob(io: &dyn KnobIo, path: &Path) -> Result<String> {
    io.read(path)
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))
}

/// The value of knob `name` at `path` as the journal and read-back compare it: the active
/// scheduler's name for `scheduler`, `1`/`0` for a feature flag of `sched/features`
/// ([`super::features::feature_state`]; a flag the kernel does not list is ENOENT), else the
/// file's text.
pub(crate) fn read_value(
    io: &dyn KnobIo,
    path: &Path,
    order: ApplyOrder,
    name: &str,
) -> Result<String> {
    let text = read_knob(io, path)?;
    Ok(match order {
        ApplyOrder::Scheduler => crate::device::parse_scheduler(&text).1.unwrap_or(text),
        ApplyOrder::SchedFeature => super::features::feature_state(&text, name)
            .ok_or_else(|| {
                Error::io(
                    format!("reading flag {name} in {}", path.display()),
                    std::io::Error::from_raw_os_error(libc::ENOENT),
                )
            })?
            .to_string(),
        _ => text,
    })
}

/// What to write to knob `name`'s file for `value` (without the newline): the value, or for a
/// feature flag `X` / `NO_X` ([`super::features::feature_write`]).
pub(crate) fn write_text(order: ApplyOrder, name: &str, value: &KnobValue) -> String {
    match order {
        ApplyOrder::SchedFeature => super::features::feature_write(name, value),
        _ => value.to_string(),
    }
}
