//! Big profiles: reading, `verify` and `apply --dry-run` give the same results as they did
//! when every entry was compared with every other (issue 31, item 6): the indexes
//! (`file::Earlier`, `overlap::Index`) against a plain pass over all entries on random
//! profiles, and a crafted fleet profile whose overlaps and refusals name the same entries and
//! lines. No timing here: `examples/profile_scale.rs` measures.
#![allow(clippy::unwrap_used)]

use super::file::parse;
use super::model::Match;
use super::overlap::{Reach, nested};
use crate::Error;
use crate::store::Store;
use crate::testkit::tree::FakeTree;
use std::path::Path;

/// A small deterministic generator (xorshift64*): the same profiles on every run.
struct Gen(u64);

impl Gen {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }

    fn pick(&mut self, prefix: &str, n: u64) -> Option<String> {
        Some(format!("{prefix}{}", self.below(n)))
    }

    /// A match as the reader accepts it: one way of naming a disk, or a model (with or
    /// without firmware), from small alphabets so that many matches nest or repeat.
    fn matches(&mut self) -> Match {
        let mut m = Match::default();
        match self.below(5) {
            0 => m.wwid = self.pick("W", 6),
            1 => {
                m.serial = self.pick("S", 4);
                m.model = self.pick("M", 3);
            }
            2 => m.by_path = self.pick("P", 4),
            3 => m.backing_file = self.pick("/f", 4),
            _ => m.model = self.pick("M", 3),
        }
        if m.backing_file.is_none() && self.below(3) == 0 {
            m.firmware = self.pick("F", 2);
        }
        if (m.wwid.is_some() || m.by_path.is_some()) && self.below(3) == 0 {
            m.model = self.pick("M", 3);
        }
        m
    }
}

fn toml_of(m: &Match) -> String {
    m.fields()
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k} = \"{v}\"")))
        .collect::<Vec<_>>()
        .join(", ")
}

fn profile_text(matches: &[Match]) -> String {
    let mut t = String::from("version = 1\n");
    for (i, m) in matches.iter().enumerate() {
        t.push_str(&format!(
            "[[device]]\nname = \"d{i}\"\nmatch = {{ {} }}\nkernel = \"6.18.0\"\n\
             policy = \"quick\"\ntuned_at = \"2026-12-01T08:00:00Z\"\nknobs = {{ fifo_batch = 8 }}\n",
            toml_of(m)
        ));
    }
    t
}

/// The line of entry `i`'s `match` in [`profile_text`]: 7 lines per entry after `version`.
fn match_line(i: usize) -> usize {
    7 * i + 4
}

/// What reading `matches` must give, found as before the indexes: every entry against every
/// earlier one. `Ok(n)`: read, with `n` warnings; `Err((entry, message))`: the first refusal.
fn reference(matches: &[Match]) -> Result<usize, (usize, String)> {
    let mut warnings = 0;
    for (i, m) in matches.iter().enumerate() {
        if let Some(j) = matches[..i].iter().position(|e| e == m) {
            return Err((i, format!("the same match as device[{j}]")));
        }
        for (j, e) in matches[..i].iter().enumerate() {
            let at = format!(" (line {})", match_line(j));
            if let Some((refuse, msg)) = nested(i, m, j, e, &at) {
                if refuse {
                    return Err((i, msg));
                }
                warnings += 1;
            }
        }
    }
    Ok(warnings)
}

#[test]
fn reading_random_profiles_refuses_and_warns_as_a_pass_over_every_entry_does() {
    let mut g = Gen(0x9E37_79B9_7F4A_7C15);
    let (mut refused, mut read) = (0, 0);
    for round in 0..300 {
        let n = 2 + g.below(16) as usize;
        let matches: Vec<Match> = (0..n).map(|_| g.matches()).collect();
        let text = profile_text(&matches);
        let got = parse(&text, Path::new("p.toml"));
        match (reference(&matches), got) {
            (Ok(_), Ok(p)) => {
                read += 1;
                let lines: Vec<Option<usize>> = (0..n).map(|i| Some(match_line(i))).collect();
                assert_eq!(p.origin.unwrap().match_lines, lines, "round {round}");
            }
            (
                Err((i, msg)),
                Err(Error::BadFile {
                    line,
                    field,
                    msg: m,
                    ..
                }),
            ) => {
                refused += 1;
                assert_eq!(line, Some(match_line(i)), "round {round}: {m}");
                assert_eq!(field, format!("device[{i}].match"), "round {round}");
                assert!(m.starts_with(&msg), "round {round}: {m} vs {msg}");
            }
            (want, got) => panic!("round {round}: want {want:?}, got {got:?}\n{text}"),
        }
    }
    assert!(
        refused > 50 && read > 50,
        "both sides tried: {refused} {read}"
    );
}

