//! A bounded wait for a state that is only seen by looking (a counter a daemon moves on its own
//! timers, a gauge read at scrape time): polls a condition until it holds or the limit passes.

use std::time::{Duration, Instant};

/// How often [`until`] looks.
pub const POLL: Duration = Duration::from_millis(10);

/// Returns once `cond` holds; panics with `what()` when it has not within `limit`.
pub async fn until(limit: Duration, mut cond: impl FnMut() -> bool, what: impl Fn() -> String) {
    let end = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < end, "not within {limit:?}: {}", what());
        tokio::time::sleep(POLL).await;
    }
}
