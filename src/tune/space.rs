//! The search space: a finite grid of settings built from a testbed's knobs and a policy.
//!
//! - The scheduler is an outer categorical choice. A knob whose [`SpaceKnob::schedulers`] lists
//!   schedulers (fifo_batch under (mq-)deadline, quantum under cfq, slice_idle under bfq and
//!   cfq) is only part of settings with one of those schedulers.
//! - An integer knob takes a log2 grid between its bounds (the domain ∩ the policy's range):
//!   the bounds, every power of two between them, and the default. A policy value list
//!   replaces the grid.
//! - Device facts add hard constraints: a host-managed zoned disk only gets mq-deadline
//!   (block/Kconfig: zoned writes need zone write locking, which only mq-deadline offers).
//!
//! Each point also has coordinates in [0, 1]ⁿ for the Gaussian-process model: one-hot
//! scheduler columns, then per integer knob its log2 value scaled to the knob's grid range
//! (0.5 where the knob does not exist under the point's scheduler).

use crate::bench::SpaceKnob;
use crate::knob::catalogue;
use crate::knob::{Domain, KnobValue, Setting};
use crate::tune::policy::{KnobChoice, Policy};
use crate::{Error, Result};
use std::collections::BTreeMap;

/// Most grid points a space may have; more means the policy must narrow its ranges.
pub(crate) const MAX_POINTS: usize = 20_000;

/// One integer knob's grid.
#[derive(Clone, Debug, PartialEq)]
struct IntAxis {
    name: String,
    values: Vec<i64>,
    schedulers: Option<Vec<String>>,
    lo: f64,
    hi: f64,
}

/// A finite search space: every candidate setting, its coordinates, and the default.
#[derive(Clone, Debug, PartialEq)]
pub struct Space {
    /// Every candidate setting.
    pub points: Vec<Setting>,
    /// Model coordinates of each point, each in [0, 1].
    pub coords: Vec<Vec<f64>>,
    /// Index of the default setting in `points`.
    pub default: usize,
    /// Knob names tuned (scheduler first when tuned).
    pub knobs: Vec<String>,
    /// Knobs of the policy that the device does not have (reported, not fatal).
    pub skipped: Vec<String>,
    /// Policy values left out, each with why (a scheduler this device does not offer, or
    /// one a host-managed zoned disk cannot use): reported, not fatal.
    pub dropped_values: Vec<String>,
    /// Number of continuous (integer-knob) dimensions.
    pub int_dims: usize,
    /// The device's active scheduler when the scheduler is not tuned but knobs of its
    /// `iosched/` are (`None` otherwise): those knobs exist only under it, so a profile that
    /// sets them must pin it ([`crate::tune::report::Report::fixed_scheduler`]).
    pub fixed_scheduler: Option<String>,
}

/// log2 with 0 (and below) mapped one step under 1.
fn pos(v: i64) -> f64 {
    if v <= 0 { -1.0 } else { (v as f64).log2() }
}

