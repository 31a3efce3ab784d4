//! `sweetspot set`. Not built yet: filled in by its issue.

use super::Ctx;
use crate::{Error, Result};

/// Arguments of `sweetspot set`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The device (kernel name).
    pub device: String,
    /// KNOB=VALUE pairs, applied in kernel order (scheduler first).
    #[arg(required = true, value_name = "KNOB=VALUE")]
    pub pairs: Vec<String>,
}

/// Runs `sweetspot set`.
pub fn run(_ctx: &Ctx, _args: &Args) -> Result<()> {
    Err(Error::Failed("'set' is not built yet".into()))
}
