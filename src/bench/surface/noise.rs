//! `[noise]`: per-run noise, and the optional drift, a slow walk shared by every setting; and
//! `extends`, which makes a variant of another surface with other noise.
//!
//! ```toml
//! extends = "seed-2.5.39-mm1-fifo_batch.toml"   # optional: the knobs and points of that file
//! [noise]
//! relative_sigma = 0.04   # per-run multiplicative gaussian noise, in [0, 1) (not in a variant)
//! drift_sigma = 0.10      # the drift's stationary sd, ln units, in (0, 1] (default: no drift)
//! drift_rho = 0.95        # its correlation from one run to the next, in [0, 1)
//! ```
//!
//! The ranges keep every simulated figure finite and positive and the noise a noise: a run's
//! metric is multiplied by `max(1 + σ·z, 0.01)` (`bench/sim.rs`), so at σ ≥ 1 one run in six or
//! more is held at the floor and at σ = 1e300 a Time has 300 digits; a loaded run's by `e^d`
//! with `d ~ N(0, drift_sigma²)`, which at drift_sigma = 1e6 is 0 or infinite (no Ratio at
//! all). The shipped surfaces use relative_sigma up to 0.25 and drift_sigma up to 0.2.
//!
//! The drift is an AR(1) walk over the device's runs in the order they run, whatever the
//! setting: `d₀ ~ N(0, σ²)`, `dₜ = ρ·dₜ₋₁ + √(1 − ρ²)·σ·zₜ`. A run of a load other than
//! no_load takes `e^dₜ` times as long and does `e^−dₜ` times the work (Loads); no_load is
//! steady. Why only the loaded runs: on real machines here it is the Ratio that drifts (one
//! scratch tune measured the same default at io_load Ratio 5.31, 3.94 and 1.93, issue #13),
//! and a drift common to no_load would cancel in the Ratio, the easy case. With ρ = 0.95 a
//! walk forgets its past over about 20 runs, so a 24-run tune sees about one swing, and a
//! check's adjacent trials share most of it.

use super::raw::{self, RawNoise, RawSurface, Val};
use super::{Parser, Surface};
use crate::{Error, Result};
use toml::Spanned;

/// Upper bound (exclusive) of `relative_sigma`: the per-run factor `1 + σ·z` is clamped at
/// 0.01 (`bench/sim.rs`), which at σ = 1 happens to one run in six (z < −0.99); the shipped
/// surfaces go up to 0.25 (`flat-noisy-fifo_batch.toml`).
pub(crate) const MAX_RELATIVE_SIGMA: f64 = 1.0;

/// Upper bound (inclusive) of `drift_sigma`, ln units: a run is `e^d` times as slow with
/// `d ~ N(0, σ²)`, so at 1 a 2-sd swing is 7.4× and the Times stay finite (e^d overflows an
/// f64 past d ≈ 709); the shipped surfaces use 0.15 (`*-drift.toml`), the tests up to 0.2.
pub(crate) const MAX_DRIFT_SIGMA: f64 = 1.0;

/// A surface's drift (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Drift {
    /// Stationary sd of the walk, ln units (> 0).
    pub sigma: f64,
    /// Correlation from one run to the next, in [0, 1).
    pub rho: f64,
}

