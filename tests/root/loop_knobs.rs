//! `set`/`restore` from the command line on real loop devices (root only; CI is root).
//! Every test makes its own loop device and detaches it even when it fails.

use crate::common;

use common::{BindMount, Env, LoopDev, active_scheduler, detour_scheduler, offered_schedulers};
use predicates::prelude::*;
use predicates::str::contains;

#[test]
fn set_reads_back_from_sysfs_and_restore_brings_none_back() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let env = Env::new();
    let l = LoopDev::new(32);
    assert_eq!(active_scheduler(&l.read("queue/scheduler")), "none");
    env.cmd(&["set", &l.name, "scheduler=mq-deadline", "fifo_batch=8"])
        .assert()
        .success()
        .stdout(contains("fifo_batch: 16 -> 8"));
    assert_eq!(active_scheduler(&l.read("queue/scheduler")), "mq-deadline");
    assert_eq!(l.read("queue/iosched/fifo_batch"), "8");
    // It names what it put back: device, knob, value.
    env.cmd(&["restore", &l.name])
        .assert()
        .success()
        .stdout(contains("restored").and(contains(format!("\n  {} scheduler = none\n", l.name))));
    assert_eq!(active_scheduler(&l.read("queue/scheduler")), "none");
    assert!(!l.sys("queue/iosched").exists());
    // A second restore has nothing left to do.
    env.cmd(&["restore"])
        .assert()
        .success()
        .stdout(contains("restored 0 knobs"));
}

#[test]
fn bad_input_leaves_the_device_untouched_with_exit_2() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let env = Env::new();
    let l = LoopDev::new(32);
    let before = (l.read("queue/scheduler"), l.read("queue/read_ahead_kb"));
    // The error lists what this kernel offers (bfq and kyber are build options).
    let offered = format!("one of {}", offered_schedulers(&before.0).join(", "));
    let cases: &[(&[&str], &str)] = &[
        (&["scheduler=mq-deadline", "fifo_batch=0"], "1–1024"),
        (
            &["read_ahead_kb=512", "fifo_batch=lots"],
            "not a (decimal) number",
        ),
        (&["fifo_batch=8"], "exists under scheduler mq-deadline"),
        (&["read_ahead_kb=512", "frobnicate=1"], "valid knobs:"),
        (&["scheduler=cfq"], &offered),
        (&["read_ahead_kb"], "expected KNOB=VALUE"),
    ];
    for (pairs, want) in cases {
        let mut args = vec!["set", l.name.as_str()];
        args.extend_from_slice(pairs);
        env.cmd(&args).assert().code(2).stderr(contains(*want));
    }
    env.cmd(&["set", "../vda", "read_ahead_kb=1"])
        .assert()
        .code(2);
    env.cmd(&["set", "loop999", "read_ahead_kb=1"])
        .assert()
        .code(2)
        .stderr(contains("unknown device 'loop999'"));
    assert_eq!(
        (l.read("queue/scheduler"), l.read("queue/read_ahead_kb")),
        before
    );
}

#[test]
fn an_admins_fifo_batch_survives_a_detour_through_another_scheduler() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let env = Env::new();
    let l = LoopDev::new(32);
    // bfq where the kernel has it (it may zero wbt), else kyber.
    let (other, attr) = detour_scheduler(&l.read("queue/scheduler"));
    l.write("queue/scheduler", "mq-deadline");
    l.write("queue/iosched/fifo_batch", "32");
    let wbt = l.read("queue/wbt_lat_usec");
    env.cmd(&["set", &l.name, &format!("scheduler={other}")])
        .assert()
        .success();
    assert_eq!(active_scheduler(&l.read("queue/scheduler")), other);
    assert!(l.sys(&format!("queue/iosched/{attr}")).exists());
    assert!(!l.sys("queue/iosched/fifo_batch").exists());
    env.cmd(&["restore"]).assert().success();
    assert_eq!(active_scheduler(&l.read("queue/scheduler")), "mq-deadline");
    assert_eq!(l.read("queue/iosched/fifo_batch"), "32");
    assert_eq!(
        l.read("queue/wbt_lat_usec"),
        wbt,
        "wbt put back (bfq may zero it)"
    );
    l.write("queue/scheduler", "none");
}

