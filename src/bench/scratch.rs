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
//! With `--emulate` (`Scratch::create_emulated`) the loop device is attached, with direct
//! I/O, to a FUSE file at `<dir>/fuse/disk.img` that a [`Server`] (sweetspot's emulator in a
//! child process) serves from the backing file; cleanup stops it after the loop device is
//! detached.
//!
//! Attaching a file sets some of the loop queue's knobs, and they outlive `losetup -d`
//! (measured on 6.18: a fresh loop device reads `read_ahead_kb` 128 and `rotational` 0;
//! attached to a file on a rotational disk 2560 and 1, and still 2560 and 1 once detached).
//! So `BASELINE_KNOBS` are read on the loop number before it is attached (the first free
//! one, `losetup -f`, then attached by name) and written back before it is detached: the
//! next user of that loop number finds its queue as it was, as the report says.
//!
//! For a disk model (`Spec::rotational`) the loop queue is marked `queue/rotational = 1`
//! after attaching, and put back with the baseline. drivers/block/loop.c computes the flag at
//! every attach (`loop_update_limits`: rotational only when the backing file's block device
//! is), and a FUSE file has none, so without this the kernel treats the emulated disk as flash.
//! What reads the flag: bfq (`idling_boosts_thr_without_issues`: idling for sequential,
//! I/O-bound queues even with a deep device queue; `BFQ_RQ_SEEKY`: any far request is seeky;
//! its first peak-rate guess `ref_rate[nonrot]`, taken when bfq is attached). Writeback
//! throttling's default (`wbt_default_latency_nsec` in block/blk-wbt.c: 75 ms rotational,
//! 2 ms not) is taken only when wbt is set up (queue registration) or when -1 is written,
//! not when the flag changes; [`crate::bench::device_testbed::RealDevice::scratch_emulated`] therefore
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
pub(crate) const SCRATCH_MIB: u64 = 1024;

/// The loop queue's knobs (under `/sys/block/loopN/queue/`) that attaching a file sets and
/// detaching leaves (see the module docs): read before the attach, put back before the
/// detach.
pub(crate) const BASELINE_KNOBS: [&str; 2] = ["read_ahead_kb", "rotational"];

/// How often a free loop number is looked for again when another process attached it
/// between `losetup -f` and our attach.
const ATTACH_TRIES: u32 = 5;

