//! [`Ctx`]: what a running actor can do to itself and around it: its own ref, stopping,
//! trapping exits, links, monitors, spawning children, timers and piped futures that die with it.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::AbortHandle;

use crate::any_ref::{AnyRef, Process};
use crate::cell::{Cell, Sys};
use crate::error::LinkError;
use crate::precise;
use crate::reports::Placement;
use crate::spawn::{spawn_inner, Spawn};
use crate::system::SystemInner;
use crate::{Actor, ActorId, ActorRef, Down, ExitReason, ExitSignal, MonitorId};

/// The context handed to every hook and handler of actor `A`.
pub struct Ctx<A: Actor> {
    pub(crate) cell: Arc<Cell<A::Msg>>,
    trap_exit: bool,
    /// A stop asked for with `Normal` or `Shutdown` (the usual ones), kept here so that such a
    /// stop allocates no `CtxExtra`; a reason with text goes in `extra.stop`. At most one of the
    /// two is set: the last `stop` wins. It fits in the padding after `trap_exit`.
    stop_plain: PlainStop,
    extra: Option<Box<CtxExtra>>,
}

/// A stop reason without text, for [`Ctx::stop`]'s allocation-free case.
#[derive(Clone, Copy, PartialEq, Eq)]
enum PlainStop {
    None,
    Normal,
    Shutdown,
}

#[derive(Default)]
struct CtxExtra {
    timers: Vec<AbortHandle>,
    stop: Option<ExitReason>,
    parent: Option<ActorId>,
    init_ack: Option<crate::spawn::InitAck>,
    /// A drain request being served (`cell.rs` rule 11): the reason to stop with.
    drain: Option<ExitReason>,
    /// The system it belongs to (`system.rs` rule 1); none for the default one.
    system: Option<Arc<SystemInner>>,
    /// Where it sits under a supervisor (`reports.rs` rule 5); none when unsupervised.
    placement: Option<Arc<Placement>>,
}

/// A timer started by [`Ctx::send_after`] or [`Ctx::interval`]; it dies with its actor.
#[derive(Debug)]
#[must_use = "dropping a TimerRef does not cancel the timer; keep it to cancel"]
pub struct TimerRef(AbortHandle, Option<Arc<AtomicBool>>);

impl TimerRef {
    /// Cancels the timer; a message not yet sent will not be.
    pub fn cancel(&self) {
        self.0.abort();
        if let Some(c) = &self.1 {
            c.store(true, Ordering::Release);
        }
    }
}

/// A future started by [`Ctx::pipe`]; it is cancelled when its actor stops.
#[derive(Debug)]
#[must_use = "dropping a PipeRef does not cancel the future; keep it to cancel"]
pub struct PipeRef(AbortHandle);

impl PipeRef {
    /// Cancels the future; its result, if not yet delivered, never will be.
    pub fn cancel(&self) {
        self.0.abort();
    }

    /// True once the future has finished (its message sent) or was cancelled.
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.0.is_finished()
    }
}

impl<A: Actor> Ctx<A> {
    pub(crate) fn new(
        cell: Arc<Cell<A::Msg>>,
        parent: Option<ActorId>,
        init_ack: Option<crate::spawn::InitAck>,
        system: Option<Arc<SystemInner>>,
        placement: Option<Arc<Placement>>,
    ) -> Self {
        let extra = (parent.is_some() || init_ack.is_some() || system.is_some() || placement.is_some())
            .then(|| Box::new(CtxExtra { parent, init_ack, system, placement, ..Default::default() }));
        Self { cell, trap_exit: false, stop_plain: PlainStop::None, extra }
    }

    /// Where this actor sits under a supervisor (`reports.rs` rule 5).
    pub(crate) fn placement(&self) -> Option<&Arc<Placement>> {
        self.extra.as_ref().and_then(|e| e.placement.as_ref())
    }

    pub(crate) fn system(&self) -> Option<&Arc<SystemInner>> {
        self.extra.as_ref().and_then(|e| e.system.as_ref())
    }

