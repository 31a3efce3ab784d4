//! `sweetspot plot TUNE_ID|DEVICE [--out FILE.svg]`: an SVG of one stored tune
//! ([`crate::plot`]).
//!
//! A command of its own rather than `history --plot`: `history` lists many tunes (every one,
//! or a device's) as text or JSON on stdout, while a plot is of exactly one tune and writes a
//! file; a flag on `history` would need its own tune selector and output path anyway.

use super::Ctx;
use crate::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Arguments of `sweetspot plot`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The tune: its id (`history`'s #N), or a device (kernel name such as `loop0`, identity,
    /// or target label such as `sim:seed-2.5.39-mm1-fifo_batch`), whose newest tune is drawn.
    #[arg(value_name = "TUNE_ID|DEVICE")]
    pub tune: String,

    /// Where to write the SVG: this file, replaced if it exists (written whole, then renamed
    /// into place), or `-` for stdout. Default: `sweetspot-tune-N.svg` in the current
    /// directory, never replaced (give --out to replace it).
    #[arg(long, short, value_name = "FILE.svg")]
    pub out: Option<PathBuf>,
}

/// Runs `sweetspot plot`.
pub(crate) fn run(ctx: &Ctx, args: &Args) -> Result<()> {
    if !ctx.db.exists() {
        return Err(Error::BadInput(format!(
            "plot: {} does not exist (nothing tuned with this --db)",
            ctx.db.display()
        )));
    }
    let store = ctx.store_read_only()?;
    let tune = crate::plot::data::find_tune(&store, &args.tune)?;
    let id = tune.id;
    let data = crate::plot::data::load(&store, tune)?;
    if data.points.is_empty() {
        return Err(Error::BadInput(format!(
            "plot: tune #{id} has no finished trial to draw"
        )));
    }
    let svg = crate::plot::svg::render(&data)?;
    match &args.out {
        Some(p) if p.as_os_str() == "-" => super::print_out(&svg),
        Some(p) => {
            write(p, &svg, true)?;
            say(ctx, p, id)
        }
        None => {
            let p = PathBuf::from(format!("sweetspot-tune-{id}.svg"));
            write(&p, &svg, false)?;
            say(ctx, &p, id)
        }
    }
}

fn say(ctx: &Ctx, p: &Path, id: i64) -> Result<()> {
    if ctx.quiet {
        return Ok(());
    }
    super::print_out(&format!("tune #{id} drawn in {}\n", p.display()))
}

/// Writes `text` to `path` through a temporary file in its directory, renamed into place: a
/// reader never sees half a plot, and a symlink at `path` is replaced, not followed. With
/// `replace` false an existing `path` is refused (exit 2). The file gets mode 0666 less the
/// umask, as a file the shell makes.
fn write(path: &Path, text: &str, replace: bool) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let io = |e: std::io::Error| Error::io(format!("writing {}", path.display()), e);
    let mut tmp = tempfile::Builder::new()
        .prefix(".sweetspot-plot")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::BadInput(format!(
                "--out {}: no directory {}",
                path.display(),
                dir.display()
            )),
            _ => io(e),
        })?;
    tmp.write_all(text.as_bytes()).map_err(io)?;
    // umask(2) only reads by setting: set back at once (`plot` runs one thread).
    use nix::sys::stat::{Mode, umask};
    let mask = umask(Mode::from_bits_truncate(0o022));
    umask(mask);
    use std::os::unix::fs::PermissionsExt;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(
            0o666 & !(mask.bits() as u32),
        ))
        .map_err(io)?;
    if replace {
        tmp.persist(path).map_err(|e| io(e.error))?;
    } else {
        tmp.persist_noclobber(path).map_err(|e| {
            if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                Error::BadInput(format!(
                    "{} exists; give --out {} to replace it, or another --out",
                    path.display(),
                    path.display()
                ))
            } else {
                io(e.error)
            }
        })?;
    }
    Ok(())
}
