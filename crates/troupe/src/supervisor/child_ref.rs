//! [`ChildRef`]: the handle that keeps addressing "the child" across its restarts.
//!
//! Rules:
//! 1. Each successful start of the child (its `started` done) publishes the new incarnation;
//!    the handle always holds the latest one, alive or not.
//! 2. `get` and `send` use the latest incarnation only while it is alive: they never wait.
//! 3. `current(timeout)` and `ask` wait, up to their timeout, for a live incarnation: during a
//!    restart they get the next one. A child that is not restarted (temporary, terminated, a
//!    supervisor that gave up) makes them time out.
//! 4. A child supervisor's handle is a `ChildRef<SupervisorMsg>`: [`ChildRef::supervisor`] gives
//!    its current incarnation as a `SupervisorRef`, and the handles of its own children follow
//!    them across its restarts too (they are shared by every incarnation of its spec).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::server::SupervisorMsg;
use super::SupervisorRef;
use crate::error::{AskError, SendError, SendErrorKind};
use crate::{ActorId, ActorRef, ReplyTo};

/// Addresses a supervised child across restarts: each restart is a new actor with a new
/// identity, and the handle follows it. Get one from [`super::WorkerSpec::handle`].
///
/// ```
/// # #[tokio::main] async fn main() {
/// use std::time::Duration;
/// use troupe::{Actor, Ctx, ReplyTo};
/// use troupe::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
///
/// struct Echo;
/// impl Actor for Echo {
///     type Msg = (u32, ReplyTo<u32>);
///     async fn handle(&mut self, (n, r): Self::Msg, _: &mut Ctx<Self>) { r.send(n) }
/// }
/// let spec = ChildSpec::worker("echo", || Echo);
/// let echo = spec.handle();
/// let sup = supervisor::start(SupervisorSpec::new(Strategy::OneForOne).child(spec)).await.unwrap();
/// let t = Duration::from_secs(5);
/// let first = echo.current(t).await.unwrap();
/// first.kill();
/// // Waits for the restarted incarnation if the restart is under way.
/// assert_eq!(echo.ask(|r| (7, r), t).await.unwrap(), 7);
/// assert_ne!(echo.current(t).await.unwrap().id(), first.id());
/// sup.stop().await;
/// # }
/// ```
pub struct ChildRef<M>(Arc<watch::Sender<Option<ActorRef<M>>>>);

impl<M> Clone for ChildRef<M> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<M> std::fmt::Debug for ChildRef<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &*self.0.borrow() {
            Some(r) => write!(f, "ChildRef({r:?})"),
            None => f.write_str("ChildRef(not started)"),
        }
    }
}

impl<M: Send + 'static> ChildRef<M> {
    pub(crate) fn new() -> Self {
        Self(Arc::new(watch::Sender::new(None)))
    }

    /// Rule 1.
    pub(crate) fn set(&self, child: ActorRef<M>) {
        self.0.send_replace(Some(child));
    }

    /// The latest incarnation, alive or not.
    pub(crate) fn latest(&self) -> Option<ActorRef<M>> {
        self.0.borrow().clone()
    }

    /// The current incarnation, when one is alive (never waits).
    #[must_use]
    pub fn get(&self) -> Option<ActorRef<M>> {
        self.latest().filter(ActorRef::is_alive)
    }

    /// Sends to the current incarnation; `Gone` while none is alive (e.g. mid-restart).
    pub fn send(&self, msg: M) -> Result<(), SendError<M>> {
        match self.get() {
            Some(r) => r.send(msg),
            None => Err(SendError::new(SendErrorKind::Gone, Some(msg))),
        }
    }

    /// The current incarnation, waiting up to `timeout` for one while the child is being
    /// restarted; `AskError::Timeout` when none came. Needs a tokio runtime (for the timeout).
    pub async fn current(&self, timeout: Duration) -> Result<ActorRef<M>, AskError> {
        self.wait_for(timeout, |_| true).await
    }

    /// The first live incarnation that is not `previous`, waiting up to `timeout` (e.g. the one
    /// a restart brings after `previous` died).
    pub async fn current_after(&self, previous: ActorId, timeout: Duration) -> Result<ActorRef<M>, AskError> {
        self.wait_for(timeout, |r| r.id() != previous).await
    }

    async fn wait_for(&self, timeout: Duration, ok: impl Fn(&ActorRef<M>) -> bool) -> Result<ActorRef<M>, AskError> {
        let mut rx = self.0.subscribe();
        let wait = async move {
            let found = rx.wait_for(|c| c.as_ref().is_some_and(|r| r.is_alive() && ok(r))).await;
            found.ok().and_then(|r| r.clone())
        };
        match tokio::time::timeout(timeout, wait).await {
            Ok(Some(r)) => Ok(r),
            _ => Err(AskError::Timeout(timeout)),
        }
    }

    /// Request/reply with the current incarnation ([`ActorRef::ask`]), waiting for one during a
    /// restart; `timeout` covers the wait and the answer together.
    pub async fn ask<R: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M,
        timeout: Duration,
    ) -> Result<R, AskError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let r = self.current(timeout).await?;
        match r.ask(make, deadline.saturating_duration_since(tokio::time::Instant::now())).await {
            Err(AskError::Timeout(_)) => Err(AskError::Timeout(timeout)),
            other => other,
        }
    }
}

impl ChildRef<SupervisorMsg> {
    /// For a child supervisor ([`super::ChildSpec::supervisor`]): its current incarnation,
    /// waiting up to `timeout` while it is being restarted (rule 4).
    ///
    /// ```
    /// # #[tokio::main] async fn main() {
    /// use std::time::Duration;
    /// use troupe::{Actor, Ctx};
    /// use troupe::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
    /// struct W;
    /// impl Actor for W { type Msg = (); async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {} }
    ///
    /// let worker = ChildSpec::worker("w", || W);
    /// let w = worker.handle();
    /// let nested = ChildSpec::supervisor("sub", SupervisorSpec::new(Strategy::OneForOne).child(worker));
    /// let sub = nested.handle();
    /// let top = supervisor::start(SupervisorSpec::new(Strategy::OneForOne).child(nested)).await.unwrap();
    /// let t = Duration::from_secs(5);
    /// let (first_sub, first_w) = (sub.supervisor(t).await.unwrap(), w.current(t).await.unwrap());
    /// first_sub.any().kill(); // the top supervisor restarts it, and it starts a new worker
    /// let second_sub = sub.current_after(first_sub.any().id(), t).await.unwrap();
    /// let second_w = w.current_after(first_w.id(), t).await.unwrap();
    /// assert_eq!(sub.supervisor(t).await.unwrap().which_children().await.unwrap()[0].actor.as_ref().unwrap().id(), second_w.id());
    /// # let _ = second_sub;
    /// top.stop().await;
    /// # }
    /// ```
    pub async fn supervisor(&self, timeout: Duration) -> Result<SupervisorRef, AskError> {
        self.current(timeout).await.map(SupervisorRef::from_ref)
    }
}
