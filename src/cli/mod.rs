//! The command line (clap derive). Each subcommand lives in its own file with its own
//! `Args` struct and a `run` function; this file holds the global options and dispatch.
//! Exit codes follow docs/DESIGN.md: 0 success, 1 the job failed, 2 bad usage or input.

mod bench;
mod completions;
mod daemon;
mod devices;
mod history;
mod knobs;
mod log;
mod output;
mod plot;
mod profile;
mod restore;
mod set;
mod target;
mod tune;

use crate::store::Store;
use crate::sysroot::SysRoot;
use crate::trust::Origin;
use crate::{Error, Result};
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};

/// The text of [`DAEMON_EXIT_STATUS`], as a macro so that [`DAEMON_NOTES`] can end with it.
macro_rules! daemon_exit_status {
    () => {
        "\
Exit status:
  0    stopped by SIGTERM or SIGINT (a retune in progress was stopped and its
       device put back at its sweet spot first; a failure doing so is logged as
       a warning)
  1    it could not go on: the database, sysfs or its event loop failed (a
       write the kernel refuses or does not honour is logged, and it goes on)
  2    bad usage or input (the config's error names the file, line and
       field), or another daemon runs on the database; nothing was changed"
    };
}

/// The exit codes (docs/DESIGN.md "External contract"), in lines of at most 80 columns (clap
/// would wrap longer ones at the margin), shown under every command's `--help`
/// but the daemon's ([`DAEMON_EXIT_STATUS`]); the man pages' EXIT STATUS
/// section is made from it. Only `tune` and `bench` catch SIGINT and SIGTERM
/// ([`crate::signals::install`]); the other commands keep the default action.
pub const EXIT_STATUS: &str = "\
Exit status:
  0    success (also when the reader of the output went away: `| head`)
  1    the job failed: a knob was not honoured, a run failed, the kernel
       refused a write, `verify` found drift, `restore` left journaled knobs
       changed
  2    bad usage or input (a file's error names the file, line and field; a
       knob's, the knob and value), or a device held by another writer;
       nothing was changed
  130  `tune` or `bench` interrupted by Ctrl-C or SIGTERM (the device was
       restored first); the other commands end by the signal itself (a shell
       shows 128 + its number), and `daemon` stops with 0";

/// The exit codes in a line, under every command's `-h` but the daemon's
/// ([`DAEMON_EXIT_STATUS_SHORT`]); `--help` ends with [`EXIT_STATUS`] instead.
pub const EXIT_STATUS_SHORT: &str =
    "Exit status: 0 done, 1 job failed, 2 bad input (130: tune, bench interrupted)";

/// The daemon's exit codes in a line, under its `-h` ([`DAEMON_EXIT_STATUS`] under `--help`).
pub const DAEMON_EXIT_STATUS_SHORT: &str =
    "Exit status: 0 stopped by a signal, 1 could not go on, 2 bad input; see --help";

/// The exit codes of `sweetspot daemon`, shown under its help and in its man page: a service
/// stopped by SIGTERM or SIGINT exits 0 (systemd's normal stop), not 130 as `tune` does.
pub const DAEMON_EXIT_STATUS: &str = daemon_exit_status!();

/// Signals and files of `sweetspot daemon` (its `--help` and man page), then the exit codes.
const DAEMON_NOTES: &str = concat!(
    "\
Signals:
  SIGHUP           reload the config; a broken one is logged (file,
                   line, field) and the old one is kept; disks
                   `sweetspot restore` put back are managed again
  SIGTERM, SIGINT  stop: a retune in progress abandons its current
                   run, its device is restored and then put back at
                   its sweet spot (journaled, as at every poll), its
                   finished trials are kept, and the next retune of
                   that device resumes it; exit 0

Files:
  /etc/sweetspot/daemon.toml       the config (--config); every key
                                   is optional
  /var/lib/sweetspot/sweetspot.db  the database as root (--db,
                                   SWEETSPOT_DB)
  <database>.daemon.json           the daemon's state, read by
                                   `sweetspot status`
  /etc/sweetspot/policies/         policies by name, beside the
                                   built-in ones

An annotated config with every key and its default:
/etc/sweetspot/daemon.toml as the Debian package installs it,
examples/daemon.toml in the source tree.

",
    daemon_exit_status!()
);

/// What `--version` prints after "sweetspot ": the package version and the git revision it
/// was built from, `0.1.0 (git e5970a2)`, with `, dirty` when tracked files had changes; the
/// version alone when built without a repository (from crates.io). build.rs sets the suffix.
pub(crate) const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), env!("SWEETSPOT_REVISION"));

