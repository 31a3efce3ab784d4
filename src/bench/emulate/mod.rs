//! `--scratch --emulate PRESET|SPEC`: a slow device with the kernel's real block queue in the
//! path, on any machine.
//!
//! ```text
//!  job, loads ─► ext4 ─► loopN (its queue: scheduler, fifo_batch, wbt_lat_usec, ...)
//!                          │ losetup --direct-io=on
//!                          ▼
//!              <scratch>/fuse/disk.img   (FUSE, served in-process by [`Emulator`])
//!                          │ each request delayed as [`model::Model`] says
//!                          ▼
//!              <scratch>/backing.img     (sparse file on the host's disk)
//! ```
//!
//! A file-backed loop device on a fast virtual disk is CPU-bound, so no queue knob has
//! anything to win there. Here every request the loop driver issues reaches a service-time
//! model ([`model`]: flash-like latency + bandwidth, or a disk with seeks and rotation) before
//! it completes. The loop driver holds up to its `hw_queue_depth` (128) requests below the
//! scheduler, so the scheduler orders only what overflows that.
//!
//! Lifecycle: the server runs on threads of this process, so it cannot outlive the run. The
//! [`crate::bench::scratch::Scratch`] that owns it unmounts ext4, detaches the loop device and
//! then unmounts the FUSE file system (on exit, error, and after Ctrl-C/SIGTERM). After a
//! SIGKILL the kernel aborts the FUSE connection (its `/dev/fuse` descriptor is closed with the
//! process, and is close-on-exec, so no load inherits it): I/O on the leftovers fails at once
//! instead of hanging, and the next `--scratch` run or `sweetspot restore` sweeps the mount
//! like the other scratch leftovers ([`crate::bench::stale`]).
//!
//! - [`spec`]: the SPEC grammar and the presets with the figures they come from;
//! - [`model`]: the pure service-time models;
//! - [`fuse`]: the fuser file system, its worker threads and counters.

pub mod fuse;
pub mod model;
pub mod spec;

pub use spec::Spec;

use crate::bench::IoCounters;
use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The FUSE file system type name shown in `/proc/mounts` (`fuse.<this>` is not used: fuser
/// sets the source). Leftovers are found by their place in a scratch directory, not by it.
pub const FS_NAME: &str = "sweetspot-emulate";

/// A running emulated device: a FUSE mount at `mnt` serving `mnt/disk.img`.
pub struct Emulator {
    mnt: PathBuf,
    spec: Spec,
    shared: Arc<fuse::Shared>,
    session: Option<fuser::BackgroundSession>,
    workers: Vec<JoinHandle<()>>,
    mounted: bool,
}

impl std::fmt::Debug for Emulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emulator")
            .field("mnt", &self.mnt)
            .field("spec", &self.spec.name())
            .field("mounted", &self.mounted)
            .finish()
    }
}

impl Emulator {
    /// Serves `backing` (its length is the device size) as `mnt/disk.img` through a FUSE
    /// mount on the existing empty directory `mnt`. Errors: no `/dev/fuse`, not root, a
    /// failing mount.
    pub fn start(spec: &Spec, backing: &Path, mnt: &Path) -> Result<Emulator> {
        if !Path::new("/dev/fuse").exists() {
            return Err(Error::BadInput(
                "--emulate needs FUSE: /dev/fuse is missing (modprobe fuse)".into(),
            ));
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(backing)
            .map_err(|e| Error::io(format!("opening {}", backing.display()), e))?;
        let size = file
            .metadata()
            .map_err(|e| Error::io(format!("reading {}", backing.display()), e))?
            .len();
        let model = model::Model::new(spec.clone(), size);
        let servers = model.servers();
        let shared = fuse::Shared::new(model, file, size);
        let mut workers = Vec::with_capacity(servers);
        for i in 0..servers {
            let s = Arc::clone(&shared);
            let h = std::thread::Builder::new()
                .name(format!("emulate-{i}"))
                .spawn(move || s.work())
                .map_err(|e| Error::io("starting an emulator thread", e))?;
            workers.push(h);
        }
        let mut cfg = fuser::Config::default();
        cfg.mount_options = vec![
            fuser::MountOption::FSName(FS_NAME.into()),
            fuser::MountOption::NoDev,
            fuser::MountOption::NoSuid,
            fuser::MountOption::NoExec,
        ];
        cfg.n_threads = Some(1);
        let fs = fuse::DiskFs {
            shared: Arc::clone(&shared),
        };
        let mut em = Emulator {
            mnt: mnt.to_path_buf(),
            spec: spec.clone(),
            shared,
            session: None,
            workers,
            mounted: false,
        };
        let session = fuser::Session::new(fs, mnt, &cfg)
            .and_then(fuser::Session::spawn)
            .map_err(|e| Error::io(format!("mounting FUSE on {}", mnt.display()), e))?;
        em.session = Some(session);
        em.mounted = true;
        tracing::info!(
            "emulate: {} served from {} ({} MiB)",
            spec.name(),
            em.file().display(),
            size >> 20
        );
        Ok(em)
    }

    /// The emulated device's file (what the loop device is attached to).
    pub fn file(&self) -> PathBuf {
        self.mnt.join(fuse::FILE_NAME)
    }

    /// The spec served.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// The counters since the start.
    pub fn counters(&self) -> IoCounters {
        self.shared.counters()
    }

    /// Starts a new maximum of the queue depth (before a run).
    pub fn reset_max_depth(&self) {
        self.shared.reset_max_depth();
    }

    /// Unmounts the FUSE file system (retrying while the loop device lets go of the file,
    /// lazily as a last resort) and stops the threads. Call it after the loop device is
    /// detached. A lazy unmount leaves the session thread serving whoever still holds the file
    /// (without delays); it ends with the process.
    pub fn stop(&mut self) -> Result<()> {
        if !self.mounted {
            return Ok(());
        }
        self.mounted = false;
        self.shared.stop();
        // fuser's own unmount first (its mount guard then has nothing left to undo); while the
        // file is still busy, ours, which retries and then detaches lazily.
        let clean = match self.session.take() {
            Some(s) => match s.umount_and_join() {
                Ok(()) => Ok(true),
                Err(e) => {
                    tracing::debug!("emulate: {}: {e}; retrying", self.mnt.display());
                    unmount(&self.mnt)
                }
            },
            None => unmount(&self.mnt),
        };
        if clean.as_ref().is_ok_and(|c| *c) {
            for w in self.workers.drain(..) {
                let _ = w.join();
            }
        }
        // Lazily unmounted: the threads may still have work; they end with the process.
        clean.map(|_| ())
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            tracing::error!("emulate: {e}");
        }
    }
}

/// `umount` of a FUSE mount point, retried for up to 2 s while busy, then lazily. Returns
/// whether it was unmounted cleanly (false: lazily).
pub(crate) fn unmount(mnt: &Path) -> Result<bool> {
    use nix::mount::{MntFlags, umount2};
    let mut last = nix::errno::Errno::UnknownErrno;
    for _ in 0..20 {
        match umount2(mnt, MntFlags::empty()) {
            Ok(()) | Err(nix::errno::Errno::EINVAL) => return Ok(true),
            Err(e) => last = e,
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    tracing::warn!("{}: busy ({last}); detaching lazily", mnt.display());
    umount2(mnt, MntFlags::MNT_DETACH)
        .map(|()| false)
        .map_err(|e| Error::io(format!("unmounting {}", mnt.display()), e.into()))
}