    fn extra(&mut self) -> &mut CtxExtra {
        self.extra.get_or_insert_with(Default::default)
    }

    /// This actor's identity.
    #[must_use]
    pub fn id(&self) -> ActorId {
        self.cell.id
    }

    /// A reference to this actor.
    #[must_use]
    pub fn myself(&self) -> ActorRef<A::Msg> {
        ActorRef::local(self.cell.clone())
    }

    /// The actor that spawned this one linked (its supervisor, for supervised children).
    #[must_use]
    pub fn parent(&self) -> Option<ActorId> {
        self.extra.as_ref().and_then(|e| e.parent)
    }

    /// Stops this actor after the current handler returns: `stopped` runs, then it exits with
    /// `reason`.
    pub fn stop(&mut self, reason: ExitReason) {
        let plain = match reason {
            ExitReason::Normal => PlainStop::Normal,
            ExitReason::Shutdown => PlainStop::Shutdown,
            other => {
                self.stop_plain = PlainStop::None;
                self.extra().stop = Some(other);
                return;
            }
        };
        self.stop_plain = plain;
        if let Some(e) = self.extra.as_mut() {
            e.stop = None;
        }
    }

    /// Stops this actor once it has handled the messages already queued
    /// ([`crate::AnyRef::drain_and_stop`]): its mailbox closes now, `stopped` runs at the end.
    pub fn drain_and_stop(&mut self, reason: ExitReason) {
        self.cell.clone().push_sys(Sys::Drain(reason));
    }

    /// The first drain request wins.
    pub(crate) fn set_drain(&mut self, reason: ExitReason) {
        self.extra().drain.get_or_insert(reason);
    }

    pub(crate) fn draining(&self) -> bool {
        self.extra.as_ref().is_some_and(|e| e.drain.is_some())
    }

    pub(crate) fn take_drain(&mut self) -> Option<ExitReason> {
        self.extra.as_mut().and_then(|e| e.drain.take())
    }

    pub(crate) fn take_stop(&mut self) -> Option<ExitReason> {
        match std::mem::replace(&mut self.stop_plain, PlainStop::None) {
            PlainStop::Normal => Some(ExitReason::Normal),
            PlainStop::Shutdown => Some(ExitReason::Shutdown),
            PlainStop::None => self.extra.as_mut().and_then(|e| e.stop.take()),
        }
    }

    pub(crate) fn take_init_ack(&mut self) -> Option<crate::spawn::InitAck> {
        self.extra.as_mut().and_then(|e| e.init_ack.take())
    }

    /// Traps exits (OTP `process_flag(trap_exit, true)`): exit signals from links arrive at
    /// [`Actor::on_exit`] instead of stopping this actor.
    pub fn trap_exit(&mut self, trap: bool) {
        self.trap_exit = trap;
    }

    /// Whether this actor traps exits.
    #[must_use]
    pub fn traps_exit(&self) -> bool {
        self.trap_exit
    }

    /// Links this actor and `other` both ways. If `other` is already dead: when trapping exits,
    /// an `ExitSignal { reason: NoProc }` arrives; otherwise `Err(LinkError::NoProc)` (OTP).
    pub fn link(&mut self, other: &AnyRef) -> Result<(), LinkError> {
        let me = AnyRef(self.cell.clone());
        let linked = other.0.add_link(me);
        tracing::trace!(target: "troupe", from = %self.id(), to = %other.id(), noproc = !linked, "link");
        if linked {
            self.cell.add_link(other.clone());
            return Ok(());
        }
        if self.trap_exit {
            let sig = ExitSignal { from: other.id(), reason: ExitReason::NoProc };
            self.cell.clone().push_sys(Sys::Exit(sig));
            Ok(())
        } else {
            Err(LinkError::NoProc(other.id()))
        }
    }

    /// Removes a link both ways (no signal is sent).
    pub fn unlink(&mut self, other: &AnyRef) {
        tracing::trace!(target: "troupe", from = %self.id(), to = %other.id(), "unlink");
        other.0.remove_link(self.id());
        self.cell.remove_link(other.id());
    }