impl Parser<'_> {
    /// A `relative_sigma` (`[noise]` or a point's): a number in [0, [`MAX_RELATIVE_SIGMA`]).
    pub(super) fn relative_sigma(&self, v: &Val, field: &str) -> Result<f64> {
        let x = self.number(v, field)?;
        if !(0.0..MAX_RELATIVE_SIGMA).contains(&x) {
            return Err(self.f.err(
                &v.span(),
                field,
                format!(
                    "must be in [0, {MAX_RELATIVE_SIGMA}), not {} (the sd of a run's noise, as a \
                     fraction of the figure)",
                    super::shown(x)
                ),
            ));
        }
        Ok(x)
    }

    /// `[noise] drift_sigma`: a number in (0, [`MAX_DRIFT_SIGMA`]].
    pub(super) fn drift_sigma(&self, s: &Val) -> Result<f64> {
        let sigma = self.number(s, "noise.drift_sigma")?;
        if !(sigma > 0.0 && sigma <= MAX_DRIFT_SIGMA) {
            return Err(self.f.err(
                &s.span(),
                "noise.drift_sigma",
                format!(
                    "must be in (0, {MAX_DRIFT_SIGMA}], not {} (the drift's sd, ln units)",
                    super::shown(sigma)
                ),
            ));
        }
        Ok(sigma)
    }

    /// `[noise]`: (relative_sigma, drift). `variant`: in a file with `extends`, where
    /// `relative_sigma` (resolved into the base's points) may not change.
    pub(super) fn noise(
        &self,
        n: Option<&Spanned<RawNoise>>,
        variant: bool,
    ) -> Result<(f64, Option<Drift>)> {
        let Some(n) = n else {
            return Ok((0.0, None));
        };
        let t = n.get_ref();
        if variant && let Some(x) = &t.relative_sigma {
            let msg = raw::unknown_key(&raw::VARIANT_NOISE_KEYS);
            return Err(self.f.err(&x.span(), "noise.relative_sigma", msg));
        }
        let sigma = match &t.relative_sigma {
            Some(v) => self.relative_sigma(v, "noise.relative_sigma")?,
            None => 0.0,
        };
        let drift = match (&t.drift_sigma, &t.drift_rho) {
            (None, None) => None,
            (Some(s), r) => {
                let sigma = self.drift_sigma(s)?;
                let rho = match r {
                    Some(r) => self.num(r, "noise.drift_rho")?,
                    None => {
                        return Err(self.f.err(
                            &n.span(),
                            "noise.drift_rho",
                            "missing (required with drift_sigma)",
                        ));
                    }
                };
                if rho >= 1.0 {
                    let span = r.as_ref().map_or(n.span(), |r| r.span());
                    return Err(self.f.err(
                        &span,
                        "noise.drift_rho",
                        format!("must be in [0, 1), not {}", super::shown(rho)),
                    ));
                }
                Some(Drift { sigma, rho })
            }
            (None, Some(_)) => {
                return Err(self.f.err(
                    &n.span(),
                    "noise.drift_sigma",
                    "missing (required with drift_rho)",
                ));
            }
        };
        Ok((sigma, drift))
    }

    /// A file with `extends = "base.toml"` (relative to this file): the base's knobs and
    /// points, this file's `[device] name` (else its stem) and drift. The base may not
    /// extend another file.
    pub(super) fn variant(&self, doc: &RawSurface, base: &Val, name: String) -> Result<Surface> {
        let other = [
            ("knobs", doc.knobs.as_ref().map(|k| k.span())),
            ("point", doc.point.as_ref().map(|p| p.span())),
        ];
        if let Some((key, Some(span))) = other.into_iter().find(|(_, s)| s.is_some()) {
            return Err(self.f.err(&span, key, raw::unknown_key(&raw::VARIANT_KEYS)));
        }
        let rel = base
            .get_ref()
            .as_str()
            .ok_or_else(|| self.f.err(&base.span(), "extends", "expected a file name"))?;
        let path = self
            .f
            .path()
            .parent()
            .unwrap_or(std::path::Path::new("."))
            .join(rel);
        let src = std::fs::read_to_string(&path).map_err(|e| {
            self.f.err(
                &base.span(),
                "extends",
                format!("cannot read {}: {e}", path.display()),
            )
        })?;
        if toml::from_str::<toml::Table>(&src).is_ok_and(|d| d.contains_key("extends")) {
            return Err(self.f.err(
                &base.span(),
                "extends",
                format!("{} extends another file itself", path.display()),
            ));
        }
        let mut s = Surface::parse(&path, &src).map_err(|e| match e {
            Error::BadFile { .. } => e,
            other => self.f.err(&base.span(), "extends", other.to_string()),
        })?;
        let (_, drift) = self.noise(doc.noise.as_ref(), true)?;
        s.path = self.f.path().to_path_buf();
        s.name = name;
        s.drift = drift;
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn drift_keys_are_checked_and_a_variant_keeps_its_base_points() {
        let dir = tempfile::tempdir().unwrap();
        let base = "[knobs.fifo_batch]\ndefault = 2\nmin = 1\nmax = 8\n[noise]\nrelative_sigma = 0.1\n\
                    [[point]]\nknobs = { fifo_batch = 2 }\nio_load = { time_s = 3 }\n";
        std::fs::write(dir.path().join("b.toml"), base).unwrap();
        let v = dir.path().join("v.toml");
        let src = "extends = \"b.toml\"\n[noise]\ndrift_sigma = 0.1\ndrift_rho = 0.9\n";
        let s = Surface::parse(&v, src).unwrap();
        assert_eq!(
            s.drift,
            Some(Drift {
                sigma: 0.1,
                rho: 0.9
            })
        );
        assert_eq!((s.points.len(), s.points[0].relative_sigma), (1, 0.1));
        assert_eq!((s.stem().as_str(), s.path.as_path()), ("v", v.as_path()));
        let bad = |src: &str| match Surface::parse(&v, src) {
            Err(Error::BadFile { field, msg, .. }) => (field, msg),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            bad("extends = \"b.toml\"\n[noise]\nrelative_sigma = 0.2\n").0,
            "noise.relative_sigma"
        );
        assert_eq!(
            bad("extends = \"b.toml\"\n[noise]\ndrift_sigma = 0.1\n").0,
            "noise.drift_rho"
        );
        assert_eq!(
            bad("extends = \"b.toml\"\n[noise]\ndrift_sigma = 0.1\ndrift_rho = 1\n").0,
            "noise.drift_rho"
        );
        assert_eq!(bad("extends = \"b.toml\"\n[[point]]\n").0, "point");
        assert!(bad("extends = \"nope.toml\"\n").1.contains("cannot read"));
        std::fs::write(dir.path().join("w.toml"), src).unwrap();
        assert!(
            bad("extends = \"w.toml\"\n")
                .1
                .contains("extends another file itself")
        );
        // Without extends, drift comes with its own points.
        let s = Surface::parse(
            Path::new("t.toml"),
            &format!("{base}drift_sigma = 0.2\ndrift_rho = 0\n"),
        );
        assert!(s.is_err(), "keys after [[point]] belong to the point");
    }

    /// Every noise parameter has a range that keeps the simulated figures finite and positive;
    /// outside it the file is refused naming the line, the field and the range.
    #[test]
    fn noise_parameters_outside_their_range_are_refused_with_the_range() {
        let head = "[knobs.fifo_batch]\ndefault = 2\nmin = 1\nmax = 8\n";
        let pt = "[[point]]\nknobs = { fifo_batch = 2 }\nio_load = { time_s = 3 }\n";
        let parse = |noise: &str, point: &str| {
            Surface::parse(
                Path::new("t.toml"),
                &format!("{head}[noise]\n{noise}{pt}{point}"),
            )
        };
        let bad = |noise: &str, point: &str| match parse(noise, point) {
            Err(e @ Error::BadFile { .. }) => (e.exit_code(), e.to_string()),
            other => panic!("{noise}{point}: {other:?}"),
        };
        let rel = "must be in [0, 1), not";
        let why = "(the sd of a run's noise, as a fraction of the figure)";
        for (v, shown) in [
            ("1e300", "1e300"),
            ("1", "1"),
            ("-0.1", "-0.1"),
            ("nan", "NaN"),
        ] {
            assert_eq!(
                bad(&format!("relative_sigma = {v}\n"), ""),
                (
                    2,
                    format!("t.toml:6: noise.relative_sigma: {rel} {shown} {why}")
                )
            );
        }
        // A point's own relative_sigma has the same range.
        assert_eq!(
            bad("", "relative_sigma = 2.5\n"),
            (
                2,
                format!("t.toml:9: point[1].relative_sigma: {rel} 2.5 {why}")
            )
        );
        let drift = "must be in (0, 1], not";
        for (v, shown) in [("1e6", "1e6"), ("1.5", "1.5"), ("0", "0"), ("inf", "inf")] {
            assert_eq!(
                bad(&format!("drift_sigma = {v}\ndrift_rho = 0.9\n"), ""),
                (
                    2,
                    format!(
                        "t.toml:6: noise.drift_sigma: {drift} {shown} (the drift's sd, ln units)"
                    )
                )
            );
        }
        // The bounds themselves, and what the shipped surfaces use, are accepted.
        let s = parse(
            "relative_sigma = 0.99\ndrift_sigma = 1\ndrift_rho = 0.95\n",
            "",
        )
        .unwrap();
        assert_eq!(s.points[0].relative_sigma, 0.99);
        assert_eq!(
            s.drift,
            Some(Drift {
                sigma: 1.0,
                rho: 0.95
            })
        );
        assert!(parse("relative_sigma = 0\n", "relative_sigma = 0.25\n").is_ok());
    }
}
