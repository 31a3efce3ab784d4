//! What a tune's report must say to be read right (the Hardening issue, #9): the settings
//! the kernel refused (with the errno), the measured settings a guard rail excluded (with the
//! guard and the figures), and notes: an excluded or unchosen setting that looked better than
//! a kept default, a Ratio better only because no_load got slower, policy values left out.

use super::LoadMeans;
use crate::bench::Load;
use crate::knob::{Setting, setting_label};
use crate::stats;
use crate::tune::TuneOutcome;
use crate::tune::evaluator::{Trial, broken, mean_metrics};
use crate::tune::policy::Policy;
use crate::tune::space::Space;
use serde::Serialize;
use std::collections::BTreeMap;

/// A setting the kernel refused: marked infeasible, and the search went on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Refused {
    /// The setting.
    pub setting: Setting,
    /// The kernel's answer, with the errno, e.g. `nr_requests: writing '2048' to
    /// /sys/block/loop0/queue/nr_requests failed: EINVAL (Invalid argument)`.
    pub error: String,
}

/// A measured setting that a guard rail excluded (on the means of all its trials).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Excluded {
    /// The setting.
    pub setting: Setting,
    /// Its objective (geometric mean over its trials).
    pub objective: Option<f64>,
    /// Each guard rail it breaks, with the figures: `io_load loads 3 < 0.5 × default 12 (= 6)`.
    pub guards: Vec<String>,
}

/// A policy knob that the tune dropped, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Dropped {
    /// The knob.
    pub knob: String,
    /// Why, e.g. `not on loop0`.
    pub reason: String,
}

/// What [`explain`] needs from the report being built.
pub(super) struct Inputs<'a> {
    pub policy: &'a Policy,
    pub space: &'a Space,
    pub out: &'a TuneOutcome,
    /// The best setting found (the verdict's, else the incumbent).
    pub cand: usize,
    /// True when the tune reached a verdict (not interrupted).
    pub concluded: bool,
    /// The report's per-load means (default, best).
    pub loads: &'a BTreeMap<String, [LoadMeans; 2]>,
}

/// What [`explain`] found.
pub(super) struct Explained {
    pub refused: Vec<Refused>,
    pub excluded: Vec<Excluded>,
    pub notes: Vec<String>,
}

/// The geometric mean of trials' objective values (finite, positive ones), as the report and
/// the improvement average.
pub(super) fn geomean_value(ts: &[&Trial]) -> Option<f64> {
    let x: Vec<f64> = ts
        .iter()
        .map(|t| t.value)
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    (!x.is_empty()).then(|| stats::geomean(&x))
}

/// Refused and excluded settings, and the notes, of an outcome.
pub(super) fn explain(x: &Inputs) -> Explained {
    let (policy, space, out, cand) = (x.policy, x.space, x.out, x.cand);
    let mut distinct: Vec<usize> = out.trials.iter().map(|t| t.point).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let (refused, excluded) = refused_and_excluded(policy, space, out, &distinct);
    let d_all = geomean_value(&ok_trials(out, space.default));
    // A setting that looked better than the default but a guard rail excluded: say so, or
    // "nothing beat the default" reads as if nothing did.
    let mut notes = excluded_notes(policy, &excluded, d_all);
    let slower = no_load_slower(policy, space, out, cand);
    // The default kept although a feasible setting measured better: say why, or "nothing
    // beat the default" reads as if nothing did (seen on a real desktop tune: three settings
    // at 1.12–1.22 against the default's 1.54, one trial each, and no word).
    if x.concluded && cand == space.default {
        notes.extend(kept_default_note(x, &distinct, &excluded, d_all));
    }
    notes.extend(no_load_notes(x.loads, policy, slower));
    notes.extend(space.dropped_values.iter().cloned());
    Explained {
        refused,
        excluded,
        notes,
    }
}

/// The trials of point `p` that did not fail.
fn ok_trials(out: &TuneOutcome, p: usize) -> Vec<&Trial> {
    out.trials
        .iter()
        .filter(|t| t.point == p && t.failed.is_none())
        .collect()
}

/// True when objective value `x` is better than `than` under `policy` (lower when it
/// minimizes, else higher).
fn better(policy: &Policy, x: f64, than: f64) -> bool {
    if policy.objective.minimize() {
        x < than
    } else {
        x > than
    }
}

/// Of the `distinct` measured points, those the kernel refused, and those (other than the
/// default) a guard rail excludes on the means of their trials against the default's.
fn refused_and_excluded(
    policy: &Policy,
    space: &Space,
    out: &TuneOutcome,
    distinct: &[usize],
) -> (Vec<Refused>, Vec<Excluded>) {
    let mut refused = Vec::new();
    let mut excluded = Vec::new();
    let def_means = mean_metrics(&out.trials, space.default);
    for &p in distinct {
        if let Some(t) = out
            .trials
            .iter()
            .find(|t| t.point == p && t.refused.is_some())
        {
            refused.push(Refused {
                setting: space.points[p].clone(),
                error: t.refused.clone().unwrap_or_default(),
            });
            continue;
        }
        if p == space.default {
            continue;
        }
        let guards = broken(policy, &mean_metrics(&out.trials, p), &def_means);
        if !guards.is_empty() {
            excluded.push(Excluded {
                setting: space.points[p].clone(),
                objective: geomean_value(&ok_trials(out, p)),
                guards,
            });
        }
    }
    (refused, excluded)
}

