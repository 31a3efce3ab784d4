//! `sweetspot set` and `restore <DEVICE>` on a fake sysfs and procfs (no root, no loop
//! device, the host's knobs untouched): a misspelt knob gets a "did you mean"; a host-wide
//! knob is marked so; `restore sdz` puts back the host-wide knobs that a `set sdz` (or a
//! `tune --device sdz --apply`) alone journaled, and names the ones it leaves changed with the
//! command that puts them back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;
use sweetspot::store::Store;

/// A fake host: `common::Env`'s procfs (dirty_ratio 20, dirty_bytes 0, swappiness 60) and a
/// sysfs with the mq-deadline disks sdy and sdz (fifo_batch 16), each its own identity.
struct Host {
    env: common::Env,
    sys: PathBuf,
}

impl Host {
    fn new() -> Host {
        let env = common::Env::new();
        let sys = env.dir.path().join("sys");
        for (name, dev, serial) in [("sdy", "8:224", "Y1"), ("sdz", "8:240", "Z1")] {
            let d = sys.join("block").join(name);
            std::fs::create_dir_all(d.join("queue/iosched")).unwrap();
            std::fs::create_dir_all(d.join("device")).unwrap();
            for (file, v) in [
                ("dev", dev),
                ("device/model", "FAKE"),
                ("device/serial", serial),
                ("queue/scheduler", "none [mq-deadline]"),
                ("queue/nr_requests", "64"),
                ("queue/iosched/fifo_batch", "16"),
            ] {
                std::fs::write(d.join(file), format!("{v}\n")).unwrap();
            }
        }
        Host { env, sys }
    }

    /// `sweetspot --db … --procfs-root … --sysfs-root … <args>`: exit code, stdout, stderr.
    fn run(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let out = self
            .env
            .cmd(&["--sysfs-root", self.sys.to_str().unwrap()])
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }

    /// `run`, which must exit 0; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let (code, out, err) = self.run(args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        out
    }

    /// `run`, which must exit 1 with the last line that says `n` knobs were left changed;
    /// its stdout.
    fn left_changed(&self, args: &[&str], n: usize) -> String {
        let (code, out, err) = self.run(args);
        assert_eq!(code, Some(1), "{args:?}: {out}{err}");
        let knobs = if n == 1 { "knob" } else { "knobs" };
        assert_eq!(
            err,
            format!("sweetspot: error: {n} {knobs} left changed; see above\n"),
            "{args:?}"
        );
        out
    }

    /// The fake roots.
    fn root(&self) -> sweetspot::sysroot::SysRoot {
        sweetspot::sysroot::SysRoot::new(&self.sys, self.env.proc())
    }

    fn fifo_batch(&self, dev: &str) -> String {
        let p = self
            .sys
            .join("block")
            .join(dev)
            .join("queue/iosched/fifo_batch");
        std::fs::read_to_string(p).unwrap().trim().to_string()
    }

    /// The open journal entries: (device or `host`, knob, owner), oldest first.
    fn open(&self) -> Vec<(String, String, String)> {
        let s = Store::open(&self.env.db()).unwrap();
        s.journal_open(None, None)
            .unwrap()
            .into_iter()
            .map(|e| {
                (
                    e.device.unwrap_or("host".into()),
                    e.knob,
                    e.owner.to_string(),
                )
            })
            .collect()
    }

    /// The `sweetspot … restore` that puts everything back, as `restore` prints it.
    fn restore_all(&self) -> String {
        format!(
            "sweetspot --db {} --sysfs-root {} --procfs-root {} restore",
            self.env.db().display(),
            self.sys.display(),
            self.env.proc().display()
        )
    }
}

#[test]
fn set_with_a_misspelt_knob_says_did_you_mean_and_changes_nothing() {
    let h = Host::new();
    for (pair, meant) in [
        ("fifo_btach=8", "fifo_batch"),
        ("dirty_ration=30", "dirty_ratio"),
    ] {
        let (code, out, err) = h.run(&["set", "sdz", pair]);
        let typo = pair.split('=').next().unwrap();
        assert_eq!(code, Some(2), "{err}");
        assert_eq!(out, "");
        assert_eq!(
            err,
            format!(
                "sweetspot: error: unknown knob '{typo}' for sdz (did you mean '{meant}'?); \
                 valid knobs: scheduler, nr_requests, fifo_batch, dirty_ratio, dirty_bytes, \
                 swappiness\n"
            )
        );
    }
    assert_eq!(h.fifo_batch("sdz"), "16");
    assert_eq!(h.env.vm("dirty_ratio"), "20");
    assert!(h.open().is_empty(), "{:?}", h.open());
}

