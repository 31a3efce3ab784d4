//! The SVG of a tune (`render`): one panel per tuned knob's response, a heat map for two
//! knobs, the trials in the order they ran, and the final check, stacked `WIDTH` px wide.
//!
//! Drawn with `plotters`' SVG backend, without its default features: no font-kit, no system
//! font and no C library at run time. Text is SVG `<text>` in the `sans-serif` family, laid
//! out with plotters' size estimate; the viewer draws the glyphs. Each panel is its own
//! nested `<svg>` with an `id` (`response-KNOB`, `heatmap`, `order`, `check`), so a reader
//! (and the tests) can find it; inside, coordinates are the panel's.

use super::axis::{Axis, short, x_range, y_range};
use super::data::{Point, SettingSummary, TuneData, value_text};
use crate::types::{KnobValue, Setting};
use crate::{Error, Result};
use plotters::coord::Shift;
use plotters::prelude::*;

/// Width of the image, px: readable as is at 800 px.
pub(crate) const WIDTH: u32 = 800;
/// Height of one panel, px.
pub(crate) const PANEL_H: u32 = 330;
/// Height of the key under a panel's x axis, px.
const LEGEND_H: u32 = 30;
/// Height of the title strip, px.
pub(crate) const TITLE_H: u32 = 80;
/// Radius of a trial's point, px.
pub(crate) const TRIAL_R: i32 = 3;
/// Radius of the sweet spot's ring, px (the default's is [`DEFAULT_R`]).
pub(crate) const SWEET_R: i32 = 10;
/// Radius of the default's ring, px.
pub(crate) const DEFAULT_R: i32 = 7;
/// The sweet spot's colour.
pub(crate) const SWEET: RGBColor = RGBColor(0xd6, 0x27, 0x28);
/// The default's colour.
pub(crate) const DEFAULT: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const TRIAL: RGBColor = RGBColor(0x55, 0x55, 0x55);
const FONT: &str = "sans-serif";

fn err<E: std::fmt::Debug>(e: E) -> Error {
    Error::Failed(format!("drawing the plot: {e:?}"))
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// Renders the plot of `d` as an SVG document. Errors: [`Error::Failed`] if plotters fails
/// (it does not on a string backend, but its API returns errors).
pub(crate) fn render(d: &TuneData) -> Result<String> {
    let mut panels: Vec<(String, String)> = Vec::new();
    let at = d.anchor();
    for k in &d.knobs {
        panels.push((format!("response-{k}"), panel(|a| response(a, d, k, &at))?));
    }
    if d.knobs.len() == 2 {
        panels.push(("heatmap".into(), panel(|a| heatmap(a, d))?));
    }
    panels.push(("order".into(), panel(|a| order(a, d))?));
    panels.push(("check".into(), panel(|a| check(a, d))?));
    let h = TITLE_H + PANEL_H * panels.len() as u32;
    let mut out = format!(
        "<svg width=\"{WIDTH}\" height=\"{h}\" viewBox=\"0 0 {WIDTH} {h}\" \
         xmlns=\"http://www.w3.org/2000/svg\">\n<rect width=\"{WIDTH}\" height=\"{h}\" \
         fill=\"#FFFFFF\"/>\n"
    );
    for (i, (line, size)) in titles(d).iter().zip([18, 14, 13]).enumerate() {
        out.push_str(&format!(
            "<text id=\"title-{i}\" x=\"{}\" y=\"{}\" font-family=\"{FONT}\" \
             font-size=\"{size}\" text-anchor=\"middle\" fill=\"{}\">{}</text>\n",
            WIDTH / 2,
            24 + 22 * i,
            if i == 0 { "#000000" } else { "#333333" },
            xml(line)
        ));
    }
    for (i, (id, body)) in panels.iter().enumerate() {
        let y = TITLE_H + PANEL_H * i as u32;
        out.push_str(&format!(
            "<svg id=\"{}\" x=\"0\" y=\"{y}\" width=\"{WIDTH}\" height=\"{PANEL_H}\">\n{body}</svg>\n",
            xml(id)
        ));
    }
    out.push_str("</svg>\n");
    Ok(out)
}

/// XML-escapes text for an attribute or element.
fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The title's three lines: the tune, its answer against the default, how it was measured.
fn titles(d: &TuneData) -> [String; 3] {
    let t = &d.tune;
    let n = d.points.len();
    let label = crate::types::setting_label;
    let default = d
        .default
        .as_ref()
        .map_or_else(|| "unknown".to_string(), label);
    let spot = match &d.sweet_spot {
        Some(s) if s.significant => format!("sweet spot {}; default {default}", label(&s.setting)),
        Some(_) => {
            format!("sweet spot: the default {default}, kept (nothing significantly better)")
        }
        None => format!(
            "no sweet spot stored (tune {}); default {default}",
            t.status
        ),
    };
    let mut t3 = format!(
        "policy {}, {n} trial{}, objective {}{}",
        t.policy,
        if n == 1 { "" } else { "s" },
        d.measure.label(),
        if d.measure.minimize() {
            " (smaller is better)"
        } else {
            " (larger is better)"
        }
    );
    if !d.measure_known {
        t3.push_str(", not stored: read from the loads measured");
    }
    [format!("tune #{} of {}", t.id, t.target), spot, t3]
}

/// Draws one panel on its own string backend and returns the SVG's inside.
fn panel(draw: impl FnOnce(&Area) -> Result<()>) -> Result<String> {
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (WIDTH, PANEL_H)).into_drawing_area();
        draw(&root)?;
        root.present().map_err(err)?;
    }
    let body = s
        .find('>')
        .and_then(|open| Some(&s[open + 1..s.rfind("</svg>")?]))
        .unwrap_or_default();
    Ok(body.to_string())
}

