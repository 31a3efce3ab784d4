//! A host-only sweet spot (`tune --host`) is exported in every format that can carry host-wide
//! knobs, and the TOML profile applies and verifies it, on a fake procfs (never the real
//! `/proc/sys`): a real `tune --host` of `swappiness` against a user benchmark that reads the
//! fake `swappiness` file (10: about 10 s, otherwise about 13 s, with pid-seeded noise), then
//! `profile export` as toml, sysctl, tuned and udev, `verify` (drift), `profile apply`,
//! `verify` (clean) and `restore`. Also: an export of simulated sweet spots only says why it
//! is empty.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};

/// A fake `/proc` (`sys/vm/{dirty_ratio,dirty_bytes,swappiness}` from [`common::Env`], and
/// `sys/kernel/hostname` = `testhost`) and an empty fake `/sys`.
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
        Host { env }
    }
    fn sys(&self) -> PathBuf {
        self.env.dir.path().join("sys")
    }
    fn path(&self, name: &str) -> PathBuf {
        self.env.dir.path().join(name)
    }
    /// `sweetspot --db … --procfs-root … --sysfs-root … <args>`.
    fn cmd(&self, args: &[&str]) -> assert_cmd::Command {
        let mut c = self.env.cmd(&["--sysfs-root"]);
        c.arg(self.sys()).args(args);
        c
    }
    fn run_ok(&self, args: &[&str]) -> (String, String) {
        let out = self.cmd(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{args:?}: {stderr}");
        (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
    }
    /// A real `tune --host` of swappiness (60 → 10 is about 1.3× better).
    fn tune(&self) {
        let v = self.tune_json(&[]);
        assert_eq!(v["best"]["swappiness"], 10, "{v}");
        assert_eq!(self.env.vm("swappiness"), "60", "the tune put it back");
    }
    /// [`Host::tune`] with `extra` arguments; its JSON report.
    fn tune_json(&self, extra: &[&str]) -> serde_json::Value {
        let policy = self.path("host.toml");
        let swappiness = self.env.proc().join("sys/vm/swappiness");
        std::fs::write(
            &policy,
            format!(
                "description = \"a benchmark that reads the fake swappiness\"\nruns = 2\n\
                 budget = 8\ncheck_pairs = 2\n[knobs.swappiness]\nvalues = [10, 60, 100]\n\
                 [benchmark]\ncommand = '''v=$(cat {}); awk -v v=$v -v s=$$ \
                 'BEGIN{{srand(s); printf \"t %.3f\\n\", 10 + (v <= 10 ? 0 : 3) + rand()/10}}' \
                 '''\nregex = 't ([0-9.]+)'\nminimize = \"t\"\nunit = \"s\"\n",
                swappiness.display()
            ),
        )
        .unwrap();
        let mut args = vec![
            "tune",
            "--host",
            "--json",
            "--seed",
            "1",
            "--policy",
            policy.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let (out, _) = self.run_ok(&args);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["significant"], true, "{v}");
        v
    }
}

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

/// The one line of `text` starting with `prefix`.
fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    let found: Vec<&str> = text.lines().filter(|l| l.starts_with(prefix)).collect();
    assert_eq!(found.len(), 1, "one line '{prefix}…' in:\n{text}");
    found[0]
}

