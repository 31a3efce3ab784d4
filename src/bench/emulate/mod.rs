//! `--scratch --emulate PRESET|SPEC`: a slow device with the kernel's real block queue in the
//! path, on any machine.
//!
//! ```text
//!  job, loads ─► ext4 ─► loopN (its queue: scheduler, fifo_batch, wbt_lat_usec, ...)
//!                          │ losetup --direct-io=on
//!                          ▼
//!              <scratch>/fuse/disk.img   (FUSE, served by [`Emulator`] in a [`Server`] process)
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
//! Lifecycle. The server is sweetspot's own code (`Emulator`, the fuser file system) but runs
//! in a child process, `sweetspot __worker emulate` ([`Server`]), not on threads of the run:
//! a process that serves a FUSE mount must never wait in the kernel for I/O through that same
//! mount. After a SIGKILL its other threads are gone at once, while a thread inside `fsync` or
//! `syncfs` on ext4 waits for writeback that only those threads could complete: the process
//! can then never exit (the kernel closes `/dev/fuse`, which would abort the connection, only
//! when the last thread exits). The SIGKILL test found exactly that. As a child it gets
//! `PR_SET_PDEATHSIG(SIGKILL)`, its own process group (a terminal's Ctrl-C reaches only the
//! run, which then tears down in order), and stops when its stdin (a pipe from the run)
//! closes: it never outlives the run. The [`crate::bench::scratch::Scratch`] that owns it
//! unmounts ext4, detaches the loop device, then stops the server (on exit, error, and after
//! Ctrl-C/SIGTERM). After a SIGKILL of the run the server dies with it, the kernel aborts the
//! connection (the descriptor is close-on-exec, so no load inherits it), I/O on the leftovers
//! fails at once instead of hanging, and the next `--scratch` run or `sweetspot restore`
//! sweeps the mount like the other scratch leftovers ([`crate::bench::stale`]).
//!
//! - [`spec`]: the SPEC grammar and the presets with the figures they come from;
//! - [`model`]: the pure service-time models;
//! - [`fuse`]: the fuser file system, its worker threads and counters.

#[cfg(feature = "emulate")]
pub mod fuse;
#[cfg(any(feature = "emulate", test))]
pub mod model;
pub mod spec;

pub use spec::Spec;

use crate::bench::IoCounters;
use crate::{Error, Result};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
#[cfg(feature = "emulate")]
use std::{sync::Arc, thread::JoinHandle};

/// The one file's name under the FUSE mount point.
pub(crate) const FILE_NAME: &str = "disk.img";

/// The FUSE file system type name shown in `/proc/mounts` (`fuse.<this>` is not used: fuser
/// sets the source). Leftovers are found by their place in a scratch directory, not by it.
#[cfg(feature = "emulate")]
pub(crate) const FS_NAME: &str = "sweetspot-emulate";

/// A running emulated device: a FUSE mount at `mnt` serving `mnt/disk.img`.
#[cfg(feature = "emulate")]
pub(crate) struct Emulator {
    mnt: PathBuf,
    spec: Spec,
    shared: Arc<fuse::Shared>,
    session: Option<fuser::BackgroundSession>,
    workers: Vec<JoinHandle<()>>,
    mounted: bool,
}

#[cfg(feature = "emulate")]
impl std::fmt::Debug for Emulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emulator")
            .field("mnt", &self.mnt)
            .field("spec", &self.spec.name())
            .field("mounted", &self.mounted)
            .finish()
    }
}

