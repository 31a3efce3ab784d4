//! Keeps `ARCHITECTURE.md` (and the code names in `docs/solver.md` and `docs/DESIGN.md`)
//! true to the code: code moves, and a map that names files and functions that are gone
//! misleads the newcomer it is written for.
//!
//! The docs name code in one notation, inside backticks: `src/FILE.rs` for a file,
//! `src/DIR/` for a folder, and `src/FILE.rs::name` for a function, type, trait, constant or
//! static defined in that file (a method counts: `fn name` anywhere in the file). This test
//! finds every such name and fails, listing each one with its line, when the file or folder
//! does not exist or the file does not define the name. A Rust path from one of the crate's
//! top-level modules (`knob::apply`, `tune::solver::BayesOpt`, as the design's sketch names
//! them) must resolve too: its modules have files, and its last segment is a module or an item
//! its parent defines or re-exports. It also checks that every relative Markdown link of
//! `ARCHITECTURE.md` points at a file that exists.

use std::path::Path;

/// The documents checked, relative to the crate root.
const DOCS: &[&str] = ["ARCHITECTURE.md", "docs/solver.md", "docs/DESIGN.md"].as_slice();

/// The keywords that start an item definition a doc may name after `::`.
const ITEM_KEYWORDS: &[&str] = &["fn", "struct", "enum", "trait", "type", "const", "static"];

/// One code reference found in a doc: a path under `src/` and, optionally, an item name.
#[derive(Debug, PartialEq, Eq)]
struct CodeRef {
    /// 1-based line in the doc.
    line: usize,
    /// `src/...rs` or `src/.../`.
    path: String,
    /// The name after `::`, if any.
    item: Option<String>,
}

/// The contents of the inline code spans (single backticks) of `line`.
fn code_spans(line: &str) -> Vec<&str> {
    line.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s)
        .collect()
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every code reference in the Markdown text `doc` (fenced blocks are skipped: they hold
/// diagrams and examples, not references).
fn code_refs(doc: &str) -> Vec<CodeRef> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in doc.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for span in code_spans(line) {
            let span = span.trim();
            if !span.starts_with("src/") {
                continue;
            }
            let (path, item) = match span.split_once("::") {
                Some((p, name)) => (p, Some(name.to_string())),
                None => (span, None),
            };
            // A span like `src/cli/` names a folder; `src/x.rs` a file; anything else
            // (`src/...` prose) is not a reference in our notation.
            let is_file = path.ends_with(".rs")
                && path
                    .chars()
                    .all(|c| is_ident_char(c) || c == '/' || c == '.');
            let is_dir = path.ends_with('/') && item.is_none();
            if is_file || is_dir {
                out.push(CodeRef {
                    line: i + 1,
                    path: path.to_string(),
                    item,
                });
            }
        }
    }
    out
}

/// True when Rust source `text` defines `name` (`fn name`, `struct name`, … with `name`
/// ending at a non-identifier character), outside comment lines.
fn defines(text: &str, name: &str) -> bool {
    text.lines()
        .map(str::trim_start)
        .filter(|l| !l.starts_with("//"))
        .any(|l| {
            ITEM_KEYWORDS.iter().any(|kw| {
                let pat = format!("{kw} {name}");
                l.match_indices(&pat).any(|(at, _)| {
                    let before = l[..at].chars().next_back();
                    let after = l[at + pat.len()..].chars().next();
                    !before.is_some_and(is_ident_char) && !after.is_some_and(is_ident_char)
                })
            })
        })
}

/// The crate's top-level modules (`pub mod NAME;` in `src/lib.rs`).
fn top_modules(root: &Path) -> Vec<String> {
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap_or_default();
    lib.lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';').to_string())
        .collect()
}

