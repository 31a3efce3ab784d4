//! `sweetspot __worker …`: the hidden subcommand that the reference job, the start-up judge and
//! the loads run as.
//! Re-executing sweetspot's own binary (rather than `fork` in a multi-threaded process) gives
//! each job and load a clean process of its own, so it can be put in its own process group,
//! timed, measured exactly with `wait4(2)`'s rusage, and killed as a group. Hidden from
//! `--help`; its arguments are an internal interface, not part of the CLI contract.

use crate::bench::job::{self, JobSpec};
use crate::bench::loads::{self, LoadSpec};
use crate::{Error, Result};

/// Arguments of `sweetspot __worker`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub what: What,
}

/// What the worker process is.
#[derive(Debug, clap::Subcommand)]
pub enum What {
    /// The built-in reference job; `spec` is a JSON `JobSpec`.
    Job {
        /// JSON job spec.
        spec: String,
    },
    /// One start-up of the start-up judge; `spec` is a JSON
    /// `crate::bench::startup::StartupSpec`.
    Startup {
        /// JSON start-up spec.
        spec: String,
    },
    /// A background load; `spec` is a JSON `LoadSpec`. Runs until killed.
    Load {
        /// JSON load spec.
        spec: String,
    },
    /// A process_load relay: copies stdin to stdout.
    Relay,
    /// The `--emulate` FUSE server; `spec` is a JSON `crate::bench::emulate::ServeSpec`.
    /// Serves until stdin closes.
    Emulate {
        /// JSON serve spec.
        spec: String,
    },
}

/// Runs the worker. Errors go to stderr (captured by sweetspot) and exit 1.
pub(crate) fn run(args: &Args) -> Result<()> {
    let parse = |what: &str, s: &str| Error::BadInput(format!("__worker {what}: bad spec: {s}"));
    match &args.what {
        What::Job { spec } => {
            let spec: JobSpec =
                serde_json::from_str(spec).map_err(|e| parse("job", &e.to_string()))?;
            let h = job::run(&spec)?;
            tracing::debug!("job hash {h:016x}");
            Ok(())
        }
        What::Startup { spec } => {
            let spec: crate::bench::startup::StartupSpec =
                serde_json::from_str(spec).map_err(|e| parse("startup", &e.to_string()))?;
            let t = crate::bench::startup::run(&spec)?;
            tracing::debug!(
                "start-up: {} files touched, {} opened, {} bytes read",
                t.touched,
                t.opened,
                t.bytes
            );
            Ok(())
        }
        What::Load { spec } => {
            let spec: LoadSpec =
                serde_json::from_str(spec).map_err(|e| parse("load", &e.to_string()))?;
            loads::body(&spec)
        }
        What::Relay => loads::relay(),
        What::Emulate { spec } => {
            let spec: crate::bench::emulate::ServeSpec =
                serde_json::from_str(spec).map_err(|e| parse("emulate", &e.to_string()))?;
            crate::bench::emulate::serve(&spec)
        }
    }
}
