//! `profile apply` on real loop devices (CI runs as root) when the kernel refuses a write
//! half-way: everything the apply had written is put back (all or nothing), the journal keeps
//! no open entry, and the exit code is 1.
//!
//! The refusal is a real one: with no scheduler, `nr_requests` above the queue's tag depth is
//! EINVAL (blk_mq_update_nr_requests; a loop device's depth is 128, its `hw_queue_depth`),
//! while the catalogue's bound (2048) lets it through the checks made before any write.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::Attached;
use std::os::unix::fs::PermissionsExt;

fn sparse(path: &std::path::Path) {
    std::fs::File::create(path)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
}

#[test]
fn a_write_the_kernel_refuses_rolls_back_the_whole_apply() {
    let Some(_gate) = common::root::needs_root("loop devices") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (fa, fb) = (dir.path().join("a.img"), dir.path().join("b.img"));
    sparse(&fa);
    sparse(&fb);
    let (a, b) = (Attached::new(&fa, false), Attached::new(&fb, false));
    let depth: i64 = b.read("queue/nr_requests").parse().unwrap();
    let ra_a = a.read("queue/read_ahead_kb");
    let new_ra = if ra_a == "256" { "512" } else { "256" };
    let profile = dir.path().join("p.toml");
    let entry = |name: &str, file: &std::path::Path, knobs: String| {
        format!(
            "[[device]]\nname = \"{name}\"\nmatch = {{ backing_file = \"{}\" }}\n\
             kernel = \"6.18.0\"\npolicy = \"quick\"\ntuned_at = \"2026-12-01T08:00:00Z\"\n\
             knobs = {{ {knobs} }}\n",
            file.display()
        )
    };
    std::fs::write(
        &profile,
        format!(
            "version = 1\n{}{}",
            entry(
                &a.name,
                &fa,
                format!("read_ahead_kb = {new_ra}, nomerges = 1")
            ),
            // Above the tag depth, within the catalogue's bound: EINVAL from the kernel.
            entry(
                &b.name,
                &fb,
                format!("nr_requests = {}", (depth * 8).min(2048))
            ),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&profile, std::fs::Permissions::from_mode(0o644)).unwrap();
    let db = dir.path().join("p.db");
    let out = common::sweetspot(&db, &["profile", "apply", profile.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert_eq!(a.read("queue/read_ahead_kb"), ra_a, "{stdout}");
    assert_eq!(a.read("queue/nomerges"), "0", "{stdout}");
    assert_eq!(b.read("queue/nr_requests"), depth.to_string());
    assert!(
        stdout.contains(&format!(
            "{}: ROLLED BACK: read_ahead_kb {ra_a} → {new_ra} undone",
            a.name
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("{}: read_ahead_kb put back to {ra_a}", a.name)),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("{}: NOT APPLIED: ", b.name))
            && stdout.contains("the apply was rolled back"),
        "{stdout}"
    );
    let store = sweetspot::store::Store::open(&db).unwrap();
    assert_eq!(store.journal_open(None, None).unwrap(), []);
}
