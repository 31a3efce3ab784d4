//! Tests of [`super`]: killed tunes and benches recovered, live ones left alone, and the
//! restore command printed for knobs under other roots.

use super::*;
use crate::Error;
use crate::bench::TargetInfo;
use crate::device::find;
use crate::knob::apply::apply_with;
use crate::knob::{KnobValue, Setting};
use crate::lock::{self, DeviceLock, Holder};
use crate::store::Store;
use crate::sysroot::SysRoot;
use crate::testkit::{kernel::FakeKernel, tree::FakeTree};
use crate::types::Owner;
use std::path::Path;

/// The setting `fifo_batch = v`.
fn fifo(v: i64) -> Setting {
    [("fifo_batch".to_string(), KnobValue::Int(v))]
        .into_iter()
        .collect()
}

/// A fake tree with the mq-deadline disk sda (and, when `two`, sdb), a fake kernel and an
/// empty store in the tree's directory.
fn fixture(two: bool) -> (FakeTree, FakeKernel, Store) {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    if two {
        t.disk("sdb", "8:16", "none [mq-deadline]", 64);
    }
    let s = Store::open(&t.dir.path().join("s.db")).unwrap();
    (t, FakeKernel::default(), s)
}

/// A `sleep 30` child standing in for a running tune's process (the test holds the tune's
/// lock for it, naming its pid: `Holder { pid: child.pid(), .. }`); killed and reaped when
/// it drops, also when the test fails.
struct Child(std::process::Child);

impl Child {
    fn sleep() -> Child {
        Child(
            std::process::Command::new("sleep")
                .arg("30")
                .spawn()
                .unwrap(),
        )
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Stores `pid` as tune `id`'s process.
fn set_pid(s: &Store, id: i64, pid: u32) {
    s.conn()
        .execute(
            "UPDATE tunes SET pid = ?1 WHERE id = ?2",
            [i64::from(pid), id],
        )
        .unwrap();
}

#[test]
fn restore_leaves_a_running_tunes_device_alone_and_restores_the_rest() {
    let (t, k, mut s) = fixture(true);
    // A `sim:` identity keeps the lock file next to the database (not in /run).
    let target = TargetInfo {
        label: "sda".into(),
        identity: "sim:fake-sda".into(),
        kernel: "6.18".into(),
    };
    // A tune on sda whose process is alive (a child that sleeps) and holds the device
    // lock (held here for it, in its name), and a plain `set` on sdb.
    let child = Child::sleep();
    let lock = DeviceLock::acquire(
        &lock::path(s.path(), &t.root, &target.identity),
        "sda",
        Holder {
            pid: child.pid(),
            ..Holder::me("tune")
        },
    )
    .unwrap();
    let id = s.insert_tune(&target, Some("sda"), "quick").unwrap();
    set_pid(&s, id, child.pid());
    let sda = find(&t.root, "sda").unwrap();
    let sdb = find(&t.root, "sdb").unwrap();
    apply_with(&k, &mut s, &t.root, &sda, &fifo(4), &Owner::Tune(id)).unwrap();
    apply_with(&k, &mut s, &t.root, &sdb, &fifo(8), &Owner::Set).unwrap();

    // Naming the busy device is refused; restoring everything skips it.
    let e = restore_idle(&k, &mut s, &t.root, Some("sda")).unwrap_err();
    assert!(e.to_string().contains("is being tuned"), "{e}");
    let r = restore_idle(&k, &mut s, &t.root, None).unwrap();
    assert_eq!((r.knobs, r.recovered, r.busy.len()), (1, 0, 1));
    assert_eq!(
        t.get("sda", "queue/iosched/fifo_batch"),
        "4",
        "running tune disturbed"
    );
    assert_eq!(t.get("sdb", "queue/iosched/fifo_batch"), "16");

    // The lock is free although the pid exists (reused after a power loss): the tune is
    // dead; the next restore recovers it and puts sda back.
    drop(lock);
    let r = restore_idle(&k, &mut s, &t.root, None).unwrap();
    drop(child);
    assert_eq!((r.knobs, r.recovered, r.busy.len()), (1, 1, 0));
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "16");
}

#[test]
fn restore_leaves_a_device_whose_lock_another_writer_holds_alone() {
    let (t, k, mut s) = fixture(true);
    let sda = find(&t.root, "sda").unwrap();
    let sdb = find(&t.root, "sdb").unwrap();
    apply_with(&k, &mut s, &t.root, &sda, &fifo(4), &Owner::Set).unwrap();
    apply_with(&k, &mut s, &t.root, &sdb, &fifo(8), &Owner::Set).unwrap();
    // A `set` (or `bench --device`) on sdb is in progress: it holds sdb's lock.
    let held = DeviceLock::acquire(
        &lock::path(s.path(), &t.root, &sdb.identity),
        "sdb",
        Holder::me("set"),
    )
    .unwrap();
    let e = restore_idle(&k, &mut s, &t.root, Some("sdb")).unwrap_err();
    assert!(matches!(e, Error::BadInput(_)), "{e:?}");
    assert!(
        e.to_string().contains("sdb is in use by `sweetspot set`"),
        "{e}"
    );
    let r = restore_idle(&k, &mut s, &t.root, None).unwrap();
    assert_eq!(r.knobs, 1);
    assert_eq!(r.held.len(), 1);
    assert_eq!(r.held[0].0, "sdb");
    assert_eq!(r.held[0].1.as_ref().unwrap().command, "set");
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "16");
    assert_eq!(
        t.get("sdb", "queue/iosched/fifo_batch"),
        "8",
        "a writer disturbed"
    );
    // Once it is done, sdb is restored, and no lock file is left behind.
    drop(held);
    let r = restore_idle(&k, &mut s, &t.root, None).unwrap();
    assert_eq!((r.knobs, r.held.len()), (1, 0));
    assert_eq!(t.get("sdb", "queue/iosched/fifo_batch"), "16");
    let dir = lock::dir(s.path(), &t.root, &sdb.identity);
    assert_eq!(std::fs::read_dir(dir).unwrap().count(), 0);
}

