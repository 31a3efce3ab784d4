//! `--scratch`: a throwaway file-backed loop device with ext4, mounted under a temporary
//! directory; the zero-configuration real device.
//!
//! [`Scratch`] is a guard. Dropping it (normal end, error, panic unwinding, or the
//! [`crate::Error::Interrupted`] path taken after Ctrl-C/SIGTERM) kills any process
//! still using the mount, unmounts it (retrying, then lazily as a last resort), detaches the
//! loop device and removes the backing file. SIGKILL cannot be caught: after `kill -9` of
//! sweetspot the loop device, the mount and the backing file under `$TMPDIR/sweetspot-scratch-*`
//! remain until the next `--scratch` run or `sweetspot restore` removes them
//! ([`crate::bench::stale`]; a scratch holds a lock that tells a leftover from a live run),
//! and one with another `--db` leaves it alone while the database recorded in its directory
//! ([`crate::bench::journal_db`]) has its knobs open.
//!
//! With `--emulate` ([`Scratch::create_emulated`]) the loop device is attached, with direct
//! I/O, to a FUSE file at `<dir>/fuse/disk.img` that a [`Server`] (sweetspot's emulator in a
//! child process) serves from the backing file; cleanup stops it after the loop device is
//! detached.
//!
//! For a disk model ([`Spec::rotational`]) the loop queue is marked `queue/rotational = 1`
//! after attaching, and put back before detaching. drivers/block/loop.c computes the flag at
//! every attach (`loop_update_limits`: rotational only when the backing file's block device
//! is), and a FUSE file has none, so without this the kernel treats the emulated disk as flash.
//! What reads the flag: bfq (`idling_boosts_thr_without_issues`: idling for sequential,
//! I/O-bound queues even with a deep device queue; `BFQ_RQ_SEEKY`: any far request is seeky;
//! its first peak-rate guess `ref_rate[nonrot]`, taken when bfq is attached). Writeback
//! throttling's default (`wbt_default_latency_nsec` in block/blk-wbt.c: 75 ms rotational,
//! 2 ms not) is taken only when wbt is set up (queue registration) or when -1 is written,
//! not when the flag changes; [`crate::bench::real::RealDevice::scratch_emulated`] therefore
//! starts a disk model from 75000 us, what a real disk gets. After a SIGKILL the flag stays
//! on the leftover loop device until it is detached by the sweep; the next attach of that
//! loop number computes it afresh.

use crate::bench::emulate::{Server, Spec};
use crate::bench::mounts::{kill_users, tool, unmount};
use crate::bench::stale;
use crate::{Error, Result};
use nix::fcntl::Flock;
use std::path::{Path, PathBuf};

/// Default size of the backing file, MiB (sparse: only written blocks take space).
pub const SCRATCH_MIB: u64 = 1024;

/// A mounted scratch loop device (see the module docs).
#[derive(Debug)]
pub struct Scratch {
    dir: Option<tempfile::TempDir>,
    backing: PathBuf,
    mnt: PathBuf,
    loop_dev: Option<PathBuf>,
    mounted: bool,
    /// The `--emulate` server, stopped after the loop device is detached.
    emulator: Option<Server>,
    /// `queue/rotational` and the value it had before a disk model set it to 1.
    rotational: Option<(PathBuf, String)>,
    /// The owner lock (see [`stale`]); declared last, so it is released after cleanup.
    _owner: Flock<std::fs::File>,
}

impl Scratch {
    /// Creates a `size_mib` MiB sparse backing file in a new `$TMPDIR/sweetspot-scratch-*`
    /// directory, attaches it (`losetup -f --show`), makes ext4 on it (`mkfs.ext4 -q`, inode
    /// tables initialised now, so no lazy-init writes disturb the runs) and mounts it.
    /// Errors: not root, too little free space (says how much is needed), a failing tool.
    /// Whatever was made before an error is removed again. Leftovers of SIGKILLed runs are
    /// removed first ([`stale::sweep`]). `db` is the database that journals the device's
    /// knobs: it is recorded in the directory ([`crate::bench::journal_db::record`]) before the
    /// loop device is attached, and the sweep leaves alone leftovers whose knobs another
    /// database still has open.
    pub fn create(size_mib: u64, db: &Path) -> Result<Scratch> {
        Scratch::create_emulated(size_mib, None, Path::new(""), db)
    }

