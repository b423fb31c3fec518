//! The lab's statistics over samples: [`Dist`] (mean, median, quartiles, p99 of a sample, used
//! by the chat analysis and its reports), [`median`] (the SCP analysis), and [`MeanCi`], the
//! mean of repeated runs with its 95% confidence interval, which every workload's sweep and
//! comparison report uses when a grid is run with `--reps N`.
//!
//! Order statistics come from [`troupe::stats`], the project's one quantile module (the
//! micro, remote and cluster benchmarks use it too): quartiles and the median interpolate
//! linearly between order statistics; p99 is the nearest rank.
//!
//! Rules of [`MeanCi`] (the tests check each):
//! 1. The mean is the arithmetic mean of the samples; `n` is their count.
//! 2. With two or more samples the interval is `mean +- t * s / sqrt(n)`, where `s` is the
//!    sample standard deviation (divisor `n - 1`) and `t` the two-sided 95% quantile of
//!    Student's t with `n - 1` degrees of freedom ([`t95`]): exact table values up to 30
//!    degrees of freedom, a Cornish-Fisher expansion beyond (error below 1e-4).
//! 3. With one sample there is no interval (`half_width` is `None`) and [`MeanCi::show`]
//!    prints the value alone, exactly as a report without repetitions did.
//! 4. No samples: no `MeanCi` at all (`None`), never a NaN in a table.

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
        troupe::stats::sort(v);
        let n = v.len();
        let q = |p: f64| troupe::stats::quantile_sorted(v, p);
        Some(Dist {
            mean: v.iter().sum::<f64>() / n as f64,
            median: q(0.5),
            min: v[0],
            max: v[n - 1],
            q1: q(0.25),
            q3: q(0.75),
            p99: troupe::stats::nearest_rank(v, 0.99),
            n,
        })
    }
}

/// The median of `v` (sorted in place): the middle value, or the mean of the two middle ones;
/// NaN when empty.
pub fn median(v: &mut [f64]) -> f64 {
    troupe::stats::sort(v);
    troupe::stats::quantile_sorted(v, 0.5)
}

/// Two-sided 95% quantiles of Student's t (the 0.975 quantile) for 1..=30 degrees of freedom.
const T95: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
    2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/// The two-sided 95% quantile of Student's t with `df` degrees of freedom (rule 2); NaN for
/// `df = 0`.
///
/// ```
/// assert_eq!(troupe_lab::stats::t95(2), 4.303);
/// assert!((troupe_lab::stats::t95(1_000_000) - 1.96).abs() < 1e-3);
/// ```
pub fn t95(df: usize) -> f64 {
    match df {
        0 => f64::NAN,
        1..=30 => T95[df - 1],
        _ => {
            // Cornish-Fisher expansion of t around the normal quantile z.
            let z: f64 = 1.959_963_985;
            let d = df as f64;
            z + (z.powi(3) + z) / (4.0 * d)
                + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * d * d)
                + (3.0 * z.powi(7) + 19.0 * z.powi(5) + 17.0 * z.powi(3) - 15.0 * z) / (384.0 * d.powi(3))
        }
    }
}

/// The mean of repeated measurements with its 95% confidence interval (rules 1-4).
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct MeanCi {
    /// Mean of the samples.
    pub mean: f64,
    /// Half the width of the 95% interval; `None` with one sample.
    pub half_width: Option<f64>,
    /// Number of samples.
    pub n: usize,
}

impl MeanCi {
    /// The mean and interval of `samples`; `None` when there are none (rule 4).
    ///
    /// ```
    /// use troupe_lab::stats::MeanCi;
    /// let ci = MeanCi::of(&[10.0, 12.0, 14.0]).unwrap();
    /// assert_eq!(ci.mean, 12.0);
    /// // s = 2, t(2 df) = 4.303: 12 +- 4.303 * 2 / sqrt(3)
    /// assert!((ci.half_width.unwrap() - 4.969).abs() < 1e-3);
    /// assert_eq!(MeanCi::of(&[5.0]).unwrap().show(1), "5.0");
    /// assert_eq!(ci.show(1), "12.0 ± 5.0");
    /// ```
    pub fn of(samples: &[f64]) -> Option<MeanCi> {
        let n = samples.len();
        if n == 0 {
            return None;
        }
        let mean = samples.iter().sum::<f64>() / n as f64;
        let half_width = (n >= 2).then(|| {
            let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            t95(n - 1) * var.sqrt() / (n as f64).sqrt()
        });
        Some(MeanCi { mean, half_width, n })
    }

    /// The lower end of the interval (the mean with one sample).
    pub fn lo(&self) -> f64 {
        self.mean - self.half_width.unwrap_or(0.0)
    }

    /// The upper end of the interval (the mean with one sample).
    pub fn hi(&self) -> f64 {
        self.mean + self.half_width.unwrap_or(0.0)
    }

    /// `mean ± half` with `prec` decimals, or the mean alone with one sample (rule 3).
    pub fn show(&self, prec: usize) -> String {
        match self.half_width {
            Some(h) => format!("{:.prec$} ± {h:.prec$}", self.mean),
            None => format!("{:.prec$}", self.mean),
        }
    }
}

/// [`MeanCi::show`] of `samples`, or `-` when there are none.
pub fn show_ci(samples: &[f64], prec: usize) -> String {
    MeanCi::of(samples).map(|c| c.show(prec)).unwrap_or_else(|| "-".into())
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
