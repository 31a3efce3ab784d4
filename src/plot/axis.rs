//! Where a knob's values sit on a plot's axis (`Axis`: log2 for a log2 grid, linear, or
//! categories for the scheduler), the axes' ranges, and figures at 3 digits. Shared by the SVG
//! ([`super::svg`]) and the sparklines (`super::sparkline_text`).

use super::data::Point;
use crate::types::{KnobValue, Setting};

/// How a knob's values are placed on an axis.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Axis {
    /// log2 of the value (0 one step under 1, as the tune's grid model places it): the grid of
    /// an integer knob whose values span three octaves or more.
    Log2,
    /// The value itself (an integer knob on a narrow or listed grid).
    Linear,
    /// The values in order, one step apart (the scheduler and any named value).
    Categories(Vec<String>),
}

impl Axis {
    /// The axis of `knob` over the settings of `points`.
    pub(crate) fn of(knob: &str, points: &[Point]) -> Axis {
        let mut ints: Vec<i64> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for p in points {
            match p.setting.get(knob) {
                Some(KnobValue::Int(i)) => ints.push(*i),
                Some(KnobValue::Name(n)) => names.push(n.clone()),
                None => {}
            }
        }
        if !names.is_empty() {
            names.extend(ints.iter().map(i64::to_string));
            names.sort();
            names.dedup();
            return Axis::Categories(names);
        }
        let pos = ints.iter().copied().filter(|i| *i > 0);
        let (lo, hi) = (pos.clone().min(), pos.max());
        match (lo, hi) {
            (Some(lo), Some(hi)) if hi >= 8 * lo => Axis::Log2,
            _ => Axis::Linear,
        }
    }

    /// Where `s`'s value of `knob` sits; `None` when `s` lacks it.
    pub(crate) fn pos(&self, s: &Setting, knob: &str) -> Option<f64> {
        let v = s.get(knob)?;
        Some(match (self, v) {
            (Axis::Log2, KnobValue::Int(i)) if *i <= 0 => -1.0,
            (Axis::Log2, KnobValue::Int(i)) => (*i as f64).log2(),
            (Axis::Linear, KnobValue::Int(i)) => *i as f64,
            (Axis::Categories(c), v) => {
                let t = match v {
                    KnobValue::Int(i) => i.to_string(),
                    KnobValue::Name(n) => n.clone(),
                };
                c.iter().position(|x| *x == t)? as f64
            }
            _ => return None,
        })
    }

    /// A tick's label at `x`: the knob's value there, empty between values.
    pub(crate) fn label(&self, x: f64) -> String {
        let whole = (x - x.round()).abs() < 1e-9;
        match self {
            Axis::Log2 if whole && x.round() < 0.0 => {
                if x.round() == -1.0 {
                    "0".into()
                } else {
                    String::new()
                }
            }
            Axis::Log2 if whole && x < 62.0 => (1i64 << x.round() as u32).to_string(),
            Axis::Linear if whole => format!("{}", x.round() as i64),
            Axis::Categories(c) if whole && x >= 0.0 => {
                c.get(x.round() as usize).cloned().unwrap_or_default()
            }
            _ => String::new(),
        }
    }

    /// The axis text after the knob's name, e.g. ` (requests, log2 axis)`.
    pub(super) fn desc(&self, knob: &str) -> String {
        let unit = knob_unit(knob);
        let kind = match self {
            Axis::Log2 => Some("log2 axis"),
            Axis::Linear => None,
            Axis::Categories(_) => None,
        };
        let parts: Vec<&str> = [unit, kind].into_iter().flatten().collect();
        if parts.is_empty() {
            knob.to_string()
        } else {
            format!("{knob} ({})", parts.join(", "))
        }
    }
}

/// The knob's unit from the catalogue (`requests`, `KiB`, ...), if it has one.
fn knob_unit(knob: &str) -> Option<&'static str> {
    use crate::knob::catalogue;
    std::iter::once(None)
        .chain(catalogue::schedulers_with(knob).into_iter().map(Some))
        .find_map(|s| catalogue::lookup(s, knob))
        .map(|f| f.unit)
        .filter(|u| !u.is_empty())
}

/// The x range of an axis over `xs`, padded half a step (a value for Linear).
pub(super) fn x_range(axis: &Axis, xs: &[f64]) -> (f64, f64) {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() {
        return (-0.5, 0.5);
    }
    let pad = match axis {
        Axis::Linear => ((hi - lo) * 0.08).max(0.5),
        _ => 0.5,
    };
    (lo - pad, hi + pad)
}

/// A y range holding `ys`, padded 8% (and a little when flat).
pub(super) fn y_range(ys: impl IntoIterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = ys
        .into_iter()
        .filter(|y| y.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| {
            (a.min(y), b.max(y))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.02).max(1e-9);
    (lo - pad, hi + pad)
}

/// A figure at 3 significant digits (2673178, 1.61, 0.00420).
pub(crate) fn short(x: f64) -> String {
    if x.abs() >= 1000.0 {
        format!("{x:.0}")
    } else if x.abs() >= 100.0 {
        format!("{x:.1}")
    } else if x.abs() >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}
