//! `sweetspot daemon [--config FILE]` and `sweetspot status [--json] [--config FILE]`.

use super::Ctx;
use crate::Result;
use crate::daemon::{self, config};
use std::path::{Path, PathBuf};

/// Arguments of `sweetspot daemon`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The config (TOML; see examples/daemon.toml). Default /etc/sweetspot/daemon.toml, and
    /// built-in defaults when that is absent.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// Arguments of `sweetspot status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// The daemon's config (for the enrolled devices and the retune interval).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print JSON (with a `version` field).
    #[arg(long)]
    pub json: bool,
}

fn config_path(given: Option<&PathBuf>) -> (PathBuf, bool) {
    match given {
        Some(p) => (p.clone(), true),
        None => (PathBuf::from(config::DEFAULT_PATH), false),
    }
}

/// Runs `sweetspot daemon`.
pub fn run(ctx: &Ctx, args: &Args) -> Result<()> {
    let (path, explicit) = config_path(args.config.as_ref());
    daemon::run(&path, explicit, &ctx.root, &ctx.db)
}

/// Runs `sweetspot status`.
pub fn status(ctx: &Ctx, args: &StatusArgs) -> Result<()> {
    let (path, explicit) = config_path(args.config.as_ref());
    let cfg = config::load(&path, explicit)?;
    let db = cfg.db.clone().unwrap_or_else(|| ctx.db.clone());
    if !db.exists() {
        let empty = daemon::status::Status {
            version: daemon::status::JSON_VERSION,
            daemon_running: false,
            devices: vec![],
        };
        return if args.json {
            super::print_json(&empty)
        } else {
            super::print_out(&daemon::status::text(&empty))
        };
    }
    let store = crate::store::Store::open_read_only(&db)?;
    let s = daemon::status::status(&store, &ctx.root, &cfg, &daemon::state_path(Path::new(&db)))?;
    if args.json {
        super::print_json(&s)
    } else {
        super::print_out(&daemon::status::text(&s))
    }
}
