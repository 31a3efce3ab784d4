//! `sweetspot daemon [--config FILE]` and `sweetspot status [--json] [--config FILE]`.

use super::Ctx;
use crate::Result;
use crate::daemon::{self, config};
use std::path::{Path, PathBuf};

/// Arguments of `sweetspot daemon`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The config (TOML; see examples/daemon.toml). Default /etc/sweetspot/daemon.toml, and
    /// built-in defaults when that is absent. Its `db` is used unless --db or SWEETSPOT_DB
    /// names the database (those win over it). As root it must be root's, given or not, as
    /// must every policy it names: not writable by another group or everyone, nor any
    /// directory above it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// Arguments of `sweetspot status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// The daemon's config (for the enrolled devices and the retune interval). Its `db` is
    /// used unless --db or SWEETSPOT_DB names the database (those win over it).
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
#[cfg(feature = "daemon")]
pub fn run(ctx: &Ctx, args: &Args) -> Result<()> {
    let (path, explicit) = config_path(args.config.as_ref());
    daemon::run(&path, explicit, &ctx.root, &ctx.db, ctx.db_given)
}

/// `sweetspot daemon` in a build without the `daemon` feature: refused, exit 2.
#[cfg(not(feature = "daemon"))]
pub fn run(_: &Ctx, _: &Args) -> Result<()> {
    Err(crate::Error::BadInput(
        "daemon: this sweetspot was built without the `daemon` feature; build it with \
         `--features daemon` (`status`, `profile apply` and the boot-time apply work without it)"
            .into(),
    ))
}

/// Runs `sweetspot status`.
pub fn status(ctx: &Ctx, args: &StatusArgs) -> Result<()> {
    let (path, explicit) = config_path(args.config.as_ref());
    // status only reads: a config it is given may be the admin's own (the daemon's is root's).
    let origin = if explicit {
        crate::trust::Origin::Named
    } else {
        crate::trust::Origin::System
    };
    let cfg = config::load(&path, explicit, origin)?;
    let db = daemon::db_path(cfg.db.as_deref(), &ctx.db, ctx.db_given);
    // A database not created yet: nothing is tuned, but the enrolled identities are
    // listed (status only reads: it does not create the file).
    let store = if db.exists() {
        let origin = if ctx.db_given {
            crate::trust::Origin::Named
        } else {
            crate::trust::Origin::System
        };
        crate::store::Store::check_trusted(&db, origin)?;
        Some(crate::store::Store::open_read_only(&db)?)
    } else {
        None
    };
    let s = daemon::status::status(
        store.as_ref(),
        &ctx.root,
        &cfg,
        &daemon::state_path(Path::new(&db)),
    )?;
    if args.json {
        super::print_json(&s)
    } else {
        super::print_out(&daemon::status::text(&s, &db, &ctx.root))
    }
}