/// The default `--sysfs-root`.
const SYSFS_ROOT: &str = "/sys";

/// The default `--procfs-root`.
const PROCFS_ROOT: &str = "/proc";

/// Find the per-device sweet spot of Linux block-layer and VM knobs.
///
/// sweetspot finds the per-device "sweet spot" of Linux block-layer and VM knobs: it changes
/// a knob, reruns a short subset of the contest benchmark, and lets an optimiser pick the next
/// setting until it converges. Every original knob value is journaled before it is changed;
/// `sweetspot restore` puts it back.
// `-h` is the short help (one line an option, `help`/`about`), `--help` the long one
// (`long_help`/`long_about`: the doc comments' later paragraphs) with the exit codes; both
// wrap to the terminal (clap's `wrap_help`; at most 100 columns). tests/cli/help_budget.rs
// holds `-h` to 24 lines here and 40 a subcommand at 80 columns.
#[derive(Debug, Parser)]
#[command(
    name = "sweetspot",
    version = VERSION,
    // Prose wider than 100 columns is hard to read, on a wide terminal too.
    max_term_width = 100,
    // `sweetspot -h` fits 24 lines (tests/cli/help_budget.rs); `COMMAND -h` does what `help
    // COMMAND` would.
    disable_help_subcommand = true,
    // `-V, --version` is listed by `--help` only (the field below), for the same budget.
    disable_version_flag = true,
    after_long_help = EXIT_STATUS
)]
pub struct Cli {
    /// The SQLite database [env: SWEETSPOT_DB].
    ///
    /// Default: /var/lib/sweetspot/sweetspot.db as root,
    /// $XDG_STATE_HOME/sweetspot/sweetspot.db otherwise. A command that changes knobs
    /// or stores results creates it, and its directory, when missing; the others never do.
    /// Commands that only read it (history, plot, profile export, profile apply --dry-run,
    /// verify, status) open it read-only and work on a read-only database; commands that journal
    /// (set, restore, bench, tune, profile apply, daemon) refuse one with exit 2. As root, the
    /// default database must be root's and written by root alone; one given here may be
    /// yours, but writable by no one else (nor its directories): else exit 2.
    // SWEETSPOT_DB is read in `run`, not with clap's `env`: with that, every usage line in an
    // error read `sweetspot tune --db <PATH> …`, as if --db were required, whenever it was set.
    #[arg(long, global = true, value_name = "PATH")]
    pub db: Option<PathBuf>,

