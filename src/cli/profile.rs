//! `sweetspot profile export [--format toml|udev|sysctl|tuned] [--device D] [--policy P]
//! [--match identity|model] [--out FILE]`: the sweet spots in the database as a profile for
//! boot. `sweetspot profile apply [FILE] [--device D] [--dry-run]`: a profile (default: the
//! database's latest sweet spots) applied to the disks present, journaled.
//! `sweetspot verify [FILE] [--json]`: expected against actual, exit 1 on drift.

use super::Ctx;
use super::output::{JsonArg, JsonHelp, emit};
use crate::output::format::Table;
use crate::profile::Profile;
use crate::profile::apply::ApplyStatus;
use crate::profile::build::{self, MatchBy, Select};
use crate::profile::format::{self, Out, ProfileFormat};
use crate::profile::verify::Verification;
use crate::sysroot::SysRoot;
use crate::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Arguments of `sweetspot profile`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

/// The `profile` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Export sweet spots for boot: TOML, udev, sysctl.d, TuneD.
    ///
    /// Export one sweet spot per device identity for boot (the latest, the running kernel's
    /// before another kernel's; --policy picks one policy's), and the host's own (`tune
    /// --host`) with the host-wide knobs: as sweetspot's TOML, udev rules, a sysctl.d file or
    /// a TuneD profile. Sweet spots of --scratch and --sim devices are never exported (they do
    /// not last past the run).
    ///
    /// An entry carries the knobs its sweet spot changed, and, when those include knobs of a
    /// scheduler's iosched/ directory (slice_idle, fifo_batch, …) but not the scheduler, the
    /// scheduler they were tuned under: those files exist only under it, so every format sets
    /// it first (TOML `scheduler`, udev `ATTR{queue/scheduler}`, TuneD `elevator`), whatever
    /// scheduler the disk comes up on.
    ///
    /// Every format matches a disk by its identity, never by a kernel name that may swap,
    /// except TuneD's [sysfs] part, which matches by the disk's bus path (the port).
    /// TuneD's [disk] plugin matches udev properties (ID_WWN, ID_SERIAL_SHORT, ID_MODEL,
    /// DEVPATH) and sets elevator and readahead; its [sysfs] plugin, which sets the rest
    /// (nr_requests, iosched/*, the other queue files), matches no device and takes paths:
    /// the disk's bus path (its by_path identity, or the bus path of a disk present at
    /// export, which follows the port). --format tuned is refused (exit 2), naming the entry,
    /// its knobs and why, when an entry cannot be matched so: a loop device or a t10 wwid
    /// (no udev property), such knobs of a disk with no bus path here, or of a --match model
    /// entry (a fleet profile goes to other machines). Export those with --format udev or toml.
    #[command(after_help = super::EXIT_STATUS_SHORT, after_long_help = super::EXIT_STATUS)]
    Export(ExportArgs),
    /// Apply a profile to the disks present now (journaled).
    ///
    /// The profile defaults to the latest sweet spots in the database; disks are matched by
    /// identity, and `restore` undoes it. A disk several entries
    /// match gets the narrowest one (one disk over model and firmware over model alone), with
    /// a warning; two equally narrow ones are refused. Exit 1 when a knob was not applied.
    #[command(after_help = super::EXIT_STATUS_SHORT, after_long_help = super::EXIT_STATUS)]
    Apply(ApplyArgs),
}

/// Arguments of `sweetspot profile apply`.
#[derive(Debug, clap::Args)]
pub struct ApplyArgs {
    /// A profile (TOML); the database's latest if not given.
    ///
    /// A profile (sweetspot's TOML, from `profile export`); default: the database's latest
    /// sweet spots. It must be writable by root alone: not world-writable, and, when run as
    /// root, owned by root, not writable by a group other than root's (gid 0), and every
    /// directory above it the same (a sticky one like /tmp aside).
    pub file: Option<PathBuf>,
    /// Only this present disk (kernel name).
    #[arg(long, value_name = "DEVICE")]
    pub device: Option<String>,
    /// Print what would be written, as shell commands, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Arguments of `sweetspot verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// A profile (TOML); the database's latest if not given.
    ///
    /// A profile (sweetspot's TOML); default: the database's latest sweet spots. It must be
    /// writable by root alone, as for `profile apply`.
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub output: JsonArg<VerifyHelp>,
}

