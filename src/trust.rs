//! Who may have written a file that can make root write a knob or run a command.
//!
//! sweetspot runs as root. A policy can name a `[benchmark] command` that root runs; a policy,
//! a profile, the daemon's config and the database choose which knobs root writes and to what.
//! So, when sweetspot runs as root (euid 0), each such file, and every directory above it,
//! must be one that only root (or, for a file the admin names on the command line, its owner)
//! could have written. The rule has two strengths ([`Origin`]), and is stated for admins in
//! `SECURITY.md`:
//!
//! - [`Origin::System`]: a file read unattended or from a default path (`daemon.toml`,
//!   `/etc/sweetspot/policies/` and its files, the database and its directory, a profile
//!   applied at boot, every file the daemon reads). It must be owned by root, and neither it
//!   nor any directory above it may be writable by a group other than root's (gid 0) or by
//!   everyone (a directory with the sticky bit, like `/tmp`, is allowed: others cannot
//!   replace what is in it), and every directory above it must be owned by root.
//! - [`Origin::Named`]: a file the admin names on the command line under `sudo` (`tune
//!   --policy FILE`, `--db FILE`). It may be the admin's own: owned by root or by the user
//!   who ran the command (`invoker`: `SUDO_UID` under sudo, else the real uid), and no one
//!   else; not writable by a group other than root's nor by everyone; every directory above
//!   it owned by root or that user and writable by no one else (sticky directories allowed,
//!   as above). A file of a third user is refused even when the admin names it: its owner
//!   could change it between two runs.
//!
//! The file checked is the one read: `open` opens it once (non-blocking, so a FIFO cannot
//! hang root) and checks that open file's metadata (a regular file; no swap between check
//! and read), then checks the directories above its canonical path. `check_path`, for a
//! file another library opens, refuses a symbolic link whose owner is not allowed, or that
//! points at nothing (root would create its target). This is the rule OpenSSH's `StrictModes` applies to `authorized_keys`
//! (`auth.c`, `secure_filename`), with sudo's view of the command line's files.
//!
//! Run by a user other than root, sweetspot can write no kernel knob and runs commands as
//! that user, so only a world-writable file is refused (anyone could change what it does).

use crate::{Error, Result};
use std::fs::{File, Metadata};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Where a file root acts on comes from, which decides who may have written it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Read unattended or from a default path: root-owned, written by root alone.
    System,
    /// Named by the admin on the command line: root's or the admin's own (`invoker`),
    /// written by its owner alone.
    Named,
}

/// Mode bits: group write, world write, sticky.
const G_W: u32 = 0o020;
const O_W: u32 = 0o002;
const STICKY: u32 = 0o1000;

/// Opens `path` for reading and checks, on the open file, that it obeys `origin`'s rule (see
/// the module doc); `what` names the file in errors (`policy`, `daemon config`, `profile`).
/// Errors: [`Error::BadInput`] (exit 2) naming the file, its owner and mode and the `chown` /
/// `chmod` that fixes it; or the open's own error (as [`Error::BadInput`]: a file the user
/// named that cannot be read).
pub(crate) fn open(path: &Path, what: &str, origin: Origin) -> Result<File> {
    open_as(path, what, origin, invoker())
}

/// [`open`] for the admin `admin` (a uid: who may own a [`Origin::Named`] file).
fn open_as(path: &Path, what: &str, origin: Origin, admin: u32) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: opening a FIFO for reading would wait for a writer; O_NOCTTY: a terminal
    // named here must not become root's controlling terminal. Neither changes how a regular
    // file reads.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| bad(what, path, &e.to_string()))?;
    let meta = f.metadata().map_err(|e| bad(what, path, &e.to_string()))?;
    if meta.is_dir() {
        return Err(bad(what, path, "is a directory, not a file"));
    }
    if !meta.is_file() {
        return Err(bad(
            what,
            path,
            "is not a regular file (a FIFO, a socket or a device): refused",
        ));
    }
    check_meta(path, path, &meta, what, origin, admin)?;
    let canon = std::fs::canonicalize(path).map_err(|e| bad(what, path, &e.to_string()))?;
    check_dirs_above(path, &canon, what, origin, admin)?;
    Ok(f)
}

/// [`open`], then the whole file as UTF-8 text. Errors: those of [`open`], and a read error or
/// text that is not UTF-8 ([`Error::BadInput`]).
pub(crate) fn read_to_string(path: &Path, what: &str, origin: Origin) -> Result<String> {
    use std::io::Read;
    let mut f = open(path, what, origin)?;
    let mut text = String::new();
    f.read_to_string(&mut text)
        .map_err(|e| bad(what, path, &e.to_string()))?;
    Ok(text)
}

