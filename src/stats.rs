//! Statistics used by bench and tune alike: one place, so a trial's numbers mean the same
//! thing in the contest table, in `--json` and in the optimiser's decisions.
//!
//! - [`summarize`]: n, mean, sample sd, min, max, median, a t-based 95% CI of the mean, and
//!   MAD outliers.
//! - `mad_outliers`: modified z-score > 3.5 (Iglewicz & Hoaglin 1993). hyperfine flags the
//!   same kind of score with a looser bound (see `MAD_THRESHOLD`).
//! - [`paired_less`], `welch_less`: one-sided t-tests of H1 "a is smaller than b".
//! - [`ratio_ci`]: an improvement ratio `mean(base) / mean(new)` with a 95% CI.
//! - `geomean`.
//!
//! Quantiles of Student's t come from `statrs`. Every function takes raw per-run values and
//! returns `None` (rather than NaN) when the sample is too small for the statistic.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Threshold on the modified z-score above which a value is an outlier
/// (Iglewicz & Hoaglin 1993, "How to Detect and Handle Outliers": 0.6745 · (x − median) / MAD,
/// about 3.5 robust standard deviations). hyperfine's `outlier_detection` uses a looser bound
/// on the unscaled score: (x − median) / MAD > 1.4826 × 10, about 10 robust sd. We keep
/// Iglewicz & Hoaglin's: a contest trial has 3–10 runs, where one stray run matters.
pub(crate) const MAD_THRESHOLD: f64 = 3.5;

/// The smallest sample [`mad_outliers`] judges.
pub(crate) const MAD_MIN_N: usize = 5;

/// 0.6745 ≈ Φ⁻¹(0.75): makes the MAD a consistent estimator of σ for normal data
/// (Iglewicz & Hoaglin 1993).
const MAD_SCALE: f64 = 0.6745;

/// A sample described: every field in the unit of the input (s for Time, % for CPU%, ...).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1 denominator); 0 when n = 1.
    pub sd: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Median (mean of the two middle values for even n).
    pub median: f64,
    /// 95% confidence interval of the mean, `mean ± t(0.975, n−1) · sd / √n`. With n = 1 it
    /// is degenerate, `(mean, mean)`: one run gives no estimate of spread.
    pub ci95: (f64, f64),
    /// Indices (into the input) of values whose modified z-score exceeds `MAD_THRESHOLD`.
    pub outliers: Vec<usize>,
}

/// The result of a one-sided test of H1 "a is smaller than b".
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OneSided {
    /// mean(a) − mean(b) (for paired samples, the mean of the differences).
    pub mean_diff: f64,
    /// The t statistic. ±∞ when the differences have no spread at all.
    pub t: f64,
    /// Degrees of freedom (n − 1 paired; Welch–Satterthwaite for two samples).
    pub df: f64,
    /// P(T ≤ t) under H0: small means a is credibly smaller than b.
    pub p_value: f64,
}

/// Arithmetic mean; NaN for an empty slice.
pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample variance (n − 1 denominator); 0 for fewer than two values.
pub fn variance(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64
}

/// Median; NaN for an empty slice. NaNs in the input sort last.
pub(crate) fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The `p` quantile of Student's t with `df` degrees of freedom (e.g. `p = 0.975` for a 95%
/// two-sided interval). `None` when `df` is not positive.
pub fn t_quantile(p: f64, df: f64) -> Option<f64> {
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    Some(t.inverse_cdf(p))
}

/// The `p` quantile of the standard normal distribution (e.g. 1.96 at `p = 0.975`).
pub fn normal_quantile(p: f64) -> f64 {
    statrs::distribution::Normal::standard().inverse_cdf(p)
}

/// P(T ≤ t) for Student's t with `df` degrees of freedom.
fn t_cdf(t: f64, df: f64) -> Option<f64> {
    if t == f64::NEG_INFINITY {
        return Some(0.0);
    }
    if t == f64::INFINITY {
        return Some(1.0);
    }
    Some(StudentsT::new(0.0, 1.0, df).ok()?.cdf(t))
}