    /// Monitors `other`: when it stops, [`Actor::on_down`] gets a [`Down`]. Monitoring an actor
    /// that is already dead delivers `Down { reason: NoProc }` at once.
    pub fn monitor(&mut self, other: &AnyRef) -> MonitorId {
        let id = MonitorId::next();
        tracing::trace!(target: "troupe", from = %self.id(), to = %other.id(), monitor = id.0, "monitor");
        if !other.0.add_monitor(id, AnyRef(self.cell.clone())) {
            let down = Down { id, actor: other.id(), reason: ExitReason::NoProc };
            self.cell.clone().push_sys(Sys::Down(down));
        }
        id
    }

    /// Removes a monitor set with [`Ctx::monitor`]. A `Down` already queued may still arrive.
    pub fn demonitor(&mut self, other: &AnyRef, id: MonitorId) {
        tracing::trace!(target: "troupe", from = %self.id(), to = %other.id(), monitor = id.0, "demonitor");
        other.0.remove_monitor(id);
    }

    /// Spawns an actor linked to this one (OTP `spawn_link`); it knows this actor as its parent.
    pub fn spawn_link<B: Actor>(&mut self, actor: B) -> ActorRef<B::Msg> {
        self.spawn_link_with(actor, Spawn::new())
    }

    /// [`Ctx::spawn_link`] with options (mailbox).
    pub fn spawn_link_with<B: Actor>(&mut self, actor: B, opts: Spawn) -> ActorRef<B::Msg> {
        let me = AnyRef(self.cell.clone());
        let child = spawn_inner(actor, opts, Some(me), None);
        self.cell.add_link(child.any());
        child
    }

    /// Sends `msg` to this actor after `delay`. The timer dies with the actor.
    ///
    /// It fires within tens of microseconds of the deadline, not tokio's whole milliseconds late:
    /// the wait runs on tokio's clock (a paused test clock is honoured) until shortly before the
    /// deadline, and the precise timer thread sends the message (see `precise.rs`). A tokio timer
    /// at the deadline backs it up, so under a paused clock (`tokio::time::pause`) the message
    /// arrives at the deadline of the paused clock too (whichever fires first sends it, once).
    pub fn send_after(&mut self, delay: Duration, msg: A::Msg) -> TimerRef {
        let me = self.myself();
        let deadline = tokio::time::Instant::now() + delay;
        let cancelled = Arc::new(AtomicBool::new(false));
        let flag = cancelled.clone();
        let rt = tokio::runtime::Handle::current();
        let slot = parking_lot::Mutex::new(Some(msg));
        let fire = Arc::new(move || {
            if flag.load(Ordering::Acquire) {
                return;
            }
            if let Some(msg) = slot.lock().take() {
                let _in_rt = rt.enter();
                let _ = me.send(msg);
            }
        });
        let task = tokio::spawn(async move {
            let at = precise::approach(deadline).await;
            let precise_fire = fire.clone();
            precise::fire_at(at, move || precise_fire());
            tokio::time::sleep_until(deadline).await;
            fire();
        });
        TimerRef(self.track(task.abort_handle()), Some(cancelled))
    }

