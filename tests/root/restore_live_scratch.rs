//! A running `tune --scratch --emulate SPEC` is alive to the other commands. Its row's identity
//! (`scratch:emulate:<spec>`) names no lock: the tune holds the lock of `$TMPDIR`'s disk (what
//! a second `--scratch` run is refused by) and its loop device's. It is judged by the lock file
//! its row records, so `restore` (whose recovery runs first) neither warns that it was killed
//! nor marks it `recovered`, `history` says it is running, and `restore` leaves its loop device,
//! mounts, scratch directory and journaled knobs alone (its sweep of killed `--scratch` runs
//! too), with a "left alone" line naming the tune. As root, on the real `/sys` (a loop device
//! over a FUSE-emulated `emmc`) and a fake procfs (no real `/proc/sys` value is read or
//! written), with its own `$TMPDIR`. The tune's knob is `nr_requests` of its own loop device
//! only; the user benchmark waits for the test: at the default (its first run's value) until
//! `gate-default` exists, at any other value until `gate-trial` does, so the tune stays running
//! between the steps for as long as they take.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{loops_under, mounts_under, wait_for};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The running tune. On drop (also when an assertion fails): both gates are opened, the tune
/// is stopped (SIGTERM: it restores its knobs and removes its scratch device; SIGKILL after
/// 60 s), `restore` puts back what a killed one left journaled, and whatever is still under
/// the test's `$TMPDIR` (mounts, loop devices, directories) is swept.
struct Tune {
    child: Child,
    gates: [PathBuf; 2],
    tmp: PathBuf,
    db: PathBuf,
    proc: PathBuf,
}

impl Drop for Tune {
    fn drop(&mut self) {
        for g in &self.gates {
            let _ = std::fs::write(g, "");
        }
        if let Ok(None) = self.child.try_wait() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.child.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            let t = Instant::now();
            while matches!(self.child.try_wait(), Ok(None)) && t.elapsed() < Duration::from_secs(60)
            {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        let _ = Command::new(env!("CARGO_BIN_EXE_sweetspot"))
            .env("TMPDIR", &self.tmp)
            .arg("--db")
            .arg(&self.db)
            .arg("--procfs-root")
            .arg(&self.proc)
            .arg("-q")
            .arg("restore")
            .status();
        let _ = sweetspot::bench::stale::sweep_regardless(&self.tmp);
    }
}

/// The test's world: a database and a fake procfs ([`common::Env`]) and its own `$TMPDIR`.
struct World {
    env: common::Env,
    tmp: tempfile::TempDir,
}

impl World {
    fn path(&self, name: &str) -> PathBuf {
        self.env.dir.path().join(name)
    }

    /// `sweetspot --db … --procfs-root … <args>`, `$TMPDIR` its own.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_sweetspot"));
        c.env("TMPDIR", self.tmp.path())
            .arg("--db")
            .arg(self.env.db())
            .arg("--procfs-root")
            .arg(self.env.proc())
            .args(args);
        c
    }