/// `set sdz dirty_ratio=30` says the knob is host-wide, and `restore sdz` puts it back: only
/// `set sdz` journaled it.
#[test]
fn restore_of_a_device_puts_back_the_host_wide_knobs_its_set_alone_changed() {
    let h = Host::new();
    let out = h.ok(&["set", "sdz", "dirty_ratio=30", "fifo_batch=8"]);
    assert_eq!(
        out,
        "sdz fifo_batch: 16 -> 8\nsdz dirty_ratio: 20 -> 30 (host-wide)\n"
    );
    assert_eq!(h.env.vm("dirty_ratio"), "30");
    // Not sdy's to put back, but `restore sdy` says it stays changed.
    assert_eq!(
        h.ok(&["restore", "sdy"]),
        format!(
            "restored 0 knobs on sdy\n1 host-wide knob stays changed: dirty_ratio (`restore \
             sdy` puts back only those that `set sdy` or `tune --device sdy --apply` alone \
             changed); `{}` puts it back, with every other journaled knob\n",
            h.restore_all()
        )
    );
    assert_eq!(h.env.vm("dirty_ratio"), "30");
    let out = h.ok(&["restore", "sdz"]);
    assert_eq!(
        out,
        "restored 2 knobs on sdz\n  sdz fifo_batch = 16\n  host-wide dirty_ratio = 20\n"
    );
    assert_eq!(
        (
            h.fifo_batch("sdz").as_str(),
            h.env.vm("dirty_ratio").as_str()
        ),
        ("16", "20")
    );
    // dirty_bytes, journaled with it (writing dirty_ratio zeroes it), is closed too.
    assert!(h.open().is_empty(), "{:?}", h.open());
    // A host-wide knob alone: its set's restore puts it back as well.
    assert_eq!(
        h.ok(&["set", "sdz", "swappiness=10"]),
        "sdz swappiness: 60 -> 10 (host-wide)\n"
    );
    assert_eq!(
        h.ok(&["restore", "sdz"]),
        "restored 1 knob on sdz\n  host-wide swappiness = 60\n"
    );
    assert_eq!(h.env.vm("swappiness"), "60");
}

/// A host-wide knob that `set` changed for two devices, or that another command journaled
/// too, is not one device's to put back: `restore sdz` leaves it, says so, and names the
/// command that does.
#[test]
fn restore_of_a_device_names_the_host_wide_knobs_it_leaves_changed() {
    let h = Host::new();
    h.ok(&["set", "sdy", "dirty_ratio=30"]);
    h.ok(&[
        "set",
        "sdz",
        "dirty_ratio=40",
        "swappiness=10",
        "fifo_batch=8",
    ]);
    let out = h.ok(&["restore", "sdz"]);
    assert_eq!(
        out,
        format!(
            "restored 2 knobs on sdz\n  sdz fifo_batch = 16\n  host-wide swappiness = 60\n\
             1 host-wide knob stays changed: dirty_ratio (`restore sdz` puts back only those \
             that `set sdz` or `tune --device sdz --apply` alone changed); `{}` puts it back, \
             with every other journaled knob\n",
            h.restore_all()
        )
    );
    assert_eq!(h.env.vm("dirty_ratio"), "40");
    // Nor is it sdy's alone.
    let out = h.ok(&["restore", "sdy"]);
    assert!(
        out.starts_with("restored 0 knobs on sdy\n1 host-wide knob stays changed: dirty_ratio"),
        "{out}"
    );
    assert_eq!(h.env.vm("dirty_ratio"), "40");
    // The command it names puts back the true original.
    let out = h.ok(&["restore"]);
    assert_eq!(out, "restored 1 knob\n  host-wide dirty_ratio = 20\n");
    assert!(h.open().is_empty(), "{:?}", h.open());

    // Another owner's open entry for the same file (a tune, the daemon's profile): its
    // original is not `set sdz`'s to overwrite.
    h.ok(&["set", "sdz", "dirty_ratio=30"]);
    let mut s = Store::open(&h.env.db()).unwrap();
    let ten = [(
        "dirty_ratio".to_string(),
        sweetspot::knob::KnobValue::Int(10),
    )]
    .into();
    sweetspot::knob::apply::apply_host(&mut s, &h.root(), &ten, &sweetspot::types::Owner::Profile)
        .unwrap();
    assert_eq!(h.env.vm("dirty_ratio"), "10");
    let out = h.ok(&["restore", "sdz"]);
    assert!(
        out.starts_with(
            "restored 0 knobs on sdz\n1 host-wide knob stays changed: dirty_ratio (`restore \
             sdz` puts back only those that `set sdz` or `tune --device sdz --apply` alone \
             changed)"
        ),
        "{out}"
    );
    assert_eq!(h.env.vm("dirty_ratio"), "10");
    // `restore` of everything writes the oldest original: the one before `set sdz`.
    let out = h.ok(&["restore"]);
    assert_eq!(out, "restored 1 knob\n  host-wide dirty_ratio = 20\n");
    assert!(h.open().is_empty(), "{:?}", h.open());
}

