//! Helpers shared by the two integration test binaries (`tests/cli`, `tests/root`), most for
//! tests on real loop devices (CI runs as root).
//!
//! [`LoopDev`] makes a file-backed loop device and detaches it (unmounting first) in `Drop`,
//! so a failing or panicking test cleans up too. Each test makes its own device, so tests run
//! in parallel safely. [`FakeProc`] is a fake `/proc/sys/vm` so that no test touches the host's
//! vm knobs.
#![allow(dead_code)]

pub mod alone;
pub mod root;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Attaches `file` to a free loop device (`losetup -f --show`, with `--direct-io=on` if
/// `direct_io`) and returns its kernel name and `/dev` path. A loop device's request queue
/// outlives `losetup -d`, settings included: one left with another scheduler (a test that died
/// mid-way, a `tune --apply` on it) would start the next test elsewhere than the kernel's
/// default, so the scheduler is set to `none` first.
pub fn attach(file: &Path, direct_io: bool) -> (String, PathBuf) {
    let mut cmd = Command::new("losetup");
    if direct_io {
        cmd.arg("--direct-io=on");
    }
    let out = cmd
        .args(["-f", "--show"])
        .arg(file)
        .output()
        .expect("run losetup");
    assert!(
        out.status.success(),
        "losetup: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dev = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let name = dev
        .file_name()
        .expect("device name")
        .to_string_lossy()
        .into_owned();
    let _ = std::fs::write(
        Path::new("/sys/block").join(&name).join("queue/scheduler"),
        "none\n",
    );
    (name, dev)
}

/// The active scheduler of a `queue/scheduler` line (`none [mq-deadline] kyber` →
/// `mq-deadline`). Tests compare this, not the whole line: which schedulers a kernel offers is
/// a build option (`CONFIG_IOSCHED_BFQ`, `CONFIG_MQ_IOSCHED_KYBER`), so the line differs
/// between kernels.
pub fn active_scheduler(line: &str) -> String {
    line.split(['[', ']'])
        .nth(1)
        .unwrap_or_default()
        .to_string()
}

/// Every scheduler a `queue/scheduler` line offers, in its order, brackets dropped.
pub fn offered_schedulers(line: &str) -> Vec<String> {
    line.split_whitespace()
        .map(|s| s.trim_matches(['[', ']']).to_string())
        .collect()
}

/// A scheduler other than `none` and `mq-deadline` that this kernel offers (bfq if built,
/// else kyber), with a file its `queue/iosched/` directory has: for tests that need a detour
/// away from mq-deadline (whose `fifo_batch` then disappears).
pub fn detour_scheduler(line: &str) -> (&'static str, &'static str) {
    let offered = offered_schedulers(line);
    if offered.iter().any(|s| s == "bfq") {
        ("bfq", "slice_idle")
    } else {
        assert!(
            offered.iter().any(|s| s == "kyber"),
            "the kernel offers neither bfq nor kyber: {line}"
        );
        ("kyber", "read_lat_nsec")
    }
}

/// A file-backed loop device, detached on drop.
pub struct LoopDev {
    /// Kernel name, e.g. `loop3`.
    pub name: String,
    /// `/dev/loop3`.
    pub dev: PathBuf,
    /// The backing file.
    pub file: PathBuf,
    mounted: Option<PathBuf>,
    detached: bool,
    _dir: tempfile::TempDir,
}

impl LoopDev {
    /// A new loop device over a sparse file of `mib` MiB.
    pub fn new(mib: u64) -> LoopDev {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("disk.img");
        let f = std::fs::File::create(&file).expect("create backing file");
        f.set_len(mib << 20).expect("size backing file");
        drop(f);
        let (name, dev) = attach(&file, false);
        LoopDev {
            name,
            dev,
            file,
            mounted: None,
            detached: false,
            _dir: dir,
        }
    }

    /// Makes ext4 on the device and mounts it on a directory next to the backing file; it is
    /// unmounted on drop.
    pub fn mount_ext4(&mut self) -> PathBuf {
        let ok = Command::new("mkfs.ext4")
            .arg("-q")
            .arg(&self.dev)
            .status()
            .expect("mkfs.ext4")
            .success();
        assert!(ok, "mkfs.ext4 failed");
        let mnt = self._dir.path().join("mnt");
        std::fs::create_dir_all(&mnt).expect("mkdir mnt");
        let ok = Command::new("mount")
            .arg(&self.dev)
            .arg(&mnt)
            .status()
            .expect("mount")
            .success();
        assert!(ok, "mount failed");
        self.mounted = Some(mnt.clone());
        mnt
    }

    /// Detaches the device now (`losetup -d`; not mounted), as a user would: its queue, and
    /// [`LoopDev::sys`], stay. Drop then leaves it alone (the number may be another's by then).
    pub fn detach(&mut self) {
        assert!(self.mounted.is_none(), "detach: the device is mounted");
        let ok = Command::new("losetup")
            .arg("-d")
            .arg(&self.dev)
            .status()
            .expect("run losetup -d")
            .success();
        assert!(ok, "losetup -d {} failed", self.dev.display());
        self.detached = true;
    }

    /// `/sys/block/<name>/<rel>`.
    pub fn sys(&self, rel: &str) -> PathBuf {
        Path::new("/sys/block").join(&self.name).join(rel)
    }

    /// Reads a sysfs attribute of this device, trimmed.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.sys(rel))
            .unwrap_or_else(|e| panic!("read {rel}: {e}"))
            .trim()
            .to_string()
    }

    /// Writes a sysfs attribute by hand (as an admin would).
    pub fn write(&self, rel: &str, v: &str) {
        std::fs::write(self.sys(rel), format!("{v}\n")).unwrap_or_else(|e| panic!("{rel}: {e}"));
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        if let Some(m) = self.mounted.take() {
            let _ = Command::new("umount").arg(&m).status();
        }
        if !self.detached {
            let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
        }
    }
}

/// Queue attributes of a loop device as they were, written back on drop (a loop queue
/// outlives `losetup -d`); the scheduler first, as the kernel's order needs.
pub struct QueueBackup {
    dev: String,
    saved: Vec<(String, String)>,
}

impl QueueBackup {
    /// Saves `knobs` (names under `queue/`; `scheduler` saves the active one).
    pub fn save(dev: &str, knobs: &[&str]) -> QueueBackup {
        let q = Path::new("/sys/block").join(dev).join("queue");
        let mut saved = Vec::new();
        for k in knobs {
            let v = std::fs::read_to_string(q.join(k)).expect("read queue knob");
            let v = if *k == "scheduler" {
                v.split_whitespace()
                    .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
                    .expect("active scheduler")
                    .to_string()
            } else {
                v.trim().to_string()
            };
            saved.push((k.to_string(), v));
        }
        saved.sort_by_key(|(k, _)| k != "scheduler");
        QueueBackup {
            dev: dev.to_string(),
            saved,
        }
    }
}

impl Drop for QueueBackup {
    fn drop(&mut self) {
        let q = Path::new("/sys/block").join(&self.dev).join("queue");
        for (k, v) in &self.saved {
            let _ = std::fs::write(q.join(k), format!("{v}\n"));
        }
    }
}

/// A bind mount, unmounted on drop.
pub struct BindMount {
    /// Mount point.
    pub target: PathBuf,
}

impl BindMount {
    /// Bind-mounts `src` read-only on `target`.
    pub fn read_only(src: &Path, target: &Path) -> BindMount {
        std::fs::create_dir_all(target).expect("mkdir target");
        let ok = Command::new("mount")
            .arg("--bind")
            .arg(src)
            .arg(target)
            .status()
            .expect("mount")
            .success();
        assert!(ok, "mount --bind failed");
        let guard = BindMount {
            target: target.to_path_buf(),
        };
        let ok = Command::new("mount")
            .args(["-o", "remount,bind,ro"])
            .arg(target)
            .status()
            .expect("remount")
            .success();
        assert!(ok, "remount ro failed");
        guard
    }
}

impl Drop for BindMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.target).status();
    }
}

