//! Names the git revision the binary is built from, for `sweetspot --version`
//! (`sweetspot 0.1.0 (git e5970a2)`, `(git e5970a2, dirty)` when a tracked file of what is
//! compiled in, [`SOURCES`], had changes):
//! sets `SWEETSPOT_REVISION` to that suffix, or to nothing when git or the repository is
//! absent (a build from crates.io, or from an unpacked source tarball, even one unpacked
//! inside some other repository). tests/cli/version.rs runs [`revision`] on scratch repositories.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let rev = revision(&dir);
    let suffix = match &rev {
        Some(r) if r.dirty => format!(" (git {}, dirty)", r.hash),
        Some(r) => format!(" (git {})", r.hash),
        None => String::new(),
    };
    println!("cargo:rustc-env=SWEETSPOT_REVISION={suffix}");
    // Run again when the commit changes or a tracked file of [`SOURCES`] does (an edit
    // makes the binary's sources dirty; it rebuilds the crate anyway). Not on the index or
    // the docs: a `git status` or a README edit must not rebuild the crate. Without a
    // repository, nothing is named: cargo then reruns it when any file of the package changes.
    if rev.is_some() {
        for p in git_files(&dir) {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
}

/// What is compiled into the binary, as git pathspecs: "dirty" means one of these differs
/// from the commit.
pub const SOURCES: [&str; 5] = ["src", "build.rs", "Cargo.toml", "Cargo.lock", "policies"];

/// A commit and whether the work tree differed from it.
#[derive(Debug, PartialEq)]
pub struct Revision {
    /// The abbreviated commit hash (`git rev-parse --short HEAD`).
    pub hash: String,
    /// True when a tracked file of [`SOURCES`] differed from the commit (staged or not;
    /// untracked files and other files, such as the docs, do not count).
    pub dirty: bool,
}

/// `git` run in `dir` with optional locks off (a build must not write the repository's
/// index); its trimmed stdout when it succeeded.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The revision of the repository whose top level is `dir`; `None` when git is missing,
/// `dir` is in no repository, or only inside one that starts above it (a source tarball
/// unpacked in someone else's checkout is not that checkout's commit), or it has no commit.
pub fn revision(dir: &Path) -> Option<Revision> {
    let top = PathBuf::from(git(dir, &["rev-parse", "--show-toplevel"])?);
    if top.canonicalize().ok()? != dir.canonicalize().ok()? {
        return None;
    }
    let hash = git(dir, &["rev-parse", "--short", "HEAD"])?;
    let mut args = vec!["status", "--porcelain", "--untracked-files=no", "--"];
    args.extend(SOURCES);
    let status = git(dir, &args)?;
    Some(Revision {
        hash,
        dirty: !status.is_empty(),
    })
}

/// The files whose change means another revision or dirty state: the repository's HEAD, the
/// branch's ref and packed-refs (in a worktree, HEAD is its own and the refs the common
/// repository's), and every tracked file of [`SOURCES`]. Empty without a repository.
fn git_files(dir: &Path) -> Vec<PathBuf> {
    let (Some(own), Some(common)) = (
        git(dir, &["rev-parse", "--absolute-git-dir"]),
        git(dir, &["rev-parse", "--git-common-dir"]),
    ) else {
        return Vec::new();
    };
    let own = PathBuf::from(own);
    let common = dir.join(common);
    let mut files = vec![own.join("HEAD"), common.join("packed-refs")];
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        files.push(common.join(branch));
    }
    let mut files: Vec<PathBuf> = files.into_iter().filter(|p| p.exists()).collect();
    // A deleted tracked file stays named: cargo reruns this while it is missing (dirty).
    let mut args = vec!["ls-files", "-z", "--"];
    args.extend(SOURCES);
    if let Some(tracked) = git(dir, &args) {
        files.extend(
            tracked
                .split('\0')
                .filter(|f| !f.is_empty())
                .map(|f| dir.join(f)),
        );
    }
    files
}