/// A note per excluded setting whose objective beat the default's `d_all`, naming the
/// guard rails that exclude it.
fn excluded_notes(policy: &Policy, excluded: &[Excluded], d_all: Option<f64>) -> Vec<String> {
    let mut notes = Vec::new();
    for e in excluded {
        if let (Some(x), Some(d)) = (e.objective, d_all)
            && better(policy, x, d)
        {
            notes.push(format!(
                "{} measured {} {x:.2} against the default's {d:.2}, but a guard rail \
                 excludes it: {}",
                setting_label(&e.setting),
                policy.objective.label(),
                e.guards.join("; ")
            ));
        }
    }
    notes
}

/// Is no_load slower at the candidate `cand`, beyond noise? (Welch, on every no_load run of
/// the two settings: no_load does not depend on the pairing.)
fn no_load_slower(policy: &Policy, space: &Space, out: &TuneOutcome, cand: usize) -> bool {
    let no_load_times = |p: usize| -> Vec<f64> {
        ok_trials(out, p)
            .iter()
            .flat_map(|t| t.runs.iter())
            .filter(|r| r.load == Load::NoLoad && r.failed.is_none())
            .map(|r| r.time_s)
            .collect()
    };
    cand != space.default
        && stats::welch_less(&no_load_times(space.default), &no_load_times(cand))
            .is_some_and(|t| t.p_value < policy.alpha)
}

/// When the default was kept: a note on the feasible, not excluded settings among
/// `distinct` that measured better than the default's `d_all`, naming the best, and why
/// none was chosen; `None` when none did.
fn kept_default_note(
    x: &Inputs,
    distinct: &[usize],
    excluded: &[Excluded],
    d_all: Option<f64>,
) -> Option<String> {
    let (policy, space, out) = (x.policy, x.space, x.out);
    let failed = |p: usize| {
        out.trials
            .iter()
            .any(|t| t.point == p && t.failed.is_some())
    };
    let looked_better: Vec<(usize, f64)> = distinct
        .iter()
        .copied()
        .filter(|&p| p != space.default && !failed(p))
        .filter(|p| !excluded.iter().any(|e| e.setting == space.points[*p]))
        .filter_map(|p| Some((p, geomean_value(&ok_trials(out, p))?)))
        .filter(|(_, x)| d_all.is_some_and(|d| better(policy, *x, d)))
        .collect();
    let top = looked_better
        .iter()
        .copied()
        .reduce(|a, b| if better(policy, b.1, a.1) { b } else { a });
    let (Some((p, x)), Some(d)) = (top, d_all) else {
        return None;
    };
    let n = |p: usize| ok_trials(out, p).len();
    let k = looked_better.len();
    Some(format!(
        "{k} setting{} measured better than the default but {} not chosen (best: {} \
         at {x:.2} over {} trial{}, the default {d:.2} over {}): the search ranks by \
         a conservative score (each mean shrunk toward the model's prediction from \
         the other settings, plus 1.5 sd), and none ranked above the default",
        if k == 1 { "" } else { "s" },
        if k == 1 { "was" } else { "were" },
        setting_label(&space.points[p]),
        n(p),
        if n(p) == 1 { "" } else { "s" },
        n(space.default)
    ))
}

/// True for a host-wide knob (`/proc/sys/vm`), by the catalogue.
pub(crate) fn is_host_wide(knob: &str) -> bool {
    crate::knob::catalogue::lookup(None, knob).is_some_and(|f| f.order.is_host())
        || crate::knob::features::is_feature(knob)
}

/// Notes when the best setting's no_load Time moved: a Ratio is Time ÷ no_load Time, so a
/// slower no_load makes it look better without the loaded job getting any faster (seen on
/// `--scratch`: io_load Time 21.4 → 22.6 s, Ratio "1.29× better" because no_load went
/// 8.8 → 10.8 s). `loads` are the report's per-load means (default, best); `slower` says
/// that no_load is slower at the best setting beyond noise (a one-sided test at alpha); it
/// must also be slower by the policy's minimum effect.
fn no_load_notes(
    loads: &BTreeMap<String, [LoadMeans; 2]>,
    policy: &Policy,
    slower: bool,
) -> Vec<String> {
    let mut notes = Vec::new();
    let Some([d0, b0]) = loads.get(Load::NoLoad.name()) else {
        return notes;
    };
    let (Some(n_d), Some(n_b)) = (d0.time_s, b0.time_s) else {
        return notes;
    };
    if !slower || n_b <= n_d * (1.0 + policy.min_effect) {
        return notes;
    }
    let slower = format!(
        "no_load got slower ({n_d:.1} → {n_b:.1} s, +{:.0}%)",
        100.0 * (n_b / n_d - 1.0)
    );
    let mut any = false;
    for (name, [d, b]) in loads {
        if name == Load::NoLoad.name() {
            continue;
        }
        if let (Some(rd), Some(rb), Some(td), Some(tb)) = (d.ratio, b.ratio, d.time_s, b.time_s)
            && rb < rd
            && tb >= td
        {
            any = true;
            notes.push(format!(
                "{name} Ratio {rd:.2} → {rb:.2} only because {slower}: {name}'s own Time went \
                 {td:.1} → {tb:.1} s, no better"
            ));
        }
    }
    if !any {
        notes.push(format!(
            "at the best setting {slower}: part of the Ratio's gain is that, not a faster job"
        ));
    }
    notes
}
