//! Rule 4 of `src/supervisor/server.rs` at its boundaries: OTP's whole-second counting (the
//! default, `IntensityWindow::WholeSeconds`) and the exact sliding window
//! (`IntensityWindow::Exact`). Paused clock: time moves only when the test advances it. Whole
//! seconds are those of the process-wide clock (`supervisor::clock_second`), not counted from
//! the supervisor's start: each test first moves to the start of one of its seconds.

mod common;

use std::time::Duration;

use common::log;
use common::tree::{Builder, Tree};
use tokio::time::Instant;
use troupe::supervisor::{
    clock_second, until_next_clock_second, IntensityWindow, Restart, Strategy, SupervisorError, SupervisorSpec,
};
use troupe::ExitReason;

/// Advances the paused clock to the start of the supervisors' clock's next whole second.
async fn to_next_second() {
    tokio::time::advance(until_next_clock_second(Instant::now())).await;
}

/// A supervisor (intensity 1, period 1 s) started at the start of a whole second.
async fn tree(window: IntensityWindow) -> Tree {
    to_next_second().await;
    tree_now(window).await
}

async fn tree_now(window: IntensityWindow) -> Tree {
    let spec = SupervisorSpec::new(Strategy::OneForOne).intensity(1, Duration::from_secs(1)).window(window);
    Builder::new(spec, &log()).probe("a", Restart::Permanent).start().await.unwrap()
}

async fn advance_ms(ms: u64) {
    tokio::time::advance(Duration::from_millis(ms)).await;
}

/// Kills the current child and reports whether the supervisor survived the restart.
async fn crash_survives(t: &Tree) -> bool {
    let a = t.child("a");
    a.kill();
    a.terminated().await;
    // The exit signal reached the supervisor before `terminated` answered; a call after it sees
    // the outcome, or the supervisor is gone.
    match t.sup.which_children().await {
        Ok(_) => true,
        Err(SupervisorError::Gone) => {
            assert_eq!(t.sup.terminated().await, ExitReason::Shutdown);
            false
        }
        Err(e) => panic!("unexpected {e:?}"),
    }
}

/// OTP: a restart in second 0 still counts in second 1, even 1.9 s later (more than `period`).
#[tokio::test(start_paused = true)]
async fn whole_seconds_a_restart_counts_into_the_next_second_beyond_the_period() {
    let t = tree(IntensityWindow::default()).await;
    assert!(crash_survives(&t).await, "first restart at 0.0 s");
    advance_ms(1900).await;
    assert!(!crash_survives(&t).await, "second at 1.9 s: seconds 0 and 1 are within period 1");
}

/// OTP: a restart in second 0 no longer counts in second 2, even 1.05 s later; two restarts in
/// one second do exceed intensity 1.
#[tokio::test(start_paused = true)]
async fn whole_seconds_a_restart_expires_two_seconds_on_even_if_only_just_over_the_period() {
    let t = tree(IntensityWindow::WholeSeconds).await;
    advance_ms(950).await;
    assert!(crash_survives(&t).await, "first restart at 0.95 s (second 0)");
    advance_ms(1050).await;
    assert!(crash_survives(&t).await, "second at 2.0 s (second 2): second 0 has expired");
    advance_ms(990).await;
    assert!(!crash_survives(&t).await, "third at 2.99 s: two restarts in second 2");
}

/// Rule 4: whole seconds are the process-wide clock's, not counted from the supervisor's start
/// (OTP's `erlang:monotonic_time(second)`). Started half-way through a second, restarts at x.9 s
/// and (x+2).1 s are in seconds x and x+2 and do not count together, although they are 1.2 s
/// apart and, counted from the start (0.4 s and 1.6 s), would be in seconds 0 and 1.
#[tokio::test(start_paused = true)]
async fn whole_seconds_are_the_process_clock_s_so_a_pair_across_two_boundaries_does_not_count() {
    to_next_second().await;
    let x = clock_second(Instant::now());
    advance_ms(500).await;
    let t = tree_now(IntensityWindow::WholeSeconds).await;
    advance_ms(400).await;
    assert_eq!(clock_second(Instant::now()), x);
    assert!(crash_survives(&t).await, "first restart at x.9 s");
    advance_ms(1200).await;
    assert_eq!(clock_second(Instant::now()), x + 2);
    assert!(crash_survives(&t).await, "second at (x+2).1 s: second x has expired");
}

/// Rule 4, the other way: started half-way through second x, restarts at (x+1).1 s and
/// (x+2).7 s (1.6 s apart) are in seconds x+1 and x+2 and count together; counted from the
/// supervisor's start (0.6 s and 2.2 s) they would be in seconds 0 and 2 and would not.
#[tokio::test(start_paused = true)]
async fn whole_seconds_are_the_process_clock_s_so_a_pair_in_adjacent_seconds_counts() {
    to_next_second().await;
    let x = clock_second(Instant::now());
    advance_ms(500).await;
    let t = tree_now(IntensityWindow::WholeSeconds).await;
    advance_ms(600).await;
    assert_eq!(clock_second(Instant::now()), x + 1);
    assert!(crash_survives(&t).await, "first restart at (x+1).1 s");
    advance_ms(1600).await;
    assert_eq!(clock_second(Instant::now()), x + 2);
    assert!(!crash_survives(&t).await, "second at (x+2).7 s: seconds x+1 and x+2 are within period 1");
}

/// The exact window: a restart exactly `period` old still counts.
#[tokio::test(start_paused = true)]
async fn exact_window_a_restart_exactly_period_old_still_counts() {
    let t = tree(IntensityWindow::Exact).await;
    assert!(crash_survives(&t).await);
    advance_ms(1000).await;
    assert!(!crash_survives(&t).await, "1.000 s apart: both within period 1 s");
}

/// The exact window: just over `period` old, it no longer counts (where OTP's rule still would).
#[tokio::test(start_paused = true)]
async fn exact_window_a_restart_just_over_period_old_no_longer_counts() {
    let t = tree(IntensityWindow::Exact).await;
    assert!(crash_survives(&t).await);
    advance_ms(1001).await;
    assert!(crash_survives(&t).await, "1.001 s apart: the first has left the window");
    advance_ms(999).await;
    assert!(!crash_survives(&t).await, "0.999 s after the second");
}

#[test]
fn whole_seconds_refuses_a_sub_second_period_and_says_what_to_use() {
    let spec = SupervisorSpec::new(Strategy::OneForOne).intensity(3, Duration::from_millis(1500));
    let err = spec.clone().validate().unwrap_err();
    assert!(matches!(&err, SupervisorError::InvalidSpec { field, .. } if field == "period"), "{err:?}");
    assert!(err.to_string().contains("IntensityWindow::Exact"), "{err}");
    spec.window(IntensityWindow::Exact).validate().expect("any period with the exact window");
}
