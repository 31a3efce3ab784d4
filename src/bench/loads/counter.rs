//! The Loads counter shared between a load process and sweetspot: one `u64` in a small file
//! mapped `MAP_SHARED` by both. The load adds a unit as each piece of work completes; sweetspot
//! reads it when the job starts and after the load was killed. A mapping (not a pipe or a
//! final report) is used because the load is stopped with SIGKILL and cannot report at exit.

use crate::{Error, Result};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// A mapped counter. Both sides open the same file.
#[derive(Debug)]
pub(crate) struct Counter {
    ptr: *mut libc::c_void,
    _file: std::fs::File,
}

// SAFETY: the mapping is only accessed through an AtomicU64.
unsafe impl Send for Counter {}
// SAFETY: as for Send: the mapping is only accessed through an AtomicU64, so threads may share it.
unsafe impl Sync for Counter {}

const LEN: usize = 4096;

impl Counter {
    /// Creates (or truncates) the counter file at `path`, set to 0, and maps it.
    pub(crate) fn create(path: &Path) -> Result<Counter> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
        f.set_len(LEN as u64)
            .map_err(|e| Error::io(format!("sizing {}", path.display()), e))?;
        Self::map(f, path)
    }

    /// Maps an existing counter file (the load's side).
    pub(crate) fn open(path: &Path) -> Result<Counter> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        Self::map(f, path)
    }

    fn map(f: std::fs::File, path: &Path) -> Result<Counter> {
        use std::os::fd::AsRawFd;
        // SAFETY: a fresh shared mapping of a file we hold open and sized to LEN.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(Error::io(
                format!("mapping {}", path.display()),
                std::io::Error::last_os_error(),
            ));
        }
        Ok(Counter { ptr, _file: f })
    }

    fn cell(&self) -> &AtomicU64 {
        // SAFETY: page-aligned, LEN ≥ 8 bytes, mapped for the lifetime of self.
        unsafe { &*(self.ptr as *const AtomicU64) }
    }

    /// Adds `n` completed units.
    pub(crate) fn add(&self, n: u64) {
        self.cell().fetch_add(n, Ordering::SeqCst);
    }

    /// Sets the count (for loads that report a cumulative figure, like dbench).
    pub(crate) fn set(&self, n: u64) {
        self.cell().store(n, Ordering::SeqCst);
    }

    /// The units completed so far.
    pub(crate) fn get(&self) -> u64 {
        self.cell().load(Ordering::SeqCst)
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what map() mapped.
        unsafe {
            libc::munmap(self.ptr, LEN);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_mappings_see_each_other() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("c");
        let a = Counter::create(&p).unwrap();
        let b = Counter::open(&p).unwrap();
        b.add(5);
        b.add(2);
        assert_eq!(a.get(), 7);
        a.set(40);
        assert_eq!(b.get(), 40);
        assert!(Counter::open(&t.path().join("none")).is_err());
    }
}
