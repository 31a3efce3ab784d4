//! A running `tune --host` is alive to the other commands: its row (`host:<hostname>`) is
//! judged by the host-wide knobs' lock, which it holds, so `restore` (whose recovery runs
//! first) neither warns that it was killed nor marks it `recovered`, `history` says it is
//! running, and `restore` leaves its host-wide knobs alone with a "left alone" line naming it
//! and exit 1; once it is stopped (SIGTERM), `restore` exits 0. On a fake procfs and sysfs
//! (never the real `/proc` or `/sys`), with a user benchmark that waits for the test: at the
//! default swappiness (60) until `gate-default` exists, at any other value until
//! `gate-trial` does, so the tune stays running between the steps for as long as they take.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::wait_for;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

/// The running `tune --host`: on drop (also when an assertion fails) both gates are opened
/// and it is killed (SIGKILL; its benchmark's process group dies with it) and reaped.
struct Tune {
    child: Child,
    gates: [PathBuf; 2],
}

impl Drop for Tune {
    fn drop(&mut self) {
        for g in &self.gates {
            let _ = std::fs::write(g, "");
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fake host in a temp dir: `proc/sys/vm` ([`common::Env`]: swappiness 60),
/// `proc/sys/kernel/hostname` = `testhost`, an empty `sys/block`, its own `$TMPDIR`.
struct Host {
    env: common::Env,
}

impl Host {
    fn new() -> Host {
        let env = common::Env::new();
        let kernel = env.proc().join("sys/kernel");
        std::fs::create_dir_all(&kernel).unwrap();
        std::fs::write(kernel.join("hostname"), "testhost\n").unwrap();
        std::fs::create_dir_all(env.dir.path().join("sys/block")).unwrap();
        std::fs::create_dir_all(env.dir.path().join("tmp")).unwrap();
        Host { env }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.env.dir.path().join(name)
    }
    /// `sweetspot --db … --procfs-root … --sysfs-root … <args>`, `$TMPDIR` its own.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_sweetspot"));
        c.env("TMPDIR", self.path("tmp"))
            .arg("--db")
            .arg(self.env.db())
            .arg("--procfs-root")
            .arg(self.env.proc())
            .arg("--sysfs-root")
            .arg(self.path("sys"))
            .args(args);
        c
    }
    fn run(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let out: Output = self.cmd(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
    /// Starts `tune --host` of swappiness (10, 60, 100) against the gated benchmark.
    fn start_tune(&self) -> Tune {
        let gates = [self.path("gate-default"), self.path("gate-trial")];
        let policy = self.path("host.toml");
        std::fs::write(
            &policy,
            format!(
                "description = \"a benchmark that waits for the test\"\nruns = 2\nbudget = 8\n\
                 check_pairs = 2\n[knobs.swappiness]\nvalues = [10, 60, 100]\n[benchmark]\n\
                 command = '''v=$(cat {swap}); touch {dir}/ran-$v; if [ \"$v\" = 60 ]; then \
                 g={g0}; else g={g1}; fi; while [ ! -e $g ]; do sleep 0.05; done; \
                 echo \"t 1.$v\"'''\nregex = 't ([0-9.]+)'\nminimize = \"t\"\nunit = \"s\"\n\
                 timeout_s = 120\n",
                swap = self.env.proc().join("sys/vm/swappiness").display(),
                dir = self.env.dir.path().display(),
                g0 = gates[0].display(),
                g1 = gates[1].display(),
            ),
        )
        .unwrap();
        let child = self
            .cmd(&[
                "tune",
                "--host",
                "--seed",
                "1",
                "--policy",
                policy.to_str().unwrap(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Tune { child, gates }
    }
}

/// `history`'s line of tune 1 (exit 0 asserted).
fn tune_line(h: &Host) -> String {
    let (code, out, err) = h.run(&["history"]);
    assert_eq!(code, Some(0), "{err}");
    out.lines()
        .find(|l| l.trim_start().starts_with("#1 "))
        .unwrap_or_else(|| panic!("no tune #1 in:\n{out}"))
        .to_string()
}

#[test]
fn a_running_host_tune_is_alive_to_restore_and_its_knobs_are_left_alone() {
    let h = Host::new();
    let mut tune = h.start_tune();
    let pid = tune.child.id();
    let alone = |knobs: &str, it: &str| {
        format!(
            "left alone: the host-wide {knobs}, while tune 1 (pid {pid}) is tuning {it}; the \
             tune undoes its own changes when it ends, `restore` then does the rest"
        )
    };

    // 1. Its first runs, at the default (60): nothing journaled yet. Restore's recovery used
    //    to call it killed and mark it `recovered`.
    wait_for("the tune's first run", 30, || h.path("ran-60").exists());
    let (code, out, err) = h.run(&["restore"]);
    assert!(!err.contains("was killed"), "{err}");
    assert_eq!(code, Some(0), "nothing is changed yet:\n{out}{err}");
    assert!(out.contains(&alone("knobs", "them")), "{out}");
    let line = tune_line(&h);
    assert!(line.contains(" running "), "{line}");
    for what in ["status", "history"] {
        let (code, out, err) = h.run(&[what]);
        assert_eq!(code, Some(0), "{what}: {err}");
        assert!(
            !format!("{out}{err}").contains("killed"),
            "{what}:\n{out}{err}"
        );
    }

    // 2. A trial at another value: swappiness is the tune's, journaled under it.
    std::fs::write(&tune.gates[0], "").unwrap();
    wait_for("a trial away from the default", 30, || {
        h.env.vm("swappiness") != "60"
    });
    let trial = h.env.vm("swappiness");
    let (code, out, err) = h.run(&["restore"]);
    assert!(!err.contains("was killed"), "{err}");
    assert!(out.contains(&alone("swappiness", "it")), "{out}");
    assert!(
        !out.contains("left alone: the host-wide swappiness, while `"),
        "{out}"
    );
    assert_eq!(code, Some(1), "it left swappiness changed:\n{out}{err}");
    assert!(err.contains("1 knob left changed"), "{err}");
    assert_eq!(
        h.env.vm("swappiness"),
        trial,
        "restore wrote under the running tune"
    );
    let line = tune_line(&h);
    assert!(line.contains(" running "), "{line}");
    assert!(tune.child.try_wait().unwrap().is_none(), "the tune ended");

    // 3. Stopped: it restores its own knob and ends; then `restore` has nothing left.
    let status = common::sigterm_through_gate(&mut tune.child, &tune.gates[1], 30);
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert_eq!(h.env.vm("swappiness"), "60", "the tune put it back");
    let (code, out, err) = h.run(&["restore"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        !out.contains("left alone") && !err.contains("killed"),
        "{out}{err}"
    );
    let line = tune_line(&h);
    assert!(line.contains(" interrupted "), "{line}");
}
