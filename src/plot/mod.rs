//! Plots of a stored tune: `sweetspot plot`'s SVG (`svg::render`) and the tune report's
//! terminal sparklines (`sparklines`).
//!
//! Kernel people read a sweet spot as a curve (the 2002 thread's dip at `fifo_batch` 8 was a
//! table shaped like one). [`data`] reads a tune's trials from the store as values of its
//! objective, with each setting's mean and t-based 95% CI ([`crate::stats::summarize`]), the
//! default, the sweet spot and the final check's pairs; [`svg`] draws them: the response of
//! each tuned knob (a log2 axis for a knob on a log2 grid, categories for the scheduler), a
//! heat map for two knobs, the trials in the order they ran, and the check with its verdict.
//! Nothing here writes the store or a file: `cli/plot.rs` writes the SVG.

pub mod axis;
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
pub(crate) fn sparklines(store: &Store, tune_id: i64) -> Result<String> {
    let tune = data::find_tune(store, &tune_id.to_string())?;
    Ok(sparkline_text(&data::load(store, tune)?))
}

/// [`sparklines`] of tune data already read.
pub(crate) fn sparkline_text(d: &TuneData) -> String {
    let at = d.anchor();
    let marked = d.marked();
    let mut rows: Vec<(String, String, String, String)> = Vec::new();
    for k in &d.knobs {
        let axis = axis::Axis::of(k, &d.points);
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
            format!("{}–{}", axis::short(lo), axis::short(hi)),
        ));
    }
    if rows.is_empty() {
        return String::new();
    }
    let w = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let mut s = format!(
        "response ({} per setting, {} is better; ^ the sweet spot; `sweetspot plot {}`):\n",
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

#[cfg(test)]
mod tests {
    use super::data::{Measure, Point, TuneData};
    use super::*;
    use crate::store::tunes::TuneRow;
    use crate::types::{KnobValue, Load, Setting};

    fn fb(v: i64) -> Setting {
        [("fifo_batch".to_string(), KnobValue::Int(v))].into()
    }

    /// A tune of fifo_batch: (value, objective) per trial in the order run.
    fn tune(trials: &[(i64, f64)]) -> TuneData {
        TuneData {
            tune: TuneRow {
                id: 4,
                identity: "sim:x".into(),
                kernel: "sim".into(),
                device: None,
                target: "sim:x".into(),
                policy: "quick".into(),
                pid: 1,
                started_at: 0,
                finished_at: Some(1),
                status: crate::types::TuneStatus::Done,
                lock_file: None,
                bytes_written: None,
            },
            measure: Measure::Ratio(vec![Load::IoLoad]),
            measure_known: true,
            knobs: vec!["fifo_batch".into()],
            points: trials
                .iter()
                .enumerate()
                .map(|(i, (v, y))| Point {
                    trial_id: i as i64 + 1,
                    order: i + 1,
                    setting: fb(*v),
                    value: Some(*y),
                    pooled: false,
                    started_at: 0,
                })
                .collect(),
            pooled_no_load_s: None,
            default: Some(fb(32)),
            sweet_spot: None,
            check: None,
        }
    }

    #[test]
    fn a_sparkline_has_a_bar_per_setting_in_grid_order_and_a_caret_under_the_best() {
        // Measured out of grid order; 8 twice (mean 1.0), the lowest Ratio: the sweet spot
        // (no stored one: the best mean). Bars scale min..max over 8 steps: 1 → (2−1)/2 of
        // the way up (▅ after rounding 3.5), 8 → ▁, 32 → █.
        let d = tune(&[(32, 3.0), (1, 2.0), (8, 0.9), (8, 1.1)]);
        let s = sparkline_text(&d);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines.len(), 3, "{s}");
        assert!(
            lines[0].contains("io_load Ratio") && lines[0].contains("lower"),
            "{s}"
        );
        assert_eq!(lines[1], "  fifo_batch 1…32  ▅▁█  1.00–3.00");
        assert_eq!(lines[2], "                    ^");
    }

    #[test]
    fn no_measured_value_is_no_sparkline() {
        let mut d = tune(&[(32, 3.0)]);
        d.points[0].value = None;
        assert_eq!(sparkline_text(&d), "");
    }

    #[test]
    fn a_knob_spanning_three_octaves_gets_a_log2_axis_with_0_one_step_under_1() {
        let d = tune(&[(0, 1.0), (1, 1.0), (8, 1.0)]);
        let a = axis::Axis::of("fifo_batch", &d.points);
        assert_eq!(a, axis::Axis::Log2);
        assert_eq!(a.pos(&fb(0), "fifo_batch"), Some(-1.0));
        assert_eq!(a.pos(&fb(8), "fifo_batch"), Some(3.0));
        let narrow = tune(&[(2, 1.0), (3, 1.0), (4, 1.0)]);
        assert_eq!(
            axis::Axis::of("fifo_batch", &narrow.points),
            axis::Axis::Linear
        );
        // A linear axis labels whole values only: one value measured (8, range 7.5..8.5) is
        // one label, not "8" at every tick.
        let lin = axis::Axis::Linear;
        assert_eq!(
            (lin.label(8.0), lin.label(7.75)),
            ("8".into(), String::new())
        );
        let named: Setting = [("scheduler".to_string(), KnobValue::Name("none".into()))].into();
        let mut s = tune(&[(8, 1.0)]);
        s.points[0].setting = named.clone();
        let c = axis::Axis::of("scheduler", &s.points);
        assert_eq!(c, axis::Axis::Categories(vec!["none".into()]));
        assert_eq!(c.pos(&named, "scheduler"), Some(0.0));
    }

    #[test]
    fn the_schedulers_slice_keeps_a_scheduler_without_the_other_knob() {
        let mq = |v: i64| -> Setting {
            [
                (
                    "scheduler".to_string(),
                    KnobValue::Name("mq-deadline".into()),
                ),
                ("fifo_batch".to_string(), KnobValue::Int(v)),
            ]
            .into()
        };
        let none: Setting = [("scheduler".to_string(), KnobValue::Name("none".into()))].into();
        let mut d = tune(&[(0, 1.0), (0, 2.0), (0, 1.5)]);
        d.knobs = vec!["scheduler".into(), "fifo_batch".into()];
        for (p, s) in d.points.iter_mut().zip([none.clone(), mq(8), mq(32)]) {
            p.setting = s;
        }
        // The best found (none, 1.0) lacks fifo_batch: the slices go through mq-deadline's
        // best, fifo_batch 32.
        d.default = Some(none.clone());
        assert_eq!(d.anchor(), mq(32));
        let at = d.anchor();
        let sched: Vec<Setting> = d
            .slice("scheduler", &at)
            .into_iter()
            .map(|s| s.setting)
            .collect();
        assert_eq!(sched, vec![none, mq(32)]);
        let fifo: Vec<Setting> = d
            .slice("fifo_batch", &at)
            .into_iter()
            .map(|s| s.setting)
            .collect();
        assert_eq!(fifo, vec![mq(8), mq(32)]);
    }
}
