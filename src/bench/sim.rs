//! [`SimDevice`]: a simulated device driven by a surface file ([`Surface`]) and seeded noise.
//!
//! **Interpolation** (docs/DESIGN.md "Simulated devices"): each metric is interpolated
//! piecewise-linearly between the listed points of each knob, in log2 space of the knob value
//! when every listed value of that knob is > 0 and linearly otherwise; several knobs combine
//! multilinearly over the grid. Outside the listed range the edge value is held. The noise
//! level (`relative_sigma`) is interpolated the same way. With a `scheduler` knob, each
//! scheduler has its own grid (`crate::bench::surface::Grid`) and its child knobs are
//! interpolated only within it; switching the scheduler resets the child knobs to their
//! defaults, as the kernel's fresh `iosched/` does (DESIGN.md, kernel facts).
//!
//! **Noise**: each metric of a run is multiplied by `1 + σ·z`, z ~ N(0, 1) drawn from a
//! `rand::rngs::ChaCha12Rng` seeded with `--seed` (named rather than `StdRng`, whose algorithm a
//! `rand` upgrade may change; today's `StdRng` is this generator, so the streams are the
//! same as before); the factor is clamped at 0.01 so a
//! metric stays positive. Every run draws exactly four normals (time, CPU%, Loads, LCPU%),
//! used or not, so the stream, and thus the output for a seed, does not depend on which
//! metrics a surface lists. The same seed and the same sequence of calls give identical runs.
//!
//! **Drift** (`[noise] drift_sigma`, `drift_rho`; `crate::bench::surface::Drift`): an AR(1)
//! walk, one step per run after the four normals, so a surface without drift draws exactly
//! what it did before. A loaded run's Time is multiplied by `e^walk` and its Loads divided by
//! it; no_load is steady.
//!
//! **Metrics a surface does not list**:
//! - `cpu_pct`: the job is modelled as doing the same CPU work under every load (a compile
//!   compiles the same files). Its CPU seconds are `no_load time × no_load cpu_pct / 100` at
//!   the same setting, with `no_load cpu_pct` taken as 100 (CPU-bound when alone) if not listed
//!   either; then `CPU% = 100 × CPU seconds / Time` of the run. A surface without `no_load`
//!   gives 100 for unlisted CPU%. This is a model, stated here, not a measurement.
//! - `loads`, `lcpu_pct`: `None` (unknown), shown as `-` in the table and `null` in JSON.
//!   [`Testbed::lacks`] says so, and a tune whose policy needs one (`maximize = "loads"`, a
//!   guard rail on it) is refused before its first trial.
//!
//! **Ratio** is not produced here: like a real device, it is derived from the simulated Time
//! of a load and of no_load at the same setting (see `bench::summary`).
//!
//! **Rejected writes**: [`Testbed::apply`] refuses a value outside `[min, max]` (or a name
//! for an integer knob, or a scheduler the surface does not offer) the way the kernel refuses
//! it, with [`Error::KnobWrite`] carrying EINVAL (exit 1), and a child knob that does not
//! exist under the scheduler being set with ENOENT (no such `iosched/` file); it changes
//! nothing. A knob the surface does not declare is bad input
//! ([`Error::BadInput`], exit 2).

use crate::bench::surface::{Axis, Grid, Point, Surface};
use crate::bench::{Load, Run, SpaceKnob, TargetInfo, Testbed};
use crate::knob::{Domain, KnobValue, Setting};
use crate::{Error, Result};
use rand::SeedableRng;
use rand::rngs::ChaCha12Rng;
use rand_distr::{Distribution, StandardNormal};
use std::collections::BTreeMap;
use std::path::Path;

/// Environment variable: milliseconds each simulated load run takes (it sleeps that long
/// before its figures are drawn; replayed runs do not). A testing aid only: a process test
/// signals a `--sim` tune in the middle of its runs. Read when the device is made.
pub const RUN_MS_ENV: &str = "SWEETSPOT_SIM_RUN_MS";

