//! The crate's error type. Messages are user-facing; each variant maps to an exit code
//! (docs/DESIGN.md "External contract"): 0 success, 1 the job failed (a knob was not honoured, the
//! kernel refused a write, a load failed), 2 bad usage or input.

use std::path::PathBuf;

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong, with the message the user sees.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad usage or input that sweetspot rejected before changing anything (exit 2).
    #[error("{0}")]
    BadInput(String),

    /// A bad input file: names the file, line (1-based, when known) and field (exit 2).
    #[error("{}{}: {field}: {msg}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    BadFile {
        /// The offending file.
        path: PathBuf,
        /// 1-based line number, when the parser knows it.
        line: Option<usize>,
        /// The field (key) at fault, e.g. `point[3].io_load.time_s`.
        field: String,
        /// What is wrong with it.
        msg: String,
    },

    /// The kernel refused a knob write (EROFS, EACCES, EINVAL, ...) (exit 1). The message
    /// names the knob, the value and the errno, e.g.
    /// `nr_requests: writing '2048' to /sys/block/loop0/queue/nr_requests failed: EINVAL
    /// (Invalid argument)`.
    #[error("{knob}: writing '{value}' to {} failed: {}", path.display(), errno_text(source))]
    KnobWrite {
        /// Knob name, e.g. `fifo_batch`.
        knob: String,
        /// The value written.
        value: String,
        /// The sysfs/procfs file.
        path: PathBuf,
        /// The errno as an I/O error.
        source: std::io::Error,
    },

    /// The kernel accepted a write but reads back something else (exit 1).
    #[error("{knob}: not honoured: wrote {wrote}, kernel reads {read}")]
    NotHonoured {
        /// Knob name.
        knob: String,
        /// What sweetspot wrote.
        wrote: String,
        /// What the kernel reads back.
        read: String,
    },

    /// The database could not be opened or used (exit 1, or 2 when `bad_path`).
    #[error("database {}: {msg}", path.display())]
    Store {
        /// Database path.
        path: PathBuf,
        /// What went wrong.
        msg: String,
        /// True when the path the user gave cannot hold a sweetspot database (exit 2): a file
        /// that is not ours or is corrupt, something that is not a regular file (a directory,
        /// a device, a fifo, a socket), or a place where no file can be created or written
        /// (read-only, no permission, /proc). False for failures of the job itself (exit 1),
        /// e.g. a full disk or an I/O error.
        bad_path: bool,
    },

    /// An I/O error with what sweetspot was doing (exit 1).
    #[error("{context}: {source}")]
    Io {
        /// What sweetspot was doing, e.g. "reading /sys/block/sda/queue/scheduler".
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },

    /// Any other failure of the job itself (exit 1).
    #[error("{0}")]
    Failed(String),

    /// Stopped by Ctrl-C or SIGTERM after cleaning up (exit 130).
    #[error("interrupted: finished runs are kept in the database and the knobs were restored")]
    Interrupted,
}

impl Error {
    /// The process exit code for this error: 2 for bad input, 130 when interrupted, else 1.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::BadInput(_) | Error::BadFile { .. } => 2,
            Error::Store { bad_path: true, .. } => 2,
            Error::Interrupted => 130,
            _ => 1,
        }
    }

    /// Shorthand for an [`Error::Io`] with context.
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

/// `EINVAL (Invalid argument)` for an OS error, else the error's own text.
pub(crate) fn errno_text(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(raw) => {
            let errno = nix::errno::Errno::from_raw(raw);
            format!("{errno:?} ({})", errno.desc())
        }
        None => e.to_string(),
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        Error::Failed(format!("database: {e}"))
    }
}
