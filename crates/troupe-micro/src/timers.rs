//! The `timers` benchmark (issue 16): how many actor timers Troupe arms per second, and how late
//! they fire, with many armed at once. The chat workload arms one timer per client; this arms
//! one per actor, `n` of them (`--set timers.n=1000000`). It measures Troupe's own timer, so it
//! runs on `troupe` only ([`crate::Bench::runs_on`]); the actors are in `troupe_rt/timers.rs`.
//!
//! Rules:
//! 1. `n` actors are spawned (not timed), then each gets one `Arm` message. The `Arm`s are sent
//!    by one tokio task per worker thread, task `k` to actors `k`, `k + workers`, ..., so the
//!    timers are armed concurrently on every worker.
//! 2. All `n` are armed before the first is due, so `n` timers are pending at once: with `t0`
//!    the instant the first `Arm` is sent, actor `i`'s timer is due at
//!    `t0 + start + i * WINDOW / n`, where `start` = 50 ms + 4 us per timer (250 ms for 50,000,
//!    4.05 s for 1,000,000) leaves room to arm them all (the 2-core VM arms 400k-1.4M a
//!    second), and the firings spread uniformly over `WINDOW` = 1 s. A timer armed after its
//!    deadline (arming slower than 4 us a timer) is armed with no delay and counts as late as
//!    it is.
//! 3. Arm rate = `n` / (first `Arm` sent .. the last actor armed); "armed" is "`send_after`
//!    returned" (or "the sleeping task was spawned").
//! 4. Lateness = the instant the actor handles the timer's message minus the deadline, read
//!    just before arming (so an on-time timer is never seen early); reported as the median
//!    (`late_p50_us`), the nearest-rank 99th percentile (`late_p99_us`) and the maximum
//!    (`late_max_us`), in microseconds.
//! 5. Every timer fires exactly once and never early: a timer not fired within `GRACE` of the
//!    last deadline, one fired twice or one fired early fails the benchmark (an error, never a
//!    number).
//! 6. Each iteration measures two variants in turn, on the same runtime: `send_after` (Troupe's
//!    precise timer, `troupe/src/precise.rs`) and, for reference, `sleep`: a tokio task per
//!    timer that awaits `tokio::time::sleep_until(deadline)` and then sends the same message
//!    (tokio's millisecond wheel, what a timer costs without the precise end). The reference's
//!    metrics carry the prefix `sleep_`. One warm-up iteration, then the measured ones, as for
//!    every micro-benchmark.

use std::time::Duration;

use crate::bench::{Params, Record};
use crate::Error;

/// The earliest deadline after the first `Arm` is `START + n * ARM_BUDGET` (rule 2).
pub(crate) const START: Duration = Duration::from_millis(50);
/// The time each timer is given to be armed before the first is due (rule 2).
pub(crate) const ARM_BUDGET: Duration = Duration::from_micros(4);
/// The span the deadlines are spread over (rule 2).
pub(crate) const WINDOW: Duration = Duration::from_secs(1);
/// When timer `i` of `n` is due, after the first `Arm` is sent (rule 2).
pub(crate) fn due_after(i: u64, n: u64) -> Duration {
    let n32 = u32::try_from(n).unwrap_or(u32::MAX);
    START + ARM_BUDGET * n32 + WINDOW.mul_f64(i as f64 / n.max(1) as f64)
}

/// How long after the last deadline a timer that has not fired counts as lost (rule 5).
pub(crate) const GRACE: Duration = Duration::from_secs(30);
/// The most timers (and actors) one run may arm.
pub const MAX_N: u64 = 10_000_000;

/// The two timers measured (rule 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Variant {
    /// `Ctx::send_after`: tokio's wheel, then the precise thread for the last stretch.
    SendAfter,
    /// A tokio task per timer: `tokio::time::sleep_until`, then a send.
    Sleep,
}