/// Noise-free metrics of one load at one setting, as the surface implies them.
#[derive(Clone, Debug, PartialEq)]
pub struct Metrics {
    /// The job's wall time, s.
    pub time_s: f64,
    /// The job's CPU%, listed or modelled (see the module docs).
    pub cpu_pct: f64,
    /// The load's work units, when the surface lists them.
    pub loads: Option<f64>,
    /// The load's own CPU%, when the surface lists it.
    pub lcpu_pct: Option<f64>,
}

/// A simulated device: a [`Surface`], the current setting, and a seeded RNG.
#[derive(Debug)]
pub struct SimDevice {
    surface: Surface,
    /// The scheduler in force (`None` without a scheduler knob).
    sched: Option<String>,
    /// Every integer knob's value (those absent under `sched` keep theirs, unused).
    current: BTreeMap<String, i64>,
    rng: ChaCha12Rng,
    /// The drift walk's current value, ln units (0 without drift).
    walk: f64,
    seed: u64,
    /// Load runs made so far.
    runs: usize,
    /// Stop, as Ctrl-C would, when this many runs are made ([`SimDevice::stop_after`]).
    stop_after: Option<usize>,
    /// How long each run takes ([`RUN_MS_ENV`]); `None`: no time at all.
    run_time: Option<std::time::Duration>,
}

impl SimDevice {
    /// Opens a surface file; the device starts at the surface's defaults.
    /// Errors: those of [`Surface::load`] (exit 2 for a bad file).
    pub fn open(path: &Path, seed: u64) -> Result<SimDevice> {
        let surface = Surface::load(path)?;
        if !surface.lists_default() {
            tracing::warn!(
                "{}: no point lists the default setting, so the default's figures (the \
                 reference of every comparison) are interpolated between its neighbours",
                path.display()
            );
        }
        Ok(SimDevice::new(surface, seed))
    }

    /// A device from an already parsed surface.
    pub fn new(surface: Surface, seed: u64) -> SimDevice {
        let mut d = SimDevice::at_rest(surface, seed);
        // A drifting device starts anywhere on its walk (stationary), not at the listed values.
        if let Some(dr) = d.surface.drift {
            let z: f64 = StandardNormal.sample(&mut d.rng);
            d.walk = dr.sigma * z;
        }
        d
    }

    fn at_rest(surface: Surface, seed: u64) -> SimDevice {
        let current = surface
            .knobs
            .iter()
            .map(|k| (k.name.clone(), k.default))
            .collect();
        SimDevice {
            sched: surface.choice.as_ref().map(|c| c.default.clone()),
            surface,
            current,
            rng: ChaCha12Rng::seed_from_u64(seed),
            walk: 0.0,
            seed,
            runs: 0,
            stop_after: None,
            run_time: std::env::var(RUN_MS_ENV)
                .ok()
                .and_then(|v| v.parse().ok())
                .map(std::time::Duration::from_millis),
        }
    }

    /// The same device, stopped as by Ctrl-C once it has made `runs` load runs: the next
    /// [`Testbed::run`] fails with [`Error::Interrupted`] (for tests of interrupted tunes).
    pub fn stop_after(mut self, runs: usize) -> SimDevice {
        self.stop_after = Some(runs);
        self
    }

    /// Load runs made so far.
    #[cfg(test)]
    pub(crate) fn runs_made(&self) -> usize {
        self.runs
    }

    /// The surface behind this device.
    pub fn surface(&self) -> &Surface {
        &self.surface
    }

    /// The setting in force now: the scheduler (if any) and every knob that exists under it.
    #[cfg(test)]
    pub(crate) fn current(&self) -> Setting {
        let mut s: Setting = self
            .surface
            .knobs
            .iter()
            .filter(|k| k.exists_under(self.sched.as_deref()))
            .map(|k| (k.name.clone(), KnobValue::Int(self.current[&k.name])))
            .collect();
        if let Some(name) = &self.sched {
            s.insert("scheduler".into(), KnobValue::Name(name.clone()));
        }
        s
    }