#[cfg(feature = "emulate")]
impl Emulator {
    /// Serves `backing` (its length is the device size) as `mnt/disk.img` through a FUSE
    /// mount on the existing empty directory `mnt`. Errors: no `/dev/fuse`, not root, a
    /// failing mount.
    pub(crate) fn start(spec: &Spec, backing: &Path, mnt: &Path) -> Result<Emulator> {
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
    pub(crate) fn file(&self) -> PathBuf {
        self.mnt.join(FILE_NAME)
    }

    /// The counters since the start.
    pub(crate) fn counters(&self) -> IoCounters {
        self.shared.counters()
    }

    /// Starts a new maximum of the queue depth (before a run).
    pub(crate) fn reset_max_depth(&self) {
        self.shared.reset_max_depth();
    }

    /// Unmounts the FUSE file system (retrying while the loop device lets go of the file,
    /// lazily as a last resort) and stops the threads. Call it after the loop device is
    /// detached. A lazy unmount leaves the session thread serving whoever still holds the file
    /// (without delays); it ends with the process.
    pub(crate) fn stop(&mut self) -> Result<()> {
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

#[cfg(feature = "emulate")]
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

/// What `sweetspot __worker emulate` is given (JSON).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct ServeSpec {
    /// The SPEC, canonical ([`Spec::canonical`]).
    pub spec: String,
    /// The sparse backing file.
    pub backing: PathBuf,
    /// The FUSE mount point (an existing empty directory).
    pub mnt: PathBuf,
}

/// The body of `sweetspot __worker emulate`: mounts, says `ready` on stdout, then answers
/// one line per request on stdin (`c`: the counters as JSON; `r`: reset the maximum queue
/// depth, answered `ok`) until stdin closes, then unmounts and exits.
///
/// The process runs under `SCHED_FIFO` priority 1 (its threads inherit it), when the kernel
/// allows: the device's timing must not depend on how busy the CPUs are. A worker that
/// sleeps 500 us and then waits 300 us for a CPU on a loaded 2-core machine is a slower
/// device than its spec (measured here with load average 13: 810 us for a 520 us read before
/// this). The threads mostly sleep; each request costs them one copy of its data.
#[cfg(feature = "emulate")]
pub(crate) fn serve(s: &ServeSpec) -> Result<()> {
    let spec = Spec::parse(&s.spec)?;
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: sched_setscheduler on this process with a valid sched_param.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        tracing::debug!(
            "emulate: SCHED_FIFO refused ({}); timing may suffer under CPU load",
            std::io::Error::last_os_error()
        );
    }
    let mut em = Emulator::start(&spec, &s.backing, &s.mnt)?;
    let mut out = std::io::stdout().lock();
    let say = |out: &mut std::io::StdoutLock<'_>, line: &str| {
        writeln!(out, "{line}").and_then(|()| out.flush())
    };
    let io = |e| Error::io("emulate: answering the run", e);
    say(&mut out, "ready").map_err(io)?;
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        match line.trim() {
            "c" => {
                let json = serde_json::to_string(&em.counters())
                    .map_err(|e| Error::Failed(format!("emulate: {e}")))?;
                say(&mut out, &json).map_err(io)?;
            }
            "r" => {
                em.reset_max_depth();
                say(&mut out, "ok").map_err(io)?;
            }
            _ => {}
        }
    }
    em.stop()
}

/// Without the `emulate` feature (a build for a board): refused, exit 2.
#[cfg(not(feature = "emulate"))]
pub(crate) fn serve(_: &ServeSpec) -> Result<()> {
    Err(unavailable())
}

/// The error of `--emulate` in a build without the `emulate` feature (cargo's
/// `--no-default-features`): no FUSE server is compiled in.
pub(crate) fn unavailable() -> Error {
    Error::BadInput(
        "--emulate: this sweetspot was built without the `emulate` feature (no FUSE server); \
         build it with `--features emulate`"
            .into(),
    )
}

/// An emulated device served by a child process (see the module docs): the run's handle.
pub struct Server {
    child: Option<Child>,
    pipes: Mutex<Option<(ChildStdin, BufReader<ChildStdout>)>>,
    spec: Spec,
    mnt: PathBuf,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("spec", &self.spec.name())
            .field("mnt", &self.mnt)
            .finish()
    }
}

