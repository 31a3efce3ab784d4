//! `restore` removes what killed runs left whatever its roots say: a killed run's work
//! directory (`.sweetspot-bench-*`), found through the record in its run directory, also under
//! a fake `--sysfs-root`; and on the real `/sys` with a fake `--procfs-root`, a killed
//! `--scratch` run's mount, loop device and directory. A fake `--sysfs-root` never unmounts or
//! detaches anything: it names a scratch leftover and the command that removes it. Each test
//! has its own `$TMPDIR`, so no other run's leftovers are seen. As root.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use nix::fcntl::{Flock, FlockArg};
use std::path::{Path, PathBuf};
use std::process::Command;
use sweetspot::bench::stale;

/// `sweetspot --db <db> <roots...> restore` with `$TMPDIR` = `tmp`: its stdout (exit 0
/// asserted).
fn restore(tmp: &Path, db: &Path, roots: &[&Path]) -> String {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sweetspot"));
    c.env("TMPDIR", tmp).arg("--db").arg(db);
    for (flag, root) in ["--sysfs-root", "--procfs-root"]
        .iter()
        .zip(roots)
        .filter(|(_, r)| !r.as_os_str().is_empty())
    {
        c.arg(flag).arg(root);
    }
    let out = c.arg("restore").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// A directory `parent/name` with an owner lock file nobody holds (its run is dead), and a
/// file in it.
fn dead_dir(parent: &Path, name: &str) -> PathBuf {
    let d = parent.join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join(stale::LOCK_FILE), "").unwrap();
    std::fs::write(d.join("data"), "x").unwrap();
    d
}

/// A dead run directory under `tmp` recording `work` as its work directory, as a run's
/// `Bencher` leaves it when SIGKILLed.
fn dead_run(tmp: &Path, suffix: &str, work: &Path) -> PathBuf {
    let run = dead_dir(tmp, &format!("{}{suffix}", stale::RUN_PREFIX));
    stale::record_work(&run, work).unwrap();
    run
}

#[test]
fn a_fake_sysfs_restore_removes_a_killed_runs_work_directory_and_leaves_scratch_devices_alone() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let env = common::Env::new();
    let sys = env.dir.path().join("sys");
    std::fs::create_dir_all(sys.join("block")).unwrap();
    let tmp = env.dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    // A killed `tune --device sda --dir <fs>`: its work directory on the filesystem (not in
    // $TMPDIR, on no device the fake tree lists) and its run directory recording it.
    let fs = env.dir.path().join("fs");
    let work = dead_dir(&fs, ".sweetspot-bench-Kx1");
    let run = dead_run(&tmp, "Kx1", &work);
    // A live run's work directory (its owner lock held, here by this test) recorded by a dead
    // run directory stays; so does a directory not named as a work directory.
    let live = dead_dir(&fs, ".sweetspot-bench-Live");
    let _held = Flock::lock(
        std::fs::File::open(live.join(stale::LOCK_FILE)).unwrap(),
        FlockArg::LockExclusiveNonblock,
    )
    .unwrap();
    let run_live = dead_run(&tmp, "Lv2", &live);
    let other = dead_dir(&fs, "precious");
    let run_other = dead_run(&tmp, "Ot3", &other);
    // A killed `--scratch` run's directory: its loop device and mount would be real ones.
    let scratch = dead_dir(&tmp, &format!("{}Sc4", stale::DIR_PREFIX));

    let db = env.db();
    let out = restore(&tmp, &db, &[&sys, &env.proc()]);
    assert!(
        out.contains(&format!(
            "leftover of a killed run: removed {}, removed {}\n",
            work.display(),
            run.display()
        )),
        "{out}"
    );
    assert!(!work.exists() && !run.exists(), "{out}");
    assert!(
        live.join("data").exists(),
        "a live run's work directory stays: {out}"
    );
    assert!(other.join("data").exists(), "not a work directory: {out}");
    assert!(!run_live.exists() && !run_other.exists(), "{out}");
    assert!(scratch.join("data").exists(), "{out}");
    assert!(
        out.contains(&format!(
            "left alone: {} (a killed `--scratch` run's loop device, mount and files): a fake \
             --sysfs-root does not reach them; `sweetspot --db {} --procfs-root {} restore` \
             removes it\n",
            scratch.display(),
            db.display(),
            env.proc().display()
        )),
        "{out}"
    );
}

/// On drop (pass or fail): tears down whatever is left under the test's `$TMPDIR` (it
/// detaches only loop devices backed by a file there).
struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        stale::sweep_regardless(&self.0);
    }
}

#[test]
fn a_fake_procfs_restore_tears_down_a_killed_scratch_runs_loop_device_and_mount() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let env = common::Env::new();
    let tmp = env.dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let _cleanup = Cleanup(tmp.clone());
    // A killed `bench --scratch --procfs-root P`'s leftover: its directory with the owner
    // lock free, the backing file attached to a loop device, ext4 mounted on `mnt`.
    let dir = dead_dir(&tmp, &format!("{}Rk5", stale::DIR_PREFIX));
    sweetspot::bench::journal_db::record(&dir, &env.db()).unwrap();
    let backing = dir.join("backing.img");
    std::fs::File::create(&backing)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let (name, dev) = common::attach(&backing, false);
    assert!(
        Command::new("mkfs.ext4")
            .arg("-q")
            .arg(&dev)
            .status()
            .unwrap()
            .success()
    );
    let mnt = dir.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    assert!(
        Command::new("mount")
            .arg(&dev)
            .arg(&mnt)
            .status()
            .unwrap()
            .success()
    );

    // The real /sys (no --sysfs-root), a fake procfs: the leftover is a real one.
    let out = restore(&tmp, &env.db(), &[Path::new(""), &env.proc()]);
    assert!(
        out.contains(&format!(
            "leftover of a killed run: unmounted {}, detached {}, removed {}\n",
            mnt.display(),
            dev.display(),
            dir.display()
        )),
        "{out}"
    );
    assert!(!dir.exists(), "{out}");
    let b = std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file"));
    assert!(
        b.is_err() || !b.unwrap().contains(&*backing.to_string_lossy()),
        "{name} is still attached to the leftover"
    );
}