    /// The true (noise-free) metrics of `load` at `setting`; knobs the setting omits take the
    /// surface's defaults. Does not touch the RNG or the current setting. `None` when the
    /// surface has no such load, or the setting names an undeclared knob or a non-integer
    /// value, or a scheduler the surface does not offer. Values outside `[min, max]` are
    /// evaluated (edge values held), not rejected; knobs that do not exist under the
    /// setting's scheduler are ignored.
    pub fn expected(&self, setting: &Setting, load: Load) -> Option<Metrics> {
        let (sched, x) = self.coordinates(setting)?;
        self.metrics_at(sched.as_deref(), &x, load)
    }

    /// The true (noise-free) start-up Time, s, under `load` at `setting` (the surface's
    /// `startup` figures, interpolated as [`SimDevice::expected`] does); `None` when the
    /// surface has none under `load`, or as for [`SimDevice::expected`].
    pub fn expected_startup(&self, setting: &Setting, load: Load) -> Option<f64> {
        let (sched, x) = self.coordinates(setting)?;
        self.startup_at(sched.as_deref(), &x, load)
    }

    /// The start-up Time under `load` at the scheduler and knob values given.
    fn startup_at(
        &self,
        sched: Option<&str>,
        x: &BTreeMap<String, i64>,
        load: Load,
    ) -> Option<f64> {
        let s = &self.surface;
        if !s.points.first()?.startup.contains_key(&load) {
            return None;
        }
        let g = s.grid(sched)?;
        let xs: Vec<f64> = g.axes.iter().map(|a| x[&a.name] as f64).collect();
        Some(interpolate(s, g, &xs, |p| p.startup[&load]))
    }

    /// `setting` as the scheduler and every integer knob's value, the surface's defaults
    /// filling what it leaves out; `None` for a knob the surface does not have.
    fn coordinates(&self, setting: &Setting) -> Option<(Option<String>, BTreeMap<String, i64>)> {
        let mut x = BTreeMap::new();
        for k in &self.surface.knobs {
            x.insert(k.name.clone(), k.default);
        }
        let mut sched = self.surface.choice.as_ref().map(|c| c.default.clone());
        for (k, v) in setting {
            if k == "scheduler" && sched.is_some() {
                sched = Some(v.as_name()?.to_string());
                continue;
            }
            let slot = x.get_mut(k)?;
            *slot = v.as_int()?;
        }
        Some((sched, x))
    }

    /// The true (noise-free) Ratio of `load` at `setting`: its Time ÷ no_load's Time.
    /// `None` as for [`SimDevice::expected`], or when the surface has no no_load.
    pub fn expected_ratio(&self, setting: &Setting, load: Load) -> Option<f64> {
        let t = self.expected(setting, load)?.time_s;
        let t0 = self.expected(setting, Load::NoLoad)?.time_s;
        Some(t / t0)
    }

    fn metrics_at(
        &self,
        sched: Option<&str>,
        x: &BTreeMap<String, i64>,
        load: Load,
    ) -> Option<Metrics> {
        let s = &self.surface;
        if !s.points.first()?.loads.contains_key(&load) {
            return None;
        }
        let g = s.grid(sched)?;
        let xs: Vec<f64> = g.axes.iter().map(|a| x[&a.name] as f64).collect();
        let metric = |l: Load, f: &dyn Fn(&crate::bench::surface::PointMetrics) -> Option<f64>| {
            let has = s.points[0].loads.get(&l).and_then(f).is_some();
            has.then(|| interpolate(s, g, &xs, |p| p.loads.get(&l).and_then(f).unwrap_or(0.0)))
        };
        let time_s = metric(load, &|m| Some(m.time_s))?;
        let cpu_pct = match metric(load, &|m| m.cpu_pct) {
            Some(c) => c,
            None => 100.0 * self.job_cpu_s(g, &xs).unwrap_or(time_s) / time_s,
        };
        Some(Metrics {
            time_s,
            cpu_pct,
            loads: metric(load, &|m| m.loads),
            lcpu_pct: metric(load, &|m| m.lcpu_pct),
        })
    }

