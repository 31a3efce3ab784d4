//! `RealDevice`: the real [`Testbed`]. Knobs go through the journaled apply path
//! ([`crate::knob::apply`]); runs are real ([`crate::bench::contest_run`]) in a work directory on a
//! filesystem of the device: a writable mount of `--device D`, `--dir DIR` on D, or a
//! `--scratch` loop device.
//!
//! The work directory (`.sweetspot-bench-XXXXXX`) is removed on drop, also after an error or
//! Ctrl-C/SIGTERM. After SIGKILL it remains (and, for `--scratch`, so do the loop device and its
//! mount; see [`crate::bench::scratch`]).

use crate::bench::contest_run::{BenchOptions, Bencher};
use crate::bench::emulate::Spec;
use crate::bench::scratch::{SCRATCH_MIB, Scratch};
use crate::bench::{Load, Run, SpaceKnob, TargetInfo, Testbed, fsutil, loads};
use crate::device::{self, Device};
use crate::knob::{ApplyOrder, Domain, KnobValue, Setting, catalogue, discover};
use crate::lock::{DeviceLock, Holder};
use crate::store::Store;
use crate::sysroot::SysRoot;
use crate::types::Owner;
use crate::{Error, Result};
use std::path::Path;

/// A real device under test. Field order matters: on drop, knobs are restored first
/// ([`Drop`]), then the work directory is removed, then a scratch device is unmounted and
/// detached.
pub struct RealDevice {
    device: Device,
    root: SysRoot,
    store: Store,
    owner: Owner,
    /// Every owner this testbed journaled under, in order (a scratch device's baseline is
    /// journaled before a tune sets its own): restore undoes them newest first.
    owners: Vec<Owner>,
    label: String,
    /// The store key: the device's identity, or [`scratch_identity`] for `--scratch`.
    identity: String,
    applied: bool,
    bench: Option<Bencher>,
    scratch: Option<Scratch>,
    /// A scratch loop device's own lock ([`crate::lock`]), so no other writer (`set loopN`)
    /// changes its knobs while it is measured; released after the device is detached.
    lock: Option<DeviceLock>,
}

impl RealDevice {
    /// `--scratch`: a loop device big enough for the job and the loads (at least
    /// `SCRATCH_MIB`), measured, then removed on drop. The loop device is locked for
    /// `command` ([`crate::lock`]) as soon as it exists.
    pub fn scratch(
        store: Store,
        root: &SysRoot,
        opts: BenchOptions,
        command: &str,
    ) -> Result<RealDevice> {
        RealDevice::scratch_emulated(store, root, opts, command, None)
    }

    /// [`RealDevice::scratch`], on an emulated slow device when `emulate` is given
    /// (`Scratch::create_emulated`). Its identity is `scratch:emulate:<canonical spec>`:
    /// what its measurements depend on is the model, not the host disk. It starts from
    /// `loop_baseline`, except that a disk model (`Spec::rotational`) starts from
    /// `WBT_ROTATIONAL_USEC`, as a real disk does.
    pub fn scratch_emulated(
        store: Store,
        root: &SysRoot,
        opts: BenchOptions,
        command: &str,
        emulate: Option<&Spec>,
    ) -> Result<RealDevice> {
        // A user benchmark runs none of the loads: the default size is its room.
        let need: u64 = if opts.user_benchmark {
            0
        } else {
            Load::ALL
                .iter()
                .map(|&l| loads::bytes_needed(l, &opts.sizes))
                .sum::<u64>()
                >> 20
        };
        let scratch = Scratch::create_emulated(
            SCRATCH_MIB.max(need * 3 / 2 + 128),
            emulate,
            &opts.exe,
            store.path(),
        )?;
        let name = scratch.device_name();
        let device = device::find(root, &name)?;
        let lock = DeviceLock::acquire(
            &crate::lock::path(store.path(), root, &device.identity),
            &name,
            Holder::me(command),
        )?;
        let bench = Bencher::new(scratch.mount_point(), opts)?;
        let (label, identity) = match emulate {
            Some(spec) => (
                format!("{name} (emulated {})", spec.name()),
                format!("scratch:emulate:{}", spec.canonical()),
            ),
            None => (
                format!("{name} (scratch)"),
                scratch_identity(root, scratch.backing_file()),
            ),
        };
        let mut dev = RealDevice {
            label,
            identity,
            device,
            root: root.clone(),
            store,
            owner: Owner::Bench,
            owners: Vec::new(),
            applied: false,
            bench: Some(bench),
            scratch: Some(scratch),
            lock: Some(lock),
        };
        let mut base = loop_baseline(&dev.root, &dev.device);
        if emulate.is_some_and(Spec::rotational) && base.contains_key("wbt_lat_usec") {
            base.insert("wbt_lat_usec".into(), KnobValue::Int(WBT_ROTATIONAL_USEC));
        }
        dev.apply_baseline(&base)?;
        Ok(dev)
    }