/// Describes a sample. `None` for an empty sample or one containing a non-finite value.
pub fn summarize(xs: &[f64]) -> Option<Summary> {
    if xs.is_empty() || xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let n = xs.len();
    let m = mean(xs);
    let sd = variance(xs).sqrt();
    let ci95 = if n < 2 {
        (m, m)
    } else {
        let h = t_quantile(0.975, (n - 1) as f64)? * sd / (n as f64).sqrt();
        (m - h, m + h)
    };
    Some(Summary {
        n,
        mean: m,
        sd,
        min: xs.iter().copied().fold(f64::INFINITY, f64::min),
        max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        median: median(xs),
        ci95,
        outliers: mad_outliers(xs),
    })
}

/// Indices of outliers: |modified z-score| `0.6745 · (x − median) / MAD` above 3.5
/// (Iglewicz & Hoaglin 1993; hyperfine's `outlier_detection` uses the same score with a
/// looser bound, see [`MAD_THRESHOLD`]).
///
/// When more than half the values are identical the MAD is 0; then the mean absolute
/// deviation scaled by 1.253314 (= √(π/2), its normal-consistency factor) stands in, as IBM
/// SPSS does. If that is 0 too, all values are equal and none is an outlier.
///
/// Fewer than [`MAD_MIN_N`] values never have outliers: with 3 or 4 values the MAD rests on one
/// or two deviations and flags ordinary noise (e.g. 64.9, 65.1, 70.1 s would score 14).
pub(crate) fn mad_outliers(xs: &[f64]) -> Vec<usize> {
    if xs.len() < MAD_MIN_N {
        return Vec::new();
    }
    let med = median(xs);
    let dev: Vec<f64> = xs.iter().map(|x| (x - med).abs()).collect();
    let mad = median(&dev);
    let score: Box<dyn Fn(f64) -> f64> = if mad > 0.0 {
        Box::new(move |d| MAD_SCALE * d / mad)
    } else {
        let mean_ad = mean(&dev);
        if mean_ad <= 0.0 {
            return Vec::new();
        }
        Box::new(move |d| d / (1.253_314 * mean_ad))
    };
    dev.iter()
        .enumerate()
        .filter(|&(_, &d)| score(d) > MAD_THRESHOLD)
        .map(|(i, _)| i)
        .collect()
}

/// t and p for a difference `diff` with standard error `se` and `df` degrees of freedom.
/// A zero standard error gives t = ±∞ (p = 0 or 1) or, for no difference, t = 0, p = 0.5.
fn one_sided(diff: f64, se: f64, df: f64) -> Option<OneSided> {
    let t = if se > 0.0 {
        diff / se
    } else if diff < 0.0 {
        f64::NEG_INFINITY
    } else if diff > 0.0 {
        f64::INFINITY
    } else {
        0.0
    };
    Some(OneSided {
        mean_diff: diff,
        t,
        df,
        p_value: t_cdf(t, df)?,
    })
}

/// Paired one-sided t-test of H1: mean(a − b) < 0 (Student 1908). `a[i]` and `b[i]` are
/// the same repeat (interleaved A B A B runs). `None` unless both have the same length ≥ 2 and
/// all values are finite. df = n − 1.
pub fn paired_less(a: &[f64], b: &[f64]) -> Option<OneSided> {
    if a.len() != b.len() || a.len() < 2 {
        return None;
    }
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    if d.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let n = d.len() as f64;
    one_sided(mean(&d), (variance(&d) / n).sqrt(), n - 1.0)
}