/// Makes ext4 on `target` (`mkfs.ext4 -q`), inode tables and journal initialised now and
/// no discard. Errors: a failing `mkfs.ext4`.
fn mkfs(target: &Path) -> Result<()> {
    tool(
        "mkfs.ext4",
        &[
            "-q".as_ref(),
            "-F".as_ref(),
            "-E".as_ref(),
            "lazy_itable_init=0,lazy_journal_init=0,nodiscard".as_ref(),
            target.as_os_str(),
        ],
    )?;
    Ok(())
}

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
    /// The loop queue's [`BASELINE_KNOBS`] (path, value) as they were before the attach.
    baseline: Vec<(PathBuf, String)>,
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
    pub(crate) fn create_emulated(
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
        let mut s = Scratch::in_new_dir(&tmp, db)?;
        s.make_backing(size_mib)?;
        match emulate {
            Some(spec) => s.attach_emulated(spec, exe)?,
            None => {
                let backing = s.backing.clone();
                s.attach(&backing, false)?;
                mkfs(s.loop_dev.as_deref().unwrap_or(Path::new("")))?;
            }
        }
        s.mount(size_mib)?;
        Ok(s)
    }

    /// A scratch with nothing made yet but its directory: a new `sweetspot-scratch-*`
    /// directory in `tmp`, locked as its owner's ([`stale::own`]) and with `db` recorded in it.
    /// Errors: the directory cannot be made, locked or written.
    fn in_new_dir(tmp: &Path, db: &Path) -> Result<Scratch> {
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
        Ok(Scratch {
            dir: Some(dir),
            backing,
            mnt,
            loop_dev: None,
            mounted: false,
            emulator: None,
            baseline: Vec::new(),
            _owner: owner,
        })
    }

    /// Creates the mount point and the sparse backing file of `size_mib` MiB.
    fn make_backing(&self, size_mib: u64) -> Result<()> {
        std::fs::create_dir(&self.mnt)
            .map_err(|e| Error::io(format!("creating {}", self.mnt.display()), e))?;
        let f = std::fs::File::create(&self.backing)
            .map_err(|e| Error::io(format!("creating {}", self.backing.display()), e))?;
        f.set_len(size_mib << 20)
            .map_err(|e| Error::io(format!("sizing {}", self.backing.display()), e))?;
        drop(f);
        Ok(())
    }

    /// Makes ext4 on the backing file, starts the emulator [`Server`] for `spec` over it and
    /// attaches the loop device to the server's file with direct I/O, marked rotational for
    /// a disk model.
    fn attach_emulated(&mut self, spec: &Spec, exe: &Path) -> Result<()> {
        mkfs(&self.backing)?;
        let fuse_dir = self.dir_path().join(stale::FUSE_DIR);
        std::fs::create_dir(&fuse_dir)
            .map_err(|e| Error::io(format!("creating {}", fuse_dir.display()), e))?;
        let em = Server::start(spec, &self.backing, &fuse_dir, exe)?;
        let file = em.file();
        self.emulator = Some(em);
        self.attach(&file, true)?;
        if spec.rotational() {
            self.mark_rotational()?;
        }
        Ok(())
    }

    /// Mounts the loop device's ext4 on the mount point (`size_mib`, MiB, only for the log).
    fn mount(&mut self, size_mib: u64) -> Result<()> {
        let dev = self.loop_dev.clone().unwrap_or_default();
        nix::mount::mount(
            Some(&dev),
            &self.mnt,
            Some("ext4"),
            nix::mount::MsFlags::empty(),
            None::<&str>,
        )
        .map_err(|e| {
            Error::io(
                format!("mounting {} on {}", dev.display(), self.mnt.display()),
                e.into(),
            )
        })?;
        self.mounted = true;
        tracing::info!(
            "scratch: {} on {} ({size_mib} MiB)",
            dev.display(),
            self.mnt.display()
        );
        Ok(())
    }

    /// Attaches `file` to the first free loop device (`losetup -f`, then `losetup
    /// [--direct-io=on] /dev/loopN FILE`), its queue's [`BASELINE_KNOBS`] read first. A loop
    /// number another process took in between is looked for again ([`ATTACH_TRIES`] times).
    /// Errors: a failing `losetup`, an unreadable queue attribute.
    fn attach(&mut self, file: &Path, direct_io: bool) -> Result<()> {
        let mut tries = 0;
        loop {
            tries += 1;
            let dev = PathBuf::from(tool("losetup", &["-f".as_ref()])?.trim());
            let name = dev
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let queue = Path::new("/sys/block").join(&name).join("queue");
            let baseline = BASELINE_KNOBS
                .iter()
                .map(|k| {
                    let p = queue.join(k);
                    read_attr(&p).map(|v| (p, v))
                })
                .collect::<Result<Vec<_>>>()?;
            let mut args: Vec<&std::ffi::OsStr> = Vec::new();
            if direct_io {
                args.push("--direct-io=on".as_ref());
            }
            args.extend([dev.as_os_str(), file.as_os_str()]);
            match tool("losetup", &args) {
                Ok(_) => {
                    self.loop_dev = Some(dev);
                    self.baseline = baseline;
                    return Ok(());
                }
                // Taken by another process since `losetup -f`: its baseline is not ours.
                Err(_)
                    if tries < ATTACH_TRIES
                        && Path::new("/sys/block").join(&name).join("loop").exists() => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Sets the loop queue's `queue/rotational` to 1 (see the module docs; the baseline
    /// puts it back). Errors: the attribute cannot be written or does not read back 1.
    fn mark_rotational(&mut self) -> Result<()> {
        let path = PathBuf::from(format!(
            "/sys/block/{}/queue/rotational",
            self.device_name()
        ));
        std::fs::write(&path, "1\n")
            .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
        match read_attr(&path)?.as_str() {
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
    pub(crate) fn emulator(&self) -> Option<&Server> {
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
    pub(crate) fn cleanup(&mut self) -> Result<()> {
        let mut first: Option<Error> = None;
        if self.mounted {
            kill_users(&self.mnt);
            match unmount(&self.mnt) {
                Ok(()) => self.mounted = false,
                Err(e) => first = first.or(Some(e)),
            }
        }
        // Before detaching: the queue outlives `losetup -d`.
        for (path, old) in std::mem::take(&mut self.baseline) {
            if let Err(e) = std::fs::write(&path, format!("{old}\n")) {
                first = first.or(Some(Error::io(format!("restoring {}", path.display()), e)));
            }
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

/// A sysfs attribute's value, trimmed. Errors: it cannot be read.
fn read_attr(p: &Path) -> Result<String> {
    std::fs::read_to_string(p)
        .map(|v| v.trim().to_string())
        .map_err(|e| Error::io(format!("reading {}", p.display()), e))
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Err(e) = self.cleanup() {
            tracing::error!("scratch cleanup: {e}");
        }
    }
}
