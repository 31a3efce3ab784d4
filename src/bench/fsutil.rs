//! Small filesystem helpers for real runs: page-cache eviction of our own files, free space,
//! `syncfs`, the block device a path lives on, and the opt-in global cache drop.

use crate::{Error, Result};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Evicts a file's pages from the page cache: `fsync` (dirty pages cannot be dropped) then
/// `posix_fadvise(POSIX_FADV_DONTNEED)` over the whole file. Only this file is affected.
pub(crate) fn evict(path: &Path) -> Result<()> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .open(path)
        .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
    evict_file(&f).map_err(|e| Error::io(format!("evicting {}", path.display()), e))
}

/// [`evict`] for an open file.
pub(crate) fn evict_file(f: &std::fs::File) -> std::io::Result<()> {
    f.sync_data()?;
    nix::fcntl::posix_fadvise(f, 0, 0, nix::fcntl::PosixFadviseAdvice::POSIX_FADV_DONTNEED)
        .map_err(std::io::Error::from)
}

/// Bytes available to this (unprivileged-equivalent) user on the filesystem of `path`
/// (`statvfs(3)`: f_bavail × f_frsize).
pub(crate) fn free_bytes(path: &Path) -> Result<u64> {
    let s = nix::sys::statvfs::statvfs(path)
        .map_err(|e| Error::io(format!("statvfs {}", path.display()), e.into()))?;
    Ok(s.blocks_available() as u64 * s.fragment_size() as u64)
}

/// Fails with a message naming how much is needed when the filesystem of `path` has less than
/// `needed` bytes free (exit 2: the user picked a target that is too small).
pub(crate) fn check_space(path: &Path, needed: u64, what: &str) -> Result<()> {
    let free = free_bytes(path)?;
    if free < needed {
        return Err(Error::BadInput(format!(
            "{}: not enough free space for {what}: needs {} MiB, has {} MiB",
            path.display(),
            needed.div_ceil(1 << 20),
            free >> 20
        )));
    }
    Ok(())
}

/// Writes the filesystem of `path` back to its device (`syncfs(2)`), so that one run's dirty
/// pages do not spill into the next run.
pub(crate) fn syncfs(path: &Path) -> Result<()> {
    let f = std::fs::File::open(path)
        .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
    nix::unistd::syncfs(&f).map_err(|e| Error::io(format!("syncfs {}", path.display()), e.into()))
}

/// `(major, minor)` of the device holding `path` (its `st_dev`).
pub(crate) fn dev_of(path: &Path) -> Result<(u64, u64)> {
    let m =
        std::fs::metadata(path).map_err(|e| Error::io(format!("stat {}", path.display()), e))?;
    let d = m.dev();
    Ok((nix::sys::stat::major(d), nix::sys::stat::minor(d)))
}

/// `--drop-caches`: `sync`, then writes `3` to `<proc>/sys/vm/drop_caches` (page cache,
/// dentries and inodes of the whole system; Documentation/admin-guide/sysctl/vm.rst). Only
/// ever called when the user asked for it.
pub(crate) fn drop_caches(proc_root: &Path) -> Result<()> {
    nix::unistd::sync();
    let p = proc_root.join("sys/vm/drop_caches");
    std::fs::write(&p, "3\n").map_err(|e| Error::io(format!("writing 3 to {}", p.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_space_names_what_is_needed() {
        let t = tempfile::tempdir().unwrap();
        check_space(t.path(), 1, "the job").unwrap();
        let e = check_space(t.path(), u64::MAX / 2, "the job").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("needs"), "{e}");
    }

    #[test]
    fn evicts_own_file_and_reports_dev() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("f");
        std::fs::write(&p, vec![7u8; 1 << 16]).unwrap();
        evict(&p).unwrap();
        assert_eq!(std::fs::read(&p).unwrap().len(), 1 << 16);
        assert_eq!(dev_of(&p).unwrap(), dev_of(t.path()).unwrap());
        assert!(evict(&t.path().join("missing")).is_err());
    }

    #[test]
    fn drop_caches_writes_3_under_the_given_proc_root() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("sys/vm")).unwrap();
        drop_caches(t.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(t.path().join("sys/vm/drop_caches")).unwrap(),
            "3\n"
        );
    }
}
