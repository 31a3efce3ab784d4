//! The `sweetspot restore` command line that puts journaled knobs back, as messages print it.

use crate::store::Store;
use crate::sysroot::SysRoot;
use std::path::Path;

/// `sweetspot restore <device>`, with `--db` when `db` is not the default database and
/// `--sysfs-root`/`--procfs-root` when `root`'s are not the real `/sys`/`/proc`: a command
/// that works when pasted.
pub(crate) fn undo_command(db: &Path, root: &SysRoot, device: Option<&str>) -> String {
    let mut c = "sweetspot".to_string();
    if db != Store::default_path() {
        c += &format!(" --db {}", shell_arg(&db.to_string_lossy()));
    }
    if !root.is_real() {
        c += &format!(" --sysfs-root {}", shell_arg(&root.sys.to_string_lossy()));
    }
    if !root.is_real_proc() {
        c += &format!(" --procfs-root {}", shell_arg(&root.proc.to_string_lossy()));
    }
    c += " restore";
    if let Some(d) = device {
        c += &format!(" {}", shell_arg(d));
    }
    c
}

/// `s` quoted for a POSIX shell when it needs it (`shlex`), with control characters escaped
/// first so the command stays on one line: a path read back from the database (a journal
/// row's roots) can carry `$(…)` or a newline, and the admin pastes this command as root.
fn shell_arg(s: &str) -> String {
    use crate::types::text;
    let s = if s.chars().any(text::is_control) {
        text::shown(s)
    } else {
        s.to_string()
    };
    // After `shown` no NUL is left, the one thing `try_quote` refuses.
    shlex::try_quote(&s).map_or(s.clone(), |q| q.into_owned())
}
