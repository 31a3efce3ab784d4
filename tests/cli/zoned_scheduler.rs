//! A host-managed zoned disk on a fake sysfs and procfs (no root, no loop device): before
//! Linux 6.10 `knobs` shows only the zone-aware schedulers, and `set` refuses bfq with exit 2
//! naming the disk, knob and value, writing nothing; from 6.10 on both take bfq.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

#[test]
fn a_zoned_disk_before_6_10_takes_only_zone_aware_schedulers() {
    let env = common::Env::new();
    let sys = env.dir.path().join("fake-sys");
    let dev = sys.join("block/sdz");
    std::fs::create_dir_all(dev.join("queue/iosched")).unwrap();
    std::fs::create_dir_all(dev.join("device")).unwrap();
    for (rel, v) in [
        ("dev", "8:240"),
        ("device/wwid", "naa.5000c500deadbeef"),
        ("queue/scheduler", "none [mq-deadline] kyber bfq"),
        ("queue/zoned", "host-managed"),
        ("queue/nr_requests", "64"),
        ("queue/iosched/fifo_batch", "16"),
    ] {
        std::fs::write(dev.join(rel), format!("{v}\n")).unwrap();
    }
    let release = |r: &str| {
        let k = env.proc().join("sys/kernel");
        std::fs::create_dir_all(&k).unwrap();
        std::fs::write(k.join("osrelease"), format!("{r}\n")).unwrap();
    };
    let sys = sys.to_str().unwrap();
    let scheduler_line = |text: &str| {
        text.lines()
            .find(|l| l.starts_with("scheduler "))
            .unwrap_or_else(|| panic!("{text}"))
            .to_string()
    };

    release("6.9.0");
    let out = env
        .cmd(&["--sysfs-root", sys, "knobs", "sdz"])
        .output()
        .unwrap();
    let line = scheduler_line(&String::from_utf8(common::ok_stdout(out)).unwrap());
    assert!(line.contains(" none mq-deadline "), "{line}");
    assert!(!line.contains("bfq") && !line.contains("kyber"), "{line}");
    assert!(
        line.contains("host-managed zoned disk on kernel 6.9.0"),
        "{line}"
    );

    let out = env
        .cmd(&["--sysfs-root", sys, "set", "sdz", "scheduler=bfq"])
        .output()
        .unwrap();
    let (code, err) = common::code_and_stderr(out);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(
            "sdz: knob 'scheduler': bad value 'bfq': a host-managed zoned disk on kernel 6.9.0 \
             (before 6.10) accepts only a zone-aware scheduler (mq-deadline or none)"
        ),
        "{err}"
    );
    let line = std::fs::read_to_string(dev.join("queue/scheduler")).unwrap();
    assert_eq!(
        line.trim(),
        "none [mq-deadline] kyber bfq",
        "nothing written"
    );

    release("6.10.0");
    let out = env
        .cmd(&["--sysfs-root", sys, "knobs", "sdz"])
        .output()
        .unwrap();
    let line = scheduler_line(&String::from_utf8(common::ok_stdout(out)).unwrap());
    assert!(line.contains(" none mq-deadline kyber bfq "), "{line}");
}