    /// Exit code, stdout, stderr of `sweetspot <args>`.
    fn run(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let out = self.cmd(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Starts `tune --scratch --emulate emmc` of `nr_requests` (16, 48 and the loop queue
    /// depth `depth`, its default) against the gated benchmark.
    fn start_tune(&self, depth: &str) -> Tune {
        let gates = [self.path("gate-default"), self.path("gate-trial")];
        let policy = self.path("scratch.toml");
        std::fs::write(
            &policy,
            format!(
                "description = \"a benchmark that waits for the test\"\nruns = 2\nbudget = 8\n\
                 check_pairs = 2\n[knobs.nr_requests]\nvalues = [16, 48, {depth}]\n\
                 [benchmark]\n\
                 command = '''d=$(findmnt -n -o SOURCE --target .); \
                 v=$(cat /sys/block/${{d#/dev/}}/queue/nr_requests); \
                 touch {dir}/ran-$v; [ -e {dir}/default ] || \
                 {{ echo $v > {dir}/default.new; mv {dir}/default.new {dir}/default; }}; \
                 if [ \"$v\" = \"$(cat {dir}/default)\" ]; then g={g0}; else g={g1}; fi; \
                 while [ ! -e $g ]; do sleep 0.05; done; echo \"t 1.$v\"'''\n\
                 regex = 't ([0-9.]+)'\nminimize = \"t\"\nunit = \"s\"\ntimeout_s = 300\n",
                dir = self.env.dir.path().display(),
                g0 = gates[0].display(),
                g1 = gates[1].display(),
            ),
        )
        .unwrap();
        let child = self
            .cmd(&[
                "tune",
                "--scratch",
                "--emulate",
                "emmc",
                "--seed",
                "1",
                "--policy",
                policy.to_str().unwrap(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::File::create(self.path("tune.stderr")).unwrap(),
            ))
            .spawn()
            .unwrap();
        Tune {
            child,
            gates,
            tmp: self.tmp.path().to_path_buf(),
            db: self.env.db(),
            proc: self.env.proc(),
        }
    }

    /// `history`'s line of tune 1 (exit 0 asserted).
    fn tune_line(&self) -> String {
        let (code, out, err) = self.run(&["history"]);
        assert_eq!(code, Some(0), "{err}");
        out.lines()
            .find(|l| l.trim_start().starts_with("#1 "))
            .unwrap_or_else(|| panic!("no tune #1 in:\n{out}"))
            .to_string()
    }

    /// Tune 1's status and whether it has a `finished_at`, as stored.
    fn stored(&self) -> (String, bool) {
        let s = sweetspot::store::Store::open_read_only(&self.env.db()).unwrap();
        let t = s.tune(1).unwrap().expect("tune 1 is stored");
        (t.status.to_string(), t.finished_at.is_some())
    }
}

#[test]
fn a_running_emulated_scratch_tune_is_alive_to_restore_and_history_and_its_device_is_kept() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let w = World {
        env: common::Env::new(),
        tmp: tempfile::tempdir().unwrap(),
    };
    let queue = std::fs::read_to_string("/sys/module/loop/parameters/hw_queue_depth")
        .map_or_else(|_| "128".to_string(), |s| s.trim().to_string());
    let mut tune = w.start_tune(&queue);
    let pid = tune.child.id();
    let ran = |v: &str| w.path(&format!("ran-{v}")).exists();
    let alone = |dev: &str| {
        format!(
            "left alone: {dev}, while tune 1 (pid {pid}) is tuning it; the tune undoes its own \
             changes when it ends, `restore` then does the rest"
        )
    };
    let tune_err = || std::fs::read_to_string(w.path("tune.stderr")).unwrap_or_default();

    // 1. Its first run, at the default: the emulated device mounted, its loop device attached.
    wait_for("the tune's first run", 180, || {
        assert!(
            tune.child.try_wait().unwrap().is_none(),
            "the tune ended:\n{}",
            tune_err()
        );
        w.path("default").exists()
    });
    // The default as the first run found it (the loop queue depth without an I/O scheduler;
    // twice that with one).
    let depth = std::fs::read_to_string(w.path("default"))
        .unwrap()
        .trim()
        .to_string();
    assert!(ran(&depth));
    let loops = loops_under(w.tmp.path());
    assert_eq!(loops.len(), 1, "{loops:?}");
    let dev = loops[0].clone();
    let mounts = mounts_under(w.tmp.path());
    assert_eq!(
        mounts.len(),
        2,
        "the FUSE server's and the ext4: {mounts:?}"
    );
    let s = sweetspot::store::Store::open_read_only(&w.env.db()).unwrap();
    let row = s.tune(1).unwrap().unwrap();
    assert!(
        row.identity.starts_with("scratch:emulate:"),
        "{}",
        row.identity
    );
    drop(s);

    // Restore's recovery used to call it killed and mark it `recovered`.
    // (Its exit status depends on whether the loop device's previous user left its queue
    // off the baseline, which the tune journaled then.)
    let (_, out, err) = w.run(&["restore"]);
    assert!(!err.contains("was killed"), "{err}");
    assert!(!out.contains("killed tune"), "{out}");
    assert!(out.contains(&alone(&dev)), "{out}{err}");
    assert_eq!(w.stored(), ("running".to_string(), false));
    let line = w.tune_line();
    assert!(line.contains(" running "), "{line}");
    for what in ["status", "history"] {
        let (code, out, err) = w.run(&[what]);
        assert_eq!(code, Some(0), "{what}: {err}");
        assert!(
            !format!("{out}{err}").contains("killed"),
            "{what}:\n{out}{err}"
        );
    }
    // Its device, mounts and directory are all still there, and it still runs.
    assert_eq!(loops_under(w.tmp.path()), std::slice::from_ref(&dev));
    assert_eq!(mounts_under(w.tmp.path()), mounts);
    assert!(tune.child.try_wait().unwrap().is_none(), "the tune ended");

    // 2. A trial at another value: nr_requests is the tune's, journaled under it; restore
    //    leaves it as it is.
    std::fs::write(&tune.gates[0], "").unwrap();
    let nr = || {
        std::fs::read_to_string(format!("/sys/block/{dev}/queue/nr_requests"))
            .unwrap()
            .trim()
            .to_string()
    };
    let values = ["16", "48", queue.as_str()];
    wait_for("a trial away from the default", 120, || {
        values.iter().any(|v| *v != depth && ran(v))
    });
    let trial = nr();
    assert_ne!(trial, depth);
    let (code, out, err) = w.run(&["restore"]);
    assert!(!err.contains("was killed"), "{err}");
    assert!(out.contains(&alone(&dev)), "{out}{err}");
    assert_eq!(code, Some(1), "it left nr_requests changed:\n{out}{err}");
    assert_eq!(nr(), trial, "restore wrote under the running tune");
    assert_eq!(w.stored(), ("running".to_string(), false));
    let line = w.tune_line();
    assert!(line.contains(" running "), "{line}");
    assert_eq!(loops_under(w.tmp.path()), std::slice::from_ref(&dev));
    assert_eq!(mounts_under(w.tmp.path()), mounts);
    assert!(tune.child.try_wait().unwrap().is_none(), "the tune ended");

    // 3. Stopped: it restores its own knob and removes its scratch device; then `restore` has
    //    nothing left.
    let status = common::sigterm_through_gate(&mut tune.child, &tune.gates[1], 120);
    assert_eq!(status.code(), Some(130), "{status:?}\n{}", tune_err());
    assert_eq!(loops_under(w.tmp.path()), Vec::<String>::new());
    assert_eq!(mounts_under(w.tmp.path()), Vec::<String>::new());
    let (code, out, err) = w.run(&["restore"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        !out.contains("left alone") && !err.contains("killed"),
        "{out}{err}"
    );
    assert_eq!(w.stored(), ("interrupted".to_string(), true));
    let line = w.tune_line();
    assert!(line.contains(" interrupted "), "{line}");
}