/// A small tmpfs on a directory of its own, unmounted on drop (also when the test fails).
pub struct Tmpfs {
    /// Mount point.
    pub dir: PathBuf,
    _parent: tempfile::TempDir,
}

impl Tmpfs {
    /// A tmpfs of 1 MiB with room for `inodes` inodes, its root directory included: with 2,
    /// one file fits and the next `open(O_CREAT)` fails with ENOSPC.
    pub fn with_inodes(inodes: u32) -> Tmpfs {
        let parent = tempfile::tempdir().expect("tempdir");
        let dir = parent.path().join("mnt");
        std::fs::create_dir(&dir).expect("mkdir mnt");
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o"])
            .arg(format!("size=1m,nr_inodes={inodes},mode=755"))
            .arg("sweetspot-test")
            .arg(&dir)
            .status()
            .expect("mount")
            .success();
        assert!(ok, "mount -t tmpfs failed");
        Tmpfs {
            dir,
            _parent: parent,
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

/// A temp dir with a database path and a fake procfs (`sys/vm/*`).
pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Env {
    /// A fresh database and a fake `/proc/sys/vm` with dirty_ratio 20, dirty_bytes 0,
    /// swappiness 60.
    pub fn new() -> Env {
        let dir = tempfile::tempdir().expect("tempdir");
        let vm = dir.path().join("proc/sys/vm");
        std::fs::create_dir_all(&vm).expect("mkdir vm");
        for (k, v) in [
            ("dirty_ratio", "20"),
            ("dirty_bytes", "0"),
            ("swappiness", "60"),
        ] {
            std::fs::write(vm.join(k), format!("{v}\n")).expect("write vm knob");
        }
        Env { dir }
    }

    /// `sweetspot --db <tmp>/s.db --procfs-root <tmp>/proc <args>`.
    pub fn cmd(&self, args: &[&str]) -> assert_cmd::Command {
        let mut c = assert_cmd::Command::cargo_bin("sweetspot").expect("binary");
        c.arg("--db")
            .arg(self.db())
            .arg("--procfs-root")
            .arg(self.proc())
            .args(args);
        c
    }

    /// The fake procfs root, `<tmp>/proc`.
    pub fn proc(&self) -> PathBuf {
        self.dir.path().join("proc")
    }

    /// The database path.
    pub fn db(&self) -> PathBuf {
        self.dir.path().join("s.db")
    }

    /// A fake vm knob's value.
    pub fn vm(&self, k: &str) -> String {
        std::fs::read_to_string(self.dir.path().join("proc/sys/vm").join(k))
            .expect("read vm knob")
            .trim()
            .to_string()
    }
}

/// A fake host under `dir` for `tune --host`: `sys/block` empty, the host knob
/// `sched_autogroup_enabled` at 1, and a contest policy over it (6 trials) whose objective and
/// loads `--job` and `--metric` replace. Returns (`--sysfs-root`, `--procfs-root`, policy).
pub fn autogroup_host(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let (sys, proc_) = (dir.join("sys"), dir.join("proc"));
    std::fs::create_dir_all(proc_.join("sys/kernel")).expect("mkdir kernel");
    std::fs::create_dir_all(proc_.join("sys/vm")).expect("mkdir vm");
    std::fs::create_dir_all(sys.join("block")).expect("mkdir block");
    std::fs::write(proc_.join("sys/kernel/sched_autogroup_enabled"), "1\n").expect("knob");
    let policy = dir.join("p.toml");
    std::fs::write(
        &policy,
        "loads = [\"no_load\", \"io_load\"]\nbudget = 6\ncheck_pairs = 2\n[objective]\n\
         minimize = \"ratio\"\nloads = [\"io_load\"]\n[knobs.sched_autogroup_enabled]\n",
    )
    .expect("policy");
    (sys, proc_, policy)
}

/// A finished `sweetspot`'s exit code and stderr (for tests of refusals: exit 2 and the
/// message).
pub fn code_and_stderr(out: std::process::Output) -> (Option<i32>, String) {
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Asserts that a finished `sweetspot` exited 0 (showing its stderr if not) and returns its
/// stdout.
pub fn ok_stdout(out: std::process::Output) -> Vec<u8> {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A simulated device that raises SIGINT at itself, like a user's Ctrl-C: at the start of
/// run `during` (while it is measured) and/or after run `after` has finished (between runs).
pub struct CtrlC {
    /// The simulated device.
    pub sim: sweetspot::bench::SimDevice,
    /// Raise in the middle of this run (1-based).
    pub during: Option<usize>,
    /// Raise once this run has finished (1-based).
    pub after: Option<usize>,
    /// Runs started.
    pub started: usize,
    /// What `signals::abort_run` said right after a signal raised during a run.
    pub abort_seen: Option<bool>,
}

impl CtrlC {
    /// The seed surface with noise seed 7.
    pub fn seed_surface(during: Option<usize>, after: Option<usize>) -> CtrlC {
        let sim = sweetspot::bench::SimDevice::open(
            Path::new("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml"),
            7,
        )
        .expect("seed surface");
        CtrlC {
            sim,
            during,
            after,
            started: 0,
            abort_seen: None,
        }
    }

    fn raise() {
        nix::sys::signal::raise(nix::sys::signal::Signal::SIGINT).expect("raise SIGINT");
    }
}

impl sweetspot::bench::Testbed for CtrlC {
    fn target(&self) -> sweetspot::bench::TargetInfo {
        self.sim.target()
    }
    fn space(&self) -> Vec<sweetspot::bench::SpaceKnob> {
        self.sim.space()
    }
    fn apply(&mut self, s: &sweetspot::knob::Setting) -> sweetspot::Result<()> {
        self.sim.apply(s)
    }
    fn run(&mut self, load: sweetspot::bench::Load) -> sweetspot::Result<sweetspot::bench::Run> {
        self.started += 1;
        if self.during == Some(self.started) {
            Self::raise();
            self.abort_seen = Some(sweetspot::signals::abort_run());
        }
        let r = self.sim.run(load)?;
        if self.after == Some(self.started) {
            Self::raise();
        }
        Ok(r)
    }
    fn restore(&mut self) -> sweetspot::Result<()> {
        self.sim.restore()
    }
}

/// Stores in `db` a significant sweet spot of `identity` (kernel name `label` when tuned,
/// `kernel`, policy quick) as a finished tune would: `best` against `default`, as
/// `(knob, value)` pairs (a value that parses as an integer is one), with an io_load Ratio
/// improvement of `ratio` in its evidence.
pub fn store_sweet_spot(
    db: &Path,
    identity: &str,
    label: &str,
    kernel: &str,
    best: &[(&str, &str)],
    default: &[(&str, &str)],
    ratio: f64,
) {
    use sweetspot::types::{Setting, TargetInfo};
    let s = |pairs: &[(&str, &str)]| -> Setting {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    v.parse::<i64>().map_or_else(|_| (*v).into(), Into::into),
                )
            })
            .collect()
    };
    let store = sweetspot::store::Store::open(db).expect("open the database");
    let target = TargetInfo {
        label: label.into(),
        identity: identity.into(),
        kernel: kernel.into(),
    };
    let ev = serde_json::json!({"target": {"label": label}, "runs": 24,
        "objective": {"name": "io_load Ratio",
                      "improvement": {"ratio": ratio, "ci95": [ratio * 0.9, ratio * 1.1]}}});
    let tune = store
        .insert_tune(&target, Some(label), "quick")
        .expect("tune row");
    store
        .insert_sweet_spot(
            &target,
            "quick",
            Some(tune),
            &s(best),
            &s(default),
            true,
            &ev,
        )
        .expect("sweet spot row");
    store
        .finish_tune(tune, sweetspot::types::TuneStatus::Done)
        .expect("finish");
}

/// A loop device over an existing file, detached on drop with its queue put back as it was
/// attached (a loop queue outlives `losetup -d`).
pub struct Attached {
    /// Kernel name, e.g. `loop3`.
    pub name: String,
    /// `/dev/loop3`.
    pub dev: PathBuf,
    saved: Vec<(&'static str, String)>,
}

impl Attached {
    /// Attaches `file` (`losetup -f --show`), with `--direct-io=on` if `direct_io`.
    pub fn new(file: &Path, direct_io: bool) -> Attached {
        let (name, dev) = attach(file, direct_io);
        let mut a = Attached {
            name,
            dev,
            saved: Vec::new(),
        };
        a.saved = ["queue/read_ahead_kb", "queue/wbt_lat_usec"]
            .into_iter()
            .map(|rel| (rel, a.read(rel)))
            .collect();
        a
    }

    /// Reads `/sys/block/<name>/<rel>`, trimmed.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(Path::new("/sys/block").join(&self.name).join(rel))
            .unwrap_or_else(|e| panic!("{rel}: {e}"))
            .trim()
            .to_string()
    }

    /// Writes `/sys/block/<name>/<rel>` by hand (as an admin would).
    pub fn write(&self, rel: &str, v: &str) {
        std::fs::write(
            Path::new("/sys/block").join(&self.name).join(rel),
            format!("{v}\n"),
        )
        .unwrap_or_else(|e| panic!("{rel}: {e}"));
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        let q = Path::new("/sys/block").join(&self.name);
        let _ = std::fs::write(q.join("queue/scheduler"), "none\n");
        for (rel, v) in &self.saved {
            let _ = std::fs::write(q.join(rel), format!("{v}\n"));
        }
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
    }
}

/// ext4 on a device, mounted on a directory; unmounted on drop.
pub struct Ext4Mount {
    /// Mount point.
    pub target: PathBuf,
}

impl Ext4Mount {
    /// Mounts the ext4 on `dev` at `target` (created if missing), after `mkfs.ext4 -q` if
    /// `mkfs`.
    pub fn new(dev: &Path, target: &Path, mkfs: bool) -> Ext4Mount {
        if mkfs {
            let ok = Command::new("mkfs.ext4")
                .arg("-q")
                .arg(dev)
                .status()
                .expect("mkfs.ext4")
                .success();
            assert!(ok, "mkfs.ext4 {} failed", dev.display());
        }
        std::fs::create_dir_all(target).expect("mkdir mount point");
        let ok = Command::new("mount")
            .arg(dev)
            .arg(target)
            .status()
            .expect("mount")
            .success();
        assert!(ok, "mount {} failed", dev.display());
        Ext4Mount {
            target: target.to_path_buf(),
        }
    }
}

impl Drop for Ext4Mount {
    /// Unmounts; when the filesystem is still busy (a load a failed test left running, an
    /// emulated device whose server went away), detaches it lazily (`umount -l`), so the loop
    /// device and the FUSE mount under it can go too instead of outliving the test.
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.target)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(&self.target).status();
        }
    }
}

