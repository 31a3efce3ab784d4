//! How free text reaches a generated file: one function per format and place, and nothing
//! else writes a name, a value or a comment into one. A device's model and serial, a policy's
//! name, a benchmark's figure name, a host name: any of them may hold a character the
//! format reads as syntax (a line break that starts a new line of config, a `"` that ends a
//! quoted value), so each goes through the function of its format below, which quotes it
//! exactly or refuses it (exit 2, naming the field and the entry it belongs to).
//!
//! Every format refuses control characters (C0, DEL, C1, and the Unicode line and paragraph
//! separators U+2028/U+2029): none of these formats can carry a line break inside a line, and
//! a terminal would act on an escape sequence in a comment. Shown in messages escaped
//! (`shown`).
//!
//! - udev rules ([`udev`]), as systemd's `udev-rules.c` reads them (udev(7)):
//!   - one rule per line; a line ending in `\` continues on the next, but a line starting with
//!     `#` is a comment "regardless of line continuation" (`udev_rules_parse_file`), so a
//!     comment needs only to be one line;
//!   - a value is double-quoted. In a plain `"…"` only `\"` is unescaped (any other backslash
//!     stays as it is), so a value ending in `\` would escape its closing quote and a value
//!     holding `\"` cannot be written; a value with `\` or `"` is therefore written as an
//!     escaped string `e"…"` (C-style escapes, `cunescape`): `\\` and `\"` there. A udev too
//!     old for `e"…"` rejects the line ("Invalid key/value pair") rather than misread it;
//!   - a match value (`==`) is compared as it is written: `$` and `%` are substituted only in
//!     assigned values and attribute names (`token_match_attr` formats the name, never the
//!     value), so `$(…)`, `${` and `%` match literally. But `*`, `?`, `[` make it a glob
//!     (`string_is_glob`, matched by `fnmatch` where `\` is an escape too) and `|` separates
//!     alternatives, with no escape in the rule syntax: those are refused;
//!   - an assigned value (`ATTR{…}=`) is substituted: `%%` and `$$` are a literal `%` and `$`
//!     (udev(7), "string substitutions");
//!   - an attribute name (`ATTR{name}`) ends at the first `}`: only `[A-Za-z0-9_./-]` is let
//!     through.
//! - `sysctl.d` ([`sysctl`]), sysctl.d(5): `key = value` per line, whitespace around both
//!   stripped, the value running to the end of the line with no quoting; a line starting with
//!   `#` or `;` is a comment; no line continuation. Keys are `/`- or `.`-separated names: only
//!   `[A-Za-z0-9_./-]`, not starting with `-` (which would mean "ignore a failure").
//! - TuneD's `tuned.conf` ([`tuned`]): read by Python's `configparser` as TuneD's
//!   `profiles/loader.py` configures it: `delimiters=('=')` (a key ends at its first `=`),
//!   `inline_comment_prefixes=('#')` (a `#` after whitespace starts a comment), a line starting
//!   with whitespace continues the value above it, a line starting with `[` is a section,
//!   and values are read `raw` (no `%` interpolation). TuneD then expands `${VAR}`,
//!   `${i:PROFILE_DIR}` and `${f:function:args}` in values (`profiles/variables.py`,
//!   `profiles/functions/functions.py`; `${f:exec:…}` runs a command), with `\${` as the
//!   only escape, which its unescaping undoes inconsistently. So a regex value escapes `$`,
//!   `{` and `#` as regex literals (`\$`, `\{`, `\#`: never `${`, never `#` after whitespace);
//!   free text (`summary=`) with `${`, a `#` after whitespace, or whitespace at either end is
//!   refused; a key (a sysfs path) takes only `[A-Za-z0-9_./:,+-]` and the `*` glob we add.
//! - our TOML profile ([`toml`]): strings are written by the `toml` crate, which escapes
//!   them; a comment (TOML 1.0: "control characters other than tab are not permitted in
//!   comments") must be one line.

