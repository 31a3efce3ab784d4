//! Commands that only read the database (`history`, `profile export`, `daemon status`) work
//! on a database in a read-only directory (here a read-only bind mount, which binds root
//! too), and leave nothing behind; a command that writes still exits 2, naming the database.
#![allow(clippy::unwrap_used)]

use crate::common;

#[test]
fn read_only_commands_read_a_database_in_a_read_only_directory() {
    let Some(_gate) = common::root::needs_root("a read-only bind mount") else {
        return;
    };
    let src = tempfile::tempdir().unwrap();
    let db = src.path().join("s.db");
    common::store_sweet_spot(
        &db,
        "wwid:naa.5000c500a1b2c3d4",
        "sda",
        "6.18.0",
        &[("scheduler", "mq-deadline"), ("fifo_batch", "8")],
        &[("scheduler", "none")],
        1.8,
    );
    // The writer has closed: WAL checkpointed, only the database and its open-lock remain.
    let before = common::names(src.path());
    let mnt = tempfile::tempdir().unwrap();
    let ro = common::BindMount::read_only(src.path(), &mnt.path().join("ro"));
    let ro_db = ro.target.join("s.db");

    let out = common::sweetspot(&ro_db, &["history", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let h: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let spots = h["sweet_spots"].as_array().unwrap();
    assert_eq!(spots.len(), 1, "{h}");
    assert_eq!(spots[0]["identity"], "wwid:naa.5000c500a1b2c3d4", "{h}");

    let out = common::sweetspot(&ro_db, &["profile", "export", "--format", "sysctl"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = common::sweetspot(&ro_db, &["profile", "export", "--format", "udev"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rules = String::from_utf8(out.stdout).unwrap();
    assert!(
        rules.contains("ATTR{queue/scheduler}=\"mq-deadline\""),
        "{rules}"
    );

    let out = common::sweetspot(&ro_db, &["status", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A command that writes is refused with exit 2 and the database's path.
    let out = common::sweetspot(
        &ro_db,
        &[
            "tune",
            "--sim",
            "data/surfaces/flat-fifo_batch.toml",
            "--budget",
            "8",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&ro_db.display().to_string()), "{err}");

    drop(ro);
    assert_eq!(
        common::names(src.path()),
        before,
        "the read-only commands created nothing"
    );
}
