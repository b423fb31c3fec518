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
use std::pin::Pin;
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
        home.spawn(crate::sched::carrier(act));
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

    fn home(&self) -> &Arc<tokio::runtime::Handle> {
        &self.cell.home
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

thread_local! {
    /// The activation being polled on this thread waits on its mailbox (or hands off): its
    /// `next_item` returned `Pending`, so that poll ends with the cell's waker already stored
    /// (or not needed). Set only by the loop in [`serve`], read and reset by [`Life`] around
    /// each poll, saved and restored there so an activation polled inside another (an inline
    /// start) leaves the outer one's as it was.
    static MAILBOX_WAIT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// One activation of an actor, written out by hand rather than as nested `async fn`s so it
/// holds each thing once (an activation is boxed at every wake of an idle actor, so its size
/// is paid per active actor): the loop ([`serve`]), then, when the actor stops, its `stopped`
/// ([`stop`]), each polled with the same guard (a pending kill, a panic, the actor's system
/// and span, the waker a kill needs).
///
/// While armed (`cell` is `Some`) it kills the actor if it is dropped before it finished
/// (`cell.rs`, rule 10): a runtime shutting down drops its tasks, and a runtime already gone
/// drops a task spawned on it unpolled. The state goes first, as at any death (rule 7).
struct Life<A: Actor, S, F, T> {
    cell: Option<Arc<Cell<A::Msg>>>,
    /// Where it sits, to report the end (`reports.rs` rules 5 and 6).
    at: Option<Arc<Placement>>,
    /// system.rs rule 1: the actor's code runs with its system current.
    system: Option<Arc<crate::system::SystemInner>>,
    /// The cell's waker as this activation last stored it (see `poll`).
    known: Option<Waker>,
    phase: Phase<S, T>,
    /// [`stop`] for this actor type (a function item: no bytes).
    stop: F,
}

enum Phase<S, T> {
    Serve(S),
    Stop(T),
    Done,
}

fn activation<A: Actor>(cell: Arc<Cell<A::Msg>>, state: Box<State<A>>) -> impl Future<Output = ()> + Send {
    Life {
        at: state.ctx.placement().cloned(),
        system: state.ctx.system().cloned(),
        known: None,
        phase: Phase::Serve(serve(cell.clone(), state)),
        stop: stop::<A>,
        cell: Some(cell),
    }
}

impl<A, S, F, T> Life<A, S, F, T>
where
    A: Actor,
    S: Future<Output = Ended<A>> + Send,
    F: Fn(Box<State<A>>, ExitReason) -> T + Send,
    T: Future<Output = Outcome> + Send,
{
    /// One poll of the current phase's future, guarded: a pending kill ends it unpolled
    /// (rule 6), a panic ends it with `Panicked`, and a wait on something other than the
    /// mailbox stores the waker a kill must wake.
    fn guarded<O>(
        cell: &Arc<Cell<A::Msg>>,
        known: &mut Option<Waker>,
        cx: &mut Context<'_>,
        fut: Pin<&mut impl Future<Output = O>>,
    ) -> Poll<Result<O, ExitReason>> {
        if cell.is_killed() {
            return Poll::Ready(Err(ExitReason::Killed));
        }
        let outer = MAILBOX_WAIT.replace(false);
        let polled = catch_unwind(AssertUnwindSafe(|| fut.poll(cx)));
        let on_mailbox = MAILBOX_WAIT.replace(outer);
        match polled {
            Ok(Poll::Pending) if on_mailbox => {
                // Waiting: `next_item` stored this poll's waker under the lock; handing off: it
                // left the cell's waker as it was (the carrier parks the activation, and the
                // next carrier's waker is another). So `known` is still the cell's waker when
                // it is this poll's, and may not be otherwise.
                if !known.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *known = None;
                }
                Poll::Pending
            }
            Ok(Poll::Pending) => {
                // Rule 6: the actor awaits something else, so a kill must be able to wake this
                // task. Stored after the poll, under the lock, where a kill that came meanwhile
                // is seen: then the task is polled again at once and stops. `known` is the
                // cell's waker, as only `next_item` (which resets `known`, above) and this
                // store change it while the activation lives.
                if !known.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    if !cell.set_waker(cx.waker()) {
                        cx.waker().wake_by_ref();
                    }
                    *known = Some(cx.waker().clone());
                }
                Poll::Pending
            }
            Ok(Poll::Ready(out)) => Poll::Ready(Ok(out)),
            Err(panic) => Poll::Ready(Err(ExitReason::Panicked(panic_message(&*panic)))),
        }
    }
}

