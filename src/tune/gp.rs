//! The surrogate model: a Gaussian process (nalgebra's Cholesky) over the grid's coordinates, with a
//! fitted noise term, and expected improvement.
//!
//! - Kernel: Matérn 5/2 (Rasmussen & Williams 2006, eq. 4.17), the usual choice for Bayesian
//!   optimisation (Snoek, Larochelle & Adams 2012), unit amplitude on standardised outputs.
//! - Length scale and noise: every pair on the grid `LENGTH_SCALES` × `NOISE_RATIOS` is
//!   weighted by its marginal likelihood (`log_marginal_likelihood`, computed here because
//!   friedrich 0.6's own is biased toward short length scales), and predictions and expected
//!   improvement are averaged over them (Snoek, Larochelle & Adams 2012, §3.2). With a
//!   handful of noisy trials no single length scale is credible, and a single best fit made
//!   the model over-confident (search stopped after three settings) or too rough (no pooling
//!   between neighbours). Repeated trials of one setting are separate observations, so the
//!   noise term is what the model learns from replicates.
//! - Outputs are standardised (mean 0, sd 1) before fitting, and predictions scaled back.

use nalgebra::storage::Storage;
use nalgebra::{Cholesky, DMatrix, DVector, Dyn, Matrix, U1};
use statrs::distribution::{Continuous, ContinuousCDF, Normal};

/// The Matérn 5/2 kernel (Rasmussen & Williams 2006, eq. 4.17) with length scale `ls` and
/// amplitude `ampl`: `ampl · (1 + √5 d/ℓ + 5d²/3ℓ²) · exp(−√5 d/ℓ)` for distance `d`. (The
/// same formula as friedrich 0.6's `Matern2`, which sweetspot used before it did its own
/// algebra here: friedrich's fit panics when its Cholesky fails, and three of its items were
/// all sweetspot used.)
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Matern2 {
    ls: f64,
    ampl: f64,
}

impl Matern2 {
    /// A kernel with length scale `ls` and amplitude `ampl`.
    pub(crate) fn new(ls: f64, ampl: f64) -> Matern2 {
        Matern2 { ls, ampl }
    }

    /// The covariance of two input rows.
    pub(crate) fn kernel<S1: Storage<f64, U1, Dyn>, S2: Storage<f64, U1, Dyn>>(
        &self,
        x1: &Matrix<f64, U1, Dyn, S1>,
        x2: &Matrix<f64, U1, Dyn, S2>,
    ) -> f64 {
        let (ampl, l) = (self.ampl.abs(), self.ls.abs());
        let d = (x1 - x2).norm();
        let x = 5f64.sqrt() * d / l;
        ampl * (1.0 + x + (5.0 * d * d) / (3.0 * l * l)) * (-x).exp()
    }
}

/// The posterior mean and variance (noise excluded) at every row of `grid` of a zero-mean GP
/// with `kernel` and noise sd `r` fitted to `(x, y)` (Rasmussen & Williams 2006, alg. 2.1):
/// `μ = k*ᵀ K⁻¹ y`, `σ² = k(x*, x*) − k*ᵀ K⁻¹ k*` (as friedrich 0.6 computed them, so the
/// tuner's choices did not move when it was replaced). A pivot of the Cholesky factor that is not
/// positive is replaced by 1e-9 (as friedrich did); `None` when the factor still fails (a
/// NaN), never a panic.
fn predict(
    kernel: &Matern2,
    r: f64,
    x: &[Vec<f64>],
    y: &[f64],
    grid: &[Vec<f64>],
) -> Option<(Vec<f64>, Vec<f64>)> {
    let n = x.len();
    let dims = x.first().map_or(0, Vec::len);
    let xm = DMatrix::from_fn(n, dims, |i, j| x[i][j]);
    let gm = DMatrix::from_fn(grid.len(), dims, |i, j| grid[i][j]);
    let k = DMatrix::from_fn(n, n, |i, j| {
        kernel.kernel(&xm.row(i), &xm.row(j)) + if i == j { r * r } else { 0.0 }
    });
    let chol = Cholesky::new_with_substitute(k, 1e-9)?;
    let ks = DMatrix::from_fn(n, grid.len(), |i, p| kernel.kernel(&xm.row(i), &gm.row(p)));
    let w = chol.solve(&ks);
    let yv = DVector::from_column_slice(y);
    let mean = (w.transpose() * yv).iter().copied().collect();
    let var = (0..grid.len())
        .map(|p| kernel.kernel(&gm.row(p), &gm.row(p)) - ks.column(p).dot(&w.column(p)))
        .collect();
    Some((mean, var))
}