#[test]
fn a_host_sweet_spot_is_exported_in_every_format_and_applied_and_verified() {
    let h = Host::new();
    h.tune();
    let provenance = "# host (testhost) when tuned: kernel ";
    let evidence = ", policy host, ";

    // sysctl.d: the knob, under a comment on where it comes from.
    let (conf, stderr) = h.run_ok(&["profile", "export", "--format", "sysctl"]);
    assert!(!stderr.contains("warning"), "{stderr}");
    let body: Vec<&str> = lines(&conf)
        .into_iter()
        .filter(|l| !l.starts_with('#'))
        .collect();
    assert_eq!(body, vec!["vm.swappiness = 10"], "{conf}");
    let p = line(&conf, provenance);
    assert!(p.contains(evidence) && p.contains(": t (s) 1."), "{p}");
    // The same with the host selected alone, by `host` or by its stored identity.
    for d in ["host", "host:testhost"] {
        let (only, _) = h.run_ok(&["profile", "export", "--format", "sysctl", "--device", d]);
        assert_eq!(only, conf, "--device {d}");
    }

    // TuneD: `[sysctl]`, named in the summary.
    let (tc, _) = h.run_ok(&["profile", "export", "--format", "tuned"]);
    assert_eq!(
        line(&tc, "summary="),
        "summary=sweetspot sweet spots of the host (testhost)"
    );
    assert!(tc.ends_with("\n[sysctl]\nvm.swappiness=10\n"), "{tc}");
    line(&tc, provenance);

    // udev cannot set a sysctl, and says so.
    let (rules, _) = h.run_ok(&["profile", "export", "--format", "udev"]);
    assert_eq!(
        line(&rules, "# host-wide knobs"),
        "# host-wide knobs (swappiness = 10) are sysctls, which a udev rule cannot set: export \
         them with --format sysctl (or tuned, or apply the toml)"
    );
    assert!(!rules.lines().any(|l| l.starts_with("ACTION")), "{rules}");

    // sweetspot's TOML: `[host]` with the knob, its baseline and its provenance.
    let file = h.path("profile.toml");
    h.run_ok(&["profile", "export", "--out", file.to_str().unwrap()]);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("\n[host]\nname = \"testhost\"\n"), "{text}");
    assert!(text.contains("\npolicy = \"host\"\n"), "{text}");
    assert!(text.contains("\n[host.knobs]\nswappiness = 10\n"), "{text}");
    assert!(
        text.contains("\n[host.baseline]\nswappiness = 60\n"),
        "{text}"
    );
    let v: toml::Value = toml::from_str(&text).unwrap();
    assert_eq!(
        v["host"]["improvement"]["objective"].as_str(),
        Some("t (s)")
    );
    assert!(
        v["host"]["improvement"]["ratio"].as_float().unwrap() > 1.2,
        "{v}"
    );

    apply_and_verify(&h, &file);
}

/// `verify` finds drift, `profile apply` writes the fake swappiness (journaled), `verify` is
/// then clean, and `restore` puts it back.
fn apply_and_verify(h: &Host, file: &Path) {
    let f = file.to_str().unwrap();
    h.cmd(&["verify", f])
        .assert()
        .code(1)
        .stdout(predicates::str::contains("host"));
    let (dry, _) = h.run_ok(&["profile", "apply", f, "--dry-run"]);
    let vm = h.env.proc().join("sys/vm/swappiness");
    assert_eq!(
        lines(&dry),
        vec!["# host".to_string(), format!("echo 10 > {}", vm.display())]
    );
    assert_eq!(h.env.vm("swappiness"), "60", "a dry run writes nothing");
    let (out, _) = h.run_ok(&["profile", "apply", f]);
    assert_eq!(line(&out, "host:"), "host: swappiness 60 → 10", "{out}");
    assert_eq!(h.env.vm("swappiness"), "10");
    let (json, _) = h.run_ok(&["verify", "--json", f]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["clean"], true, "{v}");
    assert_eq!(
        v["rows"],
        serde_json::json!([{"device": "host", "knob": "swappiness", "expected": 10,
                            "actual": 10, "status": "ok"}])
    );
    h.run_ok(&["restore"]);
    assert_eq!(h.env.vm("swappiness"), "60", "restore undid the profile");
}

#[test]
fn an_export_of_simulated_sweet_spots_only_says_why_it_is_empty() {
    let h = Host::new();
    let surface =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("data/surfaces/seed-2.5.39-mm1-fifo_batch.toml");
    h.run_ok(&[
        "-q",
        "tune",
        "--sim",
        surface.to_str().unwrap(),
        "--seed",
        "1",
    ]);
    for format in ["toml", "udev", "sysctl", "tuned"] {
        let (_, stderr) = h.run_ok(&["profile", "export", "--format", format]);
        assert!(
            stderr.contains(
                "the stored sweet spots are of scratch or simulated devices only \
                 (sim:seed-2.5.39-mm1-fifo_batch), which do not last past the run; tune a \
                 device with `--device`"
            ),
            "{format}: {stderr}"
        );
    }
    // `profile apply` and `verify` of the same database say so too, and exit 0: a boot-time
    // apply before the first tune has nothing to do, which is no error.
    let db = h.env.db().display().to_string();
    for (cmd, what) in [
        (&["profile", "apply"][..], "apply"),
        (&["profile", "apply", "--dry-run"][..], "apply"),
        (&["verify"][..], "verify"),
    ] {
        let (_, stderr) = h.run_ok(cmd);
        assert!(
            stderr.contains(&format!(
                "nothing to {what}: the database {db} has sweet spots of scratch or simulated \
                 devices only (sim:seed-2.5.39-mm1-fifo_batch), which do not last past the run"
            )),
            "{cmd:?}: {stderr}"
        );
    }
}

