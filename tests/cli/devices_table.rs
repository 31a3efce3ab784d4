//! `sweetspot devices` on a fake sysfs tree: a loop device whose identity (its backing file's
//! path) is long keeps the table's columns aligned, shortened with `…` in the table and whole
//! in `--json`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;

/// A long backing file: `loop:` and this are 103 characters.
const BACKING: &str =
    "/var/lib/machines/images/build-cache/very-long-directory-name/with/many/levels/disk.img";

fn put(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("{text}\n")).unwrap();
}

/// A fake `/sys/block` with `loop3` (backed by [`BACKING`]) and `sda` (model and serial).
fn tree(sys: &Path) {
    for (name, dev) in [("loop3", "7:3"), ("sda", "8:0")] {
        let d = sys.join("block").join(name);
        put(&d.join("dev"), dev);
        put(&d.join("size"), "2097152");
        put(&d.join("queue/scheduler"), "none [mq-deadline] kyber bfq");
        put(&d.join("queue/rotational"), "0");
    }
    put(&sys.join("block/loop3/loop/backing_file"), BACKING);
    put(&sys.join("block/sda/device/model"), "Samsung SSD 860");
    put(&sys.join("block/sda/device/serial"), "S3Z9NB0K123456");
}

/// The character offset of `word` in `line`.
fn column(line: &str, word: &str) -> usize {
    let at = line
        .find(word)
        .unwrap_or_else(|| panic!("'{word}' in {line}"));
    line[..at].chars().count()
}

#[test]
fn a_long_loop_identity_keeps_the_columns_aligned_and_json_has_it_whole() {
    let env = common::Env::new();
    let sys = env.dir.path().join("sys");
    tree(&sys);
    let sys = sys.to_str().unwrap();
    let out = env.cmd(&["--sysfs-root", sys, "devices"]).output().unwrap();
    let text = String::from_utf8(common::ok_stdout(out)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let (head, rows) = (lines[0], &lines[1..3]);
    assert!(
        rows[0].starts_with("loop3 ") && rows[1].starts_with("sda "),
        "{text}"
    );
    // Every row's identity and mounts start under their headings.
    let (id, mounts) = (column(head, "identity"), column(head, "mounts"));
    assert_eq!(column(rows[0], "loop:/var/lib/"), id, "{text}");
    assert_eq!(column(rows[1], "model-serial:"), id, "{text}");
    for r in rows {
        assert_eq!(r.chars().nth(mounts), Some('-'), "{text}");
        assert_eq!(r.chars().nth(mounts - 1), Some(' '), "{text}");
    }
    assert!(
        rows[0].contains("loop:/var/lib/ma…") && rows[0].contains("levels/disk.img  -"),
        "{text}"
    );
    assert!(
        text.contains(
            "\n(identities longer than 48 characters are shortened with …; `sweetspot devices \
             --json` has them whole)\n"
        ),
        "{text}"
    );
    let out = env
        .cmd(&["--sysfs-root", sys, "devices", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&common::ok_stdout(out)).unwrap();
    assert_eq!(
        v["devices"][0]["identity"],
        format!("loop:{BACKING}"),
        "{v}"
    );
}

/// A model, serial or backing file holding control characters (an escape sequence, a line
/// break) is shown escaped in the table, one line per device, and exactly in `--json`.
#[test]
fn control_characters_are_shown_escaped_in_the_table_and_exact_in_json() {
    let env = common::Env::new();
    let sys = env.dir.path().join("sys");
    for (name, dev) in [("loop3", "7:3"), ("sda", "8:0")] {
        let d = sys.join("block").join(name);
        put(&d.join("dev"), dev);
        put(&d.join("size"), "2097152");
        put(&d.join("queue/scheduler"), "none [mq-deadline]");
        put(&d.join("queue/rotational"), "0");
    }
    let backing = "/srv/a\u{1b}[31mred\nb.img";
    put(&sys.join("block/loop3/loop/backing_file"), backing);
    put(&sys.join("block/sda/device/model"), "M\u{1b}]0;pwned\u{7}");
    put(&sys.join("block/sda/device/serial"), "S\n1:2");
    let sys = sys.to_str().unwrap();
    let out = env.cmd(&["--sysfs-root", sys, "devices"]).output().unwrap();
    let text = String::from_utf8(common::ok_stdout(out)).unwrap();
    assert!(!text.contains(['\u{1b}', '\u{7}']), "{text:?}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[1].starts_with("loop3 ") && lines[2].starts_with("sda "),
        "{text}"
    );
    assert!(
        lines[1].contains("loop:/srv/a\\u{1b}[31mred\\nb.img"),
        "{text}"
    );
    // The model-serial identity percent-encodes them (and the serial's ':').
    assert!(
        lines[2].contains("model-serial:M%1B]0;pwned%07:S%0A1%3A2"),
        "{text}"
    );
    assert!(lines[3].starts_with("kernel "), "{text}");
    let out = env
        .cmd(&["--sysfs-root", sys, "devices", "--json"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&common::ok_stdout(out)).unwrap();
    assert_eq!(json["devices"][0]["identity"], format!("loop:{backing}"));
}
