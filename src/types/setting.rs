//! Knob values, settings and domains: the plain values every stage passes around
//! (knob writes them, bench measures at them, tune searches over them, store keeps them).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A knob's value: an integer (most knobs) or a name (`scheduler`). Written as a bare
/// integer or string; read from one, anything else (a float, a boolean, a table) refused with
/// what was found (`expected an integer or a string, found a float 512.5`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(untagged)]
pub enum KnobValue {
    /// An integer value, in the knob's unit.
    Int(i64),
    /// A name, e.g. a scheduler (`mq-deadline`).
    Name(String),
}

impl KnobValue {
    /// The integer, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            KnobValue::Int(v) => Some(*v),
            KnobValue::Name(_) => None,
        }
    }

    /// The name, if this is one.
    pub(crate) fn as_name(&self) -> Option<&str> {
        match self {
            KnobValue::Int(_) => None,
            KnobValue::Name(s) => Some(s),
        }
    }
}

impl<'de> Deserialize<'de> for KnobValue {
    // By hand, not `#[serde(untagged)]`: its one error for every wrong type, "data did not
    // match any variant of untagged enum KnobValue", names neither what was expected nor what
    // was found.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(KnobValueVisitor)
    }
}

struct KnobValueVisitor;

impl serde::de::Visitor<'_> for KnobValueVisitor {
    type Value = KnobValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer or a string")
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<KnobValue, E> {
        Ok(KnobValue::Int(v))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<KnobValue, E> {
        i64::try_from(v)
            .map(KnobValue::Int)
            .map_err(|_| E::custom(format!("{v} is out of range for an integer")))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<KnobValue, E> {
        Err(E::custom(format!(
            "expected an integer or a string, found a float {v:?}"
        )))
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<KnobValue, E> {
        Err(E::custom(format!(
            "expected an integer or a string, found a boolean {v}"
        )))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<KnobValue, E> {
        Ok(KnobValue::Name(v.to_string()))
    }
}

impl fmt::Display for KnobValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KnobValue::Int(v) => write!(f, "{v}"),
            KnobValue::Name(s) => f.write_str(s),
        }
    }
}

impl From<i64> for KnobValue {
    fn from(v: i64) -> Self {
        KnobValue::Int(v)
    }
}

impl From<&str> for KnobValue {
    fn from(s: &str) -> Self {
        KnobValue::Name(s.to_string())
    }
}

impl KnobValue {
    /// The value a knob's printed form (this type's `Display`, e.g. `verify`'s `"256"` or
    /// `"mq-deadline"`) stands for: an integer when the text is one, else a name. The inverse
    /// of `Display` for every knob sweetspot knows: only schedulers are names, and no
    /// scheduler name is a number.
    pub(crate) fn from_printed(text: &str) -> KnobValue {
        text.parse::<i64>()
            .map_or_else(|_| KnobValue::Name(text.to_string()), KnobValue::Int)
    }
}

/// For `#[serde(serialize_with = ...)]` on a knob value kept as its printed text: writes it as
/// [`KnobValue`] does (a number for a numeric knob, a string for a scheduler), so every
/// command's JSON (`tune`, `history`, `status`, `verify`) types a knob's value alike.
pub(crate) fn serialize_printed<S: serde::Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
    KnobValue::from_printed(text).serialize(s)
}

/// [`serialize_printed`] for an optional value (`None` stays `null`).
pub(crate) fn serialize_printed_opt<S: serde::Serializer>(
    text: &Option<String>,
    s: S,
) -> Result<S::Ok, S::Error> {
    text.as_deref().map(KnobValue::from_printed).serialize(s)
}

/// A setting: a value for every knob of a search space, keyed by knob name.
/// Ordered so labels and JSON are stable.
pub type Setting = BTreeMap<String, KnobValue>;