/// Runs `sweetspot --db <db> <args>` and waits for it.
pub fn sweetspot(db: &Path, args: &[&str]) -> std::process::Output {
    Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .expect("run sweetspot")
}

/// The names of the entries in `dir`, sorted.
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    v.sort();
    v
}

/// Mounts (per /proc/self/mountinfo) whose mount point is under `dir`.
pub fn mounts_under(dir: &Path) -> Vec<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split(' ').nth(4).map(str::to_string))
        .filter(|m| Path::new(m).starts_with(dir))
        .collect()
}

/// Loop devices (kernel names) whose backing file is under `dir`.
pub fn loops_under(dir: &Path) -> Vec<String> {
    let want = dir.to_string_lossy().into_owned();
    std::fs::read_dir("/sys/block")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let b = std::fs::read_to_string(e.path().join("loop/backing_file")).ok()?;
                    b.starts_with(&want)
                        .then(|| e.file_name().to_string_lossy().into_owned())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Waits (`secs` at most, polling every 50 ms) until `ok` holds; `what` names it in the panic.
pub fn wait_for(what: &str, secs: u64, mut ok: impl FnMut() -> bool) {
    let t = std::time::Instant::now();
    while !ok() {
        assert!(
            t.elapsed() < std::time::Duration::from_secs(secs),
            "timed out: {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Sends `child` SIGTERM, opens `gate` (a file its benchmark waits for, so the run in
/// progress can end), and waits (`secs` at most) until it exits; returns its status.
pub fn sigterm_through_gate(
    child: &mut std::process::Child,
    gate: &Path,
    secs: u64,
) -> std::process::ExitStatus {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM to the tune");
    std::fs::write(gate, "").expect("opening the gate");
    let mut status = None;
    wait_for("the tune's exit after SIGTERM", secs, || {
        status = child.try_wait().expect("waiting for the tune");
        status.is_some()
    });
    status.expect("an exit status")
}
