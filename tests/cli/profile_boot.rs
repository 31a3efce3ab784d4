//! A profile exported here, applied at a later boot, on a fake sysfs/procfs (never the real
//! disks or `/proc/sys`): `sda` on mq-deadline (a WWID), `sdb` on bfq (model and serial),
//! `/proc/sys/vm`, and a fake mountinfo giving `sdb` a filesystem (a temporary directory) for
//! a real `tune --device sdb` against a user benchmark that reads the fake knob files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};

/// The fake machine and its database.
struct Machine {
    dir: tempfile::TempDir,
}

fn put(path: &Path, v: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("{v}\n")).unwrap();
}

/// The iosched files of a current kernel's mq-deadline and bfq (their defaults).
const MQ_DEADLINE: &[(&str, &str)] = &[
    ("async_depth", "64"),
    ("fifo_batch", "16"),
    ("front_merges", "1"),
    ("prio_aging_expire", "10000"),
    ("read_expire", "500"),
    ("write_expire", "5000"),
    ("writes_starved", "2"),
];
const BFQ: &[(&str, &str)] = &[
    ("back_seek_max", "16384"),
    ("back_seek_penalty", "2"),
    ("fifo_expire_async", "250"),
    ("fifo_expire_sync", "125"),
    ("low_latency", "1"),
    ("max_budget", "0"),
    ("slice_idle", "8"),
    ("slice_idle_us", "8000"),
    ("strict_guarantees", "0"),
    ("timeout_sync", "124"),
];

