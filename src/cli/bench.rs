//! `sweetspot bench`. Not built yet: filled in by its issue.

use super::Ctx;
use crate::{Error, Result};

/// Arguments of `sweetspot bench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `sweetspot bench`.
pub fn run(_ctx: &Ctx, _args: &Args) -> Result<()> {
    Err(Error::Failed("'bench' is not built yet".into()))
}