use super::model::{DeviceEntry, Host, Profile};
use crate::{Error, Result};

/// The entry a field belongs to, for messages: `sdb (model X serial Y)`, `the host`.
pub(crate) type Of<'a> = &'a str;

pub(crate) use crate::types::text::{is_control, shown};

/// Refuses (exit 2) a `field` of `of` holding a control character.
pub(crate) fn refuse_control(format: &str, field: &str, of: Of, v: &str) -> Result<()> {
    match v.chars().find(|c| is_control(*c)) {
        Some(c) => Err(Error::BadInput(format!(
            "--format {format}: {field} of {of} is '{}', which holds a control character \
             ('{}'): a generated file cannot carry it; refused",
            shown(v),
            shown(&c.to_string())
        ))),
        None => Ok(()),
    }
}

fn refused(format: &str, field: &str, of: Of, v: &str, why: &str) -> Error {
    Error::BadInput(format!(
        "--format {format}: {field} of {of} is '{}': {why}",
        shown(v)
    ))
}

/// Refuses a key (a name the format reads as syntax, and a path under `/sys` or `/proc/sys`)
/// with a character outside letters, digits and `allowed`, or a component (between `seps`;
/// a leading `/` aside) that is empty, `.` or `..`, or starts with `-`.
fn key<'a>(
    format: &str,
    field: &str,
    of: Of,
    k: &'a str,
    allowed: &str,
    seps: &[char],
) -> Result<&'a str> {
    let ok = |c: char| c.is_ascii_alphanumeric() || allowed.contains(c);
    let rel = k.strip_prefix('/').unwrap_or(k);
    let parts_ok = rel
        .split(seps)
        .all(|p| !p.is_empty() && p != "." && p != ".." && !p.starts_with('-'));
    if !k.chars().all(ok) || !parts_ok {
        return Err(refused(
            format,
            field,
            of,
            k,
            &format!(
                "only letters, digits and '{allowed}' can be written as a key here, in \
                 components that are not empty, '.' or '..' and do not start with '-'"
            ),
        ));
    }
    Ok(k)
}

/// The entry `d` as messages name it: `sdb (model X serial Y)`, escaped ([`shown`]).
pub(crate) fn of_entry(d: &DeviceEntry) -> String {
    format!("{} ({})", shown(&d.name), shown(&d.matches.describe()))
}

/// Refuses (exit 2) a control character in any free-text field of the entry `d` that a
/// generated file carries (its name, provenance, match values, knob names and values, and
/// the names of the sweet spots it stands for), naming the field.
pub(crate) fn entry_fields(format: &str, d: &DeviceEntry) -> Result<()> {
    let of = of_entry(d);
    let mut fields: Vec<(String, String)> = vec![
        ("name".into(), d.name.clone()),
        ("kernel".into(), d.kernel.clone()),
        ("policy".into(), d.policy.clone()),
        ("tuned_at".into(), d.tuned_at.clone()),
    ];
    for (k, v) in d.matches.fields() {
        if let Some(v) = v {
            fields.push((format!("match.{k}"), v.clone()));
        }
    }
    if let Some(i) = &d.improvement {
        fields.push(("improvement.objective".into(), i.objective.clone()));
    }
    for (table, set) in [("knobs", &d.knobs), ("baseline", &d.baseline)] {
        for (k, v) in set {
            fields.push((format!("{table} (a knob's name)"), k.clone()));
            fields.push((format!("{table}.{k}"), v.to_string()));
        }
    }
    for a in &d.also {
        fields.push(("the sweet spots it stands for".into(), a.clone()));
    }
    for (field, v) in fields {
        refuse_control(format, &field, &of, &v)?;
    }
    Ok(())
}

