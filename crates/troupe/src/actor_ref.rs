//! [`ActorRef`]: the typed, cloneable, location-transparent handle to an actor; [`ReplyTo`] for
//! request/reply; adapters that accept another message type.
//!
//! A local target is reached directly (no serialisation, no allocation beyond the queue slot);
//! other targets (adapters now, remote actors with `troupe-remote`) go through [`DynSender`].

use std::fmt;
use std::future::poll_fn;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::any_ref::{AnyRef, Process};
use crate::cell::Cell;
use crate::error::{AskError, SendError, SendErrorKind};
use crate::{ActorId, ExitReason};

/// A sender for targets that are not a local cell: adapters, and remote actors.
pub trait DynSender<M>: Send + Sync + 'static {
    /// Delivers or enqueues `msg`.
    fn send(&self, msg: M) -> Result<(), SendError<M>>;
    /// The underlying actor, for identity, liveness, stop/kill, links and monitors.
    fn any(&self) -> AnyRef;
    /// This sender as `Any`, so a transport can recognise its own senders (default: `None`).
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
}

/// A typed reference to an actor accepting `M`. Cheap to clone, `Send + Sync`.
pub struct ActorRef<M> {
    inner: Inner<M>,
}

enum Inner<M> {
    Local(Arc<Cell<M>>),
    Dyn(Arc<dyn DynSender<M>>),
}

impl<M> Clone for ActorRef<M> {
    fn clone(&self) -> Self {
        let inner = match &self.inner {
            Inner::Local(c) => Inner::Local(c.clone()),
            Inner::Dyn(d) => Inner::Dyn(d.clone()),
        };
        Self { inner }
    }
}