/// Spreads repeats of one x a little so that each trial shows: the `i`th of `n`.
fn jitter(i: usize, n: usize, step: f64) -> f64 {
    if n < 2 {
        return 0.0;
    }
    (i as f64 / (n - 1) as f64 - 0.5) * step
}

/// A text style of `px` pixels: plotters writes `font-size` as the size it is given ÷ 1.24
/// (its em estimate), so the size asked is scaled up by that.
fn font_px(px: f64, col: RGBColor) -> TextStyle<'static> {
    (FONT, px * 1.24).into_font().color(&col)
}

fn font(px: u32) -> TextStyle<'static> {
    font_px(px as f64, BLACK)
}

fn y_desc(d: &TuneData) -> String {
    match &d.measure {
        super::data::Measure::Ratio(_) => format!("{} (loaded ÷ no_load Time)", d.measure.label()),
        super::data::Measure::Loads(_) => format!("{} (work units)", d.measure.label()),
        super::data::Measure::Figure { .. } => d.measure.label(),
    }
}

/// The response of `knob`: its trials (through `at` on the other knobs), each setting's
/// mean and 95% CI, the default and the sweet spot ringed.
fn response(a: &Area, d: &TuneData, knob: &str, at: &Setting) -> Result<()> {
    a.fill(&WHITE).map_err(err)?;
    let sums: Vec<SettingSummary> = d.slice(knob, at);
    let axis = Axis::of(knob, &d.points);
    let others: Vec<String> = at
        .iter()
        .filter(|(k, _)| k.as_str() != knob && d.knobs.contains(k))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let caption = if others.is_empty() {
        format!("response of {knob}: each trial, mean and 95% CI per setting")
    } else {
        format!(
            "response of {knob} at {}: each trial, mean and 95% CI",
            others.join(" ")
        )
    };
    let in_slice = |p: &&Point| sums.iter().any(|s| s.setting == p.setting);
    let pts: Vec<&Point> = d
        .points
        .iter()
        .filter(in_slice)
        .filter(|p| p.value.is_some())
        .collect();
    let xs: Vec<f64> = sums
        .iter()
        .filter_map(|s| axis.pos(&s.setting, knob))
        .collect();
    let (x0, x1) = x_range(&axis, &xs);
    // The points set the range; a CI widens it by at most half their spread (a setting
    // measured twice has t = 12.7 and would flatten the rest): a longer whisker is cut at the
    // edge, without its cap.
    let (p0, p1) = y_range(pts.iter().filter_map(|p| p.value));
    let room = (p1 - p0) / 2.0;
    let (y0, y1) = y_range(
        pts.iter()
            .filter_map(|p| p.value)
            .chain(sums.iter().flat_map(|s| {
                [
                    s.summary.ci95.0.max(p0 - room),
                    s.summary.ci95.1.min(p1 + room),
                ]
            })),
    );
    let mut c = chart(a, &caption, x0..x1, y0..y1)?;
    let n_ticks = match &axis {
        Axis::Linear => 10,
        _ => ((x1 - x0).round() as usize + 1).max(2),
    };
    axes(&mut c, &axis.desc(knob), &y_desc(d), n_ticks, &|x| {
        axis.label(*x)
    })?;
    let step = if matches!(axis, Axis::Linear) {
        (x1 - x0) / 40.0
    } else {
        0.3
    };
    // The curve through the means, for ordered axes.
    if !matches!(axis, Axis::Categories(_)) {
        let mut line: Vec<(f64, f64)> = sums
            .iter()
            .filter_map(|s| Some((axis.pos(&s.setting, knob)?, s.summary.mean)))
            .collect();
        line.sort_by(|a, b| a.0.total_cmp(&b.0));
        c.draw_series(std::iter::once(PathElement::new(
            line,
            BLACK.mix(0.35).stroke_width(1),
        )))
        .map_err(err)?;
    }
    draw_trials(&mut c, &pts, &sums, |p| axis.pos(&p.setting, knob), step)?;
    for s in &sums {
        let Some(x) = axis.pos(&s.setting, knob) else {
            continue;
        };
        draw_mean_ci(&mut c, x, s, step * 0.9)?;
    }
    rings(&mut c, d, &sums, |s| axis.pos(s, knob))?;
    legend(a, d.pooled_no_load_s)
}

