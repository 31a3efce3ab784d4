//! dbench_load: runs `dbench` (Andrew Tridgell's file-server load) when it is installed. It is
//! never faked: without dbench the load is reported unavailable with how to install it.
//! Units are dbench's operations, read from the cumulative count in the progress line it
//! prints every second (`  2   97631  1086.17 MB/sec  execute   1 sec  latency 4.338 ms`).

use super::counter::Counter;
use crate::{Error, Result};
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};

/// True when a `dbench` executable is on PATH.
pub(super) fn installed() -> bool {
    installed_in(std::env::var_os("PATH").as_deref())
}

/// True when a `dbench` executable is in one of the directories of `path` (a PATH value).
fn installed_in(path: Option<&std::ffi::OsStr>) -> bool {
    path.is_some_and(|paths| {
        std::env::split_paths(paths).any(|d| {
            use std::os::unix::fs::PermissionsExt;
            d.join("dbench")
                .metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

pub(super) fn run(out: &Path, clients: u32, counter: &Counter) -> Result<()> {
    let mut child = Command::new("dbench")
        .arg("-D")
        .arg(out)
        .args(["-t", "3600", &clients.max(1).to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Error::io("starting dbench (apt-get install dbench)", e))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| Error::Failed("dbench stdout".into()))?;
    // dbench restarts its count when warmup ends; keep the units monotonic.
    let (mut base, mut last) = (0u64, 0u64);
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.map_err(|e| Error::io("reading dbench's output", e))?;
        if let Some(ops) = progress_ops(&line) {
            if ops < last {
                base += last;
            }
            last = ops;
            counter.set(base + ops);
        }
    }
    let status = child
        .wait()
        .map_err(|e| Error::io("waiting for dbench", e))?;
    Err(Error::Failed(format!("dbench ended early ({status})")))
}

/// The cumulative operation count of a dbench progress line.
fn progress_ops(line: &str) -> Option<u64> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() >= 5 && f[3] == "MB/sec" && (f[4] == "execute" || f[4] == "warmup") {
        f[1].parse().ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn found_only_where_an_executable_dbench_is() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let path = std::env::join_paths([t.path()]).unwrap();
        assert!(!installed_in(Some(&path)));
        assert!(!installed_in(None));
        let f = t.path().join("dbench");
        std::fs::write(&f, "#!/bin/sh\n").unwrap();
        assert!(!installed_in(Some(&path)), "not executable");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(installed_in(Some(&path)));
    }

    #[test]
    fn parses_progress_lines_only() {
        let l = "   2     97631  1086.17 MB/sec  execute   1 sec  latency 4.338 ms";
        assert_eq!(progress_ops(l), Some(97631));
        assert_eq!(progress_ops("   2  cleanup   3 sec"), None);
        assert_eq!(
            progress_ops(" NTCreateX      99509     0.010     2.245"),
            None
        );
    }
}
