//! A surface file as serde reads it: `Raw*` structs whose values keep their spans
//! ([`Spanned`]), checked afterwards by the parser (`surface.rs`), and toml's own errors in a
//! surface's terms (`unknown key (expected one of: …)`, `point[N]` counted from 1).
//! A value whose type the parser checks (a number, a name) is a [`toml::Value`], so its
//! message names the field's TOML type (`expected an integer, found string`).

use crate::Error;
use crate::bench::Load;
use crate::tomlfile::TomlFile;
use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;
use toml::{Spanned, Value};

/// A leaf value with its span.
pub(super) type Val = Spanned<Value>;

/// The top level of a surface file (`extends` only in a variant, `noise.rs`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSurface {
    pub extends: Option<Val>,
    pub device: Option<Spanned<RawDevice>>,
    pub knobs: Option<Spanned<Entries<RawKnob>>>,
    pub noise: Option<Spanned<RawNoise>>,
    pub point: Option<Spanned<Vec<Spanned<RawPoint>>>>,
}

/// `[device]`: other keys are informational, so allowed.
#[derive(Deserialize)]
pub(super) struct RawDevice {
    pub name: Option<Val>,
    pub scheduler: Option<Val>,
}

/// A `[knobs.<name>]` table: [`KNOB_KEYS`] for an integer knob, [`SCHEDULER_KEYS`] for
/// `[knobs.scheduler]` (the parser refuses the other kind's keys).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawKnob {
    pub default: Option<Val>,
    pub min: Option<Val>,
    pub max: Option<Val>,
    pub schedulers: Option<Spanned<Vec<Val>>>,
    pub values: Option<Spanned<Vec<Val>>>,
}

/// `[noise]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNoise {
    pub relative_sigma: Option<Val>,
    pub drift_sigma: Option<Val>,
    pub drift_rho: Option<Val>,
}

/// One load's metrics at a point, [`METRIC_KEYS`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMetrics {
    pub time_s: Option<Val>,
    pub cpu_pct: Option<Val>,
    pub loads: Option<Val>,
    pub lcpu_pct: Option<Val>,
}

/// A background's start-up figure at a point (`startup = { light_io_load = { time_s = … } }`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStartup {
    pub time_s: Option<Val>,
}

/// One `[[point]]`: `knobs`, `relative_sigma`, `startup`, and every other key a load's
/// metrics (`None` when the key is not a load's name: its value is not read, and the parser
/// names the key).
#[derive(Default)]
pub(super) struct RawPoint {
    pub knobs: Option<Spanned<Entries<Value>>>,
    pub relative_sigma: Option<Val>,
    pub startup: Option<Spanned<Entries<RawStartup>>>,
    pub loads: Vec<(Spanned<String>, Option<Spanned<RawMetrics>>)>,
}

/// A table's entries in the file's order, each key and value with its span.
pub(super) struct Entries<V>(pub Vec<(Spanned<String>, Spanned<V>)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Entries<V> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Visit<V> {
            type Value = Entries<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Entries<V>, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = m.next_key()? {
                    out.push((k, m.next_value()?));
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(Visit(PhantomData))
    }
}

impl<'de> Deserialize<'de> for RawPoint {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = RawPoint;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<RawPoint, A::Error> {
                let mut p = RawPoint::default();
                while let Some(k) = m.next_key::<Spanned<String>>()? {
                    match k.get_ref().as_str() {
                        "knobs" => p.knobs = Some(m.next_value()?),
                        "relative_sigma" => p.relative_sigma = Some(m.next_value()?),
                        "startup" => p.startup = Some(m.next_value()?),
                        name if name.parse::<Load>().is_ok() => {
                            p.loads.push((k, Some(m.next_value()?)));
                        }
                        _ => {
                            m.next_value::<de::IgnoredAny>()?;
                            p.loads.push((k, None));
                        }
                    }
                }
                Ok(p)
            }
        }
        d.deserialize_map(Visit)
    }
}

