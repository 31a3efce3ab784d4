//! `--json`, parsed once for every command that prints a result as a table or as JSON, and
//! the one function that prints such a result ([`emit`]; the rendering is
//! [`crate::report::output`]'s).

use crate::Result;
use crate::report::output::{self, Format, Table};

/// The `--json` flag, flattened into each command's `Args`. The help text here is
/// `devices`' and `knobs`'; a command that says more sets its own with
/// `#[command(mut_arg("json", …))]` on its `Args` (the flag stays where the field is).
#[derive(Clone, Copy, Debug, Default, clap::Args)]
pub struct JsonArg {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

impl JsonArg {
    /// [`Format::Json`] when `--json` was given, else [`Format::Text`].
    pub fn format(self) -> Format {
        if self.json {
            Format::Json
        } else {
            Format::Text
        }
    }
}

/// Prints `value` on stdout as `format` says ([`output::render`]; a closed pipe is not a
/// failure, [`super::print_out`]).
pub fn emit<T: serde::Serialize + Table + ?Sized>(value: &T, format: Format) -> Result<()> {
    super::print_out(&output::render(value, format)?)
}
