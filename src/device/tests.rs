//! Device discovery on fake sysfs trees.

use super::*;
use crate::testkit::tree::FakeTree;

#[test]
fn lists_whole_disks_with_identity_schedulers_and_size() {
    let t = FakeTree::new();
    t.mq_deadline_disk()
        .bfq_disk()
        .legacy_cfq_disk()
        .nvme_none();
    // An unattached loop device is left out.
    t.disk("loop7", "7:7", "[none] mq-deadline", 128);
    let ds = list(&t.root).unwrap();
    let names: Vec<&str> = ds.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["hda", "nvme0n1", "sda", "sdb"]);
    let sda = &ds[2];
    assert_eq!(sda.identity, "wwid:naa.5000c500a1b2c3d4");
    assert_eq!(sda.dev, "8:0");
    assert_eq!(sda.scheduler, "mq-deadline");
    assert_eq!(sda.schedulers, ["none", "mq-deadline", "kyber", "bfq"]);
    assert_eq!(sda.size_bytes, 2097152 * 512);
    assert!(sda.rotational);
    assert_eq!(ds[3].identity, "model-serial:WDC WD10EZEX:WD-WCC6Y1234567");
    assert_eq!(ds[1].identity, "wwid:eui.0025388b71b2c3d4");
    assert_eq!(ds[1].schedulers, ["none"]);
    assert!(!ds[1].rotational);
    assert_eq!(ds[0].scheduler, "cfq");
    assert_eq!(ds[0].identity, "virtual:hda");
}

#[test]
fn identity_falls_back_to_by_path_and_loop_backing_file() {
    let t = FakeTree::new();
    t.disk("vdb", "254:16", "none [mq-deadline]", 256);
    let target = t.root.sys.join("devices/pci0000:00/0000:00:03.0/virtio2");
    std::fs::create_dir_all(&target).unwrap();
    std::os::unix::fs::symlink(&target, t.root.block_dev("vdb").join("device")).unwrap();
    // A serial without a model is not enough for model-serial.
    t.set("vdb", "serial", "overlayblk");
    assert_eq!(
        identity::identity(&t.root, "vdb"),
        "by-path:pci0000:00/0000:00:03.0/virtio2"
    );
    t.disk("loop3", "7:3", "[none] mq-deadline", 128).set(
        "loop3",
        "loop/backing_file",
        "/var/tmp/disk.img",
    );
    assert_eq!(
        identity::identity(&t.root, "loop3"),
        "loop:/var/tmp/disk.img"
    );
}

#[test]
fn find_resolves_partitions_and_rejects_bad_names() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    assert_eq!(find(&t.root, "sda1").unwrap().name, "sda");
    assert_eq!(find(&t.root, "/dev/sda").unwrap().name, "sda");
    for bad in ["../sda", "sda/queue", "..", "", "sdz"] {
        let e = find(&t.root, bad).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{bad}: {e}");
    }
    let e = find(&t.root, "sdz").unwrap_err().to_string();
    assert!(
        e.contains("unknown device 'sdz'") && e.contains("sda"),
        "{e}"
    );
}

#[test]
fn mounts_on_partitions_come_from_mountinfo() {
    let t = FakeTree::new();
    t.mq_deadline_disk();
    std::fs::create_dir_all(t.root.proc.join("self")).unwrap();
    std::fs::write(
        t.root.proc.join("self/mountinfo"),
        "27 1 8:1 / /data rw,relatime - ext4 /dev/sda1 rw\n28 1 8:16 / /x rw - xfs /dev/sdb rw\n",
    )
    .unwrap();
    let d = find(&t.root, "sda").unwrap();
    assert_eq!(d.mounts.len(), 1);
    assert_eq!(d.mounts[0].source, "sda1");
    assert_eq!(d.mounts[0].target, std::path::PathBuf::from("/data"));
    assert_eq!(d.mounts[0].fstype, "ext4");
}

#[test]
fn parses_current_and_legacy_scheduler_lines() {
    let (o, a) = parse_scheduler("noop anticipatory deadline [cfq] \n");
    assert_eq!(o, ["noop", "anticipatory", "deadline", "cfq"]);
    assert_eq!(a.as_deref(), Some("cfq"));
    assert_eq!(parse_scheduler("[none]").1.as_deref(), Some("none"));
    assert_eq!(parse_scheduler("none mq-deadline").1, None);
}