    /// The job's CPU seconds at grid coordinates `xs`: no_load Time × no_load CPU% (100 when
    /// unlisted). `None` without no_load.
    fn job_cpu_s(&self, g: &Grid, xs: &[f64]) -> Option<f64> {
        let s = &self.surface;
        let nl = s.points[0].loads.get(&Load::NoLoad)?;
        let t0 = interpolate(s, g, xs, |p| p.loads[&Load::NoLoad].time_s);
        let c0 = if nl.cpu_pct.is_some() {
            interpolate(s, g, xs, |p| {
                p.loads[&Load::NoLoad].cpu_pct.unwrap_or(100.0)
            })
        } else {
            100.0
        };
        Some(t0 * c0 / 100.0)
    }

    /// The noise level at the current setting (0 if the scheduler has no grid, which the
    /// parser rules out).
    fn sigma_at(&self) -> f64 {
        let Some(g) = self.surface.grid(self.sched.as_deref()) else {
            return 0.0;
        };
        let xs: Vec<f64> = g
            .axes
            .iter()
            .map(|a| self.current[&a.name] as f64)
            .collect();
        interpolate(&self.surface, g, &xs, |p| p.relative_sigma)
    }

    /// The drift: one step per run, whichever load; only loaded runs feel it (the factor on
    /// Time returned; 1 without drift).
    fn drift_step(&mut self, load: Load) -> f64 {
        let Some(dr) = self.surface.drift else {
            return 1.0;
        };
        let z: f64 = StandardNormal.sample(&mut self.rng);
        self.walk = dr.rho * self.walk + (1.0 - dr.rho * dr.rho).sqrt() * dr.sigma * z;
        if load == Load::NoLoad {
            1.0
        } else {
            self.walk.exp()
        }
    }

    fn factor(&mut self, sigma: f64) -> f64 {
        let z: f64 = StandardNormal.sample(&mut self.rng);
        (1.0 + sigma * z).max(0.01)
    }
}

/// Where `v` falls on an axis: (lower index, upper index, weight of the upper), in log2 space
/// for a log2 axis; outside the listed range the edge point gets all the weight.
fn bracket(a: &Axis, v: f64) -> (usize, usize, f64) {
    let n = a.values.len();
    if n == 1 || v <= a.values[0] as f64 {
        return (0, 0, 0.0);
    }
    if v >= a.values[n - 1] as f64 {
        return (n - 1, n - 1, 0.0);
    }
    let i = a.values.partition_point(|&u| (u as f64) <= v) - 1;
    let tr = |x: f64| if a.log2 { x.log2() } else { x };
    let (lo, hi) = (tr(a.values[i] as f64), tr(a.values[i + 1] as f64));
    (i, i + 1, (tr(v) - lo) / (hi - lo))
}

/// Multilinear interpolation of `f` over grid `g` of surface `s` at coordinates `xs` (one
/// per axis of `g`).
fn interpolate(s: &Surface, g: &Grid, xs: &[f64], f: impl Fn(&Point) -> f64) -> f64 {
    let br: Vec<(usize, usize, f64)> = g.axes.iter().zip(xs).map(|(a, &v)| bracket(a, v)).collect();
    let d = g.axes.len();
    let mut total = 0.0;
    for corner in 0..(1usize << d) {
        let (mut weight, mut flat) = (1.0, 0);
        for (k, a) in g.axes.iter().enumerate() {
            let (lo, hi, w) = br[k];
            let (idx, wk) = if corner >> k & 1 == 1 {
                (hi, w)
            } else {
                (lo, 1.0 - w)
            };
            weight *= wk;
            flat = flat * a.values.len() + idx;
        }
        if weight != 0.0 {
            total += weight * f(&s.points[g.vertex[flat]]);
        }
    }
    total
}

impl Testbed for SimDevice {
    fn replayed(&mut self, load: Load) {
        // The same draws as the run it stands for (its result is the stored one); not a run
        // made here, so neither `runs_made` nor `stop_after` counts it.
        let _ = self.draw(load);
    }

    fn target(&self) -> TargetInfo {
        let id = format!("sim:{}", self.surface.stem());
        TargetInfo {
            label: id.clone(),
            identity: id,
            kernel: "sim".into(),
        }
    }

