//! `sweetspot daemon [--config FILE]` and `sweetspot status [--json] [--config FILE]`.

use super::Ctx;
use super::output::{JsonArg, JsonHelp, emit};
use crate::Result;
use crate::daemon::{self, config};
use crate::output::format::{Format, Table};
use std::path::{Path, PathBuf};

/// Arguments of `sweetspot daemon`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The config (TOML).
    ///
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
    /// The daemon's config (enrolled devices, retune interval).
    ///
    /// Default: the running daemon's (its --config), else /etc/sweetspot/daemon.toml; the
    /// output names the one shown. Its `db` is used unless --db or SWEETSPOT_DB names the
    /// database (those win over it).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub output: JsonArg<StatusHelp>,
    /// The output: text, json, or prometheus.
    ///
    /// The output: `text`, `json` (as --json), or `prometheus`: the metrics the
    /// daemon writes for node_exporter's textfile collector (see docs/metrics.md), printed
    /// once, for a cron job where no daemon runs (without the daemon's own contest counter
    /// and memory).
    #[arg(long, value_enum, default_value_t = StatusFormat::Text)]
    pub format: StatusFormat,
}

/// `status --json`'s help.
#[derive(Clone, Copy, Debug, Default)]
pub struct StatusHelp;

impl JsonHelp for StatusHelp {
    const HELP: &'static str = "Print JSON (with a `version` field); the same as --format json";
    const CONFLICTS: &'static [&'static str] = &["format"];
}

/// `sweetspot status --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StatusFormat {
    /// The human table.
    Text,
    /// JSON, as --json.
    Json,
    /// Prometheus' text exposition format.
    Prometheus,
}

fn config_path(given: Option<&PathBuf>) -> (PathBuf, bool) {
    match given {
        Some(p) => (p.clone(), true),
        None => (PathBuf::from(config::DEFAULT_PATH), false),
    }
}

/// Runs `sweetspot daemon`.
#[cfg(feature = "daemon")]
pub(crate) fn run(ctx: &Ctx, args: &Args) -> Result<()> {
    let (path, explicit) = config_path(args.config.as_ref());
    daemon::run(&path, explicit, &ctx.root, &ctx.db, ctx.db_given)
}

/// `sweetspot daemon` in a build without the `daemon` feature: refused, exit 2.
#[cfg(not(feature = "daemon"))]
pub(crate) fn run(_: &Ctx, _: &Args) -> Result<()> {
    Err(crate::Error::BadInput(
        "daemon: this sweetspot was built without the `daemon` feature; build it with \
         `--features daemon` (`status`, `profile apply` and the boot-time apply work without it)"
            .into(),
    ))
}

/// The config file of the daemon whose state file is `state` (the pid it names, alive): the
/// `--config` of its command line (`/proc/<pid>/cmdline`, parsed as the daemon parsed it; a
/// relative path against its working directory), else the default path. `None` when no
/// daemon runs or its command line cannot be read.
fn running_config(state: &Path) -> Option<PathBuf> {
    use clap::Parser;
    use std::os::unix::ffi::OsStrExt;
    let (pid, _) = daemon::status::running_daemon(state)?;
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let argv = raw
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| std::ffi::OsStr::from_bytes(a).to_owned());
    let super::Command::Daemon(a) = super::Cli::try_parse_from(argv).ok()?.command else {
        return None;
    };
    match a.config {
        Some(p) if p.is_relative() => {
            Some(std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?.join(p))
        }
        Some(p) => Some(p),
        None => Some(PathBuf::from(config::DEFAULT_PATH)),
    }
}

/// The policy the daemon's config names per device, whose sweet spot rules it
/// ([`config::DaemonConfig::ruling_policies`]): from the running daemon's config (of `ctx`'s
/// database), else the default file; empty when neither names one or loads (a config that
/// does not load is the daemon's to report). `profile apply`, `export` and `verify` pick a
/// device's sweet spot by it, as the daemon does.
pub(super) fn ruling_policies(ctx: &Ctx) -> std::collections::BTreeMap<String, String> {
    let state = daemon::state_path(&ctx.db);
    let (path, explicit) = match running_config(&state) {
        Some(p) => (p, true),
        None => (PathBuf::from(config::DEFAULT_PATH), false),
    };
    config::load(&path, explicit, crate::trust::Origin::System)
        .map(|c| c.ruling_policies())
        .unwrap_or_default()
}

/// Runs `sweetspot status`. Without `--config`, the running daemon's config is shown (its
/// enrolled devices and retune interval), and the text names the file either way.
pub(crate) fn status(ctx: &Ctx, args: &StatusArgs) -> Result<()> {
    let (mut path, explicit) = config_path(args.config.as_ref());
    // status only reads: a config it is given may be the admin's own (the daemon's is root's).
    let origin = if explicit {
        crate::trust::Origin::Named
    } else {
        crate::trust::Origin::System
    };
    let mut cfg = config::load(&path, explicit, origin)?;
    let db = daemon::db_path(cfg.db.as_deref(), &ctx.db, ctx.db_given);
    let state = daemon::state_path(Path::new(&db));
    use daemon::status::ConfigSource;
    let mut source = if explicit {
        ConfigSource::Given
    } else {
        ConfigSource::Default
    };
    if !explicit && let Some(running) = running_config(&state) {
        source = ConfigSource::RunningDaemon;
        if running != path {
            // Root's, as the daemon required of it.
            match config::load(&running, true, crate::trust::Origin::System) {
                Ok(c) => {
                    cfg = c;
                    path = running;
                }
                Err(e) => {
                    tracing::warn!(
                        "the running daemon's config {} does not load ({e}); showing {}'s",
                        running.display(),
                        path.display()
                    );
                    source = ConfigSource::DefaultNotRunningDaemon;
                }
            }
        }
    }
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
    if args.format == StatusFormat::Prometheus {
        return super::print_out(&daemon::metrics::from_status(
            store.as_ref(),
            &ctx.root,
            &cfg,
            &state,
        )?);
    }
    let mut s = daemon::status::status(store.as_ref(), &ctx.root, &cfg, &state)?;
    s.config = Some(daemon::status::ConfigShown {
        exists: path.exists(),
        path,
        source,
    });
    let format = match args.format {
        StatusFormat::Json => Format::Json,
        _ => args.output.format(),
    };
    let shown = Shown {
        status: &s,
        db: &db,
        root: &ctx.root,
    };
    emit(&shown, format)
}

/// What `status` prints: the [`daemon::status::DaemonStatus`] as JSON, or its text
/// ([`daemon::status::text`], which names the database and roots).
#[derive(serde::Serialize)]
#[serde(transparent)]
struct Shown<'a> {
    status: &'a daemon::status::DaemonStatus,
    #[serde(skip)]
    db: &'a Path,
    #[serde(skip)]
    root: &'a crate::sysroot::SysRoot,
}

impl Table for Shown<'_> {
    fn table(&self) -> Result<String> {
        Ok(daemon::status::text(self.status, self.db, self.root))
    }
}