impl Variant {
    /// The prefix of the variant's metrics.
    fn prefix(self) -> &'static str {
        match self {
            Variant::SendAfter => "",
            Variant::Sleep => "sleep_",
        }
    }
}

/// What one variant measured in one iteration.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// From the first `Arm` sent until the last actor armed (rule 3).
    pub(crate) arm: Duration,
    /// Each timer's lateness in nanoseconds (rule 4), one per actor, all fired (rule 5).
    pub(crate) late_ns: Vec<i64>,
}

/// The metrics of one variant: (name, unit, value).
fn metrics(variant: Variant, n: u64, o: &Outcome) -> Vec<(String, &'static str, f64)> {
    let mut us: Vec<f64> = o.late_ns.iter().map(|&ns| ns as f64 / 1e3).collect();
    troupe::stats::sort(&mut us);
    let round1 = |x: f64| (x * 10.0).round() / 10.0;
    let p = variant.prefix();
    vec![
        (format!("{p}arm_per_s"), "timer/s", (n as f64 / o.arm.as_secs_f64().max(1e-9)).round()),
        (format!("{p}late_p50_us"), "us", round1(troupe::stats::quantile_sorted(&us, 0.5))),
        (format!("{p}late_p99_us"), "us", round1(troupe::stats::nearest_rank(&us, 0.99))),
        (format!("{p}late_max_us"), "us", round1(us.last().copied().unwrap_or(f64::NAN))),
    ]
}

/// Runs the benchmark on Troupe: one warm-up and `reps` measured iterations, each measuring
/// both variants (rule 6); one line per metric, the median over the measured iterations.
pub(crate) fn run(p: &Params, reps: u32) -> Result<Vec<Record>, Error> {
    let n = p.get("n");
    let reps = reps.max(1);
    let mut per_iteration: Vec<Vec<(String, &'static str, f64)>> = Vec::new();
    for _ in 0..=reps {
        let mut lines = Vec::new();
        for v in [Variant::SendAfter, Variant::Sleep] {
            let o = crate::troupe_rt::timers::measure(n, v)?;
            lines.extend(metrics(v, n, &o));
        }
        per_iteration.push(lines);
    }
    let measured = &per_iteration[1..];
    let params = p.with_reps(reps);
    Ok(measured[0]
        .iter()
        .enumerate()
        .map(|(k, (metric, unit, _))| {
            let mut r = Record {
                bench: crate::bench::Bench::Timers.name().into(),
                runtime: crate::troupe_rt::NAME.into(),
                metric: metric.clone(),
                unit: (*unit).into(),
                params: params.clone(),
                ..Record::default()
            };
            r.set_samples(measured.iter().map(|it| it[k].2).collect());
            r
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_2_all_are_armed_before_the_first_is_due_and_the_firings_spread_over_the_window() {
        assert_eq!(due_after(0, 50_000), Duration::from_millis(250));
        assert_eq!(due_after(0, 1_000_000), Duration::from_millis(4050));
        assert_eq!(due_after(500_000, 1_000_000), Duration::from_millis(4550));
        assert!(due_after(999_999, 1_000_000) < Duration::from_millis(5050));
    }

    #[test]
    fn rule_4_percentiles_of_the_lateness_in_microseconds() {
        // 100 timers late 1..=100 us: median 50.5, p99 the 99th value, max the last.
        let o = Outcome { arm: Duration::from_millis(2), late_ns: (1..=100).rev().map(|u| u * 1000).collect() };
        let m = metrics(Variant::SendAfter, 100, &o);
        let names: Vec<&str> = m.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(names, ["arm_per_s", "late_p50_us", "late_p99_us", "late_max_us"]);
        let values: Vec<f64> = m.iter().map(|x| x.2).collect();
        assert_eq!(values, [50_000.0, 50.5, 99.0, 100.0]);
        let s = metrics(Variant::Sleep, 100, &o);
        assert_eq!(s[0].0, "sleep_arm_per_s", "rule 6: the reference's metrics are prefixed");
    }
}
