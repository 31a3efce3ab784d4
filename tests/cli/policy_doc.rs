//! Keeps `docs/policy.md` honest: its complete examples parse, and every field the policy
//! parser accepts is documented there.
//!
//! The accepted fields are read from the parser itself: a policy table with an unknown key is
//! refused with serde's "unknown field `zzz`, expected one of `a`, `b`, …", which lists every
//! field of that table. A field added to the parser without a line in the doc fails here.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::Path;
use sweetspot::tune::policy::{self, Objective};

const DOC: &str = include_str!("../../docs/policy.md");

/// The info string that marks a fenced block of `docs/policy.md` as a complete policy.
const COMPLETE: &str = "```toml complete";

/// The bodies of the doc's fenced blocks whose info string is exactly [`COMPLETE`].
fn complete_examples() -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in DOC.lines() {
        match &mut cur {
            None if line.trim_end() == COMPLETE => cur = Some(String::new()),
            None => {}
            Some(_) if line.trim_end() == "```" => out.push(cur.take().unwrap()),
            Some(body) => {
                body.push_str(line);
                body.push('\n');
            }
        }
    }
    assert!(cur.is_none(), "an unterminated {COMPLETE} block");
    out
}

#[test]
fn every_complete_example_parses() {
    let examples = complete_examples();
    assert!(examples.len() >= 3, "{} complete examples", examples.len());
    let mut kinds = BTreeSet::new();
    for (i, text) in examples.iter().enumerate() {
        let path = format!("docs/policy.md (complete example {})", i + 1);
        let p = policy::parse(text, Path::new(&path), "doc", &path)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert!(!p.knobs.is_empty());
        kinds.insert(match p.objective {
            Objective::MinRatio { .. } => "ratio",
            Objective::MaxLoads { .. } => "loads",
            Objective::Benchmark(_) => "benchmark",
        });
    }
    // A block-device (contest) example and a user-benchmark one.
    assert!(
        kinds.contains("ratio") && kinds.contains("benchmark"),
        "{kinds:?}"
    );
}

/// The fields the parser accepts in one table, from its unknown-field error. `table` is the
/// header to put `zzz` under (empty: top level).
fn accepted(table: &str) -> BTreeSet<String> {
    let text = format!("budget = 12\n{table}\nzzz = 1\n");
    let e = policy::parse(&text, Path::new("u.toml"), "u", "u")
        .unwrap_err()
        .to_string();
    let list = e
        .split_once("expected one of ")
        .unwrap_or_else(|| panic!("{table}: {e}"))
        .1;
    let names: BTreeSet<String> = list
        .split(", ")
        .map(|s| s.trim().trim_matches('`').to_string())
        .collect();
    assert!(!names.is_empty(), "{e}");
    names
}

/// Every field, by table, as the doc describes it. Checked against the parser below.
const FIELDS: [(&str, &[&str]); 6] = [
    (
        "",
        &[
            "description",
            "loads",
            "runs",
            "budget",
            "alpha",
            "min_effect",
            "check_pairs",
            "objective",
            "benchmark",
            "knobs",
            "guard",
            "judge",
        ],
    ),
    ("[objective]", &["minimize", "maximize", "loads", "load"]),
    (
        "[benchmark]",
        &[
            "command",
            "regex",
            "json_pointer",
            "maximize",
            "minimize",
            "unit",
            "nice",
            "cpus",
            "timeout_s",
        ],
    ),
    ("[knobs.x]", &["values", "min", "max"]),
    (
        "[[guard]]",
        &["load", "metric", "min_vs_default", "max_vs_default"],
    ),
    ("[judge]", &["startup", "tolerance", "pairs"]),
];

#[test]
fn every_field_the_parser_accepts_is_documented() {
    for (table, fields) in FIELDS {
        let listed: BTreeSet<String> = fields.iter().map(|s| s.to_string()).collect();
        assert_eq!(
            accepted(table),
            listed,
            "the fields of {table:?} changed: update docs/policy.md and this list"
        );
        for f in fields {
            // A key `f`, or a table `[f]` / `[f.<name>]` / `[[f]]`.
            let shown = [format!("`{f}`"), format!("`[{f}"), format!("`[[{f}]]`")];
            assert!(
                shown.iter().any(|s| DOC.contains(s.as_str())),
                "docs/policy.md lacks `{f}`"
            );
        }
    }
    for header in [
        "`[objective]`",
        "`[benchmark]`",
        "`[knobs.<name>]`",
        "`[[guard]]`",
    ] {
        assert!(DOC.contains(header), "docs/policy.md lacks {header}");
    }
}

/// Every key of a TOML table, as `table.key` paths with array indices and knob names dropped
/// (`knobs.fifo_batch.min` → `[knobs.x].min`).
fn keys(v: &toml::Value, table: &str, out: &mut BTreeSet<(String, String)>) {
    let Some(t) = v.as_table() else { return };
    for (k, val) in t {
        out.insert((table.to_string(), k.clone()));
        let sub = match (table, k.as_str()) {
            ("", "objective") => "[objective]",
            ("", "benchmark") => "[benchmark]",
            ("", "guard") => "[[guard]]",
            ("", "knobs") => {
                for knob in val.as_table().into_iter().flat_map(|m| m.values()) {
                    keys(knob, "[knobs.x]", out);
                }
                continue;
            }
            _ => continue,
        };
        match val {
            toml::Value::Array(a) => a.iter().for_each(|g| keys(g, sub, out)),
            v => keys(v, sub, out),
        }
    }
}

#[test]
fn the_shipped_and_example_policies_use_only_documented_fields() {
    let mut files: Vec<(String, String)> = policy::BUILTIN
        .iter()
        .map(|(n, t)| (format!("policies/{n}.toml"), t.to_string()))
        .collect();
    for e in std::fs::read_dir("examples/user-benchmark").unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            files.push((
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            ));
        }
    }
    files.extend(
        complete_examples()
            .into_iter()
            .map(|t| ("docs/policy.md".to_string(), t)),
    );
    let documented: BTreeSet<(String, String)> = FIELDS
        .iter()
        .flat_map(|(t, fs)| fs.iter().map(|f| (t.to_string(), f.to_string())))
        .collect();
    let mut used = BTreeSet::new();
    for (name, text) in &files {
        let v: toml::Value = toml::from_str(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut k = BTreeSet::new();
        keys(&v, "", &mut k);
        for field in &k {
            assert!(
                documented.contains(field),
                "{name}: {field:?} is not documented"
            );
        }
        used.extend(k);
    }
    // The walk itself sees the nested tables (a broken walk would pass vacuously).
    for f in [
        ("[[guard]]", "min_vs_default"),
        ("[knobs.x]", "max"),
        ("[benchmark]", "regex"),
    ] {
        assert!(used.contains(&(f.0.to_string(), f.1.to_string())), "{f:?}");
    }
}
