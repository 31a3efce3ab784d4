//! `sweetspot knobs` on a fake sysfs and procfs (no root, no loop device): host-wide knobs
//! are marked so, domains read as people write them (`1–1024`), and a 0 that means "unused"
//! (`dirty_bytes` while `dirty_ratio` rules) says so.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

#[test]
fn knobs_marks_host_wide_knobs_domains_and_an_unused_zero() {
    let env = common::Env::new();
    let sys = env.dir.path().join("fake-sys");
    let dev = sys.join("block/loop201");
    std::fs::create_dir_all(dev.join("queue/iosched")).unwrap();
    std::fs::write(dev.join("dev"), "7:201\n").unwrap();
    std::fs::write(dev.join("queue/scheduler"), "none [mq-deadline]\n").unwrap();
    std::fs::write(dev.join("queue/nr_requests"), "64\n").unwrap();
    std::fs::write(dev.join("queue/iosched/fifo_batch"), "16\n").unwrap();
    let sys = sys.to_str().unwrap();
    let out = env
        .cmd(&["--sysfs-root", sys, "knobs", "loop201"])
        .output()
        .unwrap();
    let text = String::from_utf8(common::ok_stdout(out)).unwrap();
    let line = |k: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(k))
            .unwrap_or_else(|| panic!("no {k} in {text}"))
            .to_string()
    };
    assert!(text.contains(" applies to "), "{text}");
    let fb = line("fifo_batch");
    assert!(
        fb.contains(" 1–1024 ") && fb.contains(" mq-deadline "),
        "{fb}"
    );
    assert!(!text.contains("..="), "{text}");
    let nr = line("nr_requests");
    assert!(nr.contains(" 4–2048 ") && nr.contains(" device "), "{nr}");
    let dr = line("dirty_ratio");
    assert!(dr.contains(" 20 ") && dr.contains(" host-wide "), "{dr}");
    let db = line("dirty_bytes");
    assert!(
        db.contains("0 (unused)") && db.contains(" host-wide "),
        "{db}"
    );

    let out = env
        .cmd(&["--sysfs-root", sys, "knobs", "loop201", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&common::ok_stdout(out)).unwrap();
    assert_eq!(
        v["unused"]["dirty_bytes"],
        "host-wide dirty_bytes is 0, unused while dirty_ratio = 20 rules; tune dirty_ratio \
         instead"
    );
    let vm: Vec<&serde_json::Value> = v["knobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["name"] == "dirty_ratio")
        .collect();
    assert_eq!(vm[0]["order"], "vm");
}
