//! One TOML input file as every loader sees it (policies, surfaces, profiles, the daemon's
//! config): its path and text, the 1-based line of a byte span, [`Error::BadFile`]s naming
//! file, line and field, and a toml/serde error in the file's own terms (`file:line: field:
//! message`). At the bottom of the crate (it imports only [`crate::error`]), so `bench`,
//! `tune`, `profile` and `daemon` share it.
//!
//! toml's errors carry a byte span but name no key (`invalid type: string "one", expected
//! i64`), and their messages use Rust's type names: `TomlFile::de_error` finds the key the
//! span falls in and says `expected an integer`.

use crate::error::{Error, Result};
use serde::de::DeserializeOwned;
use std::ops::Range;
use std::path::Path;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// A TOML text and the file it came from, for errors about it.
#[derive(Clone, Debug)]
pub(crate) struct TomlFile<'a> {
    path: &'a Path,
    text: &'a str,
    /// Byte offsets of the text's newlines, ascending (a line is a binary search).
    newlines: Vec<usize>,
    /// The number of the first element of an array in field paths: 0 (`guard[0]`) or 1
    /// (a surface's `point[1]`).
    first_index: usize,
}

impl<'a> TomlFile<'a> {
    /// `text`, read from `path` (named in errors); array elements counted from 0.
    pub(crate) fn new(path: &'a Path, text: &'a str) -> Self {
        TomlFile {
            path,
            text,
            newlines: text.match_indices('\n').map(|(at, _)| at).collect(),
            first_index: 0,
        }
    }

    /// The same file, with array elements in field paths counted from `first` (1 for a
    /// surface's `point[N]`, which counts `[[point]]` blocks as people do).
    pub(crate) fn counting_from(mut self, first: usize) -> Self {
        self.first_index = first;
        self
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &'a Path {
        self.path
    }

    /// The file's text.
    pub(crate) fn text(&self) -> &'a str {
        self.text
    }

    /// The 1-based line holding the start of `span` (a span past the end: the last line).
    pub(crate) fn line(&self, span: &Range<usize>) -> usize {
        let at = span.start.min(self.text.len());
        self.newlines.partition_point(|&n| n < at) + 1
    }

    /// An [`Error::BadFile`] at the line of `span`.
    pub(crate) fn err(
        &self,
        span: &Range<usize>,
        field: impl Into<String>,
        msg: impl Into<String>,
    ) -> Error {
        self.err_at(Some(span.clone()), field, msg)
    }

    /// An [`Error::BadFile`] at the line of `span`, or without a line when it is `None`.
    pub(crate) fn err_at(
        &self,
        span: Option<Range<usize>>,
        field: impl Into<String>,
        msg: impl Into<String>,
    ) -> Error {
        Error::BadFile {
            path: self.path.to_path_buf(),
            line: span.map(|s| self.line(&s)),
            field: field.into(),
            msg: msg.into(),
        }
    }

    /// A toml/serde error as an [`Error::BadFile`]: its line (when it has a span), the field
    /// it is about ([`TomlFile::field_of`]) and its message in TOML's terms
    /// ([`plain_message`]).
    pub(crate) fn de_error(&self, e: &toml::de::Error) -> Error {
        let msg = e.message().trim();
        self.err_at(e.span(), self.field_of(e.span(), msg), plain_message(msg))
    }

    /// The whole text deserialized as `T`; errors as [`TomlFile::de_error`].
    pub(crate) fn parse<T: DeserializeOwned>(&self) -> Result<T> {
        toml::from_str(self.text).map_err(|e| self.de_error(&e))
    }

    /// The text parsed once into a document that keeps every key's span (for
    /// [`span_of`]), and `T` deserialized from it. Errors as [`TomlFile::de_error`].
    pub(crate) fn parse_with_doc<T: DeserializeOwned>(&self) -> Result<(T, Spanned<DeTable<'a>>)> {
        let doc = DeTable::parse(self.text).map_err(|e| self.de_error(&e))?;
        let t = T::deserialize(toml::de::Deserializer::from(doc.clone()))
            .map_err(|e| self.de_error(&e))?;
        Ok((t, doc))
    }

    /// The field a toml/serde error is about, in the file's own terms (`runs`,
    /// `knobs.fifo_batch.max`, `guard[1].min_vs_default`): the key whose key or value span
    /// holds the start of `span`; for "missing field `x`" the table whose span is `span`,
    /// plus `x`. `syntax` when the text is not TOML at all and no field is named.
    pub(crate) fn field_of(&self, span: Option<Range<usize>>, msg: &str) -> String {
        let named = ["unknown field `", "missing field `"]
            .iter()
            .find_map(|pat| {
                let rest = msg.split(pat).nth(1)?;
                rest.split('`').next().map(str::to_string)
            });
        let doc = DeTable::parse(self.text).ok();
        let (Some(doc), Some(span)) = (doc, span) else {
            return named.unwrap_or_else(|| "syntax".to_string());
        };
        let walk = Walk {
            first: self.first_index,
        };
        match named {
            Some(n) if msg.starts_with("missing field") => {
                match walk.table_at(doc.get_ref(), &span, "") {
                    Some(t) => format!("{t}.{n}"),
                    None => n,
                }
            }
            _ => walk
                .key_at(doc.get_ref(), span.start, "")
                .or(named)
                .unwrap_or_else(|| "syntax".to_string()),
        }
    }
}