/// `verify --json`'s help.
#[derive(Clone, Copy, Debug, Default)]
pub struct VerifyHelp;

impl JsonHelp for VerifyHelp {
    const HELP: &'static str = "Print JSON (with a `version` field)";
}

/// Output formats of `profile export`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// sweetspot's own versioned profile (for `profile apply` and `verify`).
    Toml,
    /// udev rules (/etc/udev/rules.d/99-sweetspot.rules): no sweetspot binary at boot.
    Udev,
    /// A sysctl.d file (/etc/sysctl.d/99-sweetspot.conf) with the host-wide knobs only.
    Sysctl,
    /// A TuneD profile: with --out DIR, DIR/tuned.conf; else tuned.conf on stdout. Refused
    /// for an entry TuneD cannot match by identity (see above).
    Tuned,
}

impl Format {
    /// The format's writer ([`ProfileFormat`]); `root` is where sysctl keys and present
    /// disks are read.
    fn exporter(self, root: &SysRoot) -> Box<dyn ProfileFormat + '_> {
        match self {
            Format::Toml => Box::new(format::Toml),
            Format::Udev => Box::new(format::Udev),
            Format::Sysctl => Box::new(format::Sysctl { root }),
            Format::Tuned => Box::new(format::Tuned { root }),
        }
    }
}

/// Arguments of `sweetspot profile export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "toml")]
    pub format: Format,
    /// Only this device (kernel name or identity), or `host`.
    ///
    /// Only this device: a kernel name present now (e.g. sda), or a stored identity; `host`
    /// for the host's own sweet spot (`tune --host`) alone.
    #[arg(long, value_name = "DEVICE")]
    pub device: Option<String>,
    /// Only sweet spots of this policy.
    #[arg(long, value_name = "POLICY")]
    pub policy: Option<String>,
    /// Match a disk by identity, or all of its model.
    ///
    /// Match each disk by its identity (one disk), or by its model (every disk of that model,
    /// e.g. a fleet of identical boards; the disk must be present to read its model). Disks
    /// of one model whose sweet spots set the same knobs share one entry; if they differ, the
    /// export is refused, naming the knobs.
    #[arg(long = "match", value_enum, default_value = "identity")]
    pub match_by: MatchBy,
    /// Write here, not stdout (tuned: a directory).
    ///
    /// Write here (mode 0644, replaced atomically; missing directories are created) instead
    /// of stdout; for --format tuned a directory that gets tuned.conf. The file is yours:
    /// purging the Debian package keeps it (and names it when it is in /etc), and udev rules
    /// and sysctl.d files keep applying at boot until you remove them.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Runs `sweetspot profile`.
pub(crate) fn run(ctx: &Ctx, args: &Args) -> Result<()> {
    match &args.command {
        Command::Export(a) => export(ctx, a),
        Command::Apply(a) => apply(ctx, a),
    }
}

/// A profile to apply or verify, with what messages call it and why it may hold nothing.
struct Source {
    profile: Profile,
    /// `FILE`, or `the database DB`.
    name: String,
    /// Identities of the database's sweet spots left out (scratch, simulated devices).
    transient: Vec<String>,
    /// From the database (no FILE given); `Some(false)` when it does not exist yet.
    db_exists: Option<bool>,
    /// Which sweet spot a device's entry holds where several policies (or kernels) have one
    /// ([`build::Built::choices`]).
    choices: Vec<String>,
}

impl Source {
    /// Why the profile gives nothing to apply or verify (said when it does not): it is empty
    /// (with the left-out scratch and simulated sweet spots, if any) or keeps every default.
    fn why_nothing(&self) -> String {
        let p = &self.profile;
        if !p.devices.is_empty() || p.host.is_some() {
            format!("{} sets no knob (its entries keep the defaults)", self.name)
        } else if !self.transient.is_empty() {
            format!(
                "{} has sweet spots of scratch or simulated devices only ({}), which do not \
                 last past the run",
                self.name,
                self.transient.join(", ")
            )
        } else if self.db_exists == Some(false) {
            format!(
                "{} does not exist yet (nothing tuned with this --db)",
                self.name
            )
        } else if self.db_exists == Some(true) {
            format!(
                "{} has no sweet spot stored yet (see `sweetspot history`)",
                self.name
            )
        } else {
            format!("{} has no device entry and no [host] knobs", self.name)
        }
    }
}

