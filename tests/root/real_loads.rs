//! The real bench on scratch loop devices (root): every load does work and its whole process
//! group is gone when the job ends; scratch devices are removed on drop, on panic and with
//! stray processes inside; RealDevice applies and restores knobs through the journal.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;
use sweetspot::bench::contest_run::{BenchOptions, Bencher};
use sweetspot::bench::device_testbed::RealDevice;
use sweetspot::bench::group::members;
use sweetspot::bench::loads::LoadSizes;
use sweetspot::bench::scratch::Scratch;
use sweetspot::bench::{Load, Testbed};
use sweetspot::knob::{KnobValue, Setting};
use sweetspot::store::Store;
use sweetspot::sysroot::SysRoot;

fn small_opts() -> BenchOptions {
    let mut o = BenchOptions::new().unwrap();
    o.exe = PathBuf::from(env!("CARGO_BIN_EXE_sweetspot"));
    // A job of a few tenths of a second: at 0.01 (about 0.05 s) io_other's first unit of
    // work (16 MiB to another filesystem) sometimes did not finish while the job ran.
    o.job_scale = 0.05;
    o.lead = Duration::from_millis(300);
    o.sizes = LoadSizes {
        tree_files: 300,
        ..LoadSizes::default()
    }
    .with_mib(16);
    o
}

/// dbench prints its operation count once a second, so its job must outlast a few of those
/// lines: a 3 s `--job` instead of the tiny built-in one.
fn dbench_does_work(scratch: &Scratch) {
    let mut o = small_opts();
    o.job_command = Some("sleep 3".into());
    let mut b = Bencher::new(scratch.mount_point(), o).unwrap();
    let r = b.run(Load::DbenchLoad).unwrap();
    assert_eq!(r.failed, None, "dbench_load: {r:?}");
    assert!(r.loads.unwrap() > 0.0, "dbench_load: {r:?}");
    assert!(r.lcpu_pct.unwrap() > 0.0, "dbench_load: {r:?}");
    let pgid = b.last_load_pgid().unwrap();
    assert!(
        members(pgid).is_empty(),
        "dbench_load: {:?} remain",
        members(pgid)
    );
}

fn losetup_a() -> String {
    String::from_utf8_lossy(
        &std::process::Command::new("losetup")
            .arg("-a")
            .output()
            .unwrap()
            .stdout,
    )
    .into_owned()
}

fn mounted(p: &Path) -> bool {
    std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(p.to_str().unwrap()))
}

fn dbench_installed() -> bool {
    std::process::Command::new("sh")
        .args(["-c", "command -v dbench"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn each_load_does_work_and_its_group_is_gone_when_the_job_ends() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let scratch =
        Scratch::create(512, std::path::Path::new("/nonexistent/sweetspot-test.db")).unwrap();
    let other = tempfile::tempdir().unwrap();
    let mut o = small_opts();
    o.other_dir = Some(other.path().to_path_buf());
    let mut b = Bencher::new(scratch.mount_point(), o).unwrap();

    let base = b.run(Load::NoLoad).unwrap();
    assert!(base.time_s > 0.01 && base.time_s < 30.0, "{base:?}");
    assert!(base.cpu_pct > 10.0, "{base:?}");
    assert_eq!(
        (base.loads, base.lcpu_pct, base.failed.clone()),
        (None, None, None)
    );
    let warm = b.run(Load::Cacherun).unwrap();
    assert_eq!(warm.loads, None);
    assert!(warm.cpu_pct > 10.0, "{warm:?}");

    for load in Load::ALL
        .into_iter()
        .filter(|l| sweetspot::bench::loads::has_process(*l))
    {
        if load == Load::DbenchLoad {
            if dbench_installed() {
                dbench_does_work(&scratch);
            }
            continue;
        }
        let r = b.run(load).unwrap();
        assert_eq!(r.failed, None, "{load}: {r:?}");
        // A paced load may do nothing in a job shorter than its gap (light_io_load_paces).
        let quiet = sweetspot::bench::loads::max_quiet_s(load);
        assert!(r.loads.unwrap() > 0.0 || r.time_s < quiet, "{load}: {r:?}");
        assert!(r.lcpu_pct.unwrap() > 0.0, "{load}: {r:?}");
        assert!(r.time_s > 0.01, "{load}: {r:?}");
        let pgid = b.last_load_pgid().unwrap();
        assert!(
            members(pgid).is_empty(),
            "{load}: {:?} remain",
            members(pgid)
        );
    }
    // io_other wrote to --other-dir and cleaned up after itself.
    assert_eq!(std::fs::read_dir(other.path()).unwrap().count(), 0);
    let sizes = b.sizes();
    assert_eq!(sizes["io_load_mib"], 16);
    assert_eq!(sizes["job_files"], 20, "400 files × job_scale 0.05");
}

/// light_io_load under a 2 s job: its 2 writers write 1 MiB each every 0.512 s, so the job
/// sees 6 to 8 MiB written (3 or 4 slots each, by where the 0.3 s lead falls), never more
/// than the cap allows, and none of it is a failure.
#[test]
fn light_io_load_paces_and_does_work_in_a_longer_job() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let scratch =
        Scratch::create(256, std::path::Path::new("/nonexistent/sweetspot-test.db")).unwrap();
    let mut o = small_opts();
    o.job_command = Some("sleep 2".into());
    let mut b = Bencher::new(scratch.mount_point(), o).unwrap();
    let r = b.run(Load::LightIoLoad).unwrap();
    assert_eq!(r.failed, None, "{r:?}");
    let mib = r.loads.unwrap();
    // 4000 KiB/s over the job's time, plus one write per writer in flight at either end.
    let cap = r.time_s * 4000.0 / 1024.0 + 2.0;
    assert!(
        mib >= 6.0 && mib <= cap,
        "{mib} MiB in {:.2} s: {r:?}",
        r.time_s
    );
    assert!(
        (sweetspot::bench::loads::max_quiet_s(Load::LightIoLoad) - 0.512).abs() < 1e-9,
        "2 writers / 4000 KiB/s"
    );
}

#[test]
fn a_failing_job_is_an_error_and_its_load_is_stopped() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let scratch =
        Scratch::create(256, std::path::Path::new("/nonexistent/sweetspot-test.db")).unwrap();
    let mut o = small_opts();
    o.job_command = Some("echo broken >&2; exit 3".into());
    let mut b = Bencher::new(scratch.mount_point(), o).unwrap();
    let e = b.run(Load::ProcessLoad).unwrap_err();
    assert_eq!(e.exit_code(), 1);
    assert!(e.to_string().contains("(exit code 3): broken"), "{e}");
    let pgid = b.last_load_pgid().unwrap();
    assert!(members(pgid).is_empty(), "{:?}", members(pgid));
}