    /// Puts the queue into the state a never-used loop device has (`loop_baseline`),
    /// journaled like any write, so the search starts from the kernel's defaults (and restore
    /// puts the old values back). A loop device's queue outlives `losetup -d`: the last user of
    /// the loop number may have left another scheduler or `fifo_batch` on it. `--scratch` does
    /// this before the first trial. Errors: those of [`Testbed::apply`].
    pub fn to_loop_baseline(&mut self) -> Result<()> {
        let base = loop_baseline(&self.root, &self.device);
        self.apply_baseline(&base)
    }

    /// Applies `base` (journaled) as the state the search starts from.
    fn apply_baseline(&mut self, base: &Setting) -> Result<()> {
        let label = crate::knob::setting_label(base);
        self.apply(base)?;
        tracing::info!("{}: baseline {label}", self.device.name);
        Ok(())
    }

    /// `--device D [--dir DIR]`: DIR must be on D (or one of its partitions); without it, the
    /// first writable mounted filesystem of D is used. Errors (exit 2): unknown device, no
    /// writable filesystem, DIR not on D.
    pub fn device(
        store: Store,
        root: &SysRoot,
        name: &str,
        dir: Option<&Path>,
        opts: BenchOptions,
    ) -> Result<RealDevice> {
        let device = device::find(root, name)?;
        let target = match dir {
            Some(d) => {
                check_on_device(root, &device, d)?;
                d.to_path_buf()
            }
            None => device
                .mounts
                .iter()
                .find(|m| m.writable)
                .map(|m| m.target.clone())
                .ok_or_else(|| {
                    Error::BadInput(format!(
                        "{}: no writable mounted filesystem; mount one or give --dir DIR on it",
                        device.name
                    ))
                })?,
        };
        let bench = Bencher::new(&target, opts)?;
        Ok(RealDevice {
            label: device.name.clone(),
            identity: device.identity.clone(),
            device,
            root: root.clone(),
            store,
            owner: Owner::Bench,
            owners: Vec::new(),
            applied: false,
            bench: Some(bench),
            scratch: None,
            lock: None,
        })
    }

    /// The device measured.
    pub fn device_info(&self) -> &Device {
        &self.device
    }

    /// The work directory of the runs.
    pub fn work_dir(&self) -> Option<&Path> {
        self.bench.as_ref().map(|b| b.work_dir())
    }

    /// The scratch mount point, for `--scratch`.
    pub fn scratch_mount(&self) -> Option<&Path> {
        self.scratch.as_ref().map(|s| s.mount_point())
    }

    /// `one` (a run of the bencher), on an emulated device with what the device counted
    /// during it ([`Run::io`]).
    fn counted(&mut self, one: impl FnOnce(&mut Bencher) -> Result<Run>) -> Result<Run> {
        let em = self.scratch.as_ref().and_then(|s| s.emulator());
        let before = match em {
            Some(e) => {
                e.reset_max_depth()?;
                Some(e.counters()?)
            }
            None => None,
        };
        let mut run = one(self.bench()?)?;
        let em = self.scratch.as_ref().and_then(|s| s.emulator());
        if let (Some(e), Some(b)) = (em, before) {
            run.io = Some(e.counters()?.since(&b));
        }
        Ok(run)
    }

    fn bench(&mut self) -> Result<&mut Bencher> {
        self.bench
            .as_mut()
            .ok_or_else(|| Error::Failed("the testbed is closed".into()))
    }
}