    /// Root of sysfs.
    ///
    /// Act on a copy of the sysfs tree instead of /sys: for tests and dry experiments on a
    /// fake tree. Changed knobs are journaled under this root, and `restore` puts them back
    /// only when given the same root.
    #[arg(long, global = true, default_value = SYSFS_ROOT, value_name = "DIR",
          hide_short_help = true)]
    pub sysfs_root: PathBuf,

    /// Root of procfs.
    ///
    /// Act on a copy of the procfs tree instead of /proc (the host-wide vm and kernel knobs):
    /// for tests and dry experiments on a fake tree, as --sysfs-root.
    #[arg(long, global = true, default_value = PROCFS_ROOT, value_name = "DIR",
          hide_short_help = true)]
    pub procfs_root: PathBuf,

    /// More log output on stderr (-v, -vv).
    ///
    /// -v info, -vv debug.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Only errors on stderr; no progress bar.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Print the version and the git revision it was built from.
    #[arg(short = 'V', long, action = clap::ArgAction::Version, hide_short_help = true)]
    pub version: (),

    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List whole disks with identity, schedulers, size and mounts.
    #[command(after_help = EXIT_STATUS_SHORT, after_long_help = EXIT_STATUS)]
    Devices(devices::Args),
    /// List a device's knobs: domain, unit and current value.
    ///
    /// List the knobs a device offers now, with domain, unit and current value.
    #[command(after_help = EXIT_STATUS_SHORT, after_long_help = EXIT_STATUS)]
    Knobs(knobs::Args),
    /// Set knobs, journaled: `set sda scheduler=mq-deadline`.
    ///
    /// Set knobs (journaled; `restore` undoes): `set sda scheduler=mq-deadline fifo_batch=8`.
    // The usage spelled out: clap_mangen's synopsis leaves out the "..." of a repeated
    // positional (KNOB=VALUE), which --help's usage has.
    #[command(
        override_usage = "sweetspot set [OPTIONS] <DEVICE> <KNOB=VALUE>...",
        after_help = EXIT_STATUS_SHORT,
        after_long_help = EXIT_STATUS
    )]
    Set(set::Args),
    /// Put journaled knobs back as they were (all devices, or one).
    ///
    /// After a full restore every knob is at its value from before sweetspot first touched
    /// it. A disk that a running `sweetspot daemon` manages is then left alone by the daemon
    /// (neither re-applied nor retuned) until it restarts or reloads its config (SIGHUP);
    /// restore says so.
    ///
    /// A journaled knob it cannot put back now stays changed, named on a "left alone" line: a
    /// device a running tune or another writer holds, the host-wide knobs while a running
    /// tune (of a device or `--host`) or another writer works, knobs journaled under other
    /// --sysfs-root/--procfs-root than this run's. Then it exits 1, after a last line on
    /// stderr that counts them ("2 knobs left changed; see above"). With a DEVICE (refused
    /// with exit 2 while another writer holds it), only its own knobs and the host-wide ones
    /// it alone changed count. Leftovers of killed runs that it does not remove (a
    /// `--scratch` loop device, mount and files, whose knobs another database journaled) are
    /// named, and do not count.
    ///
    /// A detached loop device's knobs go back to its queue (it outlives `losetup -d`) while
    /// the loop number serves no file. Once it serves another file, that file's queue is left
    /// as it is: a warning names the file and each journaled original, and the entries are
    /// closed.
    #[command(after_help = EXIT_STATUS_SHORT, after_long_help = EXIT_STATUS)]
    Restore(restore::Args),
    /// Measure a device under contest's loads and print contest's table.
    // `--host` is `tune`'s (a user benchmark over host knobs); `bench` has nothing to run there.
    #[command(
        mut_arg("host", |a| a.hide(true)),
        override_usage = "sweetspot bench [OPTIONS] <--device <DEVICE>|--scratch|--sim <FILE>>",
        after_help = EXIT_STATUS_SHORT,
        after_long_help = EXIT_STATUS
    )]
    Bench(bench::Args),
    /// Find a device's sweet spot for a policy and store it.
    // The usage spelled out: clap's, `[OPTIONS] <--device <DEVICE>|...|--host>`, is 81
    // columns, and a usage line does not wrap.
    #[command(
        override_usage = "sweetspot tune <--device DEVICE|--scratch|--sim FILE|--host> [OPTIONS]",
        after_help = EXIT_STATUS_SHORT,
        after_long_help = EXIT_STATUS
    )]
    Tune(tune::Args),
    /// Show recent tunes and their verdicts (--tune ID: its trials).
    ///
    /// The sweet spots in force come first, then the latest tunes (5 unless --limit N or
    /// --all), each in a line and its verdict in the next; --tune ID shows one tune's trials
    /// and what they measured; --json prints everything stored (tunes, trials, sweet spots).
    #[command(after_help = EXIT_STATUS_SHORT, after_long_help = EXIT_STATUS)]
    History(history::Args),
    /// Draw a stored tune as SVG: knob responses, trials, the check.
    ///
    /// Draws, for one tune: the response of each tuned knob (its objective per setting
    /// measured, each trial a point, each setting's mean and t-based 95% CI, the default and
    /// the sweet spot ringed; a log2 axis for a knob on a log2 grid, the scheduler's values as
    /// categories); for two knobs, a heat map of the settings measured; every trial in the
    /// order it ran, so drift and the race show; and the final check, the default against the
    /// best on its fresh pairs, with the verdict in its title. A trial of the loaded runs only
    /// (the screen's, the race's) has no Ratio of its own: it is drawn hollow, its loaded Time
    /// divided by the mean no_load Time of the tune, as the tune's report reads it; a trial of
    /// no_load alone is a triangle on the trial panel's axis.
    ///
    /// A command of its own, not `history --plot`: history lists many tunes as text or JSON,
    /// a plot is of one tune and writes a file. The SVG needs no browser and no font at run
    /// time (text is SVG text; any viewer draws it): `rsvg-convert -w 800 F.svg -o F.png`
    /// makes a PNG. It reads the database only.
    #[command(after_help = EXIT_STATUS_SHORT, after_long_help = EXIT_STATUS)]
    Plot(plot::Args),
    /// Export sweet spots as boot profiles, or apply one.
    ///
    /// The formats: sweetspot's TOML, udev rules, a sysctl.d file, a TuneD profile.
    #[command(after_help = EXIT_STATUS_SHORT, after_long_help = EXIT_STATUS)]
    Profile(profile::Args),
    /// Compare a profile with the disks now; exit 1 on drift.
    ///
    /// The profile defaults to the latest sweet spots.
    #[command(after_help = EXIT_STATUS_SHORT, after_long_help = EXIT_STATUS)]
    Verify(profile::VerifyArgs),
    /// Keep devices at their sweet spot (hotplug, drift, retunes).
    ///
    /// It applies profiles to disks as they appear and watches for drift.
    #[command(after_help = DAEMON_EXIT_STATUS_SHORT, after_long_help = DAEMON_NOTES)]
    Daemon(daemon::Args),
    /// Show enrolled devices: last tune, sweet spot, daemon's work.
    ///
    /// Per enrolled device (a real disk with a stored sweet spot, or one the daemon's config
    /// enrols by name): its last tune, its sweet spot, whether the daemon keeps it there, and
    /// when a retune is due and why. Scratch and simulated tunes are listed by `history`.
    #[command(after_help = EXIT_STATUS_SHORT, after_long_help = EXIT_STATUS)]
    Status(daemon::StatusArgs),
    /// Print a shell's completion script (bash, zsh, fish, …).
    #[command(after_help = EXIT_STATUS_SHORT, after_long_help = EXIT_STATUS)]
    Completions(completions::Args),
    /// Internal: the reference job and the loads run as this (hidden).
    #[command(name = "__worker", hide = true)]
    Worker(crate::bench::worker::Args),
}