/// `profile apply --device loop0 FILE` where no entry of FILE matches loop0, and a FILE
/// without entries: said on stderr (what was not done), exit 0; `verify` of an empty FILE
/// says there is nothing to verify.
#[test]
fn apply_and_verify_with_nothing_to_do_say_so() {
    let h = Host::new();
    let b = h.sys().join("block/loop0");
    for (rel, v) in [
        ("dev", "7:0"),
        ("size", "2097152"),
        ("loop/backing_file", "/srv/other.img"),
        ("queue/scheduler", "[none] mq-deadline"),
        ("queue/read_ahead_kb", "128"),
    ] {
        std::fs::create_dir_all(b.join(rel).parent().unwrap()).unwrap();
        std::fs::write(b.join(rel), format!("{v}\n")).unwrap();
    }
    let file = h.path("p.toml");
    std::fs::write(
        &file,
        "version = 1\n[[device]]\nname = \"sda\"\nmatch = { wwid = \"naa.1\" }\n\
         kernel = \"6.18.0\"\npolicy = \"quick\"\ntuned_at = \"2026-12-01T08:00:00Z\"\n\
         knobs = { read_ahead_kb = 512 }\n",
    )
    .unwrap();
    let f = file.display().to_string();
    let (stdout, stderr) = h.run_ok(&["profile", "apply", "--device", "loop0", &f]);
    assert_eq!(stdout, "");
    assert!(
        stderr.contains(&format!(
            "loop0: no entry of {f} matches it; nothing applied"
        )),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(b.join("queue/read_ahead_kb")).unwrap(),
        "128\n"
    );
    let empty = h.path("empty.toml");
    std::fs::write(&empty, "version = 1\n").unwrap();
    let e = empty.display().to_string();
    for (cmd, what) in [
        (&["profile", "apply"][..], "apply"),
        (&["verify"][..], "verify"),
    ] {
        let mut args = cmd.to_vec();
        args.push(&e);
        let (_, stderr) = h.run_ok(&args);
        assert!(
            stderr.contains(&format!(
                "nothing to {what}: {e} has no device entry and no [host] knobs"
            )),
            "{cmd:?}: {stderr}"
        );
    }
}

/// `tune --host --apply` under fake roots names the undo command with those roots (it said
/// `sweetspot --db … restore`, which would have looked at the real /proc), and that command
/// puts the knob back.
#[test]
fn an_applied_host_tune_names_an_undo_command_with_its_roots() {
    let h = Host::new();
    let v = h.tune_json(&["--apply"]);
    assert_eq!(v["best"]["swappiness"], 10, "{v}");
    assert_eq!(h.env.vm("swappiness"), "10", "applied");
    let undo = v["undo"].as_str().unwrap_or_else(|| panic!("undo: {v}"));
    let want = format!(
        "--sysfs-root {} --procfs-root {} restore",
        h.sys().display(),
        h.env.proc().display()
    );
    assert!(undo.ends_with(&want), "{undo}");
    // The command itself, as pasted (the temporary paths hold no spaces).
    let words: Vec<&str> = undo.split_whitespace().collect();
    assert_eq!(words[0], "sweetspot", "{undo}");
    let out = assert_cmd::Command::cargo_bin("sweetspot")
        .unwrap()
        .args(&words[1..])
        .output()
        .unwrap();
    assert!(out.status.success(), "{undo}: {out:?}");
    assert_eq!(h.env.vm("swappiness"), "60", "the undo command's restore");
}

/// Before the first tune (no database yet, or one with no sweet spot), `profile apply`
/// (also `--dry-run`) and `verify` have nothing to do: each says so on stderr and exits 0,
/// `verify --json` prints the empty result, and the missing database is not created.
#[test]
fn apply_and_verify_before_the_first_tune_exit_0() {
    let h = Host::new();
    let db = h.env.db();
    let d = db.display().to_string();
    let cases: [(&[&str], &str); 4] = [
        (&["profile", "apply"], "apply"),
        (&["profile", "apply", "--dry-run"], "apply"),
        (&["verify"], "verify"),
        (&["verify", "--json"], "verify"),
    ];
    let empty_json = serde_json::json!({"version": 3, "clean": true, "rows": [], "overlaps": []});
    for (why, stored) in [
        ("does not exist yet (nothing tuned with this --db)", false),
        (
            "has no sweet spot stored yet (see `sweetspot history`)",
            true,
        ),
    ] {
        if stored {
            drop(sweetspot::store::Store::open(&db).unwrap());
        }
        for (args, what) in cases {
            let out = h.cmd(args).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
            assert!(
                stderr.contains(&format!("nothing to {what}: the database {d} {why}")),
                "{args:?}: {stderr}"
            );
            let stdout = String::from_utf8_lossy(&out.stdout);
            if args.contains(&"--json") {
                let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
                assert_eq!(v, empty_json);
            } else if what == "apply" {
                assert_eq!(stdout, "", "{args:?}");
            }
            assert_eq!(
                db.exists(),
                stored,
                "{args:?}: the database was not created"
            );
        }
    }
}

