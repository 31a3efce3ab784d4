//! Tests of [`super`]: the holder named, files removed and swept, symlinks and shared
//! directories refused, a wait that gives up naming the holder.

use super::*;

fn lock_at(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("locks/loop_x.lock")
}

#[test]
fn the_host_lock_is_the_machines_when_proc_is_real_and_a_device_lock_when_sys_is() {
    let db = Path::new("/tmp/x/sweetspot.db");
    let local = PathBuf::from("/tmp/x/locks");
    let run = if nix::unistd::geteuid().is_root() {
        PathBuf::from(RUN_DIR)
    } else {
        local.clone()
    };
    let fake_sys = SysRoot::new("/tmp/x/sys", "/proc");
    let fake_proc = SysRoot::new("/sys", "/tmp/x/proc");
    assert_eq!(dir(db, &fake_sys, HOST), run);
    assert_eq!(dir(db, &fake_sys, "loop0"), local);
    assert_eq!(dir(db, &fake_sys, DAEMON), local);
    assert_eq!(dir(db, &fake_proc, HOST), local);
    assert_eq!(dir(db, &fake_proc, "loop0"), run);
    assert_eq!(dir(db, &fake_proc, DAEMON), local);
    assert_eq!(dir(db, &SysRoot::default(), DAEMON), run);
    assert_eq!(dir(db, &SysRoot::default(), "sim:seed"), local);
}

#[test]
fn a_second_writer_is_refused_naming_the_holder() {
    let d = tempfile::tempdir().unwrap();
    let p = lock_at(&d);
    let l = DeviceLock::acquire(&p, "loop9", Holder::me("tune")).unwrap();
    l.set_tune(42).unwrap();
    assert!(held(&p));
    assert_eq!(holder(&p).unwrap().tune, Some(42));
    let e = DeviceLock::acquire(&p, "loop9", Holder::me("set")).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::BadInput(_)), "{e:?}");
    assert!(
        msg.contains("loop9 is in use by `sweetspot tune` (pid ")
            && msg.contains(&format!("pid {}, tune 42, for ", std::process::id())),
        "{msg}"
    );
}

#[test]
fn the_lock_file_is_removed_when_the_guard_drops() {
    let d = tempfile::tempdir().unwrap();
    let p = lock_at(&d);
    for _ in 0..3 {
        let l = DeviceLock::acquire(&p, "loop9", Holder::me("set")).unwrap();
        assert!(p.exists());
        drop(l);
        assert!(!p.exists(), "lock file left behind");
    }
    assert!(!held(&p));
    assert_eq!(std::fs::read_dir(p.parent().unwrap()).unwrap().count(), 0);
}

#[test]
fn a_file_left_by_a_killed_holder_is_taken_over_or_swept() {
    let d = tempfile::tempdir().unwrap();
    let p = lock_at(&d);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    // A holder that died: its file says who, but nobody holds the flock.
    std::fs::write(&p, "command=tune\npid=2147483646\nstarted=1\n").unwrap();
    assert!(!held(&p));
    let l = DeviceLock::acquire(&p, "loop9", Holder::me("set")).unwrap();
    assert_eq!(holder(&p).unwrap().command, "set");
    drop(l);
    assert!(!p.exists());
    std::fs::write(&p, "").unwrap();
    std::fs::write(p.with_file_name("other.txt"), "").unwrap();
    assert_eq!(sweep(p.parent().unwrap()), 1);
    assert!(!p.exists() && p.with_file_name("other.txt").exists());
}

#[test]
fn a_handle_on_an_unlinked_lock_file_does_not_count() {
    // A writer opened the file just before its holder dropped the guard (and unlinked it):
    // the flock it then gets is on a file nobody else will ever lock, so it must not count.
    let d = tempfile::tempdir().unwrap();
    let p = lock_at(&d);
    let first = DeviceLock::acquire(&p, "loop9", Holder::me("set")).unwrap();
    let old = File::options().read(true).write(true).open(&p).unwrap();
    assert!(matches!(
        attempt(&p, old.try_clone().unwrap(), &Holder::me("x")).unwrap(),
        Attempt::Busy(Some(_))
    ));
    drop(first);
    assert!(matches!(
        attempt(&p, old, &Holder::me("tune")).unwrap(),
        Attempt::Unlinked
    ));
    // A new holder gets a new file at the path; a second writer is refused.
    let second = DeviceLock::acquire(&p, "loop9", Holder::me("tune")).unwrap();
    assert!(held(&p));
    assert_eq!(holder(&p).unwrap().command, "tune");
    assert!(DeviceLock::acquire(&p, "loop9", Holder::me("set")).is_err());
    drop(second);
    assert!(!p.exists());
}
/// Kills a child's process group (flock(1) and the `sleep` that inherits its locked file)
/// and reaps the child when dropped, also when the test fails.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.0.id()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.0.wait();
    }
}