/// The Rust paths of `doc` that start at one of the crate's top-level modules (`knob::apply`,
/// `tune::solver::BayesOpt`), fenced blocks included (the design's sketch is one), with their
/// lines.
fn rust_paths(doc: &str, modules: &[String]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in doc.lines().enumerate() {
        let chars: Vec<char> = line.chars().collect();
        let mut at = 0;
        while at < chars.len() {
            let starts = (at == 0
                || !(is_ident_char(chars[at - 1]) || ":/.".contains(chars[at - 1])))
                && is_ident_char(chars[at]);
            if !starts {
                at += 1;
                continue;
            }
            let mut end = at;
            loop {
                while end < chars.len() && is_ident_char(chars[end]) {
                    end += 1;
                }
                let more = end + 2 < chars.len()
                    && chars[end] == ':'
                    && chars[end + 1] == ':'
                    && is_ident_char(chars[end + 2]);
                if !more {
                    break;
                }
                end += 2;
            }
            let path: String = chars[at..end].iter().collect();
            let first = path.split("::").next().unwrap_or_default();
            if path.contains("::") && modules.iter().any(|m| m == first) {
                out.push((i + 1, path));
            }
            at = end.max(at + 1);
        }
    }
    out
}

/// The file of module path `mods` (`["tune", "solver"]`): `src/tune/solver.rs` or
/// `src/tune/solver/mod.rs`, whichever exists.
fn module_file(root: &Path, mods: &[&str]) -> Option<std::path::PathBuf> {
    let base = root.join("src").join(mods.join("/"));
    [base.with_extension("rs"), base.join("mod.rs")]
        .into_iter()
        .find(|p| p.is_file())
}

/// Why Rust path `path` does not resolve under `root`, or `None` when it does: each segment
/// but the last is a module with a file; the last is a module too, or an item its parent
/// defines or re-exports (`pub use ...NAME`).
fn unresolved(root: &Path, path: &str) -> Option<String> {
    let segs: Vec<&str> = path.split("::").collect();
    let (last, mods) = segs.split_last()?;
    let Some(file) = module_file(root, mods) else {
        return Some(format!("no module {}", mods.join("::")));
    };
    if module_file(root, &segs).is_some() {
        return None;
    }
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let reexported = text
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("pub use "))
        .any(|l| {
            l.split(|c: char| !is_ident_char(c))
                .any(|word| word == *last)
        });
    match defines(&text, last) || reexported {
        true => None,
        false => Some(format!(
            "{} neither defines nor re-exports `{last}`",
            file.strip_prefix(root).unwrap_or(&file).display()
        )),
    }
}

/// The relative Markdown link targets of `doc` (`[text](target)`), with their lines;
/// web addresses and in-page anchors are left out.
fn relative_links(doc: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in doc.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = rest[..end].split('#').next().unwrap_or_default();
            if !target.is_empty() && !target.contains("://") {
                out.push((i + 1, target.to_string()));
            }
            rest = &rest[end..];
        }
    }
    out
}

