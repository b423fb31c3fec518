//! Spawning and running actors: the activation task.
//!
//! An actor has a tokio task only while it has work (`cell.rs`, rules 1-4). An activation task
//! runs `started` (first activation only), then takes messages, system lane first; when the
//! mailbox is empty it waits on it (a send wakes it), and when it has been idle for a sweep
//! period it parks the state in the cell and ends. Every poll first checks for a pending
//! kill and catches panics, so a kill or a panic ends the actor without running more of its code
//! and without touching any other actor.
//!
//! Activations always run on the actor's home runtime (`cell.rs`, rule 9), and an activation
//! dropped unfinished, as a runtime shutting down drops its tasks, kills the actor (rule 10).

use std::any::Any;
use std::future::{poll_fn, Future};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use tokio::sync::oneshot;

use crate::any_ref::AnyRef;
use crate::cell::{Cell, Dormant, Item, Sys};
use crate::reports::Placement;
use crate::sched::{Activation, Runnable};
use crate::{Actor, ActorError, ActorRef, Ctx, ExitReason, MailboxConfig};

/// Options for spawning an actor.
///
/// ```
/// # #[tokio::main] async fn main() {
/// use troupe::{Actor, Ctx, MailboxConfig, Spawn};
/// struct Sink;
/// impl Actor for Sink {
///     type Msg = u8;
///     async fn handle(&mut self, _: u8, _: &mut Ctx<Self>) {}
/// }
/// let r = troupe::spawn_with(Sink, Spawn::new().mailbox(MailboxConfig::bounded(8)));
/// r.send(1).unwrap();
/// # }
/// ```
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct Spawn {
    mailbox: MailboxConfig,
    name: Option<Arc<str>>,
    /// Set by a supervisor for its children (`reports.rs` rule 5).
    placement: Option<Arc<Placement>>,
}

impl Spawn {
    /// Default options: an unbounded mailbox.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the mailbox.
    pub fn mailbox(mut self, mailbox: MailboxConfig) -> Self {
        self.mailbox = mailbox;
        self
    }