impl Server {
    /// Starts `exe __worker emulate` serving `backing` on `mnt` and waits until it has mounted.
    /// Errors: it could not be started, or it failed to mount (its message is on stderr).
    pub fn start(spec: &Spec, backing: &Path, mnt: &Path, exe: &Path) -> Result<Server> {
        let arg = serde_json::to_string(&ServeSpec {
            spec: spec.canonical(),
            backing: backing.to_path_buf(),
            mnt: mnt.to_path_buf(),
        })
        .map_err(|e| Error::Failed(format!("emulate: {e}")))?;
        let mut cmd = Command::new(exe);
        cmd.args(["__worker", "emulate"])
            .arg(arg)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        // SAFETY: only async-signal-safe calls (prctl, setpgid) between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0
                    || libc::setpgid(0, 0) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::io(format!("starting {} __worker emulate", exe.display()), e))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Failed("emulate: no pipes to the server".into()));
        };
        let mut server = Server {
            child: Some(child),
            pipes: Mutex::new(Some((stdin, BufReader::new(stdout)))),
            spec: spec.clone(),
            mnt: mnt.to_path_buf(),
        };
        match server.read_line() {
            Ok(l) if l == "ready" => Ok(server),
            _ => {
                let _ = server.stop();
                Err(Error::Failed(format!(
                    "emulate: the server did not mount {} (its error is above)",
                    mnt.display()
                )))
            }
        }
    }

    fn read_line(&self) -> Result<String> {
        let mut g = self.pipes.lock().unwrap_or_else(|p| p.into_inner());
        let (_, out) = g
            .as_mut()
            .ok_or_else(|| Error::Failed("emulate: the server is stopped".into()))?;
        let mut line = String::new();
        match out.read_line(&mut line) {
            Ok(0) => Err(Error::Failed("emulate: the server exited".into())),
            Ok(_) => Ok(line.trim().to_string()),
            Err(e) => Err(Error::io("emulate: reading from the server", e)),
        }
    }

    fn ask(&self, what: &str) -> Result<String> {
        {
            let mut g = self.pipes.lock().unwrap_or_else(|p| p.into_inner());
            let (input, _) = g
                .as_mut()
                .ok_or_else(|| Error::Failed("emulate: the server is stopped".into()))?;
            writeln!(input, "{what}")
                .and_then(|()| input.flush())
                .map_err(|e| Error::io("emulate: writing to the server", e))?;
        }
        self.read_line()
    }

    /// The emulated device's file (what the loop device is attached to).
    pub fn file(&self) -> PathBuf {
        self.mnt.join(FILE_NAME)
    }

    /// The counters since the server started.
    pub fn counters(&self) -> Result<IoCounters> {
        let line = self.ask("c")?;
        serde_json::from_str(&line)
            .map_err(|e| Error::Failed(format!("emulate: counters '{line}': {e}")))
    }

    /// Starts a new maximum of the queue depth (before a run).
    pub(crate) fn reset_max_depth(&self) -> Result<()> {
        self.ask("r").map(|_| ())
    }

    /// Closes the server's stdin, so it unmounts and exits; waits up to 10 s, then kills it.
    /// Call it after the loop device is detached.
    pub(crate) fn stop(&mut self) -> Result<()> {
        drop(self.pipes.lock().unwrap_or_else(|p| p.into_inner()).take());
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let t = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(st)) if st.success() => return Ok(()),
                Ok(Some(st)) => {
                    return Err(Error::Failed(format!(
                        "emulate: the server exited with {st}"
                    )));
                }
                Ok(None) if t.elapsed() < Duration::from_secs(10) => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                _ => break,
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        // Killed: the kernel aborted the connection; take the dead mount away.
        unmount(&self.mnt)?;
        Err(Error::Failed(
            "emulate: the server did not stop within 10 s; killed".into(),
        ))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            tracing::error!("{e}");
        }
    }
}