/// The profile in `file`, or the database's latest sweet spots: an empty profile when the
/// database does not exist yet (before the first tune there is nothing to apply, which is
/// no error), and it is not created.
fn source(ctx: &Ctx, file: Option<&Path>) -> Result<Source> {
    match file {
        Some(f) => Ok(Source {
            profile: crate::profile::file::load(f)?,
            name: f.display().to_string(),
            transient: Vec::new(),
            db_exists: None,
            choices: Vec::new(),
        }),
        None => {
            let name = format!("the database {}", ctx.db.display());
            if !ctx.db.exists() {
                return Ok(Source {
                    profile: Profile {
                        version: crate::profile::model::VERSION,
                        devices: Vec::new(),
                        host: None,
                        origin: None,
                    },
                    name,
                    transient: Vec::new(),
                    db_exists: Some(false),
                    choices: Vec::new(),
                });
            }
            let keep = super::daemon::ruling_policies(ctx);
            let sel = Select {
                device: None,
                policy: None,
                by: MatchBy::Identity,
                only: None,
                export: false,
                keep: Some(&keep),
            };
            let built = build::build_noting(&ctx.store_read_only()?, &ctx.root, &sel)?;
            Ok(Source {
                profile: built.profile,
                name,
                transient: built.transient,
                db_exists: Some(true),
                choices: built.choices,
            })
        }
    }
}

/// Runs `sweetspot profile apply`. Nothing to apply (no entry matches `--device`, the
/// profile is empty, the database does not exist yet) is said on stderr and is no error
/// (exit 0): a boot-time apply before the first tune has nothing to do.
fn apply(ctx: &Ctx, args: &ApplyArgs) -> Result<()> {
    let src = source(ctx, args.file.as_deref())?;
    let profile = &src.profile;
    if let Some(d) = &args.device {
        crate::device::find(&ctx.root, d)?;
    }
    if src.db_exists == Some(false) {
        // Opening the store to journal would create the database: there is nothing to write.
        tracing::warn!("nothing to apply: {}", src.why_nothing());
        return Ok(());
    }
    // A dry run writes nothing: it reads the database as `history` does (also read-only).
    let mut store = if args.dry_run {
        ctx.store_read_only()?
    } else {
        ctx.store()?
    };
    let outcomes = crate::profile::apply::apply(
        &mut store,
        &ctx.root,
        &ctx.db,
        profile,
        args.device.as_deref(),
        args.dry_run,
        "profile apply",
    )?;
    if outcomes.is_empty() {
        match &args.device {
            Some(d) => tracing::warn!("{d}: no entry of {} matches it; nothing applied", src.name),
            None => tracing::warn!("nothing to apply: {}", src.why_nothing()),
        }
    }
    let mut text = String::new();
    let mut failed = 0;
    for o in &outcomes {
        if !outcome_text(ctx, o, &mut text) {
            failed += 1;
        }
    }
    if outcomes
        .iter()
        .any(|o| matches!(o.status, ApplyStatus::Applied { .. }))
    {
        text.push_str(&format!(
            "undo with `{}`\n",
            crate::undo::undo_command(&ctx.db, &ctx.root, None)
        ));
    }
    super::print_out(&text)?;
    if failed > 0 {
        return Err(Error::Failed(not_applied(failed)));
    }
    Ok(())
}