    /// Names the actor, for people: crash reports carry it, and [`crate::AnyRef::name`] gives
    /// it back. Not a registered name (see [`crate::register`]), and not unique. It costs the
    /// actor a small allocation; supervised children are named by their child id.
    pub fn name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The name set with [`Spawn::name`].
    pub(crate) fn name_str(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Places the actor under a supervisor (`reports.rs` rule 5).
    pub(crate) fn placed(mut self, at: Arc<Placement>) -> Self {
        self.placement = Some(at);
        self
    }
}

/// Spawns a top-level actor on the current tokio runtime, which becomes its home: it runs
/// there whoever sends to it (a plain thread, another runtime), and dies with `Killed` when that
/// runtime shuts down (an idle actor at the next message or signal that would wake it).
///
/// # Panics
/// When called outside a tokio runtime (as `tokio::spawn` does).
pub fn spawn<A: Actor>(actor: A) -> ActorRef<A::Msg> {
    spawn_inner(actor, Spawn::new(), None, None)
}

/// [`spawn`] with options.
pub fn spawn_with<A: Actor>(actor: A, opts: Spawn) -> ActorRef<A::Msg> {
    spawn_inner(actor, opts, None, None)
}

/// Told how `started` ended: `Ok` once it completed, the actor's error when it returned one;
/// dropped without a value when it panicked or was killed first.
pub(crate) type InitAck = oneshot::Sender<Result<(), ActorError>>;

/// Spawns `actor`, linked to `link` when given, and returns a receiver told how `started`
/// ended ([`InitAck`]). Supervisors start children this way, and [`crate::start`] actors.
pub(crate) fn spawn_acked<A: Actor>(
    actor: A,
    opts: Spawn,
    link: Option<AnyRef>,
) -> (ActorRef<A::Msg>, oneshot::Receiver<Result<(), ActorError>>) {
    let (tx, rx) = oneshot::channel();
    (spawn_inner(actor, opts, link, Some(tx)), rx)
}

pub(crate) fn spawn_inner<A: Actor>(
    actor: A,
    opts: Spawn,
    link: Option<AnyRef>,
    ack: Option<InitAck>,
) -> ActorRef<A::Msg> {
    crate::reports::install_hook();
    let home = home_runtime();
    let parent = link.as_ref().map(AnyRef::id);
    let top_level = link.is_none();
    let cell = Arc::new(Cell::new(opts.mailbox, link.into_iter().collect(), home));
    crate::reports::spawned(cell.id, std::any::type_name::<A>(), opts.name.as_deref(), opts.placement.as_deref());
    if let Some(parent) = parent {
        tracing::trace!(target: "troupe", from = %parent, to = %cell.id, noproc = false, "link");
    }
    if let Some(name) = opts.name {
        cell.set_name(name);
    }
    let system = crate::system::current();
    if let Some(sys) = &system {
        // system.rs rules 1 and 4: a system shutting down takes no new actor.
        if !sys.adopt(AnyRef(cell.clone()), top_level) {
            crate::any_ref::Process::kill(cell.clone());
        }
    }
    let ctx = Ctx::new(cell.clone(), parent, ack, system, opts.placement);
    let state = Box::new(State { actor, ctx, started: false });
    start_inline(&cell, state);
    ActorRef::local(cell)
}

/// The current runtime, as an `Arc` shared with the previous spawn on this thread when that was
/// on the same runtime (so an actor holds a thin pointer to its home, not a 16-byte `Handle`).
/// The cache holds that handle (and with it the runtime's driver handles, an epoll descriptor
/// among them) until this thread spawns on another runtime or ends, as any actor of that runtime
/// still alive would.
fn home_runtime() -> Arc<tokio::runtime::Handle> {
    thread_local! {
        static LAST: std::cell::RefCell<Option<(tokio::runtime::Id, Arc<tokio::runtime::Handle>)>> =
            const { std::cell::RefCell::new(None) };
    }
    let Ok(current) = tokio::runtime::Handle::try_current() else {
        panic!(
            "troupe: spawn called outside a tokio runtime; an actor lives on the runtime it is \
             spawned in, so spawn it from a task or inside `Handle::enter`"
        )
    };
    let id = current.id();
    LAST.with_borrow_mut(|last| match last {
        Some((last_id, h)) if *last_id == id => h.clone(),
        _ => {
            let h = Arc::new(current);
            *last = Some((id, h.clone()));
            h
        }
    })
}

/// Runs the first activation's opening stretch on the spawner's stack: `started`, then parking.
/// When it finishes without waiting, the actor parks without ever having had a task (a million
/// idle actors cost no task memory and no allocator churn). When it waits, the same future
/// moves into a task, whose first poll registers the real waker.
fn start_inline<A: Actor>(cell: &Arc<Cell<A::Msg>>, state: Box<State<A>>) {
    let home = &cell.home;
    let mut act = boxed(cell, state);
    let mut cx = Context::from_waker(Waker::noop());
    // Not inside the spawner's carrier: what `started` wakes gets carriers of its own
    // (sched.rs, rule 2), and this stretch never hands off.
    if crate::sched::outside(|| act.as_mut().poll_run(&mut cx)).is_pending() {
        home.spawn(crate::sched::carrier_on(act, home));
    }
}

/// An activation as the scheduler holds it (`sched.rs`, rule 1): the actor's loop, boxed once,
/// with its cell, so it can park itself there when it hands off (`cell.rs`, rule 12).
struct Act<M, F> {
    cell: Arc<Cell<M>>,
    fut: F,
}

fn boxed<A: Actor>(cell: &Arc<Cell<A::Msg>>, state: Box<State<A>>) -> Activation {
    Box::pin(Act { cell: cell.clone(), fut: activation(cell.clone(), state) })
}

impl<M: Send + 'static, F: Future<Output = ()> + Send + 'static> Runnable for Act<M, F> {
    fn poll_run(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: `fut` is pinned whenever its `Act` is: no code moves it out of an `Act` (no
        // method hands it out by value, `Act` has no `Drop` impl), and an `Act` stays in the box
        // it was made in until it is dropped (see `park`).
        unsafe { self.map_unchecked_mut(|a| &mut a.fut) }.poll(cx)
    }

    fn park(self: Pin<Box<Self>>) -> Result<(), Activation> {
        let cell = self.cell.clone();
        // SAFETY: the box leaves the pin only to be stored whole in the cell as its dormant
        // activation; from there it is dropped in place, or pinned again unmoved by
        // `Dormant::activate` (`Box::into_pin`). The contents never move.
        let unpinned = unsafe { Pin::into_inner_unchecked(self) };
        cell.park_handed(unpinned).map_err(|back| Box::into_pin(back) as Activation)
    }

    fn released(&self) {
        self.cell.no_chains();
    }
}

impl<M: Send + 'static, F: Future<Output = ()> + Send + 'static> Dormant<M> for Act<M, F> {
    /// `cell.rs`, rule 12: the handed-off activation resumes where it stopped, on its home
    /// runtime (rule 9): in the waking carrier's slot, or in a carrier of its own.
    fn activate(self: Box<Self>, cell: &Arc<Cell<M>>) {
        crate::sched::schedule(&cell.home, Box::into_pin(self));
    }
}

struct State<A: Actor> {
    actor: A,
    ctx: Ctx<A>,
    started: bool,
}

enum Outcome {
    Parked,
    Exit(ExitReason),
    /// It exits on a link's exit signal it did not trap (`reports.rs`: not a crash).
    Linked(ExitReason),
}

impl<A: Actor> Dormant<A::Msg> for State<A> {
    /// Rule 9: on the home runtime, never the waker's. If that runtime is gone, `spawn` drops
    /// the activation at once and its guard kills the actor (rule 10).
    fn activate(self: Box<Self>, cell: &Arc<Cell<A::Msg>>) {
        crate::sched::schedule(&cell.home, boxed(cell, self));
    }