/// The identity a `--scratch` target is stored under: `scratch:ext4-on:<host>`, where `<host>`
/// is the identity ([`device::identity`]) of the disk holding `backing`, `virtual-fs` when
/// that filesystem reports no block device (`st_dev` major 0: tmpfs, overlayfs, and also
/// btrfs and ZFS, whose disks then share the key), or `dev:MAJ:MIN` when sysfs has no entry
/// for it. A fresh loop device's own identity (`loop:<backing file>`) names a random
/// temporary file, so every scratch tune would be stored under a device never seen again;
/// this key is the same for every scratch device on one host disk, which is what its
/// measurements depend on (and what two scratch tunes at once would compete for).
pub fn scratch_identity(root: &SysRoot, backing: &Path) -> String {
    let host = match fsutil::dev_of(backing) {
        Ok((0, _)) => "virtual-fs".to_string(),
        Ok((maj, min)) => {
            match std::fs::canonicalize(root.sys.join(format!("dev/block/{maj}:{min}"))) {
                // A partition's sysfs directory sits inside its disk's.
                Ok(p) => {
                    let disk = if p.join("partition").exists() {
                        p.parent().map(Path::to_path_buf).unwrap_or(p)
                    } else {
                        p
                    };
                    let name = disk.file_name().map(|n| n.to_string_lossy().into_owned());
                    name.map_or(format!("dev:{maj}:{min}"), |n| {
                        device::identity::identity(root, &n)
                    })
                }
                Err(_) => format!("dev:{maj}:{min}"),
            }
        }
        Err(_) => "unknown".to_string(),
    };
    format!("scratch:ext4-on:{host}")
}

/// Checks that `dir` is a directory on `device` or one of its partitions, comparing `st_dev`
/// with `<sys>/dev/block/MAJ:MIN` (a partition's sysfs directory sits inside its disk's).
pub(crate) fn check_on_device(root: &SysRoot, device: &Device, dir: &Path) -> Result<()> {
    if !dir.is_dir() {
        return Err(Error::BadInput(format!(
            "--dir {}: not a directory",
            dir.display()
        )));
    }
    let (maj, min) = fsutil::dev_of(dir)?;
    let disk = std::fs::canonicalize(root.block_dev(&device.name)).ok();
    let holder = std::fs::canonicalize(root.sys.join(format!("dev/block/{maj}:{min}"))).ok();
    let on = match (&holder, &disk) {
        (Some(h), Some(d)) => h == d || h.parent() == Some(d.as_path()),
        _ => format!("{maj}:{min}") == device.dev,
    };
    if !on {
        return Err(Error::BadInput(format!(
            "--dir {}: is on device {maj}:{min}{}, not on {} ({})",
            dir.display(),
            holder
                .as_deref()
                .and_then(|h| h.file_name())
                .map(|n| format!(" ({})", n.to_string_lossy()))
                .unwrap_or_default(),
            device.name,
            device.dev
        )));
    }
    Ok(())
}

impl Testbed for RealDevice {
    fn target(&self) -> TargetInfo {
        TargetInfo {
            label: self.label.clone(),
            identity: self.identity.clone(),
            kernel: device::kernel_release(),
        }
    }

    /// The device's knobs: `scheduler` (the offered ones), the known integer `queue/` knobs
    /// (current value as default), the known `iosched/` knobs of every offered scheduler, and
    /// the host-wide vm knobs (see `space_of`).
    fn space(&self) -> Vec<SpaceKnob> {
        space_of(&self.root, &self.device)
    }

    /// The unused member of an exclusive vm pair and the debugfs knobs debugfs does not let
    /// be read (`discover::host_unusable`).
    fn unusable(&self) -> Vec<(String, String)> {
        discover::host_unusable(&self.root)
    }

    /// Why the debugfs CPU-scheduler knobs are left out, if they are.
    fn notes(&self) -> Vec<String> {
        crate::knob::sched::debugfs(&self.root)
            .why()
            .into_iter()
            .collect()
    }

    /// [`Owner::Bench`] by default; a tune passes [`Owner::Tune`], whose id then goes into
    /// a scratch device's lock file too.
    fn set_owner(&mut self, owner: &Owner) {
        self.owner = owner.clone();
        if let (Some(l), Some(id)) = (&self.lock, owner.tune_id())
            && let Err(e) = l.set_tune(id)
        {
            tracing::warn!("{e}");
        }
    }

    fn device_name(&self) -> Option<String> {
        Some(self.device.name.clone())
    }

    fn root(&self) -> Option<SysRoot> {
        Some(self.root.clone())
    }

    fn zoned(&self) -> Option<String> {
        Some(self.device.zoned.clone())
    }

    fn apply(&mut self, setting: &Setting) -> Result<()> {
        self.applied = true;
        if !self.owners.contains(&self.owner) {
            self.owners.push(self.owner.clone());
        }
        crate::knob::apply::apply(
            &mut self.store,
            &self.root,
            &self.device,
            setting,
            &self.owner,
        )
    }

    /// One run; on an emulated device with what the device counted during it.
    fn run(&mut self, load: Load) -> Result<Run> {
        self.counted(|b| b.run(load))
    }

