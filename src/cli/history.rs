//! `sweetspot history`. Not built yet: filled in by its issue.

use super::Ctx;
use crate::{Error, Result};

/// Arguments of `sweetspot history`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this device.
    pub device: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `sweetspot history`.
pub fn run(_ctx: &Ctx, _args: &Args) -> Result<()> {
    Err(Error::Failed("'history' is not built yet".into()))
}