/// The problems of `doc` (named `doc_name`) against the source tree at `root`: one line
/// each, naming the doc's line and the reference.
fn problems(root: &Path, doc_name: &str, doc: &str) -> Vec<String> {
    let mut out = Vec::new();
    for r in code_refs(doc) {
        let file = root.join(&r.path);
        let name = r
            .item
            .as_deref()
            .map(|n| format!("::{n}"))
            .unwrap_or_default();
        let at = format!("{doc_name}:{}: `{}{name}`", r.line, r.path);
        if r.path.ends_with('/') {
            if !file.is_dir() {
                out.push(format!("{at}: no such folder"));
            }
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            out.push(format!("{at}: no such file"));
            continue;
        };
        if let Some(name) = &r.item
            && !defines(&text, name)
        {
            out.push(format!("{at}: {} defines no `{name}`", r.path));
        }
    }
    for (line, path) in rust_paths(doc, &top_modules(root)) {
        if let Some(why) = unresolved(root, &path) {
            out.push(format!("{doc_name}:{line}: `{path}`: {why}"));
        }
    }
    out
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_file_and_function_the_docs_name_exists() {
    let mut all = Vec::new();
    for name in DOCS {
        let doc = std::fs::read_to_string(root().join(name))
            .unwrap_or_else(|e| panic!("reading {name}: {e}"));
        all.extend(problems(root(), name, &doc));
    }
    assert!(
        all.is_empty(),
        "the docs name code that is not there (update the doc to today's names):\n{}",
        all.join("\n")
    );
}

#[test]
fn the_architecture_walks_name_their_functions() {
    // The notation must actually be used: a parser that found nothing would pass the test
    // above for nothing. The two walks alone name more than 40 functions.
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let refs = code_refs(&doc);
    let items = refs.iter().filter(|r| r.item.is_some()).count();
    assert!(items >= 40, "ARCHITECTURE.md names only {items} items");
    for needed in [
        "src/cli/set.rs::run",
        "src/knob/apply.rs::apply_with",
        "src/store/journal.rs::journal_record",
        "src/cli/restore.rs::run",
        "src/tune/solver.rs::next_iter",
        "src/tune/evaluator.rs::trial_part",
        "src/store/trials.rs::insert_run",
    ] {
        let (path, item) = needed.split_once("::").unwrap();
        assert!(
            refs.iter()
                .any(|r| r.path == path && r.item.as_deref() == Some(item)),
            "ARCHITECTURE.md does not name {needed}"
        );
    }
}

#[test]
fn the_architecture_links_point_at_files() {
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let missing: Vec<String> = relative_links(&doc)
        .into_iter()
        .filter(|(_, t)| !root().join(t).exists())
        .map(|(line, t)| format!("ARCHITECTURE.md:{line}: link to {t}: no such file"))
        .collect();
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn a_gone_file_or_function_is_reported_with_its_line() {
    let doc = "intro\n\
               `src/knob/apply.rs::apply_with` and `src/knob/apply.rs::no_such_fn`\n\
               ```\n`src/in_a_fence.rs`\n```\n\
               `src/no_such_file.rs`, `src/no_such_dir/`, `src/knob/`, `src/error.rs::Error`\n\
               `src/knob/apply.rs::apply_with_more`\n";
    let got = problems(root(), "T.md", doc);
    assert_eq!(
        got,
        vec![
            "T.md:2: `src/knob/apply.rs::no_such_fn`: src/knob/apply.rs defines no `no_such_fn`",
            "T.md:6: `src/no_such_file.rs`: no such file",
            "T.md:6: `src/no_such_dir/`: no such folder",
            "T.md:7: `src/knob/apply.rs::apply_with_more`: src/knob/apply.rs defines no \
             `apply_with_more`",
        ]
    );
}

#[test]
fn a_rust_path_that_is_gone_is_reported() {
    let doc = "```\n  tune::Optimiser ──► bench::Testbed\n  knob::Sysfs, knob::apply, \
               store::Store\n```\nnot a path: `src/knob/apply.rs::apply_with`, Part::Loaded\n";
    assert_eq!(
        problems(root(), "D.md", doc),
        vec![
            "D.md:2: `tune::Optimiser`: src/tune/mod.rs neither defines nor re-exports `Optimiser`",
            "D.md:3: `knob::Sysfs`: src/knob/mod.rs neither defines nor re-exports `Sysfs`",
        ]
    );
}

#[test]
fn definitions_are_told_from_mentions() {
    let src = "pub fn apply_with(x: u8) {}\n    fn device(&mut self) {}\n\
               // fn in_comment() {}\nlet y = apply(3);\npub static FACTS: &[u8] = &[];\n";
    assert!(defines(src, "apply_with"));
    assert!(defines(src, "device"));
    assert!(defines(src, "FACTS"));
    assert!(!defines(src, "apply"), "a call is not a definition");
    assert!(!defines(src, "in_comment"), "a comment is not a definition");
    assert!(!defines(src, "apply_wit"), "a prefix is not the name");
}