/// Checks a path that another library opens itself (the SQLite database): the file when it
/// exists (its metadata, not following a final symlink's target's directories twice), and the
/// directories above it (or above where it will be created). Errors: as [`open`].
pub(crate) fn check_path(path: &Path, what: &str, origin: Origin) -> Result<()> {
    check_path_as(path, what, origin, invoker())
}

/// [`check_path`] for the admin `admin` (see [`open_as`]).
fn check_path_as(path: &Path, what: &str, origin: Origin, admin: u32) -> Result<()> {
    let abs = std::path::absolute(path).map_err(|e| bad(what, path, &e.to_string()))?;
    if let Ok(link) = std::fs::symlink_metadata(&abs)
        && link.file_type().is_symlink()
    {
        // SQLite follows a symbolic link: its owner chose where root reads and writes.
        if std::fs::metadata(&abs).is_err() {
            return Err(bad(
                what,
                path,
                "is a symbolic link to nothing: root would create its target; refused",
            ));
        }
        // A link's own mode means nothing (always 0777): only its owner counts.
        let allowed = link.uid() == 0 || (origin == Origin::Named && link.uid() == admin);
        if is_root() && !allowed {
            return Err(refuse(
                what,
                path,
                &link,
                &format!(
                    "it is a symbolic link owned by {}, who chose where it points",
                    user_name(link.uid())
                ),
                &format!("replace the link {} by the file itself", path.display()),
            ));
        }
    }
    match std::fs::metadata(&abs) {
        Ok(meta) => {
            check_meta(path, path, &meta, what, origin, admin)?;
            let canon = std::fs::canonicalize(&abs).map_err(|e| bad(what, path, &e.to_string()))?;
            check_dirs_above(path, &canon, what, origin, admin)
        }
        Err(_) => {
            // Not there yet: the directory it will be created in, and those above it.
            let Some(parent) = existing_ancestor(&abs) else {
                return Ok(());
            };
            let meta =
                std::fs::metadata(&parent).map_err(|e| bad(what, &parent, &e.to_string()))?;
            check_meta(path, &parent, &meta, what, origin, admin)?;
            check_dirs_above(path, &parent, what, origin, admin)
        }
    }
}

/// The admin who ran this command, a uid: under `sudo`, `SUDO_UID` (sudo sets it to the
/// invoking user's uid, sudo(8) "ENVIRONMENT"); else the real uid. Only root's own
/// environment can set it for a root process, so it tells whose files the admin may name.
pub(crate) fn invoker() -> u32 {
    let real = nix::unistd::getuid().as_raw();
    if real != 0 {
        return real;
    }
    std::env::var("SUDO_UID")
        .ok()
        .and_then(|u| u.trim().parse().ok())
        .unwrap_or(0)
}

/// True when sweetspot runs as root (euid 0): the rule applies in full.
pub(crate) fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// The nearest existing ancestor directory of `path` (itself excluded), canonicalised.
fn existing_ancestor(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .skip(1)
        .find(|a| a.is_dir())
        .and_then(|a| std::fs::canonicalize(a).ok())
}

/// Checks one file or directory's own metadata. `file`: the file it is for (named first in a
/// refusal); `path`: the one checked (`file` itself, a symbolic link to it, or a directory
/// above it). `admin`: the uid that may own what [`Origin::Named`] checks, besides root.
fn check_meta(
    file: &Path,
    path: &Path,
    meta: &Metadata,
    what: &str,
    origin: Origin,
    admin: u32,
) -> Result<()> {
    let mode = meta.permissions().mode();
    let sticky_dir = meta.is_dir() && mode & STICKY != 0;
    let subject = if meta.is_dir() {
        format!("directory {} above it", path.display())
    } else {
        "it".to_string()
    };
    if mode & O_W != 0 && !sticky_dir {
        return Err(refuse(
            what,
            file,
            meta,
            &format!("{subject} is world-writable"),
            &format!("chmod o-w {}", path.display()),
        ));
    }
    if !is_root() {
        return Ok(());
    }
    if mode & G_W != 0 && meta.gid() != 0 && !sticky_dir {
        return Err(refuse(
            what,
            file,
            meta,
            &format!("{subject} is writable by group {}", group_name(meta.gid())),
            &format!("chmod g-w {}", path.display()),
        ));
    }
    let owner_ok = match origin {
        Origin::System => meta.uid() == 0,
        Origin::Named => meta.uid() == 0 || meta.uid() == admin,
    };
    if !owner_ok {
        let who = match origin {
            Origin::System => "root".to_string(),
            Origin::Named if admin == 0 => "root (no sudo user: SUDO_UID unset)".to_string(),
            Origin::Named => format!("root or {}, who ran this", user_name(admin)),
        };
        return Err(refuse(
            what,
            file,
            meta,
            &format!("{subject} is owned by {}, not {who}", user_name(meta.uid())),
            &format!("chown root {}", path.display()),
        ));
    }
    Ok(())
}