/// While another writer holds the host-wide knobs' lock, or writes another journaled device
/// (the host-wide knobs act on it too), `restore sdz` restores sdz and leaves the host-wide
/// knob its set changed, saying whose lock kept it.
#[test]
fn restore_of_a_device_leaves_host_wide_knobs_under_another_writers_lock() {
    use sweetspot::lock::{self, DeviceLock, Holder};
    let h = Host::new();
    h.ok(&["set", "sdy", "fifo_batch=4"]);
    h.ok(&["set", "sdz", "dirty_ratio=30", "fifo_batch=8"]);
    // A bench measures sdy.
    let sdy = sweetspot::device::find(&h.root(), "sdy").unwrap();
    let bench = DeviceLock::acquire(
        &lock::path(&h.env.db(), &h.root(), &sdy.identity),
        "sdy",
        Holder::me("bench"),
    )
    .unwrap();
    let out = h.left_changed(&["restore", "sdz"], 2);
    let head = format!(
        "restored 1 knob on sdz\n  sdz fifo_batch = 16\nleft alone: the host-wide dirty_bytes, \
         dirty_ratio, while `sweetspot bench` (pid {}, ",
        std::process::id()
    );
    assert!(out.starts_with(&head), "{out}");
    assert!(
        out.ends_with(
            "writes sdy, and they act on every device; `restore` again once it is done\n"
        ),
        "{out}"
    );
    assert_eq!(h.env.vm("dirty_ratio"), "30");
    drop(bench);
    h.ok(&["set", "sdz", "fifo_batch=8"]);
    // Another writer holds the host-wide knobs' own lock.
    let held = DeviceLock::acquire(
        &lock::path(&h.env.db(), &h.root(), lock::HOST),
        "the host",
        Holder::me("tune"),
    )
    .unwrap();
    let out = h.left_changed(&["restore", "sdz"], 2);
    let head = format!(
        "restored 1 knob on sdz\n  sdz fifo_batch = 16\nleft alone: the host-wide dirty_bytes, \
         dirty_ratio, while `sweetspot tune` (pid {}, ",
        std::process::id()
    );
    assert!(out.starts_with(&head), "{out}");
    assert!(
        out.ends_with("holds the host-wide knobs' lock; `restore` again once it is done\n"),
        "{out}"
    );
    assert_eq!(h.env.vm("dirty_ratio"), "30");
    drop(held);
    assert_eq!(
        h.ok(&["restore", "sdz"]),
        "restored 1 knob on sdz\n  host-wide dirty_ratio = 20\n"
    );
}

