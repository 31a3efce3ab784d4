//! The tune report as a person reads it. The first screen answers five questions in plain
//! words, one line each: what was kept, by how much, how sure, how long it took, and how to
//! undo it. The details follow for those who want them: the verdict in the statistics' own
//! words, the notes, contest's table, and what the tune left out. Prose wraps at
//! [`WIDTH`] columns; the JSON ([`super::Report`]) carries every figure.

use super::{Improvement, LoadMeans, Report, is_host_wide};
use crate::knob::{KnobValue, setting_label};
use crate::tune::solver::KnobFinding;

/// Columns the report's prose wraps at.
pub const WIDTH: usize = 100;

/// Width of the first screen's labels (`how sure` and a space).
const LABEL: usize = 11;

/// `2.20× better, 95% CI 2.05–2.37`; a ratio below 1 is inverted and called worse
/// (`1.43× worse, 95% CI 0.52–3.85`), so the words never contradict the numbers; a ratio
/// that rounds to 1.00 is `no change` (not "1.00× better").
pub(super) fn improvement_text(i: &Improvement) -> String {
    let [lo, hi] = i.ci95;
    if (i.ratio - 1.0).abs() < 0.005 {
        return format!("no change, 95% CI {lo:.2}–{hi:.2}");
    }
    if i.ratio >= 1.0 {
        return format!("{:.2}× better, 95% CI {lo:.2}–{hi:.2}", i.ratio);
    }
    let inv = |x: f64| if x > 0.0 { 1.0 / x } else { f64::INFINITY };
    format!(
        "{:.2}× worse, 95% CI {:.2}–{:.2}",
        inv(i.ratio),
        inv(hi),
        inv(lo)
    )
}

fn opt(x: Option<f64>, prec: usize) -> String {
    x.map_or_else(|| "-".to_string(), |v| format!("{v:.prec$}"))
}

/// `text` wrapped at [`WIDTH`] columns and ended with a newline: the first line after
/// `first`, the rest indented by `rest` spaces. Words are never split (not at a hyphen: a
/// `mq-deadline` stays whole), and a `code span` between backticks is never broken, so a
/// command stays whole to copy (a line holding one may be longer than [`WIDTH`]).
pub fn wrap(first: &str, rest: usize, text: &str) -> String {
    // Spaces inside code spans become a character that is no break point, and back after.
    const KEEP: char = '\u{1f}';
    let mut inside = false;
    let held: String = text
        .chars()
        .map(|c| {
            if c == '`' {
                inside = !inside;
            }
            if inside && c == ' ' { KEEP } else { c }
        })
        .collect();
    let pad = " ".repeat(rest);
    let o = textwrap::Options::new(WIDTH)
        .initial_indent(first)
        .subsequent_indent(&pad)
        .break_words(false)
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    let mut s = textwrap::fill(&held, o).replace(KEEP, " ");
    s.push('\n');
    s
}

/// One first-screen line: `  label     text`, wrapped under its text.
fn answer(label: &str, text: &str) -> String {
    wrap(&format!("  {label:<LABEL$}"), 2 + LABEL, text)
}

/// A duration in s as a person says it: `0.4 s`, `52 s`, `3 min 52 s`, `1 h 02 min`.
pub(crate) fn duration(s: f64) -> String {
    if !s.is_finite() || s < 0.0 {
        return "?".to_string();
    }
    if s < 10.0 {
        return format!("{s:.1} s");
    }
    let t = s.round() as u64;
    match t {
        0..60 => format!("{t} s"),
        60..3600 => format!("{} min {} s", t / 60, t % 60),
        _ => format!("{} h {:02} min", t / 3600, (t % 3600) / 60),
    }
}

/// The report's objective figure: a benchmark's own figure at 3 significant digits (it may be
/// 0.004 or 4724075), else a Ratio or Loads at 2 decimals.
fn figure(r: &Report, x: Option<f64>) -> String {
    match &r.benchmark {
        Some(_) => x.map_or_else(|| "–".to_string(), crate::tune::evaluator::figure),
        None => opt(x, 2),
    }
}