#[test]
fn kernel_einval_names_knob_value_and_errno_and_restore_still_works() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let env = Env::new();
    let l = LoopDev::new(32);
    let ra = l.read("queue/read_ahead_kb");
    // Above the tag depth of a loop device without a scheduler: EINVAL.
    env.cmd(&["set", &l.name, "read_ahead_kb=1024", "nr_requests=2048"])
        .assert()
        .code(1)
        .stderr(contains("nr_requests: writing '2048'").and(contains("EINVAL")));
    assert_eq!(l.read("queue/nr_requests"), "128");
    // nr_requests comes before other queue knobs, so nothing after the refusal was written.
    assert_eq!(l.read("queue/read_ahead_kb"), ra);
    env.cmd(&["restore", &l.name]).assert().success();
    assert_eq!(l.read("queue/read_ahead_kb"), ra);
}

#[test]
fn restore_from_a_new_process_after_sigkill_mid_set() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let env = Env::new();
    let l = LoopDev::new(32);
    let ra = l.read("queue/read_ahead_kb");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin!("sweetspot"))
        .arg("--db")
        .arg(env.db())
        .arg("--procfs-root")
        .arg(env.dir.path().join("proc"))
        .args([
            "set",
            &l.name,
            "scheduler=mq-deadline",
            "fifo_batch=4",
            "read_ahead_kb=4096",
        ])
        .env(sweetspot::knob::apply::HOLD_ENV, "60000")
        .spawn()
        .expect("spawn set");
    // Wait until the first write (the scheduler) is done, then kill it before the rest.
    let t0 = std::time::Instant::now();
    while active_scheduler(&l.read("queue/scheduler")) != "mq-deadline" {
        assert!(
            t0.elapsed().as_secs() < 60,
            "set never switched the scheduler"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL");
    let status = child.wait().expect("wait");
    assert!(!status.success());
    assert_eq!(
        l.read("queue/iosched/fifo_batch"),
        "16",
        "killed before fifo_batch"
    );
    env.cmd(&["restore"]).assert().success();
    assert_eq!(active_scheduler(&l.read("queue/scheduler")), "none");
    assert_eq!(l.read("queue/read_ahead_kb"), ra);
}

#[test]
fn devices_lists_the_loop_device_by_its_backing_file() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let env = Env::new();
    let l = LoopDev::new(16);
    let out = env.cmd(&["devices", "--json"]).assert().success();
    let v: serde_json::Value =
        serde_json::from_slice(&out.get_output().stdout).expect("devices --json is JSON");
    let d = v["devices"]
        .as_array()
        .expect("devices array")
        .iter()
        .find(|d| d["name"] == l.name.as_str())
        .expect("our loop device listed");
    assert_eq!(d["identity"], format!("loop:{}", l.file.display()));
    assert_eq!(d["scheduler"], "none");
    assert_eq!(d["size_bytes"], 16 << 20);
    assert!(v["kernel"].as_str().is_some_and(|k| !k.is_empty()));
    let out = env.cmd(&["knobs", &l.name, "--json"]).assert().success();
    assert!(!env.db().exists(), "listings create no database");
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).expect("JSON");
    let names: Vec<&str> = v["knobs"]
        .as_array()
        .expect("knobs")
        .iter()
        .filter_map(|k| k["name"].as_str())
        .collect();
    assert!(
        names.starts_with(&["scheduler", "nr_requests"]),
        "{names:?}"
    );
    assert!(names.contains(&"wbt_lat_usec") && names.contains(&"swappiness"));
}

