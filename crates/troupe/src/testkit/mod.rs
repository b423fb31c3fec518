//! The test kit: what a test of actors needs, so it waits for events instead of sleeping.
//!
//! - [`TestProbe`]: an actor a test holds; hand its [`TestProbe::actor_ref`] to the code under
//!   test, then [`TestProbe::expect_msg`] / [`TestProbe::expect_no_msg`]; it can monitor actors
//!   and [`TestProbe::expect_down`].
//! - [`expect_terminated`], [`expect_restart`]: wait for an actor's end, or for the next
//!   incarnation of a supervised child.
//! - [`Faults`] and [`faulty`]: a reference that drops and delays sends at random, the same way
//!   for the same seed (seed 003 §2.11, unreliable delivery).
//! - `clock` (feature `test-util`): tokio's paused clock, for timers without waiting.
//!
//! The expectations panic with a message saying what was awaited, as test assertions do. Guide:
//! `docs/testing.md`.

mod faults;
mod probe;

#[cfg(feature = "test-util")]
pub mod clock;

use std::time::Duration;

pub use faults::{faulty, FaultStats, Faults};
pub use probe::TestProbe;

use crate::supervisor::ChildRef;
use crate::{ActorRef, AnyRef, ExitReason};

/// Waits up to `timeout` for `actor` to stop and returns why; panics when it is still alive.
///
/// ```
/// # #[tokio::main] async fn main() {
/// use std::time::Duration;
/// use troupe::{Actor, Ctx, ExitReason};
/// struct Idle;
/// impl Actor for Idle { type Msg = (); async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {} }
/// let a = troupe::spawn(Idle);
/// a.kill();
/// assert_eq!(troupe::testkit::expect_terminated(&a.any(), Duration::from_secs(1)).await, ExitReason::Killed);
/// # }
/// ```
pub async fn expect_terminated(actor: &AnyRef, timeout: Duration) -> ExitReason {
    match tokio::time::timeout(timeout, actor.terminated()).await {
        Ok(reason) => reason,
        Err(_) => panic!("expect_terminated: {actor:?} still alive after {timeout:?}"),
    }
}

/// Waits up to `timeout` for the supervised child behind `child` to run again as an incarnation
/// other than `previous` (after a crash, kill or restart) and returns it; panics when none came.
///
/// ```
/// # #[tokio::main] async fn main() {
/// use std::time::Duration;
/// use troupe::{Actor, Ctx};
/// use troupe::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
/// use troupe::testkit;
/// struct W;
/// impl Actor for W { type Msg = (); async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {} }
/// let spec = ChildSpec::worker("w", || W);
/// let child = spec.handle();
/// let sup = supervisor::start(SupervisorSpec::new(Strategy::OneForOne).child(spec)).await.unwrap();
/// let t = Duration::from_secs(5);
/// let first = child.current(t).await.unwrap();
/// first.kill();
/// let second = testkit::expect_restart(&child, &first, t).await;
/// assert_ne!(second.id(), first.id());
/// sup.stop().await;
/// # }
/// ```
pub async fn expect_restart<M: Send + 'static>(
    child: &ChildRef<M>,
    previous: &ActorRef<M>,
    timeout: Duration,
) -> ActorRef<M> {
    match child.current_after(previous.id(), timeout).await {
        Ok(next) => next,
        Err(_) => panic!("expect_restart: no incarnation after {previous:?} within {timeout:?}"),
    }
}