/// A human label for a setting, e.g. `fifo_batch=8 scheduler=mq-deadline`.
pub fn setting_label(s: &Setting) -> String {
    if s.is_empty() {
        return "default".to_string();
    }
    s.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The values a knob accepts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Domain {
    /// Integers in `[min, max]`, both inclusive, in the knob's unit.
    Int {
        /// Smallest accepted value.
        min: i64,
        /// Largest accepted value.
        max: i64,
    },
    /// One of these names (schedulers).
    Choice(Vec<String>),
}

impl Domain {
    /// True when `v` lies in this domain.
    pub(crate) fn contains(&self, v: &KnobValue) -> bool {
        match (self, v) {
            (Domain::Int { min, max }, KnobValue::Int(x)) => min <= x && x <= max,
            (Domain::Choice(names), KnobValue::Name(n)) => names.iter().any(|c| c == n),
            _ => false,
        }
    }
}

impl fmt::Display for Domain {
    /// `1..=256` for integers, `none|mq-deadline|bfq` for choices.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Domain::Int { min, max } => write!(f, "{min}..={max}"),
            Domain::Choice(names) => f.write_str(&names.join("|")),
        }
    }
}

/// Where a knob lives, which is also the order knobs are applied and restored in
/// (docs/DESIGN.md: scheduler → nr_requests → iosched/* → other queue/*; then host-wide vm).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApplyOrder {
    /// `queue/scheduler`: switching recreates iosched/ and resets nr_requests.
    Scheduler = 0,
    /// `queue/nr_requests`.
    NrRequests = 1,
    /// `queue/iosched/*` of the active scheduler.
    Iosched = 2,
    /// Other `queue/*` files (`read_ahead_kb`, `max_sectors_kb`, `nomerges`, ...).
    Queue = 3,
    /// Host-wide `/proc/sys/vm/*`.
    Vm = 4,
    /// Host-wide CPU-scheduler integers: `/proc/sys/kernel/sched_*` and debugfs `sched/*`.
    Sched = 5,
    /// Host-wide CPU-scheduler feature flags: one boolean knob per name in debugfs
    /// `sched/features` (1 = `X`, 0 = `NO_X`).
    SchedFeature = 6,
}

impl ApplyOrder {
    /// The order from its stored integer (the journal's `apply_order` column).
    pub(crate) fn from_index(i: i64) -> Option<ApplyOrder> {
        [
            ApplyOrder::Scheduler,
            ApplyOrder::NrRequests,
            ApplyOrder::Iosched,
            ApplyOrder::Queue,
            ApplyOrder::Vm,
            ApplyOrder::Sched,
            ApplyOrder::SchedFeature,
        ]
        .into_iter()
        .find(|o| *o as i64 == i)
    }

    /// True for a host-wide knob (vm, CPU scheduler): it acts on every device and is
    /// journaled without one.
    pub(crate) fn is_host(self) -> bool {
        matches!(
            self,
            ApplyOrder::Vm | ApplyOrder::Sched | ApplyOrder::SchedFeature
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_printed_value_serialises_as_the_knob_value_it_came_from() {
        #[derive(Serialize)]
        struct Row {
            #[serde(serialize_with = "serialize_printed")]
            v: String,
            #[serde(serialize_with = "serialize_printed_opt")]
            w: Option<String>,
        }
        for value in [
            KnobValue::Int(256),
            KnobValue::Int(-1),
            KnobValue::Int(0),
            KnobValue::from("mq-deadline"),
            KnobValue::from("none"),
        ] {
            assert_eq!(KnobValue::from_printed(&value.to_string()), value);
            let row = Row {
                v: value.to_string(),
                w: Some(value.to_string()),
            };
            let want = serde_json::to_value(&value).unwrap();
            let got = serde_json::to_value(&row).unwrap();
            assert_eq!((&got["v"], &got["w"]), (&want, &want), "{value}");
        }
        let none = Row {
            v: "-".into(),
            w: None,
        };
        assert_eq!(
            serde_json::to_value(&none).unwrap(),
            serde_json::json!({"v": "-", "w": null})
        );
    }
}