/// What every command gets: roots, database path, verbosity.
#[derive(Clone, Debug)]
pub(crate) struct Ctx {
    /// sysfs/procfs roots.
    pub root: SysRoot,
    /// Database path (resolved).
    pub db: PathBuf,
    /// True when `--db` or `SWEETSPOT_DB` gave [`Ctx::db`] (not the built-in default): it
    /// then wins over the daemon config's `db`.
    pub db_given: bool,
    /// -q given.
    pub quiet: bool,
}

impl Ctx {
    /// Who may have written the database ([`crate::trust`]): [`Origin::Named`] when `--db` or
    /// `SWEETSPOT_DB` gave it, else [`Origin::System`] (the default path).
    pub(crate) fn db_origin(&self) -> Origin {
        if self.db_given {
            Origin::Named
        } else {
            Origin::System
        }
    }

    /// Opens the database to write it (journal, trials), once it has passed the trust rule
    /// ([`Store::check_trusted`]). Errors: those of the check and of [`Store::open`] (a
    /// database that cannot be written is refused with exit 2).
    pub(crate) fn store(&self) -> Result<Store> {
        Store::check_trusted(&self.db, self.db_origin())?;
        Store::open(&self.db)
    }

    /// Opens the database for a command that only reads it ([`Store::open_read_only`]), once
    /// it has passed the trust rule. Errors: as [`Ctx::store`].
    pub(crate) fn store_read_only(&self) -> Result<Store> {
        Store::check_trusted(&self.db, self.db_origin())?;
        Store::open_read_only(&self.db)
    }

