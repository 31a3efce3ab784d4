//! Profiles for tests, written as the TOML a user would keep and read back through the real
//! parser ([`crate::profile::file::parse`]): each entry `(name, match, kernel, knobs)`, with
//! `match` and `knobs` as TOML inline-table bodies (`wwid = "naa.1"`, `fifo_batch = 8`; an
//! empty `knobs` is a "keep the default" entry).
#![allow(clippy::unwrap_used)]

use crate::profile::Profile;

/// The profile of `entries`, parsed.
pub(crate) fn profile(entries: &[(&str, &str, &str, &str)]) -> Profile {
    let mut text = String::from("version = 1\n");
    for (name, matches, kernel, knobs) in entries {
        text.push_str(&format!(
            "[[device]]\nname = \"{name}\"\nmatch = {{ {matches} }}\nkernel = \"{kernel}\"\n\
             policy = \"quick\"\ntuned_at = \"2026-12-01T08:00:00Z\"\n"
        ));
        if !knobs.is_empty() {
            text.push_str(&format!("knobs = {{ {knobs} }}\n"));
        }
    }
    crate::profile::file::parse(&text, std::path::Path::new("p.toml")).unwrap()
}
