//! `sweetspot completions SHELL`: the shell's completion script on stdout, generated from the
//! command line's own definition (clap_complete), so it cannot drift from `--help`. The same
//! scripts are in `completions/` in the source tree (tests/cli/completions.rs keeps them
//! current), which the Debian package installs where each shell looks for them.

use super::Cli;
use crate::Result;
use clap::CommandFactory;
use clap_complete::Shell;

/// `sweetspot completions` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell. bash: source it, or save it as
    /// /usr/share/bash-completion/completions/sweetspot; zsh: save it as _sweetspot in a
    /// directory of $fpath; fish: save it as ~/.config/fish/completions/sweetspot.fish.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// The completion script of `shell` for `sweetspot` and every visible subcommand and option
/// (clap_complete would offer hidden subcommands too: the internal `__worker` is left out).
pub(crate) fn script(shell: Shell) -> String {
    let top = Cli::command();
    // The top command's own arguments include its `--version` (the flag is an argument of
    // `Cli`, listed by `--help` only).
    let mut cmd = clap::Command::new("sweetspot")
        .version(super::VERSION)
        .disable_version_flag(true)
        .args(top.get_arguments().cloned())
        .subcommands(top.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "sweetspot", &mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// Prints [`script`] on stdout.
pub(crate) fn run(args: &Args) -> Result<()> {
    super::print_out(&script(args.shell))
}
