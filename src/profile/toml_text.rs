//! Our own profile format written out: a [`Profile`] as TOML, with the comments a reader
//! needs (which sweet spots an entry stands for, "keep the default", where `[host]` comes
//! from). The loader is `file.rs`; the other formats are `udev.rs`, `sysctl.rs`, `tuned.rs`.

use super::escape::{self, toml as esc};
use super::fleet;
use super::model::Profile;

impl Profile {
    /// The TOML text, with a comment on every device entry that applies no knob ("keep the
    /// default": a profile must not pin an old default, which a newer kernel may have moved,
    /// as read_ahead_kb did from 128 to 4096 KiB in 6.17), and one on where `[host]` comes
    /// from. Strings are quoted by the `toml` crate, comments written through
    /// `escape::toml`. Errors (exit 2): a control character in any free-text field,
    /// naming the field and the entry.
    pub fn to_toml(&self) -> crate::Result<String> {
        escape::profile_fields("toml", self)?;
        let body = toml::to_string(self)
            .map_err(|e| crate::Error::Failed(format!("writing the profile: {e}")))?;
        let mut out = String::from(
            "# sweetspot profile: sweet spots keyed by device identity.\n\
             # Apply with `sweetspot profile apply FILE`; check with `sweetspot verify FILE`.\n",
        );
        let mut idx = 0;
        for line in body.lines() {
            if line == "[[device]]" {
                if let Some(d) = self.devices.get(idx)
                    && !d.also.is_empty()
                {
                    out.push_str(&esc::comment(
                        "the sweet spots it stands for",
                        &escape::of_entry(d),
                        &fleet::shared(d),
                    )?);
                }
                if let Some(d) = self.devices.get(idx)
                    && d.knobs.is_empty()
                {
                    out.push_str(
                        "# keep the default: this tune found no significant improvement, so \
                         no knob is set\n# (the kernel's default may move in a newer release, \
                         and a profile must not pin an old one)\n",
                    );
                }
                idx += 1;
            }
            if line == "[host]"
                && let Some(h) = &self.host
            {
                out.push_str(if h.is_tuned() {
                    "# the host's own sweet spot (`tune --host`), applied to whichever host\n\
                     # applies this profile; `knobs` also gathers any host-wide knobs of the\n\
                     # devices' tunes\n"
                } else {
                    "# host-wide knobs of the device tunes above, applied once per host\n"
                });
                if h.knobs.is_empty() {
                    out.push_str(
                        "# keep the default: this tune found no significant improvement, so \
                         no knob is set\n",
                    );
                }
            }
            out.push_str(line);
            out.push('\n');
        }
        Ok(out)
    }
}
