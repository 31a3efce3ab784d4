//! A command's result printed one way: a value that is both a table (its text form, the
//! `Table` trait) and `Serialize` (its `--json` form) is rendered by `render`, the one
//! place that chooses between the two. `cli` parses `--json` once (`cli::output::JsonArg`)
//! and prints what `render` returns.
//!
//! `bench`'s report has its own formats (table, JSON, CSV) behind `super::Exporter`; `status
//! --format prometheus` is the daemon's metrics file, neither table nor JSON.

use super::json::Versioned;
use crate::{Error, Result};
use serde::Serialize;

/// How a command prints its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// The human text ([`Table::table`]).
    Text,
    /// Pretty JSON with `"version"` first ([`json`]).
    Json,
}

/// A result's text form: the table or lines a command prints without `--json`.
pub(crate) trait Table {
    /// The text, ending in a newline. Errors: those of what it reads to say it (the store's).
    fn table(&self) -> Result<String>;
}

/// `value` as `format` says: its [`Table::table`], or [`json`].
pub(crate) fn render<T: Serialize + Table + ?Sized>(value: &T, format: Format) -> Result<String> {
    match format {
        Format::Text => value.table(),
        Format::Json => json(value),
    }
}

/// `value` as pretty JSON with `"version"` first ([`Versioned`], docs/json.md), and a
/// newline. `value` must serialize as an object. Errors: serde_json's, as a failure.
pub(crate) fn json<T: Serialize + ?Sized>(value: &T) -> Result<String> {
    let s = serde_json::to_string_pretty(&Versioned::new(&value))
        .map_err(|e| Error::Failed(e.to_string()))?;
    Ok(format!("{s}\n"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A value with a text form and a JSON form that differ.
    #[derive(Serialize)]
    struct Two {
        n: u32,
    }

    impl Table for Two {
        fn table(&self) -> Result<String> {
            Ok(format!("n is {}\n", self.n))
        }
    }

    #[test]
    fn render_prints_the_table_or_versioned_json() {
        let v = Two { n: 7 };
        assert_eq!(render(&v, Format::Text).unwrap(), "n is 7\n");
        assert_eq!(
            render(&v, Format::Json).unwrap(),
            format!(
                "{{\n  \"version\": {},\n  \"n\": 7\n}}\n",
                super::super::json::VERSION
            )
        );
    }
}
