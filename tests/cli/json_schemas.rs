//! Every command's JSON output validates against its schema in `docs/schemas/`
//! (docs/json.md), and every command with JSON output has one: the commands are found in
//! `sweetspot -h` and each command's `-h` (a `--json` flag, or a `--format` that offers
//! `json`), so a new one without a schema fails here. Run on a fake sysfs (one mq-deadline
//! disk with a wwid) and procfs and a simulated device: nothing of the machine is touched.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const SURFACE: &str = "data/surfaces/seed-2.5.39-mm1-fifo_batch.toml";

fn schemas_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schemas")
}

/// The schema file of `command` (`profile export` → `profile-export.schema.json`).
fn schema_path(command: &str) -> PathBuf {
    schemas_dir().join(format!("{}.schema.json", command.replace(' ', "-")))
}

fn help(args: &[&str]) -> String {
    let out = assert_cmd::Command::cargo_bin("sweetspot")
        .unwrap()
        .args(args)
        .arg("-h")
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?} -h");
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands a `-h` lists under `Commands:` (`help` left out).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .filter(|c| c != "help")
        .collect()
}

/// Whether a `-h` offers JSON output: a `--json` flag, or a `--format` whose help (its
/// lines up to the next option; its values may wrap) names `json`.
fn offers_json(help: &str) -> bool {
    let lines: Vec<&str> = help.lines().map(str::trim_start).collect();
    lines.iter().enumerate().any(|(i, l)| {
        l.starts_with("--json")
            || (l.starts_with("--format")
                && lines[i..]
                    .iter()
                    .take_while(|x| *x == l || !x.starts_with('-'))
                    .any(|x| x.contains("json")))
    })
}

/// Every command (`profile export` for a nested one) whose `-h` offers JSON output.
fn json_commands() -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut todo: Vec<Vec<String>> = subcommands(&help(&[]))
        .into_iter()
        .map(|c| vec![c])
        .collect();
    while let Some(path) = todo.pop() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let h = help(&args);
        let subs = subcommands(&h);
        let json = offers_json(&h);
        if json {
            found.insert(path.join(" "));
        }
        for s in subs {
            let mut p = path.clone();
            p.push(s);
            todo.push(p);
        }
    }
    found
}