/// `tune --device sdz --apply` with a policy tuning the host-wide dirty_ratio leaves it at the
/// sweet spot, journaled for sdz under the tune, as `set sdz` journals it: `restore sdz`
/// puts it back, as the tune's report says. The tune runs a user benchmark on the fake
/// tree (its figure grows with dirty_ratio), in a work directory on the file system sdz
/// stands for (the fake disk takes the temp dir's device number).
#[test]
fn restore_of_a_device_puts_back_the_host_wide_knobs_its_tune_apply_left() {
    use std::os::unix::fs::MetadataExt;
    let h = Host::new();
    let work = h.env.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let dev = std::fs::metadata(&work).unwrap().dev();
    let (major, minor) = (nix::sys::stat::major(dev), nix::sys::stat::minor(dev));
    std::fs::write(h.sys.join("block/sdz/dev"), format!("{major}:{minor}\n")).unwrap();
    let ratio = h.env.proc().join("sys/vm/dirty_ratio");
    // 100 × dirty_ratio, with a little noise (the check needs a variance).
    let job = format!(
        "echo \"x $(( $(cat {}) * 100 + $$ % 7 ))\"",
        ratio.display()
    );
    let policy = h.env.dir.path().join("p.toml");
    std::fs::write(
        &policy,
        "loads = [\"no_load\", \"io_load\"]\nbudget = 12\ncheck_pairs = 3\n[objective]\n\
         minimize = \"ratio\"\nloads = [\"io_load\"]\n[knobs.dirty_ratio]\nmin = 20\nmax = 40\n",
    )
    .unwrap();
    let out = h.ok(&[
        "tune",
        "--device",
        "sdz",
        "--dir",
        work.to_str().unwrap(),
        "--apply",
        "--policy",
        policy.to_str().unwrap(),
        "--job",
        &job,
        "--metric",
        "regex:x (\\d+)",
        "--maximize",
        "x",
        "--seed",
        "1",
    ]);
    assert!(
        out.contains("\n  kept       dirty_ratio 20 → 40 (host-wide: every device)\n"),
        "{out}"
    );
    // The command whole (never wrapped), then what it does.
    assert!(
        out.contains("restore sdz`")
            && out.contains(" puts it back (the sweet spot stays applied)"),
        "{out}"
    );
    assert_eq!(h.env.vm("dirty_ratio"), "40");
    assert_eq!(
        h.open(),
        [
            ("host".into(), "dirty_ratio".into(), "tune:1".into()),
            ("host".into(), "dirty_bytes".into(), "tune:1".into()),
        ]
    );
    // Not sdy's: `restore sdy` leaves it and says so.
    assert!(
        h.ok(&["restore", "sdy"])
            .starts_with("restored 0 knobs on sdy\n1 host-wide knob stays changed: dirty_ratio"),
    );
    assert_eq!(h.env.vm("dirty_ratio"), "40");
    assert_eq!(
        h.ok(&["restore", "sdz"]),
        "restored 1 knob on sdz\n  host-wide dirty_ratio = 20\n"
    );
    assert_eq!(h.env.vm("dirty_ratio"), "20");
    assert!(h.open().is_empty(), "{:?}", h.open());
}

#[test]
fn a_set_that_changes_nothing_leaves_nothing_for_restore_to_overwrite() {
    let h = Host::new();
    for pair in ["fifo_batch=16", "swappiness=60", "dirty_ratio=20"] {
        assert_eq!(
            h.ok(&["set", "sdz", pair]),
            "sdz: already set, nothing changed\n"
        );
    }
    assert_eq!(h.open(), Vec::<(String, String, String)>::new());
    // An admin changes them by hand afterwards: restore has nothing of sweetspot's to undo.
    let fifo = h.sys.join("block/sdz/queue/iosched/fifo_batch");
    std::fs::write(&fifo, "8\n").unwrap();
    std::fs::write(h.env.proc().join("sys/vm/swappiness"), "30\n").unwrap();
    std::fs::write(h.env.proc().join("sys/vm/dirty_ratio"), "15\n").unwrap();
    assert_eq!(h.ok(&["restore", "sdz"]), "restored 0 knobs on sdz\n");
    assert_eq!(h.ok(&["restore"]), "restored 0 knobs\n");
    assert_eq!(h.fifo_batch("sdz"), "8");
    assert_eq!(h.env.vm("swappiness"), "30");
    assert_eq!(h.env.vm("dirty_ratio"), "15");
}

