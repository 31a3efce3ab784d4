//! Generated files stay well-formed for every identity: a fake disk whose model and serial
//! hold `"`, `\`, `:`, `%`, `$(…)`, `#` and `${` (and a policy and objective name holding
//! them too) exports, in every format, a file that parses back, by a reader of that format's
//! syntax, to exactly one rule/section/entry matching that disk, with no other active line;
//! the same disk with a line break in its serial, or an objective name with one, is refused
//! (exit 2, naming the field and the device).
//!
//! `udevadm verify` is not installed here (no systemd udev on this machine), so the udev rules
//! are read by [`udev_rules`], a reader of systemd's `udev-rules.c` syntax; the TuneD file by
//! [`tuned_conf`], of Python `configparser` as TuneD configures it; `sysctl.d` by
//! [`sysctl_conf`].
#![allow(clippy::unwrap_used)]

use super::build::{MatchBy, Select, build};
use super::{file, sysctl, tuned, udev};
use crate::store::Store;
use crate::testkit::tree::FakeTree;
use crate::types::{Setting, TargetInfo};

/// Every character the issue names, in a model (spaces included, as models have them).
const MODEL: &str = r#"WD "Blue" \ 2:1 50% $(touch /tmp/p) #3 ${f:exec:id}"#;
/// And in a serial.
const SERIAL: &str = r#"S"1\2:3%41$(id)#5${x}\"#;
/// A policy name and an objective name with the same characters (no line break).
const POLICY: &str = r#"p"\:%$(id)#${x}"#;
const OBJECTIVE: &str = r#"t "q" \ % $(id) # ${x} (s)"#;

fn setting(pairs: &[(&str, &str)]) -> Setting {
    pairs
        .iter()
        .map(|(k, v)| {
            let v = v.parse::<i64>().map_or_else(|_| (*v).into(), Into::into);
            (k.to_string(), v)
        })
        .collect()
}

/// Stores a significant sweet spot of `identity` (label `name`) under `policy`.
fn store_spot(store: &Store, identity: &str, name: &str, policy: &str, objective: &str) {
    let target = TargetInfo {
        label: name.into(),
        identity: identity.into(),
        kernel: "6.18.0".into(),
    };
    let tune = store.insert_tune(&target, Some(name), policy).unwrap();
    let evidence = serde_json::json!({
        "target": { "label": name },
        "objective": { "name": objective, "improvement": { "ratio": 1.5, "ci95": [1.2, 1.8] } },
        "runs": 24,
    });
    let (best, default) = if identity.starts_with("host:") {
        (
            setting(&[("dirty_ratio", "10")]),
            setting(&[("dirty_ratio", "20")]),
        )
    } else {
        (
            setting(&[("scheduler", "bfq"), ("read_ahead_kb", "1024")]),
            setting(&[("scheduler", "mq-deadline"), ("read_ahead_kb", "128")]),
        )
    };
    store
        .insert_sweet_spot(
            &target,
            policy,
            Some(tune),
            &best,
            &default,
            true,
            &evidence,
        )
        .unwrap();
    store
        .finish_tune(tune, crate::types::TuneStatus::Done)
        .unwrap();
}

/// A fake tree with disk `sdz` of `model` and `serial`, and a database with its sweet spot
/// (keyed by the identity `devices` gives it) and a host sweet spot.
fn fixture(model: &str, serial: &str, objective: &str) -> (FakeTree, tempfile::TempDir, Store) {
    let t = FakeTree::new();
    t.disk("sdz", "8:240", "none [mq-deadline] kyber bfq", 64);
    t.set("sdz", "device/model", model);
    t.set("sdz", "device/serial", serial);
    let id = crate::device::identity::identity(&t.root, "sdz");
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("p.db")).unwrap();
    store_spot(&store, &id, "sdz", POLICY, objective);
    store_spot(&store, "host:box", "box", POLICY, objective);
    (t, dir, store)
}

fn all() -> Select<'static> {
    Select {
        device: None,
        policy: None,
        by: MatchBy::Identity,
        only: None,
        export: true,
        keep: None,
    }
}

/// One token of a udev rule: key, `{attr}`, operator, value (unquoted).
type Token = (String, Option<String>, String, String);

/// The rules of a udev rules file, read as systemd's `udev-rules.c` reads them
/// (`udev_rules_parse_file`, `parse_line`, `udev_rule_parse_value`): lines end at `\n`, `\r`
/// or NUL (`read_line`); a line starting with `#` is a comment; a line ending in `\`
/// continues; a value is `"…"` (only `\"` unescaped) or `e"…"` (C escapes), optionally
/// `i`-prefixed. `Err` where udev would log "Invalid key/value pair".
fn udev_rules(text: &str) -> Result<Vec<Vec<Token>>, String> {
    let mut rules = Vec::new();
    let mut cont: Option<String> = None;
    for raw in text.split(['\n', '\r', '\0']) {
        let line = raw.trim_start_matches([' ', '\t']);
        if line.starts_with('#') {
            continue;
        }
        let mut line = match cont.take() {
            Some(c) => c + line,
            None => line.to_string(),
        };
        if line.ends_with('\\') {
            line.pop();
            cont = Some(line);
            continue;
        }
        if !line.is_empty() {
            rules.push(udev_tokens(&line)?);
        }
    }
    match cont {
        Some(_) => Err("EOF after a line continuation".into()),
        None => Ok(rules),
    }
}