impl Machine {
    fn new() -> Machine {
        let m = Machine {
            dir: tempfile::tempdir().unwrap(),
        };
        for (k, v) in [
            ("dirty_ratio", "20"),
            ("dirty_bytes", "0"),
            ("swappiness", "60"),
        ] {
            put(&m.path("proc/sys/vm").join(k), v);
        }
        put(&m.path("proc/sys/kernel/hostname"), "testhost");
        for (name, dev) in [("sda", "8:0"), ("sdb", "8:16")] {
            put(&m.block(name, "dev"), dev);
            put(&m.block(name, "size"), "2097152");
            put(&m.block(name, "queue/nr_requests"), "64");
            put(&m.block(name, "queue/read_ahead_kb"), "128");
            put(&m.block(name, "queue/rotational"), "1");
        }
        m.boot_on("sda", "mq-deadline");
        m.boot_on("sdb", "bfq");
        put(&m.block("sda", "device/wwid"), "naa.5000c500a1b2c3d4");
        put(&m.block("sdb", "device/model"), "WDC WD10EZEX");
        put(&m.block("sdb", "device/serial"), "WD-WCC6Y1234567");
        let mnt = m.path("mnt");
        std::fs::create_dir_all(&mnt).unwrap();
        put(
            &m.path("proc/self/mountinfo"),
            &format!(
                "37 25 8:16 / {} rw,relatime - ext4 /dev/sdb rw",
                mnt.display()
            ),
        );
        m
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn block(&self, disk: &str, rel: &str) -> PathBuf {
        self.path("sys/block").join(disk).join(rel)
    }

    fn read(&self, disk: &str, rel: &str) -> String {
        std::fs::read_to_string(self.block(disk, rel))
            .unwrap()
            .trim()
            .to_string()
    }

    /// `disk` as a boot leaves it on `sched`: the brackets there, its iosched/ files at their
    /// defaults.
    fn boot_on(&self, disk: &str, sched: &str) {
        let line = ["mq-deadline", "kyber", "bfq", "none"]
            .iter()
            .map(|s| {
                if *s == sched {
                    format!("[{s}]")
                } else {
                    s.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        put(&self.block(disk, "queue/scheduler"), &line);
        let iosched = self.block(disk, "queue/iosched");
        let _ = std::fs::remove_dir_all(&iosched);
        let files = if sched == "bfq" { BFQ } else { MQ_DEADLINE };
        for (k, v) in files {
            put(&iosched.join(k), v);
        }
    }

    /// Runs `sweetspot --db … --sysfs-root … --procfs-root … <args>`: (exit code, stdout,
    /// stderr).
    fn run(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let out = assert_cmd::Command::cargo_bin("sweetspot")
            .unwrap()
            .arg("--db")
            .arg(self.path("s.db"))
            .arg("--sysfs-root")
            .arg(self.path("sys"))
            .arg("--procfs-root")
            .arg(self.path("proc"))
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// A real `tune --device sdb` of `slice_idle` and `read_ahead_kb` (not the scheduler)
    /// against a benchmark reading the fake files: slice_idle 0 and read_ahead_kb 1024 are each
    /// about 1 s of 10 faster. Returns its JSON report.
    fn tune_sdb(&self) -> serde_json::Value {
        let q = self.block("sdb", "queue");
        let policy = self.path("sdb.toml");
        std::fs::write(
            &policy,
            format!(
                "runs = 2\nbudget = 12\ncheck_pairs = 3\n[knobs.read_ahead_kb]\n\
                 values = [128, 1024]\n[knobs.slice_idle]\nvalues = [0, 8]\n[benchmark]\n\
                 command = '''ra=$(cat {q}/read_ahead_kb); si=$(cat {q}/iosched/slice_idle); \
                 awk -v ra=$ra -v si=$si -v s=$$ 'BEGIN{{srand(s); printf \"t %.3f\\n\", \
                 10 - (ra == 1024) - (si == 0) + rand()/10}}' '''\nregex = 't ([0-9.]+)'\n\
                 minimize = \"t\"\nunit = \"s\"\n",
                q = q.display()
            ),
        )
        .unwrap();
        let (code, out, err) = self.run(&[
            "tune",
            "--device",
            "sdb",
            "--json",
            "--seed",
            "1",
            "--policy",
            policy.to_str().unwrap(),
        ]);
        assert_eq!(code, Some(0), "{err}");
        serde_json::from_str(&out).unwrap()
    }
}

/// A sweet spot of bfq's `slice_idle` (the scheduler not tuned) is exported with the scheduler
/// it belongs to, in every format, so at a boot where `sdb` comes up on mq-deadline `profile
/// apply` switches it to bfq first, and the file is not refused (which left sda's and the
/// host's entries unapplied too).
#[test]
fn iosched_knobs_are_exported_with_their_scheduler_and_apply_on_a_boot_on_another() {
    let m = Machine::new();
    let v = m.tune_sdb();
    assert_eq!(v["significant"], true, "{v}");
    assert_eq!(
        v["best"],
        serde_json::json!({"read_ahead_kb": 1024, "slice_idle": 0}),
        "{v}"
    );
    assert_eq!(v["fixed_scheduler"], "bfq", "{v}");
    common::store_sweet_spot(
        &m.path("s.db"),
        "wwid:naa.5000c500a1b2c3d4",
        "sda",
        &sweetspot::device::kernel_release(),
        &[("fifo_batch", "8"), ("dirty_ratio", "10")],
        &[("fifo_batch", "16"), ("dirty_ratio", "20")],
        1.5,
    );

    let file = m.path("exp/both.toml");
    let (code, _, err) = m.run(&["profile", "export", "--out", file.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains(
            "\n[device.knobs]\nread_ahead_kb = 1024\nscheduler = \"bfq\"\nslice_idle = 0\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("\n[device.knobs]\nfifo_batch = 8\nscheduler = \"mq-deadline\"\n"),
        "{text}"
    );

    let (code, rules, err) = m.run(&["profile", "export", "--format", "udev"]);
    assert_eq!(code, Some(0), "{err}");
    let sdb = rules
        .lines()
        .find(|l| l.contains("WD-WCC6Y1234567"))
        .unwrap();
    assert!(
        sdb.ends_with(
            r#"ATTR{queue/scheduler}="bfq", ATTR{queue/iosched/slice_idle}="0", ATTR{queue/read_ahead_kb}="1024""#
        ),
        "{rules}"
    );

    // The next boot brings sdb up on mq-deadline.
    m.boot_on("sdb", "mq-deadline");
    let (code, out, err) = m.run(&["profile", "apply", "--dry-run", file.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    let sys = m.path("sys/block");
    let echo = |v: &str, disk: &str, rel: &str| {
        format!("echo {v} > {}", sys.join(disk).join(rel).display())
    };
    let want = [
        "# sdb".to_string(),
        echo("bfq", "sdb", "queue/scheduler"),
        echo("0", "sdb", "queue/iosched/slice_idle"),
        echo("1024", "sdb", "queue/read_ahead_kb"),
        "# sda".to_string(),
        echo("mq-deadline", "sda", "queue/scheduler"),
        echo("8", "sda", "queue/iosched/fifo_batch"),
        "# host".to_string(),
    ];
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(&lines[..want.len()], &want[..], "{out}");
    assert!(
        lines[want.len()].starts_with("echo 10 > ") && lines[want.len()].ends_with("dirty_ratio"),
        "{out}"
    );
    // `verify` on that boot: the scheduler is drift, slice_idle (a bfq file) is missing.
    let (code, table, _) = m.run(&["verify", file.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{table}");
    let row = |knob: &str| {
        table
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|w| w[0] == "sdb" && w[1] == knob)
            .unwrap()
    };
    assert_eq!(
        row("scheduler"),
        ["sdb", "scheduler", "bfq", "mq-deadline", "drift"]
    );
    assert_eq!(
        row("slice_idle"),
        ["sdb", "slice_idle", "0", "-", "missing"]
    );
    assert_eq!(m.read("sdb", "queue/read_ahead_kb"), "128", "a dry run");
}

/// A loop device whose backing file has udev's pattern characters: a rule would read `|` as
/// alternatives and `*?[]` as globs (matching `/srv/img/disk` and not the file itself), so the
/// udev export is refused with exit 2, naming the field and value, and writes nothing; the
/// TOML export and `profile apply` match the file exactly.
#[test]
fn udev_export_refuses_a_backing_file_with_pattern_characters() {
    let m = Machine::new();
    let backing = "/srv/img/disk|old [v2]*.img";
    put(&m.block("loop6", "dev"), "7:6");
    put(&m.block("loop6", "size"), "2097152");
    put(&m.block("loop6", "loop/backing_file"), backing);
    put(
        &m.block("loop6", "queue/scheduler"),
        "[none] mq-deadline kyber",
    );
    put(&m.block("loop6", "queue/read_ahead_kb"), "128");
    let (code, out, err) = m.run(&["devices", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let identity = format!("loop:{backing}");
    assert!(out.contains(&identity), "{out}");
    common::store_sweet_spot(
        &m.path("s.db"),
        &identity,
        "loop6",
        &sweetspot::device::kernel_release(),
        &[("read_ahead_kb", "1024")],
        &[("read_ahead_kb", "128")],
        2.0,
    );
    let rules = m.path("99-sweetspot.rules");
    let (code, out, err) = m.run(&[
        "profile",
        "export",
        "--format",
        "udev",
        "--out",
        rules.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(
        err.contains(
            "match.backing_file of loop6 (backing_file /srv/img/disk|old [v2]*.img) is \
             '/srv/img/disk|old [v2]*.img': a udev rule cannot match '|' literally (udev reads '*', '?' and '[]' as globs and '|' as alternatives, with no \
             escape); export it with --format toml, which `profile apply` matches exactly"
        ),
        "{err}"
    );
    assert!(!rules.exists(), "nothing written");
    let toml = m.path("p.toml");
    let (code, _, err) = m.run(&["profile", "export", "--out", toml.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = m.run(&["profile", "apply", toml.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("loop6: read_ahead_kb 128 → 1024"), "{out}");
    assert_eq!(m.read("loop6", "queue/read_ahead_kb"), "1024");
}
