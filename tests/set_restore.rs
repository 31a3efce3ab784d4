//! `sweetspot set` and `restore <DEVICE>` on a fake sysfs and procfs (no root, no loop
//! device, the host's knobs untouched): a misspelt knob gets a "did you mean".
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

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
            .map(|e| (e.device.unwrap_or("host".into()), e.knob, e.owner))
            .collect()
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