/// As [`entry_fields`], for `[host]`.
pub(crate) fn host_fields(format: &str, h: &Host) -> Result<()> {
    let of = "the host";
    let opt = |f: &str, v: &Option<String>| v.as_deref().map(|v| (f.to_string(), v.to_string()));
    let mut fields: Vec<(String, String)> = [
        opt("host.name", &h.name),
        opt("host.kernel", &h.kernel),
        opt("host.policy", &h.policy),
        opt("host.tuned_at", &h.tuned_at),
        h.improvement
            .as_ref()
            .map(|i| ("host.improvement.objective".into(), i.objective.clone())),
    ]
    .into_iter()
    .flatten()
    .collect();
    for (table, set) in [("host.knobs", &h.knobs), ("host.baseline", &h.baseline)] {
        for (k, v) in set {
            fields.push((format!("{table} (a knob's name)"), k.clone()));
            fields.push((format!("{table}.{k}"), v.to_string()));
        }
    }
    for (field, v) in fields {
        refuse_control(format, &field, of, &v)?;
    }
    Ok(())
}

/// [`entry_fields`] and [`host_fields`] over a whole profile.
pub(crate) fn profile_fields(format: &str, p: &Profile) -> Result<()> {
    for d in &p.devices {
        entry_fields(format, d)?;
    }
    if let Some(h) = &p.host {
        host_fields(format, h)?;
    }
    Ok(())
}

/// udev rules (see the module doc).
pub mod udev {
    use super::{Of, refuse_control, refused};
    use crate::Result;

    const F: &str = "udev";

    /// The characters udev(7) reads as a pattern in a match value: `*`, `?` and `[…]` are
    /// shell globs, and `|` separates alternatives (`abc|x*` matches `abc` or `x*`), with no
    /// escape in the rule syntax; `]` too, for clarity.
    pub(crate) const PATTERN_CHARS: &[char] = &['*', '?', '[', ']', '|'];

    /// `v` double-quoted as udev reads it back exactly: `"v"`, or `e"…"` with `\\` and `\"`
    /// when `v` holds a `\` or a `"`.
    fn quote(v: &str) -> String {
        if !v.contains(['\\', '"']) {
            return format!("\"{v}\"");
        }
        let mut out = String::from("e\"");
        for c in v.chars() {
            if c == '\\' || c == '"' {
                out.push('\\');
            }
            out.push(c);
        }
        out.push('"');
        out
    }

    /// `v` quoted as a match value (`KEY=="v"`) that matches exactly `v`. Errors (exit 2):
    /// empty (it would match a missing attribute), a control character, or one of
    /// [`PATTERN_CHARS`].
    pub(crate) fn match_value(field: &str, of: Of, v: &str) -> Result<String> {
        refuse_control(F, field, of, v)?;
        if v.is_empty() {
            return Err(refused(
                F,
                field,
                of,
                v,
                "an empty match would match any disk",
            ));
        }
        if let Some(c) = v.chars().find(|c| PATTERN_CHARS.contains(c)) {
            return Err(refused(
                F,
                field,
                of,
                v,
                &format!(
                    "a udev rule cannot match '{c}' literally (udev reads '*', '?' and '[]' as \
                     globs and '|' as alternatives, with no escape); export it with --format \
                     toml, which `profile apply` matches exactly"
                ),
            ));
        }
        Ok(quote(v))
    }

    /// `prefix` quoted as the literal start of a glob match (`KEY=="<prefix>*"`-style, the
    /// caller adding its own glob after it): as [`match_value`], and no `\`, which `fnmatch`
    /// reads as an escape in a glob.
    pub(crate) fn glob_prefix(field: &str, of: Of, prefix: &str, glob: &str) -> Result<String> {
        if prefix.contains('\\') {
            return Err(refused(
                F,
                field,
                of,
                prefix,
                "a udev glob reads '\\' as an escape; export it with --format toml",
            ));
        }
        match_value(field, of, prefix)?;
        Ok(quote(&format!("{prefix}{glob}")))
    }

    /// `v` quoted as an assigned value (`ATTR{…}="v"`): `%` and `$` doubled, as udev
    /// substitutes them there. Errors: a control character.
    pub(crate) fn assign_value(field: &str, of: Of, v: &str) -> Result<String> {
        refuse_control(F, field, of, v)?;
        Ok(quote(&v.replace('%', "%%").replace('$', "$$")))
    }