#[test]
fn a_job_command_is_timed_as_a_process_in_the_target_dir() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let scratch =
        Scratch::create(256, std::path::Path::new("/nonexistent/sweetspot-test.db")).unwrap();
    let mut o = small_opts();
    o.job_command = Some("sleep 0.4; pwd > where".into());
    let mut b = Bencher::new(scratch.mount_point(), o).unwrap();
    let r = b.run(Load::NoLoad).unwrap();
    assert!(r.time_s >= 0.4 && r.time_s < 2.0, "{r:?}");
    assert!(r.cpu_pct < 50.0, "sleep uses no CPU: {r:?}");
    let where_ = std::fs::read_to_string(scratch.mount_point().join("where")).unwrap();
    assert_eq!(where_.trim(), scratch.mount_point().to_str().unwrap());
    assert!(b.sizes()["job_command"].is_string());
}

#[test]
fn a_load_that_dies_is_reported_failed_not_as_a_number() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let scratch =
        Scratch::create(256, std::path::Path::new("/nonexistent/sweetspot-test.db")).unwrap();
    let mut o = small_opts();
    // sh is not sweetspot: `sh __worker load ...` fails at once, like a crashing load.
    o.exe = PathBuf::from("/bin/false");
    o.job_command = Some("sleep 0.2".into());
    let mut b = Bencher::new(scratch.mount_point(), o).unwrap();
    let r = b.run(Load::IoLoad).unwrap();
    let why = r.failed.unwrap();
    assert!(
        why.contains("io_load stopped before the job ended"),
        "{why}"
    );
    assert_eq!(r.loads, Some(0.0));
}

#[test]
fn unavailable_loads_are_refused_up_front() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let scratch =
        Scratch::create(256, std::path::Path::new("/nonexistent/sweetspot-test.db")).unwrap();
    let mut b = Bencher::new(scratch.mount_point(), small_opts()).unwrap();
    let e = b.run(Load::IoOther).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("--other-dir"), "{e}");
}