    /// Sends a clone of `msg` to this actor every `period` (first after one period). The timer
    /// dies with the actor.
    pub fn interval(&mut self, period: Duration, msg: A::Msg) -> TimerRef
    where
        A::Msg: Clone + Sync,
    {
        let me = self.myself();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            loop {
                tick.tick().await;
                if me.send(msg.clone()).is_err() {
                    break;
                }
            }
        });
        TimerRef(self.track(task.abort_handle()), None)
    }

    /// Runs `fut` beside the actor (on its runtime) and delivers its output back to it as the
    /// message `into(output)` (pipe-to-self): the handler returns at once, the actor goes on
    /// with other messages, and the result arrives in its mailbox like any other message. The
    /// future is cancelled (dropped) when the actor stops, or with [`PipeRef::cancel`].
    ///
    /// ```
    /// # #[tokio::main] async fn main() {
    /// use std::time::Duration;
    /// use troupe::{Actor, Ctx, ReplyTo};
    /// struct Fetcher { last: Option<u32> }
    /// enum Msg { Fetch, Fetched(u32), Last(ReplyTo<Option<u32>>) }
    /// impl Actor for Fetcher {
    ///     type Msg = Msg;
    ///     async fn handle(&mut self, m: Msg, ctx: &mut Ctx<Self>) {
    ///         match m {
    ///             Msg::Fetch => {
    ///                 let _ = ctx.pipe(async { 42 }, Msg::Fetched);
    ///             }
    ///             Msg::Fetched(n) => self.last = Some(n),
    ///             Msg::Last(r) => r.send(self.last),
    ///         }
    ///     }
    /// }
    /// let f = troupe::spawn(Fetcher { last: None });
    /// f.send(Msg::Fetch).unwrap();
    /// let last = loop {
    ///     if let Some(n) = f.ask(Msg::Last, Duration::from_secs(1)).await.unwrap() { break n }
    ///     tokio::task::yield_now().await;
    /// };
    /// assert_eq!(last, 42);
    /// # }
    /// ```
    pub fn pipe<T: Send + 'static>(
        &mut self,
        fut: impl Future<Output = T> + Send + 'static,
        into: impl FnOnce(T) -> A::Msg + Send + 'static,
    ) -> PipeRef {
        let me = self.myself();
        let task = self.cell.home.spawn(async move {
            let out = fut.await;
            let _ = me.send(into(out));
        });
        PipeRef(self.track(task.abort_handle()))
    }

    fn track(&mut self, handle: AbortHandle) -> AbortHandle {
        let timers = &mut self.extra().timers;
        if timers.len() >= 16 {
            timers.retain(|t| !t.is_finished());
        }
        timers.push(handle.clone());
        handle
    }
}

impl<A: Actor> Drop for Ctx<A> {
    /// Timers and piped futures die with their actor, however it ends.
    fn drop(&mut self) {
        if let Some(e) = &self.extra {
            for t in &e.timers {
                t.abort();
            }
        }
    }
}

#[cfg(all(test, not(troupe_loom)))]
mod tests {
    use std::sync::Arc;

    use super::Ctx;
    use crate::cell::Cell;
    use crate::{Actor, ExitReason, MailboxConfig};

    struct Nop;

    impl Actor for Nop {
        type Msg = ();
        async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {}
    }

    /// `Ctx::stop` with `Normal` or `Shutdown` allocates nothing, and whatever the kinds, the
    /// last stop asked for is the one taken, once.
    #[tokio::test]
    async fn the_last_stop_wins_and_a_plain_one_allocates_nothing() {
        let home = Arc::new(tokio::runtime::Handle::current());
        let cell = Arc::new(Cell::new(MailboxConfig::default(), Vec::new(), home));
        let mut c = Ctx::<Nop>::new(cell, None, None, None, None);
        c.stop(ExitReason::Normal);
        assert!(c.extra.is_none(), "a plain stop allocated the ctx's extra part");
        assert_eq!(c.take_stop(), Some(ExitReason::Normal));
        assert_eq!(c.take_stop(), None);
        c.stop(ExitReason::Error("first".into()));
        c.stop(ExitReason::Shutdown);
        assert_eq!(c.take_stop(), Some(ExitReason::Shutdown));
        assert_eq!(c.take_stop(), None);
        c.stop(ExitReason::Normal);
        c.stop(ExitReason::Error("last".into()));
        assert_eq!(c.take_stop(), Some(ExitReason::Error("last".into())));
        assert_eq!(c.take_stop(), None);
    }

    /// The ctx is part of every idle actor's parked state: the plain stop fits in its padding.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn the_ctx_stays_three_words() {
        assert_eq!(std::mem::size_of::<Ctx<Nop>>(), 24);
    }
}