thread_local! {
    /// This thread's captured log while [`logged`] runs.
    static LOG: std::cell::RefCell<Option<Vec<u8>>> = const { std::cell::RefCell::new(None) };
}

/// Appends to the calling thread's [`LOG`], if it is capturing.
struct ThreadLog;

impl std::io::Write for ThreadLog {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        LOG.with(|l| {
            if let Some(v) = l.borrow_mut().as_mut() {
                v.extend_from_slice(b);
            }
        });
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `f` and returns what it logged on this thread. One global subscriber writes every
/// thread's events to that thread's buffer: a subscriber scoped with `with_default` missed
/// events now and then when tests ran in parallel (a callsite another thread had first
/// hit with no subscriber kept its cached "never" interest), and the test failed with an
/// empty log.
fn logged<T>(f: impl FnOnce() -> T) -> (T, String) {
    static INIT: std::sync::Once = std::sync::Once::new();
    INIT.call_once(|| {
        tracing_subscriber::fmt()
            .with_writer(|| ThreadLog)
            .with_ansi(false)
            .without_time()
            .try_init()
            .expect("no other global subscriber in the library's tests");
    });
    LOG.with(|l| *l.borrow_mut() = Some(Vec::new()));
    let r = f();
    let text = LOG.with(|l| l.borrow_mut().take()).unwrap_or_default();
    (r, String::from_utf8(text).unwrap())
}

/// A tune on sda left `running` by a killed process: its pid cannot be alive (above
/// pid_max). Returns its id.
fn killed_tune(s: &Store) -> i64 {
    let target = TargetInfo {
        label: "sda".into(),
        identity: "sim:fake-sda".into(),
        kernel: "6.18".into(),
    };
    let id = s.insert_tune(&target, Some("sda"), "quick").unwrap();
    s.conn()
        .execute("UPDATE tunes SET pid = 2147483646 WHERE id = ?1", [id])
        .unwrap();
    id
}

#[test]
fn a_killed_tunes_device_is_recovered_only_under_its_lock() {
    let (t, k, mut s) = fixture(false);
    let id = killed_tune(&s);
    let sda = find(&t.root, "sda").unwrap();
    let fifo = fifo(4);
    apply_with(&k, &mut s, &t.root, &sda, &fifo, &Owner::Tune(id)).unwrap();
    // Another writer holds sda now: the killed tune waits.
    let held = DeviceLock::acquire(
        &lock::path(s.path(), &t.root, &sda.identity),
        "sda",
        Holder::me("set"),
    )
    .unwrap();
    let r = recover_with(&k, &mut s, &t.root).unwrap();
    assert_eq!(r, Recovered::default());
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "4");
    assert_eq!(s.running_tunes().unwrap().len(), 1);
    drop(held);
    let r = recover_with(&k, &mut s, &t.root).unwrap();
    assert_eq!(r.tunes, 1);
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "16");
    assert!(s.running_tunes().unwrap().is_empty());
}

