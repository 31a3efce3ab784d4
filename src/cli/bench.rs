//! `sweetspot bench`. Not built yet: filled in by the Contest-subset issue.

use super::Ctx;
use crate::bench::target::TargetArgs;
use crate::{Error, Result};

/// Arguments of `sweetspot bench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: TargetArgs,

    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `sweetspot bench`.
pub fn run(_ctx: &Ctx, _args: &Args) -> Result<()> {
    Err(Error::Failed("'bench' is not built yet".into()))
}