fn udev_tokens(line: &str) -> Result<Vec<Token>, String> {
    let b: Vec<char> = line.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    loop {
        while i < b.len() && " \t\n\r,".contains(b[i]) {
            i += 1;
        }
        if i == b.len() {
            return Ok(out);
        }
        let start = i;
        loop {
            let c = *b.get(i).ok_or("a key without an operator")?;
            if " \t\n\r={".contains(c) || ("+-!:".contains(c) && b.get(i + 1) == Some(&'=')) {
                break;
            }
            i += 1;
        }
        let key: String = b[start..i].iter().collect();
        let attr = if b[i] == '{' {
            let end = (i..b.len()).find(|&j| b[j] == '}').ok_or("no '}'")?;
            let a: String = b[i + 1..end].iter().collect();
            i = end + 1;
            Some(a)
        } else {
            None
        };
        while i < b.len() && " \t".contains(b[i]) {
            i += 1;
        }
        let rest: String = b[i..].iter().collect();
        let op = ["==", "!=", "+=", "-=", ":=", "="]
            .into_iter()
            .find(|o| rest.starts_with(o))
            .ok_or(format!("no operator in '{rest}'"))?;
        i += op.len();
        while i < b.len() && " \t".contains(b[i]) {
            i += 1;
        }
        let (mut escaped, mut nocase) = (false, false);
        while i < b.len() && b[i] != '"' {
            match b[i] {
                'e' if !escaped => escaped = true,
                'i' if !nocase => nocase = true,
                _ => return Err(format!("a value must be quoted: '{rest}'")),
            }
            i += 1;
        }
        if b.get(i) != Some(&'"') {
            return Err("a value must be quoted".into());
        }
        i += 1;
        let mut value = String::new();
        loop {
            let c = *b.get(i).ok_or("an unterminated value")?;
            if c == '"' {
                i += 1;
                break;
            }
            if c == '\\' && escaped {
                let n = *b.get(i + 1).ok_or("an unterminated value")?;
                value.push(match n {
                    '\\' | '"' | '\'' => n,
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    _ => return Err(format!("an escape cunescape refuses: \\{n}")),
                });
                i += 2;
                continue;
            }
            if c == '\\' && !escaped && b.get(i + 1) == Some(&'"') {
                value.push('"');
                i += 2;
                continue;
            }
            value.push(c);
            i += 1;
        }
        out.push((key, attr, op.to_string(), value));
    }
}

/// `sysctl.d` (sysctl.d(5)): `(key, value)` of each active line.
fn sysctl_conf(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with(['#', ';']))
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap_or((l, ""));
            (k.trim().to_string(), v.trim().to_string())
        })
        .collect()
}

/// A section of an ini file: its name and its `(key, value)` options.
type Section = (String, Vec<(String, String)>);

/// `tuned.conf` as TuneD's loader reads it (`configparser`, `delimiters=('=')`,
/// `inline_comment_prefixes=('#')`, raw): `(section, [(key, value)])`. `Err` for a
/// continuation line, a line with no `=`, or a value TuneD would expand (`${`).
fn tuned_conf(text: &str) -> Result<Vec<Section>, String> {
    let mut out: Vec<Section> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with(['#', ';']) {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            return Err(format!("a continuation line: '{line}'"));
        }
        if let Some(s) = t.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            out.push((s.to_string(), Vec::new()));
            continue;
        }
        let (k, v) = t.split_once('=').ok_or(format!("no '=': '{line}'"))?;
        let cs: Vec<char> = v.chars().collect();
        let cut = (1..cs.len()).find(|&j| cs[j] == '#' && cs[j - 1].is_whitespace());
        let v: String = cs[..cut.unwrap_or(cs.len())].iter().collect();
        if v.contains("${") {
            return Err(format!("TuneD would expand '{v}'"));
        }
        let section = out.last_mut().ok_or("an option before any section")?;
        section.1.push((k.trim().to_string(), v.trim().to_string()));
    }
    Ok(out)
}

