//! The lab's statistics over samples: [`Dist`] (mean, median, quartiles, p99 of a sample, used
//! by the chat analysis and its reports), [`median`] (the SCP analysis), and [`MeanCi`], the
//! mean of repeated runs with its 95% confidence interval, which every workload's sweep and
//! comparison report uses when a grid is run with `--reps N`.
//!
//! Order statistics come from [`troupe::stats`], the project's one quantile module (the
//! micro, remote and cluster benchmarks use it too): quartiles and the median interpolate
//! linearly between order statistics; p99 is the nearest rank.
//!
//! Rules of a censored [`Dist`] ([`Dist::of_censored`]; the tests check each). A censored
//! sample is one whose true value is only known to be at least some bound: a client that had
//! not reconnected when the window closed took at least the time left in the window.
//! 5. Censored samples take part at their bounds, so every statistic is a lower bound of the
//!    statistic of the true values (raising a sample never lowers an order statistic).
//! 6. A statistic is exact, and reported as a number, only when every censored bound lies
//!    strictly above the order statistics it is computed from (such samples stay above them
//!    whatever their true values; an interpolated quantile rests on the order statistic
//!    above it too). Otherwise its
//!    name is in `lower_bounds` and tables show it as `>= X`, never as a number that looks
//!    measured. The mean and the largest value are lower bounds whenever anything is censored.
//! 7. `n` counts every sample, censored or not; `censored` counts the censored ones.
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

/// The `q` quantile (0..=1) of a sorted sample, interpolated linearly ([`troupe::stats`]).
pub use troupe::stats::quantile_sorted;

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
    /// Samples, censored ones included (rule 7).
    pub n: usize,
    /// Censored samples among `n` (rule 7); absent from `summary.json` when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub censored: usize,
    /// The statistics that are lower bounds (rule 6): `mean`, `median`, `min`, `max`, `q1`,
    /// `q3`, `p99`; absent from `summary.json` when every one is exact.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lower_bounds: Vec<&'static str>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
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
            censored: 0,
            lower_bounds: Vec::new(),
        })
    }

    /// Summarises the `observed` samples together with samples known only to be at least each
    /// of `censored_at` (rules 5-7); `None` when both are empty.
    ///
    /// ```
    /// use troupe_lab::stats::Dist;
    /// // Nine clients reconnected in 10-90 ms; one had not after 45 ms, when the window closed.
    /// let observed: Vec<f64> = (1..=9).map(|i| 10.0 * i as f64).collect();
    /// let d = Dist::of_censored(&observed, &[45.0]).unwrap();
    /// assert_eq!((d.n, d.censored), (10, 1));
    /// assert_eq!(d.show("q1", 1), "32.5"); // below the censored bound: exact
    /// assert_eq!(d.show("median", 1), ">= 47.5"); // the unreconnected client may lie below it
    /// assert_eq!(d.show("max", 1), ">= 90.0");
    /// ```
    pub fn of_censored(observed: &[f64], censored_at: &[f64]) -> Option<Dist> {
        let mut all: Vec<f64> = observed.iter().chain(censored_at).copied().collect();
        let mut d = Dist::of(&mut all)?;
        if censored_at.is_empty() {
            return Some(d);
        }
        d.censored = censored_at.len();
        let lowest = censored_at.iter().copied().fold(f64::INFINITY, f64::min);
        // An interpolated quantile rests on the order statistic above it as well.
        let upper = |p: f64| all[(p * (all.len() - 1) as f64).ceil() as usize];
        let governing = [
            ("mean", f64::INFINITY),
            ("median", upper(0.5)),
            ("min", d.min),
            ("max", f64::INFINITY),
            ("q1", upper(0.25)),
            ("q3", upper(0.75)),
            ("p99", d.p99),
        ];
        d.lower_bounds = governing.iter().filter(|&&(_, v)| lowest <= v).map(|&(name, _)| name).collect();
        Some(d)
    }

    /// The value of statistic `name` (`mean`, `median`, `min`, `max`, `q1`, `q3`, `p99`);
    /// NaN for another name.
    pub fn get(&self, name: &str) -> f64 {
        match name {
            "mean" => self.mean,
            "median" => self.median,
            "min" => self.min,
            "max" => self.max,
            "q1" => self.q1,
            "q3" => self.q3,
            "p99" => self.p99,
            _ => f64::NAN,
        }
    }

    /// Statistic `name` with `prec` decimals, as `>= X` when it is a lower bound (rule 6).
    pub fn show(&self, name: &str, prec: usize) -> String {
        bound_text(self.get(name), self.lower_bounds.contains(&name), prec)
    }

    /// The `latency_ms` object of a latency summary: `p50` (the median), `p99`, `mean` and
    /// `max`, each a [`json_num`] (`null` without a distribution).
    pub fn latency_json(d: Option<&Dist>) -> serde_json::Value {
        serde_json::json!({
            "p50": json_num(d.map(|d| d.median)),
            "p99": json_num(d.map(|d| d.p99)),
            "mean": json_num(d.map(|d| d.mean)),
            "max": json_num(d.map(|d| d.max)),
        })
    }

    /// The summary rows `latency p50`, `latency p99`, ... for each of `names` (`p50` is the
    /// median): `X.XXX ms`, or `-` without a distribution.
    pub fn latency_rows(d: Option<&Dist>, names: &[&str]) -> Vec<(String, String)> {
        names
            .iter()
            .map(|&name| {
                let stat = if name == "p50" { "median" } else { name };
                let v = d.map_or("-".to_string(), |d| format!("{:.3} ms", d.get(stat)));
                (format!("latency {name}"), v)
            })
            .collect()
    }

    /// `p50 X ms, p99 Y ms` with two decimals: the start of a latency run's headline.
    pub fn p50_p99_text(&self) -> String {
        format!("p50 {:.2} ms, p99 {:.2} ms", self.median, self.p99)
    }
}