#[test]
fn the_index_of_earlier_entries_finds_every_one_a_match_nests_with() {
    let mut g = Gen(0x2545_F491_4F6C_DD1D);
    let mut checked = 0;
    for round in 0..200 {
        let mut matches: Vec<Match> = Vec::new();
        for _ in 0..60 {
            let m = g.matches();
            if !matches.contains(&m) {
                matches.push(m);
            }
        }
        let mut earlier = super::file::Earlier::default();
        for (i, m) in matches.iter().enumerate() {
            let want: Vec<usize> = (0..i)
                .filter(|&j| nested(i, m, j, &matches[j], "").is_some())
                .collect();
            let got = earlier.related(m);
            assert!(
                want.iter().all(|j| got.contains(j)),
                "round {round}, entry {i}: {want:?} not all in {got:?}"
            );
            assert_eq!(earlier.same(m), None);
            checked += want.len();
            earlier.add(i, m);
            assert_eq!(earlier.same(m), Some(i));
        }
    }
    assert!(checked > 1000, "nesting pairs seen: {checked}");
}

/// Entries on a fake tree with `disks` disks, whose `match`es are read back through the same
/// facts as `resolve` uses.
#[test]
fn resolve_on_random_profiles_picks_as_a_pass_over_every_entry_does() {
    let t = FakeTree::new();
    let disks = [
        (
            "sda",
            "8:0",
            &[("device/wwid", "W1"), ("device/model", "M1")][..],
        ),
        (
            "sdb",
            "8:16",
            &[
                ("device/model", "M2"),
                ("device/serial", "S3"),
                ("device/rev", "F1"),
            ],
        ),
        (
            "sdc",
            "8:32",
            &[("device/model", "M0"), ("device/rev", "F0")],
        ),
        ("sdd", "8:48", &[("wwid", "W4"), ("device/model", "M0")]),
    ];
    for (name, dev, files) in disks {
        t.disk(name, dev, "none [mq-deadline] kyber bfq", 64);
        for (rel, v) in files {
            t.set(name, rel, v);
        }
    }
    let present = crate::device::list(&t.root).unwrap();
    let facts: Vec<_> = present
        .iter()
        .map(|d| super::facts::DiskFacts::of(&t.root, d))
        .collect();
    let mut g = Gen(0xD1B5_4A32_D192_ED03);
    let (mut ties, mut resolved) = (0, 0);
    for round in 0..300 {
        let n = 1 + g.below(30) as usize;
        let profile = super::Profile {
            version: super::model::VERSION,
            devices: (0..n)
                .map(|i| super::DeviceEntry {
                    name: format!("d{i}"),
                    matches: g.matches(),
                    kernel: "6.18.0".into(),
                    policy: "quick".into(),
                    tuned_at: "2026-12-01T08:00:00Z".into(),
                    improvement: None,
                    knobs: Default::default(),
                    baseline: Default::default(),
                    also: Vec::new(),
                })
                .collect(),
            host: None,
            origin: None,
        };
        let got = super::overlap::resolve(&t.root, &present, &profile, None);
        // The reference: per disk, every entry; the narrowest applies, a tie is refused.
        let mut want_targets = Vec::new();
        let mut want_matched = vec![false; n];
        let mut tie = false;
        for (dev, f) in present.iter().zip(&facts) {
            let hits: Vec<usize> = (0..n)
                .filter(|&i| f.matches(&profile.devices[i].matches))
                .collect();
            for &i in &hits {
                want_matched[i] = true;
            }
            let Some(top) = hits
                .iter()
                .map(|&i| Reach::of(&profile.devices[i].matches))
                .max()
            else {
                continue;
            };
            let best: Vec<usize> = hits
                .iter()
                .copied()
                .filter(|&i| Reach::of(&profile.devices[i].matches) == top)
                .collect();
            if best.len() > 1 {
                tie = true;
                break;
            }
            want_targets.push((best[0], dev.name.clone()));
        }
        match got {
            Err(e) => {
                assert!(tie, "round {round}: {e}");
                ties += 1;
            }
            Ok(r) => {
                assert!(!tie, "round {round}");
                resolved += 1;
                want_targets.sort();
                let got: Vec<(usize, String)> = r
                    .targets
                    .iter()
                    .map(|(i, d)| (*i, d.name.clone()))
                    .collect();
                assert_eq!(got, want_targets, "round {round}");
                assert_eq!(r.matched, want_matched, "round {round}");
            }
        }
    }
    assert!(
        ties > 20 && resolved > 20,
        "both sides tried: {ties} {resolved}"
    );
}