/// Checks every directory above `canon` (a canonical path), up to `/`.
fn check_dirs_above(
    file: &Path,
    canon: &Path,
    what: &str,
    origin: Origin,
    admin: u32,
) -> Result<()> {
    for dir in canon.ancestors().skip(1) {
        let meta = std::fs::metadata(dir).map_err(|e| bad(what, dir, &e.to_string()))?;
        check_meta(file, dir, &meta, what, origin, admin)?;
    }
    Ok(())
}

/// The refusal: `<what> <file>: <why> (owner <user>, group <group>, mode <octal>): whoever
/// can write it could make root write knobs or run commands; fix: <fix>`, where `why` names
/// the directory above `file` when the fault is that directory's (and owner, group and mode
/// are then the directory's).
fn refuse(what: &str, file: &Path, meta: &Metadata, why: &str, fix: &str) -> Error {
    Error::BadInput(format!(
        "{what} {}: {why} (owner {}, group {}, mode {:04o}): whoever can write it could make \
         root write kernel knobs or run commands; fix: {fix}",
        file.display(),
        user_name(meta.uid()),
        group_name(meta.gid()),
        meta.permissions().mode() & 0o7777
    ))
}

fn bad(what: &str, path: &Path, msg: &str) -> Error {
    Error::BadInput(format!("{what} {}: {msg}", path.display()))
}

/// `name` (uid `N`), or `uid N` when the uid has no name.
fn user_name(uid: u32) -> String {
    match nix::unistd::User::from_uid(uid.into()) {
        Ok(Some(u)) => format!("{} (uid {uid})", u.name),
        _ => format!("uid {uid}"),
    }
}

