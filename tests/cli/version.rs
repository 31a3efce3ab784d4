//! `sweetspot --version` names the git revision the binary was built from (build.rs), with
//! "dirty" when tracked files had changes, and nothing but the version without a repository.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

#[path = "../../build.rs"]
mod build;

use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The binary under test says what this checkout says: its version, and, when the source
/// tree is a git repository, HEAD's abbreviated hash and whether tracked files changed
/// (cargo reran build.rs for the commit and the edits this test binary was built with).
#[test]
fn version_names_the_revision_of_this_checkout() {
    let out = Command::new(assert_cmd::cargo::cargo_bin("sweetspot"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    let line = String::from_utf8(out.stdout).unwrap();
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let expected = match build::revision(here) {
        Some(r) if r.dirty => format!("sweetspot 0.1.0 (git {}, dirty)\n", r.hash),
        Some(r) => format!("sweetspot 0.1.0 (git {})\n", r.hash),
        None => "sweetspot 0.1.0\n".to_string(),
    };
    assert_eq!(line, expected);
}

#[test]
fn a_repository_gives_its_commit_and_an_edit_makes_it_dirty() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git(d, &["init", "-q"]);
    assert_eq!(build::revision(d), None, "no commit yet");
    std::fs::create_dir(d.join("src")).unwrap();
    std::fs::write(d.join("src/a.rs"), "fn main() {}\n").unwrap();
    std::fs::write(d.join("README.md"), "# a\n").unwrap();
    git(d, &["add", "src/a.rs", "README.md"]);
    git(d, &["commit", "-q", "-m", "one"]);
    let hash = git(d, &["rev-parse", "--short", "HEAD"]);
    assert_eq!(hash.len(), 7, "{hash}");
    assert_eq!(
        build::revision(d),
        Some(build::Revision {
            hash: hash.clone(),
            dirty: false
        })
    );
    // An untracked file does not count, nor an edit to a tracked file that is not compiled
    // in (the docs); an edit to a source does.
    std::fs::write(d.join("notes.txt"), "x").unwrap();
    std::fs::write(d.join("README.md"), "# b\n").unwrap();
    assert!(!build::revision(d).unwrap().dirty);
    std::fs::write(d.join("src/a.rs"), "fn main() { println!(); }\n").unwrap();
    assert_eq!(
        build::revision(d),
        Some(build::Revision { hash, dirty: true })
    );
}

/// A source tree that is not a repository's top level (a crates.io download, or a tarball
/// unpacked inside someone else's checkout) names no revision, rather than the enclosing
/// repository's.
#[test]
fn a_tree_without_its_own_repository_names_none() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(build::revision(d), None, "no repository");
    git(d, &["init", "-q"]);
    std::fs::write(d.join("a"), "a").unwrap();
    git(d, &["add", "a"]);
    git(d, &["commit", "-q", "-m", "one"]);
    let inner = d.join("unpacked/sweetspot-0.1.0");
    std::fs::create_dir_all(&inner).unwrap();
    assert_eq!(build::revision(&inner), None, "inside another repository");
    assert!(build::revision(d).is_some());
}
