//! The command line's edges: a closed pipe, unknown devices in read-only commands, the help
//! text's promises (exit codes), each asserted on the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;
use std::process::{Command, Stdio};

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("sweetspot")
}

fn seed_surface() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml")
}

/// `tune … 2>&1 | head -0`: stderr is a pipe whose reader has gone before the first trial
/// line. The tune must end quietly (exit 0, not a panic's 101) and be recorded as
/// interrupted, not left "running".
#[test]
fn a_closed_pipe_ends_the_tune_quietly_and_records_it_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db");
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let status = Command::new(bin())
        .arg("--db")
        .arg(&db)
        .args(["tune", "--seed", "7", "--sim"])
        .arg(seed_surface())
        .stdout(Stdio::null())
        .stderr(writer)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0), "a closed pipe is not a failure");
    let out = Command::new(bin())
        .arg("--db")
        .arg(&db)
        .args(["history", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&common::ok_stdout(out)).unwrap();
    let tunes = v["tunes"].as_array().unwrap();
    assert_eq!(tunes.len(), 1, "{v}");
    assert_eq!(tunes[0]["status"], "interrupted", "{v}");
}

/// `history nosuch`: a device that is neither in the database nor in sysfs is bad input (exit
/// 2, naming it), as for every other command; a present device with nothing stored is an
/// empty history (exit 0).
#[test]
fn history_of_an_unknown_device_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    // Create the database with one simulated tune.
    let st = Command::new(bin())
        .arg("--db")
        .arg(&db)
        .args(["-q", "tune", "--seed", "1", "--sim"])
        .arg(seed_surface())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let out = Command::new(bin())
        .arg("--db")
        .arg(&db)
        .args(["history", "nosuch"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no device 'nosuch'"), "{err}");
    assert!(!err.contains("--tune"), "{err}");
    // A number that is a stored tune's ID (`1` or `#1`): the error says how to show it; one
    // that is not (`7`) gets no such hint.
    let history = |arg: &str| {
        let out = Command::new(bin())
            .arg("--db")
            .arg(&db)
            .args(["history", arg])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    for arg in ["1", "#1"] {
        let err = history(arg);
        assert!(
            err.contains(&format!("no device '{arg}'"))
                && err.contains("; for tune #1, `sweetspot history --tune 1`)"),
            "{err}"
        );
    }
    let err = history("7");
    assert!(
        err.contains("no device '7'") && !err.contains("--tune"),
        "{err}"
    );
    let out = Command::new(bin())
        .arg("--db")
        .arg(&db)
        .args(["history", "sim:seed-2.5.39-mm1-fifo_batch", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&common::ok_stdout(out)).unwrap();
    assert_eq!(v["tunes"].as_array().unwrap().len(), 1, "{v}");
}

/// With SWEETSPOT_DB set, a usage error must not read as if `--db` were required.
#[test]
fn usage_lines_do_not_show_db_when_sweetspot_db_is_set() {
    let out = Command::new(bin())
        .env("SWEETSPOT_DB", "/tmp/sweetspot-usage-test.db")
        .arg("tune")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Usage: sweetspot tune <--device"), "{err}");
    assert!(!err.contains("--db"), "{err}");
}

/// SWEETSPOT_DB still chooses the database when --db is not given.
#[test]
fn sweetspot_db_chooses_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("env.db");
    let st = Command::new(bin())
        .env("SWEETSPOT_DB", &db)
        .args(["-q", "tune", "--seed", "3", "--sim"])
        .arg(seed_surface())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    assert!(db.exists(), "the tune was stored in $SWEETSPOT_DB");
}

/// Runs the binary with `--db db` and `args`: (exit code, stderr).
fn run(db: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    common::code_and_stderr(
        Command::new(bin())
            .arg("--db")
            .arg(db)
            .args(args)
            .output()
            .unwrap(),
    )
}

/// Paths that cannot take what they are given are bad input (exit 2) naming the flag or the
/// file: `profile export --out` to a directory, to a file for `--format tuned` (which writes
/// DIR/tuned.conf) or under /proc; `profile apply` of a directory; and `--metric` without
/// `--job` beside `--sim`, which clap's `requires` lets through.
#[test]
fn bad_paths_and_a_metric_without_a_job_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("o.db");
    let file = dir.path().join("plain");
    std::fs::write(&file, "x").unwrap();
    let d = dir.path().to_str().unwrap();
    let f = file.to_str().unwrap();
    let s = seed_surface();
    let s = s.to_str().unwrap();
    // A database to export from (a simulated sweet spot: an empty profile, and a warning).
    let (code, err) = run(&db, &["-q", "tune", "--seed", "1", "--sim", s]);
    assert_eq!(code, Some(0), "{err}");
    let cases: [(Vec<&str>, String); 4] = [
        (
            vec!["profile", "export", "--out", d],
            format!("--out {d}: is a directory; give the file to write"),
        ),
        (
            vec!["profile", "export", "--format", "tuned", "--out", f],
            format!("--out {f}: not a directory (--format tuned writes DIR/tuned.conf)"),
        ),
        (
            vec!["profile", "export", "--out", "/proc/sweetspot-test.toml"],
            "--out /proc/sweetspot-test.toml: cannot write there".to_string(),
        ),
        (
            vec!["profile", "apply", d],
            format!("profile {d}: is a directory, not a file"),
        ),
    ];
    for (args, want) in cases {
        let (code, err) = run(&db, &args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(&want), "{args:?}: {err}");
    }
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "x",
        "--out over a file wrote it"
    );
    let s = seed_surface();
    let (code, err) = run(
        &db,
        &[
            "tune",
            "--sim",
            s.to_str().unwrap(),
            "--metric",
            "regex:(\\d+)",
            "--maximize",
            "x",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--metric needs --job CMD"), "{err}");
}

/// A `--sysfs-root` or `--procfs-root` that is missing or not a directory is bad input (exit 2)
/// naming the flag and the path, for every command, before anything is read or created: read
/// as an empty tree it listed no disk (exit 1) or dropped every host-wide knob (exit 0).
#[test]
fn a_root_that_is_not_a_directory_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let sys = dir.path().join("sys");
    let dev = sys.join("block/sdz");
    std::fs::create_dir_all(dev.join("queue")).unwrap();
    std::fs::write(dev.join("dev"), "8:240\n").unwrap();
    std::fs::write(dev.join("queue/scheduler"), "[none]\n").unwrap();
    std::fs::create_dir_all(dir.path().join("proc/sys/vm")).unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, "x").unwrap();
    let missing = dir.path().join("missing");
    let (sys, proc_) = (sys.to_str().unwrap(), dir.path().join("proc"));
    let proc_ = proc_.to_str().unwrap();
    let (file, missing) = (file.to_str().unwrap(), missing.to_str().unwrap());
    let cases = [
        (
            vec!["--sysfs-root", missing, "devices"],
            format!("--sysfs-root {missing}: no such directory"),
        ),
        (
            vec!["--sysfs-root", file, "devices"],
            format!("--sysfs-root {file}: not a directory"),
        ),
        (
            vec![
                "--sysfs-root",
                sys,
                "--procfs-root",
                missing,
                "knobs",
                "sdz",
            ],
            format!("--procfs-root {missing}: no such directory"),
        ),
        (
            vec![
                "--procfs-root",
                file,
                "--sysfs-root",
                sys,
                "set",
                "sdz",
                "nomerges=1",
            ],
            format!("--procfs-root {file}: not a directory"),
        ),
    ];
    for (args, want) in cases {
        let (code, err) = run(&db, &args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(
            err.trim_end(),
            format!("sweetspot: error: {want}"),
            "{args:?}"
        );
    }
    assert!(!db.exists(), "a refused command created the database");
    // Fake roots that are directories still work.
    let (code, err) = run(
        &db,
        &["--sysfs-root", sys, "--procfs-root", proc_, "knobs", "sdz"],
    );
    assert_eq!(code, Some(0), "{err}");
}

/// An option's default is named once in its help, by clap (`[default: quick]`), not also in
/// its text: `tune --policy` said "Default: quick [default: quick]".
#[test]
fn an_options_default_is_named_once() {
    let out = Command::new(bin())
        .args(["tune", "--help"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8(out.stdout).unwrap();
    let policy = help
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("--policy"))
        .take_while(|l| !l.trim_start().starts_with("--budget"))
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(
        policy.to_lowercase().matches("default").count(),
        1,
        "{policy}"
    );
    assert!(policy.trim_end().ends_with("[default: quick]"), "{policy}");
    // The same for every option of every command: a text that names the default beside a
    // clap default says it twice.
    fn check(cmd: &clap::Command, name: &str) {
        for a in cmd.get_arguments() {
            let text = [a.get_help(), a.get_long_help()]
                .into_iter()
                .flatten()
                .map(|h| h.to_string().to_lowercase())
                .collect::<String>();
            // A flag's implicit `false` is not shown.
            let shown = a.get_action().takes_values() && !a.is_hide_default_value_set();
            assert!(
                !shown || a.get_default_values().is_empty() || !text.contains("default"),
                "{name} --{}: {text}",
                a.get_id()
            );
        }
        for sub in cmd.get_subcommands() {
            check(sub, &format!("{name} {}", sub.get_name()));
        }
    }
    let mut top = <sweetspot::cli::Cli as clap::CommandFactory>::command();
    top.build();
    check(&top, "sweetspot");
}

/// Every command's `--help` ends with the exit codes (one text, [`sweetspot::cli::EXIT_STATUS`],
/// which the man pages' EXIT STATUS section is made from), once; the daemon with its own
/// ([`sweetspot::cli::DAEMON_EXIT_STATUS`]: 0 when SIGTERM stops it), after its signals and
/// files. A subcommand's `-h` ends with them in a line ([`sweetspot::cli::EXIT_STATUS_SHORT`]);
/// `sweetspot -h` has no room for them (tests/cli/help_budget.rs).
#[test]
fn every_commands_help_ends_with_the_exit_status() {
    fn paths(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<Vec<String>>) {
        out.push(path.clone());
        // `help` is clap's own (`sweetspot help tune`).
        let shown = |s: &&clap::Command| !s.is_hide_set() && s.get_name() != "help";
        for sub in cmd.get_subcommands().filter(shown) {
            let mut p = path.clone();
            p.push(sub.get_name().to_string());
            paths(sub, p, out);
        }
    }
    let mut top = <sweetspot::cli::Cli as clap::CommandFactory>::command();
    top.build();
    let mut all = Vec::new();
    paths(&top, Vec::new(), &mut all);
    assert!(all.len() >= 14, "{all:?}");
    for (path, flag) in all.iter().flat_map(|p| [(p, "-h"), (p, "--help")]) {
        let out = Command::new(bin()).args(path).arg(flag).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{path:?} {flag}");
        let help = String::from_utf8(out.stdout).unwrap();
        let status = match (path.as_slice(), flag) {
            ([], "-h") => {
                assert!(!help.contains("Exit status:"), "{help}");
                continue;
            }
            ([d], "-h") if d == "daemon" => sweetspot::cli::DAEMON_EXIT_STATUS_SHORT,
            ([d], _) if d == "daemon" => sweetspot::cli::DAEMON_EXIT_STATUS,
            (_, "-h") => sweetspot::cli::EXIT_STATUS_SHORT,
            _ => sweetspot::cli::EXIT_STATUS,
        };
        assert!(
            help.ends_with(&format!("\n\n{status}\n")),
            "{path:?} {flag}:\n{help}"
        );
        assert_eq!(help.matches("Exit status:").count(), 1, "{path:?} {flag}");
        if path == &["daemon"] && flag == "--help" {
            assert!(
                help.contains("\nSignals:\n") && help.contains("\nFiles:\n"),
                "{help}"
            );
        }
    }
}

/// Every numeric flag of `tune` and `bench` has a range, refused by the parser (exit 2, the
/// flag and value named) before anything is looked up; at its bound it is accepted (the run
/// then fails on the unknown device instead).
#[test]
fn numeric_flags_are_refused_outside_their_range_and_accepted_at_its_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    for (cmd, flag, bad, why) in [
        ("tune", "--lead", "60.001", "must be 0–60 s"),
        ("tune", "--lead", "1e300", "must be 0–60 s"),
        ("bench", "--lead", "61", "must be 0–60 s"),
        (
            "tune",
            "--job-scale",
            "100.5",
            "must be a number in (0, 100]",
        ),
        ("bench", "--job-scale", "0", "must be a number in (0, 100]"),
        (
            "tune",
            "--load-mib",
            "1048577",
            "1048577 is not in 1..=1048576",
        ),
        ("bench", "--load-mib", "0", "0 is not in 1..=1048576"),
        ("tune", "--budget", "10001", "10001 is not in 1..=10000"),
    ] {
        let (code, err) = run(&db, &[cmd, "--device", "nosuchdev", flag, bad]);
        assert_eq!(code, Some(2), "{cmd} {flag} {bad}: {err}");
        assert!(
            err.contains(&format!("invalid value '{bad}' for '{flag} <")) && err.contains(why),
            "{cmd} {flag} {bad}: {err}"
        );
    }
    for cmd in ["tune", "bench"] {
        let mut args = vec![
            cmd,
            "--device",
            "nosuchdev",
            "--lead",
            "60",
            "--job-scale",
            "100",
        ];
        args.extend(["--load-mib", "1048576"]);
        if cmd == "tune" {
            args.extend(["--budget", "10000"]);
        }
        let (code, err) = run(&db, &args);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("unknown device 'nosuchdev'"), "{cmd}: {err}");
    }
}