    /// [`Scratch::create`], or with `emulate` a slow device: ext4 is made on the backing file
    /// directly (at host speed), a [`Server`] (`exe __worker emulate`, `exe` being sweetspot's
    /// binary) serves it as `<dir>/fuse/disk.img`, and the loop device goes over that with
    /// `--direct-io=on`, so each request the loop driver issues reaches the emulator's model.
    /// Errors as for `create`, and no `/dev/fuse`.
    pub fn create_emulated(
        size_mib: u64,
        emulate: Option<&Spec>,
        exe: &Path,
        db: &Path,
    ) -> Result<Scratch> {
        if !nix::unistd::geteuid().is_root() {
            return Err(Error::BadInput(
                "--scratch needs root (losetup, mkfs.ext4, mount)".into(),
            ));
        }
        let tmp = std::env::temp_dir();
        let swept = stale::sweep(&tmp, db);
        for what in swept.removed {
            tracing::warn!("leftover of a killed run: {what}");
        }
        for why in swept.left {
            tracing::warn!("{why}");
        }
        crate::bench::fsutil::check_space(&tmp, size_mib << 20, "the --scratch backing file")?;
        let dir = tempfile::Builder::new()
            .prefix(stale::DIR_PREFIX)
            .tempdir()
            .map_err(|e| Error::io(format!("creating a directory in {}", tmp.display()), e))?;
        let owner = stale::own(dir.path())
            .map_err(|e| Error::io(format!("locking {}", dir.path().display()), e))?;
        // Before the loop device exists, so before any of its knobs can change.
        crate::bench::journal_db::record(dir.path(), db).map_err(|e| {
            Error::io(
                format!("recording the database in {}", dir.path().display()),
                e,
            )
        })?;
        let backing = dir.path().join("backing.img");
        let mnt = dir.path().join("mnt");
        let mut s = Scratch {
            dir: Some(dir),
            backing,
            mnt,
            loop_dev: None,
            mounted: false,
            emulator: None,
            rotational: None,
            _owner: owner,
        };
        std::fs::create_dir(&s.mnt)
            .map_err(|e| Error::io(format!("creating {}", s.mnt.display()), e))?;
        let f = std::fs::File::create(&s.backing)
            .map_err(|e| Error::io(format!("creating {}", s.backing.display()), e))?;
        f.set_len(size_mib << 20)
            .map_err(|e| Error::io(format!("sizing {}", s.backing.display()), e))?;
        drop(f);
        let mkfs = |target: &Path| {
            tool(
                "mkfs.ext4",
                &[
                    "-q".as_ref(),
                    "-F".as_ref(),
                    "-E".as_ref(),
                    "lazy_itable_init=0,lazy_journal_init=0,nodiscard".as_ref(),
                    target.as_os_str(),
                ],
            )
        };
        if let Some(spec) = emulate {
            mkfs(&s.backing)?;
            let fuse_dir = s.dir_path().join(stale::FUSE_DIR);
            std::fs::create_dir(&fuse_dir)
                .map_err(|e| Error::io(format!("creating {}", fuse_dir.display()), e))?;
            let em = Server::start(spec, &s.backing, &fuse_dir, exe)?;
            let file = em.file();
            s.emulator = Some(em);
            let out = tool(
                "losetup",
                &[
                    "-f".as_ref(),
                    "--show".as_ref(),
                    "--direct-io=on".as_ref(),
                    file.as_os_str(),
                ],
            )?;
            s.loop_dev = Some(PathBuf::from(out.trim()));
            if spec.rotational() {
                s.mark_rotational()?;
            }
        } else {
            let out = tool(
                "losetup",
                &["-f".as_ref(), "--show".as_ref(), s.backing.as_os_str()],
            )?;
            s.loop_dev = Some(PathBuf::from(out.trim()));
            mkfs(s.loop_dev.as_deref().unwrap_or(Path::new("")))?;
        }
        let dev = s.loop_dev.clone().unwrap_or_default();
        nix::mount::mount(
            Some(&dev),
            &s.mnt,
            Some("ext4"),
            nix::mount::MsFlags::empty(),
            None::<&str>,
        )
        .map_err(|e| {
            Error::io(
                format!("mounting {} on {}", dev.display(), s.mnt.display()),
                e.into(),
            )
        })?;
        s.mounted = true;
        tracing::info!(
            "scratch: {} on {} ({size_mib} MiB)",
            dev.display(),
            s.mnt.display()
        );
        Ok(s)
    }