#[test]
fn a_killed_tunes_host_wide_knobs_are_recovered_only_under_the_host_lock() {
    let (t, k, mut s) = fixture(false);
    // A killed tune that had changed fifo_batch on sda and dirty_ratio host-wide.
    let id = killed_tune(&s);
    let owner = Owner::Tune(id);
    let sda = find(&t.root, "sda").unwrap();
    let fifo = fifo(4);
    let ratio: Setting = [("dirty_ratio".to_string(), KnobValue::Int(30))]
        .into_iter()
        .collect();
    apply_with(&k, &mut s, &t.root, &sda, &fifo, &owner).unwrap();
    crate::knob::apply::apply_host_with(&k, &mut s, &t.root, &ratio, &owner).unwrap();
    let open = |s: &Store| -> Vec<String> {
        let mut v: Vec<String> = s
            .journal_open(None, None)
            .unwrap()
            .into_iter()
            .map(|e| e.knob)
            .collect();
        v.sort();
        v
    };
    // Another writer (alive: this process) holds the host-wide knobs' lock: sda, whose
    // lock is free, is restored; dirty_ratio and its journaled partner stay open and
    // unwritten, and the tune stays `running` for a later call.
    let host = DeviceLock::acquire(
        &lock::path(s.path(), &t.root, lock::HOST),
        "the host",
        Holder::me("tune"),
    )
    .unwrap();
    let (r, log) = logged(|| recover_with(&k, &mut s, &t.root).unwrap());
    assert_eq!((r.tunes, r.knobs), (0, 1));
    let put: Vec<_> = r
        .put
        .iter()
        .map(|p| (p.device.as_deref(), &*p.value))
        .collect();
    assert_eq!(put, [(Some("sda"), "16")]);
    // One warning: what was restored, and what waits for whom.
    assert_eq!(log.matches("was killed").count(), 1, "{log}");
    assert!(
        log.contains(&format!(
            "tune {id} on sda was killed (pid 2147483646); restored 1 knob it changed; \
             `sweetspot tune` (pid {}, ",
            std::process::id()
        )) && log.contains(
            "holds the host-wide knobs' lock, so dirty_bytes, dirty_ratio are restored later"
        ),
        "{log}"
    );
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "16");
    assert_eq!(
        t.vm("dirty_ratio"),
        "30",
        "written under another's host lock"
    );
    assert_eq!(open(&s), ["dirty_bytes", "dirty_ratio"]);
    assert_eq!(s.running_tunes().unwrap().len(), 1);
    // Released: the host-wide knobs are put back and the tune is finished.
    drop(host);
    let (r, log) = logged(|| recover_with(&k, &mut s, &t.root).unwrap());
    assert_eq!((r.tunes, r.knobs), (1, 1));
    assert_eq!(r.put.len(), 1);
    assert_eq!(r.put[0].device, None, "the host-wide knob");
    assert!(
        log.contains(&format!(
            "tune {id} on sda was killed (pid 2147483646); restored 1 knob it changed (on sda \
             or host-wide)"
        )),
        "{log}"
    );
    assert_eq!(t.vm("dirty_ratio"), "20");
    assert!(open(&s).is_empty(), "{:?}", open(&s));
    assert!(s.running_tunes().unwrap().is_empty());
}

