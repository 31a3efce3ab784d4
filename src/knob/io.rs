//! Reading and writing knob files. The journaled apply path goes through [`KnobIo`] so that
//! unit tests can put a small kernel simulation (scheduler switch recreates `iosched/`, resets
//! `nr_requests`, ...) behind fake sysfs trees; production uses [`RealIo`].

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
pub fn parse_int(text: &str) -> Option<i64> {
    text.trim().parse().ok()
}

/// Reads a knob file through `io`, as an [`Error::Io`] naming the file on failure.
pub fn read_knob(io: &dyn KnobIo, path: &Path) -> Result<String> {
    io.read(path)
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))
}
