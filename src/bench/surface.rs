//! Surface files: a simulated device's response, in TOML (format in docs/DESIGN.md, examples in
//! `data/surfaces/`).
//!
//! ```toml
//! [device]
//! name = "..."                 # shown in reports; other keys here are informational
//! scheduler = "deadline"
//!
//! [knobs.fifo_batch]           # one table per knob sweetspot knows; integer knobs; all three
//!                              # keys required
//! default = 32
//! min = 1                      # values outside [min, max] are rejected like EINVAL
//! max = 256
//! schedulers = ["mq-deadline"] # optional: the knob exists only under these schedulers
//!
//! [knobs.scheduler]            # optional, the one named-value (categorical) knob
//! default = "bfq"
//! values = ["none", "mq-deadline", "bfq", "kyber"]
//!
//! [noise]
//! relative_sigma = 0.04        # per-run multiplicative gaussian noise, in [0, 1) (default 0)
//!
//! [[point]]                    # measured points; several knobs = a full grid
//! knobs = { fifo_batch = 32 }  # a value for every knob that exists under the point's
//!                              # scheduler (`scheduler = "kyber"` when there is one)
//! relative_sigma = 0.12        # optional per-point override, in [0, 1)
//! no_load = { time_s = 67.7 }  # per load: time_s (s) required; cpu_pct (%), loads (work
//! io_load = { time_s = 239.5, cpu_pct = 32 }   # units), lcpu_pct (%) optional
//! ```
//!
//! Rules checked here, each failing with [`Error::BadFile`] naming the file, the 1-based line
//! and the field (`point[3].io_load.time_s`, where `point[N]` counts `[[point]]` blocks from 1):
//! TOML syntax; unknown keys (outside `[device]`); a load that is not one of contest's names;
//! a missing `time_s` or one that is not a finite number > 0 (0 and negative alike), or one
//! outside `MIN_TIME_S`–`MAX_TIME_S`; an optional metric below 0 or above `MAX_METRIC`
//! (bounds that keep the arithmetic on them finite: `time_s = 1e308` showed `Time inf s`); a
//! noise parameter outside its range (`surface/noise.rs`); a `[knobs.<name>]` that is not a
//! knob sweetspot knows (`crate::knob::catalogue::is_known`: a typo, with the closest known
//! name), or whose `min` or `max` lies outside the catalogue's safe bounds for it
//! (`crate::knob::catalogue::bounds`: a simulated device offers no value a real one refuses;
//! `surface/knobs.rs`); a knob value outside `[min, max]` or a knob that is not declared;
//! points that do not form a full grid (every combination of the listed values of every knob
//! exactly once); every point listing the same loads, and each optional metric of a
//! load given at every point or at none (so each metric can be interpolated everywhere).
//! The file is read by serde into `surface/raw.rs`'s structs, which keep every value's span;
//! a file with several faults names one of them.
//!
//! With a `[knobs.scheduler]`, each of its values is its own grid (`Grid`, built in
//! `surface/grid.rs`): every point names a scheduler, gives exactly the knobs that exist under it
//! (those without `schedulers`, and those whose `schedulers` list it), and the points of one
//! scheduler form a full grid over those knobs. A child knob is interpolated only within its
//! scheduler's grid, as the kernel keeps `iosched/` per scheduler.
//!
//! A surface drives the simulator only (`--sim`): it writes no knob and runs no command, so it
//! is read without [`crate::trust`]'s owner and mode check, from wherever it is named (and so
//! is a file it `extends`).

use crate::bench::Load;
use crate::tomlfile::TomlFile;
use crate::{Error, Result};
use raw::{Entries, RawMetrics, RawPoint, Val};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::{Spanned, Value};

mod grid;
mod knobs;
mod noise;
mod raw;
mod startup;
pub(crate) use grid::Grid;
pub(crate) use noise::Drift;

/// One knob of a surface: integer values in `[min, max]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SurfaceKnob {
    /// Knob name, e.g. `fifo_batch`.
    pub name: String,
    /// The value before tuning.
    pub default: i64,
    /// Smallest accepted value.
    pub min: i64,
    /// Largest accepted value.
    pub max: i64,
    /// The schedulers under which the knob exists (`schedulers = [...]`); `None`: under all.
    pub schedulers: Option<Vec<String>>,
}