    /// Records devices shown or used in the store, if it exists (a listing never creates a
    /// database: a mistyped `--db` must not leave one behind); a store that cannot be opened
    /// only warns (listing devices must work without a writable database).
    pub(crate) fn record_devices(&self, devices: &[crate::device::Device], kernel: &str) {
        if !self.db.is_file() {
            return;
        }
        let res = self.store().and_then(|s| {
            devices
                .iter()
                .try_for_each(|d| s.record_device(d, kernel).map(|_| ()))
        });
        if let Err(e) = res {
            tracing::warn!("not recording devices: {e}");
        }
    }
}

/// Parses the command line, runs the command, prints errors, and returns the exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    init_tracing(
        cli.verbose,
        cli.quiet,
        matches!(cli.command, Command::Daemon(_)),
    );
    match run(cli) {
        Ok(()) => 0,
        // The reader of our output has gone (`| head -1`): end quietly, as ripgrep does. A
        // tune has already been recorded as interrupted and its device restored.
        // Only the interruption the closed pipe caused: any other failure keeps its code, and
        // a pipe that closed after Ctrl-C or SIGTERM (the stop's own messages failing) leaves
        // the signal's 130.
        Err(Error::Interrupted) if crate::signals::stopped_by_closed_output() => 0,
        Err(e) => {
            crate::signals::eprint_line(&format!("sweetspot: error: {e}"));
            e.exit_code()
        }
    }
}

/// The log on stderr, `sweetspot: warning: …` lines ([`log::Diagnostic`]): warnings by
/// default, `-v` info, `-vv` debug. The daemon logs info by default, in the journal's format
/// ([`crate::daemon::log`]). `SWEETSPOT_LOG` overrides the
/// level with `target=level` directives (`debug`, `sweetspot::daemon=debug,warn`:
/// tracing-subscriber's `Targets`, the syntax of `RUST_LOG` without span filters); one that
/// does not parse is ignored.
fn init_tracing(verbose: u8, quiet: bool, daemon: bool) {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let level = match (quiet, verbose) {
        (true, _) => LevelFilter::ERROR,
        (false, 0) if daemon => LevelFilter::INFO,
        (false, 0) => LevelFilter::WARN,
        (false, 1) => LevelFilter::INFO,
        (false, _) => LevelFilter::DEBUG,
    };
    let filter = std::env::var("SWEETSPOT_LOG")
        .ok()
        .and_then(|s| s.parse::<Targets>().ok())
        .unwrap_or_else(|| Targets::new().with_default(level));
    let fmt = tracing_subscriber::fmt::layer().with_writer(|| LogWriter);
    if daemon {
        let fmt = fmt
            .with_ansi(false)
            .event_format(crate::daemon::log::Journald::detect());
        let _ = tracing_subscriber::registry()
            .with(fmt)
            .with(filter)
            .try_init();
        return;
    }
    // `sweetspot: warning: …`, as the command's errors are written ([`log::Diagnostic`]).
    let fmt = fmt.with_ansi(false).event_format(log::Diagnostic);
    let _ = tracing_subscriber::registry()
        .with(fmt)
        .with(filter)
        .try_init();
}