/// `[host].knobs` of `profile export` (TOML) as (knob, value) pairs, and its stderr.
fn host_knobs(h: &Host) -> (Vec<(String, i64)>, String) {
    let (text, stderr) = h.run_ok(&["profile", "export"]);
    let v: toml::Value = toml::from_str(&text).unwrap();
    let knobs = v["host"]["knobs"]
        .as_table()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_integer().unwrap()))
        .collect();
    (knobs, stderr)
}

fn pairs(p: &[(&str, i64)]) -> Vec<(String, i64)> {
    p.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// Of two host sweet spots (`tune --host`) of one kernel, only the newer counts: the
/// dirty_ratio of the older is not exported.
#[test]
fn a_newer_host_sweet_spot_supersedes_an_older_ones_knobs() {
    let h = Host::new();
    let db = h.env.db();
    let host = |best: &[(&str, &str)], default: &[(&str, &str)]| {
        common::store_sweet_spot(&db, "host:testhost", "host", "6.18.0", best, default, 1.5);
    };
    host(&[("dirty_ratio", "10")], &[("dirty_ratio", "20")]);
    assert_eq!(host_knobs(&h).0, pairs(&[("dirty_ratio", 10)]));
    host(&[("swappiness", "10")], &[("swappiness", "60")]);
    let (knobs, stderr) = host_knobs(&h);
    assert_eq!(knobs, pairs(&[("swappiness", 10)]), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
}

/// Host-wide knobs of device tunes: the newer sweet spot's value wins (not the identity that
/// sorts last), and the host's own sweet spot, which tuned dirty_ratio and kept its default,
/// drops a device's older dirty_ratio; each is said in one readable warning.
#[test]
fn the_host_sweet_spot_decides_the_host_wide_knobs_it_tuned() {
    let h = Host::new();
    let db = h.env.db();
    let (older, newer) = ("wwid:naa.5000c500bbbbbbbb", "wwid:naa.5000c500aaaaaaaa");
    common::store_sweet_spot(
        &db,
        older,
        "sdb",
        "6.18.0",
        &[("dirty_ratio", "10"), ("read_ahead_kb", "256")],
        &[("dirty_ratio", "20"), ("read_ahead_kb", "128")],
        1.5,
    );
    common::store_sweet_spot(
        &db,
        newer,
        "sda",
        "6.18.0",
        &[("dirty_ratio", "15")],
        &[("dirty_ratio", "20")],
        1.5,
    );
    let (knobs, stderr) = host_knobs(&h);
    assert_eq!(knobs, pairs(&[("dirty_ratio", 15)]), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "host-wide dirty_ratio: exporting 15 from the sweet spot of {newer} over 10 from \
             the sweet spot of {older}\n"
        )),
        "{stderr}"
    );
    common::store_sweet_spot(
        &db,
        "host:testhost",
        "host",
        "6.18.0",
        &[("dirty_ratio", "20"), ("swappiness", "10")],
        &[("dirty_ratio", "20"), ("swappiness", "60")],
        1.5,
    );
    let (knobs, stderr) = host_knobs(&h);
    assert_eq!(knobs, pairs(&[("swappiness", 10)]), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "host-wide dirty_ratio: not exporting 15 from the sweet spot of {newer}: the \
             host's own sweet spot host:testhost, which tuned dirty_ratio, keeps it at 20\n"
        )),
        "{stderr}"
    );
    let (conf, _) = h.run_ok(&["profile", "export", "--format", "sysctl"]);
    let body: Vec<&str> = lines(&conf)
        .into_iter()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect();
    assert_eq!(body, vec!["vm.swappiness = 10"], "{conf}");
}
