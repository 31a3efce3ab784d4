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
pub const MAX_POINTS: usize = 20_000;

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
pub fn log2_grid(min: i64, max: i64, default: Option<i64>) -> Vec<i64> {
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
/// knobs out, [`crate::bench::real::space_of`]), so that a typo is refused before a scratch
/// device is built: every knob name is a known one, and a file policy's integer values and
/// bounds lie inside the widest safe domain the catalogue gives that name (the device's may
/// be narrower: [`Space::build`] judges that). Errors (exit 2): [`Error::BadFile`] naming the
/// file, the line and the field, as [`Space::build`] does.
pub fn check_without_device(policy: &Policy) -> Result<()> {
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
    /// known knob ([`catalogue::is_known`]); an unknown name that the device does not offer
    /// either is a typo.
    ///
    /// Errors (exit 2): an unknown knob name ([`Error::BadFile`] with the policy's file, the
    /// line of `[knobs.<name>]` and the field), no policy knob exists on the device
    /// ([`Error::BadFile`], field `knobs`), a policy value or bound outside a knob's safe
    /// domain ([`Error::BadFile`] naming the line and field, e.g. `knobs.fifo_batch.max`), or
    /// more than [`MAX_POINTS`] settings ([`Error::BadInput`]).
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
        let exists = |a: &IntAxis, s: Option<&str>| match (&a.schedulers, s) {
            (None, _) => true,
            (Some(list), Some(s)) => list.iter().any(|x| x == s),
            (Some(_), None) => true,
        };

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

        let mut points = Vec::new();
        let mut coords = Vec::new();
        for (si, s) in scheds.iter().enumerate() {
            let judge = s.clone().or(fixed_sched.clone());
            let active: Vec<&IntAxis> = axes
                .iter()
                .filter(|a| exists(a, judge.as_deref()))
                .collect();
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

    /// The index of `setting`, if it is on the grid.
    pub fn index_of(&self, setting: &Setting) -> Option<usize> {
        self.points.iter().position(|p| p == setting)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::policy;

    fn knob(name: &str, min: i64, max: i64, default: i64, scheds: Option<&[&str]>) -> SpaceKnob {
        SpaceKnob {
            name: name.into(),
            domain: Domain::Int { min, max },
            default: KnobValue::Int(default),
            schedulers: scheds.map(|s| s.iter().map(|x| x.to_string()).collect()),
        }
    }

    fn sched(default: &str, offered: &[&str]) -> SpaceKnob {
        SpaceKnob {
            name: "scheduler".into(),
            domain: Domain::Choice(offered.iter().map(|s| s.to_string()).collect()),
            default: KnobValue::Name(default.into()),
            schedulers: None,
        }
    }

    #[test]
    fn log2_grid_has_bounds_powers_and_default() {
        assert_eq!(
            log2_grid(1, 256, Some(32)),
            vec![1, 2, 4, 8, 16, 32, 64, 128, 256]
        );
        assert_eq!(log2_grid(0, 10, Some(3)), vec![0, 1, 2, 3, 4, 8, 10]);
        assert_eq!(log2_grid(16, 100, None), vec![16, 32, 64, 100]);
    }

    #[test]
    fn scheduler_children_only_under_their_scheduler() {
        let q = policy::builtin("desktop").unwrap().unwrap();
        let knobs = vec![
            sched("mq-deadline", &["none", "mq-deadline", "bfq", "kyber"]),
            knob("fifo_batch", 1, 256, 16, Some(&["mq-deadline", "deadline"])),
            knob("slice_idle", 0, 4294, 8, Some(&["bfq", "cfq"])),
        ];
        let s = Space::build(&knobs, &q, None).unwrap();
        // none + kyber: 1 each; mq-deadline: 9 fifo_batch values; bfq: slice_idle 0..16 grid.
        let slice = log2_grid(0, 16, Some(8)).len();
        assert_eq!(s.len(), 1 + 9 + slice + 1);
        assert!(s.skipped.contains(&"quantum".to_string()));
        for p in &s.points {
            let sch = p["scheduler"].as_name().unwrap();
            assert_eq!(p.contains_key("fifo_batch"), sch == "mq-deadline", "{p:?}");
            assert_eq!(p.contains_key("slice_idle"), sch == "bfq", "{p:?}");
        }
        // One group per scheduler, in grid order: none, mq-deadline ×9, bfq ×slice, kyber.
        let g = s.scheduler_groups();
        assert_eq!((g[0], g[1], g[9], g[10], g[s.len() - 1]), (0, 1, 1, 2, 3));
        let d = &s.points[s.default];
        assert_eq!(d["scheduler"], KnobValue::from("mq-deadline"));
        assert_eq!(d["fifo_batch"], KnobValue::Int(16));
        assert!(
            s.coords
                .iter()
                .all(|c| c.iter().all(|x| (0.0..=1.0).contains(x)))
        );
    }

    #[test]
    fn a_scheduler_value_the_device_lacks_is_dropped_and_said() {
        let p = parsed("[knobs.scheduler]\nvalues = [\"cfq\", \"bfq\"]\n[knobs.fifo_batch]\n");
        let knobs = vec![
            sched("none", &["none", "mq-deadline", "bfq"]),
            knob("fifo_batch", 1, 256, 16, Some(&["mq-deadline"])),
        ];
        let s = Space::build(&knobs, &p, None).unwrap();
        assert_eq!(
            s.dropped_values,
            vec![
                "scheduler value 'cfq' dropped: not offered here (offered: none, mq-deadline, \
                 bfq)"
                    .to_string()
            ]
        );
        // none (the default) and bfq.
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn a_scheduler_value_no_kernel_has_is_a_typo_unless_the_device_offers_it() {
        let p = parsed("[knobs.scheduler]\nvalues = [\"bfq\", \"kyberr\"]\n");
        let knobs = vec![sched("none", &["none", "mq-deadline", "bfq"])];
        match Space::build(&knobs, &p, None).unwrap_err() {
            Error::BadFile {
                line, field, msg, ..
            } => {
                assert_eq!((line, field.as_str()), (Some(7), "knobs.scheduler.values"));
                assert!(
                    msg.starts_with(
                        "unknown scheduler 'kyberr' (did you mean 'kyber'?): not an \
                         I/O scheduler of the kernel (none, mq-deadline, bfq, kyber, noop, \
                         deadline, cfq, anticipatory), nor one this device offers (none, \
                         mq-deadline, bfq)"
                    ),
                    "{msg}"
                );
            }
            e => panic!("{e:?}"),
        }
        // An out-of-tree scheduler the device offers is a value like any other: none (the
        // default), bfq and kyberr.
        let knobs = vec![sched("none", &["none", "bfq", "kyberr"])];
        assert_eq!(Space::build(&knobs, &p, None).unwrap().len(), 3);
    }

    #[test]
    fn host_managed_zoned_gets_only_mq_deadline() {
        let q = policy::builtin("quick").unwrap().unwrap();
        let knobs = vec![
            sched("mq-deadline", &["none", "mq-deadline", "bfq"]),
            knob("fifo_batch", 1, 256, 16, Some(&["mq-deadline"])),
        ];
        let s = Space::build(&knobs, &q, Some("host-managed")).unwrap();
        assert_eq!(s.len(), 9);
        assert!(
            s.points
                .iter()
                .all(|p| p["scheduler"].as_name() == Some("mq-deadline"))
        );
    }

    #[test]
    fn no_policy_knob_on_the_device_is_bad_input() {
        let q = policy::builtin("quick").unwrap().unwrap();
        let e = Space::build(&[knob("read_ahead_kb", 0, 9, 1, None)], &q, None).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            "policies/quick.toml: knobs: none of policy 'quick's knobs exists on this device: \
             fifo_batch, scheduler (it offers: read_ahead_kb)"
        );
    }

    fn parsed(knobs: &str) -> Policy {
        let text = format!(
            "loads = [\"no_load\", \"io_load\"]\nbudget = 12\n[objective]\n\
             minimize = \"ratio\"\nloads = [\"io_load\"]\n{knobs}"
        );
        policy::parse(&text, std::path::Path::new("dir/p.toml"), "p", "p").unwrap()
    }

    #[test]
    fn an_unknown_knob_name_is_an_error_with_file_line_and_field() {
        let p = parsed("[knobs.fifo_batch]\n[knobs.fifo_btach]\nmax = 64\n");
        let fb = [knob("fifo_batch", 1, 256, 32, None)];
        let e = Space::build(&fb, &p, None).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            "dir/p.toml:7: knobs.fifo_btach: unknown knob 'fifo_btach' (did you mean \
             'fifo_batch'?): not a knob sweetspot knows, nor one this device offers (fifo_batch)"
        );
        // Far from every name: no hint.
        let p = parsed("[knobs.fifo_batch]\n[knobs.zzz]\n");
        let e = Space::build(&fb, &p, None).unwrap_err().to_string();
        assert!(
            e.starts_with("dir/p.toml:7: knobs.zzz: unknown knob 'zzz': "),
            "{e}"
        );
    }

    /// A built-in policy is written for every device: on a narrower domain (a surface's
    /// fifo_batch 4–16) its bounds are clamped, not refused; a file's the same bounds are
    /// refused (above), and a built-in's that miss the domain entirely too.
    #[test]
    fn a_builtin_policys_bounds_are_clamped_to_a_narrower_domain() {
        let text = "loads = [\"no_load\", \"io_load\"]\nbudget = 12\n[objective]\n\
                    minimize = \"ratio\"\nloads = [\"io_load\"]\n[knobs.fifo_batch]\n";
        let path = std::path::Path::new("policies/b.toml");
        let builtin =
            |knobs: &str| policy::parse(&format!("{text}{knobs}"), path, "b", "builtin:b").unwrap();
        let fb = [knob("fifo_batch", 4, 16, 16, None)];
        let s = Space::build(&fb, &builtin("min = 1\nmax = 256\n"), None).unwrap();
        let grid: Vec<_> = s.points.iter().map(|p| p["fifo_batch"].clone()).collect();
        assert_eq!(grid, [4, 8, 16].map(KnobValue::Int));
        let s = Space::build(&fb, &builtin("values = [1, 8, 256]\n"), None).unwrap();
        let grid: Vec<_> = s.points.iter().map(|p| p["fifo_batch"].clone()).collect();
        assert_eq!(grid, [8, 16].map(KnobValue::Int));
        let e = Space::build(&fb, &builtin("min = 64\nmax = 256\n"), None).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string()
                .starts_with("policies/b.toml:7: knobs.fifo_batch.min: 64 is outside"),
            "{e}"
        );
        let file = parsed("[knobs.fifo_batch]\nmin = 1\nmax = 256\n");
        assert!(Space::build(&fb, &file, None).is_err());
    }

    #[test]
    fn policy_bounds_outside_the_safe_domain_name_file_line_and_field() {
        // The catalogue's fifo_batch domain (a real device), as space_of gives it.
        let fb = [knob("fifo_batch", 1, 1024, 16, None)];
        let p = parsed("[knobs.fifo_batch]\nmin = 1\nmax = 99999999\n");
        let e = Space::build(&fb, &p, None).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            "dir/p.toml:8: knobs.fifo_batch.max: 99999999 is outside the safe domain of \
             fifo_batch here, 1–1024"
        );
        let p = parsed("[knobs.fifo_batch]\nmin = 0\n");
        let e = Space::build(&fb, &p, None).unwrap_err().to_string();
        assert!(
            e.starts_with("dir/p.toml:7: knobs.fifo_batch.min: 0 is outside"),
            "{e}"
        );
        let p = parsed("[knobs.fifo_batch]\nvalues = [4, \"bfq\"]\n");
        let e = Space::build(&fb, &p, None).unwrap_err().to_string();
        assert_eq!(
            e,
            "dir/p.toml:7: knobs.fifo_batch.values: 'bfq' is not an integer (fifo_batch is an \
             integer knob)"
        );
        // Inside the domain: fine, and the default joins the grid even outside the range.
        let p = parsed("[knobs.fifo_batch]\nmin = 32\nmax = 1024\n");
        let s = Space::build(&fb, &p, None).unwrap();
        assert_eq!(s.points[s.default]["fifo_batch"], KnobValue::Int(16));
        assert_eq!(s.len(), 7);
    }

    #[test]
    fn a_known_knob_the_device_lacks_is_skipped_and_an_offered_unknown_one_used() {
        let p = parsed("[knobs.fifo_batch]\n[knobs.quantum]\n[knobs.new_iosched_knob]\n");
        let knobs = [
            knob("fifo_batch", 1, 256, 32, None),
            // An iosched file the catalogue does not know yet is still offered (discover.rs).
            knob("new_iosched_knob", 0, 4, 1, None),
        ];
        let s = Space::build(&knobs, &p, None).unwrap();
        assert_eq!(s.skipped, vec!["quantum".to_string()]);
        assert_eq!(s.knobs, vec!["fifo_batch", "new_iosched_knob"]);
        let p = parsed("[knobs.quantum]\n[knobs.slice_idle]\n");
        let e = Space::build(&knobs, &p, None).unwrap_err().to_string();
        assert_eq!(
            e,
            "dir/p.toml: knobs: none of policy 'p's knobs exists on this device: quantum, \
             slice_idle (it offers: fifo_batch, new_iosched_knob)"
        );
    }
}
