//! The supervisors' clock (rule 4 of `server.rs`): whole seconds of one monotonic clock shared
//! by the whole process, as OTP counts restarts in whole seconds of the VM's monotonic clock
//! (`erlang:monotonic_time(second)`), not from each supervisor's start.
//!
//! Its origin is fixed once per process, the first time any supervisor (or these functions)
//! reads it. Times are tokio instants, so under a paused clock (`tokio::time::pause`) the
//! seconds follow the paused clock, and an instant before the origin falls in a negative second
//! (floor division), so every instant has exactly one second.

use std::sync::OnceLock;
use std::time::Duration;

use tokio::time::Instant;

const NANOS: u128 = 1_000_000_000;

/// The process-wide origin of the supervisors' whole seconds.
fn epoch() -> Instant {
    static EPOCH: OnceLock<std::time::Instant> = OnceLock::new();
    Instant::from_std(*EPOCH.get_or_init(std::time::Instant::now))
}

/// The whole second of the supervisors' clock that `at` falls in (rule 4): restarts in the
/// same second share it, whichever supervisor counts them.
///
/// ```
/// use std::time::Duration;
/// use troupe::supervisor::clock_second;
/// let now = tokio::time::Instant::now();
/// let s = clock_second(now);
/// assert!(clock_second(now + Duration::from_secs(1)) == s + 1);
/// ```
#[must_use]
pub fn clock_second(at: Instant) -> i64 {
    let origin = epoch();
    match at.checked_duration_since(origin) {
        Some(d) => (d.as_nanos() / NANOS) as i64,
        None => -(origin.duration_since(at).as_nanos().div_ceil(NANOS) as i64),
    }
}

/// How long from `at` until the supervisors' clock begins its next whole second: what a test
/// waits (or advances a paused clock) to put restarts at a known place within a second.
///
/// ```
/// use troupe::supervisor::{clock_second, until_next_clock_second};
/// let now = tokio::time::Instant::now();
/// let wait = until_next_clock_second(now);
/// assert!(wait > std::time::Duration::ZERO && wait <= std::time::Duration::from_secs(1));
/// assert_eq!(clock_second(now + wait), clock_second(now) + 1);
/// ```
#[must_use]
pub fn until_next_clock_second(at: Instant) -> Duration {
    let next = clock_second(at) + 1;
    let origin = epoch();
    let boundary = if next >= 0 {
        origin + Duration::from_secs(next as u64)
    } else {
        origin - Duration::from_secs(next.unsigned_abs())
    };
    boundary.duration_since(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_instant_has_one_second_and_boundaries_begin_them() {
        let origin = epoch();
        for ms in [0u64, 1, 999, 1000, 1001, 2500] {
            let at = origin + Duration::from_millis(ms);
            assert_eq!(clock_second(at), (ms / 1000) as i64, "{ms} ms after the origin");
        }
        if let Some(before) = origin.checked_sub(Duration::from_millis(1)) {
            assert_eq!(clock_second(before), -1);
            assert_eq!(until_next_clock_second(before), Duration::from_millis(1));
        }
        if let Some(before) = origin.checked_sub(Duration::from_millis(1000)) {
            assert_eq!(clock_second(before), -1, "exactly one second before is second -1");
        }
        assert_eq!(until_next_clock_second(origin + Duration::from_millis(250)), Duration::from_millis(750));
        assert_eq!(until_next_clock_second(origin), Duration::from_secs(1));
    }
}