/// A panel's chart: the caption above, the label areas, and a strip for its key below.
fn chart<'a, 'b>(
    a: &'a Area<'b>,
    caption: &str,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
) -> Result<Chart<'a, 'b>> {
    ChartBuilder::on(a)
        .caption(caption, font(14))
        .margin(12)
        .margin_right(24)
        .margin_bottom(LEGEND_H)
        .x_label_area_size(50)
        .y_label_area_size(64)
        .build_cartesian_2d(x, y)
        .map_err(err)
}

/// Draws a chart's axes: `xn` x labels by `xfmt`, y labels at 3 digits, the descriptions,
/// a light grid at the labels.
fn axes(
    c: &mut Chart,
    x_desc: &str,
    y_desc: &str,
    xn: usize,
    xfmt: &dyn Fn(&f64) -> String,
) -> Result<()> {
    let r = c.y_range();
    let digits = tick_digits(r.end - r.start);
    let yfmt = |y: &f64| format!("{y:.digits$}");
    c.configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_labels(xn)
        .x_label_formatter(xfmt)
        .y_label_formatter(&yfmt)
        .label_style(font(13))
        .axis_desc_style(font(14))
        .max_light_lines(0)
        .bold_line_style(RGBColor(0xe4, 0xe4, 0xe4))
        .draw()
        .map_err(err)
}

/// Decimals for the labels of an axis `span` long: one more than the digits of a fifth of
/// it (its label step, about), so every label has the same number and they differ (1.50, 1.75;
/// 995.0, 1000.0; 2673178).
fn tick_digits(span: f64) -> usize {
    let step = (span / 5.0).max(1e-12);
    (1.0 - step.log10().floor()).clamp(0.0, 6.0) as usize
}