impl<M: Send + 'static> ActorRef<M> {
    pub(crate) fn local(cell: Arc<Cell<M>>) -> Self {
        Self { inner: Inner::Local(cell) }
    }

    /// A reference that sends through `sender` (used by adapters and remote references).
    pub fn from_dyn(sender: Arc<dyn DynSender<M>>) -> Self {
        Self { inner: Inner::Dyn(sender) }
    }

    /// The sender behind a non-local ref, as `Any` ([`DynSender::as_any`]); `None` for a local one.
    pub(crate) fn dyn_as_any(&self) -> Option<&dyn std::any::Any> {
        match &self.inner {
            Inner::Local(_) => None,
            Inner::Dyn(d) => d.as_any(),
        }
    }

    /// The actor's identity.
    #[must_use]
    pub fn id(&self) -> ActorId {
        match &self.inner {
            Inner::Local(c) => c.id,
            Inner::Dyn(d) => d.any().id(),
        }
    }

    /// This reference without its message type.
    #[must_use]
    pub fn any(&self) -> AnyRef {
        match &self.inner {
            Inner::Local(c) => AnyRef(c.clone()),
            Inner::Dyn(d) => d.any(),
        }
    }

    /// Sends without waiting. Fails with the message handed back when the actor has stopped
    /// or its bounded mailbox (with backpressure) is full.
    pub fn send(&self, msg: M) -> Result<(), SendError<M>> {
        match &self.inner {
            Inner::Local(c) => c.send(msg),
            Inner::Dyn(d) => d.send(msg),
        }
    }

    /// Sends, waiting for room when the bounded mailbox is full. Fails only when the actor
    /// has stopped.
    pub async fn send_wait(&self, msg: M) -> Result<(), SendError<M>> {
        let Inner::Local(cell) = &self.inner else {
            return self.send(msg);
        };
        let mut msg = Some(msg);
        poll_fn(|cx| {
            let m = msg.take().expect("send_wait polled after completion");
            match cell.send(m) {
                Ok(()) => Poll::Ready(Ok(())),
                Err(e) if e.kind() == SendErrorKind::Full => {
                    msg = e.into_inner();
                    if cell.wait_for_room(cx.waker()) {
                        Poll::Pending
                    } else {
                        cx.waker().wake_by_ref();
                        Poll::Pending
                    }
                }
                Err(e) => Poll::Ready(Err(e)),
            }
        })
        .await
    }

    /// Request/reply: builds the message around a [`ReplyTo`] and waits up to `timeout` for
    /// the answer. Fails promptly with [`AskError::Gone`] when the actor is dead or dies, and with
    /// [`AskError::Timeout`] (never `Gone`) when it is alive but did not answer in time.
    ///
    /// It may be awaited in any runtime, or outside one (e.g. `futures::executor::block_on` on a
    /// plain thread): then the timeout runs on the actor's home runtime's clock.
    pub async fn ask<R: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M,
        timeout: Duration,
    ) -> Result<R, AskError> {
        let (tx, rx) = oneshot::channel();
        self.send(make(ReplyTo::local(tx))).map_err(|e| match e.kind() {
            SendErrorKind::Full => AskError::Full,
            _ => AskError::Gone,
        })?;
        // Outside any runtime (a plain thread blocking on this future) the timeout runs on the
        // actor's home runtime's clock, so `ask` works from anywhere a `send` does.
        let home = match tokio::runtime::Handle::try_current() {
            Ok(_) => None,
            Err(_) => self.home(),
        };
        let wait = {
            let _in_home = home.as_ref().map(tokio::runtime::Handle::enter);
            tokio::time::timeout(timeout, rx)
        };
        match wait.await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) if self.is_alive() => Err(AskError::NoReply),
            Ok(Err(_)) => Err(AskError::Gone),
            Err(_) => Err(AskError::Timeout(timeout)),
        }
    }

    /// The runtime a local actor (or the local actor behind an adapter) was spawned in.
    fn home(&self) -> Option<tokio::runtime::Handle> {
        match &self.inner {
            Inner::Local(c) => Some((*c.home).clone()),
            Inner::Dyn(d) => d.any().0.home().cloned(),
        }
    }

    /// True until the actor has stopped.
    #[must_use]
    pub fn is_alive(&self) -> bool {
        match &self.inner {
            Inner::Local(c) => c.is_alive(),
            Inner::Dyn(d) => d.any().is_alive(),
        }
    }

    /// Kills it brutally (OTP `exit(Pid, kill)`): no more of its code runs.
    pub fn kill(&self) {
        self.any().kill();
    }

    /// Asks it to stop now, gracefully, with reason `Normal`: it finishes the message in hand,
    /// runs `stopped`, and drops what is still queued; see [`AnyRef::stop`].
    pub fn stop(&self) {
        self.any().stop(ExitReason::Normal);
    }

    /// Asks it to handle the messages already queued, then stop with reason `Normal`; later
    /// sends fail with `Gone`. See [`AnyRef::drain_and_stop`].
    ///
    /// ```
    /// # #[tokio::main] async fn main() {
    /// use std::sync::{Arc, atomic::{AtomicU32, Ordering}};
    /// use troupe::{Actor, Ctx, ExitReason};
    /// struct Count(Arc<AtomicU32>);
    /// impl Actor for Count {
    ///     type Msg = ();
    ///     async fn handle(&mut self, _: (), _: &mut Ctx<Self>) { self.0.fetch_add(1, Ordering::SeqCst); }
    /// }
    /// let n = Arc::new(AtomicU32::new(0));
    /// let c = troupe::spawn(Count(n.clone()));
    /// for _ in 0..3 { c.send(()).unwrap(); }
    /// c.drain_and_stop();
    /// assert!(c.send(()).is_err(), "closed at once");
    /// assert_eq!(c.terminated().await, ExitReason::Normal);
    /// assert_eq!(n.load(Ordering::SeqCst), 3, "what was queued was handled");
    /// # }
    /// ```
    pub fn drain_and_stop(&self) {
        self.any().drain_and_stop(ExitReason::Normal);
    }

    /// User messages waiting in its mailbox (not counting the one being handled); 0 for a remote
    /// actor or an adapter's target seen through a non-local ref. Routers use it
    /// (least-loaded routing).
    #[must_use]
    pub fn mailbox_len(&self) -> usize {
        match &self.inner {
            Inner::Local(c) => c.mailbox_len(),
            Inner::Dyn(_) => 0,
        }
    }

    /// Waits until it has stopped; returns why.
    pub async fn terminated(&self) -> ExitReason {
        self.any().terminated().await
    }

    /// Messages dropped by a `DropNewest`/`DropOldest` mailbox so far.
    #[must_use]
    pub fn dropped(&self) -> u64 {
        match &self.inner {
            Inner::Local(c) => c.dropped(),
            Inner::Dyn(_) => 0,
        }
    }

    /// A reference accepting `N`, mapped into `M` by `f` (Akka's message adapters).
    ///
    /// ```
    /// # #[tokio::main] async fn main() {
    /// use std::time::Duration;
    /// use troupe::{Actor, Ctx, ReplyTo};
    /// struct Log(Vec<String>);
    /// enum Msg { Line(String), Dump(ReplyTo<Vec<String>>) }
    /// impl Actor for Log {
    ///     type Msg = Msg;
    ///     async fn handle(&mut self, m: Msg, _: &mut Ctx<Self>) {
    ///         match m { Msg::Line(l) => self.0.push(l), Msg::Dump(r) => r.send(self.0.clone()) }
    ///     }
    /// }
    /// let log = troupe::spawn(Log(vec![]));
    /// let numbers = log.adapt(|n: u32| Msg::Line(n.to_string()));
    /// numbers.send(7).unwrap();
    /// assert_eq!(log.ask(Msg::Dump, Duration::from_secs(1)).await.unwrap(), vec!["7"]);
    /// # }
    /// ```
    #[must_use]
    pub fn adapt<N: Send + 'static>(&self, f: impl Fn(N) -> M + Send + Sync + 'static) -> ActorRef<N> {
        ActorRef::from_dyn(Arc::new(Adapter { target: self.clone(), f }))
    }
}

