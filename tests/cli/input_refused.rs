//! Bad input to `tune` and `bench` is refused with exit 2 before anything is looked up,
//! locked, built or measured: no scratch loop device, no database, no failed tune in
//! `history`. Each case once measured for seconds (a scratch device made, the reference run)
//! before the refusal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn seed_surface() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml")
}

/// A policy `p.toml` in `dir` running `load` beside no_load, for its Ratio.
fn policy(dir: &Path, load: &str) -> String {
    let p = dir.join("p.toml");
    std::fs::write(
        &p,
        format!(
            "loads = [\"no_load\", \"{load}\"]\nbudget = 10\ncheck_pairs = 2\n\
             [objective]\nminimize = \"ratio\"\nloads = [\"{load}\"]\n\
             [knobs.read_ahead_kb]\nmin = 64\nmax = 256\n"
        ),
    )
    .unwrap();
    p.display().to_string()
}

/// Runs `cmd` with `PATH` set to `path` (when given), and returns (exit code, stderr, how
/// long it took).
fn refused(mut cmd: assert_cmd::Command, path: Option<&Path>) -> (Option<i32>, String, Duration) {
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    let t = Instant::now();
    let out = cmd.output().unwrap();
    let took = t.elapsed();
    let (code, err) = common::code_and_stderr(out);
    (code, err, took)
}

/// `io_other` without `--other-dir`, and `dbench_load` without `dbench` on `PATH`: `tune
/// --scratch` and `bench --scratch` refuse them at once (exit 2, the message naming what the
/// load needs), with no database created: nothing was locked, built, journaled or measured.
#[test]
fn loads_the_target_cannot_run_are_refused_before_anything_is_built() {
    let empty = tempfile::tempdir().unwrap(); // a PATH without dbench (nor mkfs: not needed)
    let cases = [
        (
            "io_other",
            None,
            "sweetspot: error: io_other writes to another filesystem: give it with --other-dir DIR",
        ),
        (
            "dbench_load",
            Some(empty.path()),
            "sweetspot: error: dbench_load is unavailable: dbench is not installed (install it \
             with `apt-get install dbench`)",
        ),
    ];
    for (load, path, want) in cases {
        let env = common::Env::new();
        let pol = policy(env.dir.path(), load);
        let tune = env.cmd(&["tune", "--scratch", "--policy", &pol, "--seed", "1"]);
        let loads = format!("no_load,{load}");
        let bench = env.cmd(&["bench", "--scratch", "--loads", &loads, "--runs", "1"]);
        for (what, cmd) in [("tune", tune), ("bench", bench)] {
            let (code, err, took) = refused(cmd, path);
            assert_eq!(code, Some(2), "{what} {load}: {err}");
            assert_eq!(err.trim_end(), want, "{what} {load}");
            assert!(
                !env.db().exists(),
                "{what} {load}: the database was created, so something was done first"
            );
            assert!(
                took < Duration::from_secs(5),
                "{what} {load}: took {took:?}"
            );
        }
    }
}

/// A user benchmark (a policy's `[benchmark]`) under `--sim`: the
/// message says why (a surface has no command to run), not "give --device, --scratch or
/// --sim", which --sim was.
#[test]
fn a_user_benchmark_under_sim_says_why() {
    let env = common::Env::new();
    let web = env.dir.path().join("web.toml");
    std::fs::write(
        &web,
        "runs = 3\nbudget = 10\ncheck_pairs = 2\n[knobs.sched_autogroup_enabled]\n\
         [benchmark]\ncommand = \"true\"\nregex = '([0-9.]+)'\nmaximize = \"requests\"\n",
    )
    .unwrap();
    let sim = seed_surface();
    let sim = sim.to_str().unwrap();
    let web = web.to_str().unwrap();
    let cmd = env.cmd(&["tune", "--sim", sim, "--policy", web, "--seed", "1"]);
    // (`--job` conflicts with `--sim` on the command line already.)
    let (code, err, _) = refused(cmd, None);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err.trim_end(),
        "sweetspot: error: a user benchmark runs a command: give --host, --device or \
         --scratch, not --sim"
    );
    assert!(!env.db().exists(), "the database was created");
}

/// A policy file with a typo (a knob name sweetspot does not know, a bound outside every
/// safe domain of its knob) is refused by `tune --scratch` before a scratch device is built
/// and formatted: exit 2 naming the file, line and field; no scratch directory in the run's
/// private `TMPDIR`, no loop device attached (`losetup -a` before and after), no database.
#[test]
fn a_policy_typo_is_refused_before_a_scratch_device_is_built() {
    let cases = [
        (
            "[knobs.fifo_btach]\nmin = 1\nmax = 64\n",
            "7: knobs.fifo_btach: unknown knob 'fifo_btach' (did you mean 'fifo_batch'?): not a \
             knob sweetspot knows",
        ),
        (
            "[knobs.read_ahead_kb]\nmin = 64\nmax = 99999999\n",
            "9: knobs.read_ahead_kb.max: 99999999 is outside the safe domain of read_ahead_kb",
        ),
    ];
    let losetup = || {
        let out = std::process::Command::new("losetup")
            .arg("-a")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for (knobs, want) in cases {
        let env = common::Env::new();
        let tmp = tempfile::tempdir().unwrap();
        let pol = env.dir.path().join("typo.toml");
        std::fs::write(
            &pol,
            format!(
                "loads = [\"no_load\", \"io_load\"]\nbudget = 10\ncheck_pairs = 2\n\
                 [objective]\nminimize = \"ratio\"\nloads = [\"io_load\"]\n{knobs}"
            ),
        )
        .unwrap();
        let before = losetup();
        let mut cmd = env.cmd(&[
            "-v",
            "tune",
            "--scratch",
            "--policy",
            pol.to_str().unwrap(),
            "--seed",
            "1",
        ]);
        cmd.env("TMPDIR", tmp.path());
        let (code, err, _) = refused(cmd, None);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(&format!("{}:{want}", pol.display())), "{err}");
        assert!(!err.contains("scratch: /dev/loop"), "{err}");
        assert_eq!(
            std::fs::read_dir(tmp.path()).unwrap().count(),
            0,
            "a scratch directory was made"
        );
        assert_eq!(losetup(), before, "a loop device was attached");
        assert!(!env.db().exists(), "the database was created");
    }
}