/// A figure as JSON: a number, or `null` when there is none or it is not finite (no NaN in a
/// `summary.json`).
pub fn json_num(v: Option<f64>) -> serde_json::Value {
    v.filter(|x| x.is_finite()).map_or(serde_json::Value::Null, |x| serde_json::json!(x))
}

/// How long before the end of a window (or of a run) a failure must have happened to count as
/// "never recovered" and degrade the run: a client that detected a crash 4 ms before its
/// process was stopped had no time to rejoin. Such a late sample is still censored and in
/// every distribution (rules 5-7); it just does not by itself make the run `degraded`.
pub const RECOVERY_GRACE_MS: f64 = 1000.0;

/// Whether an open sample that ran `left_ms` to the run's end, which lasted `tail_ms` past the
/// window, began in the window's last [`RECOVERY_GRACE_MS`].
pub fn began_late(left_ms: f64, tail_ms: f64) -> bool {
    left_ms < RECOVERY_GRACE_MS + tail_ms
}

/// One key's failures (`starts`, sorted) each paired with the first of its recoveries (`ends`,
/// sorted by stamp) stamped at or after it and before the next failure; `None` when none came
/// (a censored sample, rules 5-7).
///
/// ```
/// let ends = [(15, "a"), (40, "b")];
/// let pairs: Vec<_> = troupe_lab::stats::close_in_order(&[10, 20, 30], &ends).collect();
/// assert_eq!(pairs, [(10, Some(&(15, "a"))), (20, None), (30, Some(&(40, "b")))]);
/// ```
pub fn close_in_order<'a, T>(
    starts: &'a [i64],
    ends: &'a [(i64, T)],
) -> impl Iterator<Item = (i64, Option<&'a (i64, T)>)> + 'a {
    starts.iter().enumerate().map(move |(i, &at)| {
        let limit = starts.get(i + 1).copied().unwrap_or(i64::MAX);
        let first = ends.partition_point(|e| e.0 < at);
        (at, ends.get(first).filter(|e| e.0 < limit))
    })
}

/// `X` or `>= X` with `prec` decimals (rule 6's display).
pub fn bound_text(v: f64, lower_bound: bool, prec: usize) -> String {
    if lower_bound {
        format!(">= {v:.prec$}")
    } else {
        format!("{v:.prec$}")
    }
}

/// Statistic `name` of a distribution as `summary.json` holds it (an object with that key and
/// perhaps `lower_bounds`), shown as [`Dist::show`] does; `-` when absent or not a number.
///
/// ```
/// let d = serde_json::json!({"p99": 812.5, "lower_bounds": ["p99", "max"]});
/// assert_eq!(troupe_lab::stats::show_dist_field(&d, "p99", 1), ">= 812.5");
/// assert_eq!(troupe_lab::stats::show_dist_field(&d, "median", 1), "-");
/// ```
pub fn show_dist_field(dist: &serde_json::Value, name: &str, prec: usize) -> String {
    let Some(v) = dist.get(name).and_then(serde_json::Value::as_f64) else {
        return "-".into();
    };
    let lower = dist
        .get("lower_bounds")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|l| l.iter().any(|x| x.as_str() == Some(name)));
    bound_text(v, lower, prec)
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
    show_mean_ci(MeanCi::of(samples), prec)
}