    /// Every real device has the start-up judge.
    fn lacks_startup(&self) -> Option<String> {
        None
    }

    /// One run of the start-up judge (`Bencher::run_startup`); on an emulated device with
    /// what the device counted during it (the tree is made before, outside the count).
    fn run_startup(&mut self, load: Load) -> Result<Run> {
        self.bench()?.prepare_startup()?;
        self.counted(|b| b.run_startup(load))
    }

    fn sizes(&self) -> serde_json::Value {
        self.bench
            .as_ref()
            .map(|b| b.sizes())
            .unwrap_or(serde_json::Value::Null)
    }

    /// The knobs stay on the device after drop, journaled (see [`Testbed::keep`]).
    fn keep(&mut self) {
        self.applied = false;
    }

    /// Restores the entries of every owner this testbed journaled under, newest owner first
    /// (each owner's oldest entry of a file is its original), so the oldest original ends up
    /// on the device; per owner the device's entries, then its host-wide vm entries (they
    /// have no device, so the device's restore leaves them: a tune of `dirty_ratio` left it
    /// set).
    fn restore(&mut self) -> Result<()> {
        let owners: Vec<Owner> = if self.owners.is_empty() {
            vec![self.owner.clone()]
        } else {
            self.owners.iter().rev().cloned().collect()
        };
        for owner in &owners {
            let dev = crate::knob::apply::restore(
                &mut self.store,
                &self.root,
                Some(&self.device.name),
                Some(owner),
            );
            let host = crate::knob::apply::restore_except(
                &crate::knob::io::RealIo,
                &mut self.store,
                &self.root,
                None,
                Some(owner),
                &|e| e.device.is_some(),
            );
            dev?;
            host?;
        }
        self.applied = false;
        Ok(())
    }

    /// Checks every load is available before the first run (so a missing dbench or
    /// `--other-dir` fails up front), then runs them run-major like the default.
    fn measure(&mut self, loads: &[Load], runs: u32) -> Result<Vec<Run>> {
        self.bench()?.check(loads)?;
        let mut out = Vec::with_capacity(loads.len() * runs as usize);
        for _ in 0..runs {
            for &load in loads {
                out.push(self.run(load)?);
            }
        }
        Ok(out)
    }
}

impl Drop for RealDevice {
    /// Restores knobs this testbed changed unless [`Testbed::keep`] was called after the last
    /// apply (a scratch device must not leave open journal entries for a loop device that is
    /// about to vanish), then lets the work directory and scratch go.
    fn drop(&mut self) {
        if self.applied
            && let Err(e) = self.restore()
        {
            tracing::error!("{}: restoring knobs failed: {e}", self.device.name);
        }
        self.bench = None;
        self.scratch = None;
        self.lock = None;
    }
}

/// `wbt_lat_usec` of a rotational queue when writeback throttling is set up:
/// `wbt_default_latency_nsec` in block/blk-wbt.c (75 ms; 2 ms for a non-rotational queue).
/// An emulated disk (`--emulate` with `seek=hdd`) starts from it, as a real disk does: its loop
/// queue became rotational only after wbt was set up, so the kernel left it at 2000.
pub(crate) const WBT_ROTATIONAL_USEC: i64 = 75_000;

/// The most a fresh queue's `max_sectors_kb` is: `BLK_DEF_MAX_SECTORS_CAP` (2560 sectors) in
/// block/blk-settings.c, below `max_hw_sectors_kb`.
const DEF_MAX_SECTORS_KB: i64 = 1280;

