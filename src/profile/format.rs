//! The formats `profile export` writes, behind one trait (as `crate::output::Exporter` is
//! for `bench`): sweetspot's TOML ([`super::toml_text`]), udev rules ([`super::udev`]), a
//! sysctl.d file ([`super::sysctl`]) and a TuneD profile ([`super::tuned`]). Each file keeps
//! its own `render` function; the impls here put them behind `ProfileFormat` with what
//! `export` needs to know of each: its name and where `--out` puts the text.

use super::model::Profile;
use crate::Result;
use crate::sysroot::SysRoot;

/// A format a [`Profile`] is exported as.
pub(crate) trait ProfileFormat {
    /// The name `--format` takes (`toml`, `udev`, `sysctl`, `tuned`).
    fn name(&self) -> &'static str;
    /// What `--out` names: the file itself, or a directory that gets the file.
    fn out(&self) -> Out;
    /// The text (ending in a newline). Errors (exit 2): the format's own, each naming the
    /// field and entry it cannot write (see the format's module).
    fn render(&self, profile: &Profile) -> Result<String>;
}

/// What `profile export --out PATH` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Out {
    /// The file; `extension` is the one its installed name has (`rules` for
    /// `/etc/udev/rules.d/99-sweetspot.rules`).
    File {
        /// Without the dot.
        extension: &'static str,
    },
    /// A directory (created when missing) that gets `file`.
    Dir {
        /// The file's name in the directory.
        file: &'static str,
    },
}

/// sweetspot's own TOML ([`Profile::to_toml`]), for `profile apply` and `verify`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Toml;

impl ProfileFormat for Toml {
    fn name(&self) -> &'static str {
        "toml"
    }
    fn out(&self) -> Out {
        Out::File { extension: "toml" }
    }
    fn render(&self, profile: &Profile) -> Result<String> {
        profile.to_toml()
    }
}

/// udev rules ([`super::udev::render`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Udev;

impl ProfileFormat for Udev {
    fn name(&self) -> &'static str {
        "udev"
    }
    fn out(&self) -> Out {
        Out::File { extension: "rules" }
    }
    fn render(&self, profile: &Profile) -> Result<String> {
        super::udev::render(profile)
    }
}

/// A sysctl.d file of the host-wide knobs ([`super::sysctl::render`]); `root`'s `/proc/sys`
/// says which keys this kernel has.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sysctl<'a> {
    /// The roots the keys are checked against.
    pub root: &'a SysRoot,
}

impl ProfileFormat for Sysctl<'_> {
    fn name(&self) -> &'static str {
        "sysctl"
    }
    fn out(&self) -> Out {
        Out::File { extension: "conf" }
    }
    fn render(&self, profile: &Profile) -> Result<String> {
        super::sysctl::render(profile, self.root)
    }
}

/// A TuneD profile's `tuned.conf` ([`super::tuned::render`]); `root` resolves present disks
/// to their bus paths.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tuned<'a> {
    /// The roots present disks are read under.
    pub root: &'a SysRoot,
}

impl ProfileFormat for Tuned<'_> {
    fn name(&self) -> &'static str {
        "tuned"
    }
    fn out(&self) -> Out {
        Out::Dir { file: "tuned.conf" }
    }
    fn render(&self, profile: &Profile) -> Result<String> {
        super::tuned::render(profile, self.root)
    }
}