impl SurfaceKnob {
    /// True when the knob exists under `scheduler` (`None`: the surface has no scheduler knob).
    pub(crate) fn exists_under(&self, scheduler: Option<&str>) -> bool {
        match (&self.schedulers, scheduler) {
            (Some(list), Some(s)) => list.iter().any(|x| x == s),
            _ => true,
        }
    }
}

/// The categorical `[knobs.scheduler]` of a surface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedulerKnob {
    /// The scheduler before tuning.
    pub default: String,
    /// Every scheduler the device offers, in file order.
    pub values: Vec<String>,
}

/// The metrics of one load at one point, as listed in the file.
#[derive(Clone, Debug, PartialEq)]
pub struct PointMetrics {
    /// The job's wall time, s (> 0).
    pub time_s: f64,
    /// The job's CPU%, if listed.
    pub cpu_pct: Option<f64>,
    /// The load's completed work units, if listed.
    pub loads: Option<f64>,
    /// The load's own CPU%, if listed.
    pub lcpu_pct: Option<f64>,
}

/// One `[[point]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// 1-based line of the point in the file.
    pub line: usize,
    /// The point's scheduler, when the surface has a scheduler knob.
    pub scheduler: Option<String>,
    /// A value for every integer knob that exists under the point's scheduler.
    pub knobs: BTreeMap<String, i64>,
    /// The point's noise: its own `relative_sigma`, else `[noise] relative_sigma`.
    pub relative_sigma: f64,
    /// Metrics per load.
    pub loads: BTreeMap<Load, PointMetrics>,
    /// The start-up judge's Time, s, per background (`startup = {...}`); empty when the
    /// surface has no start-up figures.
    pub startup: BTreeMap<Load, f64>,
}

/// One grid axis: a knob and its listed values, ascending.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// Knob name.
    pub name: String,
    /// The distinct values the points list for this knob, ascending.
    pub values: Vec<i64>,
    /// True when every listed value is > 0: interpolate in log2 of the value.
    pub log2: bool,
}

/// A parsed, validated surface file.
#[derive(Clone, Debug, PartialEq)]
pub struct Surface {
    /// The file it was read from.
    pub path: PathBuf,
    /// `[device] name`, else the file stem.
    pub name: String,
    /// `[device] scheduler`, informational.
    pub scheduler: Option<String>,
    /// The categorical scheduler knob, if declared.
    pub choice: Option<SchedulerKnob>,
    /// Declared integer knobs, by name.
    pub knobs: Vec<SurfaceKnob>,
    /// The points, in file order.
    pub points: Vec<Point>,
    /// One grid per scheduler value (in [`SchedulerKnob::values`] order), or a single grid
    /// with `scheduler: None` when the surface has no scheduler knob.
    pub grids: Vec<Grid>,
    /// `[noise]` drift, if any (`surface/noise.rs`).
    pub drift: Option<Drift>,
}

impl Surface {
    /// The loads this surface describes (every point lists the same ones).
    pub fn loads(&self) -> Vec<Load> {
        self.points
            .first()
            .map(|p| p.loads.keys().copied().collect())
            .unwrap_or_default()
    }

    /// The file stem, e.g. `seed-2.5.39-mm1-fifo_batch`.
    pub(crate) fn stem(&self) -> String {
        self.path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "surface".into())
    }

    /// True when a point lists the default setting itself (every knob at its default, under
    /// the default scheduler): the reference a tune compares with is then measured, not
    /// interpolated between its neighbours.
    pub(crate) fn lists_default(&self) -> bool {
        let sched = self.choice.as_ref().map(|c| c.default.as_str());
        self.points.iter().any(|p| {
            p.scheduler.as_deref() == sched
                && p.knobs.iter().all(|(name, v)| {
                    self.knobs
                        .iter()
                        .find(|k| &k.name == name)
                        .is_some_and(|k| k.default == *v)
                })
        })
    }

    /// The grid of `scheduler` (`None` for a surface without a scheduler knob).
    pub(crate) fn grid(&self, scheduler: Option<&str>) -> Option<&Grid> {
        self.grids
            .iter()
            .find(|g| g.scheduler.as_deref() == scheduler)
    }

    /// Reads and validates a surface file. Errors: [`Error::BadInput`] (exit 2) when it cannot be read,
    /// [`Error::BadFile`] (exit 2) for the rules in the module docs.
    pub fn load(path: &Path) -> Result<Surface> {
        let src = std::fs::read_to_string(path)
            .map_err(|e| Error::BadInput(format!("cannot read surface {}: {e}", path.display())))?;
        Surface::parse(path, &src)
    }

    /// Parses and validates surface text; `path` is used for messages and the stem.
    pub fn parse(path: &Path, src: &str) -> Result<Surface> {
        let f = TomlFile::new(path, src).counting_from(1);
        Parser { f }.surface()
    }
}