/// A whole number's label; none between them.
fn whole(x: &f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{}", x.round() as i64)
    } else {
        String::new()
    }
}

type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// The default's and the sweet spot's rings, at their setting's mean (`x_of` its x).
fn rings(
    c: &mut Chart,
    d: &TuneData,
    sums: &[SettingSummary],
    x_of: impl Fn(&Setting) -> Option<f64>,
) -> Result<()> {
    let mark = |c: &mut Chart, s: &Setting, r: i32, col: RGBColor, label: &str| -> Result<()> {
        let Some(m) = sums.iter().find(|x| x.setting == *s) else {
            return Ok(());
        };
        let Some(x) = x_of(s) else {
            return Ok(());
        };
        ring(c, (x, m.summary.mean), r, col, label)
    };
    let marked = d.marked();
    let same = marked.is_some() && marked == d.default;
    if let Some(def) = &d.default {
        mark(
            c,
            def,
            DEFAULT_R,
            DEFAULT,
            if same { "" } else { "default" },
        )?;
    }
    if let Some(s) = &marked {
        let label = if same {
            "sweet spot = default"
        } else {
            "sweet spot"
        };
        mark(c, s, SWEET_R, SWEET, label)?;
    }
    Ok(())
}

/// Each trial a point (hollow when read against the pooled no_load), repeats spread by
/// `step`.
fn draw_trials(
    c: &mut Chart,
    pts: &[&Point],
    sums: &[SettingSummary],
    x_of: impl Fn(&Point) -> Option<f64>,
    step: f64,
) -> Result<()> {
    for s in sums {
        let of: Vec<&&Point> = pts.iter().filter(|p| p.setting == s.setting).collect();
        for (i, p) in of.iter().enumerate() {
            let (Some(x), Some(y)) = (x_of(p), p.value) else {
                continue;
            };
            let style = if p.pooled {
                TRIAL.stroke_width(1)
            } else {
                TRIAL.filled()
            };
            c.draw_series(std::iter::once(Circle::new(
                (x + jitter(i, of.len(), step), y),
                TRIAL_R,
                style,
            )))
            .map_err(err)?;
        }
    }
    Ok(())
}

/// A setting's mean (a bar) and its 95% CI (a whisker with caps), at `x`, `w` wide.
fn draw_mean_ci(c: &mut Chart, x: f64, s: &SettingSummary, w: f64) -> Result<()> {
    let (lo, hi) = s.summary.ci95;
    let r = c.y_range();
    let (clo, chi) = (lo.max(r.start), hi.min(r.end));
    let m = s.summary.mean;
    let style = BLACK.stroke_width(2);
    let mut lines = vec![vec![(x - w / 2.0, m), (x + w / 2.0, m)]];
    if hi > lo {
        lines.push(vec![(x, clo), (x, chi)]);
    }
    if hi > lo && clo == lo {
        lines.push(vec![(x - w / 5.0, lo), (x + w / 5.0, lo)]);
    }
    if hi > lo && chi == hi {
        lines.push(vec![(x - w / 5.0, hi), (x + w / 5.0, hi)]);
    }
    c.draw_series(lines.into_iter().map(|l| PathElement::new(l, style)))
        .map_err(err)?;
    Ok(())
}

/// A ring of radius `r` around `at` with `label` above it.
fn ring(c: &mut Chart, at: (f64, f64), r: i32, col: RGBColor, label: &str) -> Result<()> {
    // Right of the ring, or left of it in the right quarter of the plot (the text's width
    // estimated at 7 px a character).
    let xr = c.x_range();
    let dx = if at.0 > xr.start + 0.75 * (xr.end - xr.start) {
        -r - 2 - 7 * label.chars().count() as i32
    } else {
        r + 2
    };
    let e = EmptyElement::at(at)
        + Circle::new((0, 0), r, col.stroke_width(2))
        + Text::new(label.to_string(), (dx, -r - 14), font_px(13.0, col));
    c.draw_series(std::iter::once(e)).map_err(err)?;
    Ok(())
}