/// stderr for the log: a closed pipe (`2>&1 | head -1`) stops the work like a closed stdout
/// does ([`crate::signals::close_output`]) instead of tracing-subscriber's `eprintln!` of the
/// write error, which panics on that same closed pipe.
struct LogWriter;

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match std::io::stderr().write(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                crate::signals::close_output(crate::signals::Output::Stderr);
                Ok(buf.len())
            }
            r => r,
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Refuses a `--sysfs-root` or `--procfs-root` given on the command line that is not a
/// directory (bad input, exit 2, naming the flag and path): read as an empty tree, it would
/// list no disk and drop every host-wide knob without a word. The defaults are left to the
/// commands, whose errors name what they could not read.
fn check_roots(cli: &Cli) -> Result<()> {
    for (flag, dir, default) in [
        ("--sysfs-root", &cli.sysfs_root, SYSFS_ROOT),
        ("--procfs-root", &cli.procfs_root, PROCFS_ROOT),
    ] {
        if dir.as_os_str() == default {
            continue;
        }
        let why = match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => continue,
            Ok(_) => "not a directory".to_string(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => "no such directory".into(),
            Err(e) => e.to_string(),
        };
        return Err(Error::BadInput(format!("{flag} {}: {why}", dir.display())));
    }
    Ok(())
}

/// `dir` made absolute against the working directory (not resolved: `/sys` stays `/sys`).
/// Errors: bad input when there is no working directory to resolve it against.
fn absolute(dir: &Path) -> Result<PathBuf> {
    std::path::absolute(dir).map_err(|e| Error::BadInput(format!("{}: {e}", dir.display())))
}

/// Runs a parsed command line.
pub(crate) fn run(cli: Cli) -> Result<()> {
    check_roots(&cli)?;
    let given = cli.db.or_else(|| {
        std::env::var_os("SWEETSPOT_DB")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    // Absolute too: its lock files and the `--db` of every printed command then name one
    // database from any directory.
    let given = given.map(|p| absolute(&p)).transpose()?;
    let ctx = Ctx {
        // Absolute, so the journal's paths and the commands printed work from any directory.
        root: SysRoot::new(absolute(&cli.sysfs_root)?, absolute(&cli.procfs_root)?),
        db_given: given.is_some(),
        db: given.unwrap_or_else(Store::default_path),
        quiet: cli.quiet,
    };
    match &cli.command {
        Command::Devices(a) => devices::run(&ctx, a),
        Command::Knobs(a) => knobs::run(&ctx, a),
        Command::Set(a) => set::run(&ctx, a),
        Command::Restore(a) => restore::run(&ctx, a),
        Command::Bench(a) => bench::run(&ctx, a),
        Command::Tune(a) => tune::run(&ctx, a),
        Command::History(a) => history::run(&ctx, a),
        Command::Plot(a) => plot::run(&ctx, a),
        Command::Profile(a) => profile::run(&ctx, a),
        Command::Verify(a) => profile::verify(&ctx, a),
        Command::Daemon(a) => daemon::run(&ctx, a),
        Command::Status(a) => daemon::status(&ctx, a),
        Command::Completions(a) => completions::run(a),
        Command::Worker(a) => crate::bench::worker::run(a),
    }
}

/// Prints an object as pretty JSON on stdout, `"version"` first
/// ([`crate::output::json::Versioned`], docs/json.md). A closed pipe is not a failure.
pub(crate) fn print_json<T: serde::Serialize>(v: &T) -> Result<()> {
    print_out(&crate::output::format::json(v)?)
}

/// Writes text to stdout; a broken pipe (e.g. `| head`) is not an error.
pub(crate) fn print_out(s: &str) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(s.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            crate::signals::close_output(crate::signals::Output::Stdout);
            Ok(())
        }
        Err(e) => Err(Error::io("writing to stdout", e)),
    }
}