    /// An attribute name for `ATTR{name}`. Errors: a character outside `[A-Za-z0-9_./-]`.
    pub(crate) fn attr<'a>(field: &str, of: Of, name: &'a str) -> Result<&'a str> {
        super::key(F, field, of, name, "_./-", &['/'])
    }

    /// One comment line, `# text\n`. Errors: a control character.
    pub(crate) fn comment(field: &str, of: Of, text: &str) -> Result<String> {
        refuse_control(F, field, of, text)?;
        Ok(format!("# {text}\n"))
    }
}

/// `sysctl.d` files (see the module doc).
pub mod sysctl {
    use super::{Of, refuse_control, refused};
    use crate::Result;

    const F: &str = "sysctl";

    /// One `key = value` line. Errors: a key outside `[A-Za-z0-9_./-]` (or starting with
    /// `-`); a value that is empty, holds a control character, or has whitespace at either
    /// end (sysctl.d strips it).
    pub(crate) fn line(of: Of, key: &str, value: &str) -> Result<String> {
        let key = super::key(F, "a sysctl key", of, key, "_./-", &['.', '/'])?;
        refuse_control(F, key, of, value)?;
        if value.is_empty() || value.trim() != value {
            return Err(refused(
                F,
                key,
                of,
                value,
                "sysctl.d strips whitespace around a value, and an empty one sets nothing",
            ));
        }
        Ok(format!("{key} = {value}\n"))
    }

    /// One comment line, `# text\n`. Errors: a control character.
    pub(crate) fn comment(field: &str, of: Of, text: &str) -> Result<String> {
        refuse_control(F, field, of, text)?;
        Ok(format!("# {text}\n"))
    }
}

/// TuneD's `tuned.conf` (see the module doc).
pub mod tuned {
    use super::{Of, refuse_control, refused};
    use crate::Result;

    const F: &str = "tuned";

    /// `v` as a regex (Python `re`, and Rust's `regex`) that matches exactly `v`:
    /// `regex::escape`'s set, which includes `$`, `{` and `#`, so TuneD's `${…}` expansion
    /// and `configparser`'s inline comments never see one; a control character or line
    /// separator as `\xNN` or `\uNNNN`, so none reaches the file raw.
    pub(crate) fn regex_literal(v: &str) -> String {
        let mut out = String::new();
        for c in v.chars() {
            if super::is_control(c) {
                let n = u32::from(c);
                out.push_str(&if n <= 0xff {
                    format!("\\x{n:02x}")
                } else {
                    format!("\\u{n:04x}")
                });
                continue;
            }
            if "\\.+*?()|[]{}^$#&-~".contains(c) {
                out.push('\\');
            }
            out.push(c);
        }
        out
    }

    /// Free text as a value (`summary=text`), kept as written. Errors: a control character;
    /// `${` (TuneD expands it: `${f:exec:…}` runs a command); a `#` after whitespace (an
    /// inline comment); whitespace at either end (stripped).
    pub(crate) fn text(field: &str, of: Of, v: &str) -> Result<String> {
        refuse_control(F, field, of, v)?;
        let why = if v.contains("${") {
            Some("TuneD expands '${…}' in a value")
        } else if v.contains(" #") || v.contains("\t#") {
            Some("TuneD reads a '#' after whitespace as the start of a comment")
        } else if v.trim() != v {
            Some("TuneD strips whitespace around a value")
        } else {
            None
        };
        match why {
            Some(why) => Err(refused(F, field, of, v, why)),
            None => Ok(v.to_string()),
        }
    }

    /// A value TuneD passes on as it is (an elevator name, a number): as [`text`], and not
    /// empty.
    pub(crate) fn value(field: &str, of: Of, v: &str) -> Result<String> {
        if v.is_empty() {
            return Err(refused(F, field, of, v, "an empty value sets nothing"));
        }
        text(field, of, v)
    }

