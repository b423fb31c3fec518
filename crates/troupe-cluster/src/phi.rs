//! The phi-accrual failure detector (Hayashibara et al.; Akka's as the reference).
//!
//! Rules:
//! 1. The detector keeps the last `max_sample_size` intervals between heartbeats of one
//!    monitored member (a sliding window), with their running sum and sum of squares.
//! 2. At time `t` after the last heartbeat, with `mean` and `std` of the window (`std` never
//!    below `min_std_dev`), phi is `-log10(1 - F(t))` where `F` is the normal distribution's
//!    CDF with mean `mean + acceptable_pause` and standard deviation `std`.
//! 3. The member is available while phi is below the threshold. Before the first heartbeat
//!    there is nothing to judge: phi is 0.
//! 4. A new detector starts with two synthetic intervals around the expected heartbeat
//!    interval (`expected ± expected/4`), so the first real gaps are judged against the
//!    configured rate rather than against nothing.

use std::collections::VecDeque;

/// One monitored member's detector. Times are milliseconds on any monotonic clock.
///
/// ```
/// use troupe_cluster::PhiDetector;
/// let mut d = PhiDetector::new(1000.0, 100.0, 3000.0, 1000);
/// for i in 0..10u64 { d.heartbeat(i as f64 * 1000.0); }
/// assert!(d.phi(9_500.0) < 1.0);          // half an interval late: fine
/// assert!(d.phi(9_000.0 + 10_000.0) > 8.0); // ten seconds of silence: unreachable
/// ```
#[derive(Clone, Debug)]
pub struct PhiDetector {
    window: VecDeque<f64>,
    max: usize,
    sum: f64,
    sum_sq: f64,
    min_std: f64,
    pause: f64,
    last: Option<f64>,
}

impl PhiDetector {
    /// A detector expecting a heartbeat every `expected_ms`, with a standard-deviation floor,
    /// an acceptable pause, and a window of `max_sample_size` intervals (at least 2).
    #[must_use]
    pub fn new(expected_ms: f64, min_std_dev_ms: f64, acceptable_pause_ms: f64, max_sample_size: usize) -> Self {
        let mut d = Self {
            window: VecDeque::new(),
            max: max_sample_size.max(2),
            sum: 0.0,
            sum_sq: 0.0,
            min_std: min_std_dev_ms.max(0.001),
            pause: acceptable_pause_ms.max(0.0),
            last: None,
        };
        let dev = expected_ms / 4.0;
        d.push(expected_ms - dev);
        d.push(expected_ms + dev);
        d
    }

    fn push(&mut self, interval: f64) {
        if self.window.len() == self.max {
            if let Some(old) = self.window.pop_front() {
                self.sum -= old;
                self.sum_sq -= old * old;
            }
        }
        self.window.push_back(interval);
        self.sum += interval;
        self.sum_sq += interval * interval;
    }

    /// Records a heartbeat arriving at `now_ms`.
    pub fn heartbeat(&mut self, now_ms: f64) {
        if let Some(last) = self.last {
            let gap = now_ms - last;
            if gap >= 0.0 {
                self.push(gap);
            }
        }
        self.last = Some(now_ms);
    }

    /// The window's mean interval.
    #[must_use]
    pub fn mean(&self) -> f64 {
        self.sum / self.window.len() as f64
    }

    /// The window's standard deviation, floored at the minimum (rule 2).
    #[must_use]
    pub fn std_dev(&self) -> f64 {
        let n = self.window.len() as f64;
        let mean = self.mean();
        let var = (self.sum_sq / n - mean * mean).max(0.0);
        var.sqrt().max(self.min_std)
    }

    /// Phi at `now_ms` (rule 2); 0 before the first heartbeat (rule 3).
    #[must_use]
    pub fn phi(&self, now_ms: f64) -> f64 {
        let Some(last) = self.last else { return 0.0 };
        let elapsed = (now_ms - last).max(0.0);
        phi(elapsed, self.mean() + self.pause, self.std_dev())
    }

    /// Whether phi at `now_ms` is below `threshold`.
    #[must_use]
    pub fn is_available(&self, now_ms: f64, threshold: f64) -> bool {
        self.phi(now_ms) < threshold
    }

    /// Intervals in the window (the two synthetic ones included).
    #[must_use]
    pub fn samples(&self) -> usize {
        self.window.len()
    }
}