/// A fleet profile of 3,000 entries, the disks of this machine among them near its end:
/// `verify` and `apply --dry-run` name the same overlaps, entries and lines as always, and a
/// tie between two one-disk entries far apart is refused naming both lines.
#[test]
fn a_big_fleet_profile_keeps_its_overlaps_refusals_and_lines() {
    let t = FakeTree::new();
    t.mq_deadline_disk(); // sda: wwid naa.5000c500a1b2c3d4, model ST2000DM008
    t.disk("sdb", "8:16", "none [mq-deadline] kyber bfq", 64)
        .set("sdb", "device/model", "WDC WD10EZEX")
        .set("sdb", "device/serial", "WD-WCC6Y1234567")
        .set("sdb", "device/rev", "01.01A01");
    let n = 3000;
    let mut matches: Vec<Match> = (0..n)
        .map(|i| Match {
            wwid: Some(format!("naa.{i:016x}")),
            ..Match::default()
        })
        .collect();
    let model = |m: &str, fw: Option<&str>| Match {
        model: Some(m.into()),
        firmware: fw.map(Into::into),
        ..Match::default()
    };
    matches[10] = model("WDC WD10EZEX", None);
    matches[2990] = model("WDC WD10EZEX", Some("01.01A01"));
    matches[1500] = model("ST2000DM008", None);
    matches[2999] = Match {
        wwid: Some("naa.5000c500a1b2c3d4".into()),
        ..Match::default()
    };
    let text = profile_text(&matches);
    let p = parse(&text, Path::new("fleet.toml")).unwrap();
    let v = super::verify::verify(&t.root, &p).unwrap();
    let messages: Vec<&str> = v.overlaps.iter().map(|o| o.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            format!(
                "sda: 2 profile entries match it: device[2999] (line {}, wwid \
                 naa.5000c500a1b2c3d4) applies, not device[1500] (line {}, model ST2000DM008): \
                 the narrowest match applies (one disk over model alone)",
                match_line(2999),
                match_line(1500)
            ),
            format!(
                "sdb: 2 profile entries match it: device[2990] (line {}, model WDC WD10EZEX \
                 firmware 01.01A01) applies, not device[10] (line {}, model WDC WD10EZEX): the \
                 narrowest match applies (model and firmware over model alone)",
                match_line(2990),
                match_line(10)
            ),
        ]
    );
    let absent = v.rows.iter().filter(|r| r.status == "absent").count();
    assert_eq!(absent, n - 4, "every entry but the four matching a disk");
    let on: Vec<(&str, &str)> = v
        .rows
        .iter()
        .filter(|r| r.status != "absent")
        .map(|r| (r.device.as_str(), r.status))
        .collect();
    assert_eq!(on, [("sdb", "drift"), ("sda", "drift")], "in file order");

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let mut store = Store::open(&db).unwrap();
    let out = super::apply::apply(&mut store, &t.root, &db, &p, None, true, "test").unwrap();
    let applied: Vec<(&str, Option<&str>)> = out
        .iter()
        .filter(|o| o.device.is_some())
        .map(|o| (o.entry.as_str(), o.device.as_deref()))
        .collect();
    assert_eq!(applied, [("d2990", Some("sdb")), ("d2999", Some("sda"))]);
    assert_eq!(out.len(), n - 4 + 2);

    // A second one-disk entry for sda, 2,000 entries before the other: refused when read
    // (it narrows nothing and is as narrow), naming both lines.
    matches[999] = Match {
        wwid: Some("naa.5000c500a1b2c3d4".into()),
        model: Some("ST2000DM008".into()),
        ..Match::default()
    };
    let e = parse(&profile_text(&matches), Path::new("fleet.toml")).unwrap_err();
    let Error::BadFile {
        line, field, msg, ..
    } = e
    else {
        panic!("{e}")
    };
    assert_eq!(
        (line, field.as_str()),
        (Some(match_line(2999)), "device[2999].match")
    );
    assert_eq!(
        msg,
        format!(
            "wwid naa.5000c500a1b2c3d4 and device[999]'s (line {}) wwid naa.5000c500a1b2c3d4 \
             model ST2000DM008 can match the same disk, and neither is narrower (both name one \
             disk): give a disk one entry",
            match_line(999)
        )
    );
}