/// The span of the value at `keys` under `doc` (the first key an array of tables whose
/// element `idx` is meant, when `idx` is given); when a later key is absent, the span of the
/// deepest one present. `None` when the first key (or the element) is absent.
pub(crate) fn span_of(
    doc: &DeTable<'_>,
    keys: &[&str],
    idx: Option<usize>,
) -> Option<Range<usize>> {
    let (first, rest) = keys.split_first()?;
    let mut v = doc.get(*first)?;
    if let Some(i) = idx {
        let DeValue::Array(a) = v.get_ref() else {
            return None;
        };
        v = a.get(i)?;
    }
    for k in rest {
        match v.get_ref() {
            DeValue::Table(inner) if inner.contains_key(*k) => v = &inner[*k],
            _ => break,
        }
    }
    Some(v.span())
}

/// serde's Rust type names in the user's TOML terms: `expected i64` → `expected an integer`.
pub(crate) fn plain_message(msg: &str) -> String {
    let mut m = msg
        .replace("expected i64", "expected an integer")
        .replace("expected f64", "expected a number")
        .replace("expected a sequence", "expected an array");
    if let Some(i) = m.find("expected struct ") {
        m.truncate(i);
        m.push_str("expected a table");
    }
    m
}

/// The search behind [`TomlFile::field_of`]; `first` numbers array elements.
struct Walk {
    first: usize,
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

impl Walk {
    /// The dotted path of the deepest key under `t` whose key or value span holds `at`
    /// (array elements as `[i]`). A table's own span is only its header or braces, so every
    /// table is searched and its own span is the fallback.
    fn key_at(&self, t: &DeTable<'_>, at: usize, prefix: &str) -> Option<String> {
        t.iter().find_map(|(k, v)| {
            let path = join(prefix, k.get_ref());
            self.value_at(v, at, &path)
                .or_else(|| k.span().contains(&at).then_some(path))
        })
    }

    fn value_at(&self, v: &Spanned<DeValue<'_>>, at: usize, path: &str) -> Option<String> {
        let inner = match v.get_ref() {
            DeValue::Table(t) => self.key_at(t, at, path),
            DeValue::Array(a) => a
                .iter()
                .enumerate()
                .find_map(|(i, e)| self.value_at(e, at, &format!("{path}[{}]", i + self.first))),
            _ => None,
        };
        inner.or_else(|| v.span().contains(&at).then(|| path.to_string()))
    }

