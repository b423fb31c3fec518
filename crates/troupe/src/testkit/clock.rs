//! Tokio's paused clock, for tests of timers (feature `test-util`, which turns on tokio's
//! `test-util`). In a paused runtime time moves only when the test advances it, or, when every
//! task waits, straight to the next timer: a 30 s timeout takes no real time.
//!
//! Start a test paused with `#[tokio::test(start_paused = true)]` (a current-thread runtime), or
//! build one with [`paused_runtime`]. Actor timers (`send_after`, `interval`), `ask` timeouts,
//! supervisor backoff and intensity windows, and the [`super::TestProbe`] expectations all run on
//! this clock. Messages sent from other threads are not seen by it: keep the test on the runtime.

use std::time::Duration;

/// A current-thread runtime with timers and I/O whose clock starts paused.
///
/// # Panics
/// When tokio cannot build the runtime.
#[must_use]
pub fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("troupe::testkit::clock: cannot build a paused tokio runtime")
}

/// Pauses the clock of the current (current-thread) runtime.
///
/// # Panics
/// As `tokio::time::pause`: on a multi-thread runtime, or when already paused.
pub fn pause() {
    tokio::time::pause();
}

/// Moves the paused clock forward by `by`, then lets the actors woken by it run: timers due by
/// then fire, and the messages they send are handled before this returns (up to a few hops of
/// actors messaging actors; wait on a probe for longer chains). Tokio's timers have millisecond
/// resolution: a timer may fire up to a millisecond after its deadline on the paused clock too.
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// use std::time::Duration;
/// use troupe::{Actor, ActorRef, Ctx};
/// use troupe::testkit::{clock, TestProbe};
/// /// Answers `out` one second after each message.
/// struct Later { out: ActorRef<&'static str> }
/// impl Actor for Later {
///     type Msg = &'static str;
///     async fn handle(&mut self, m: &'static str, ctx: &mut Ctx<Self>) {
///         if m == "go" { let _ = ctx.send_after(Duration::from_secs(1), "tick"); } else { let _ = self.out.send(m); }
///     }
/// }
/// let mut probe = TestProbe::new();
/// let a = troupe::spawn(Later { out: probe.actor_ref() });
/// a.send("go").unwrap();
/// clock::settle().await; // let the actor handle "go" (and arm its timer) first
/// clock::advance(Duration::from_millis(990)).await;
/// assert!(probe.drain().is_empty());
/// clock::advance(Duration::from_millis(20)).await;
/// assert_eq!(probe.drain(), vec!["tick"]);
/// # }
/// ```
pub async fn advance(by: Duration) {
    tokio::time::advance(by).await;
    settle().await;
}

/// Lets runnable tasks (actors woken by messages or timers) run before going on.
pub async fn settle() {
    for _ in 0..16 {
        tokio::task::yield_now().await;
    }
}