/// The queue knobs of a never-used loop device on this kernel (6.x), those of them `device`
/// has: what `--scratch` starts from ([`RealDevice::to_loop_baseline`]).
///
/// - `scheduler = none`: drivers/block/loop.c gives its tag set `BLK_MQ_F_NO_SCHED_BY_DEFAULT`
///   (since 5.16), so block/elevator.c attaches no scheduler to a new loop queue, although it
///   has a single hardware queue (which would get mq-deadline).
/// - `nr_requests` = the tag depth: loop's `hw_queue_depth` module parameter (default 128),
///   what a queue without a scheduler has.
/// - `max_sectors_kb = min(max_hw_sectors_kb, 1280)` (see `DEF_MAX_SECTORS_KB`).
/// - `nomerges = 0`, `rq_affinity = 1`: the defaults of a blk-mq queue (block/blk-sysfs.c,
///   `QUEUE_FLAG_SAME_COMP` set at allocation).
/// - `wbt_lat_usec = 2000`: block/blk-wbt.c's default for a non-rotational queue; a loop disk
///   is created non-rotational and writeback throttling is set up then (attaching a file on a
///   rotational disk later sets `rotational` but leaves wbt at 2000).
///
/// `read_ahead_kb` is left out: the kernel recomputes it from the limits when a file is
/// attached and when `max_sectors_kb` is written.
///
/// Measured on 6.18 with a loop number made with `LOOP_CTL_ADD` and never used: `[none]`,
/// nr_requests 128, max_sectors_kb 1280, nomerges 0, rq_affinity 1, wbt_lat_usec 2000; after
/// attaching a file on vda, read_ahead_kb 2560. Each of these knobs (and `fifo_batch` under a
/// scheduler) survived `losetup -d` and a new `losetup` of that number.
pub(crate) fn loop_baseline(root: &SysRoot, device: &Device) -> Setting {
    let q = root.block_dev(&device.name).join("queue");
    let int = |p: &Path| device::read_attr(p).and_then(|s| crate::knob::io::parse_int(&s));
    let depth = int(&root.sys.join("module/loop/parameters/hw_queue_depth")).unwrap_or(128);
    let max_sectors = int(&q.join("max_hw_sectors_kb"))
        .map_or(DEF_MAX_SECTORS_KB, |hw| hw.min(DEF_MAX_SECTORS_KB));
    let mut s = Setting::new();
    if device.schedulers.iter().any(|x| x == "none") {
        s.insert("scheduler".into(), KnobValue::Name("none".into()));
    }
    for (knob, v) in [
        ("nr_requests", depth),
        ("max_sectors_kb", max_sectors),
        ("nomerges", 0),
        ("rq_affinity", 1),
        ("wbt_lat_usec", 2000),
    ] {
        if q.join(knob).exists() {
            s.insert(knob.into(), KnobValue::Int(v));
        }
    }
    s
}

/// The search space of `device` as discovered now (see [`Testbed::space`] of [`RealDevice`]).
/// `iosched/` knobs of the active scheduler default to their current values; those of the
/// other offered schedulers to the kernel default the catalogue gives ("default N" in its note,
/// which is what a switch to that scheduler sets); catalogue knobs without one are left out.
/// Knobs discovery does not know (no catalogue entry) are left out: no safe bounds. The
/// host-wide vm knobs follow (current value as default), except the unused member of an
/// exclusive pair ([`discover::unused_pair_members`]).
pub(crate) fn space_of(root: &SysRoot, device: &Device) -> Vec<SpaceKnob> {
    let knobs = match discover::device_knobs(root, &device.name) {
        Ok(k) => k,
        Err(e) => {
            tracing::warn!("{}: knob discovery failed: {e}", device.name);
            Vec::new()
        }
    };
    let mut v: Vec<SpaceKnob> = Vec::new();
    for k in &knobs {
        if k.order == ApplyOrder::Scheduler || (k.known && k.order != ApplyOrder::Iosched) {
            v.push(SpaceKnob {
                name: k.name.clone(),
                domain: k.domain.clone(),
                default: k.current.clone(),
                schedulers: None,
            });
        }
    }
    for sched in device.schedulers.iter().filter(|s| s.as_str() != "none") {
        for fact in catalogue::FACTS
            .iter()
            .filter(|f| f.scheduler == Some(sched.as_str()))
        {
            let current = knobs
                .iter()
                .find(|k| k.name == fact.name && k.scheduler.as_deref() == Some(sched.as_str()));
            let Some(default) = current
                .map(|k| k.current.clone())
                .or_else(|| catalogue_default(fact.note).map(KnobValue::Int))
            else {
                continue;
            };
            match v.iter_mut().find(|s| s.name == fact.name) {
                Some(existing) => {
                    if let Some(list) = existing.schedulers.as_mut() {
                        list.push(sched.clone());
                    }
                }
                None => v.push(SpaceKnob {
                    name: fact.name.to_string(),
                    domain: Domain::Int {
                        min: fact.min,
                        max: fact.max,
                    },
                    default,
                    schedulers: Some(vec![sched.clone()]),
                }),
            }
        }
    }
    v.extend(host_space(root));
    v
}