    /// The path of the (nested) table whose span is exactly `span`.
    fn table_at(&self, t: &DeTable<'_>, span: &Range<usize>, prefix: &str) -> Option<String> {
        t.iter().find_map(|(k, v)| {
            let path = join(prefix, k.get_ref());
            match v.get_ref() {
                DeValue::Table(_) if v.span() == *span => Some(path),
                DeValue::Table(inner) => self.table_at(inner, span, &path),
                DeValue::Array(a) => a.iter().enumerate().find_map(|(i, e)| {
                    let p = format!("{path}[{}]", i + self.first);
                    match e.get_ref() {
                        DeValue::Table(_) if e.span() == *span => Some(p),
                        DeValue::Table(inner) => self.table_at(inner, span, &p),
                        _ => None,
                    }
                }),
                _ => None,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde::Deserialize;

    fn file(text: &str) -> TomlFile<'_> {
        TomlFile::new(Path::new("f.toml"), text)
    }

    #[test]
    fn line_of_a_span_at_the_start_middle_and_end() {
        let text = "a = 1\nb = 2\n\nc = 3";
        let f = file(text);
        assert_eq!(f.line(&(0..1)), 1);
        assert_eq!(f.line(&(5..6)), 1, "the newline ends line 1");
        assert_eq!(f.line(&(6..7)), 2);
        assert_eq!(f.line(&(12..13)), 3, "the empty line");
        assert_eq!(f.line(&(13..18)), 4);
        assert_eq!(f.line(&(text.len()..text.len())), 4);
        assert_eq!(f.line(&(999..1000)), 4, "past the end: the last line");
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Doc {
        runs: i64,
        #[serde(default)]
        guard: Vec<Guard>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Guard {
        load: String,
        factor: f64,
    }

    fn bad(f: &TomlFile<'_>) -> String {
        f.parse::<Doc>().unwrap_err().to_string()
    }

    #[test]
    fn a_serde_error_with_a_span_names_line_field_and_plain_type() {
        let text = "runs = \"one\"\n";
        assert_eq!(
            bad(&file(text)),
            "f.toml:1: runs: invalid type: string \"one\", expected an integer"
        );
        let text = "runs = 1\n[[guard]]\nload = \"io_load\"\nfactor = 0.5\n\
                    [[guard]]\nload = \"io_load\"\nfactor = \"x\"\n";
        assert_eq!(
            bad(&file(text)),
            "f.toml:7: guard[1].factor: invalid type: string \"x\", expected a number"
        );
        // Counted from 1, as a surface counts its points.
        assert_eq!(
            bad(&file(text).counting_from(1)),
            "f.toml:7: guard[2].factor: invalid type: string \"x\", expected a number"
        );
        let text = "runs = 1\n[[guard]]\nload = \"io_load\"\nfactr = 0.5\n";
        let e = bad(&file(text));
        assert!(
            e.starts_with("f.toml:4: guard[0].factr: unknown field `factr`"),
            "{e}"
        );
    }

    #[test]
    fn a_missing_field_is_named_under_its_table() {
        let text = "runs = 1\n[[guard]]\nload = \"io_load\"\n";
        let e = bad(&file(text));
        assert!(
            e.contains(": guard[0].factor: missing field `factor`"),
            "{e}"
        );
    }

    #[test]
    fn a_serde_error_without_a_span_has_no_line() {
        use serde::de::Error as _;
        let parts = |e: Error| match e {
            Error::BadFile {
                line, field, msg, ..
            } => (line, field, msg),
            other => panic!("{other:?}"),
        };
        // An error serde raised with no place in the text: no line; the field its message
        // names, else `syntax`.
        let f = file("runs = 1\n");
        let e = f.de_error(&toml::de::Error::custom("missing field `guard`"));
        assert_eq!(
            parts(e),
            (None, "guard".into(), "missing field `guard`".into())
        );
        let e = f.de_error(&toml::de::Error::custom("expected i64"));
        assert_eq!(
            parts(e),
            (None, "syntax".into(), "expected an integer".into())
        );
        // A missing top-level field: toml places it at the document's start.
        let e = file("").parse::<Doc>().unwrap_err();
        assert_eq!(
            parts(e),
            (Some(1), "runs".into(), "missing field `runs`".into())
        );
        // Not TOML at all: `syntax`, at the line of the fault.
        let e = file("runs = 1\nx = \n")
            .parse::<Doc>()
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("f.toml:2: syntax: "), "{e}");
    }

    #[test]
    fn span_of_a_field_path_falls_back_to_the_deepest_key_present() {
        let text = "v = 1\n[[device]]\nname = \"a\"\n[[device]]\nname = \"b\"\n[device.match]\nwwid = \"x\"\n";
        let f = file(text);
        let (_, doc): (toml::Table, _) = f.parse_with_doc().unwrap();
        let line = |keys: &[&str], idx| span_of(doc.get_ref(), keys, idx).map(|s| f.line(&s));
        assert_eq!(line(&["v"], None), Some(1));
        assert_eq!(line(&["device", "name"], Some(0)), Some(3));
        assert_eq!(line(&["device", "match", "wwid"], Some(1)), Some(7));
        assert_eq!(line(&["device", "name"], Some(2)), None);
        assert_eq!(line(&["host"], None), None);
        // `device[0]` has no `match`: its own span.
        assert_eq!(
            span_of(doc.get_ref(), &["device", "match"], Some(0)),
            span_of(doc.get_ref(), &["device"], Some(0))
        );
    }

    #[test]
    fn plain_message_speaks_toml() {
        assert_eq!(
            plain_message("invalid type: string \"a\", expected struct RawGuard"),
            "invalid type: string \"a\", expected a table"
        );
        assert_eq!(
            plain_message("invalid type: integer `1`, expected a sequence"),
            "invalid type: integer `1`, expected an array"
        );
    }
}