#[test]
fn a_killed_benchs_entries_are_restored_under_its_lock_also_after_a_detach_or_closed_when_gone() {
    let t = FakeTree::new();
    t.disk("loop0", "7:0", "none [mq-deadline]", 128).set(
        "loop0",
        "loop/backing_file",
        "/tmp/sweetspot-scratch-A/backing.img",
    );
    let k = FakeKernel::default();
    let mut s = Store::open(&t.dir.path().join("s.db")).unwrap();
    let open = |s: &Store| s.journal_open(None, None).unwrap().len();
    // A scratch tune's baseline (owner `bench`) on loop0, then the process is killed.
    let dev = find(&t.root, "loop0").unwrap();
    apply_with(&k, &mut s, &t.root, &dev, &fifo(4), &Owner::Bench).unwrap();
    // While a bench that is alive holds loop0, its entries are its own.
    let held = DeviceLock::acquire(
        &lock::path(s.path(), &t.root, &dev.identity),
        "loop0",
        Holder::me("bench"),
    )
    .unwrap();
    assert_eq!(recover_benches(&k, &mut s, &t.root).unwrap(), 0);
    assert_eq!(t.get("loop0", "queue/iosched/fifo_batch"), "4");
    assert_eq!(open(&s), 1);
    drop(held);
    // Its writer is gone and loop0 is still attached to its file: written back.
    assert_eq!(recover_benches(&k, &mut s, &t.root).unwrap(), 1);
    assert_eq!(t.get("loop0", "queue/iosched/fifo_batch"), "16");
    assert_eq!(open(&s), 0);
    // Killed again, and the sweep detached loop0 since (no backing file): its queue
    // outlives `losetup -d` and would hand 8 to loop0's next user, so 16 goes back.
    let killed = |s: &mut Store| {
        apply_with(&k, s, &t.root, &dev, &fifo(8), &Owner::Bench).unwrap();
    };
    killed(&mut s);
    t.set("loop0", "loop/backing_file", "");
    assert_eq!(recover_benches(&k, &mut s, &t.root).unwrap(), 1);
    assert_eq!(open(&s), 0);
    assert_eq!(t.get("loop0", "queue/iosched/fifo_batch"), "16");
    // Killed again, and loop0 itself is gone since: nothing to write them on, so they are
    // closed, unwritten.
    t.set(
        "loop0",
        "loop/backing_file",
        "/tmp/sweetspot-scratch-A/backing.img",
    );
    killed(&mut s);
    std::fs::remove_dir_all(t.root.block_dev("loop0")).unwrap();
    assert_eq!(recover_benches(&k, &mut s, &t.root).unwrap(), 0);
    assert_eq!(open(&s), 0);
}

#[test]
fn restore_says_which_host_wide_knobs_it_left_alone_and_whose_lock_kept_them() {
    let (t, k, mut s) = fixture(true);
    let ratio: Setting = [("dirty_ratio".to_string(), KnobValue::Int(30))]
        .into_iter()
        .collect();
    let fifo = fifo(8);
    let sdb = find(&t.root, "sdb").unwrap();
    apply_with(&k, &mut s, &t.root, &sdb, &fifo, &Owner::Set).unwrap();
    // A bench measures sdb: sdb is left alone, with no word of host knobs (none is open).
    let held = DeviceLock::acquire(
        &lock::path(s.path(), &t.root, &sdb.identity),
        "sdb",
        Holder::me("bench"),
    )
    .unwrap();
    let r = restore_idle(&k, &mut s, &t.root, None).unwrap();
    assert_eq!((r.knobs, r.held.len()), (0, 1));
    assert!(r.host_left.is_none(), "{:?}", r.host_left);
    // With dirty_ratio journaled, it is left alone too: it acts on sdb as well.
    crate::knob::apply::apply_host_with(&k, &mut s, &t.root, &ratio, &Owner::Set).unwrap();
    let r = restore_idle(&k, &mut s, &t.root, None).unwrap();
    let h = r.host_left.unwrap();
    // dirty_bytes is journaled with it (writing one member of the pair zeroes the other).
    assert_eq!(h.knobs, ["dirty_bytes", "dirty_ratio"]);
    // Whose lock kept them, in the words `restore` prints.
    let kept_by = |why: &str, who: &str, end: &str| {
        assert!(
            why.starts_with(&format!("`sweetspot {who}` (pid ")) && why.ends_with(end),
            "{why}"
        );
    };
    kept_by(&h.why, "bench", "writes sdb, and they act on every device");
    assert_eq!(t.vm("dirty_ratio"), "30");
    drop(held);
    // Another writer holds the host's own lock: the host-wide knobs wait for it, sdb not.
    let host = DeviceLock::acquire(
        &lock::path(s.path(), &t.root, lock::HOST),
        "the host",
        Holder::me("tune"),
    )
    .unwrap();
    let r = restore_idle(&k, &mut s, &t.root, None).unwrap();
    assert_eq!(r.knobs, 1);
    assert_eq!(t.get("sdb", "queue/iosched/fifo_batch"), "16");
    let h = r.host_left.unwrap();
    kept_by(&h.why, "tune", "holds the host-wide knobs' lock");
    assert_eq!(t.vm("dirty_ratio"), "30");
    drop(host);
    let r = restore_idle(&k, &mut s, &t.root, None).unwrap();
    assert_eq!(r.knobs, 1);
    assert!(r.host_left.is_none());
    assert_eq!(t.vm("dirty_ratio"), "20");
}

