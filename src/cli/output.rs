//! `--json`, parsed once for every command that prints a result as a table or as JSON, and
//! the one function that prints such a result ([`emit`]; the rendering is
//! [`crate::output::format`]'s).

use crate::Result;
use crate::output::format::{Format, Table, render};
use std::marker::PhantomData;

/// The `--json` flag, flattened into each command's `Args` (where its field is, the flag is
/// listed); `H` is the command's help text for it ([`TableHelp`] unless it says more).
// The help is a type parameter, not `#[command(mut_arg("json", …))]` on the command: clap's
// `mut_arg` moves the flag to the end of the command's arguments, which reorders the shell
// completion scripts (tests/completions.rs).
#[derive(Clone, Copy, Debug, Default, clap::Args)]
pub struct JsonArg<H: JsonHelp = TableHelp> {
    // True when `--json` was given. (No doc comment: clap would read it as the help, which is
    // `H`'s.)
    #[arg(long, help = H::HELP, long_help = H::LONG_HELP, conflicts_with_all = H::CONFLICTS)]
    pub json: bool,
    #[arg(skip)]
    help: PhantomData<H>,
}

impl<H: JsonHelp> JsonArg<H> {
    /// [`Format::Json`] when `--json` was given, else [`Format::Text`].
    pub(crate) fn format(&self) -> Format {
        if self.json {
            Format::Json
        } else {
            Format::Text
        }
    }
}

/// A command's help text for `--json` (as clap shows it: the short help without a final
/// period; the long help, when it has one, in full).
pub trait JsonHelp: Clone + Copy + std::fmt::Debug + Default + Send + Sync + 'static {
    /// `-h`'s line (and `--help`'s, without [`JsonHelp::LONG_HELP`]).
    const HELP: &'static str;
    /// `--help`'s text, when it says more than [`JsonHelp::HELP`].
    const LONG_HELP: Option<&'static str> = None;
    /// The command's flags that `--json` cannot go with (another output format).
    const CONFLICTS: &'static [&'static str] = &[];
}

/// `--json` of `devices` and `knobs`: "Print JSON instead of a table".
#[derive(Clone, Copy, Debug, Default)]
pub struct TableHelp;

impl JsonHelp for TableHelp {
    const HELP: &'static str = "Print JSON instead of a table";
}

/// Prints `value` on stdout as `format` says ([`render`]; a closed pipe is not a
/// failure, [`super::print_out`]).
pub(crate) fn emit<T: serde::Serialize + Table + ?Sized>(value: &T, format: Format) -> Result<()> {
    super::print_out(&render(value, format)?)
}