#[test]
fn a_no_op_set_for_another_device_still_makes_a_host_wide_knob_shared() {
    let h = Host::new();
    h.ok(&["set", "sdz", "dirty_ratio=30"]);
    assert_eq!(
        h.ok(&["set", "sdy", "dirty_ratio=30"]),
        "sdy: already set, nothing changed\n"
    );
    // The entries of `set sdz` (dirty_ratio and its partner), now nobody's alone: `restore
    // sdz` leaves them.
    let host = |k: &str| ("host".to_string(), k.to_string(), "set".to_string());
    assert_eq!(h.open(), [host("dirty_ratio"), host("dirty_bytes")]);
    let out = h.ok(&["restore", "sdz"]);
    assert!(
        out.starts_with("restored 0 knobs on sdz\n1 host-wide knob stays changed: dirty_ratio"),
        "{out}"
    );
    assert_eq!(h.env.vm("dirty_ratio"), "30");
    assert_eq!(
        h.ok(&["restore"]),
        "restored 1 knob\n  host-wide dirty_ratio = 20\n"
    );
    assert_eq!(h.env.vm("dirty_ratio"), "20");
}

/// `restore` under other roots than a `set`'s leaves its knob alone and says so, with the
/// command (the set's roots) that puts it back; it used to say only "restored 0 knobs".
#[test]
fn restore_under_other_roots_names_the_knobs_it_cannot_reach_and_how() {
    let h = Host::new();
    h.ok(&["set", "sdz", "fifo_batch=8"]);
    let other = h.env.dir.path().join("sys2");
    std::fs::create_dir_all(other.join("block")).unwrap();
    let fifo = h.sys.join("block/sdz/queue/iosched/fifo_batch");
    let want = format!(
        "left alone: sdz fifo_batch, written under other roots than this run's; `sweetspot \
         --db {} --sysfs-root {} --procfs-root {} restore{{}}` puts it back\n",
        h.env.db().display(),
        h.sys.display(),
        h.env.proc().display()
    );
    for (dev, tail) in [(Some("sdz"), " sdz"), (None, "")] {
        let mut args = vec!["--sysfs-root", other.to_str().unwrap(), "restore"];
        args.extend(dev);
        let out = h.env.cmd(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "sweetspot: error: 1 knob left changed; see above\n"
        );
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains(&want.replace("{}", tail)), "{text}");
        assert_eq!(std::fs::read_to_string(&fifo).unwrap(), "8\n", "left alone");
    }
    let text = h.ok(&["restore", "sdz"]);
    assert!(!text.contains("other roots"), "{text}");
    assert_eq!(std::fs::read_to_string(&fifo).unwrap(), "16\n", "put back");
}