#[test]
fn a_symlink_planted_as_the_lock_file_is_refused_and_its_target_not_created() {
    let d = tempfile::tempdir().unwrap();
    let p = lock_at(&d);
    ensure_dir(p.parent().unwrap()).unwrap();
    let target = d.path().join("victim");
    std::os::unix::fs::symlink(&target, &p).unwrap();
    let e = DeviceLock::acquire(&p, "loop9", Holder::me("set")).unwrap_err();
    assert!(matches!(e, Error::BadInput(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "lock file {}: is a symbolic link; refusing to use it (it could make root \
             create or lock another file); remove it",
            p.display()
        )
    );
    assert!(!target.exists(), "the symlink's target was created");
    // Probes do not follow it either.
    assert!(
        held(&p),
        "a symlink counts as held: nothing is written under it"
    );
    assert_eq!(holder(&p), None);
}

#[test]
fn lock_files_are_private_and_their_directory_too() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let p = lock_at(&d);
    let _l = DeviceLock::acquire(&p, "loop9", Holder::me("set")).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&p), 0o600);
    assert_eq!(mode(p.parent().unwrap()), 0o700);
    drop(_l);
    // A file left 0644 by an older sweetspot is narrowed when it is next locked.
    std::fs::write(&p, "").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    let f = open_lock_file(&p).unwrap();
    assert_eq!(f.metadata().unwrap().permissions().mode() & 0o777, 0o600);
}

#[test]
fn a_lock_directory_others_may_write_is_refused_with_its_fix() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let p = lock_at(&d);
    let dir = p.parent().unwrap();
    std::fs::create_dir(dir).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = DeviceLock::acquire(&p, "loop9", Holder::me("set")).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::BadInput(_)), "{e:?}");
    assert!(
        msg.starts_with(&format!(
            "lock directory {}: is writable by others (owner ",
            dir.display()
        )) && msg.contains("mode 0777)")
            && msg.contains(&format!("chmod 0700 {}", dir.display())),
        "{msg}"
    );
    assert!(!p.exists());
    if nix::unistd::geteuid().is_root() {
        // As root: one owned by nobody (65534 on Debian), even 0700, is refused.
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(dir, Some(65534), None).unwrap();
        let msg = DeviceLock::acquire(&p, "loop9", Holder::me("set"))
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("is owned by nobody (uid 65534), not root (uid 0)"),
            "{msg}"
        );
    }
}

#[test]
fn a_wait_for_a_lock_another_process_holds_gives_up_naming_it() {
    let d = tempfile::tempdir().unwrap();
    let p = lock_at(&d);
    ensure_dir(p.parent().unwrap()).unwrap();
    std::fs::write(&p, "").unwrap();
    // Not sweetspot: its file names no holder, so /proc/locks does.
    let flock = Killed(
        std::os::unix::process::CommandExt::process_group(
            &mut std::process::Command::new("flock"),
            0,
        )
        .arg("-x")
        .arg(&p)
        .args(["sleep", "30"])
        .spawn()
        .expect("flock(1), util-linux"),
    );
    let start = Instant::now();
    while !held(&p) {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "flock never took it"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let start = Instant::now();
    let e =
        acquire_waiting(&p, "opening x", Holder::me("open"), Duration::from_secs(1)).unwrap_err();
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_secs(1) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    assert!(matches!(e, Error::BadInput(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "opening x: gave up after waiting 1 s for lock {}, held by pid {} (`flock -x {} \
             sleep 30`); wait for it to finish or stop it, then try again",
            p.display(),
            flock.0.id(),
            p.display()
        )
    );
    drop(flock);
    // Free again: taken at once.
    let l = acquire_waiting(&p, "opening x", Holder::me("open"), WAIT).unwrap();
    assert_eq!(holder(&p).unwrap().command, "open");
    drop(l);
}

#[test]
fn only_a_lock_files_place_is_taken_from_a_tune_row() {
    let db = Path::new("/var/lib/sweetspot/sweetspot.db");
    assert!(is_lock_path(
        db,
        Path::new("/run/sweetspot/locks/wwid_naa.5.lock")
    ));
    assert!(is_lock_path(
        db,
        Path::new("/var/lib/sweetspot/locks/host.lock")
    ));
    for bad in [
        "/tmp/x/fifo",
        "/dev/watchdog",
        "/run/sweetspot/locks/../../../etc/x.lock",
        "/var/lib/sweetspot/locks/sub/host.lock",
        "/run/sweetspot/locks/host",
        "/run/sweetspot/locks/.lock",
    ] {
        assert!(!is_lock_path(db, Path::new(bad)), "{bad}");
    }
}

#[test]
fn a_fifo_at_a_lock_path_is_probed_without_waiting() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("x.lock");
    nix::unistd::mkfifo(&p, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    // Not one of ours: judged held (nothing is written under it), and at once.
    assert!(held(&p));
    assert_eq!(holder(&p), None);
}