    /// Sets the loop queue's `queue/rotational` to 1 (see the module docs), remembering the
    /// value it had. Errors: the attribute cannot be read, written, or does not read back 1.
    fn mark_rotational(&mut self) -> Result<()> {
        let path = PathBuf::from(format!(
            "/sys/block/{}/queue/rotational",
            self.device_name()
        ));
        let read = |p: &Path| {
            std::fs::read_to_string(p)
                .map(|v| v.trim().to_string())
                .map_err(|e| Error::io(format!("reading {}", p.display()), e))
        };
        let old = read(&path)?;
        std::fs::write(&path, "1\n")
            .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
        self.rotational = Some((path.clone(), old));
        match read(&path)?.as_str() {
            "1" => Ok(()),
            v => Err(Error::Failed(format!(
                "{}: wrote 1, reads back {v}",
                path.display()
            ))),
        }
    }

    /// Where the scratch filesystem is mounted.
    pub fn mount_point(&self) -> &Path {
        &self.mnt
    }

    /// The loop device's kernel name, e.g. `loop3`.
    pub fn device_name(&self) -> String {
        self.loop_dev
            .as_deref()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// The backing file.
    pub fn backing_file(&self) -> &Path {
        &self.backing
    }

    /// The `--emulate` server, if this scratch has one.
    pub fn emulator(&self) -> Option<&Server> {
        self.emulator.as_ref()
    }

    fn dir_path(&self) -> PathBuf {
        self.dir
            .as_ref()
            .map(|d| d.path().to_path_buf())
            .unwrap_or_default()
    }

    /// Kills strays, unmounts, detaches and removes; each step is attempted even when an earlier
    /// one failed. Returns the first failure.
    pub fn cleanup(&mut self) -> Result<()> {
        let mut first: Option<Error> = None;
        if self.mounted {
            kill_users(&self.mnt);
            match unmount(&self.mnt) {
                Ok(()) => self.mounted = false,
                Err(e) => first = first.or(Some(e)),
            }
        }
        // Before detaching: the queue outlives `losetup -d`.
        if let Some((path, old)) = self.rotational.take()
            && let Err(e) = std::fs::write(&path, format!("{old}\n"))
        {
            first = first.or(Some(Error::io(format!("restoring {}", path.display()), e)));
        }
        if let Some(dev) = self.loop_dev.take()
            && let Err(e) = tool("losetup", &["-d".as_ref(), dev.as_os_str()])
        {
            first = first.or(Some(e));
        }
        // After the loop device: it holds the FUSE file open until it is detached.
        if let Some(mut em) = self.emulator.take()
            && let Err(e) = em.stop()
        {
            first = first.or(Some(e));
        }
        if let Some(dir) = self.dir.take()
            && !self.mounted
            && let Err(e) = dir.close()
        {
            first = first.or(Some(Error::io("removing the scratch directory", e)));
        }
        match first {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Err(e) = self.cleanup() {
            tracing::error!("scratch cleanup: {e}");
        }
    }
}