impl<A, S, F, T> Future for Life<A, S, F, T>
where
    A: Actor,
    S: Future<Output = Ended<A>> + Send,
    F: Fn(Box<State<A>>, ExitReason) -> T + Send,
    T: Future<Output = Outcome> + Send,
{
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: `phase` is structurally pinned: its futures are polled only through the pins
        // made below, and are dropped in place (by assigning the next phase over them), never
        // moved out; the other fields are never pinned. `Life` has a `Drop` impl, which does not
        // move `phase` either.
        let this = unsafe { self.get_unchecked_mut() };
        let outcome = {
            // Borrowed, not cloned: a clone would be two atomic operations a poll.
            let Some(cell) = this.cell.as_ref() else {
                return Poll::Ready(());
            };
            let _in = this.system.as_ref().map(crate::system::enter);
            let _span = tracing::trace_span!(target: "troupe", "actor", id = %cell.id).entered();
            let _actor = crate::reports::in_actor(cell.id);
            loop {
                let polled = match &mut this.phase {
                    // SAFETY: see above: pinned in place.
                    Phase::Serve(s) => match Self::guarded(cell, &mut this.known, cx, unsafe { Pin::new_unchecked(s) })
                    {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Ok(Ended::Stop(st, reason))) => {
                            this.phase = Phase::Stop((this.stop)(st, reason));
                            continue;
                        }
                        Poll::Ready(Ok(Ended::Done(o))) => Ok(o),
                        Poll::Ready(Err(reason)) => Err(reason),
                    },
                    // SAFETY: as above.
                    Phase::Stop(t) => {
                        match Self::guarded(cell, &mut this.known, cx, unsafe { Pin::new_unchecked(t) }) {
                            Poll::Pending => return Poll::Pending,
                            Poll::Ready(r) => r,
                        }
                    }
                    Phase::Done => return Poll::Ready(()),
                };
                break polled.unwrap_or_else(Outcome::Exit);
            }
        };
        // The actor's state is dropped here, before anyone is told of its death.
        this.phase = Phase::Done;
        let Some(cell) = this.cell.take() else {
            return Poll::Ready(());
        };
        match outcome {
            Outcome::Parked => {}
            Outcome::Exit(reason) => end::<A>(&cell, this.at.as_deref(), reason, false),
            Outcome::Linked(reason) => end::<A>(&cell, this.at.as_deref(), reason, true),
        }
        Poll::Ready(())
    }
}

/// An actor's end, once its state is dropped: reported (`reports.rs` rules 5 and 6), then its
/// death (`cell.rs` rule 7).
fn end<A: Actor>(cell: &Arc<Cell<A::Msg>>, at: Option<&Placement>, reason: ExitReason, linked: bool) {
    crate::reports::ended(cell.id, std::any::type_name::<A>(), || cell.name(), at, &reason, linked);
    cell.die(reason);
}

impl<A: Actor, S, F, T> Drop for Life<A, S, F, T> {
    fn drop(&mut self) {
        if let Some(cell) = self.cell.take() {
            // Rule 10: dropped unfinished. The state goes first, as at any death (rule 7).
            self.phase = Phase::Done;
            end::<A>(&cell, self.at.as_deref(), ExitReason::Killed, false);
        }
    }
}

/// How [`serve`] ended: with the outcome, or with a stop to carry out (`stopped`, then the
/// exit: [`stop`], polled by [`Life`] in the loop's place).
enum Ended<A: Actor> {
    Done(Outcome),
    Stop(Box<State<A>>, ExitReason),
}

