//! The lab's one place for order statistics: [`Dist`] (mean, median, quartiles, p99 of a sample,
//! used by the chat analysis and its reports) and [`median`] (the SCP analysis). Quartiles and
//! the median interpolate linearly between order statistics; p99 is the nearest rank.
//!
//! Hand-written rather than `hdrhistogram`: the lab's samples are a few thousand `f64`
//! milliseconds held in memory anyway, and exact order statistics of them are a sort away;
//! a histogram would round them (3 significant digits) for no gain.

use serde::Serialize;

/// A distribution summary (chat definition 6).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Dist {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// First quartile.
    pub q1: f64,
    /// Third quartile.
    pub q3: f64,
    /// 99th percentile (nearest rank).
    pub p99: f64,
    /// Samples.
    pub n: usize,
}

impl Dist {
    /// Summarises `v` (sorted in place); `None` when empty.
    pub fn of(v: &mut [f64]) -> Option<Dist> {
        if v.is_empty() {
            return None;
        }
        v.sort_by(|a, b| a.total_cmp(b));
        let n = v.len();
        let q = |p: f64| {
            let x = p * (n - 1) as f64;
            let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
            v[lo] + (v[hi] - v[lo]) * (x - lo as f64)
        };
        let rank = ((0.99 * n as f64).ceil() as usize).clamp(1, n);
        Some(Dist {
            mean: v.iter().sum::<f64>() / n as f64,
            median: q(0.5),
            min: v[0],
            max: v[n - 1],
            q1: q(0.25),
            q3: q(0.75),
            p99: v[rank - 1],
            n,
        })
    }
}

/// The median of `v` (sorted in place): the middle value, or the mean of the two middle ones;
/// NaN when empty.
pub fn median(v: &mut [f64]) -> f64 {
    Dist::of(v).map_or(f64::NAN, |d| d.median)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&mut []).is_nan());
    }
}