#[test]
fn every_format_parses_back_to_one_entry_matching_the_disk() {
    let (t, _dir, store) = fixture(MODEL, SERIAL, OBJECTIVE);
    let p = build(&store, &t.root, &all()).unwrap();
    assert_eq!(p.devices.len(), 1, "{p:?}");

    // udev: one rule, every match value exactly the disk's.
    let rules = udev::render(&p).unwrap();
    let parsed = udev_rules(&rules).unwrap_or_else(|e| panic!("{e}\n{rules}"));
    assert_eq!(parsed.len(), 1, "{rules}");
    let tok = |k: &str, a: Option<&str>| {
        parsed[0]
            .iter()
            .filter(|(key, attr, _, _)| key == k && attr.as_deref() == a)
            .map(|(_, _, op, v)| (op.as_str(), v.as_str()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        tok("ENV", Some("ID_SERIAL_SHORT")),
        [("==", SERIAL)],
        "{rules}"
    );
    assert_eq!(tok("ATTRS", Some("model")), [("==", MODEL)], "{rules}");
    assert_eq!(
        tok("ATTR", Some("queue/scheduler")),
        [("=", "bfq")],
        "{rules}"
    );
    assert_eq!(
        tok("ATTR", Some("queue/read_ahead_kb")),
        [("=", "1024")],
        "{rules}"
    );
    assert_eq!(parsed[0].len(), 7, "no other key: {rules}");
    for (_, _, op, v) in &parsed[0] {
        // Compared as plain strings: no glob, no alternative.
        assert!(op != "==" || !v.contains(['*', '?', '[', '|']) || v == "add|change");
    }

    // TuneD: [main] and one [disk_…] whose regex matches the disk's udev property exactly.
    let conf = tuned::render(&p, &t.root).unwrap();
    let parsed = tuned_conf(&conf).unwrap_or_else(|e| panic!("{e}\n{conf}"));
    let names: Vec<&str> = parsed.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(names, ["main", "disk_sdz", "sysctl"], "{conf}");
    let disk = &parsed[1].1;
    let keys: Vec<&str> = disk.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        ["type", "devices_udev_regex", "elevator", "readahead"],
        "{conf}"
    );
    let re = regex::RegexBuilder::new(&disk[1].1)
        .multi_line(true)
        .build()
        .unwrap();
    // TuneD matches the regex against the device's udev properties, `KEY=value` a line.
    let props = |serial: &str| format!("DEVTYPE=disk\nID_SERIAL_SHORT={serial}\nMAJOR=8\n");
    assert!(re.is_match(&props(SERIAL)), "{conf}");
    assert!(!re.is_match(&props(&format!("{SERIAL}x"))), "{conf}");
    assert!(!re.is_match(&props("S\"1\\2:3%A$(id)#5${x}\\")), "{conf}");
    assert_eq!(parsed[2].1, [("vm.dirty_ratio".into(), "10".into())]);

    // sysctl.d: only the host knob is active.
    let conf = sysctl::render(&p, &t.root).unwrap();
    assert_eq!(
        sysctl_conf(&conf),
        [("vm.dirty_ratio".to_string(), "10".to_string())],
        "{conf}"
    );

    // TOML: the real profile parser reads back one entry matching the disk, and every field.
    let text = p.to_toml().unwrap();
    let back = file::parse(&text, std::path::Path::new("p.toml")).unwrap();
    assert_eq!(back, p);
    assert_eq!(back.devices.len(), 1);
    let m = &back.devices[0].matches;
    assert_eq!(
        (m.model.as_deref(), m.serial.as_deref()),
        (Some(MODEL), Some(SERIAL))
    );
    assert_eq!(back.devices[0].policy, POLICY);
    let objective = back.devices[0]
        .improvement
        .as_ref()
        .unwrap()
        .objective
        .clone();
    assert_eq!(objective, OBJECTIVE);
}

#[test]
fn a_line_break_in_a_serial_or_a_name_is_refused_by_every_format() {
    let serial = "S1\n[script]\ntype=script\nscript=/tmp/evil.sh";
    let (t, _dir, store) = fixture("M", serial, "t (s)");
    let p = build(&store, &t.root, &all()).unwrap();
    assert_eq!(p.devices[0].matches.serial.as_deref(), Some(serial));
    let errors = [
        udev::render(&p).unwrap_err(),
        tuned::render(&p, &t.root).unwrap_err(),
        p.to_toml().unwrap_err(),
    ];
    for e in errors {
        assert_eq!(e.exit_code(), 2, "{e}");
        let s = e.to_string();
        assert!(
            s.contains("match.serial of sdz (") && s.contains("control character"),
            "{s}"
        );
        assert!(!s.contains('\n'), "{s}");
    }

    // The objective name of the issue's reproduction, in the host's comment.
    let (t, _dir, store) = fixture("M", "S", "latency\nkernel.core_pattern = |/tmp/evil");
    let p = build(&store, &t.root, &all()).unwrap();
    let e = sysctl::render(&p, &t.root).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.to_string()
            .contains("host.improvement.objective of the host is 'latency\\nkernel"),
        "{e}"
    );
    let e = udev::render(&p).unwrap_err().to_string();
    assert!(e.contains("improvement.objective of sdz ("), "{e}");
}