#[test]
fn a_read_only_sysfs_is_refused_up_front_with_erofs() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let env = Env::new();
    let fake = env.dir.path().join("fake-sys");
    let q = fake.join("block/loop200/queue");
    std::fs::create_dir_all(&q).expect("mkdir");
    std::fs::write(fake.join("block/loop200/dev"), "7:200\n").expect("dev");
    std::fs::write(q.join("scheduler"), "[none] mq-deadline\n").expect("sched");
    std::fs::write(q.join("read_ahead_kb"), "128\n").expect("ra");
    let ro = env.dir.path().join("ro-sys");
    let _m = BindMount::read_only(&fake, &ro);
    env.cmd(&[
        "--sysfs-root",
        ro.to_str().expect("utf-8"),
        "set",
        "loop200",
        "read_ahead_kb=512",
    ])
    .assert()
    .code(1)
    .stderr(contains("read_ahead_kb: writing '512'").and(contains("EROFS")));
    env.cmd(&["--sysfs-root", ro.to_str().expect("utf-8"), "restore"])
        .assert()
        .success()
        .stdout(contains("restored 0 knobs"));
}

/// Stops a child process on drop (a test that fails must not leave it holding a lock).
struct Child(std::process::Child);

impl Child {
    /// `sweetspot set <args>` on `env`, pausing after each write (a testing aid), so that it
    /// holds its locks for up to a minute.
    fn holding_set(env: &Env, args: &[&str]) -> Child {
        Child(
            std::process::Command::new(assert_cmd::cargo::cargo_bin!("sweetspot"))
                .arg("--db")
                .arg(env.db())
                .arg("--procfs-root")
                .arg(env.dir.path().join("proc"))
                .arg("set")
                .args(args)
                .env(sweetspot::knob::apply::HOLD_ENV, "60000")
                .spawn()
                .expect("spawn set"),
        )
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn one_writer_per_device_a_second_is_refused_naming_the_holder() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let env = Env::new();
    let l = LoopDev::new(32);
    let ra = l.read("queue/read_ahead_kb");
    // A `set` that holds the device: it pauses after its write (a testing aid).
    let child = Child::holding_set(&env, &[&l.name, "read_ahead_kb=4096"]);
    let t0 = std::time::Instant::now();
    while l.read("queue/read_ahead_kb") != "4096" {
        assert!(t0.elapsed().as_secs() < 60, "set never wrote");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let holder = format!("is in use by `sweetspot set` (pid {}", child.0.id());
    // Every writer is refused with exit 2, naming the holder, and changes nothing.
    for args in [
        vec!["set", l.name.as_str(), "read_ahead_kb=64"],
        vec!["bench", "--device", l.name.as_str(), "--runs", "1"],
        vec!["tune", "--device", l.name.as_str(), "--budget", "2"],
        vec!["restore", l.name.as_str()],
    ] {
        env.cmd(&args)
            .assert()
            .code(2)
            .stderr(contains(format!("{} {holder}", l.name)));
        assert_eq!(l.read("queue/read_ahead_kb"), "4096", "{args:?} wrote");
    }
    // `restore` of everything leaves the held device alone and says so, with exit 1: its
    // knob is still changed.
    env.cmd(&["restore"])
        .assert()
        .code(1)
        .stdout(contains(format!("left alone: {}", l.name)).and(contains("`sweetspot set`")))
        .stderr(contains("sweetspot: error: 1 knob left changed; see above"));
    assert_eq!(l.read("queue/read_ahead_kb"), "4096");
    drop(child);
    env.cmd(&["restore", &l.name])
        .assert()
        .success()
        .stdout(contains("restored 1 knob"));
    assert_eq!(l.read("queue/read_ahead_kb"), ra);
}

#[test]
fn a_second_scratch_tune_is_refused_before_it_builds_anything() {
    let env = Env::new();
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = sweetspot::sysroot::SysRoot::default();
    let id = sweetspot::bench::device_testbed::scratch_identity(&root, tmp.path());
    // The scratch lock is host-wide: another scratch tune on this machine may hold it
    // already, which refuses ours just the same.
    let taken = sweetspot::lock::DeviceLock::try_acquire(
        &sweetspot::lock::path(&env.db(), &root, &id),
        sweetspot::lock::Holder::me("tune"),
    )
    .expect("the scratch lock");
    let want = match &taken {
        sweetspot::lock::Taken::Ours(l) => {
            l.set_tune(7).expect("tune id");
            format!(
                "--scratch is in use by `sweetspot tune` (pid {}, tune 7, for ",
                std::process::id()
            )
        }
        sweetspot::lock::Taken::Held(_) => "--scratch is in use by ".to_string(),
    };
    // `-v` logs `scratch: /dev/loopN on ...` once a scratch device is made (its guard would
    // remove it again on the refusal, so the directory alone does not tell).
    env.cmd(&["-v", "tune", "--scratch", "--budget", "2"])
        .env("TMPDIR", tmp.path())
        .assert()
        .code(2)
        .stderr(contains(want).and(contains("scratch: /dev/loop").not()));
    assert_eq!(
        std::fs::read_dir(tmp.path()).expect("tmp").count(),
        0,
        "a scratch directory (backing file, loop device, filesystem) was made"
    );
    drop(taken);
}

#[test]
fn a_scratch_device_is_locked_while_measured_and_its_lock_file_goes_with_it() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let env = Env::new();
    let root = sweetspot::sysroot::SysRoot::default();
    let store = sweetspot::store::Store::open(&env.db()).expect("store");
    let mut opts = sweetspot::bench::contest_run::BenchOptions::new().expect("options");
    opts.sizes = opts.sizes.with_mib(16);
    let dev = sweetspot::bench::device_testbed::RealDevice::scratch(store, &root, opts, "tune")
        .expect("scratch device");
    let name = dev.device_info().name.clone();
    let path = sweetspot::lock::path(&env.db(), &root, &dev.device_info().identity);
    assert!(
        path.starts_with(sweetspot::lock::RUN_DIR),
        "{}",
        path.display()
    );
    env.cmd(&["set", &name, "read_ahead_kb=64"])
        .assert()
        .code(2)
        .stderr(contains(format!("{name} is in use by `sweetspot tune`")));
    drop(dev);
    assert!(!path.exists(), "lock file {} left behind", path.display());
}

#[test]
fn a_scratch_queue_starts_from_a_fresh_loop_devices_and_gets_the_old_one_back() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    use sweetspot::bench::Testbed;
    let env = Env::new();
    let mut l = LoopDev::new(512);
    let knobs = [
        "scheduler",
        "nr_requests",
        "max_sectors_kb",
        "nomerges",
        "rq_affinity",
        "wbt_lat_usec",
    ];
    let _backup = common::QueueBackup::save(&l.name, &knobs);
    l.mount_ext4();
    // What the last user of this loop number left (it survives `losetup -d`).
    l.write("queue/scheduler", "mq-deadline");
    l.write("queue/iosched/fifo_batch", "32");
    l.write("queue/nr_requests", "64");
    l.write("queue/max_sectors_kb", "512");
    l.write("queue/nomerges", "1");
    l.write("queue/rq_affinity", "2");
    l.write("queue/wbt_lat_usec", "75000");
    let stale: Vec<String> = knobs
        .iter()
        .map(|k| l.read(&format!("queue/{k}")))
        .collect();
    let root = sweetspot::sysroot::SysRoot::default();
    let mut dev = sweetspot::bench::device_testbed::RealDevice::device(
        sweetspot::store::Store::open(&env.db()).expect("store"),
        &root,
        &l.name,
        None,
        sweetspot::bench::contest_run::BenchOptions::new().expect("options"),
    )
    .expect("device");
    // The same step `--scratch` takes before its first trial.
    dev.to_loop_baseline().expect("baseline");
    assert_eq!(active_scheduler(&l.read("queue/scheduler")), "none");
    assert!(!l.sys("queue/iosched").exists());
    assert_eq!(l.read("queue/nr_requests"), "128");
    assert_eq!(l.read("queue/max_sectors_kb"), "1280");
    assert_eq!(l.read("queue/nomerges"), "0");
    assert_eq!(l.read("queue/rq_affinity"), "1");
    assert_eq!(l.read("queue/wbt_lat_usec"), "2000");
    // The search starts from the baseline: the default setting is `none`.
    let space = dev.space();
    let sched = space
        .iter()
        .find(|k| k.name == "scheduler")
        .expect("scheduler knob");
    assert_eq!(sched.default.to_string(), "none");
    // Journaled like any write: put back when the testbed goes (as a tune's would be).
    drop(dev);
    let now: Vec<String> = knobs
        .iter()
        .map(|k| l.read(&format!("queue/{k}")))
        .collect();
    assert_eq!(now, stale);
    assert_eq!(l.read("queue/iosched/fifo_batch"), "32");
}

