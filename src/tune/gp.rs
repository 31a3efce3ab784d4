//! The surrogate model: a Gaussian process (friedrich) over the grid's coordinates, with a
//! fitted noise term, and expected improvement.
//!
//! - Kernel: Matérn 5/2 (Rasmussen & Williams 2006, eq. 4.17), the usual choice for Bayesian
//!   optimisation (Snoek, Larochelle & Adams 2012), unit amplitude on standardised outputs.
//! - Length scale and noise are fitted by maximum marginal likelihood (friedrich's
//!   `likelihood`) over the grid [`LENGTH_SCALES`] × [`NOISE_RATIOS`]: with a handful of
//!   observations a grid is more robust than friedrich's gradient fit, which (for Matérn 5/2)
//!   drifted to a white-noise model here. Repeated trials of one setting are separate
//!   observations, so the noise term is what the model learns from replicates.
//! - Outputs are standardised (mean 0, sd 1) before fitting, and predictions scaled back.

use friedrich::gaussian_process::GaussianProcess;
use friedrich::kernel::Matern2;
use friedrich::prior::ConstantPrior;
use statrs::distribution::{Continuous, ContinuousCDF, Normal};

/// Length scales tried (coordinates span [0, 1]).
pub const LENGTH_SCALES: [f64; 6] = [0.08, 0.15, 0.25, 0.4, 0.7, 1.2];

/// Noise sd / output sd ratios tried when fitting the noise term.
pub const NOISE_RATIOS: [f64; 6] = [0.05, 0.1, 0.2, 0.35, 0.6, 1.0];

/// A fitted model's predictions over the grid, in cost units.
#[derive(Clone, Debug)]
pub struct Prediction {
    /// Posterior mean of the latent cost at every grid point.
    pub mean: Vec<f64>,
    /// Posterior sd of the latent cost (noise excluded).
    pub sd: Vec<f64>,
    /// The fitted noise sd of one trial's cost.
    pub noise: f64,
}

/// Fits the GP to observations `(x[i], y[i])` and predicts at every row of `grid`.
/// `None` with fewer than two distinct outputs or when the fit does not give finite numbers.
pub fn fit_predict(x: &[Vec<f64>], y: &[f64], grid: &[Vec<f64>]) -> Option<Prediction> {
    if x.len() < 2 || x.len() != y.len() {
        return None;
    }
    let m = crate::stats::mean(y);
    let s = crate::stats::variance(y).sqrt();
    if s.is_nan() || s <= 1e-12 {
        return None;
    }
    let yn: Vec<f64> = y.iter().map(|v| (v - m) / s).collect();
    let mut best: Option<(f64, GaussianProcess<Matern2, ConstantPrior>)> = None;
    for ls in LENGTH_SCALES {
        for r in NOISE_RATIOS {
            let gp = GaussianProcess::new(
                ConstantPrior::new(0.0),
                Matern2::new(ls, 1.0),
                r,
                Some(1e-9),
                x.to_vec(),
                yn.clone(),
            );
            let l = gp.likelihood();
            if l.is_finite() && best.as_ref().is_none_or(|(bl, _)| l > *bl) {
                best = Some((l, gp));
            }
        }
    }
    let (_, gp) = best?;
    let (mu, var) = gp.predict_mean_variance(&grid.to_vec());
    let mean: Vec<f64> = mu.iter().map(|v| m + s * v).collect();
    let sd: Vec<f64> = var.iter().map(|v| s * v.max(0.0).sqrt()).collect();
    if mean.iter().chain(sd.iter()).any(|v| !v.is_finite()) {
        return None;
    }
    Some(Prediction {
        mean,
        sd,
        noise: s * gp.noise,
    })
}

/// Expected improvement below `best` (minimisation) of a normal posterior N(mean, sd²)
/// (Jones, Schonlau & Welch 1998): `(best − μ)Φ(z) + σφ(z)`, `z = (best − μ)/σ`.
pub fn expected_improvement(mean: f64, sd: f64, best: f64) -> f64 {
    let imp = best - mean;
    if sd <= 1e-12 {
        return imp.max(0.0);
    }
    let z = imp / sd;
    match Normal::new(0.0, 1.0) {
        Ok(n) => (imp * n.cdf(z) + sd * n.pdf(z)).max(0.0),
        Err(_) => imp.max(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ei_is_positive_and_grows_with_uncertainty() {
        assert!((expected_improvement(1.0, 0.0, 2.0) - 1.0).abs() < 1e-12);
        assert_eq!(expected_improvement(3.0, 0.0, 2.0), 0.0);
        let a = expected_improvement(2.0, 0.1, 2.0);
        let b = expected_improvement(2.0, 0.5, 2.0);
        // At z = 0, EI = σφ(0) = 0.3989σ.
        assert!((a - 0.039894).abs() < 1e-5, "{a}");
        assert!(b > a);
    }

    #[test]
    fn gp_recovers_a_bowl_and_its_noise() {
        // y = (x - 0.4)² sampled twice per point with ±0.01 noise.
        let mut x = Vec::new();
        let mut y = Vec::new();
        for i in 0..9 {
            let xi = i as f64 / 8.0;
            for e in [-0.01, 0.01] {
                x.push(vec![xi]);
                y.push((xi - 0.4f64).powi(2) + e);
            }
        }
        let grid: Vec<Vec<f64>> = (0..=16).map(|i| vec![i as f64 / 16.0]).collect();
        let p = fit_predict(&x, &y, &grid).unwrap();
        let argmin = (0..grid.len())
            .min_by(|&a, &b| p.mean[a].total_cmp(&p.mean[b]))
            .unwrap();
        assert!((grid[argmin][0] - 0.4).abs() <= 0.07, "{argmin}");
        assert!(p.noise > 0.001 && p.noise < 0.1, "noise {}", p.noise);
    }
}