    /// Like a real device: the scheduler (if declared) as a [`Domain::Choice`], then the
    /// integer knobs, a child knob with the schedulers it exists under.
    fn space(&self) -> Vec<SpaceKnob> {
        let mut out: Vec<SpaceKnob> = self
            .surface
            .choice
            .iter()
            .map(|c| SpaceKnob {
                name: "scheduler".into(),
                domain: Domain::Choice(c.values.clone()),
                default: KnobValue::Name(c.default.clone()),
                schedulers: None,
            })
            .collect();
        out.extend(self.surface.knobs.iter().map(|k| SpaceKnob {
            name: k.name.clone(),
            domain: Domain::Int {
                min: k.min,
                max: k.max,
            },
            default: KnobValue::Int(k.default),
            schedulers: k.schedulers.clone(),
        }));
        out
    }

    /// A surface whose points give `startup` figures has the start-up judge.
    fn lacks_startup(&self) -> Option<String> {
        let p = self.surface.points.first()?;
        p.startup.is_empty().then(|| {
            format!(
                "{}: the surface gives no start-up figures (`startup = {{ ... }}` at its points)",
                self.surface.path.display()
            )
        })
    }

    /// The start-up Time interpolated at the applied setting, with the run noise and drift
    /// of a reference-job run. CPU% is not modelled for it (100); a background's Loads and
    /// LCPU% are not given (`None`).
    fn run_startup(&mut self, load: Load) -> Result<Run> {
        if self.stop_after == Some(self.runs) {
            return Err(Error::Interrupted);
        }
        self.runs += 1;
        if let Some(t) = self.run_time {
            std::thread::sleep(t);
        }
        let mean = self
            .startup_at(self.sched.as_deref(), &self.current, load)
            .ok_or_else(|| {
                let s = &self.surface;
                let have: Vec<_> = s.points[0].startup.keys().map(|l| l.name()).collect();
                Error::BadInput(format!(
                    "{}: the surface has no start-up figures under {load} (it has: [{}])",
                    s.path.display(),
                    have.join(", ")
                ))
            })?;
        let sigma = self.sigma_at();
        let f = self.factor(sigma);
        let slow = self.drift_step(load);
        Ok(Run {
            load,
            time_s: mean * f * slow,
            cpu_pct: 100.0,
            loads: None,
            lcpu_pct: None,
            failed: None,
            io: None,
        })
    }

    /// A load the surface does not list gives nothing; of a listed load, `time_s` and
    /// `cpu_pct` (modelled when unlisted) always, `loads` and `lcpu_pct` only when its points
    /// list them (at every point or none, checked by the parser).
    fn lacks(&self, load: Load, metric: &str) -> Option<String> {
        let path = self.surface.path.display();
        let Some(m) = self.surface.points.first().and_then(|p| p.loads.get(&load)) else {
            let have: Vec<_> = self.surface.loads().iter().map(|l| l.name()).collect();
            return Some(format!(
                "{path}: the surface has no {load} (it has: {})",
                have.join(", ")
            ));
        };
        let listed = match metric {
            "loads" => m.loads.is_some(),
            "lcpu_pct" => m.lcpu_pct.is_some(),
            _ => true,
        };
        (!listed).then(|| format!("{path}: no point gives {load} `{metric}`"))
    }