/// `restore sdz` under other roots than a `set sdz` of a device knob and a host-wide one: one
/// line names both (the sibling `…/sys` and `…/proc` are one tree) with one command; once that
/// tree is deleted, the line says so and the entries stay open.
#[test]
fn restore_names_a_devices_host_wide_knob_under_other_roots_and_a_tree_not_found() {
    let h = Host::new();
    h.ok(&["set", "sdz", "fifo_batch=4", "swappiness=12"]);
    let other = h.env.dir.path().join("other");
    std::fs::create_dir_all(other.join("sys/block")).unwrap();
    std::fs::create_dir_all(other.join("proc/sys/vm")).unwrap();
    let elsewhere = |dev: &[&str]| -> String {
        let mut c = assert_cmd::Command::cargo_bin("sweetspot").unwrap();
        c.arg("--db")
            .arg(h.env.db())
            .arg("--sysfs-root")
            .arg(other.join("sys"))
            .arg("--procfs-root")
            .arg(other.join("proc"))
            .arg("restore")
            .args(dev);
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "sweetspot: error: 2 knobs left changed; see above\n"
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let text = elsewhere(&["sdz"]);
    let want = format!(
        "left alone: sdz fifo_batch, host-wide swappiness, written under other roots than this \
         run's; `sweetspot --db {} --sysfs-root {} --procfs-root {} restore sdz` puts them \
         back\n",
        h.env.db().display(),
        h.sys.display(),
        h.env.proc().display()
    );
    assert!(text.contains(&want), "{text}");
    assert_eq!(h.env.vm("swappiness"), "12", "left alone");
    // The tree is deleted: the entries stay open (a missing path is no proof the knobs are
    // back), and the line says the tree is not found.
    std::fs::remove_dir_all(&h.sys).unwrap();
    std::fs::remove_dir_all(h.env.proc()).unwrap();
    let text = elsewhere(&["sdz"]);
    let gone = format!(
        " puts them back (not found here now: {}, {})\n",
        h.sys.display(),
        h.env.proc().display()
    );
    assert!(
        text.contains(&want.replace(" puts them back\n", &gone)),
        "{text}"
    );
    let open = sweetspot::store::Store::open(&h.env.db())
        .unwrap()
        .journal_open(None, None)
        .unwrap();
    assert_eq!(open.len(), 2, "kept open: {open:?}");
}

/// The exit status of `restore` tells a script whether every knob it was asked to restore is
/// back: 1, with a last line on stderr counting the knobs left changed (here journaled under
/// other roots than its own, so out of its reach), also with `-q`; 0 once none is left. Each
/// run has its own `$TMPDIR`, so no other run's leftovers are seen.
#[test]
fn restore_exits_1_while_it_leaves_knobs_changed_and_0_once_every_knob_is_back() {
    let h = Host::new();
    h.ok(&["set", "sdz", "fifo_batch=8", "swappiness=12"]);
    h.ok(&["set", "sdy", "fifo_batch=4"]);
    let tmp = h.env.dir.path().join("tmp");
    let other = h.env.dir.path().join("other");
    for d in [&tmp, &other.join("sys/block"), &other.join("proc/sys/vm")] {
        std::fs::create_dir_all(d).unwrap();
    }
    // `sweetspot --db … [--sysfs-root S --procfs-root P] <args>`: exit code, stdout, stderr.
    let run = |roots: [&PathBuf; 2], args: &[&str]| {
        let mut c = assert_cmd::Command::cargo_bin("sweetspot").unwrap();
        c.env("TMPDIR", &tmp).arg("--db").arg(h.env.db());
        c.arg("--sysfs-root").arg(roots[0]);
        c.arg("--procfs-root").arg(roots[1]);
        let out = c.args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (here, proc_) = (&h.sys, &h.env.proc());
    let (sys2, proc2) = (&other.join("sys"), &other.join("proc"));
    let summary = |n: &str| format!("sweetspot: error: {n} left changed; see above\n");
    let values = |h: &Host| {
        (
            h.fifo_batch("sdy"),
            h.fifo_batch("sdz"),
            h.env.vm("swappiness"),
        )
    };
    let changed = || ("4".to_string(), "8".to_string(), "12".to_string());

    // Under other roots: every knob is left, named, counted, and really still changed.
    let (code, out, err) = run([sys2, proc2], &["restore"]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert_eq!(err, summary("3 knobs"), "{out}");
    assert!(out.starts_with("restored 0 knobs\nleft alone: "), "{out}");
    assert!(
        out.contains(
            "left alone: sdz fifo_batch, sdy fifo_batch, host-wide swappiness, written under \
             other roots than this run's;"
        ),
        "{out}"
    );
    assert_eq!(values(&h), changed());
    assert_eq!(h.open().len(), 3, "{:?}", h.open());
    // One device: only its knob counts (the host-wide one is `set sdz`'s alone).
    let (code, out, err) = run([sys2, proc2], &["restore", "sdy"]);
    assert_eq!((code, err), (Some(1), summary("1 knob")), "{out}");
    // Quiet: no report, but the exit status and the count.
    let (code, out, err) = run([sys2, proc2], &["-q", "restore"]);
    assert_eq!(
        (code, out, err),
        (Some(1), String::new(), summary("3 knobs"))
    );
    assert_eq!(values(&h), changed());

    // Under its own roots, `restore sdz` puts back sdz and its host-wide knob: exit 0 (sdy,
    // which it was not asked about, stays changed).
    let (code, out, err) = run([here, proc_], &["restore", "sdz"]);
    assert_eq!((code, err.as_str()), (Some(0), ""), "{out}");
    assert_eq!(values(&h), ("4".into(), "16".into(), "60".into()));
    let (code, _, err) = run([sys2, proc2], &["restore"]);
    assert_eq!((code, err), (Some(1), summary("1 knob")));
    // A full restore of everything: exit 0, nothing on stderr, every knob back.
    let (code, out, err) = run([here, proc_], &["restore"]);
    assert_eq!((code, err.as_str()), (Some(0), ""), "{out}");
    assert_eq!(out, "restored 1 knob\n  sdy fifo_batch = 16\n");
    assert_eq!(values(&h), ("16".into(), "16".into(), "60".into()));
    assert!(h.open().is_empty(), "{:?}", h.open());
    // Nothing journaled is left anywhere: exit 0 under the other roots too.
    let (code, out, err) = run([sys2, proc2], &["restore"]);
    assert_eq!(
        (code, out, err),
        (Some(0), "restored 0 knobs\n".into(), String::new())
    );
}

/// A full `restore` while a running tune or another writer holds sdy leaves sdy and the
/// host-wide knobs (they act on sdy too) changed: exit 1, counting both; sdz is put back.
/// Once the holder is gone, `restore` puts the rest back and exits 0.
#[test]
fn restore_exits_1_while_a_tune_or_another_writer_holds_a_journaled_device() {
    use sweetspot::lock::{self, DeviceLock, Holder};
    for tune in [true, false] {
        let h = Host::new();
        h.ok(&["set", "sdy", "fifo_batch=4"]);
        h.ok(&["set", "sdz", "fifo_batch=8", "swappiness=12"]);
        let sdy = sweetspot::device::find(&h.root(), "sdy").unwrap();
        let path = lock::path(&h.env.db(), &h.root(), &sdy.identity);
        let pid = std::process::id();
        // A tune of sdy whose process (this test's) is alive and holds sdy's lock, or a bench.
        let (held, line) = if tune {
            let target = sweetspot::bench::TargetInfo {
                label: "sdy".into(),
                identity: sdy.identity.clone(),
                kernel: "6.18".into(),
            };
            let id = Store::open(&h.env.db())
                .unwrap()
                .insert_tune(&target, Some("sdy"), "quick")
                .unwrap();
            let l = DeviceLock::acquire(&path, "sdy", Holder::me("tune")).unwrap();
            (
                l,
                format!("left alone: sdy, while tune {id} (pid {pid}) is tuning it;"),
            )
        } else {
            let l = DeviceLock::acquire(&path, "sdy", Holder::me("bench")).unwrap();
            (
                l,
                format!("left alone: sdy, while `sweetspot bench` (pid {pid}, "),
            )
        };
        let out = h.left_changed(&["restore"], 2);
        assert!(out.contains(&line), "{out}");
        assert!(
            out.contains("left alone: the host-wide swappiness, while "),
            "{out}"
        );
        assert!(out.contains("  sdz fifo_batch = 16\n"), "{out}");
        assert_eq!(
            (h.fifo_batch("sdy"), h.env.vm("swappiness")),
            ("4".into(), "12".into())
        );
        drop(held);
        let out = h.ok(&["restore"]);
        assert!(!out.contains("left alone"), "{out}");
        assert_eq!(
            (h.fifo_batch("sdy"), h.env.vm("swappiness")),
            ("16".into(), "60".into())
        );
        assert!(h.open().is_empty(), "{:?}", h.open());
    }
}

/// `set` of a knob the running daemon manages says that the daemon puts it back once (here a
/// state file names this test's own live pid as the daemon's).
#[test]
fn set_of_a_knob_the_daemon_manages_says_what_the_daemon_will_do() {
    let h = Host::new();
    let state = format!("{}.daemon.json", h.env.db().display());
    std::fs::write(
        &state,
        serde_json::json!({"pid": std::process::id(), "managed": [
            {"identity": "x", "device": "sdz", "knob": "fifo_batch", "expected": "8",
             "contested": null}]})
        .to_string(),
    )
    .unwrap();
    let text = h.ok(&["set", "sdz", "fifo_batch=32"]);
    assert!(
        text.contains(&format!(
            "note: the running daemon (pid {}) manages fifo_batch (its sweet spot 8): it puts \
             it back at its next poll unless it did so once already",
            std::process::id()
        )),
        "{text}"
    );
    let text = h.ok(&["set", "sdy", "fifo_batch=32"]);
    assert!(!text.contains("note:"), "sdy is not managed: {text}");
}