/// Welch's one-sided t-test of H1: mean(a) < mean(b), unequal variances (Welch 1947);
/// df by the Welch–Satterthwaite equation. `None` unless each sample has ≥ 2 finite values.
pub(crate) fn welch_less(a: &[f64], b: &[f64]) -> Option<OneSided> {
    if a.len() < 2 || b.len() < 2 || a.iter().chain(b).any(|x| !x.is_finite()) {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (ua, ub) = (variance(a) / na, variance(b) / nb);
    let se2 = ua + ub;
    let df = if se2 > 0.0 {
        se2 * se2 / (ua * ua / (na - 1.0) + ub * ub / (nb - 1.0))
    } else {
        na + nb - 2.0
    };
    one_sided(mean(a) - mean(b), se2.sqrt(), df)
}

/// The improvement ratio `r = mean(base) / mean(new)` (> 1: `new` is smaller, e.g. faster)
/// with a 95% CI, as `(r, low, high)`.
///
/// The interval is t-based on ln r with a delta-method standard error, so it is
/// multiplicative and always contains r: `(r · e^(−t·se), r · e^(t·se))`.
/// - Same length n ≥ 2 (paired repeats): `z_i = base_i / mean(base) − new_i / mean(new)`,
///   `se = sd(z) / √n`, df = n − 1.
/// - Otherwise (each n ≥ 2): `u_b = var(base) / (n_b · mean(base)²)`, likewise `u_n`,
///   `se = √(u_b + u_n)`, df by Welch–Satterthwaite on `u_b`, `u_n`.
///
/// `None` when a sample has fewer than two values, a non-finite value, or a mean ≤ 0.
pub fn ratio_ci(base: &[f64], new: &[f64]) -> Option<(f64, f64, f64)> {
    if base.len() < 2 || new.len() < 2 || base.iter().chain(new).any(|x| !x.is_finite()) {
        return None;
    }
    let (mb, mn) = (mean(base), mean(new));
    if mb <= 0.0 || mn <= 0.0 {
        return None;
    }
    let r = mb / mn;
    let (se, df) = if base.len() == new.len() {
        let z: Vec<f64> = base.iter().zip(new).map(|(b, n)| b / mb - n / mn).collect();
        let n = z.len() as f64;
        ((variance(&z) / n).sqrt(), n - 1.0)
    } else {
        let (nb, nn) = (base.len() as f64, new.len() as f64);
        let ub = variance(base) / (nb * mb * mb);
        let un = variance(new) / (nn * mn * mn);
        let s2 = ub + un;
        let df = if s2 > 0.0 {
            s2 * s2 / (ub * ub / (nb - 1.0) + un * un / (nn - 1.0))
        } else {
            nb + nn - 2.0
        };
        (s2.sqrt(), df)
    };
    let h = t_quantile(0.975, df)? * se;
    Some((r, r * (-h).exp(), r * h.exp()))
}

/// Geometric mean `exp(mean(ln x))`. NaN for an empty slice or any value ≤ 0.
pub(crate) fn geomean(xs: &[f64]) -> f64 {
    if xs.is_empty() || xs.iter().any(|&x| x <= 0.0) {
        return f64::NAN;
    }
    (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Student's (1908) sleep data, as in R's `sleep` data set: extra hours of sleep under two
    /// drugs for the same ten patients.
    const SLEEP1: [f64; 10] = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0];
    const SLEEP2: [f64; 10] = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4];

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn summary_matches_r_t_test_on_sleep_group_1() {
        // R: t.test(sleep$extra[1:10]) -> mean 0.75, 95% CI -0.5297804 2.0297804.
        let s = summarize(&SLEEP1).unwrap();
        assert_eq!(s.n, 10);
        assert!(close(s.mean, 0.75, 1e-12));
        assert!(close(s.sd, 1.789010, 1e-6), "{}", s.sd);
        assert_eq!((s.min, s.max), (-1.6, 3.7));
        assert!(close(s.median, 0.35, 1e-12));
        assert!(close(s.ci95.0, -0.5297804, 1e-6), "{:?}", s.ci95);
        assert!(close(s.ci95.1, 2.0297804, 1e-6), "{:?}", s.ci95);
        assert!(s.outliers.is_empty());
    }

    #[test]
    fn summary_of_one_value_is_degenerate_not_nan() {
        let s = summarize(&[5.0]).unwrap();
        assert_eq!(
            (s.mean, s.sd, s.median, s.ci95),
            (5.0, 0.0, 5.0, (5.0, 5.0))
        );
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[1.0, f64::NAN]).is_none());
    }

    #[test]
    fn t_quantiles_match_tables() {
        // Standard t table: t(0.975, 4) = 2.776, t(0.975, 9) = 2.262, t(0.95, 9) = 1.833.
        assert!(close(t_quantile(0.975, 4.0).unwrap(), 2.776445, 1e-5));
        assert!(close(t_quantile(0.975, 9.0).unwrap(), 2.262157, 1e-5));
        assert!(close(t_quantile(0.95, 9.0).unwrap(), 1.833113, 1e-5));
    }

    #[test]
    fn paired_test_matches_r_on_sleep() {
        // R: t.test(extra ~ group, sleep, paired = TRUE): t = -4.0621, df = 9,
        // two-sided p = 0.002833, so one-sided p = 0.0014165.
        let r = paired_less(&SLEEP1, &SLEEP2).unwrap();
        assert!(close(r.mean_diff, -1.58, 1e-12));
        assert!(close(r.t, -4.0621, 1e-4), "{}", r.t);
        assert_eq!(r.df, 9.0);
        assert!(close(r.p_value, 0.0014165, 1e-6), "{}", r.p_value);
        // The other direction is not supported.
        assert!(paired_less(&SLEEP2, &SLEEP1).unwrap().p_value > 0.99);
        assert!(paired_less(&SLEEP1, &SLEEP2[..9]).is_none());
    }

    #[test]
    fn welch_test_matches_r_on_sleep() {
        // R: t.test(extra ~ group, sleep): t = -1.8608, df = 17.776, two-sided p = 0.07939.
        let r = welch_less(&SLEEP1, &SLEEP2).unwrap();
        assert!(close(r.t, -1.8608, 1e-4), "{}", r.t);
        assert!(close(r.df, 17.776, 1e-3), "{}", r.df);
        assert!(close(r.p_value, 0.07939 / 2.0, 1e-5), "{}", r.p_value);
        assert!(welch_less(&[1.0], &SLEEP2).is_none());
    }

    #[test]
    fn tests_without_spread_are_decisive_not_nan() {
        let r = paired_less(&[1.0, 2.0, 3.0], &[2.0, 3.0, 4.0]).unwrap();
        assert_eq!((r.t, r.p_value), (f64::NEG_INFINITY, 0.0));
        let r = welch_less(&[2.0, 2.0], &[2.0, 2.0]).unwrap();
        assert_eq!((r.t, r.p_value), (0.0, 0.5));
    }

    #[test]
    fn mad_outliers_hand_computed() {
        // median 10, |dev| = 0,1,1,0,0,90 -> MAD 0.5; score of 100 = 0.6745*90/0.5 = 121.4.
        // 11 and 9 score 1.349: kept.
        assert_eq!(mad_outliers(&[10.0, 11.0, 9.0, 10.0, 10.0, 100.0]), vec![5]);
        // median 10.5, |dev| 0.5,0.5,1.5,1.5,2.5,2.5 -> MAD 1.5; 13 scores 1.12 < 3.5.
        assert!(mad_outliers(&[10.0, 11.0, 12.0, 9.0, 8.0, 13.0]).is_empty());
        // MAD 0 (most values equal): the mean absolute deviation stands in.
        // dev = 0,0,0,0,10 -> meanAD 2, score of 20 = 10/(1.2533*2) = 3.99 > 3.5.
        assert_eq!(mad_outliers(&[10.0, 10.0, 10.0, 10.0, 20.0]), vec![4]);
        assert!(mad_outliers(&[3.0, 3.0, 3.0, 3.0, 3.0]).is_empty());
        // Too few values to judge.
        assert!(mad_outliers(&[64.9, 65.1, 70.1]).is_empty());
        assert!(mad_outliers(&[1.0, 1.0, 1.0, 100.0]).is_empty());
    }

    #[test]
    fn ratio_ci_hand_computed() {
        // Paired: base 4,6  new 2,3 -> r = 5/2.5 = 2; z = 4/5-2/2.5, 6/5-3/2.5 = 0, 0 -> se 0.
        let (r, lo, hi) = ratio_ci(&[4.0, 6.0], &[2.0, 3.0]).unwrap();
        assert_eq!((r, lo, hi), (2.0, 2.0, 2.0));
        // Paired with spread: base 10,12,14 (mean 12), new 5,5,5 (mean 5): r = 2.4;
        // z = -1/6, 0, 1/6; sd = 1/6; se = 1/(6√3); t(0.975,2) = 4.302653.
        let (r, lo, hi) = ratio_ci(&[10.0, 12.0, 14.0], &[5.0, 5.0, 5.0]).unwrap();
        let h = 4.302653 / (6.0 * 3f64.sqrt());
        assert!(close(r, 2.4, 1e-12));
        assert!(close(lo, 2.4 * (-h).exp(), 1e-5), "{lo}");
        assert!(close(hi, 2.4 * h.exp(), 1e-5), "{hi}");
        // Unpaired: base 10,12,14 (n 3), new 5,5,5,5: u_new = 0 -> df = n_b - 1 = 2, same se.
        let (r2, lo2, hi2) = ratio_ci(&[10.0, 12.0, 14.0], &[5.0; 4]).unwrap();
        assert!(close(r2, 2.4, 1e-12));
        let se = (4.0f64 / (3.0 * 144.0)).sqrt();
        assert!(close(lo2, 2.4 * (-4.302653 * se).exp(), 1e-5), "{lo2}");
        assert!(close(hi2, 2.4 * (4.302653 * se).exp(), 1e-5), "{hi2}");
        assert!(ratio_ci(&[1.0], &[1.0]).is_none());
        assert!(ratio_ci(&[-1.0, -2.0], &[1.0, 1.0]).is_none());
    }

    #[test]
    fn geomean_known_values() {
        assert!(close(geomean(&[1.0, 4.0, 16.0]), 4.0, 1e-12));
        assert!(close(geomean(&[2.0, 8.0]), 4.0, 1e-12));
        assert!(geomean(&[]).is_nan());
        assert!(geomean(&[1.0, 0.0]).is_nan());
    }

    proptest! {
        #[test]
        fn summary_is_ordered_and_ci_contains_mean(xs in prop::collection::vec(-1e6f64..1e6, 1..40)) {
            let s = summarize(&xs).unwrap();
            prop_assert!(s.min <= s.median && s.median <= s.max);
            prop_assert!(s.min <= s.mean + 1e-6 && s.mean <= s.max + 1e-6);
            prop_assert!(s.ci95.0 <= s.mean && s.mean <= s.ci95.1);
            prop_assert!(s.sd >= 0.0);
            prop_assert!(s.outliers.iter().all(|&i| i < xs.len()));
        }

        #[test]
        fn shifting_a_sample_shifts_mean_and_ci_only(
            xs in prop::collection::vec(0f64..1e3, 2..20), c in -1e3f64..1e3,
        ) {
            let a = summarize(&xs).unwrap();
            let ys: Vec<f64> = xs.iter().map(|x| x + c).collect();
            let b = summarize(&ys).unwrap();
            prop_assert!((b.mean - a.mean - c).abs() < 1e-6);
            prop_assert!((b.sd - a.sd).abs() < 1e-6);
            prop_assert!((b.ci95.1 - b.ci95.0 - (a.ci95.1 - a.ci95.0)).abs() < 1e-6);
            prop_assert_eq!(a.outliers, b.outliers);
        }

        #[test]
        fn ratio_ci_contains_ratio_and_inverts(
            base in prop::collection::vec(1f64..100.0, 2..10),
            new in prop::collection::vec(1f64..100.0, 2..10),
        ) {
            let (r, lo, hi) = ratio_ci(&base, &new).unwrap();
            prop_assert!(lo <= r && r <= hi);
            let (r2, lo2, hi2) = ratio_ci(&new, &base).unwrap();
            prop_assert!((r * r2 - 1.0).abs() < 1e-9);
            prop_assert!((lo * hi2 - 1.0).abs() < 1e-6 && (hi * lo2 - 1.0).abs() < 1e-6);
        }

        #[test]
        fn one_sided_p_values_are_complementary(
            a in prop::collection::vec(0f64..10.0, 3..10),
            b in prop::collection::vec(0f64..10.0, 3..10),
        ) {
            let ab = welch_less(&a, &b).unwrap();
            let ba = welch_less(&b, &a).unwrap();
            prop_assert!((0.0..=1.0).contains(&ab.p_value));
            prop_assert!((ab.p_value + ba.p_value - 1.0).abs() < 1e-9);
        }

        #[test]
        fn geomean_lies_between_min_and_max(xs in prop::collection::vec(1e-3f64..1e3, 1..20)) {
            let g = geomean(&xs);
            let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            prop_assert!(lo * (1.0 - 1e-9) <= g && g <= hi * (1.0 + 1e-9));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Added by the optimiser (tune): a paired test whose variance comes from a pooled estimate.
// ---------------------------------------------------------------------------------------------

/// Pooled within-group variance of several samples (each group: repeats of one setting), with
/// its degrees of freedom `Σ(nᵢ − 1)`. Groups with fewer than two values add nothing.
/// `None` when no group has two values or a value is not finite.
pub fn pooled_variance(groups: &[Vec<f64>]) -> Option<(f64, f64)> {
    let mut ss = 0.0;
    let mut df = 0usize;
    for g in groups.iter().filter(|g| g.len() >= 2) {
        if g.iter().any(|x| !x.is_finite()) {
            return None;
        }
        ss += variance(g) * (g.len() - 1) as f64;
        df += g.len() - 1;
    }
    (df > 0).then(|| (ss / df as f64, df as f64))
}

/// One-sided test of H1: mean(d) < 0 for paired differences `d` (interleaved A B repeats),
/// when the sd of one difference, `sd_d`, is estimated from a larger pool with `df` degrees of
/// freedom (a pooled-variance t-test: se = sd_d / √n). `None` for an empty or non-finite `d`.
pub fn paired_less_pooled(d: &[f64], sd_d: f64, df: f64) -> Option<OneSided> {
    if d.is_empty()
        || d.iter().any(|x| !x.is_finite())
        || sd_d.is_nan()
        || sd_d < 0.0
        || df.is_nan()
        || df <= 0.0
    {
        return None;
    }
    one_sided(mean(d), sd_d / (d.len() as f64).sqrt(), df)
}

/// The variance of one paired difference `a_i − b_i`, estimated from two sources and
/// combined by their degrees of freedom, as `(variance, df)`:
/// - the differences `d` themselves: `s_d²` with `n − 1` df (0 when n < 2);
/// - the two settings' own repeats `a_all`, `b_all` (every trial of each, the pairs
///   included): `s_a² + s_b²`, df by Welch–Satterthwaite (Welch 1947) on the two variances.
///
/// Both estimate the same quantity when trials are independent; the second has many more df
/// once the search has replicated the two settings, and unlike a pool over every setting it
/// holds when noise differs between settings (the seed disk: 4% vs 12%). The variances are
/// averaged weighted by df, but the df returned is the larger of the two, not their sum: the
/// sources share the pairs' trials, so adding their df would overstate the evidence. `None`
/// when neither source has a df, or any value is not finite.
pub fn paired_variance(d: &[f64], a_all: &[f64], b_all: &[f64]) -> Option<(f64, f64)> {
    if d.iter().chain(a_all).chain(b_all).any(|x| !x.is_finite()) {
        return None;
    }
    let own = (d.len() >= 2).then(|| (variance(d), (d.len() - 1) as f64));
    let arms = (a_all.len() >= 2 && b_all.len() >= 2).then(|| {
        let (va, vb) = (variance(a_all), variance(b_all));
        let (da, db) = ((a_all.len() - 1) as f64, (b_all.len() - 1) as f64);
        let v = va + vb;
        let df = if v > 0.0 {
            v * v / (va * va / da + vb * vb / db)
        } else {
            da + db
        };
        (v, df)
    });
    match (own, arms) {
        (Some((v1, d1)), Some((v2, d2))) => Some(((d1 * v1 + d2 * v2) / (d1 + d2), d1.max(d2))),
        (Some(x), None) | (None, Some(x)) => Some(x),
        (None, None) => None,
    }
}

/// [`paired_variance`] with the arms' estimate given as `(variance, df)` (e.g. a sum of
/// independent components' variances, df by Welch–Satterthwaite: [`welch_sum`]), combined
/// with the differences' own `s_d²` the same way. `None` as [`paired_variance`].
pub(crate) fn paired_variance_arms(d: &[f64], arms: Option<(f64, f64)>) -> Option<(f64, f64)> {
    if d.iter().any(|x| !x.is_finite())
        || arms.is_some_and(|(v, df)| !v.is_finite() || !df.is_finite())
    {
        return None;
    }
    let own = (d.len() >= 2).then(|| (variance(d), (d.len() - 1) as f64));
    match (own, arms) {
        (Some((v1, d1)), Some((v2, d2))) => Some(((d1 * v1 + d2 * v2) / (d1 + d2), d1.max(d2))),
        (Some(x), None) | (None, Some(x)) => Some(x),
        (None, None) => None,
    }
}

/// The variance of a sum of independent estimates, each `(variance, df)`, with its df by
/// Welch–Satterthwaite (Welch 1947): `(Σv)² / Σ(v²/df)`. `None` when empty or a df is not
/// positive.
pub(crate) fn welch_sum(parts: &[(f64, f64)]) -> Option<(f64, f64)> {
    if parts.is_empty() || parts.iter().any(|(v, df)| *df <= 0.0 || !v.is_finite()) {
        return None;
    }
    let v: f64 = parts.iter().map(|p| p.0).sum();
    let den: f64 = parts.iter().map(|(vi, di)| vi * vi / di).sum();
    let df = if den > 0.0 {
        v * v / den
    } else {
        parts.iter().map(|p| p.1).sum()
    };
    Some((v, df))
}

#[cfg(test)]
mod pooled_tests {
    use super::*;

    #[test]
    fn pooled_variance_weights_by_df() {
        // Variances 1 (df 2) and 4 (df 1): (2·1 + 1·4) / 3 = 2.
        let (v, df) =
            pooled_variance(&[vec![1.0, 2.0, 3.0], vec![0.0, 2.0 * 2f64.sqrt()], vec![5.0]])
                .unwrap();
        assert!((v - 2.0).abs() < 1e-12, "{v}");
        assert_eq!(df, 3.0);
        assert!(pooled_variance(&[vec![1.0]]).is_none());
    }

    #[test]
    fn welch_sum_adds_variances_with_satterthwaite_df() {
        // 1 (df 2) + 4 (df 1): variance 5, df 25 / (1/2 + 16/1) = 25 / 16.5.
        let (v, df) = welch_sum(&[(1.0, 2.0), (4.0, 1.0)]).unwrap();
        assert!(
            (v - 5.0).abs() < 1e-12 && (df - 25.0 / 16.5).abs() < 1e-12,
            "{v} {df}"
        );
        assert!(welch_sum(&[]).is_none());
        assert!(welch_sum(&[(1.0, 0.0)]).is_none());
        // With the differences' own variance (0.5, df 1) pooled by df as paired_variance does:
        // (1·0.5 + 1.515·5) / 2.515, and the larger df.
        let d = [0.0, 1.0];
        let (v2, df2) = paired_variance_arms(&d, Some((v, df))).unwrap();
        assert!((v2 - (0.5 + df * 5.0) / (1.0 + df)).abs() < 1e-12, "{v2}");
        assert!((df2 - df).abs() < 1e-12);
        // One pair and no arms: nothing to estimate from.
        assert!(paired_variance_arms(&[0.3], None).is_none());
        assert_eq!(
            paired_variance_arms(&[0.3], Some((2.0, 3.0))),
            Some((2.0, 3.0))
        );
    }

    #[test]
    fn paired_variance_combines_pairs_and_arms_by_df() {
        // d: var 0.5 (df 1). Arms: var 1 (df 2) and var 4 (df 1): sum 5, Welch df
        // 25 / (1/2 + 16/1) = 1.5152. Combined: (1·0.5 + 1.5152·5) / 2.5152.
        let (v, df) =
            paired_variance(&[0.0, 1.0], &[1.0, 2.0, 3.0], &[0.0, 2.0 * 2f64.sqrt()]).unwrap();
        let wdf = 25.0 / (0.5 + 16.0);
        assert!((df - wdf).abs() < 1e-9, "{df}");
        assert!((v - (0.5 + wdf * 5.0) / (1.0 + wdf)).abs() < 1e-9, "{v}");
        // One pair and one trial per arm: nothing to estimate from.
        assert!(paired_variance(&[0.1], &[1.0], &[2.0]).is_none());
        // Arms alone when there is one pair.
        let (v, _) = paired_variance(&[0.1], &[1.0, 3.0], &[1.0, 3.0]).unwrap();
        assert!((v - 4.0).abs() < 1e-12);
    }

    #[test]
    fn pooled_paired_test_matches_t() {
        // mean −0.5, se 1/√4 = 0.5, t = −1, df 10: p = P(T ≤ −1) ≈ 0.1704.
        let r = paired_less_pooled(&[-0.5, -0.5, -0.5, -0.5], 1.0, 10.0).unwrap();
        assert!((r.t + 1.0).abs() < 1e-12);
        assert!((r.p_value - 0.1704).abs() < 1e-3, "{}", r.p_value);
    }
}