/// Length scales tried (coordinates span [0, 1]).
pub(crate) const LENGTH_SCALES: [f64; 6] = [0.08, 0.15, 0.25, 0.4, 0.7, 1.2];

/// Noise sd / kernel amplitude ratios tried for the noise term (the amplitude is 1 on
/// standardised outputs, so the prior sd of one trial is √(1 + r²)).
pub(crate) const NOISE_RATIOS: [f64; 6] = [0.05, 0.1, 0.2, 0.35, 0.6, 1.0];

/// A fitted model's predictions over the grid, in cost units: a mixture over the
/// hyperparameter grid, each model weighted by its posterior probability (marginal likelihood
/// × a flat prior on the grid), as in Snoek, Larochelle & Adams (2012, §3.2, "integrated
/// acquisition"), with a grid in place of their slice sampling.
#[derive(Clone, Debug)]
pub struct Prediction {
    /// Posterior mean of the latent cost at every grid point (mixture mean).
    pub mean: Vec<f64>,
    /// Posterior sd of the latent cost (mixture sd, noise excluded).
    pub sd: Vec<f64>,
    /// The noise sd of one trial's cost (weighted mean over the models).
    pub noise: f64,
    /// Per grid point, the weight of each observation in [`Prediction::mean`] (the mean is
    /// linear in the observations: `Σ_q weights[p][q]·y[q]`, weights summing to 1); empty
    /// unless asked for (`fit_predict_weights`).
    pub weights: Vec<Vec<f64>>,
    /// (weight, mean, sd) per model with weight ≥ [`MIN_WEIGHT`].
    models: Vec<(f64, Vec<f64>, Vec<f64>)>,
}

/// Models lighter than this are dropped from the mixture.
pub(crate) const MIN_WEIGHT: f64 = 1e-3;

impl Prediction {
    /// Expected improvement below `best` at grid point `p`, integrated over the models.
    pub(crate) fn expected_improvement(&self, p: usize, best: f64) -> f64 {
        self.models
            .iter()
            .map(|(w, m, s)| w * expected_improvement(m[p], s[p], best))
            .sum()
    }
}

/// Fits the GP to observations `(x[i], y[i])` and predicts at every row of `grid`.
/// `None` with fewer than two distinct outputs or when the fit does not give finite numbers.
pub(crate) fn fit_predict(x: &[Vec<f64>], y: &[f64], grid: &[Vec<f64>]) -> Option<Prediction> {
    fit(x, y, grid, false)
}

/// [`fit_predict`], with [`Prediction::weights`] filled in: how much each observation
/// contributes to each prediction, so a caller can tell how much of the observations' own
/// noise a prediction carries (`σ²·Σ_q w_q²` for i.i.d. noise σ², at least `σ²/n`).
pub(crate) fn fit_predict_weights(
    x: &[Vec<f64>],
    y: &[f64],
    grid: &[Vec<f64>],
) -> Option<Prediction> {
    fit(x, y, grid, true)
}

/// The observation weights of one model's prediction at every row of `grid`: the
/// standardised mean is `k*ᵀ(K + r²I)⁻¹ y_std` with `y_std = (y − ȳ)/s`, so in cost units
/// the weight of observation q is `b_q + (1 − Σb)/n` with `b = (K + r²I)⁻¹k*`. `None` if
/// the matrix is not positive definite.
fn model_weights(
    kernel: &Matern2,
    r: f64,
    x: &[Vec<f64>],
    grid: &[Vec<f64>],
) -> Option<Vec<Vec<f64>>> {
    let n = x.len();
    let dims = x.first().map_or(0, Vec::len);
    let xm = DMatrix::from_fn(n, dims, |i, j| x[i][j]);
    let gm = DMatrix::from_fn(grid.len(), dims, |i, j| grid[i][j]);
    let k = DMatrix::from_fn(n, n, |i, j| {
        kernel.kernel(&xm.row(i), &xm.row(j)) + if i == j { r * r + 1e-9 } else { 0.0 }
    });
    let chol = Cholesky::new(k)?;
    let ks = DMatrix::from_fn(n, grid.len(), |i, p| kernel.kernel(&xm.row(i), &gm.row(p)));
    let b = chol.solve(&ks);
    Some(
        (0..grid.len())
            .map(|p| {
                let col = b.column(p);
                let rest = (1.0 - col.sum()) / n as f64;
                col.iter().map(|v| v + rest).collect()
            })
            .collect(),
    )
}