/// Writing max_sectors_kb makes the kernel recompute read_ahead_kb: `set` journals both, and
/// `restore` puts an admin's read_ahead_kb back too (written after max_sectors_kb).
#[test]
fn max_sectors_kb_recomputes_read_ahead_and_restore_puts_it_back() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let env = Env::new();
    let l = LoopDev::new(32);
    let _queue = common::QueueBackup::save(&l.name, &["read_ahead_kb", "max_sectors_kb"]);
    l.write("queue/read_ahead_kb", "384");
    env.cmd(&["set", &l.name, "max_sectors_kb=256"])
        .assert()
        .success();
    assert_eq!(l.read("queue/max_sectors_kb"), "256");
    let after = l.read("queue/read_ahead_kb");
    env.cmd(&["restore", &l.name])
        .assert()
        .success()
        .stdout(contains(format!("{} read_ahead_kb = 384", l.name)));
    assert_eq!(
        l.read("queue/read_ahead_kb"),
        "384",
        "it was {after} after the set"
    );
}

/// Host-wide knobs have one writer too: while a `set` writes dirty_ratio for one device, a
/// `set` of a host knob for another device is refused naming the holder, and a device knob of
/// that other device is not.
#[test]
fn host_wide_knobs_have_one_writer_whichever_device() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let env = Env::new();
    let (a, b) = (LoopDev::new(32), LoopDev::new(32));
    let child = Child::holding_set(&env, &[&a.name, "dirty_ratio=10"]);
    let t0 = std::time::Instant::now();
    while env.vm("dirty_ratio") != "10" {
        assert!(t0.elapsed().as_secs() < 60, "set never wrote");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    env.cmd(&["set", &b.name, "dirty_ratio=30"])
        .assert()
        .code(2)
        .stderr(contains(format!(
            "the host (dirty_ratio) is in use by `sweetspot set` (pid {}",
            child.0.id()
        )));
    assert_eq!(env.vm("dirty_ratio"), "10");
    let _queue = common::QueueBackup::save(&b.name, &["read_ahead_kb"]);
    env.cmd(&["set", &b.name, "read_ahead_kb=256"])
        .assert()
        .success();
    drop(child);
    env.cmd(&["restore"]).assert().success();
    assert_eq!(env.vm("dirty_ratio"), "20");
}