impl<M> fmt::Debug for ActorRef<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Inner::Local(c) => write!(f, "ActorRef({})", c.id),
            Inner::Dyn(_) => f.write_str("ActorRef(dyn)"),
        }
    }
}

struct Adapter<M, F> {
    target: ActorRef<M>,
    f: F,
}

impl<M: Send + 'static, N: Send + 'static, F: Fn(N) -> M + Send + Sync + 'static> DynSender<N> for Adapter<M, F> {
    fn send(&self, msg: N) -> Result<(), SendError<N>> {
        // Refused before the transformation, the message itself comes back (error.rs rule 3);
        // only a target that stops or fills up between this check and the send keeps it.
        let refusal = match &self.target.inner {
            Inner::Local(c) => c.refusal(),
            Inner::Dyn(_) => (!self.target.is_alive()).then_some(SendErrorKind::Gone),
        };
        if let Some(kind) = refusal {
            return Err(SendError::new(kind, Some(msg)));
        }
        self.target.send((self.f)(msg)).map_err(|e| SendError::new(e.kind(), None))
    }

    fn any(&self) -> AnyRef {
        self.target.any()
    }
}

/// The reply half of an `ask`: send exactly one answer.
///
/// It answers a local asker directly, or, when the `ask` came from another node, through a
/// closure the transport installed ([`ReplyTo::from_fn`]).
pub struct ReplyTo<R>(Mutex<Option<ReplyInner<R>>>);

pub(crate) enum ReplyInner<R> {
    /// An error instead of the answer: the transport refused the request (`ReplyTo::fail`).
    Local(oneshot::Sender<Result<R, AskError>>),
    Fn(Box<dyn FnOnce(R) + Send>),
}

impl<R> ReplyTo<R> {
    pub(crate) fn local(tx: oneshot::Sender<Result<R, AskError>>) -> Self {
        Self(Mutex::new(Some(ReplyInner::Local(tx))))
    }

    /// A reply handle that answers by calling `f` (transports use it for a remote asker).
    pub fn from_fn(f: impl FnOnce(R) + Send + 'static) -> Self {
        Self(Mutex::new(Some(ReplyInner::Fn(Box::new(f)))))
    }

    /// Sends the answer; a caller that gave up (timeout) is ignored.
    pub fn send(self, reply: R) {
        match self.0.into_inner() {
            Some(ReplyInner::Local(tx)) => {
                let _ = tx.send(Ok(reply));
            }
            Some(ReplyInner::Fn(f)) => f(reply),
            None => {}
        }
    }

    /// Fails the ask with `err` instead of answering it (a local asker gets it from `ask`; a
    /// handle that answers another node is dropped, and that node's ask fails there).
    pub(crate) fn fail(self, err: AskError) {
        if let Some(ReplyInner::Local(tx)) = self.0.into_inner() {
            let _ = tx.send(Err(err));
        }
    }

    /// True when the asker is no longer waiting (always false for a remote asker, which is
    /// known only when its node answers).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        match &*self.0.lock() {
            Some(ReplyInner::Local(tx)) => tx.is_closed(),
            Some(ReplyInner::Fn(_)) => false,
            None => true,
        }
    }

    /// Moves the answering half out, leaving this handle answered (for serialisation).
    pub(crate) fn take(&self) -> Option<ReplyTo<R>> {
        self.0.lock().take().map(|i| ReplyTo(Mutex::new(Some(i))))
    }
}

impl<R> fmt::Debug for ReplyTo<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ReplyTo")
    }
}