/// The top-level keys of a surface, and of a variant (a file with `extends`).
pub(super) const TOP_KEYS: [&str; 4] = ["device", "knobs", "noise", "point"];
/// The top-level keys of a variant.
pub(super) const VARIANT_KEYS: [&str; 3] = ["extends", "device", "noise"];
/// An integer knob's keys.
pub(super) const KNOB_KEYS: [&str; 4] = ["default", "min", "max", "schedulers"];
/// `[knobs.scheduler]`'s keys.
pub(super) const SCHEDULER_KEYS: [&str; 2] = ["default", "values"];
/// `[noise]`'s keys, and a variant's (its points' noise is its base's).
pub(super) const NOISE_KEYS: [&str; 3] = ["relative_sigma", "drift_sigma", "drift_rho"];
/// `[noise]`'s keys in a variant.
pub(super) const VARIANT_NOISE_KEYS: [&str; 2] = ["drift_sigma", "drift_rho"];
/// A load's metrics at a point.
pub(super) const METRIC_KEYS: [&str; 4] = ["time_s", "cpu_pct", "loads", "lcpu_pct"];

/// The keys allowed beside the key `field` (`knobs.fifo_batch.mni`), for its message.
fn keys_beside(field: &str, variant: bool) -> &'static [&'static str] {
    let parts: Vec<&str> = field.split('.').collect();
    match parts[..] {
        [_] if variant => &VARIANT_KEYS,
        [_] => &TOP_KEYS,
        ["knobs", "scheduler", _] => &SCHEDULER_KEYS,
        ["knobs", _, _] => &KNOB_KEYS,
        ["noise", _] if variant => &VARIANT_NOISE_KEYS,
        ["noise", _] => &NOISE_KEYS,
        [_, "startup", _, _] => &["time_s"],
        _ => &METRIC_KEYS,
    }
}

/// The message of a key not in `known`.
pub(super) fn unknown_key(known: &[&str]) -> String {
    format!("unknown key (expected one of: {})", known.join(", "))
}

/// The surface text deserialized, toml's errors in a surface's terms: an unknown key lists
/// the keys allowed there and is named without what it holds; a value of the wrong shape
/// says which shape; an integer beyond i64 is out of range. A float literal beyond f64
/// (`1e400`, which toml does not read) is judged by `infinite` as the infinity it reads as.
pub(super) fn parse(
    f: &TomlFile<'_>,
    infinite: impl Fn(&Val, &str) -> Error,
) -> crate::Result<RawSurface> {
    toml::from_str(f.text()).map_err(|e| match f.de_error(&e) {
        Error::BadFile { field, msg, .. } if msg == "floating-point number overflowed" => {
            let span = e.span().unwrap_or(0..0);
            let literal = f.text().get(span.clone()).unwrap_or_default();
            let x = literal.replace('_', "").parse().unwrap_or(f64::INFINITY);
            infinite(&Spanned::new(span, Value::Float(x)), &field)
        }
        Error::BadFile {
            path,
            line,
            mut field,
            msg,
        } => {
            let shape = msg.starts_with("invalid type") || msg.starts_with("invalid length");
            let msg = if let Some(key) = msg
                .strip_prefix("unknown field `")
                .and_then(|r| r.split('`').next())
            {
                // `[[x]]` or `x = {...}`: the key, not an element or key inside it.
                if let Some(at) = field.rfind(key) {
                    field.truncate(at + key.len());
                }
                let variant = toml::from_str::<toml::Table>(f.text())
                    .is_ok_and(|t| t.contains_key("extends"));
                unknown_key(keys_beside(&field, variant))
            } else if msg.contains(" as i128") || msg == "integer number overflowed" {
                "integer out of range".to_string()
            } else if shape && field == "point" {
                "expected [[point]] tables".to_string()
            } else if shape && (field.ends_with(".values") || field.ends_with(".schedulers")) {
                "expected a list of names".to_string()
            } else if shape {
                // `[[noise]]`: the key, not its first element.
                if !field.starts_with("point[") && field.ends_with(']') {
                    field.truncate(field.rfind('[').unwrap_or(field.len()));
                }
                "expected a table".to_string()
            } else {
                msg
            };
            Error::BadFile {
                path,
                line,
                field,
                msg,
            }
        }
        other => other,
    })
}
