//! `sweetspot restore`. Not built yet: filled in by its issue.

use super::Ctx;
use crate::{Error, Result};

/// Arguments of `sweetspot restore`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this device (default: every journaled knob, host-wide vm knobs included).
    pub device: Option<String>,
}

/// Runs `sweetspot restore`.
pub fn run(_ctx: &Ctx, _args: &Args) -> Result<()> {
    Err(Error::Failed("'restore' is not built yet".into()))
}
