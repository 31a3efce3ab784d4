//! Plots of a stored tune: `sweetspot plot`'s SVG ([`svg::render`]) and the tune report's
//! terminal sparklines ([`sparklines`]).
//!
//! Kernel people read a sweet spot as a curve (the 2002 thread's dip at `fifo_batch` 8 was a
//! table shaped like one). [`data`] reads a tune's trials from the store as values of its
//! objective, with each setting's mean and t-based 95% CI ([`crate::stats::summarize`]), the
//! default, the sweet spot and the final check's pairs; [`svg`] draws them: the response of
//! each tuned knob (a log2 axis for a knob on a log2 grid, categories for the scheduler), a
//! heat map for two knobs, the trials in the order they ran, and the check with its verdict.
//! Nothing here writes the store or a file: `cli/plot.rs` writes the SVG.

pub mod data;
pub mod svg;

use crate::Result;
use crate::store::Store;
use data::TuneData;

/// The bars of a sparkline, lowest first.
const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// The response of each tuned knob of tune `tune_id` as terminal text: per knob one line of
/// bars, one per setting measured in grid order (through the best setting on the other
/// knobs), a bar's height its mean objective, and a `^` under the sweet spot. Empty when the
/// tune has no setting with a value. Errors: the store's; [`crate::Error::BadInput`] for an
/// unknown tune.
pub fn sparklines(store: &Store, tune_id: i64) -> Result<String> {
    let tune = data::find_tune(store, &tune_id.to_string())?;
    Ok(sparkline_text(&data::load(store, tune)?))
}

/// [`sparklines`] of tune data already read.
pub fn sparkline_text(d: &TuneData) -> String {
    let at = d.best().or_else(|| d.default.clone()).unwrap_or_default();
    let marked = d.marked();
    let mut rows: Vec<(String, String, String, String)> = Vec::new();
    for k in &d.knobs {
        let axis = svg::Axis::of(k, &d.points);
        let mut sums = d.slice(k, &at);
        sums.retain(|s| axis.pos(&s.setting, k).is_some());
        sums.sort_by(|a, b| {
            let p = |s: &data::SettingSummary| axis.pos(&s.setting, k).unwrap_or(0.0);
            p(a).total_cmp(&p(b))
        });
        if sums.is_empty() {
            continue;
        }
        let means: Vec<f64> = sums.iter().map(|s| s.summary.mean).collect();
        let lo = means.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = means.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let bars: String = means
            .iter()
            .map(|m| {
                let t = if hi > lo { (m - lo) / (hi - lo) } else { 0.5 };
                BARS[((t * 7.0).round() as usize).min(7)]
            })
            .collect();
        let caret: String = sums
            .iter()
            .map(|s| {
                if Some(&s.setting) == marked.as_ref() {
                    '^'
                } else {
                    ' '
                }
            })
            .collect();
        let first = data::value_text(&sums[0].setting, k);
        let last = data::value_text(&sums[sums.len() - 1].setting, k);
        rows.push((
            format!("{k} {first}…{last}"),
            bars,
            caret,
            format!("{}–{}", svg::short(lo), svg::short(hi)),
        ));
    }
    if rows.is_empty() {
        return String::new();
    }
    let w = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let mut s = format!(
        "response ({} per setting, grid order; {} is better; ^ the sweet spot; \
         `sweetspot plot {}` draws it):\n",
        d.measure.label(),
        if d.measure.minimize() {
            "lower"
        } else {
            "higher"
        },
        d.tune.id
    );
    for (name, bars, caret, range) in rows {
        s.push_str(&format!("  {name:<w$}  {bars}  {range}\n"));
        if caret.contains('^') {
            s.push_str(&format!("  {:<w$}  {}\n", "", caret.trim_end()));
        }
    }
    s
}