/// The host-wide knobs as search-space knobs (current value as default): `/proc/sys/vm`
/// except the unused member of an exclusive pair ([`discover::unused_pair_members`]), and
/// the CPU scheduler's ([`crate::knob::sched`]). Knobs the catalogue does not know are left
/// out.
pub(crate) fn host_space(root: &SysRoot) -> Vec<SpaceKnob> {
    let mut v = Vec::new();
    let unused = discover::unused_pair_members(&discover::vm_knobs(root));
    for k in discover::host_knobs(root)
        .iter()
        .filter(|k| k.known && !unused.iter().any(|(n, _)| *n == k.name))
    {
        v.push(SpaceKnob {
            name: k.name.clone(),
            domain: k.domain.clone(),
            default: k.current.clone(),
            schedulers: None,
        });
    }
    v
}

/// The leading "default N" of a catalogue note, e.g. `default 16; kernel clamps below 0`.
fn catalogue_default(note: &str) -> Option<i64> {
    note.strip_prefix("default ")?
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_identity_names_the_host_disk_of_the_backing_file() {
        let t = crate::testkit::tree::FakeTree::new();
        t.disk("sdq", "8:0", "none [mq-deadline]", 64);
        t.set("sdq", "device/wwid", "naa.5000c500a1b2c3d4");
        let f = tempfile::NamedTempFile::new().unwrap();
        let (maj, min) = fsutil::dev_of(f.path()).unwrap();
        let id = scratch_identity(&t.root, f.path());
        if maj == 0 {
            // $TMPDIR on tmpfs or overlayfs: no block device to name.
            assert_eq!(id, "scratch:ext4-on:virtual-fs");
            return;
        }
        // sysfs (the fake one) has no entry for the file's device.
        assert_eq!(id, format!("scratch:ext4-on:dev:{maj}:{min}"));
        // The file's device is partition sdq1 of sdq: the disk's identity is used.
        t.set("sdq", "sdq1/partition", "1");
        let link = t.root.sys.join(format!("dev/block/{maj}:{min}"));
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(t.root.block_dev("sdq").join("sdq1"), &link).unwrap();
        assert_eq!(
            scratch_identity(&t.root, f.path()),
            "scratch:ext4-on:wwid:naa.5000c500a1b2c3d4"
        );
        // A whole disk (no partition file) is named directly.
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(t.root.block_dev("sdq"), &link).unwrap();
        assert_eq!(
            scratch_identity(&t.root, f.path()),
            "scratch:ext4-on:wwid:naa.5000c500a1b2c3d4"
        );
    }

    #[test]
    fn host_wide_vm_knobs_join_the_space_but_not_an_unused_pair_member() {
        let t = crate::testkit::tree::FakeTree::new();
        t.mq_deadline_disk();
        let dev = device::find(&t.root, "sda").unwrap();
        let names = |v: &[SpaceKnob]| v.iter().map(|k| k.name.clone()).collect::<Vec<_>>();
        let sp = space_of(&t.root, &dev);
        let dr = sp.iter().find(|k| k.name == "dirty_ratio").unwrap();
        assert_eq!(dr.default, KnobValue::Int(20));
        assert_eq!(dr.domain, Domain::Int { min: 0, max: 100 });
        assert_eq!(dr.schedulers, None);
        assert!(names(&sp).contains(&"swappiness".to_string()));
        // dirty_bytes reads 0: unused while dirty_ratio rules, so not tunable (its 0 is no
        // value a tune could measure or put back).
        assert!(!names(&sp).contains(&"dirty_bytes".to_string()));
        let unused = discover::unused_pair_members(&discover::vm_knobs(&t.root));
        assert_eq!(
            unused[0],
            (
                "dirty_bytes".to_string(),
                "host-wide dirty_bytes is 0, unused while dirty_ratio = 20 rules; tune \
                 dirty_ratio instead"
                    .to_string()
            )
        );
        // The admin switched to dirty_bytes: now dirty_ratio is the unused one.
        std::fs::write(t.root.vm().join("dirty_ratio"), "0\n").unwrap();
        std::fs::write(t.root.vm().join("dirty_bytes"), "268435456\n").unwrap();
        let sp = space_of(&t.root, &dev);
        assert!(!names(&sp).contains(&"dirty_ratio".to_string()));
        assert!(names(&sp).contains(&"dirty_bytes".to_string()));
    }

    #[test]
    fn catalogue_defaults_parse() {
        assert_eq!(
            catalogue_default("default 16; kernel clamps below 0"),
            Some(16)
        );
        assert_eq!(
            catalogue_default("default 500 (HZ/2); kept in jiffies"),
            Some(500)
        );
        assert_eq!(catalogue_default("0 = auto"), None);
        assert_eq!(catalogue_default("reset to nr_requests"), None);
    }
}