#[test]
fn a_running_host_tune_is_judged_by_the_host_lock_it_holds() {
    let (t, k, mut s) = fixture(false);
    let target = TargetInfo {
        label: "host".into(),
        identity: crate::bench::user_testbed::host_identity(&t.root),
        kernel: "6.18".into(),
    };
    assert_eq!(tune_lock(&target.identity), lock::HOST);
    assert_eq!(tune_lock("sim:fake-sda"), "sim:fake-sda");
    // `tune --host`, alive (a child that sleeps) and holding the host's lock, as `tune`
    // takes it (held here in its name); nothing journaled yet (its first trial is at the
    // default).
    let child = Child::sleep();
    let host = DeviceLock::acquire(
        &lock::path(s.path(), &t.root, lock::HOST),
        "the host",
        Holder {
            pid: child.pid(),
            ..Holder::me("tune")
        },
    )
    .unwrap();
    let id = s.insert_tune(&target, None, "host").unwrap();
    set_pid(&s, id, child.pid());
    let row = s.running_tunes().unwrap().remove(0);
    assert!(alive(s.path(), &t.root, &row));
    let (r, log) = logged(|| recover_with(&k, &mut s, &t.root).unwrap());
    assert_eq!(r, Recovered::default());
    assert!(!log.contains("was killed"), "{log}");
    assert_eq!(s.running_tunes().unwrap().len(), 1, "marked recovered");
    // Its trial, and a `set` of another host-wide knob: both left alone, named.
    let owner = Owner::Tune(id);
    let knob = |k: &str, v: i64| -> Setting { [(k.to_string(), KnobValue::Int(v))].into() };
    crate::knob::apply::apply_host_with(&k, &mut s, &t.root, &knob("swappiness", 10), &owner)
        .unwrap();
    crate::knob::apply::apply_host_with(&k, &mut s, &t.root, &knob("dirty_ratio", 30), &Owner::Set)
        .unwrap();
    let r = restore_idle(&k, &mut s, &t.root, None).unwrap();
    assert_eq!((r.knobs, r.recovered, r.busy.len()), (0, 0, 1));
    let h = r.host_left.unwrap();
    assert_eq!(h.knobs, ["dirty_bytes", "dirty_ratio"]);
    assert_eq!(
        h.why,
        format!(
            "tune {id} (pid {}) is tuning the host-wide knobs",
            child.pid()
        )
    );
    assert_eq!(
        (t.vm("swappiness"), t.vm("dirty_ratio")),
        ("10".into(), "30".into())
    );
    // Its lock is free (the pid may be another process's after a power loss): killed,
    // recovered, and everything put back.
    drop(host);
    let r = restore_idle(&k, &mut s, &t.root, None).unwrap();
    drop(child);
    assert_eq!((r.knobs, r.recovered, r.busy.len()), (2, 1, 0));
    assert_eq!(
        (t.vm("swappiness"), t.vm("dirty_ratio")),
        ("60".into(), "20".into())
    );
}