    /// A parked actor killed: its end is reported (`reports.rs` rules 5 and 6), then its state
    /// is dropped.
    fn drop_killed(self: Box<Self>) {
        let cell = &self.ctx.cell;
        let at = self.ctx.placement().map(|p| &**p);
        crate::reports::ended(cell.id, std::any::type_name::<A>(), || cell.name(), at, &ExitReason::Killed, false);
    }
}

/// Owns an activation's state until the activation takes it, and kills the actor if the
/// activation is dropped before it finished (`cell.rs`, rule 10): a runtime shutting down drops
/// its tasks, and a runtime already gone drops a task spawned on it unpolled.
struct Armed<A: Actor> {
    cell: Option<Arc<Cell<A::Msg>>>,
    state: Option<Box<State<A>>>,
    /// Where it sits, to report the end (`reports.rs` rules 5 and 6).
    at: Option<Arc<Placement>>,
}

impl<A: Actor> Armed<A> {
    fn take(&mut self) -> Box<State<A>> {
        self.state.take().expect("an activation starts armed")
    }

    /// The activation finished: the actor parked or died the ordinary way.
    fn disarm(&mut self) {
        self.cell = None;
    }
}

impl<A: Actor> Drop for Armed<A> {
    fn drop(&mut self) {
        if let Some(cell) = self.cell.take() {
            // The state goes first, as at any death (rule 7).
            drop(self.state.take());
            let (id, reason) = (cell.id, ExitReason::Killed);
            crate::reports::ended(id, std::any::type_name::<A>(), || cell.name(), self.at.as_deref(), &reason, false);
            cell.die(reason);
        }
    }
}

fn activation<A: Actor>(cell: Arc<Cell<A::Msg>>, state: Box<State<A>>) -> impl Future<Output = ()> + Send {
    let at = state.ctx.placement().cloned();
    let armed = Armed::<A> { cell: Some(cell), state: Some(state), at };
    async move {
        // The first local, so when the future is dropped mid-way the running actor (a later
        // local) is dropped before the guard reports the death.
        let mut armed = armed;
        let state = armed.take();
        // The loop borrows the guard's reference to the cell until it ends.
        let cell = armed.cell.as_ref().expect("an activation starts armed");
        activate(cell, state, armed.at.as_deref()).await;
        armed.disarm();
    }
}

thread_local! {
    /// The activation being polled on this thread waits on its mailbox (or hands off): its
    /// `next_item` returned `Pending`, so that poll ends with the cell's waker already stored
    /// (or not needed). Set only by the loop in [`run`], read and reset by [`activate`] around
    /// each poll, saved and restored there so an activation polled inside another (an inline
    /// start) leaves the outer one's as it was.
    static MAILBOX_WAIT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

async fn activate<A: Actor>(cell: &Arc<Cell<A::Msg>>, state: Box<State<A>>, at: Option<&Placement>) {
    // system.rs rule 1: the actor's code runs with its system current.
    let system = state.ctx.system().cloned();
    let outcome = {
        let mut run = pin!(run(cell, state));
        let mut known: Option<Waker> = None;
        poll_fn(|cx| {
            let _in = system.as_ref().map(crate::system::enter);
            let _span = tracing::trace_span!(target: "troupe", "actor", id = %cell.id).entered();
            let _actor = crate::reports::in_actor(cell.id);
            if cell.is_killed() {
                return Poll::Ready(Outcome::Exit(ExitReason::Killed));
            }
            let outer = MAILBOX_WAIT.replace(false);
            let polled = catch_unwind(AssertUnwindSafe(|| run.as_mut().poll(cx)));
            let on_mailbox = MAILBOX_WAIT.replace(outer);
            match polled {
                Ok(Poll::Pending) if on_mailbox => {
                    // Waiting: `next_item` stored this poll's waker under the lock; handing
                    // off: it left the cell's waker as it was (the carrier parks the
                    // activation, and the next carrier's waker is another). So `known` is
                    // still the cell's waker when it is this poll's, and may not be otherwise.
                    if !known.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        known = None;
                    }
                    Poll::Pending
                }
                Ok(Poll::Pending) => {
                    // Rule 6: the actor awaits something else, so a kill must be able to wake
                    // this task. Stored after the poll, under the lock, where a kill that came
                    // meanwhile is seen: then the task is polled again at once and stops.
                    // `known` is the cell's waker, as only `next_item` (which resets `known`,
                    // above) and this store change it while the activation lives.
                    if !known.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        if !cell.set_waker(cx.waker()) {
                            cx.waker().wake_by_ref();
                        }
                        known = Some(cx.waker().clone());
                    }
                    Poll::Pending
                }
                Ok(ready) => ready,
                Err(panic) => Poll::Ready(Outcome::Exit(ExitReason::Panicked(panic_message(&*panic)))),
            }
        })
        .await
        // The actor's state is dropped here, before anyone is told of its death.
    };
    let (reason, linked) = match outcome {
        Outcome::Parked => return,
        Outcome::Exit(reason) => (reason, false),
        Outcome::Linked(reason) => (reason, true),
    };
    crate::reports::ended(cell.id, std::any::type_name::<A>(), || cell.name(), at, &reason, linked);
    cell.die(reason);
}

async fn run<A: Actor>(cell: &Arc<Cell<A::Msg>>, mut st: Box<State<A>>) -> Outcome {
    if !st.started {
        st.started = true;
        let ack = st.ctx.take_init_ack();
        if let Err(e) = st.actor.started(&mut st.ctx).await {
            let reason = ExitReason::Error(crate::error_chain(&e));
            if let Some(ack) = ack {
                let _ = ack.send(Err(e));
            }
            return Outcome::Exit(reason);
        }
        if let Some(ack) = ack {
            let _ = ack.send(Ok(()));
        }
        if let Some(reason) = st.ctx.take_stop() {
            return stop(st, reason).await;
        }
    }
    // A fresh activation first drains what woke it; once it has handled something it waits on
    // the mailbox (a send wakes it), until the sweeper asks it to park (cell.rs, rule 4).
    let mut handled = false;
    let mut budget = crate::sched::POLL_BUDGET;
    let mut batch = std::collections::VecDeque::new();
    #[cfg(feature = "metrics")]
    let mut meter = crate::reports::Meter::new(st.ctx.placement().map(|p| &**p), std::any::type_name::<A>());
    loop {
        // A drain request's reason is kept in the ctx (so the task stays small): with one
        // pending, the actor stops when its mailbox is empty (cell.rs, rule 11), so it must not
        // wait on it.
        let wait = handled && !st.ctx.draining();
        let item = if wait {
            poll_fn(|cx| {
                let item = cell.next_item(&mut batch, Some(cx));
                if item.is_pending() {
                    // Straight back to `activate`'s poll: it needs no waker of its own now.
                    MAILBOX_WAIT.with(|c| c.set(true));
                }
                item
            })
            .await
        } else {
            match cell.next_item(&mut batch, None) {
                Poll::Ready(item) => item,
                Poll::Pending => unreachable!("next_item without a context never waits"),
            }
        };
        if matches!(item, Item::Empty) {
            if let Some(reason) = st.ctx.take_drain() {
                return stop(st, reason).await;
            }
        } else {
            // sched.rs, rule 4: this actor has work, so what it woke runs elsewhere.
            crate::sched::release_next();
        }
        match item {
            Item::Msg(m) => {
                handled = true;
                #[cfg(feature = "metrics")]
                meter.handled(|| cell.mailbox_len());
                #[cfg(not(feature = "trace-context"))]
                st.actor.handle(m, &mut st.ctx).await;
                #[cfg(feature = "trace-context")]
                {
                    // reports.rs rule 4: handled in a span whose parent is the sender's.
                    let span = crate::reports::handle_span(m.span.as_deref(), cell.id, std::any::type_name::<A>());
                    tracing::Instrument::instrument(st.actor.handle(m.msg, &mut st.ctx), span).await;
                }
            }
            Item::Sys(Sys::Stop(reason)) => return stop(st, reason).await,
            Item::Sys(Sys::Drain(reason)) => {
                handled = true;
                st.ctx.set_drain(reason);
            }
            Item::Sys(Sys::Exit(sig)) => {
                handled = true;
                let trapped = st.ctx.traps_exit();
                tracing::debug!(target: "troupe", from = %sig.from, to = %cell.id, reason = %sig.reason, trapped,
                    "exit signal");
                if trapped {
                    st.actor.on_exit(sig, &mut st.ctx).await;
                } else if sig.reason != ExitReason::Normal {
                    return Outcome::Linked(sig.reason);
                }
            }
            Item::Sys(Sys::Down(d)) => {
                handled = true;
                tracing::debug!(target: "troupe", from = %d.actor, to = %cell.id, monitor = d.id.0, reason = %d.reason,
                    "down");
                st.actor.on_down(d, &mut st.ctx).await;
            }
            Item::Killed => return Outcome::Exit(ExitReason::Killed),
            Item::Empty => match cell.try_hibernate(st) {
                Ok(()) => return Outcome::Parked,
                Err(back) => {
                    st = back;
                    continue;
                }
            },
        }
        if let Some(reason) = st.ctx.take_stop() {
            return stop(st, reason).await;
        }
        if crate::sched::spend(&mut budget) {
            reschedule().await;
        }
    }
}

async fn stop<A: Actor>(mut st: Box<State<A>>, reason: ExitReason) -> Outcome {
    st.actor.stopped(&reason, &mut st.ctx).await;
    Outcome::Exit(reason)
}

/// Goes to the back of the worker's run queue once, so a busy actor lets others run. (Unlike
/// `tokio::task::yield_now`, which defers the wake until the worker next polls its I/O driver, a
/// self-wake is requeued at once.)
async fn reschedule() {
    let mut yielded = false;
    poll_fn(|cx| {
        if yielded {
            return Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await;
}

pub(crate) fn panic_message(p: &(dyn Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_owned()
    }
}