/// Parses `out`'s stdout as JSON and checks it against `command`'s schema; panics naming
/// every error.
fn check(command: &str, out: &std::process::Output) -> Value {
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{command}: {e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let path = schema_path(command);
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let validator = jsonschema::draft202012::new(&schema)
        .unwrap_or_else(|e| panic!("{}: not a valid schema: {e}", path.display()));
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{command} --json against {}:\n{}\n{v:#}",
        path.display(),
        errors.join("\n")
    );
    assert_eq!(v["version"], sweetspot::output::json::VERSION, "{command}");
    v
}

/// The fake disk: `sda`, mq-deadline, a wwid, read_ahead_kb 128.
fn fake_sys(dir: &Path) -> PathBuf {
    let sys = dir.join("sys");
    let d = sys.join("block/sda");
    for (rel, v) in [
        ("dev", "8:0"),
        ("size", "2097152"),
        ("device/wwid", "naa.5000c500a1b2c3d4"),
        ("queue/scheduler", "none [mq-deadline] kyber bfq"),
        ("queue/nr_requests", "64"),
        ("queue/read_ahead_kb", "128"),
        ("queue/rotational", "1"),
        ("queue/iosched/fifo_batch", "16"),
    ] {
        std::fs::create_dir_all(d.join(rel).parent().unwrap()).unwrap();
        std::fs::write(d.join(rel), format!("{v}\n")).unwrap();
    }
    sys
}

#[test]
fn every_command_with_json_output_has_a_schema_and_nothing_else_does() {
    let commands = json_commands();
    // The ones known when this was written: a command losing its JSON is a change too.
    for c in [
        "bench", "devices", "history", "knobs", "status", "tune", "verify",
    ] {
        assert!(
            commands.contains(c),
            "{c} has no --json in -h: {commands:?}"
        );
    }
    let missing: Vec<&String> = commands
        .iter()
        .filter(|c| !schema_path(c).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "commands with JSON output and no schema in {}: {missing:?}",
        schemas_dir().display()
    );
    let stale: Vec<String> = std::fs::read_dir(schemas_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| {
            !commands
                .iter()
                .any(|c| schema_path(c).file_name().unwrap().to_string_lossy() == *f)
        })
        .collect();
    assert!(stale.is_empty(), "schemas of no command: {stale:?}");
}

#[test]
fn every_commands_json_validates_against_its_schema() {
    let env = common::Env::new();
    let sys = fake_sys(env.dir.path());
    let db = env.db();
    let run = |args: &[&str]| {
        let mut a = vec!["--sysfs-root", sys.to_str().unwrap()];
        a.extend_from_slice(args);
        env.cmd(&a).output().unwrap()
    };
    let mut checked = BTreeSet::new();
    let mut ok = |command: &str, args: &[&str]| -> Value {
        let out = run(args);
        checked.insert(command.to_string());
        check(command, &out)
    };

    // history and status of a database that does not exist yet.
    ok("history", &["history", "--json"]);
    let config = env.dir.path().join("daemon.toml");
    std::fs::write(&config, "").unwrap();
    let cfg = config.to_str().unwrap();
    let s = ok("status", &["status", "--json", "--config", cfg]);
    assert_eq!(s["devices"], serde_json::json!([]));

    ok("devices", &["devices", "--json"]);
    ok("knobs", &["knobs", "sda", "--json"]);
    let b = ok(
        "bench",
        &[
            "bench", "--sim", SURFACE, "--seed", "7", "--runs", "2", "--json",
        ],
    );
    assert_eq!(b["loads"][0]["runs"], 2);
    let t = ok("tune", &["tune", "--sim", SURFACE, "--seed", "7", "--json"]);
    // DESIGN.md: `evaluations` are settings measured, `trials` counts repeats too.
    assert!(t["evaluations"].as_u64() < t["trials"].as_u64(), "{t}");
    // The same device again, confirming the sweet spot just stored: the report's `confirm`.
    let c = ok(
        "tune",
        &[
            "tune",
            "--sim",
            SURFACE,
            "--seed",
            "8",
            "--confirm",
            "--json",
        ],
    );
    assert_eq!(
        (&c["confirm"]["held"], &c["runs"]),
        (&true.into(), &12.into()),
        "{c}"
    );
    // A best that changed three knobs: the report's `knobs`, one per changed knob.
    let t3 = ok(
        "tune",
        &[
            "tune",
            "--sim",
            "data/surfaces/one-of-three-knobs.toml",
            "--policy",
            "tests/policies/one-of-three.toml",
            "--seed",
            "4",
            "--json",
        ],
    );
    assert_eq!(t3["knobs"].as_array().map(Vec::len), Some(3), "{t3}");

    // A sweet spot of the fake disk: status with a device, history with its times.
    common::store_sweet_spot(
        &db,
        "wwid:naa.5000c500a1b2c3d4",
        "sda",
        &sweetspot::device::kernel_release(),
        &[("scheduler", "bfq"), ("read_ahead_kb", "256")],
        &[("scheduler", "mq-deadline"), ("read_ahead_kb", "128")],
        2.0,
    );
    let h = ok("history", &["history", "--json"]);
    let tune = &h["tunes"][0];
    assert_eq!(
        tune["started_at"],
        sweetspot::types::time::rfc3339(tune["started_at_epoch_s"].as_i64().unwrap()),
        "{tune}"
    );
    ok("history", &["history", "--tune", "1", "--json"]);
    let s = ok("status", &["status", "--json", "--config", cfg]);
    assert_eq!(s["devices"][0]["state"]["kind"], "not_managed", "{s}");
    assert_eq!(
        s["devices"][0]["state"]["off"][0],
        serde_json::json!({"knob": "read_ahead_kb", "now": 128, "sweet_spot": 256}),
        "{s}"
    );
    ok("status", &["status", "--format", "json", "--config", cfg]);

    // verify with drift (exit 1), then clean.
    let p = env.dir.path().join("p.toml");
    let out = run(&["profile", "export", "--out", p.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let out = run(&["verify", p.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    checked.insert("verify".into());
    let v = check("verify", &out);
    assert_eq!(v["clean"], false);

    // tune --json stopped by SIGTERM after a trial: the interrupted object (exit 130).
    checked.insert("tune".into());
    check("tune", &stopped_tune(&env, &sys));

    assert_eq!(
        checked,
        json_commands(),
        "every command with JSON output is run here"
    );
}

/// `tune --sim --json` with slow runs, sent SIGTERM once its first trial is stored.
fn stopped_tune(env: &common::Env, sys: &Path) -> std::process::Output {
    let db = env.dir.path().join("stopped.db");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
        .arg("--db")
        .arg(&db)
        .arg("--sysfs-root")
        .arg(sys)
        .arg("--procfs-root")
        .arg(env.proc())
        .args(["tune", "--sim", SURFACE, "--seed", "7", "--json"])
        .env(sweetspot::bench::sim::RUN_MS_ENV, "200")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let finished = || {
        sweetspot::store::Store::open_read_only(&db)
            .ok()
            .and_then(|s| {
                s.conn()
                    .query_row(
                        "SELECT count(*) FROM trials WHERE finished_at IS NOT NULL",
                        [],
                        |r| r.get::<_, i64>(0),
                    )
                    .ok()
            })
            .unwrap_or(0)
    };
    let start = Instant::now();
    while db.exists().then(finished).unwrap_or(0) < 1 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no trial finished"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{out:?}");
    out
}