#[test]
fn a_running_tune_is_judged_by_the_lock_file_its_row_records_and_an_old_row_by_its_identity() {
    let (t, k, mut s) = fixture(false);
    // `tune --scratch --emulate`: its identity names no lock; it holds `$TMPDIR`'s disk's
    // (a `scratch:ext4-on:` identity: under the database's directory on a fake tree).
    let target = TargetInfo {
        label: "loop0 (emulated emmc)".into(),
        identity: "scratch:emulate:latency=100us,channels=4".into(),
        kernel: "6.18".into(),
    };
    let file = lock::path(s.path(), &t.root, "scratch:ext4-on:virtual-fs");
    let child = Child::sleep();
    let as_child = Holder {
        pid: child.pid(),
        ..Holder::me("tune")
    };
    let held = DeviceLock::acquire(&file, "--scratch", as_child.clone()).unwrap();
    let pid = |s: &Store, id: i64| set_pid(s, id, child.pid());
    let id = s
        .insert_tune_holding(&target, None, "quick", &file)
        .unwrap();
    pid(&s, id);
    let row = s.tune(id).unwrap().unwrap();
    assert_eq!(row.lock_file.as_deref(), Some(file.as_path()));
    assert!(alive(s.path(), &t.root, &row));
    // The same tune as an older sweetspot stored it (no lock file): judged by the lock
    // its identity maps to, which nobody holds, so killed (what every scratch --emulate
    // tune was before its row recorded its lock).
    let old = s.insert_tune(&target, None, "quick").unwrap();
    pid(&s, old);
    let old_row = s.tune(old).unwrap().unwrap();
    assert_eq!(old_row.lock_file, None);
    assert!(!alive(s.path(), &t.root, &old_row));
    // Recovery leaves the live one running, and marks the old one recovered.
    let (r, log) = logged(|| recover_with(&k, &mut s, &t.root).unwrap());
    assert_eq!(r.tunes, 1);
    assert!(!log.contains(&format!("tune {id} ")), "{log}");
    assert!(log.contains(&format!("tune {old} on ")), "{log}");
    let running: Vec<i64> = s.running_tunes().unwrap().iter().map(|t| t.id).collect();
    assert_eq!(running, [id]);
    // An old row whose identity maps to a lock that is held (a device's, `sim:`): alive.
    let sim = TargetInfo {
        label: "sim:fake-sda".into(),
        identity: "sim:fake-sda".into(),
        kernel: "sim".into(),
    };
    let sim_lock = DeviceLock::acquire(
        &lock::path(s.path(), &t.root, &sim.identity),
        "sim:fake-sda",
        as_child,
    )
    .unwrap();
    let sim_id = s.insert_tune(&sim, None, "quick").unwrap();
    pid(&s, sim_id);
    assert!(alive(s.path(), &t.root, &s.tune(sim_id).unwrap().unwrap()));
    drop(sim_lock);
    assert!(!alive(s.path(), &t.root, &s.tune(sim_id).unwrap().unwrap()));
    // Its lock let go (the file is removed): killed, whatever its identity maps to.
    drop(held);
    assert!(!alive(s.path(), &t.root, &s.tune(id).unwrap().unwrap()));
}

