//! The boot integration: what `profile export` writes for udev and TuneD parses as those
//! tools read it, and the shipped examples pass their tools' own checks (`systemd-analyze
//! verify`, `ansible-playbook --syntax-check`), which `.ci/run` installs (scripts/check-deb runs
//! the units and the Ansible play against the installed Debian package too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("sweetspot")
}

/// A database with one significant sweet spot of a WWID disk that changed the scheduler,
/// fifo_batch, read_ahead_kb and dirty_ratio.
fn db_with_sweet_spot(dir: &Path) -> PathBuf {
    db_with_sweet_spot_of(dir, "wwid:naa.5000c500a1b2c3d4")
}

/// A SATA disk's bus path identity.
const BY_PATH: &str = "by-path:pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0";

/// [`db_with_sweet_spot`] for the disk of `identity`.
fn db_with_sweet_spot_of(dir: &Path, identity: &str) -> PathBuf {
    let db = dir.join("b.db");
    common::store_sweet_spot(
        &db,
        identity,
        "sda",
        "6.18.0",
        &[
            ("scheduler", "mq-deadline"),
            ("fifo_batch", "8"),
            ("read_ahead_kb", "256"),
            ("dirty_ratio", "10"),
        ],
        &[
            ("scheduler", "none"),
            ("read_ahead_kb", "128"),
            ("dirty_ratio", "20"),
        ],
        2.2,
    );
    db
}

fn export(db: &Path, format: &str) -> String {
    let out = Command::new(bin())
        .arg("--db")
        .arg(db)
        .args(["profile", "export", "--format", format])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// One udev rule key: `KEY` or `KEY{attr}`, its operator and its value (udev(7) syntax:
/// comma-separated `KEY OP "value"`, operators `==`, `!=`, `=`, `+=`, `-=`, `:=`).
#[derive(Debug, PartialEq)]
struct UdevKey {
    key: String,
    op: String,
    value: String,
}

fn parse_udev_line(line: &str) -> Vec<UdevKey> {
    let mut keys = Vec::new();
    let mut rest = line.trim();
    while !rest.is_empty() {
        let op_at = rest.find(['=', '!', '+', '-', ':']).expect("an operator");
        let key = rest[..op_at].trim().to_string();
        assert!(
            key.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_{}/".contains(c)),
            "bad key '{key}' in {line}"
        );
        let after = &rest[op_at..];
        let op = ["==", "!=", "+=", "-=", ":=", "="]
            .into_iter()
            .find(|o| after.starts_with(o))
            .unwrap_or_else(|| panic!("bad operator at '{after}' in {line}"));
        let after = after[op.len()..].trim_start();
        assert!(
            after.starts_with('"'),
            "unquoted value at '{after}' in {line}"
        );
        let end = after[1..].find('"').expect("closing quote") + 1;
        keys.push(UdevKey {
            key,
            op: op.to_string(),
            value: after[1..end].to_string(),
        });
        rest = after[end + 1..].trim_start();
        if let Some(r) = rest.strip_prefix(',') {
            rest = r.trim_start();
        } else {
            assert!(rest.is_empty(), "junk after a key: '{rest}' in {line}");
        }
    }
    keys
}

#[test]
fn udev_rules_parse_match_first_and_set_the_scheduler_before_iosched() {
    let dir = tempfile::tempdir().unwrap();
    let rules = export(&db_with_sweet_spot(dir.path()), "udev");
    let lines: Vec<&str> = rules
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    assert_eq!(lines.len(), 1, "{rules}");
    let keys = parse_udev_line(lines[0]);
    let first_assign = keys.iter().position(|k| k.op == "=").unwrap();
    assert!(
        keys[..first_assign].iter().all(|k| k.op == "=="),
        "matches come first: {keys:?}"
    );
    assert!(
        keys.iter()
            .any(|k| k.key == "ATTRS{wwid}" && k.value == "naa.5000c500a1b2c3d4")
    );
    let assigned: Vec<(&str, &str)> = keys[first_assign..]
        .iter()
        .map(|k| (k.key.as_str(), k.value.as_str()))
        .collect();
    assert_eq!(
        assigned,
        vec![
            ("ATTR{queue/scheduler}", "mq-deadline"),
            ("ATTR{queue/iosched/fifo_batch}", "8"),
            ("ATTR{queue/read_ahead_kb}", "256"),
        ]
    );
    // The shipped re-apply rule parses too.
    let example =
        std::fs::read_to_string(root().join("examples/udev/99-sweetspot-reapply.rules")).unwrap();
    for l in example
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let keys = parse_udev_line(l);
        assert!(
            keys.iter()
                .any(|k| k.key == "RUN" && k.op == "+=" && k.value.contains("profile apply"))
        );
    }
}

/// `--out` into directories that do not exist yet (the README's `/etc/sweetspot/profile.toml`
/// on a fresh machine): they are created, and the file is the export, mode 0644.
#[test]
fn export_out_creates_missing_directories() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let db = db_with_sweet_spot(dir.path());
    for format in ["toml", "udev", "sysctl"] {
        let out = dir.path().join(format!("etc-{format}/sweetspot/profile"));
        let st = Command::new(bin())
            .arg("--db")
            .arg(&db)
            .args(["profile", "export", "--format", format, "--out"])
            .arg(&out)
            .status()
            .unwrap();
        assert!(st.success(), "{format}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), export(&db, format));
        let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644, "{format}");
    }
}