/// The key under a response panel's caption.
fn legend(a: &Area, pooled: Option<f64>) -> Result<()> {
    let mut items = vec![
        "● a trial".to_string(),
        "▬ mean and | its 95% CI (t)".to_string(),
    ];
    if let Some(p) = pooled {
        items.insert(
            1,
            format!("○ a trial of loaded runs only, ÷ mean no_load {p:.1} s"),
        );
    }
    a.draw_text(
        &items.join(" · "),
        &font_px(13.0, RGBColor(0x44, 0x44, 0x44)),
        (80, (PANEL_H - LEGEND_H + 8) as i32),
    )
    .map_err(err)
}

/// The values of `knob` measured, as a heat map's rows or columns: `–` (settings without
/// it) first, then numbers in order, then names.
fn categories(d: &TuneData, knob: &str) -> Vec<String> {
    let mut v: Vec<(f64, String)> = d
        .points
        .iter()
        .map(|p| {
            let key = match p.setting.get(knob) {
                Some(KnobValue::Int(i)) => *i as f64,
                _ => f64::NEG_INFINITY,
            };
            (key, value_text(&p.setting, knob))
        })
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    v.dedup();
    v.into_iter().map(|x| x.1).collect()
}

/// The settings of two knobs measured, each cell coloured by its mean.
fn heatmap(a: &Area, d: &TuneData) -> Result<()> {
    a.fill(&WHITE).map_err(err)?;
    let (kx, ky) = (&d.knobs[0], &d.knobs[1]);
    let (cx, cy) = (categories(d, kx), categories(d, ky));
    let sums = d.summaries();
    // The colour follows ln(mean): a Ratio of 7 beside 1.6 leaves the good settings apart.
    let lnm = |s: &SettingSummary| s.summary.mean.max(f64::MIN_POSITIVE).ln();
    let (lo, hi) = sums
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), s| {
            (a.min(lnm(s)), b.max(lnm(s)))
        });
    let ax = Axis::Categories(cx.clone());
    let ay = Axis::Categories(cy.clone());
    let caption = format!(
        "{kx} × {ky}: mean {} per setting measured",
        d.measure.label()
    );
    let (nx, ny) = (cx.len() as f64, cy.len() as f64);
    let mut c = chart(a, &caption, -0.5..nx - 0.5, -0.5..ny - 0.5)?;
    let fx = |x: &f64| ax.label(*x);
    let fy = |y: &f64| ay.label(*y);
    c.configure_mesh()
        .disable_mesh()
        .x_desc(
            Axis::Log2
                .desc(kx)
                .replace(", log2 axis", "")
                .replace(" (log2 axis)", ""),
        )
        .y_desc(
            Axis::Log2
                .desc(ky)
                .replace(", log2 axis", "")
                .replace(" (log2 axis)", ""),
        )
        .x_labels(cx.len() + 1)
        .y_labels(cy.len() + 1)
        .x_label_formatter(&fx)
        .y_label_formatter(&fy)
        .label_style(font(13))
        .axis_desc_style(font(14))
        .draw()
        .map_err(err)?;
    let pos = |s: &Setting| -> (f64, f64) {
        let x = cx.iter().position(|v| *v == value_text(s, kx)).unwrap_or(0) as f64;
        let y = cy.iter().position(|v| *v == value_text(s, ky)).unwrap_or(0) as f64;
        (x, y)
    };
    for s in &sums {
        let (x, y) = pos(&s.setting);
        let mut t = if hi > lo {
            (lnm(s) - lo) / (hi - lo)
        } else {
            0.5
        };
        if !d.measure.minimize() {
            t = 1.0 - t;
        }
        let col = shade(t);
        let text_col = if t < 0.5 { BLACK } else { WHITE };
        let cell = Rectangle::new([(x - 0.48, y - 0.48), (x + 0.48, y + 0.48)], col.filled());
        c.draw_series(std::iter::once(cell)).map_err(err)?;
        let label = EmptyElement::at((x, y))
            + Text::new(
                format!("{} n={}", short(s.summary.mean), s.summary.n),
                (-28, -6),
                font_px(12.0, text_col),
            );
        c.draw_series(std::iter::once(label)).map_err(err)?;
    }
    let outline = |c: &mut Chart, s: &Setting, col: RGBColor| -> Result<()> {
        let (x, y) = pos(s);
        c.draw_series(std::iter::once(Rectangle::new(
            [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)],
            col.stroke_width(3),
        )))
        .map_err(err)?;
        Ok(())
    };
    if let Some(def) = &d.default {
        outline(&mut c, def, DEFAULT)?;
    }
    if let Some(s) = d.marked() {
        outline(&mut c, &s, SWEET)?;
    }
    a.draw_text(
        "colour by ln(mean): light better, dark worse · blue frame: the default · red frame: the sweet spot",
        &font_px(13.0, RGBColor(0x44, 0x44, 0x44)),
        (80, (PANEL_H - LEGEND_H + 8) as i32),
    )
    .map_err(err)
}