/// `name` (gid `N`), or `gid N` when the gid has no name.
fn group_name(gid: u32) -> String {
    match nix::unistd::Group::from_gid(gid.into()) {
        Ok(Some(g)) => format!("{} (gid {gid})", g.name),
        _ => format!("gid {gid}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::chown;

    /// `nobody`'s uid and gid on Debian (base-passwd: 65534).
    const NOBODY: u32 = 65534;

    fn file(dir: &Path, mode: u32) -> PathBuf {
        let p = dir.join("policy.toml");
        std::fs::write(&p, "x = 1\n").expect("write");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).expect("chmod");
        p
    }

    #[test]
    fn a_root_owned_private_file_passes_both_rules() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = file(d.path(), 0o644);
        assert_eq!(
            read_to_string(&p, "policy", Origin::System).expect("ok"),
            "x = 1\n"
        );
        assert!(open(&p, "policy", Origin::Named).is_ok());
    }

    #[test]
    fn a_world_writable_file_is_refused_with_its_fix() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = file(d.path(), 0o666);
        let e = open(&p, "policy", Origin::Named)
            .expect_err("refused")
            .to_string();
        assert!(e.contains("is world-writable"), "{e}");
        assert!(e.contains("mode 0666"), "{e}");
        assert!(
            e.contains(&format!("fix: chmod o-w {}", p.display())),
            "{e}"
        );
    }

    #[test]
    fn as_root_a_file_owned_by_nobody_may_be_named_only_by_nobody_under_sudo() {
        if !is_root() {
            eprintln!("skipped: needs root (chown)");
            return;
        }
        let d = tempfile::tempdir().expect("tempdir");
        let p = file(d.path(), 0o644);
        chown(&p, Some(NOBODY), Some(NOBODY)).expect("chown");
        let e = open(&p, "policy", Origin::System)
            .expect_err("refused")
            .to_string();
        assert!(
            e.contains("is owned by nobody (uid 65534), not root"),
            "{e}"
        );
        assert!(
            e.contains(&format!("fix: chown root {}", p.display())),
            "{e}"
        );
        // Named by root itself (no SUDO_UID): another user's file is refused.
        let e = open_as(&p, "policy", Origin::Named, 0)
            .expect_err("refused")
            .to_string();
        assert!(e.contains("not root (no sudo user: SUDO_UID unset)"), "{e}");
        // Named by a third user under sudo: refused, naming who ran it.
        let e = open_as(&p, "policy", Origin::Named, 54321)
            .expect_err("refused")
            .to_string();
        assert!(
            e.contains("not root or ") && e.contains("uid 54321, who ran this"),
            "{e}"
        );
        // Named by nobody under sudo: their own file.
        assert!(open_as(&p, "policy", Origin::Named, NOBODY).is_ok());
        // Group-writable by nogroup: refused both ways.
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o664)).expect("chmod");
        let e = open_as(&p, "policy", Origin::Named, NOBODY)
            .expect_err("refused")
            .to_string();
        assert!(e.contains("writable by group nogroup (gid 65534)"), "{e}");
    }

    #[test]
    fn as_root_a_directory_above_owned_by_another_user_is_refused() {
        if !is_root() {
            eprintln!("skipped: needs root (chown)");
            return;
        }
        let d = tempfile::tempdir().expect("tempdir");
        let sub = d.path().join("policies");
        std::fs::create_dir(&sub).expect("mkdir");
        chown(&sub, Some(NOBODY), None).expect("chown");
        let p = file(&sub, 0o644);
        let e = open(&p, "policy", Origin::System)
            .expect_err("refused")
            .to_string();
        assert!(
            e.contains(&format!(
                "directory {} above it is owned by nobody",
                sub.display()
            )),
            "{e}"
        );
        let e = open(&p, "policy", Origin::Named)
            .expect_err("refused")
            .to_string();
        assert!(e.contains("not root (no sudo user"), "{e}");
        // The refusal names the file read first, then the directory at fault.
        assert!(
            e.starts_with(&format!(
                "policy {}: directory {} above it is owned by nobody",
                p.display(),
                sub.display()
            )),
            "{e}"
        );
        // The file nobody's own in nobody's directory, named by nobody under sudo: allowed.
        chown(&p, Some(NOBODY), None).expect("chown");
        assert!(open_as(&p, "policy", Origin::Named, NOBODY).is_ok());
    }

    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("p.toml");
        nix::unistd::mkfifo(&p, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
        let e = open(&p, "profile", Origin::System)
            .expect_err("refused")
            .to_string();
        assert!(e.contains("is not a regular file"), "{e}");
    }

    #[test]
    fn as_root_a_symbolic_link_to_nothing_or_of_another_user_is_refused() {
        if !is_root() {
            eprintln!("skipped: needs root (chown)");
            return;
        }
        let d = tempfile::tempdir().expect("tempdir");
        let db = d.path().join("s.db");
        std::os::unix::fs::symlink(d.path().join("victim/created.db"), &db).expect("symlink");
        let e = check_path(&db, "database", Origin::Named)
            .expect_err("refused")
            .to_string();
        assert!(e.contains("is a symbolic link to nothing"), "{e}");
        std::fs::remove_file(&db).expect("rm");
        let real = file(d.path(), 0o644);
        std::os::unix::fs::symlink(&real, &db).expect("symlink");
        assert!(check_path(&db, "database", Origin::System).is_ok());
        std::os::unix::fs::lchown(&db, Some(NOBODY), None).expect("lchown");
        let e = check_path_as(&db, "database", Origin::Named, 0)
            .expect_err("refused")
            .to_string();
        assert!(
            e.contains("is a symbolic link owned by nobody (uid 65534)"),
            "{e}"
        );
    }

    #[test]
    fn a_world_writable_directory_above_is_refused_unless_sticky() {
        let d = tempfile::tempdir().expect("tempdir");
        let sub = d.path().join("drop");
        std::fs::create_dir(&sub).expect("mkdir");
        std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let p = file(&sub, 0o644);
        let e = open(&p, "policy", Origin::Named)
            .expect_err("refused")
            .to_string();
        assert!(e.contains("above it is world-writable"), "{e}");
        assert!(e.contains(&format!("chmod o-w {}", sub.display())), "{e}");
        std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
        assert!(open(&p, "policy", Origin::Named).is_ok());
    }

    #[test]
    fn a_database_not_yet_made_is_judged_by_the_directory_it_goes_in() {
        let d = tempfile::tempdir().expect("tempdir");
        let sub = d.path().join("db");
        std::fs::create_dir(&sub).expect("mkdir");
        std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let db = sub.join("new/sweetspot.db");
        let e = check_path(&db, "database", Origin::System).expect_err("refused");
        assert!(e.to_string().contains("is world-writable"), "{e}");
        std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        assert!(check_path(&db, "database", Origin::System).is_ok());
    }
}