/// `profile apply`'s lines for one entry's outcome, added to `text` (warnings on stderr);
/// false when the entry was not applied (failed, or rolled back).
fn outcome_text(ctx: &Ctx, o: &crate::profile::apply::ApplyOutcome, text: &mut String) -> bool {
    let mut ok = true;
    let who = match &o.device {
        Some(d) if *d != o.entry => format!("{d} (tuned as {})", o.entry),
        Some(d) => d.clone(),
        None => o.entry.clone(),
    };
    if let Some(w) = &o.kernel_warning {
        tracing::warn!("{who}: {w}");
    }
    match &o.status {
        ApplyStatus::Applied { changes } if changes.is_empty() => {
            text.push_str(&format!("{who}: already at its sweet spot\n"));
        }
        ApplyStatus::Applied { changes } => {
            for (k, from, to) in changes {
                text.push_str(&format!("{who}: {k} {from} → {to}\n"));
            }
            let written = changes.iter().map(|(k, _, to)| (k.as_str(), to.as_str()));
            text.push_str(&super::set::daemon_note(
                ctx,
                o.device.as_deref().unwrap_or_default(),
                written,
            ));
        }
        ApplyStatus::DryRun { commands } => {
            text.push_str(&format!("# {who}\n"));
            for c in commands {
                text.push_str(&format!("{c}\n"));
            }
        }
        ApplyStatus::Nothing => {
            text.push_str(&format!("{who}: keep the default (nothing to apply)\n"));
        }
        ApplyStatus::Absent { wanted } => {
            text.push_str(&format!(
                "{who}: no disk with {wanted} is present; skipped\n"
            ));
        }
        ApplyStatus::Failed { error } => {
            ok = false;
            text.push_str(&format!("{who}: NOT APPLIED: {error}\n"));
        }
        ApplyStatus::RolledBack { changes, put_back } => {
            ok = false;
            if changes.is_empty() {
                text.push_str(&format!("{who}: NOT APPLIED: another write failed\n"));
            }
            for (k, from, to) in changes {
                text.push_str(&format!("{who}: ROLLED BACK: {k} {from} → {to} undone\n"));
            }
            for (k, v) in put_back {
                text.push_str(&format!("{who}: {k} put back to {v}\n"));
            }
        }
    }
    ok
}

/// `profile apply`'s error when `failed` entries were not applied: "1 profile entry was not
/// applied", "2 profile entries were not applied".
fn not_applied(failed: usize) -> String {
    let entries = if failed == 1 {
        "profile entry was"
    } else {
        "profile entries were"
    };
    format!("{failed} {entries} not applied")
}

/// Runs `sweetspot verify`.
pub(crate) fn verify(ctx: &Ctx, args: &VerifyArgs) -> Result<()> {
    let src = source(ctx, args.file.as_deref())?;
    let v = crate::profile::verify::verify(&ctx.root, &src.profile)?;
    if v.rows.is_empty() {
        tracing::warn!("nothing to verify: {}", src.why_nothing());
    }
    // Where several policies have a sweet spot for a device, the one checked is named.
    for c in &src.choices {
        eprintln!("verify: {c}");
    }
    emit(&v, args.output.format())?;
    if !v.clean {
        let n = v
            .rows
            .iter()
            .filter(|r| r.status == "drift" || r.status == "missing")
            .count();
        let knobs = if n == 1 {
            "knob differs"
        } else {
            "knobs differ"
        };
        return Err(Error::Failed(format!("{n} {knobs} from the profile")));
    }
    Ok(())
}

impl Table for Verification {
    /// [`crate::profile::verify::table`].
    fn table(&self) -> Result<String> {
        Ok(crate::profile::verify::table(self))
    }
}

fn export(ctx: &Ctx, args: &ExportArgs) -> Result<()> {
    if !ctx.db.exists() {
        return Err(Error::BadInput(format!(
            "profile export: {} does not exist (nothing tuned with this --db)",
            ctx.db.display()
        )));
    }
    let store = ctx.store_read_only()?;
    let keep = super::daemon::ruling_policies(ctx);
    let sel = Select {
        device: args.device.as_deref(),
        policy: args.policy.as_deref(),
        by: args.match_by,
        only: None,
        export: true,
        keep: Some(&keep),
    };
    let built = build::build_noting(&store, &ctx.root, &sel)?;
    let profile = built.profile;
    if profile.devices.is_empty() && profile.host.is_none() {
        if built.transient.is_empty() {
            tracing::warn!(
                "nothing to export: no sweet spot stored in {} (see `sweetspot history`)",
                ctx.db.display()
            );
        } else {
            tracing::warn!(
                "nothing to export from {}: the stored sweet spots are of scratch or simulated \
                 devices only ({}), which do not last past the run; tune a device with \
                 `--device` (or the host-wide knobs with `--host`) to export it",
                ctx.db.display(),
                built.transient.join(", ")
            );
        }
    }
    let format = args.format.exporter(&ctx.root);
    let text = format.render(&profile)?;
    let Some(out) = &args.out else {
        return super::print_out(&text);
    };
    // A path that cannot take the profile is bad input (exit 2), named as the flag.
    let bad = |why: String| Error::BadInput(format!("--out {}: {why}", out.display()));
    let written = match format.out() {
        Out::Dir { file } => {
            if out.exists() && !out.is_dir() {
                return Err(bad(format!(
                    "not a directory (--format {} writes DIR/{file})",
                    format.name()
                )));
            }
            std::fs::create_dir_all(out)
                .map_err(|e| Error::io(format!("creating {}", out.display()), e))
                .and_then(|()| write_atomic(&out.join(file), &text))
        }
        Out::File { .. } => {
            if out.is_dir() {
                return Err(bad("is a directory; give the file to write".into()));
            }
            write_atomic(out, &text)
        }
    };
    written.map_err(|e| match &e {
        // A full disk or a failing device is the machine's fault, not the path's (exit 1).
        Error::Io { source, .. } if !path_fault(source.kind()) => e,
        _ => bad(format!("cannot write there ({e})")),
    })
}