#[test]
fn a_tune_whose_pid_lives_on_is_dead_when_another_writer_holds_its_lock() {
    let (t, k, mut s) = fixture(false);
    let me = std::process::id();
    // A killed `tune --scratch --emulate` whose pid now belongs to an unrelated process
    // (a child that sleeps). It had changed fifo_batch on its device (sda here) and
    // dirty_ratio host-wide; it recorded `$TMPDIR`'s disk's scratch lock as its own.
    let target = TargetInfo {
        label: "loop0 (emulated emmc)".into(),
        identity: "scratch:emulate:latency=100us,channels=4".into(),
        kernel: "6.18".into(),
    };
    let file = lock::path(s.path(), &t.root, "scratch:ext4-on:virtual-fs");
    let child = Child::sleep();
    let id = s
        .insert_tune_holding(&target, Some("sda"), "quick", &file)
        .unwrap();
    set_pid(&s, id, child.pid());
    let owner = Owner::Tune(id);
    let sda = find(&t.root, "sda").unwrap();
    let ratio: Setting = [("dirty_ratio".to_string(), KnobValue::Int(30))].into();
    apply_with(&k, &mut s, &t.root, &sda, &fifo(4), &owner).unwrap();
    crate::knob::apply::apply_host_with(&k, &mut s, &t.root, &ratio, &owner).unwrap();
    // A later `tune --scratch` (this process) holds that lock now: not the tune's process,
    // so the tune is dead, recovered, and its knobs are put back (their locks are free).
    let later = DeviceLock::acquire(&file, "--scratch", Holder::me("tune")).unwrap();
    let row = s.tune(id).unwrap().unwrap();
    assert!(
        !alive(s.path(), &t.root, &row),
        "judged by who holds its lock"
    );
    let (r, log) = logged(|| recover_with(&k, &mut s, &t.root).unwrap());
    assert_eq!((r.tunes, r.knobs), (1, 2), "{log}");
    assert!(
        log.contains(&format!(
            "tune {id} on loop0 (emulated emmc) was killed (pid {}); restored 2 knobs",
            child.pid()
        )),
        "{log}"
    );
    assert_eq!(t.get("sda", "queue/iosched/fifo_batch"), "16");
    assert_eq!(t.vm("dirty_ratio"), "20");
    assert!(s.running_tunes().unwrap().is_empty());
    drop(later);

    // A killed `tune --host`, its pid reused the same way; a `set` of a host-wide knob
    // (this process) holds the host's lock: dead, named killed, and its swappiness waits
    // for that lock (not for a tune that is gone); put back once the `set` is done.
    let host_target = TargetInfo {
        label: "host".into(),
        identity: crate::bench::user_testbed::host_identity(&t.root),
        kernel: "6.18".into(),
    };
    let host_file = lock::path(s.path(), &t.root, lock::HOST);
    let host_id = s
        .insert_tune_holding(&host_target, None, "host", &host_file)
        .unwrap();
    set_pid(&s, host_id, child.pid());
    let swap: Setting = [("swappiness".to_string(), KnobValue::Int(10))].into();
    crate::knob::apply::apply_host_with(&k, &mut s, &t.root, &swap, &Owner::Tune(host_id)).unwrap();
    let set = DeviceLock::acquire(&host_file, "the host", Holder::me("set")).unwrap();
    assert!(!alive(
        s.path(),
        &t.root,
        &s.tune(host_id).unwrap().unwrap()
    ));
    let r = restore_idle(&k, &mut s, &t.root, None).unwrap();
    assert!(
        r.busy.is_empty(),
        "a dead tune named as running: {:?}",
        r.busy
    );
    let (r, log) = logged(|| recover_with(&k, &mut s, &t.root).unwrap());
    assert_eq!((r.tunes, r.knobs), (0, 0));
    assert!(
        log.contains(&format!(
            "tune {host_id} on host was killed (pid {}); `sweetspot set` (pid {me}, ",
            child.pid()
        )) && log.contains("holds the host-wide knobs' lock, so swappiness is restored later"),
        "{log}"
    );
    assert_eq!(t.vm("swappiness"), "10", "written under the set's lock");
    drop(set);
    let r = recover_with(&k, &mut s, &t.root).unwrap();
    assert_eq!((r.tunes, r.knobs), (1, 1));
    assert_eq!(t.vm("swappiness"), "60");

    // The tune's own process holds its lock: alive, and left alone; so it is before the
    // tune wrote its id into the lock file, not when the file names another tune.
    let live = s
        .insert_tune_holding(&target, Some("sda"), "quick", &file)
        .unwrap();
    set_pid(&s, live, child.pid());
    let judge = |s: &Store| alive(s.path(), &t.root, &s.tune(live).unwrap().unwrap());
    let held = DeviceLock::acquire(
        &file,
        "--scratch",
        Holder {
            pid: child.pid(),
            ..Holder::me("tune")
        },
    )
    .unwrap();
    assert!(judge(&s), "held by its own pid, no tune id yet");
    held.set_tune(live + 1).unwrap();
    assert!(!judge(&s), "held by its pid for another tune");
    held.set_tune(live).unwrap();
    assert!(judge(&s), "held by its own pid for itself");
    let (r, log) = logged(|| recover_with(&k, &mut s, &t.root).unwrap());
    assert_eq!(r, Recovered::default());
    assert!(!log.contains("was killed"), "{log}");
    let running: Vec<i64> = s.running_tunes().unwrap().iter().map(|t| t.id).collect();
    assert_eq!(running, [live]);
    // A holder that cannot be read (an empty file, as while it is rewritten): judged by
    // the lock being held, as before.
    std::fs::write(&file, "").unwrap();
    assert!(judge(&s), "held, holder unreadable");
    drop(held);
    assert!(!judge(&s));
}

#[test]
fn roots_read_back_from_the_database_are_quoted_on_one_line() {
    let root = SysRoot::new("/tmp/a$(touch /tmp/x) ;id;#", "/tmp/p\nq");
    let c = undo_command(Path::new("/tmp/d b/s.db"), &root, Some("sda"));
    assert_eq!(
        c,
        "sweetspot --db '/tmp/d b/s.db' --sysfs-root '/tmp/a$(touch /tmp/x) ;id;#' \
         --procfs-root \"/tmp/p\\\\nq\" restore sda"
    );
    let plain = undo_command(
        Path::new("/tmp/s.db"),
        &SysRoot::new("/t/sys", "/t/proc"),
        None,
    );
    assert_eq!(
        plain,
        "sweetspot --db /tmp/s.db --sysfs-root /t/sys --procfs-root /t/proc restore"
    );
}
