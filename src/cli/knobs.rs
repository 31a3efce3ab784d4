//! `sweetspot knobs`. Not built yet: filled in by its issue.

use super::Ctx;
use crate::{Error, Result};

/// Arguments of `sweetspot knobs`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The device (kernel name, e.g. sda, nvme0n1, loop0).
    pub device: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `sweetspot knobs`.
pub fn run(_ctx: &Ctx, _args: &Args) -> Result<()> {
    Err(Error::Failed("'knobs' is not built yet".into()))
}