/// A colour from light (t = 0, the best mean) to dark (t = 1, the worst): yellow-green to
/// dark blue, readable in grey print.
fn shade(t: f64) -> RGBColor {
    let stops = [
        (0xfd, 0xe7, 0x25),
        (0x35, 0xb7, 0x79),
        (0x31, 0x68, 0x8e),
        (0x44, 0x01, 0x54),
    ];
    let t = t.clamp(0.0, 1.0) * (stops.len() - 1) as f64;
    let i = (t.floor() as usize).min(stops.len() - 2);
    let f = t - i as f64;
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * f).round() as u8;
    let (a, b) = (stops[i], stops[i + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// The order of the check's first trial ([`crate::plot::data::Check::first_order`]).
fn check_orders(d: &TuneData) -> Option<usize> {
    Some(d.check.as_ref()?.first_order)
}

/// The trials in the order they ran: drift, the race and the check show.
fn order(a: &Area, d: &TuneData) -> Result<()> {
    a.fill(&WHITE).map_err(err)?;
    let n = d.points.len().max(1) as f64;
    let (y0, y1) = y_range(d.points.iter().filter_map(|p| p.value));
    let mut c = chart(
        a,
        "trials in the order they ran (blue: the default, red: the best, grey: others)",
        0.5..n + 0.5,
        y0..y1,
    )?;
    axes(
        &mut c,
        "trial (in the order run)",
        &y_desc(d),
        (n as usize).min(24),
        &whole,
    )?;
    if let Some(first) = check_orders(d) {
        c.draw_series(std::iter::once(Rectangle::new(
            [(first as f64 - 0.5, y0), (n + 0.5, y1)],
            RGBColor(0xfb, 0xf3, 0xd5).filled(),
        )))
        .map_err(err)?;
        c.draw_series(std::iter::once(
            EmptyElement::at((first as f64 - 0.5, y1)) + Text::new("final check", (4, 4), font(12)),
        ))
        .map_err(err)?;
    }
    let best = d.best();
    for p in &d.points {
        let col = if d.default.as_ref() == Some(&p.setting) {
            DEFAULT
        } else if best.as_ref() == Some(&p.setting) {
            SWEET
        } else {
            TRIAL
        };
        let x = p.order as f64;
        match p.value {
            Some(y) => {
                let style = if p.pooled {
                    col.stroke_width(1)
                } else {
                    col.filled()
                };
                c.draw_series(std::iter::once(Circle::new((x, y), TRIAL_R + 1, style)))
                    .map_err(err)?;
            }
            None => {
                c.draw_series(std::iter::once(TriangleMarker::new(
                    (x, y0),
                    5,
                    col.filled(),
                )))
                .map_err(err)?;
            }
        }
    }
    let mut key = match d.measure {
        super::data::Measure::Ratio(_) => "● ÷ its own no_load",
        _ => "● a trial",
    }
    .to_string();
    if let Some(p) = d.pooled_no_load_s {
        key.push_str(&format!(" · ○ loaded runs only, ÷ mean no_load {p:.1} s"));
    }
    if d.points.iter().any(|p| p.value.is_none()) {
        key.push_str(" · ▲ no_load only (no objective)");
    }
    a.draw_text(
        &key,
        &font_px(13.0, RGBColor(0x44, 0x44, 0x44)),
        (80, (PANEL_H - LEGEND_H + 8) as i32),
    )
    .map_err(err)
}

/// The check's title: the two settings, the improvement with its CI and p, and the verdict.
pub(crate) fn check_title(d: &TuneData) -> String {
    let Some(ch) = &d.check else {
        return match &d.sweet_spot {
            Some(_) => "check: none (the search found nothing better than the default)".into(),
            None => format!("check: none (tune {})", d.tune.status),
        };
    };
    let imp = ch
        .improvement
        .map(|(r, lo, hi)| format!("{r:.2}× better (95% CI {lo:.2}–{hi:.2})"))
        .unwrap_or_else(|| "no improvement estimate".into());
    let p = ch
        .p_value
        .map(|p| format!(", p = {p:.1e}"))
        .unwrap_or_default();
    let verdict = if ch.significant {
        "significant, kept"
    } else {
        "not significant, the default kept"
    };
    format!("check: {imp}{p}: {verdict}")
}

/// The final check: the default's and the best's values on its pairs, the verdict titled.
fn check(a: &Area, d: &TuneData) -> Result<()> {
    a.fill(&WHITE).map_err(err)?;
    let title = check_title(d);
    let Some(ch) = &d.check else {
        a.draw_text(&title, &font(15), (20, 20)).map_err(err)?;
        return Ok(());
    };
    let k = ch.default.len().max(ch.best_values.len()).max(1) as f64;
    let (y0, y1) = y_range(ch.default.iter().chain(&ch.best_values).copied());
    let mut c = chart(a, &title, 0.5..k + 0.5, y0..y1)?;
    let x_desc = if ch.paired {
        "pair, in the order run (blue: the default, red: the best)"
    } else {
        "trial of each (the arms test takes every trial; blue: the default, red: the best)"
    };
    axes(&mut c, x_desc, &y_desc(d), k as usize + 1, &whole)?;
    if ch.paired {
        c.draw_series(
            ch.default
                .iter()
                .zip(&ch.best_values)
                .enumerate()
                .map(|(i, (a, b))| {
                    let x = i as f64 + 1.0;
                    PathElement::new(
                        vec![(x - 0.1, *a), (x + 0.1, *b)],
                        TRIAL.mix(0.6).stroke_width(1),
                    )
                }),
        )
        .map_err(err)?;
    }
    let series = [(&ch.default, DEFAULT, -0.1), (&ch.best_values, SWEET, 0.1)];
    for (vals, col, dx) in series {
        c.draw_series(
            vals.iter()
                .enumerate()
                .map(|(i, v)| Circle::new((i as f64 + 1.0 + dx, *v), TRIAL_R + 2, col.filled())),
        )
        .map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::tick_digits;

    #[test]
    fn an_axis_labels_all_its_ticks_with_as_many_decimals_as_its_step_needs() {
        // 980..1020 in steps of about 5: 995.0, 1000.0; a Ratio 1.0..3.7: 1.50; Loads in
        // the millions: whole numbers.
        assert_eq!(tick_digits(40.0), 1);
        assert_eq!(tick_digits(2.7), 2);
        assert_eq!(tick_digits(500_000.0), 0);
        assert_eq!(tick_digits(0.0), 6);
    }
}
