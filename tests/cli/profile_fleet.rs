//! Profile entries that match one disk in different ways, on a fake sysfs (never the real
//! disks): a fleet entry by `model` with one by `wwid`, or `model` with and without
//! `firmware`. The narrowest match applies to the disk, and `verify` and `profile apply` say
//! which entries matched it and which one applied; entries that are equally narrow on one disk
//! are refused with exit 2, naming the file, line and field, before anything is written.
//! And `profile export --match model`: disks of one model whose sweet spots set the same knobs
//! share one entry (TOML, udev, TuneD); different ones are refused, naming the knobs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};

/// A fake `/sys` with three mq-deadline disks (fifo_batch 16): `sda` and `sdb` of model
/// ST2000DM008 at firmware 0001, `sdc` of model OTHER, each with a wwid
/// `naa.5000c500aaaa000N`; and a fake `/proc` ([`common::Env`]).
struct Fleet {
    env: common::Env,
}

impl Fleet {
    fn new() -> Fleet {
        let env = common::Env::new();
        for (i, (name, model)) in [
            ("sda", "ST2000DM008"),
            ("sdb", "ST2000DM008"),
            ("sdc", "OTHER"),
        ]
        .into_iter()
        .enumerate()
        {
            let put = |rel: &str, v: &str| {
                let p = env.dir.path().join("sys/block").join(name).join(rel);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, format!("{v}\n")).unwrap();
            };
            put("dev", &format!("8:{}", 16 * i));
            put("size", "2097152");
            put("queue/scheduler", "none [mq-deadline] kyber bfq");
            put("queue/nr_requests", "64");
            put("queue/read_ahead_kb", "128");
            put("queue/rotational", "1");
            for (k, v) in [("fifo_batch", "16"), ("read_expire", "500")] {
                put(&format!("queue/iosched/{k}"), v);
            }
            put("device/wwid", &format!("naa.5000c500aaaa000{}", i + 1));
            put("device/model", model);
            put("device/rev", "0001");
        }
        Fleet { env }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.env.dir.path().join(name)
    }

    /// `fifo_batch` of a fake disk now.
    fn fifo_batch(&self, disk: &str) -> String {
        let p = self
            .path("sys/block")
            .join(disk)
            .join("queue/iosched/fifo_batch");
        std::fs::read_to_string(p).unwrap().trim().to_string()
    }

    /// Runs `sweetspot --db … --procfs-root … --sysfs-root … <args>`: (exit code, stdout,
    /// stderr).
    fn run(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let mut c = self.env.cmd(&["--sysfs-root"]);
        let out = c.arg(self.path("sys")).args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Writes a profile of `entries` (`(name, match, knobs)`, as TOML inline-table bodies) as
    /// `file`, each entry 8 lines long: entry i's `match` is on line 5 + 8·i.
    fn profile(&self, file: &str, entries: &[(&str, &str, &str)]) -> PathBuf {
        let mut text = String::from("version = 1\n");
        for (name, matches, knobs) in entries {
            text.push_str(&format!(
                "\n[[device]]\nname = \"{name}\"\nmatch = {{ {matches} }}\nkernel = \"{}\"\n\
                 policy = \"quick\"\ntuned_at = \"2026-12-01T08:00:00Z\"\nknobs = {{ {knobs} }}\n",
                sweetspot::device::kernel_release()
            ));
        }
        let path = self.path(file);
        std::fs::write(&path, text).unwrap();
        path
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A fleet entry by model and one by wwid for sdb: sdb gets the wwid entry's knobs only (one
/// write, not the model's value first), the other disk of the model the fleet's, and `verify`
/// checks each disk against the entry that applies to it (before the fix: sdb was written 16
/// → 8 → 4, and `verify` then reported the model's 8 on sdb as drift for ever).
#[test]
fn a_wwid_entry_wins_over_a_model_entry_on_its_disk_and_both_commands_say_so() {
    let f = Fleet::new();
    let p = f.profile(
        "overlap.toml",
        &[
            ("sda", r#"model = "ST2000DM008""#, "fifo_batch = 8"),
            ("sdb", r#"wwid = "naa.5000c500aaaa0002""#, "fifo_batch = 4"),
        ],
    );
    let note = "sdb: 2 profile entries match it: device[1] (line 13, wwid \
                naa.5000c500aaaa0002) applies, not device[0] (line 5, model ST2000DM008): the \
                narrowest match applies (one disk over model alone)";
    let (code, out, err) = f.run(&["verify", s(&p)]);
    assert_eq!(code, Some(1), "drift before apply: {out}{err}");
    let rows: Vec<&str> = out.lines().skip(1).take_while(|l| !l.is_empty()).collect();
    assert_eq!(rows.len(), 2, "one row per disk and knob: {out}");
    assert!(
        rows[0].starts_with("sda ") && rows[0].contains(" 8 "),
        "{out}"
    );
    assert!(
        rows[1].starts_with("sdb ") && rows[1].contains(" 4 "),
        "{out}"
    );
    assert!(out.contains(note), "{out}");

    let (code, dry, err) = f.run(&["profile", "apply", "--dry-run", s(&p)]);
    assert_eq!(code, Some(0), "{err}");
    let writes: Vec<&str> = dry.lines().filter(|l| l.starts_with("echo")).collect();
    assert_eq!(writes.len(), 2, "{dry}");
    assert!(err.contains(note), "{err}");

    let (code, out, err) = f.run(&["profile", "apply", s(&p)]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        out.lines().take(2).collect::<Vec<_>>(),
        ["sda: fifo_batch 16 → 8", "sdb: fifo_batch 16 → 4"],
        "{out}"
    );
    assert!(err.contains(note), "{err}");
    let now: Vec<String> = ["sda", "sdb", "sdc"]
        .iter()
        .map(|d| f.fifo_batch(d))
        .collect();
    assert_eq!(now, ["8", "4", "16"]);

    let (code, out, err) = f.run(&["verify", "--json", s(&p)]);
    assert_eq!(code, Some(0), "clean after apply: {out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["clean"], true, "{v}");
    assert_eq!(
        v["overlaps"],
        serde_json::json!([{"device": "sdb", "entries": [0, 1], "applies": 1,
                            "message": note}]),
    );
}

/// `model` with `firmware` is narrower than `model` alone: said at load with the file and
/// line, and on every disk both match the firmware entry applies (before the fix `apply`
/// refused with exit 2, "sda is in use by `sweetspot profile apply`": its own lock, taken
/// twice).
#[test]
fn a_firmware_entry_wins_over_model_alone_and_the_file_says_so_at_load() {
    let f = Fleet::new();
    let p = f.profile(
        "fw.toml",
        &[
            ("sda", r#"model = "ST2000DM008""#, "fifo_batch = 8"),
            (
                "sdb",
                r#"model = "ST2000DM008", firmware = "0001""#,
                "fifo_batch = 4",
            ),
        ],
    );
    let at_load = format!(
        "{}:13: device[1].match: model ST2000DM008 firmware 0001 is narrower than device[0]'s \
         (line 5) model ST2000DM008: on a disk both match, device[1] applies",
        p.display()
    );
    let (code, out, err) = f.run(&["profile", "apply", s(&p)]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(err.contains(&at_load), "{err}");
    for d in ["sda", "sdb"] {
        assert!(
            err.contains(&format!(
                "{d}: 2 profile entries match it: device[1] (line 13, model ST2000DM008 \
                 firmware 0001) applies, not device[0] (line 5, model ST2000DM008): the \
                 narrowest match applies (model and firmware over model alone)"
            )),
            "{d}: {err}"
        );
        assert_eq!(f.fifo_batch(d), "4", "{d}");
    }
    assert_eq!(f.fifo_batch("sdc"), "16");
    let (code, out, err) = f.run(&["verify", s(&p)]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(err.contains(&at_load), "{err}");
}

/// Two entries that both match sdb and neither is narrower (each names the one disk): `apply`
/// would not know which to write, so `verify` and `apply` refuse with exit 2, the file, line
/// and field, and nothing is written.
#[test]
fn entries_equally_narrow_on_one_disk_are_refused_with_file_line_and_field() {
    let f = Fleet::new();
    let p = f.profile(
        "tie.toml",
        &[
            (
                "sdb",
                r#"wwid = "naa.5000c500aaaa0002", model = "ST2000DM008""#,
                "fifo_batch = 8",
            ),
            (
                "sdb",
                r#"wwid = "naa.5000c500aaaa0002", firmware = "0001""#,
                "fifo_batch = 4",
            ),
        ],
    );
    let want = format!(
        "{}:13: device[1].match: matches sdb as device[0] (line 5) does, and neither is \
         narrower (both name one disk): give a disk one entry",
        p.display()
    );
    for cmd in [
        &["verify"][..],
        &["profile", "apply", "--dry-run"],
        &["profile", "apply"],
    ] {
        let mut args = cmd.to_vec();
        args.push(s(&p));
        let (code, out, err) = f.run(&args);
        assert_eq!(code, Some(2), "{cmd:?}: {out}{err}");
        assert!(err.contains(&want), "{cmd:?}: {err}");
    }
    assert_eq!(f.fifo_batch("sdb"), "16", "nothing written");
}

/// Stores a sweet spot of fifo_batch `best` (against 16) for each `(disk, best)`, keyed by the
/// fake disk's wwid, on the running kernel.
fn store(f: &Fleet, spots: &[(&str, &str)]) {
    for (disk, best) in spots {
        let n = ["sda", "sdb", "sdc"]
            .iter()
            .position(|d| d == disk)
            .unwrap()
            + 1;
        common::store_sweet_spot(
            &f.env.db(),
            &format!("wwid:naa.5000c500aaaa000{n}"),
            disk,
            &sweetspot::device::kernel_release(),
            &[("scheduler", "mq-deadline"), ("fifo_batch", best)],
            &[("scheduler", "mq-deadline"), ("fifo_batch", "16")],
            2.2,
        );
    }
}

/// Two disks of one model whose sweet spots set the same knobs export `--match model` as one
/// entry and one udev rule (before the fix: exit 2, "would be one entry"); TuneD, which
/// cannot set fifo_batch by model, refuses; the TOML applies to both and to no other disk.
#[test]
fn export_by_model_of_two_disks_with_the_same_sweet_spot_is_one_entry() {
    let f = Fleet::new();
    store(&f, &[("sda", "8"), ("sdb", "8")]);
    let file = f.path("fleet.toml");
    let (code, _, err) = f.run(&["profile", "export", "--match", "model", "--out", s(&file)]);
    assert_eq!(code, Some(0), "{err}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.matches("[[device]]").count(), 1, "{text}");
    let v: toml::Value = toml::from_str(&text).unwrap();
    let entry = &v["device"][0];
    assert_eq!(
        entry["match"],
        toml::Value::Table(toml::toml! { model = "ST2000DM008"
        firmware = "0001" }),
        "{text}"
    );
    assert_eq!(
        entry["knobs"],
        toml::Value::Table(toml::toml! { fifo_batch = 8
        scheduler = "mq-deadline" })
    );
    assert!(
        text.contains(
            "\n# one entry for 2 disks of this model whose sweet spots set the same knobs: sdb \
             (below, the newest) and sda (wwid:naa.5000c500aaaa0001)\n[[device]]\nname = \"sdb\"\n"
        ),
        "{text}"
    );

    let (code, rules, err) = f.run(&["profile", "export", "--match", "model", "--format", "udev"]);
    assert_eq!(code, Some(0), "{err}");
    let rule: Vec<&str> = rules.lines().filter(|l| l.starts_with("ACTION")).collect();
    assert_eq!(
        rule,
        [
            r#"ACTION=="add|change", SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", ATTRS{model}=="ST2000DM008", ATTRS{rev}=="0001", ATTR{queue/scheduler}="mq-deadline", ATTR{queue/iosched/fifo_batch}="8""#
        ],
        "{rules}"
    );

    // TuneD's [sysfs] plugin matches no device: a fleet entry's fifo_batch would go to
    // whatever disk has this machine's paths (here: names) on every machine. Refused.
    let (code, tc, err) = f.run(&["profile", "export", "--match", "model", "--format", "tuned"]);
    assert_eq!(code, Some(2), "{tc}{err}");
    assert!(
        err.contains(
            "--format tuned: TuneD cannot match this entry by the disk's identity: sdb (model \
             ST2000DM008 firmware 0001): fifo_batch: TuneD's [sysfs] plugin takes paths and \
             matches no device, so a fleet profile (--match model) would write them to \
             whatever disks have this machine's paths, or names, on every machine; export it \
             with --format udev or toml, which match every disk by its identity"
        ),
        "{err}"
    );
    assert!(tc.is_empty(), "{tc}");

    let (code, out, err) = f.run(&["profile", "apply", s(&file)]);
    assert_eq!(code, Some(0), "{out}{err}");
    let now: Vec<String> = ["sda", "sdb", "sdc"]
        .iter()
        .map(|d| f.fifo_batch(d))
        .collect();
    assert_eq!(now, ["8", "8", "16"]);
}

/// Disks of one model whose sweet spots differ cannot share a model entry: exit 2, naming the
/// disks, the knobs that differ with each disk's value, and the way out.
#[test]
fn export_by_model_of_two_disks_with_different_sweet_spots_names_the_difference() {
    let f = Fleet::new();
    store(&f, &[("sda", "8"), ("sdb", "4")]);
    let (code, out, err) = f.run(&["profile", "export", "--match", "model"]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(
        err.contains(
            "--match model: sda (wwid:naa.5000c500aaaa0001) and sdb (wwid:naa.5000c500aaaa0002) \
             are both model ST2000DM008 firmware 0001, but their sweet spots differ (fifo_batch: \
             8 on sda, 4 on sdb), and one model entry sets one value: export them with --match \
             identity, or one of them with --device"
        ),
        "{err}"
    );
    assert!(out.is_empty(), "{out}");
}
