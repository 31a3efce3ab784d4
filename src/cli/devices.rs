//! `sweetspot devices`. Not built yet: filled in by its issue.

use super::Ctx;
use crate::{Error, Result};

/// Arguments of `sweetspot devices`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `sweetspot devices`.
pub fn run(_ctx: &Ctx, _args: &Args) -> Result<()> {
    Err(Error::Failed("'devices' is not built yet".into()))
}