/// The log2 grid of an integer knob: bounds, powers of two between them, and `default`.
pub(crate) fn log2_grid(min: i64, max: i64, default: Option<i64>) -> Vec<i64> {
    let mut v = vec![min, max];
    let mut p: i64 = 1;
    while p <= max {
        if p >= min {
            v.push(p);
        }
        match p.checked_mul(2) {
            Some(n) => p = n,
            None => break,
        }
    }
    if let Some(d) = default.filter(|d| (min..=max).contains(d)) {
        v.push(d);
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// A policy value or bound outside the knob's safe domain here: the catalogue's for a real
/// device, the surface's `min`/`max` for a simulated one. Names the file, the line and the
/// field (`knobs.fifo_batch.max`).
fn outside(
    policy: &Policy,
    k: &SpaceKnob,
    line: Option<usize>,
    field: &str,
    what: String,
) -> Error {
    let (min, max) = match k.domain {
        Domain::Int { min, max } => (min, max),
        Domain::Choice(_) => (0, 0),
    };
    Error::BadFile {
        path: policy.path.clone(),
        line,
        field: format!("knobs.{}.{field}", k.name),
        msg: format!(
            "{what} is outside the safe domain of {} here, {}",
            k.name,
            catalogue::domain_text(min, max)
        ),
    }
}

/// Warns that built-in `policy` asks `k` for `what`, outside its narrower domain here, and
/// that the tune keeps to the domain.
fn warn_narrower(policy: &Policy, k: &SpaceKnob, what: &str) {
    let (min, max) = match k.domain {
        Domain::Int { min, max } => (min, max),
        Domain::Choice(_) => (0, 0),
    };
    tracing::warn!(
        "policy {}: {} {what} is outside its domain here, {}; kept to the domain",
        policy.name,
        k.name,
        catalogue::domain_text(min, max)
    );
}

fn int_axis(k: &SpaceKnob, choice: &KnobChoice, policy: &Policy) -> Result<IntAxis> {
    let Domain::Int { min, max } = k.domain else {
        return Err(Error::BadInput(format!(
            "knob {} is not an integer knob",
            k.name
        )));
    };
    let default = k.default.as_int();
    let lines = choice.field_lines;
    let builtin = policy.source.starts_with("builtin:");
    let values = if let Some(vals) = &choice.values {
        let mut out = Vec::new();
        for v in vals {
            match v.as_int() {
                Some(x) if (min..=max).contains(&x) => out.push(x),
                Some(x) if builtin => warn_narrower(policy, k, &x.to_string()),
                Some(x) => {
                    return Err(outside(policy, k, lines.values, "values", x.to_string()));
                }
                None => {
                    return Err(Error::BadFile {
                        path: policy.path.clone(),
                        line: lines.values.or(choice.line),
                        field: format!("knobs.{}.values", k.name),
                        msg: format!("'{v}' is not an integer ({} is an integer knob)", k.name),
                    });
                }
            }
        }
        if let Some(d) = default {
            out.push(d);
        }
        out.sort_unstable();
        out.dedup();
        out
    } else {
        // Bounds outside the safe domain are an error, never clamped silently: a policy
        // saying `max = 99999999` would otherwise run as if it said 1024. A built-in policy
        // is written for every device, so its bounds are clamped to a narrower domain (a
        // simulated surface's `min`/`max`), with a warning, while they still overlap it.
        let clamp = |b: Option<i64>| match b {
            Some(v) if builtin && !(min..=max).contains(&v) => {
                warn_narrower(policy, k, &v.to_string());
                Some(v.clamp(min, max))
            }
            b => b,
        };
        let overlaps = choice.min.is_none_or(|v| v <= max) && choice.max.is_none_or(|v| v >= min);
        let (cmin, cmax) = if builtin && overlaps {
            (clamp(choice.min), clamp(choice.max))
        } else {
            (choice.min, choice.max)
        };
        if let Some(lo) = cmin.filter(|v| !(min..=max).contains(v)) {
            return Err(outside(policy, k, lines.min, "min", lo.to_string()));
        }
        if let Some(hi) = cmax.filter(|v| !(min..=max).contains(v)) {
            return Err(outside(policy, k, lines.max, "max", hi.to_string()));
        }
        let lo = cmin.unwrap_or(min);
        let hi = cmax.unwrap_or(max);
        let mut v = log2_grid(lo, hi, default);
        // The default is the reference of guards and of the final check: on the grid even
        // when the policy's range leaves it out (read_ahead_kb 8 under `min = 16`).
        if let Some(d) = default.filter(|d| !v.contains(d)) {
            v.push(d);
            v.sort_unstable();
        }
        v
    };
    let lo = values
        .iter()
        .copied()
        .map(pos)
        .fold(f64::INFINITY, f64::min);
    let hi = values
        .iter()
        .copied()
        .map(pos)
        .fold(f64::NEG_INFINITY, f64::max);
    Ok(IntAxis {
        name: k.name.clone(),
        values,
        schedulers: k.schedulers.clone(),
        lo,
        hi,
    })
}

fn offered(knobs: &[SpaceKnob]) -> String {
    if knobs.is_empty() {
        return "none".into();
    }
    knobs
        .iter()
        .map(|k| k.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A policy knob that is neither in the catalogue nor offered here: a typo, never skipped.
/// Names the file, the line of `[knobs.<name>]`, the closest known name (Damerau–Levenshtein
/// distance ≤ 2) and what the device offers.
fn unknown_knob(name: &str, choice: &KnobChoice, knobs: &[SpaceKnob], policy: &Policy) -> Error {
    let mut names = catalogue::known_names();
    names.extend(knobs.iter().map(|k| k.name.as_str()));
    let hint = catalogue::did_you_mean(name, names);
    Error::BadFile {
        path: policy.path.clone(),
        line: choice.line,
        field: format!("knobs.{name}"),
        msg: format!(
            "unknown knob '{name}'{hint}: not a knob sweetspot knows, nor one this device \
             offers ({})",
            offered(knobs)
        ),
    }
}

/// Checks what of `policy` can be checked without a device, for a target whose knobs are
/// all catalogue knobs (a real device, `--scratch`, `--host`: their space leaves unknown
/// knobs out, [`crate::bench::device_testbed::space_of`]), so that a typo is refused before a scratch
/// device is built: every knob name is a known one, and a file policy's integer values and
/// bounds lie inside the widest safe domain the catalogue gives that name (the device's may
/// be narrower: [`Space::build`] judges that). Errors (exit 2): [`Error::BadFile`] naming the
/// file, the line and the field, as [`Space::build`] does.
pub(crate) fn check_without_device(policy: &Policy) -> Result<()> {
    for (name, choice) in &policy.knobs {
        if !catalogue::is_known(name) {
            let hint = catalogue::did_you_mean(name, catalogue::known_names());
            return Err(Error::BadFile {
                path: policy.path.clone(),
                line: choice.line,
                field: format!("knobs.{name}"),
                msg: format!("unknown knob '{name}'{hint}: not a knob sweetspot knows"),
            });
        }
        let facts = catalogue::FACTS.iter().filter(|f| f.name == name);
        let (min, max) = facts.fold((i64::MAX, i64::MIN), |(lo, hi), f| {
            (lo.min(f.min), hi.max(f.max))
        });
        if name == "scheduler" || min > max || policy.source.starts_with("builtin:") {
            continue;
        }
        let k = SpaceKnob {
            name: name.clone(),
            domain: Domain::Int { min, max },
            default: KnobValue::Int(min),
            schedulers: None,
        };
        int_axis(&k, choice, policy)?;
    }
    Ok(())
}

/// A policy's scheduler value that is neither a kernel I/O scheduler
/// ([`catalogue::ELEVATORS`]) nor one the device offers: a typo ([`Error::BadFile`] at
/// `knobs.scheduler.values`).
fn unknown_scheduler(
    x: &KnobValue,
    choice: &KnobChoice,
    offered: &[String],
    policy: &Policy,
) -> Error {
    let name = x.to_string();
    let known = catalogue::ELEVATORS.iter().copied();
    let hint = catalogue::did_you_mean(&name, known.chain(offered.iter().map(String::as_str)));
    Error::BadFile {
        path: policy.path.clone(),
        line: choice.field_lines.values.or(choice.line),
        field: "knobs.scheduler.values".into(),
        msg: format!(
            "unknown scheduler '{name}'{hint}: not an I/O scheduler of the kernel ({}), nor one \
             this device offers ({})",
            catalogue::ELEVATORS.join(", "),
            offered.join(", ")
        ),
    }
}

impl Space {
    /// Builds the grid for `policy` over a testbed's `knobs`. `zoned` is the device's
    /// `queue/zoned` (`host-managed` restricts the scheduler to mq-deadline).
    ///
    /// A policy knob the device lacks is skipped (listed in [`Space::skipped`]) when it is a
    /// known knob (`catalogue::is_known`); an unknown name that the device does not offer
    /// either is a typo.
    ///
    /// Errors (exit 2): an unknown knob name ([`Error::BadFile`] with the policy's file, the
    /// line of `[knobs.<name>]` and the field), no policy knob exists on the device
    /// ([`Error::BadFile`], field `knobs`), a policy value or bound outside a knob's safe
    /// domain ([`Error::BadFile`] naming the line and field, e.g. `knobs.fifo_batch.max`), or
    /// more than `MAX_POINTS` settings ([`Error::BadInput`]).
    pub fn build(knobs: &[SpaceKnob], policy: &Policy, zoned: Option<&str>) -> Result<Space> {
        let mut skipped = Vec::new();
        let mut dropped_values = Vec::new();
        let mut axes = Vec::new();
        let mut sched: Option<(&SpaceKnob, Vec<String>)> = None;
        for (name, choice) in &policy.knobs {
            let Some(k) = knobs.iter().find(|k| &k.name == name) else {
                if !catalogue::is_known(name) {
                    return Err(unknown_knob(name, choice, knobs, policy));
                }
                skipped.push(name.clone());
                continue;
            };
            if name == "scheduler" {
                let names = scheduler_names(k, choice, policy, zoned, &mut dropped_values)?;
                sched = Some((k, names));
            } else {
                axes.push(int_axis(k, choice, policy)?);
            }
        }
        if sched.is_none() && axes.is_empty() {
            return Err(Error::BadFile {
                path: policy.path.clone(),
                line: None,
                field: "knobs".into(),
                msg: format!(
                    "none of policy '{}'s knobs exists on this device: {} (it offers: {})",
                    policy.name,
                    skipped.join(", "),
                    offered(knobs)
                ),
            });
        }
        // The scheduler the non-scheduler knobs are judged against when it is not tuned.
        let fixed_sched: Option<String> = knobs
            .iter()
            .find(|k| k.name == "scheduler")
            .and_then(|k| k.default.as_name().map(str::to_string));
        let scheds: Vec<Option<String>> = match &sched {
            Some((_, names)) => names.iter().cloned().map(Some).collect(),
            None => vec![None],
        };
        let n_sched = if sched.is_some() { scheds.len() } else { 0 };

        let default_setting: Setting = {
            let mut d = Setting::new();
            if let Some((k, _)) = &sched {
                d.insert("scheduler".into(), k.default.clone());
            }
            let ds = sched
                .as_ref()
                .and_then(|(k, _)| k.default.as_name().map(str::to_string))
                .or(fixed_sched.clone());
            for a in &axes {
                if exists(a, ds.as_deref())
                    && let Some(k) = knobs.iter().find(|k| k.name == a.name)
                {
                    d.insert(a.name.clone(), k.default.clone());
                }
            }
            d
        };

        let (points, coords) = grid(&scheds, &axes, n_sched, fixed_sched.as_deref(), policy)?;
        let default = points
            .iter()
            .position(|p| *p == default_setting)
            .ok_or_else(|| {
                Error::Failed(format!(
                    "internal: the default setting {} is not on the grid",
                    crate::knob::setting_label(&default_setting)
                ))
            })?;
        let mut names: Vec<String> = Vec::new();
        if sched.is_some() {
            names.push("scheduler".into());
        }
        names.extend(axes.iter().map(|a| a.name.clone()));
        let fixed_scheduler =
            fixed_sched.filter(|_| sched.is_none() && axes.iter().any(|a| a.schedulers.is_some()));
        Ok(Space {
            points,
            coords,
            default,
            knobs: names,
            skipped,
            dropped_values,
            int_dims: axes.len(),
            fixed_scheduler,
        })
    }

    /// Number of settings.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// True when the space has no settings (never, for a built space).
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// Per point, the index of its scheduler among the tuned ones (in the order they appear),
    /// all 0 when the scheduler is not tuned.
    pub fn scheduler_groups(&self) -> Vec<usize> {
        let mut names: Vec<&str> = Vec::new();
        self.points
            .iter()
            .map(|p| {
                let Some(s) = p.get("scheduler").and_then(KnobValue::as_name) else {
                    return 0;
                };
                names.iter().position(|n| *n == s).unwrap_or_else(|| {
                    names.push(s);
                    names.len() - 1
                })
            })
            .collect()
    }

    /// Per integer knob: its grid values (for the relaxed-space baselines).
    pub fn int_grids(&self) -> BTreeMap<String, Vec<i64>> {
        let mut m: BTreeMap<String, Vec<i64>> = BTreeMap::new();
        for p in &self.points {
            for (k, v) in p {
                if let Some(x) = v.as_int() {
                    m.entry(k.clone()).or_default().push(x);
                }
            }
        }
        for v in m.values_mut() {
            v.sort_unstable();
            v.dedup();
        }
        m
    }
}

/// The schedulers a policy's `scheduler` choice searches on this device: its values that the
/// device offers (each one dropped is noted in `dropped`), only `mq-deadline` on a
/// host-managed zoned disk, and the device's default first when the list lacks it. Errors
/// (exit 2): the knob has no choices; a value that names no elevator.
fn scheduler_names(
    k: &SpaceKnob,
    choice: &KnobChoice,
    policy: &Policy,
    zoned: Option<&str>,
    dropped_values: &mut Vec<String>,
) -> Result<Vec<String>> {
    let Domain::Choice(offered) = &k.domain else {
        return Err(Error::BadInput("scheduler knob without choices".into()));
    };
    let mut names: Vec<String> = match &choice.values {
        Some(v) => {
            for x in v {
                let known = x.as_name().is_some_and(|n| {
                    catalogue::ELEVATORS.contains(&n) || offered.iter().any(|o| o == n)
                });
                if !known {
                    return Err(unknown_scheduler(x, choice, offered, policy));
                }
                if !offered.iter().any(|o| Some(o.as_str()) == x.as_name()) {
                    dropped_values.push(format!(
                        "scheduler value '{x}' dropped: not offered here (offered: \
                             {})",
                        offered.join(", ")
                    ));
                }
            }
            offered
                .iter()
                .filter(|o| v.iter().any(|x| x.as_name() == Some(o.as_str())))
                .cloned()
                .collect()
        }
        None => offered.clone(),
    };
    if zoned == Some("host-managed") {
        let gone: Vec<String> = names
            .iter()
            .filter(|n| *n != "mq-deadline")
            .cloned()
            .collect();
        if !gone.is_empty() && choice.values.is_some() {
            dropped_values.push(format!(
                "scheduler value{} {} dropped: a host-managed zoned disk needs \
                     mq-deadline",
                if gone.len() == 1 { "" } else { "s" },
                gone.join(", ")
            ));
        }
        names.retain(|n| n == "mq-deadline");
    }
    if let Some(d) = k.default.as_name()
        && !names.iter().any(|n| n == d)
    {
        names.insert(0, d.to_string());
    }
    Ok(names)
}

/// Whether `a` exists under scheduler `s` (an iosched knob exists under its schedulers only;
/// `None`: the scheduler is not known, so every axis counts).
fn exists(a: &IntAxis, s: Option<&str>) -> bool {
    match (&a.schedulers, s) {
        (None, _) => true,
        (Some(list), Some(s)) => list.iter().any(|x| x == s),
        (Some(_), None) => true,
    }
}

/// Every setting of the grid with its coordinates in [0, 1]: per scheduler in `scheds`
/// (`None`: not tuned, the axes judged against `fixed_sched`), the product of the axes that
/// exist under it, as an odometer. Coordinates: one indicator per scheduler (`n_sched` of
/// them), then each axis's position on its (log) scale; 0.5 for an axis absent there.
/// Errors (exit 2): more than [`MAX_POINTS`] settings.
fn grid(
    scheds: &[Option<String>],
    axes: &[IntAxis],
    n_sched: usize,
    fixed_sched: Option<&str>,
    policy: &Policy,
) -> Result<(Vec<Setting>, Vec<Vec<f64>>)> {
    let mut points = Vec::new();
    let mut coords = Vec::new();
    for (si, s) in scheds.iter().enumerate() {
        let judge = s.as_deref().or(fixed_sched);
        let active: Vec<&IntAxis> = axes.iter().filter(|a| exists(a, judge)).collect();
        let count = active
            .iter()
            .map(|a| a.values.len())
            .try_fold(1usize, |acc, n| acc.checked_mul(n))
            .unwrap_or(usize::MAX);
        if count.saturating_add(points.len()) > MAX_POINTS {
            return Err(Error::BadInput(format!(
                "policy '{}' spans more than {MAX_POINTS} settings; give its knobs \
                 narrower ranges or value lists",
                policy.name
            )));
        }
        let mut idx = vec![0usize; active.len()];
        loop {
            let mut set = Setting::new();
            let mut c = vec![0.0; n_sched + axes.len()];
            if let Some(name) = s {
                set.insert("scheduler".into(), KnobValue::Name(name.clone()));
                c[si] = 1.0;
            }
            for (ai, a) in axes.iter().enumerate() {
                c[n_sched + ai] = 0.5;
                if let Some(pi) = active.iter().position(|x| x.name == a.name) {
                    let v = a.values[idx[pi]];
                    set.insert(a.name.clone(), KnobValue::Int(v));
                    c[n_sched + ai] = if a.hi > a.lo {
                        (pos(v) - a.lo) / (a.hi - a.lo)
                    } else {
                        0.5
                    };
                }
            }
            points.push(set);
            coords.push(c);
            // Odometer over the active axes.
            let mut carry = true;
            for (pi, a) in active.iter().enumerate() {
                if !carry {
                    break;
                }
                idx[pi] += 1;
                if idx[pi] == a.values.len() {
                    idx[pi] = 0;
                } else {
                    carry = false;
                }
            }
            if carry {
                break;
            }
        }
    }
    Ok((points, coords))
}

#[cfg(test)]
mod tests;