/// True when a write error is the path's fault, so bad input (exit 2): the user named a place
/// that cannot take the file (no permission, a read-only file system, a component that is not
/// a directory, an invalid name). False for the machine's failures (ENOSPC, EDQUOT, EIO, …:
/// exit 1), which the same path would survive another day.
fn path_fault(kind: std::io::ErrorKind) -> bool {
    use std::io::ErrorKind as K;
    matches!(
        kind,
        K::PermissionDenied
            | K::ReadOnlyFilesystem
            | K::NotADirectory
            | K::IsADirectory
            | K::InvalidFilename
            | K::NotFound
            | K::AlreadyExists
            | K::InvalidInput
            | K::Unsupported
    )
}

/// `e` without tempfile's wrapper, which names its random file: its errno when it has one,
/// else its kind.
fn os_error(e: &std::io::Error) -> std::io::Error {
    e.raw_os_error().map_or_else(
        || std::io::Error::from(e.kind()),
        std::io::Error::from_raw_os_error,
    )
}

/// Writes `text` to `path` through a temporary file in the same directory and a rename, mode
/// 0644, so a reader at boot never sees half a file; missing parent directories are created
/// (as `--format tuned` creates its directory), e.g. `/etc/sweetspot/` on a fresh machine.
fn write_atomic(path: &Path, text: &str) -> Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    // tempfile's errors name its random file; the user gave `path`. The OS error is kept
    // (its kind decides the exit code, its text is what the user reads).
    let ctx = |e: std::io::Error| Error::io(format!("writing {}", path.display()), os_error(&e));
    // Created by our own `open`: tempfile's own creation wraps the errno away (ENOSPC with no
    // inode left read "no storage space"), `make_in` passes ours on.
    let mut tmp = tempfile::Builder::new()
        .make_in(dir, |p| {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(p)
        })
        .map_err(ctx)?;
    // Through the File: tempfile's own Write wraps the errno away.
    tmp.as_file_mut().write_all(text.as_bytes()).map_err(ctx)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))
        .map_err(ctx)?;
    tmp.as_file().sync_all().map_err(ctx)?;
    tmp.persist(path).map_err(|e| ctx(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn not_applied_says_entry_or_entries() {
        assert_eq!(super::not_applied(1), "1 profile entry was not applied");
        assert_eq!(super::not_applied(2), "2 profile entries were not applied");
    }

    /// Each `--format` value gets the writer of that name, and only tuned's `--out` is a
    /// directory (of tuned.conf).
    #[test]
    fn each_format_gets_its_own_writer() {
        use super::{Format, Out};
        use clap::ValueEnum;
        let root = crate::sysroot::SysRoot::new("/nonexistent/sys", "/nonexistent/proc");
        for f in Format::value_variants() {
            let w = f.exporter(&root);
            let name = f.to_possible_value().map(|v| v.get_name().to_string());
            assert_eq!(Some(w.name().to_string()), name);
            let dir = matches!(w.out(), Out::Dir { file: "tuned.conf" });
            assert_eq!(dir, *f == Format::Tuned, "{}", w.name());
        }
    }
}