/// `--scratch` puts back the loop queue's `read_ahead_kb` and `rotational` as they were before
/// it attached its file (the kernel sets both at the attach and `losetup -d` leaves them): the
/// loop number the scratch will take (`losetup -f`) is given values no attach sets, and they
/// read back once the scratch is gone. Another test taking that number first is retried.
#[test]
fn a_scratch_device_gives_its_loop_queue_back_as_it_was_before_the_attach() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let env = Env::new();
    for _ in 0..3 {
        let out = std::process::Command::new("losetup")
            .arg("-f")
            .output()
            .expect("losetup -f");
        assert!(out.status.success(), "losetup -f");
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let name = dev.trim_start_matches("/dev/").to_string();
        let _backup = common::QueueBackup::save(&name, &["read_ahead_kb", "rotational"]);
        let q = std::path::Path::new("/sys/block").join(&name).join("queue");
        let read = |k: &str| {
            std::fs::read_to_string(q.join(k))
                .expect("queue knob")
                .trim()
                .to_string()
        };
        std::fs::write(q.join("read_ahead_kb"), "384\n").expect("read_ahead_kb");
        std::fs::write(q.join("rotational"), "0\n").expect("rotational");
        let scratch = sweetspot::bench::scratch::Scratch::create(64, &env.db()).expect("scratch");
        if scratch.device_name() != name {
            continue;
        }
        // The attach computed its own values (read-ahead from the new limits).
        assert_ne!(read("read_ahead_kb"), "384");
        drop(scratch);
        assert_eq!(read("read_ahead_kb"), "384");
        assert_eq!(read("rotational"), "0");
        return;
    }
    panic!("other tests took the free loop device three times");
}