#[test]
fn scratch_is_removed_on_drop_on_panic_and_with_strays_inside() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let s = Scratch::create(256, std::path::Path::new("/nonexistent/sweetspot-test.db")).unwrap();
    let (mnt, file) = (
        s.mount_point().to_path_buf(),
        s.backing_file().to_path_buf(),
    );
    assert!(mounted(&mnt));
    assert!(losetup_a().contains(file.to_str().unwrap()));
    let mut stray = std::process::Command::new("sleep")
        .arg("60")
        .current_dir(&mnt)
        .spawn()
        .unwrap();
    drop(s);
    assert!(!mounted(&mnt), "unmounted");
    assert!(!losetup_a().contains(file.to_str().unwrap()), "detached");
    assert!(!file.exists() && !mnt.exists(), "removed");
    // Killed (and reaped by the guard, so it is no longer ours to wait for).
    assert!(!matches!(stray.try_wait(), Ok(None)), "stray killed");
    assert!(!Path::new(&format!("/proc/{}", stray.id())).exists());

    let paths = std::sync::Mutex::new(None);
    let r = std::panic::catch_unwind(|| {
        let s =
            Scratch::create(256, std::path::Path::new("/nonexistent/sweetspot-test.db")).unwrap();
        *paths.lock().unwrap() = Some((
            s.mount_point().to_path_buf(),
            s.backing_file().to_path_buf(),
        ));
        panic!("test panic with a scratch device");
    });
    assert!(r.is_err());
    let (mnt, file) = paths.lock().unwrap().clone().unwrap();
    assert!(!mounted(&mnt));
    assert!(!losetup_a().contains(file.to_str().unwrap()));
    assert!(!file.exists());
}

#[test]
fn real_device_on_scratch_applies_and_restores_through_the_journal() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let db = tempfile::tempdir().unwrap();
    let store = Store::open(&db.path().join("s.db")).unwrap();
    let root = SysRoot::default();
    let mut dev = RealDevice::scratch(store, &root, small_opts(), "bench").unwrap();
    let name = dev.device_info().name.clone();
    assert!(name.starts_with("loop"), "{name}");
    let t = dev.target();
    assert_eq!(t.label, format!("{name} (scratch)"));
    // Stored under the host disk, not the random backing file (see scratch_identity).
    assert!(t.identity.starts_with("scratch:ext4-on:"), "{}", t.identity);
    assert!(!t.identity.contains("backing.img"), "{}", t.identity);
    let space = dev.space();
    let sched = space.iter().find(|k| k.name == "scheduler").unwrap();
    assert_eq!(sched.default, KnobValue::Name("none".into()));
    let fifo = space.iter().find(|k| k.name == "fifo_batch").unwrap();
    assert_eq!(fifo.schedulers, Some(vec!["mq-deadline".to_string()]));
    assert_eq!(fifo.default, KnobValue::Int(16));
    assert!(
        space
            .iter()
            .any(|k| k.name == "read_ahead_kb" && k.schedulers.is_none())
    );

    let q = PathBuf::from(format!("/sys/block/{name}/queue"));
    let setting: Setting = [
        ("scheduler".to_string(), KnobValue::from("mq-deadline")),
        ("fifo_batch".to_string(), KnobValue::Int(1)),
    ]
    .into();
    dev.apply(&setting).unwrap();
    assert!(
        std::fs::read_to_string(q.join("scheduler"))
            .unwrap()
            .contains("[mq-deadline]")
    );
    assert_eq!(
        std::fs::read_to_string(q.join("iosched/fifo_batch"))
            .unwrap()
            .trim(),
        "1"
    );
    let runs = dev.measure(&[Load::NoLoad, Load::IoLoad], 1).unwrap();
    assert_eq!(runs.len(), 2);
    assert!(runs[1].loads.unwrap() > 0.0, "{runs:?}");
    dev.restore().unwrap();
    assert!(
        std::fs::read_to_string(q.join("scheduler"))
            .unwrap()
            .contains("[none]")
    );
    let mnt = dev.scratch_mount().unwrap().to_path_buf();
    drop(dev);
    assert!(!mounted(&mnt));
}

#[test]
fn dir_must_be_on_the_device() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let db = tempfile::tempdir().unwrap();
    let scratch =
        Scratch::create(256, std::path::Path::new("/nonexistent/sweetspot-test.db")).unwrap();
    let name = scratch.device_name();
    let store = Store::open(&db.path().join("s.db")).unwrap();
    let root = SysRoot::default();
    let e = RealDevice::device(store, &root, &name, Some(db.path()), small_opts())
        .err()
        .unwrap();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains(&format!("not on {name}")), "{e}");

    let store = Store::open(&db.path().join("s.db")).unwrap();
    let dev = RealDevice::device(
        store,
        &root,
        &name,
        Some(scratch.mount_point()),
        small_opts(),
    )
    .unwrap();
    assert!(dev.work_dir().unwrap().starts_with(scratch.mount_point()));
    assert_eq!(dev.target().label, name);
    let store = Store::open(&db.path().join("s.db")).unwrap();
    // Without --dir, the device's writable mount is found.
    let dev2 = RealDevice::device(store, &root, &name, None, small_opts()).unwrap();
    assert!(dev2.work_dir().unwrap().starts_with(scratch.mount_point()));
}