/// `scheduler none → mq-deadline, dirty_ratio 20 → 10 (host-wide)`.
fn changes_text(r: &Report) -> String {
    let f = |v: &Option<KnobValue>| v.as_ref().map_or("-".into(), |v| v.to_string());
    r.changes
        .iter()
        .map(|c| {
            format!(
                "{} {} → {}{}",
                c.knob,
                f(&c.from),
                f(&c.to),
                if is_host_wide(&c.knob) {
                    " (host-wide: every device)"
                } else {
                    ""
                }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What was kept, by how much and how sure (the first three lines).
fn verdict_lines(r: &Report) -> String {
    let o = &r.objective;
    let me = 100.0 * r.min_effect;
    let mut s = String::new();
    let other = r.candidate != r.default;
    if r.significant {
        s.push_str(&answer("kept", &changes_text(r)));
        let by = match &o.improvement {
            Some(i) => format!(
                "{} {} → {}: {}",
                o.name,
                figure(r, o.default),
                figure(r, o.best),
                improvement_text(i)
            ),
            None => o.name.clone(),
        };
        s.push_str(&answer("by", &by));
        if let Some(c) = carried_by(r) {
            s.push_str(&answer("knobs", &c));
        }
    } else if let Some(lines) = refused_by_judges(r) {
        s.push_str(&lines);
        return s;
    } else {
        s.push_str(&answer(
            "kept",
            &format!(
                "the default [{}]: no other setting was shown to be better",
                setting_label(&r.default)
            ),
        ));
        let by = match (&o.candidate_improvement, other) {
            (Some(i), true) => format!(
                "nothing: the best other setting measured, {}, gave {} {} → {} ({})",
                setting_label(&r.candidate),
                o.name,
                figure(r, o.default),
                figure(r, o.candidate),
                improvement_text(i)
            ),
            (None, true) => format!(
                "nothing: the best other setting measured, {}, was not checked against it",
                setting_label(&r.candidate)
            ),
            (_, false) => format!(
                "nothing: {} {} at the default, and no other setting measured better",
                o.name,
                figure(r, o.default)
            ),
        };
        s.push_str(&answer("by", &by));
    }
    // A confirm tune's tests share the policy's alpha (`solver/confirm.rs`).
    let asks = match &r.confirm {
        Some(c) if c.held => format!("the confirm asks < {}, its share of alpha", r.alpha),
        Some(_) => format!("after the confirm, the search asks < {}", r.alpha),
        None if r.split_check => format!(
            "the check was split between two finalists, each asked < {}: half the policy's",
            r.alpha
        ),
        None => format!("the policy asks < {}", r.alpha),
    };
    let sure = match r.p_value {
        Some(p) if r.significant => format!(
            "sure: p = {} ({asks}); a setting at most {me:.0}% better would rarely measure \
             this well",
            p_text(p),
        ),
        Some(p) => format!(
            "not sure enough: p = {} ({asks}); not shown to be more than {me:.0}% better than \
             the default",
            p_text(p),
        ),
        None => no_check(&r.reason),
    };
    s.push_str(&answer("how sure", &sure));
    s.push_str(&judge_lines(r));
    s
}

/// Which knobs carry the effect, which were left at their default and which were not tested
/// (the step after the check, `src/tune/solver/reduce.rs`), in one line; `None` when it did
/// not run.
fn carried_by(r: &Report) -> Option<String> {
    if r.knobs.is_empty() {
        return None;
    }
    let of = |f: KnobFinding| -> Vec<&str> {
        r.knobs
            .iter()
            .filter(|k| k.finding == f)
            .map(|k| k.knob.as_str())
            .collect()
    };
    let mut parts = Vec::new();
    let carries = of(KnobFinding::Carries);
    if !carries.is_empty() {
        let verb = if carries.len() == 1 {
            "carries"
        } else {
            "carry"
        };
        parts.push(format!("{} {verb} the effect", carries.join(", ")));
    }
    let left = of(KnobFinding::LeftAtDefault);
    if !left.is_empty() {
        parts.push(format!(
            "{} not needed: left at {} default",
            left.join(", "),
            if left.len() == 1 { "its" } else { "their" }
        ));
    }
    let untested = of(KnobFinding::NotTested);
    if let Some(first) = r.knobs.iter().find(|k| k.finding == KnobFinding::NotTested) {
        let why = first.why.strip_prefix("not tested: ").unwrap_or(&first.why);
        parts.push(format!(
            "{} kept, not tested whether needed ({why})",
            untested.join(", ")
        ));
    }
    Some(parts.join("; "))
}

/// The details of [`carried_by`]: per knob the changed knob's finding, values and the
/// figures of its test (the best with it at its default against the default).
fn knob_lines(r: &Report) -> String {
    let Some(first) = r.knobs.first() else {
        return String::new();
    };
    let f = |v: &Option<KnobValue>| v.as_ref().map_or("-".into(), |v| v.to_string());
    let mut s = wrap(
        "  ",
        4,
        &format!(
            "knobs the final check's best changed, each put back to its default in turn \
             (tested at alpha / {} = {}):",
            r.knobs.len(),
            p_text(first.level)
        ),
    );
    for k in &r.knobs {
        let what = match k.finding {
            KnobFinding::Carries => format!("carries the effect ({} → {})", f(&k.from), f(&k.to)),
            KnobFinding::LeftAtDefault => {
                format!("left at its default {} (not {})", f(&k.from), f(&k.to))
            }
            KnobFinding::NotTested => format!("kept at {}", f(&k.to)),
        };
        let figures = match (&k.improvement, k.p_value, k.pairs) {
            (Some(i), Some(p), Some(n)) => format!(
                "; its test: {}, p = {}, {n} {}",
                improvement_text(i),
                p_text(p),
                if n == 1 { "pair" } else { "pairs" }
            ),
            (Some(i), None, None) => format!(" ({})", improvement_text(i)),
            _ => String::new(),
        };
        s.push_str(&wrap(
            &format!("    {:<16} ", k.knob),
            21,
            &format!("{what}: {}{figures}", k.why),
        ));
    }
    s
}

/// Each judge's verdict, one `judge` line each ([`crate::tune::judge`]); nothing when no judge
/// ran.
fn judge_lines(r: &Report) -> String {
    r.judges
        .iter()
        .map(|j| answer("judge", &j.line()))
        .collect()
}

/// The first lines when the objective's check found a sweet spot but a judge refused it:
/// what was kept (the default), what the candidate would have bought, what it would have cost.
/// `None` unless a judge failed.
fn refused_by_judges(r: &Report) -> Option<String> {
    let failed: Vec<_> = r.judges.iter().filter(|j| !j.holds).collect();
    if r.significant || failed.is_empty() {
        return None;
    }
    let o = &r.objective;
    let mut s = answer(
        "kept",
        &format!(
            "the default [{}]: the best setting found, {}, failed a judge of the policy",
            setting_label(&r.default),
            setting_label(&r.candidate)
        ),
    );
    let gain = o
        .candidate_improvement
        .as_ref()
        .map_or_else(String::new, |i| {
            format!(
                " {} {} → {} ({})",
                o.name,
                figure(r, o.default),
                figure(r, o.candidate),
                improvement_text(i)
            )
        });
    let costs: Vec<String> = failed
        .iter()
        .map(|j| match j.ratio {
            Some((x, _, _)) => {
                format!("{} {:.2}× the default's {:.3} s", j.label(), x, j.default_s)
            }
            None => j.label(),
        })
        .collect();
    s.push_str(&answer(
        "by",
        &format!(
            "nothing: it would have traded{gain} for {}",
            costs.join(", ")
        ),
    ));
    let p = r
        .p_value
        .map_or_else(String::new, |p| format!(" (p = {})", p_text(p)));
    let sure = format!(
        "sure of the {}{p}, but not that it is at most {:.0}% slower on every judge",
        o.name,
        100.0 * failed[0].tolerance
    );
    s.push_str(&answer("how sure", &sure));
    s.push_str(&judge_lines(r));
    Some(s)
}

/// Why no final check ran, in plain words (the verdict in the statistics' own words follows
/// under "details").
fn no_check(reason: &str) -> String {
    let why = if reason.contains("ranked best") || reason.contains("measured better than the") {
        "the default did best among the settings measured, so there was nothing to check \
         against it"
    } else if reason.contains("no budget left") {
        "the budget ran out before it"
    } else if reason.contains("guard rail") {
        "the best setting broke a guard rail"
    } else if reason.contains("reference trial failed") {
        "the default's own trial failed, so there was nothing to compare with"
    } else {
        "see the verdict below"
    };
    format!("not tested: no final check ran ({why})")
}

/// A p-value at 2 significant digits, small ones in exponent form.
fn p_text(p: f64) -> String {
    if p < 0.001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

/// The confirm of a known sweet spot in one sentence: what, from where, held or not, with
/// its figures.
fn confirm_text(c: &crate::tune::report::ConfirmReport) -> String {
    let figures = format!(
        "{}{} in {} interleaved {} at α {}",
        c.improvement
            .as_ref()
            .map_or_else(String::new, |i| format!("{}, ", improvement_text(i))),
        c.p_value
            .map_or_else(|| "no test".to_string(), |p| format!("p = {}", p_text(p))),
        c.pairs,
        if c.pairs == 1 { "pair" } else { "pairs" },
        c.alpha
    );
    let what = format!(
        "{} ({})",
        crate::knob::setting_label(&c.setting),
        if c.source.is_empty() {
            "given"
        } else {
            &c.source
        }
    );
    if c.held {
        format!(
            "{what} held: {figures}; the tune ended there ({} load runs)",
            c.runs
        )
    } else {
        format!(
            "{what} did not hold ({figures}): the search ran, its {} load runs in hand",
            c.runs
        )
    }
}

/// How long it took and how to undo it (the last two first-screen lines).
fn cost_lines(r: &Report) -> String {
    let mut took = format!(
        "{} trials of {} settings, {} load runs",
        r.trials, r.evaluations, r.runs
    );
    if let Some(e) = r.elapsed_s {
        took = format!("{}: {took}", duration(e));
    }
    if let Some(x) = &r.resumed {
        took.push_str(&format!(" (resumed tune #{})", x.from_tune));
    }
    if let Some(b) = r.bytes_written {
        took.push_str(&format!(
            ", {} written to the device",
            crate::types::text::bytes(b)
        ));
    }
    let host = r.target.identity.starts_with("host:");
    let undo = match (r.applied, &r.undo) {
        (true, Some(u)) => format!("`{u}` puts it back (the sweet spot stays applied)"),
        (true, None) => "`sweetspot restore` puts it back (the sweet spot stays applied)".into(),
        (false, _) => {
            let back = if host {
                "nothing to undo: the host's knobs are back as they were"
            } else {
                "nothing to undo: the device is back as it was"
            };
            if r.significant {
                format!(
                    "{back} (`--apply` keeps the sweet spot; `sweetspot profile export` makes \
                     it a boot profile)"
                )
            } else {
                back.to_string()
            }
        }
    };
    answer("took", &took) + &answer("undo", &undo)
}

/// Contest's table: the default's figures per load beside the sweet spot's (or, when the
/// default is kept, the best other setting's). A user benchmark's row is its figure's name.
fn table(r: &Report) -> String {
    let cell = |m: &LoadMeans| {
        // A benchmark run has no contest Time: its figure is what was measured.
        if let Some(b) = &r.benchmark {
            return format!("{} {}", b.label(), figure(r, m.loads));
        }
        let mut c = format!("Time {} s", opt(m.time_s, 1));
        if m.ratio.is_some() {
            c.push_str(&format!("  Ratio {}", opt(m.ratio, 2)));
        }
        if m.loads.is_some() {
            c.push_str(&format!("  Loads {}", opt(m.loads, 0)));
        }
        c
    };
    let second = if r.significant {
        Some(format!("sweet spot [{}]", setting_label(&r.candidate)))
    } else {
        (r.candidate != r.default).then(|| format!("best other [{}]", setting_label(&r.candidate)))
    };
    let head = format!("default [{}]", setting_label(&r.default));
    // The default column is as wide as its widest cell, so the second column lines up.
    let w = r
        .loads
        .values()
        .map(|[d, _]| cell(d).chars().count())
        .chain([head.chars().count()])
        .max()
        .unwrap_or(0);
    let row = |name: &str, d: &str, b: Option<&str>| match b {
        Some(b) => format!("  {name:<12} {d:<w$}  {b}\n"),
        None => format!("  {name:<12} {d}\n"),
    };
    let mut s = row("load", &head, second.as_deref());
    for (name, [d, b]) in &r.loads {
        let name = if r.benchmark.is_some() {
            "benchmark"
        } else {
            name
        };
        let b = second.as_ref().map(|_| cell(b));
        s.push_str(&row(name, &cell(d), b.as_deref()));
    }
    s
}

/// What the tune left out or could not measure: guard rails, kernel refusals, knobs not
/// touched, policy knobs dropped.
fn left_out(r: &Report) -> String {
    let mut s = String::new();
    if !r.host_wide.is_empty() {
        s.push_str(&wrap(
            "\n  ",
            4,
            &format!(
                "host-wide knobs tuned (they act on every device): {}",
                r.host_wide.join(", ")
            ),
        ));
    }
    if !r.excluded.is_empty() {
        s.push_str("\n  excluded by a guard rail:\n");
        for e in &r.excluded {
            s.push_str(&format!(
                "    {}  {} {}: {}\n",
                setting_label(&e.setting),
                r.objective.name,
                opt(e.objective, 2),
                e.guards.join("; ")
            ));
        }
    }
    if !r.refused.is_empty() {
        s.push_str("\n  refused by the kernel (infeasible, not measured):\n");
        for e in &r.refused {
            s.push_str(&format!("    {}  {}\n", setting_label(&e.setting), e.error));
        }
    }
    if !r.not_touched.is_empty() {
        s.push_str("\n  knobs not touched:\n");
        for n in &r.not_touched {
            s.push_str(&wrap("    ", 6, n));
        }
    }
    if !r.dropped.is_empty() {
        s.push_str("\n  policy knobs dropped:\n");
        for d in &r.dropped {
            let reason = if r.not_touched.contains(&d.reason) {
                "(see knobs not touched)"
            } else {
                d.reason.as_str()
            };
            s.push_str(&wrap(&format!("    {:<16} ", d.knob), 21, reason));
        }
    }
    s
}

/// The human report: the first screen (`verdict_lines`, `cost_lines`), then the details.
pub fn text(r: &Report) -> String {
    let mut s = format!(
        "sweet spot of {}: kernel {}, policy {}\n",
        r.target.label, r.target.kernel, r.policy
    );
    s.push_str(&verdict_lines(r));
    s.push_str(&cost_lines(r));
    s.push_str("\ndetails\n");
    if let Some(b) = &r.benchmark {
        let mut what = format!("benchmark `{}`", b.command);
        if let Some(n) = b.nice {
            what.push_str(&format!(", nice {n}"));
        }
        if let Some(c) = &b.cpus {
            let c: Vec<String> = c.iter().map(|x| x.to_string()).collect();
            what.push_str(&format!(", CPUs {}", c.join(",")));
        }
        what.push_str(&format!(
            "; its figure: {}, {}",
            b.label(),
            if b.maximize { "maximised" } else { "minimised" }
        ));
        s.push_str(&wrap("  ", 4, &what));
    }
    s.push_str(&wrap("  verdict: ", 4, &r.reason));
    if let Some(c) = &r.confirm {
        s.push_str(&wrap("  confirm: ", 4, &confirm_text(c)));
    }
    if r.reason.contains("no_load pooled") {
        s.push_str(&wrap(
            "  ",
            4,
            "(no_load pooled: the job alone took as long at every finalist as at the default, \
             so each loaded run's Ratio divides by the mean of all no_load runs, and only \
             loaded runs were paired)",
        ));
    }
    if let Some(x) = &r.resumed {
        s.push_str(&format!(
            "  resumed tune #{}: reused its {} finished trials ({} runs); {} new runs\n",
            x.from_tune,
            x.trials,
            x.runs,
            r.runs.saturating_sub(x.runs)
        ));
    }
    s.push_str(&knob_lines(r));
    for n in &r.notes {
        s.push_str(&wrap("  note: ", 4, n));
    }
    s.push('\n');
    s.push_str(&table(r));
    s.push_str(&left_out(r));
    s
}

#[cfg(test)]
mod tests;