    /// The scheduler first (a switch resets the child knobs to their defaults, as a fresh
    /// `iosched/` does), then the integer knobs; all or nothing.
    fn apply(&mut self, setting: &Setting) -> Result<()> {
        let mut next = self.current.clone();
        let mut sched = self.sched.clone();
        let einval = |name: &str, value: &KnobValue, errno: i32| Error::KnobWrite {
            knob: name.to_string(),
            value: value.to_string(),
            path: self.surface.path.clone(),
            source: std::io::Error::from_raw_os_error(errno),
        };
        if let (Some(c), Some(value)) = (&self.surface.choice, setting.get("scheduler")) {
            match value.as_name() {
                Some(n) if c.values.iter().any(|x| x == n) => {
                    if sched.as_deref() != Some(n) {
                        for k in self.surface.knobs.iter().filter(|k| k.schedulers.is_some()) {
                            next.insert(k.name.clone(), k.default);
                        }
                    }
                    sched = Some(n.to_string());
                }
                _ => return Err(einval("scheduler", value, libc::EINVAL)),
            }
        }
        for (name, value) in setting {
            if name == "scheduler" && self.surface.choice.is_some() {
                continue;
            }
            let Some(k) = self.surface.knobs.iter().find(|k| &k.name == name) else {
                let mut names: Vec<_> =
                    self.surface.knobs.iter().map(|k| k.name.as_str()).collect();
                if self.surface.choice.is_some() {
                    names.insert(0, "scheduler");
                }
                return Err(Error::BadInput(format!(
                    "{}: no knob '{name}' (knobs: {})",
                    self.target().label,
                    names.join(", ")
                )));
            };
            if !k.exists_under(sched.as_deref()) {
                return Err(einval(name, value, libc::ENOENT));
            }
            match value.as_int() {
                Some(v) if (k.min..=k.max).contains(&v) => {
                    next.insert(name.clone(), v);
                }
                _ => return Err(einval(name, value, libc::EINVAL)),
            }
        }
        self.current = next;
        self.sched = sched;
        Ok(())
    }

    fn run(&mut self, load: Load) -> Result<Run> {
        if self.stop_after == Some(self.runs) {
            return Err(Error::Interrupted);
        }
        self.runs += 1;
        if let Some(t) = self.run_time {
            std::thread::sleep(t);
        }
        self.draw(load)
    }

    fn sizes(&self) -> serde_json::Value {
        serde_json::json!({
            "surface": self.surface.path.display().to_string(),
            "seed": self.seed,
        })
    }

    fn restore(&mut self) -> Result<()> {
        for k in &self.surface.knobs {
            self.current.insert(k.name.clone(), k.default);
        }
        self.sched = self.surface.choice.as_ref().map(|c| c.default.clone());
        Ok(())
    }
}