/// `-log10(1 - F(t))` for the normal distribution with this mean and standard deviation,
/// computed in log space so it stays finite (and increasing) far into the tail.
#[must_use]
pub fn phi(t: f64, mean: f64, std_dev: f64) -> f64 {
    let z = (t - mean) / std_dev;
    // 1 - F(t) = erfc(z / sqrt 2) / 2.
    -(log10_erfc(z / std::f64::consts::SQRT_2) - std::f64::consts::LOG10_2)
}

/// log10(erfc(x)). For x below 5 from a Chebyshev-fitted approximation of erfc (fractional
/// error under 1.2e-7, Numerical Recipes' `erfcc`); above, from the same expression kept in
/// log space, so large x does not underflow to log10(0).
fn log10_erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    // erfc(z) = t * exp(poly) for z >= 0.
    let ln = t.ln() + poly;
    if x >= 0.0 {
        ln / std::f64::consts::LN_10
    } else {
        // erfc(-z) = 2 - erfc(z).
        (2.0 - ln.exp()).log10()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// 1 - F(t) by Simpson integration of the normal density from t to mean + 12 sd: an
    /// independent computation of the formula the detector claims (rule 2).
    fn tail_by_integration(t: f64, mean: f64, sd: f64) -> f64 {
        let hi = mean + 12.0 * sd;
        if t >= hi {
            return 0.0;
        }
        let n = 20_000;
        let h = (hi - t) / f64::from(n);
        let pdf = |x: f64| {
            let z = (x - mean) / sd;
            (-0.5 * z * z).exp() / (sd * (2.0 * std::f64::consts::PI).sqrt())
        };
        let mut s = pdf(t) + pdf(hi);
        for i in 1..n {
            let x = t + h * f64::from(i);
            s += if i % 2 == 1 { 4.0 } else { 2.0 } * pdf(x);
        }
        s * h / 3.0
    }

    #[test]
    fn phi_at_the_mean_is_log10_of_two() {
        assert!((phi(1000.0, 1000.0, 100.0) - std::f64::consts::LOG10_2).abs() < 1e-6);
    }

    #[test]
    fn no_heartbeat_yet_means_phi_zero() {
        let d = PhiDetector::new(1000.0, 100.0, 0.0, 10);
        assert_eq!(d.phi(1e9), 0.0);
    }

    #[test]
    fn the_window_slides() {
        let mut d = PhiDetector::new(100.0, 1.0, 0.0, 4);
        for i in 0..20 {
            d.heartbeat(f64::from(i) * 500.0);
        }
        assert_eq!(d.samples(), 4);
        assert!((d.mean() - 500.0).abs() < 1e-9, "old intervals left the window: {}", d.mean());
        assert!((d.std_dev() - 1.0).abs() < 1e-9, "a constant window has the floor as deviation");
    }

    proptest! {
        /// Rule 2: phi equals -log10(1 - F(t)) with F computed independently.
        #[test]
        fn phi_matches_the_formula(mean in 10.0f64..5000.0, sd in 1.0f64..1000.0, k in -3.0f64..6.0) {
            let t = mean + k * sd;
            let want = -tail_by_integration(t, mean, sd).log10();
            let got = phi(t, mean, sd);
            prop_assert!((got - want).abs() < 1e-4 * want.abs().max(1.0), "t={t} mean={mean} sd={sd}: {got} vs {want}");
        }

        /// Phi grows with silence and never is NaN or infinite.
        #[test]
        fn phi_is_monotone_and_finite(mean in 10.0f64..5000.0, sd in 1.0f64..1000.0, a in 0.0f64..1e6, b in 0.0f64..1e6) {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let (p, q) = (phi(lo, mean, sd), phi(hi, mean, sd));
            prop_assert!(p.is_finite() && q.is_finite());
            prop_assert!(p <= q + 1e-9, "phi({lo}) = {p} > phi({hi}) = {q}");
        }

        /// A detector fed regular heartbeats stays available right after each one and
        /// becomes unavailable after a silence of mean + pause + 10 sd.
        #[test]
        fn regular_heartbeats_then_silence(interval in 50.0f64..2000.0, pause in 0.0f64..3000.0, n in 3usize..50) {
            let mut d = PhiDetector::new(interval, interval / 10.0, pause, 100);
            let mut t = 0.0;
            for _ in 0..n { d.heartbeat(t); prop_assert!(d.is_available(t + interval, 8.0)); t += interval; }
            let last = t - interval;
            prop_assert!(!d.is_available(last + interval + pause + 10.0 * d.std_dev() + 1.0, 8.0));
        }
    }
}