fn fit(x: &[Vec<f64>], y: &[f64], grid: &[Vec<f64>], want_weights: bool) -> Option<Prediction> {
    if x.len() < 2 || x.len() != y.len() {
        return None;
    }
    let m = crate::stats::mean(y);
    let s = crate::stats::variance(y).sqrt();
    if s.is_nan() || s <= 1e-12 {
        return None;
    }
    let yn: Vec<f64> = y.iter().map(|v| (v - m) / s).collect();
    let mut fits: Vec<(f64, f64, f64)> = Vec::new();
    for ls in LENGTH_SCALES {
        for r in NOISE_RATIOS {
            let l = log_marginal_likelihood(&Matern2::new(ls, 1.0), r, x, &yn);
            if let Some(l) = l.filter(|l| l.is_finite()) {
                fits.push((l, ls, r));
            }
        }
    }
    let top = fits.iter().map(|f| f.0).fold(f64::NEG_INFINITY, f64::max);
    let total: f64 = fits.iter().map(|f| (f.0 - top).exp()).sum();
    let mut models = Vec::new();
    let mut weights: Vec<Vec<f64>> = Vec::new();
    let mut noise = 0.0;
    let mut wsum = 0.0;
    for (l, ls, r) in fits {
        let w = (l - top).exp() / total;
        if w < MIN_WEIGHT {
            continue;
        }
        let Some((mu, var)) = predict(&Matern2::new(ls, 1.0), r, x, &yn, grid) else {
            continue;
        };
        let mean: Vec<f64> = mu.iter().map(|v| m + s * v).collect();
        let sd: Vec<f64> = var.iter().map(|v| s * v.max(0.0).sqrt()).collect();
        if mean.iter().chain(sd.iter()).any(|v| !v.is_finite()) {
            continue;
        }
        if want_weights {
            let Some(mw) = model_weights(&Matern2::new(ls, 1.0), r, x, grid) else {
                continue;
            };
            if weights.is_empty() {
                weights = vec![vec![0.0; x.len()]; grid.len()];
            }
            for (acc, row) in weights.iter_mut().zip(&mw) {
                for (a, v) in acc.iter_mut().zip(row) {
                    *a += w * v;
                }
            }
        }
        noise += w * s * r;
        wsum += w;
        models.push((w, mean, sd));
    }
    if models.is_empty() {
        return None;
    }
    for mdl in &mut models {
        mdl.0 /= wsum;
    }
    for a in weights.iter_mut().flatten() {
        *a /= wsum;
    }
    noise /= wsum;
    let n = grid.len();
    let mean: Vec<f64> = (0..n)
        .map(|p| models.iter().map(|(w, mu, _)| w * mu[p]).sum())
        .collect();
    let sd: Vec<f64> = (0..n)
        .map(|p| {
            let second: f64 = models
                .iter()
                .map(|(w, mu, sd)| w * (sd[p] * sd[p] + mu[p] * mu[p]))
                .sum();
            (second - mean[p] * mean[p]).max(0.0).sqrt()
        })
        .collect();
    Some(Prediction {
        mean,
        sd,
        noise,
        weights,
        models,
    })
}

/// The log marginal likelihood of standardised outputs `y` at inputs `x` under a zero-mean GP
/// with `kernel` and noise sd `noise` (Rasmussen & Williams 2006, eq. 2.30):
/// `−½ yᵀ(K + σ²I)⁻¹y − ½ log|K + σ²I| − n/2 log 2π`, through nalgebra's Cholesky.
///
/// friedrich 0.6's own `likelihood()` takes the log determinant as `Σ log(K_ii + σ²)`, the
/// diagonal alone, which by Hadamard's inequality over-penalises correlated (long length
/// scale) models: with it the fit always chose the shortest length scale on the grid, and the
/// model stopped pooling neighbouring settings. `None` if the matrix is not positive definite.
pub(crate) fn log_marginal_likelihood(
    kernel: &Matern2,
    noise: f64,
    x: &[Vec<f64>],
    y: &[f64],
) -> Option<f64> {
    let n = x.len();
    let dims = x.first().map_or(0, Vec::len);
    let xm = DMatrix::from_fn(n, dims, |i, j| x[i][j]);
    let k = DMatrix::from_fn(n, n, |i, j| {
        kernel.kernel(&xm.row(i), &xm.row(j)) + if i == j { noise * noise + 1e-9 } else { 0.0 }
    });
    let chol = Cholesky::new(k)?;
    let yv = DVector::from_column_slice(y);
    let alpha = chol.l().solve_lower_triangular(&yv)?;
    let log_det: f64 = 2.0 * chol.l().diagonal().iter().map(|d| d.ln()).sum::<f64>();
    Some(
        -0.5 * alpha.norm_squared()
            - 0.5 * log_det
            - 0.5 * n as f64 * (2.0 * std::f64::consts::PI).ln(),
    )
}

