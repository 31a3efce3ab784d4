//! Where in a TOML text a serde error is, in the file's own terms: toml's errors carry a byte
//! span but name no key (`invalid type: string "one", expected i64`), and their messages use
//! Rust's type names. Used by the policy parser to name the field of every error.

use std::ops::Range;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// The field a toml/serde error is about, in the policy's own terms (`runs`,
/// `knobs.fifo_batch.max`, `guard[1].min_vs_default`, `loads[0]`): the key whose key or value
/// span holds the start of the error's `span`; for "missing field `x`" the table whose span is
/// the error's, plus `x`. `syntax` (as a surface file's error says) when the text is not TOML
/// at all and no field is named.
pub fn field_of_error(text: &str, span: Option<Range<usize>>, msg: &str) -> String {
    let named = ["unknown field `", "missing field `"]
        .iter()
        .find_map(|pat| {
            let rest = msg.split(pat).nth(1)?;
            rest.split('`').next().map(str::to_string)
        });
    let doc = DeTable::parse(text).ok();
    let (Some(doc), Some(span)) = (doc, span) else {
        return named.unwrap_or_else(|| "syntax".to_string());
    };
    match named {
        Some(n) if msg.starts_with("missing field") => match table_at(doc.get_ref(), &span, "") {
            Some(t) => format!("{t}.{n}"),
            None => n,
        },
        _ => key_at(doc.get_ref(), span.start, "")
            .or(named)
            .unwrap_or_else(|| "syntax".to_string()),
    }
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// The dotted path of the deepest key under `t` whose key or value span holds `at`
/// (array elements as `[i]`). A table's own span is only its header or braces, so every table
/// is searched and its own span is the fallback.
fn key_at(t: &DeTable<'_>, at: usize, prefix: &str) -> Option<String> {
    t.iter().find_map(|(k, v)| {
        let path = join(prefix, k.get_ref());
        value_at(v, at, &path).or_else(|| k.span().contains(&at).then_some(path))
    })
}

fn value_at(v: &Spanned<DeValue<'_>>, at: usize, path: &str) -> Option<String> {
    let inner = match v.get_ref() {
        DeValue::Table(t) => key_at(t, at, path),
        DeValue::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, e)| value_at(e, at, &format!("{path}[{i}]"))),
        _ => None,
    };
    inner.or_else(|| v.span().contains(&at).then(|| path.to_string()))
}

/// The path of the (nested) table whose span is exactly `span`.
fn table_at(t: &DeTable<'_>, span: &Range<usize>, prefix: &str) -> Option<String> {
    t.iter().find_map(|(k, v)| {
        let path = join(prefix, k.get_ref());
        match v.get_ref() {
            DeValue::Table(_) if v.span() == *span => Some(path),
            DeValue::Table(inner) => table_at(inner, span, &path),
            DeValue::Array(a) => a.iter().enumerate().find_map(|(i, e)| {
                let p = format!("{path}[{i}]");
                match e.get_ref() {
                    DeValue::Table(_) if e.span() == *span => Some(p),
                    DeValue::Table(inner) => table_at(inner, span, &p),
                    _ => None,
                }
            }),
            _ => None,
        }
    })
}

/// serde's Rust type names in the user's TOML terms: `expected i64` → `expected an integer`.
pub fn plain_message(msg: &str) -> String {
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