/// tuned.conf parsed as INI (`[section]`, `key=value`, `#` comments). The disk is one named
/// by its bus path (`by_path`): TuneD's [sysfs] plugin, which matches no device, reaches
/// fifo_batch through that path, so the disk is still matched by an identity.
#[test]
fn tuned_conf_parses_as_ini_with_the_expected_sections() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_with_sweet_spot_of(dir.path(), BY_PATH);
    let out = dir.path().join("tuned-profile");
    let st = Command::new(bin())
        .arg("--db")
        .arg(&db)
        .args(["profile", "export", "--format", "tuned", "--out"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    let text = std::fs::read_to_string(out.join("tuned.conf")).unwrap();
    let mut sections: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for l in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        if let Some(name) = l.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            sections.push((name.to_string(), Vec::new()));
        } else {
            let (k, v) = l
                .split_once('=')
                .unwrap_or_else(|| panic!("not key=value: {l}"));
            sections
                .last_mut()
                .expect("a key before any section")
                .1
                .push((k.into(), v.into()));
        }
    }
    let get = |s: &str, k: &str| {
        sections
            .iter()
            .find(|(n, _)| n == s)
            .and_then(|(_, kv)| kv.iter().find(|(kk, _)| kk == k).map(|(_, v)| v.clone()))
    };
    let names: Vec<&str> = sections.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        vec!["main", "disk_sda", "sysfs_sda", "sysctl"],
        "{text}"
    );
    assert!(
        get("main", "summary")
            .unwrap()
            .starts_with("sweetspot sweet spots")
    );
    assert_eq!(get("disk_sda", "type").as_deref(), Some("disk"));
    assert_eq!(get("disk_sda", "elevator").as_deref(), Some("mq-deadline"));
    assert_eq!(get("disk_sda", "readahead").as_deref(), Some("256"));
    assert_eq!(get("sysfs_sda", "type").as_deref(), Some("sysfs"));
    assert_eq!(
        get(
            "sysfs_sda",
            "/sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/*/queue/\
             iosched/fifo_batch"
        )
        .as_deref(),
        Some("8")
    );
    assert_eq!(
        get("disk_sda", "devices_udev_regex").as_deref(),
        Some(
            "^DEVPATH=/devices/pci0000:00/0000:00:1f\\.2/ata1/host0/target0:0:0/0:0:0:0/block/\
             [^/]+$"
        )
    );
    assert_eq!(get("sysctl", "vm.dirty_ratio").as_deref(), Some("10"));
}

/// The unit `examples/systemd/<name>` as `systemd-analyze verify` sees it (with ExecStart
/// pointed at the binary under test, since verify checks that it exists): its text, after
/// asserting that verify passed without a word.
fn verified_unit(name: &str) -> String {
    let unit = std::fs::read_to_string(root().join("examples/systemd").join(name)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(
        &path,
        unit.replace("/usr/sbin/sweetspot", &bin().display().to_string()),
    )
    .unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .expect("systemd-analyze (Debian's systemd; .ci/run installs it)");
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    unit
}

#[test]
fn the_daemon_unit_passes_systemd_analyze_verify_and_the_example_config_parses() {
    let unit = verified_unit("sweetspot.service");
    assert!(unit.contains("NoNewPrivileges=yes") && unit.contains("ProtectHome=yes"));
    let p = root().join("examples/daemon.toml");
    let cfg = sweetspot::daemon::config::parse(&std::fs::read_to_string(&p).unwrap(), &p).unwrap();
    assert_eq!(
        cfg,
        sweetspot::daemon::config::DaemonConfig::default(),
        "the example shows the defaults"
    );
}

#[test]
fn the_apply_unit_passes_systemd_analyze_verify() {
    let unit = verified_unit("sweetspot-apply.service");
    assert!(unit.contains("Type=oneshot") && unit.contains("RemainAfterExit=yes"));
    assert!(unit.contains("After=local-fs.target systemd-sysctl.service"));
}

#[test]
fn the_ansible_playbook_passes_its_syntax_check() {
    let out = Command::new("ansible-playbook")
        .args(["--syntax-check", "-i", "localhost,"])
        .arg(root().join("examples/ansible/sweetspot-profile.yml"))
        .output()
        .expect("ansible-playbook (Debian's ansible-core; .ci/run installs it)");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The examples call the binary where the Debian package installs it (Cargo.toml's
/// `[package.metadata.deb]`), one path for all of them (scripts/check-deb runs the Ansible
/// play against the installed package).
#[test]
fn the_examples_call_the_packaged_binary() {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains(r#"["target/release/sweetspot", "usr/sbin/", "755"]"#),
        "the package's binary is /usr/sbin/sweetspot"
    );
    for f in [
        "systemd/sweetspot.service",
        "systemd/sweetspot-apply.service",
        "sysvinit/sweetspot-apply",
        "udev/99-sweetspot-reapply.rules",
        "ansible/sweetspot-profile.yml",
    ] {
        let text = std::fs::read_to_string(root().join("examples").join(f)).unwrap();
        assert!(text.contains("/usr/sbin/sweetspot"), "{f}");
        let others: Vec<&str> = text
            .split(|c: char| c.is_whitespace() || "\"'`=".contains(c))
            .filter(|w| w.ends_with("/sweetspot") && *w != "/usr/sbin/sweetspot")
            .filter(|w| {
                !["/etc/", "/var/lib/", "/run/"]
                    .iter()
                    .any(|p| w.starts_with(p))
            })
            .collect();
        assert!(others.is_empty(), "{f} names another binary: {others:?}");
    }
}
