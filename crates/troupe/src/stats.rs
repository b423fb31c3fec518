//! Order statistics of a sample of `f64`s: the one quantile module of the project. The
//! benchmarks of `troupe-micro`, `troupe-remote` and `troupe-cluster` and the reports of
//! `troupe-lab` all take their medians and percentiles from here, so a median means the same
//! thing in every figure. It lives in the core crate because that is the lowest crate all of
//! them depend on; it has no dependencies of its own.
//!
//! Definitions (the tests check each):
//! 1. [`median`]: the middle value of the sorted sample, or the mean of the two middle ones for
//!    an even count; NaN for an empty sample.
//! 2. [`quantile`]: linear interpolation between the order statistics around `q * (n - 1)`
//!    (so `quantile(s, 0.5)` is [`median`]); NaN for an empty sample.
//! 3. [`nearest_rank`]: the smallest sample with at least `p * n` samples at or below it
//!    (the usual definition of a p99 that is an observed value); NaN for an empty sample.
//!
//! Hand-written rather than `hdrhistogram`: the samples are at most a few hundred thousand
//! values already held in memory, and exact order statistics are a sort away; a histogram
//! would round them to 3 significant digits for no gain.
//!
//! ```
//! use troupe::stats;
//! assert_eq!(stats::median(&[3.0, 1.0, 2.0]), 2.0);
//! assert_eq!(stats::quantile(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.25), 2.0);
//! let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
//! stats::sort(&mut v);
//! assert_eq!(stats::nearest_rank(&v, 0.99), 99.0);
//! ```

/// Sorts a sample in place by total order (NaNs last).
pub fn sort(v: &mut [f64]) {
    v.sort_by(|a, b| a.total_cmp(b));
}

/// The median of `samples` (rule 1); the input need not be sorted.
#[must_use]
pub fn median(samples: &[f64]) -> f64 {
    let mut s = samples.to_vec();
    sort(&mut s);
    quantile_sorted(&s, 0.5)
}

/// The `q` quantile (0..=1) of `samples` by linear interpolation (rule 2); the input need not
/// be sorted.
#[must_use]
pub fn quantile(samples: &[f64], q: f64) -> f64 {
    let mut s = samples.to_vec();
    sort(&mut s);
    quantile_sorted(&s, q)
}

/// [`quantile`] of an already sorted sample (no copy).
#[must_use]
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    let x = q.clamp(0.0, 1.0) * (n - 1) as f64;
    let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (x - lo as f64)
}

/// The nearest-rank `p` percentile (0..=1) of an already sorted sample (rule 3).
#[must_use]
pub fn nearest_rank(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    let rank = ((p.clamp(0.0, 1.0) * n as f64).ceil() as usize).clamp(1, n);
    sorted[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn quantile_interpolates_and_matches_the_median() {
        let v = [10.0, 20.0, 30.0, 40.0];
        assert_eq!(quantile(&v, 0.0), 10.0);
        assert_eq!(quantile(&v, 1.0), 40.0);
        assert!((quantile(&v, 1.0 / 3.0) - 20.0).abs() < 1e-9);
        assert_eq!(quantile(&v, 0.5), median(&v));
        assert!((quantile(&v, 0.25) - 17.5).abs() < 1e-9);
        assert!(quantile(&[], 0.5).is_nan());
    }

    #[test]
    fn nearest_rank_is_an_observed_value() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(nearest_rank(&v, 0.99), 10.0);
        assert_eq!(nearest_rank(&v, 0.5), 5.0);
        assert_eq!(nearest_rank(&v, 0.0), 1.0);
        assert!(nearest_rank(&[], 0.99).is_nan());
    }
}