/// [`MeanCi::show`], or `-` without one (no samples).
pub fn show_mean_ci(c: Option<MeanCi>, prec: usize) -> String {
    c.map(|c| c.show(prec)).unwrap_or_else(|| "-".into())
}

/// The mean of the figures that are there (repetitions of a point: a failed run has none);
/// `None` when none is.
pub fn mean(v: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let xs: Vec<f64> = v.into_iter().flatten().collect();
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
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

    #[test]
    fn rule_5_censored_samples_sit_at_their_bounds() {
        let d = Dist::of_censored(&[1.0, 2.0, 3.0], &[2.5]).unwrap();
        assert_eq!(d.n, 4);
        assert_eq!(d.max, 3.0);
        assert_eq!(d.mean, (1.0 + 2.0 + 3.0 + 2.5) / 4.0);
    }

    #[test]
    fn rule_6_a_statistic_is_exact_only_below_every_censored_bound() {
        let observed: Vec<f64> = (1..=99).map(f64::from).collect();
        // One censored sample far above everything: only mean and max are bounds.
        let d = Dist::of_censored(&observed, &[1000.0]).unwrap();
        assert_eq!(d.lower_bounds, vec!["mean", "max"]);
        assert_eq!(d.show("p99", 0), "99");
        // One censored low: everything from it up is a bound, what lies below stays exact.
        let d = Dist::of_censored(&observed, &[30.0]).unwrap();
        assert!(!d.lower_bounds.contains(&"q1") && !d.lower_bounds.contains(&"min"), "{d:?}");
        assert!(d.lower_bounds.contains(&"median") && d.lower_bounds.contains(&"p99"), "{d:?}");
        // A censored bound equal to the statistic makes it a bound (the sample may lie above).
        let d = Dist::of_censored(&[1.0, 3.0], &[2.0]).unwrap();
        assert_eq!(d.show("median", 1), ">= 2.0");
    }

    #[test]
    fn rule_7_uncensored_summaries_are_unchanged() {
        let a = Dist::of(&mut [3.0, 1.0, 2.0]).unwrap();
        let b = Dist::of_censored(&[3.0, 1.0, 2.0], &[]).unwrap();
        assert_eq!(a, b);
        assert_eq!(b.censored, 0);
        assert!(b.lower_bounds.is_empty());
        assert!(Dist::of_censored(&[], &[]).is_none());
        let json = serde_json::to_value(&a).unwrap();
        assert!(json.get("censored").is_none() && json.get("lower_bounds").is_none(), "{json}");
    }
}