/// Expected improvement below `best` (minimisation) of a normal posterior N(mean, sd²)
/// (Jones, Schonlau & Welch 1998): `(best − μ)Φ(z) + σφ(z)`, `z = (best − μ)/σ`.
pub(crate) fn expected_improvement(mean: f64, sd: f64, best: f64) -> f64 {
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
    fn log_marginal_likelihood_matches_a_hand_computed_case() {
        // Two points 1 apart, ls 1: k = (1 + √5 + 5/3)·e^(−√5) = 0.523994; noise 0.5 adds
        // 0.25 to the diagonal. y = (1, −1): yᵀK⁻¹y = (2·1.25 + 2k)/det, det = 1.25² − k².
        let l = log_marginal_likelihood(
            &Matern2::new(1.0, 1.0),
            0.5,
            &[vec![0.0], vec![1.0]],
            &[1.0, -1.0],
        )
        .unwrap();
        assert!((l - (-3.341_794_6)).abs() < 1e-6, "{l}");
    }

    #[test]
    fn a_smooth_trend_prefers_a_long_length_scale() {
        // A straight line over 9 settings with a little noise: the correlated model must win.
        // (friedrich 0.6's likelihood() ranks them the other way round: −13.2 vs −11.6.)
        let x: Vec<Vec<f64>> = (0..9).map(|i| vec![i as f64 / 8.0]).collect();
        let y: Vec<f64> = (0..9)
            .map(|i| (i as f64 - 4.0) / 2.6 + if i % 2 == 0 { 0.05 } else { -0.05 })
            .collect();
        let long = log_marginal_likelihood(&Matern2::new(0.7, 1.0), 0.1, &x, &y).unwrap();
        let short = log_marginal_likelihood(&Matern2::new(0.08, 1.0), 0.1, &x, &y).unwrap();
        assert!(long > short + 5.0, "long {long} short {short}");
    }

    #[test]
    fn integrated_prediction_weights_sum_to_one() {
        let x: Vec<Vec<f64>> = (0..5).map(|i| vec![i as f64 / 4.0]).collect();
        let y = [0.3, 0.1, 0.0, 0.2, 0.5];
        let p = fit_predict(&x, &y, &x).unwrap();
        let w: f64 = p.models.iter().map(|m| m.0).sum();
        assert!((w - 1.0).abs() < 1e-9, "{w}");
        // The integrated EI is the weighted sum of the models' EIs, so it is never negative,
        // and the mixture mean lies within the models' means.
        for i in 0..5 {
            assert!(p.expected_improvement(i, 0.0) >= 0.0);
            let lo = p
                .models
                .iter()
                .map(|m| m.1[i])
                .fold(f64::INFINITY, f64::min);
            let hi = p
                .models
                .iter()
                .map(|m| m.1[i])
                .fold(f64::NEG_INFINITY, f64::max);
            assert!(lo - 1e-12 <= p.mean[i] && p.mean[i] <= hi + 1e-12);
        }
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

    #[test]
    fn the_weights_reproduce_the_mean_and_sum_to_one() {
        let x: Vec<Vec<f64>> = (0..5).map(|i| vec![i as f64 / 4.0]).collect();
        let y = [0.3, 0.1, 0.0, 0.2, 0.5];
        let grid = [vec![0.1], vec![0.6], vec![1.0]];
        let p = fit_predict_weights(&x, &y, &grid).unwrap();
        assert!(fit_predict(&x, &y, &grid).unwrap().weights.is_empty());
        for (i, w) in p.weights.iter().enumerate() {
            let sum: f64 = w.iter().sum();
            assert!((sum - 1.0).abs() < 1e-9, "{sum}");
            let lin: f64 = w.iter().zip(&y).map(|(a, b)| a * b).sum();
            assert!((lin - p.mean[i]).abs() < 1e-6, "{lin} vs {}", p.mean[i]);
        }
    }
}