/// The activation's loop: `started` (first activation only), then the mailbox, system lane
/// first. A plain function returning an `async move` block, not an `async fn`: an `async fn`
/// keeps its arguments twice in its state (as captured, and as the locals they are moved to).
// `manual_async_fn`: see above; `blocks_in_conditions`: the `match { item }` below moves the
// item into a temporary on purpose (the test `an_activation_of_a_small_actor_stays_small`
// fails without it).
#[allow(clippy::manual_async_fn, clippy::blocks_in_conditions)]
fn serve<A: Actor>(cell: Arc<Cell<A::Msg>>, mut st: Box<State<A>>) -> impl Future<Output = Ended<A>> + Send {
    async move {
        if !st.started {
            st.started = true;
            let ack = st.ctx.take_init_ack();
            if let Err(e) = st.actor.started(&mut st.ctx).await {
                let reason = ExitReason::Error(crate::error_chain(&e));
                if let Some(ack) = ack {
                    let _ = ack.send(Err(e));
                }
                return Ended::Done(Outcome::Exit(reason));
            }
            if let Some(ack) = ack {
                let _ = ack.send(Ok(()));
            }
            if let Some(reason) = st.ctx.take_stop() {
                return Ended::Stop(st, reason);
            }
        }
        // A fresh activation first drains what woke it; once it has handled something it waits
        // on the mailbox (a send wakes it), until the sweeper asks it to park (cell.rs, rule 4).
        let mut handled = false;
        let mut budget = crate::sched::POLL_BUDGET;
        let mut batch = std::collections::VecDeque::new();
        #[cfg(feature = "metrics")]
        let mut meter = crate::reports::Meter::new(st.ctx.placement().map(|p| &**p), std::any::type_name::<A>());
        // After each item but an empty mailbox given back (below): a stop the actor asked for,
        // then the poll budget.
        let mut stepped = false;
        // A system message taken from the mailbox, handled at the top of the next turn: its
        // await is then outside the match below, whose temporary would otherwise be kept in
        // the activation's state and written and read through memory at every message. Boxed,
        // so the activation is larger by a pointer only (system messages are rare).
        let mut pending: Option<Box<Sys>> = None;
        loop {
            if stepped {
                if let Some(reason) = st.ctx.take_stop() {
                    return Ended::Stop(st, reason);
                }
                if crate::sched::spend(&mut budget) {
                    reschedule().await;
                }
            }
            stepped = true;
            if let Some(sys) = pending.take() {
                // Boxed: its future (the actor's `on_exit` or `on_down`) would otherwise take
                // room in every activation.
                if let Some(outcome) = Box::pin(system(&mut st, cell.id, *sys)).await {
                    return Ended::Done(outcome);
                }
                continue;
            }
            // A drain request's reason is kept in the ctx (so the task stays small): with one
            // pending, the actor stops when its mailbox is empty (cell.rs, rule 11), so it must
            // not wait on it.
            let wait = handled && !st.ctx.draining();
            // Where `next_item` writes a message it takes (`cell.rs`, `Item`): one write, then
            // one move out. The block ends the slot before the handler's await, so the
            // activation keeps no room for it there (a `Copy` message would leave it alive).
            let m = {
                let mut slot = None;
                let item = if wait {
                    poll_fn(|cx| {
                        let item = cell.next_item(&mut batch, &mut slot, Some(cx));
                        if item.is_pending() {
                            // Straight back to `Life`'s poll: it needs no waker of its own now.
                            MAILBOX_WAIT.with(|c| c.set(true));
                        }
                        item
                    })
                    .await
                } else {
                    match cell.next_item(&mut batch, &mut slot, None) {
                        Poll::Ready(item) => item,
                        Poll::Pending => unreachable!("next_item without a context never waits"),
                    }
                };
                // The item is moved into the match (`{ item }`): a temporary that ends with this
                // statement, so no `Item` is kept across the handler's await (the activation is
                // smaller by one).
                match { item } {
                    Item::Msg => {
                        // sched.rs, rule 4: this actor has work, so what it woke runs elsewhere.
                        crate::sched::release_next();
                        handled = true;
                    }
                    Item::Empty => {
                        if let Some(reason) = st.ctx.take_drain() {
                            return Ended::Stop(st, reason);
                        }
                        match cell.try_hibernate(st) {
                            Ok(()) => return Ended::Done(Outcome::Parked),
                            Err(back) => {
                                st = back;
                                stepped = false;
                                continue;
                            }
                        }
                    }
                    Item::Killed => {
                        crate::sched::release_next();
                        return Ended::Done(Outcome::Exit(ExitReason::Killed));
                    }
                    Item::Sys(Sys::Stop(reason)) => {
                        crate::sched::release_next();
                        return Ended::Stop(st, reason);
                    }
                    Item::Sys(sys) => {
                        crate::sched::release_next();
                        handled = true;
                        pending = Some(Box::new(sys));
                        // Straight to it at the top, before this turn's stop and budget checks.
                        stepped = false;
                        continue;
                    }
                }
                let Some(m) = slot else {
                    unreachable!("`Item::Msg` comes with its message in the slot");
                };
                m
            };
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
    }
}

/// A system message other than `Stop` (`serve` takes that one itself): a drain request is
/// noted, an exit signal is handed to `on_exit` when trapped and ends the actor when not (unless
/// `Normal`), a `Down` goes to `on_down`. The outcome when the actor ends.
async fn system<A: Actor>(st: &mut State<A>, me: crate::ActorId, sys: Sys) -> Option<Outcome> {
    match sys {
        Sys::Drain(reason) => st.ctx.set_drain(reason),
        Sys::Exit(sig) => {
            let trapped = st.ctx.traps_exit();
            tracing::debug!(target: "troupe", from = %sig.from, to = %me, reason = %sig.reason, trapped,
                "exit signal");
            if trapped {
                st.actor.on_exit(sig, &mut st.ctx).await;
            } else if sig.reason != ExitReason::Normal {
                return Some(Outcome::Linked(sig.reason));
            }
        }
        Sys::Down(d) => {
            tracing::debug!(target: "troupe", from = %d.actor, to = %me, monitor = d.id.0, reason = %d.reason,
                "down");
            st.actor.on_down(d, &mut st.ctx).await;
        }
        Sys::Stop(_) => unreachable!("serve takes a stop request itself"),
    }
    None
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

#[cfg(all(test, target_pointer_width = "64", not(feature = "metrics"), not(feature = "trace-context")))]
mod tests {
    use crate::{Actor, Ctx};

    /// The size of what `make` would return, without calling it.
    fn size_of_made<F, G: FnOnce() -> F>(_: &G) -> usize {
        std::mem::size_of::<F>()
    }

    struct Small;

    impl Actor for Small {
        type Msg = u64;
        async fn handle(&mut self, _: u64, _: &mut Ctx<Self>) {}
    }

    /// An activation is boxed at every wake of an idle actor, so its size is paid per active
    /// actor: a small actor's is 152 bytes. It was 440 as three nested `async fn`s, each holding
    /// its arguments twice, with an `Item` kept across every await and the `on_exit` /
    /// `on_down` futures inline; this test fails on that code.
    #[test]
    #[allow(unreachable_code)]
    fn an_activation_of_a_small_actor_stays_small() {
        let size = size_of_made(&|| super::activation::<Small>(unreachable!(), unreachable!()));
        assert!(size <= 160, "an activation of a small actor is {size} bytes");
    }

    /// A carrier is a tokio task, which tokio aligns to 128 bytes: with a future of at most 24
    /// bytes the task is 128 bytes, with the old `async fn` carrier (80 bytes) it was 256. Every
    /// actor waiting on its mailbox keeps one, so this is paid per recently active actor.
    #[test]
    #[allow(unreachable_code)]
    fn a_carrier_future_fits_a_128_byte_task() {
        let size = size_of_made(&|| crate::sched::carrier(unreachable!()));
        assert!(size <= 24, "a carrier future is {size} bytes");
    }
}