/// Shortest `time_s`, s: a millisecond. Below it a Ratio (a time ÷ the mean no_load time)
/// could overflow to infinity.
pub(crate) const MIN_TIME_S: f64 = 1e-3;

/// Longest `time_s`, s: 10⁶ s is 11.6 days, and no contest run takes that long. Above it the
/// arithmetic on times (means, variances, Ratios) could overflow to infinity.
pub(crate) const MAX_TIME_S: f64 = 1e6;

/// Largest optional metric (`cpu_pct`, `loads`, `lcpu_pct`): far above any run's, and far
/// below where a variance (a square) overflows.
pub(crate) const MAX_METRIC: f64 = 1e12;

/// `x` as a message shows it: `0.04`, `-5`, but `1e300` rather than its 301 digits.
fn shown(x: f64) -> String {
    if x.is_finite() && x != 0.0 && !(1e-4..1e6).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

struct Parser<'a> {
    f: TomlFile<'a>,
}

impl Parser<'_> {
    fn string(&self, v: &Val, field: &str) -> Result<String> {
        v.get_ref()
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| self.f.err(&v.span(), field, "expected a string"))
    }

    fn int(&self, v: &Val, field: &str) -> Result<i64> {
        match v.get_ref() {
            Value::Integer(i) => Ok(*i),
            other => Err(self.f.err(
                &v.span(),
                field,
                format!("expected an integer, found {}", other.type_str()),
            )),
        }
    }

    /// A number ≥ 0 (`cpu_pct`, `loads`, `lcpu_pct`, `drift_rho`).
    fn num(&self, v: &Val, field: &str) -> Result<f64> {
        let x = self.number(v, field)?;
        if !x.is_finite() || x < 0.0 {
            return Err(self.f.err(
                &v.span(),
                field,
                format!("must be a finite number ≥ 0, not {}", shown(x)),
            ));
        }
        if x > MAX_METRIC {
            return Err(self.f.err(
                &v.span(),
                field,
                format!("must be at most {}, not {}", shown(MAX_METRIC), shown(x)),
            ));
        }
        Ok(x)
    }

    /// A number > 0 (`time_s`: a job that took no time has no Ratio). One rule and one
    /// message for 0 and for negative values.
    fn positive(&self, v: &Val, field: &str) -> Result<f64> {
        let x = self.number(v, field)?;
        if !x.is_finite() || x <= 0.0 {
            return Err(self.f.err(
                &v.span(),
                field,
                format!("must be a finite number > 0, not {}", shown(x)),
            ));
        }
        if !(MIN_TIME_S..=MAX_TIME_S).contains(&x) {
            return Err(self.f.err(
                &v.span(),
                field,
                format!(
                    "must be {MIN_TIME_S}–{MAX_TIME_S} s (no contest run is shorter than 1 ms \
                     or longer than 11.6 days), not {}",
                    shown(x)
                ),
            ));
        }
        Ok(x)
    }

    /// Any TOML integer or float, as f64.
    fn number(&self, v: &Val, field: &str) -> Result<f64> {
        match v.get_ref() {
            Value::Integer(i) => Ok(*i as f64),
            Value::Float(x) => Ok(*x),
            other => Err(self.f.err(
                &v.span(),
                field,
                format!("expected a number, found {}", other.type_str()),
            )),
        }
    }

    fn surface(&self) -> Result<Surface> {
        let raw = raw::parse(&self.f, |v, field| self.infinite(v, field))?;
        let whole = 0..0;
        let (mut name, mut scheduler) = (self.stem(), None);
        if let Some(d) = &raw.device {
            if let Some(v) = &d.get_ref().name {
                name = self.string(v, "device.name")?;
            }
            if let Some(v) = &d.get_ref().scheduler {
                scheduler = Some(self.string(v, "device.scheduler")?);
            }
        }
        if let Some(base) = &raw.extends {
            return self.variant(&raw, base, name);
        }
        let (knobs, choice) = self.knobs(raw.knobs.as_ref())?;
        let (sigma, drift) = self.noise(raw.noise.as_ref(), false)?;
        let pts = raw.point.as_ref().map_or(&[][..], |p| p.get_ref());
        if pts.is_empty() {
            return Err(self.f.err(&whole, "point", "no [[point]] given"));
        }
        let points = pts
            .iter()
            .enumerate()
            .map(|(i, p)| self.point(i + 1, p, &knobs, choice.as_ref(), sigma))
            .collect::<Result<Vec<_>>>()?;
        let spans: Vec<Range<usize>> = pts.iter().map(|p| p.span()).collect();
        self.check_loads(&spans, &points)?;
        self.check_startup(&spans, &points)?;
        let grids = self.grids(&spans, &points, &knobs, choice.as_ref())?;
        Ok(Surface {
            path: self.f.path().to_path_buf(),
            name,
            scheduler,
            choice,
            knobs,
            points,
            grids,
            drift,
        })
    }

    /// The error a field's rule gives an infinite float (`1e400`, which toml does not read).
    fn infinite(&self, v: &Val, field: &str) -> Error {
        let r = match field.rsplit('.').next().unwrap_or(field) {
            "time_s" => self.positive(v, field),
            "relative_sigma" => self.relative_sigma(v, field),
            "drift_sigma" => self.drift_sigma(v),
            "cpu_pct" | "loads" | "lcpu_pct" | "drift_rho" => self.num(v, field),
            _ if field.starts_with("device.") => self.string(v, field).map(|_| 0.0),
            _ => self.int(v, field).map(|i| i as f64),
        };
        r.err()
            .unwrap_or_else(|| self.f.err(&v.span(), field, "bad number"))
    }

    fn stem(&self) -> String {
        self.f
            .path()
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "surface".into())
    }

    fn point(
        &self,
        idx: usize,
        p: &Spanned<RawPoint>,
        knobs: &[SurfaceKnob],
        choice: Option<&SchedulerKnob>,
        sigma: f64,
    ) -> Result<Point> {
        let pf = format!("point[{idx}]");
        let r = p.get_ref();
        let mut point = Point {
            line: self.f.line(&p.span()),
            scheduler: None,
            knobs: BTreeMap::new(),
            relative_sigma: sigma,
            loads: BTreeMap::new(),
            startup: BTreeMap::new(),
        };
        // Names first: a key that is not a load's was not read at all.
        if let Some((k, _)) = r.loads.iter().find(|(_, v)| v.is_none()) {
            let field = format!("{pf}.{}", k.get_ref());
            let e = k.get_ref().parse::<Load>().err().unwrap_or_default();
            return Err(self.f.err(&k.span(), field, e));
        }
        if let Some(v) = &r.knobs {
            self.point_knobs(&mut point, v, &format!("{pf}.knobs"), knobs, choice)?;
        }
        if let Some(v) = &r.relative_sigma {
            point.relative_sigma = self.relative_sigma(v, &format!("{pf}.relative_sigma"))?;
        }
        if let Some(v) = &r.startup {
            point.startup = self.startup(v, &format!("{pf}.startup"))?;
        }
        for (k, v) in &r.loads {
            if let (Ok(load), Some(v)) = (k.get_ref().parse::<Load>(), v) {
                let field = format!("{pf}.{}", k.get_ref());
                point.loads.insert(load, self.metrics(v, &field)?);
            }
        }
        if r.knobs.is_none() && (!knobs.is_empty() || choice.is_some()) {
            return Err(self
                .f
                .err(&p.span(), format!("{pf}.knobs"), "missing (required)"));
        }
        if point.loads.is_empty() {
            return Err(self.f.err(
                &p.span(),
                pf,
                "no load given (e.g. no_load = { time_s = 60.0 })",
            ));
        }
        Ok(point)
    }

    /// A point's `knobs = { ... }`: the scheduler (when declared) and every integer knob that
    /// exists under it, each within its bounds.
    fn point_knobs(
        &self,
        point: &mut Point,
        v: &Spanned<Entries<Value>>,
        field: &str,
        knobs: &[SurfaceKnob],
        choice: Option<&SchedulerKnob>,
    ) -> Result<()> {
        let mut declared: Vec<&str> = knobs.iter().map(|s| s.name.as_str()).collect();
        if choice.is_some() {
            declared.insert(0, "scheduler");
        }
        for (kk, kv) in &v.get_ref().0 {
            let kf = format!("{field}.{}", kk.get_ref());
            if let (Some(c), "scheduler") = (choice, kk.get_ref().as_str()) {
                let name = kv
                    .get_ref()
                    .as_str()
                    .ok_or_else(|| self.f.err(&kv.span(), &kf, "expected a scheduler name"))?;
                if !c.values.iter().any(|x| x == name) {
                    return Err(self.f.err(
                        &kv.span(),
                        kf,
                        format!(
                            "'{name}' is not one of knobs.scheduler.values ({})",
                            c.values.join(", ")
                        ),
                    ));
                }
                point.scheduler = Some(name.to_string());
                continue;
            }
            let Some(spec) = knobs.iter().find(|s| &s.name == kk.get_ref()) else {
                return Err(self.f.err(
                    &kk.span(),
                    kf,
                    format!(
                        "knob '{}' is not declared (declared: {}); add a [knobs.{}] table",
                        kk.get_ref(),
                        if declared.is_empty() {
                            "none".into()
                        } else {
                            declared.join(", ")
                        },
                        kk.get_ref()
                    ),
                ));
            };
            let x = self.int(kv, &kf)?;
            if !(spec.min..=spec.max).contains(&x) {
                return Err(self.f.err(
                    &kv.span(),
                    kf,
                    format!("{x} is outside [{}, {}]", spec.min, spec.max),
                ));
            }
            point.knobs.insert(spec.name.clone(), x);
        }
        if choice.is_some() && point.scheduler.is_none() {
            return Err(self.f.err(
                &v.span(),
                field,
                "no value for knob 'scheduler' (every point needs one)",
            ));
        }
        let sched = point.scheduler.as_deref();
        for k in knobs {
            let here = k.exists_under(sched);
            let given = point.knobs.contains_key(&k.name);
            if here && !given {
                let under = sched.map(|s| format!(" under {s}")).unwrap_or_default();
                return Err(self.f.err(
                    &v.span(),
                    field,
                    format!(
                        "no value for knob '{}' (every point needs every knob that exists{under})",
                        k.name
                    ),
                ));
            }
            if !here && given {
                return Err(self.f.err(
                    &v.span(),
                    format!("{field}.{}", k.name),
                    format!(
                        "knob '{}' does not exist under scheduler '{}' (schedulers = [{}])",
                        k.name,
                        sched.unwrap_or_default(),
                        k.schedulers.as_deref().unwrap_or_default().join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    fn metrics(&self, v: &Spanned<RawMetrics>, field: &str) -> Result<PointMetrics> {
        let t = v.get_ref();
        let opt = |k: &str, x: &Option<Val>| -> Result<Option<f64>> {
            x.as_ref()
                .map(|x| self.num(x, &format!("{field}.{k}")))
                .transpose()
        };
        let time_field = format!("{field}.time_s");
        let time_s = match &t.time_s {
            Some(x) => self.positive(x, &time_field)?,
            None => return Err(self.f.err(&v.span(), time_field, "missing (required)")),
        };
        Ok(PointMetrics {
            time_s,
            cpu_pct: opt("cpu_pct", &t.cpu_pct)?,
            loads: opt("loads", &t.loads)?,
            lcpu_pct: opt("lcpu_pct", &t.lcpu_pct)?,
        })
    }

    /// Every point lists the same loads, and each optional metric at all points or none.
    /// `pts`: the points' spans.
    fn check_loads(&self, pts: &[Range<usize>], points: &[Point]) -> Result<()> {
        let first = &points[0];
        for (i, p) in points.iter().enumerate().skip(1) {
            let here: BTreeSet<_> = p.loads.keys().collect();
            let there: BTreeSet<_> = first.loads.keys().collect();
            if let Some(l) = there.symmetric_difference(&here).next() {
                return Err(self.f.err(
                    &pts[i],
                    format!("point[{}].{l}", i + 1),
                    format!(
                        "every point must list the same loads: point[1] (line {}) {}",
                        first.line,
                        if there.contains(l) {
                            "has it, this one does not"
                        } else {
                            "does not"
                        }
                    ),
                ));
            }
            for (load, m) in &p.loads {
                let m0 = &first.loads[load];
                let pairs = [
                    ("cpu_pct", m.cpu_pct.is_some(), m0.cpu_pct.is_some()),
                    ("loads", m.loads.is_some(), m0.loads.is_some()),
                    ("lcpu_pct", m.lcpu_pct.is_some(), m0.lcpu_pct.is_some()),
                ];
                if let Some((k, _, _)) = pairs.iter().find(|(_, a, b)| a != b) {
                    return Err(self.f.err(
                        &pts[i],
                        format!("point[{}].{load}.{k}", i + 1),
                        "an optional metric must be given at every point or at none",
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