    /// A key (an option name or a sysfs path, which TuneD's `[sysfs]` globs): only
    /// `[A-Za-z0-9_./:,+-]`, and `*` where `glob` allows it. Errors: any other character
    /// (`=` would end the key, `${` be expanded, `[` start a section).
    pub(crate) fn key<'a>(field: &str, of: Of, k: &'a str, glob: bool) -> Result<&'a str> {
        let allowed = if glob { "_./:,+-*" } else { "_./:,+-" };
        super::key(F, field, of, k, allowed, &['/'])
    }

    /// One comment line, `# text\n`. Errors: a control character.
    pub(crate) fn comment(field: &str, of: Of, text: &str) -> Result<String> {
        refuse_control(F, field, of, text)?;
        Ok(format!("# {text}\n"))
    }
}

/// Our TOML profile (see the module doc): the `toml` crate quotes strings.
pub mod toml {
    use super::{Of, refuse_control};
    use crate::Result;

    const F: &str = "toml";

    /// One comment line, `# text\n`. Errors: a control character.
    pub(crate) fn comment(field: &str, of: Of, text: &str) -> Result<String> {
        refuse_control(F, field, of, text)?;
        Ok(format!("# {text}\n"))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn udev_quotes_what_its_parser_unquotes() {
        assert_eq!(udev::match_value("f", "d", "plain").unwrap(), "\"plain\"");
        assert_eq!(udev::match_value("f", "d", "a\\").unwrap(), "e\"a\\\\\"");
        assert_eq!(udev::match_value("f", "d", "a\"b").unwrap(), "e\"a\\\"b\"");
        assert_eq!(
            udev::assign_value("f", "d", "50%$x").unwrap(),
            "\"50%%$$x\""
        );
        for bad in ["a*", "a|b", "x[1]", "", "a\nb", "a\u{1b}[0m", "a\u{2028}"] {
            assert!(udev::match_value("f", "d", bad).is_err(), "{bad:?}");
        }
        assert!(udev::glob_prefix("f", "d", "pci\\0", "/*").is_err());
        assert!(udev::attr("f", "d", "queue/x}==\"1\"").is_err());
        assert!(udev::attr("f", "d", "queue/iosched/../../uevent").is_err());
        assert_eq!(
            udev::attr("f", "d", "queue/iosched/fifo_batch").unwrap(),
            "queue/iosched/fifo_batch"
        );
    }

    #[test]
    fn refusals_name_field_and_entry_and_show_the_value_escaped() {
        let e = udev::match_value("match.serial", "sdb (model M)", "S\n[x]")
            .unwrap_err()
            .to_string();
        assert!(e.contains("match.serial of sdb (model M)"), "{e}");
        assert!(e.contains("'S\\n[x]'") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn tuned_and_sysctl_refuse_what_their_readers_would_misread() {
        assert_eq!(
            tuned::regex_literal("${f:exec:id} #1\n"),
            "\\$\\{f:exec:id\\} \\#1\\x0a"
        );
        for bad in ["${f:exec:id}", "a #b", " a", "a\nb"] {
            assert!(tuned::text("f", "d", bad).is_err(), "{bad:?}");
        }
        assert!(tuned::key("f", "d", "/sys/x=1", true).is_err());
        assert!(tuned::key("f", "d", "/sys/devices/pci0000:00/*", true).is_ok());
        assert!(tuned::key("f", "d", "/sys/devices/*", false).is_err());
        assert_eq!(
            sysctl::line("h", "vm.dirty_ratio", "10").unwrap(),
            "vm.dirty_ratio = 10\n"
        );
        for (k, v) in [
            ("vm.x\nkernel.y", "1"),
            ("-vm.x", "1"),
            ("vm.../../x", "1"),
            ("vm.x", "1\n"),
            ("vm.x", ""),
        ] {
            assert!(sysctl::line("h", k, v).is_err(), "{k:?} {v:?}");
        }
        assert!(toml::comment("f", "d", "a\rb").is_err());
    }
}