impl SimDevice {
    /// One run's figures at the applied setting: its noise and drift drawn from the stream.
    fn draw(&mut self, load: Load) -> Result<Run> {
        let m = self
            .metrics_at(self.sched.as_deref(), &self.current, load)
            .ok_or_else(|| {
                let have: Vec<_> = self.surface.loads().iter().map(|l| l.name()).collect();
                Error::BadInput(format!(
                    "{}: the surface has no {load} (it has: {})",
                    self.surface.path.display(),
                    have.join(", ")
                ))
            })?;
        let sigma = self.sigma_at();
        let listed_cpu = self.surface.points[0].loads[&load].cpu_pct.is_some();
        let (ft, fc, fl, flc) = (
            self.factor(sigma),
            self.factor(sigma),
            self.factor(sigma),
            self.factor(sigma),
        );
        let slow = self.drift_step(load);
        let time_s = m.time_s * ft * slow;
        // Unlisted CPU%: the same CPU seconds over this run's (noisy) wall time.
        let cpu_pct = if listed_cpu {
            m.cpu_pct * fc
        } else {
            m.cpu_pct * m.time_s / time_s
        };
        Ok(Run {
            load,
            time_s,
            cpu_pct,
            loads: m.loads.map(|l| (l * fl / slow).round()),
            lcpu_pct: m.lcpu_pct.map(|c| c * flc),
            failed: None,
            io: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats;

    const SEED: &str = "data/surfaces/seed-2.5.39-mm1-fifo_batch.toml";
    const BOWL: &str = "data/surfaces/synthetic-2d-deadline.toml";

    fn fb(v: i64) -> Setting {
        Setting::from([("fifo_batch".to_string(), KnobValue::Int(v))])
    }

    #[test]
    fn expected_reproduces_points_and_interpolates_in_log2() {
        let d = SimDevice::open(Path::new(SEED), 1).unwrap();
        let m = d.expected(&fb(8), Load::IoLoad).unwrap();
        assert_eq!((m.time_s, m.cpu_pct), (109.1, 68.0));
        assert_eq!(d.expected(&fb(32), Load::IoLoad).unwrap().time_s, 239.5);
        // 11 lies at log2(11) - 3 = 0.4594 of the way from 8 to 16 in log2 space.
        let w = 11f64.log2() - 3.0;
        let t = d.expected(&fb(11), Load::IoLoad).unwrap().time_s;
        assert!((t - (109.1 + w * (131.2 - 109.1))).abs() < 1e-9, "{t}");
        // Linear interpolation would give 117.39; log2 gives 119.25.
        assert!((t - 119.2527).abs() < 1e-3, "{t}");
        // Edge values are held outside the listed range (32..256 has no points above 32).
        assert_eq!(d.expected(&fb(256), Load::IoLoad).unwrap().time_s, 239.5);
        // Defaults fill omitted knobs; ratio is derived.
        let r = d.expected_ratio(&Setting::new(), Load::IoLoad).unwrap();
        assert!((r - 239.5 / 67.7).abs() < 1e-12);
        assert!(d.expected(&fb(8), Load::MemLoad).is_none());
        assert!(
            d.expected(
                &Setting::from([("quantum".into(), KnobValue::Int(4))]),
                Load::IoLoad
            )
            .is_none()
        );
    }

    #[test]
    fn unlisted_cpu_pct_is_modelled_from_no_load_cpu_seconds() {
        let d = SimDevice::open(Path::new(BOWL), 1).unwrap();
        let s = Setting::from([
            ("fifo_batch".to_string(), KnobValue::Int(8)),
            ("read_ahead_kb".to_string(), KnobValue::Int(512)),
        ]);
        let m = d.expected(&s, Load::IoLoad).unwrap();
        assert_eq!(m.time_s, 48.0);
        // no_load 30 s at 100% → 30 CPU seconds over 48 s.
        assert!((m.cpu_pct - 62.5).abs() < 1e-12);
        assert_eq!(d.expected(&s, Load::NoLoad).unwrap().cpu_pct, 100.0);
        assert_eq!((m.loads, m.lcpu_pct), (None, None));
    }

    #[test]
    fn bilinear_in_log2_on_the_grid() {
        let d = SimDevice::open(Path::new(BOWL), 1).unwrap();
        // fb 11 between 8 and 16, ra 724 between 512 and 1024: bilinear weights in log2.
        let s = Setting::from([
            ("fifo_batch".to_string(), KnobValue::Int(11)),
            ("read_ahead_kb".to_string(), KnobValue::Int(724)),
        ]);
        let (wf, wr) = (11f64.log2() - 3.0, 724f64.log2() - 9.0);
        let want = (1.0 - wf) * (1.0 - wr) * 48.00
            + (1.0 - wf) * wr * 49.92
            + wf * (1.0 - wr) * 50.88
            + wf * wr * 54.24;
        let got = d.expected(&s, Load::IoLoad).unwrap().time_s;
        assert!((got - want).abs() < 1e-9, "{got} vs {want}");
    }

    #[test]
    fn runs_average_to_the_point_and_a_seed_repeats() {
        let mut d = SimDevice::open(Path::new(SEED), 7).unwrap();
        d.apply(&fb(16)).unwrap();
        let xs: Vec<f64> = (0..4000)
            .map(|_| d.run(Load::IoLoad).unwrap().time_s)
            .collect();
        let s = stats::summarize(&xs).unwrap();
        // σ = 4% of 131.2 = 5.25 s; the mean of 4000 has se 0.083 s.
        assert!((s.mean - 131.2).abs() < 0.4, "{}", s.mean);
        assert!((s.sd / 131.2 - 0.04).abs() < 0.004, "{}", s.sd);
        let mut a = SimDevice::open(Path::new(SEED), 7).unwrap();
        let mut b = SimDevice::open(Path::new(SEED), 7).unwrap();
        let mut c = SimDevice::open(Path::new(SEED), 8).unwrap();
        let ra: Vec<Run> = (0..5).map(|_| a.run(Load::IoLoad).unwrap()).collect();
        let rb: Vec<Run> = (0..5).map(|_| b.run(Load::IoLoad).unwrap()).collect();
        let rc: Vec<Run> = (0..5).map(|_| c.run(Load::IoLoad).unwrap()).collect();
        assert_eq!(ra, rb);
        assert_ne!(ra, rc);
    }

    #[test]
    fn noise_level_is_interpolated_too() {
        // fifo_batch 4 has σ 0.12, 8 has 0.04: at 4..8 midway (log2: 6 is 0.585) σ ≈ 0.0732.
        let mut d = SimDevice::open(Path::new(SEED), 3).unwrap();
        d.apply(&fb(6)).unwrap();
        let xs: Vec<f64> = (0..4000)
            .map(|_| d.run(Load::NoLoad).unwrap().time_s)
            .collect();
        let cv = stats::summarize(&xs).unwrap().sd / 67.7;
        let want = 0.12 + (6f64.log2() - 2.0) * (0.04 - 0.12);
        assert!((cv - want).abs() < 0.006, "{cv} vs {want}");
    }

    #[test]
    fn apply_rejects_like_the_kernel_and_changes_nothing() {
        let mut d = SimDevice::open(Path::new(SEED), 1).unwrap();
        d.apply(&fb(8)).unwrap();
        let e = d.apply(&fb(257)).unwrap_err();
        assert!(matches!(e, Error::KnobWrite { .. }), "{e}");
        assert_eq!(e.exit_code(), 1);
        assert!(e.to_string().contains("fifo_batch: writing '257'"), "{e}");
        assert_eq!(d.current(), fb(8));
        let e = d
            .apply(&Setting::from([("quantum".into(), KnobValue::Int(4))]))
            .unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        d.restore().unwrap();
        assert_eq!(d.current(), fb(32));
        let sp = d.space();
        assert_eq!(sp[0].domain, Domain::Int { min: 1, max: 256 });
        assert_eq!(sp[0].default, KnobValue::Int(32));
        let t = d.target();
        assert_eq!(
            (t.identity.as_str(), t.kernel.as_str()),
            ("sim:seed-2.5.39-mm1-fifo_batch", "sim")
        );
        assert_eq!(d.run(Load::MemLoad).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn drift_is_a_slow_walk_that_moves_loaded_runs_only() {
        let dir = tempfile::tempdir().unwrap();
        let v = dir.path().join("v.toml");
        let base = std::fs::canonicalize(SEED).unwrap();
        let src = format!(
            "extends = {:?}\n[noise]\ndrift_sigma = 0.2\ndrift_rho = 0.9\n",
            base.display().to_string()
        );
        std::fs::write(&v, src).unwrap();
        let mut d = SimDevice::open(&v, 5).unwrap();
        d.apply(&fb(16)).unwrap();
        let (mut io, mut nl) = (Vec::new(), Vec::new());
        for _ in 0..4000 {
            nl.push(d.run(Load::NoLoad).unwrap().time_s.ln());
            io.push(d.run(Load::IoLoad).unwrap().time_s.ln());
        }
        // no_load keeps its 4% noise; io_load adds the walk: sd² ≈ 0.04² + 0.2².
        let sd = |x: &[f64]| stats::variance(x).sqrt();
        assert!((sd(&nl) - 0.04).abs() < 0.006, "{}", sd(&nl));
        assert!(
            (sd(&io) - (0.04f64.powi(2) + 0.04).sqrt()).abs() < 0.03,
            "{}",
            sd(&io)
        );
        // Consecutive io_load runs are two walk steps apart: correlation ≈ 0.9² × 0.04/0.0416.
        let m = stats::mean(&io);
        let c: f64 = io.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum::<f64>()
            / (io.len() - 1) as f64
            / stats::variance(&io);
        assert!((c - 0.81 * 0.04 / 0.0416).abs() < 0.06, "{c}");
        // Without drift the stream is what StdRng gave before ChaCha12Rng was named: seed 7's
        // first io_load run (`bench --sim <seed surface> --loads io_load --runs 1 --seed 7`
        // printed this time_s with the StdRng build).
        let mut a = SimDevice::open(Path::new(SEED), 7).unwrap();
        assert_eq!(a.run(Load::IoLoad).unwrap().time_s, 229.50253591592676);
    }
}
