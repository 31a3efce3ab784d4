//! What SIGKILLed runs left behind, swept by `restore` as root: their run and work
//! directories under any roots and, on the real `/sys`, `--scratch` leftovers (mount, loop
//! device, files) and stale lock files. The sweeping itself is [`stale`]'s, in `bench`, which
//! also runs it before every scratch run.

use crate::bench::stale;
use crate::sysroot::SysRoot;
use std::path::Path;

/// Sweeps what killed runs left, as root (other users' leftovers are not theirs to remove;
/// not root: nothing), for `restore` under database `db` and roots `root`; returns one line
/// per leftover removed (`leftover of a killed run: …`) or left alone (why, and the command
/// that removes it):
/// - always: dead run directories in `$TMPDIR` with the work directories they record
///   ([`stale::sweep_runs`]: a killed `tune --device`'s `.sweetspot-bench-*`, also under a
///   `--dir` or on a fake tree's device), and dead work directories at the top of the
///   filesystems mounted on the devices ([`stale::sweep_work`]);
/// - on the real `/sys` only (a fake `--procfs-root` does not make a scratch loop device
///   fake): `--scratch` leftovers, their mounts and loop devices ([`stale::sweep_scratch`]),
///   and stale lock files in [`crate::lock::RUN_DIR`]. A fake `--sysfs-root` never leads to
///   `umount` or `losetup -d`: its dead scratch leftovers are named, with the command that
///   removes them.
pub(crate) fn sweep_leftovers(db: &Path, root: &SysRoot) -> Vec<String> {
    let mut out = Vec::new();
    if !nix::unistd::geteuid().is_root() {
        return out;
    }
    let tmp = std::env::temp_dir();
    // Mounts are the running system's whatever --procfs-root names; on a fake sysfs its
    // devices' mounts are as its procfs says (no mount is touched: only dead directories
    // directly under them are removed).
    let mounts_root = if root.is_real() {
        SysRoot::default()
    } else {
        root.clone()
    };
    let mut work: Vec<std::path::PathBuf> = crate::device::list(&mounts_root)
        .unwrap_or_default()
        .into_iter()
        .flat_map(|d| d.mounts.into_iter().map(|m| m.target))
        .collect();
    work.sort();
    work.dedup();
    let scratch = if root.is_real() {
        stale::sweep_scratch(&tmp, db)
    } else {
        let real = SysRoot::new("/sys", &root.proc);
        stale::Swept {
            removed: Vec::new(),
            left: stale::dead_scratch(&tmp)
                .into_iter()
                .map(|d| {
                    format!(
                        "left alone: {} (a killed `--scratch` run's loop device, mount and \
                         files): a fake --sysfs-root does not reach them; `{}` removes it",
                        d.display(),
                        super::undo_command(db, &real, None)
                    )
                })
                .collect(),
        }
    };
    let runs = stale::sweep_runs(&tmp);
    let swept = work.iter().flat_map(|t| stale::sweep_work(t));
    for what in scratch.removed.into_iter().chain(runs).chain(swept) {
        out.push(format!("leftover of a killed run: {what}"));
    }
    for why in scratch.left {
        out.push(why);
    }
    if root.is_real() {
        crate::lock::sweep(std::path::Path::new(crate::lock::RUN_DIR));
    }
    out
}
