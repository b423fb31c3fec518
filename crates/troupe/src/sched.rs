//! Scheduling: carriers and the run-next handoff, so a message from one actor to an idle one
//! runs the receiver on the sender's thread without a task spawn, a tokio wake or a
//! cross-thread hop.
//!
//! Rules (the design is explained in `docs/concepts.md`, "Scheduling"; tests in
//! `tests/core_sched.rs`, `tests/core_sched_chains.rs` and `tests/core_sched_batches.rs` name
//! the rule they check):
//! 1. Every activation runs inside a carrier: a tokio task that polls one actor's activation at
//!    a time. A carrier is spawned on the actor's home runtime (`cell.rs`, rule 9). An
//!    activation is boxed once and keeps its box while it moves between carriers and its cell.
//! 2. While a carrier polls, it is this thread's current carrier. An idle actor woken from
//!    inside it (a send, a system message) whose home is the carrier's runtime does not get a
//!    task of its own: its activation goes into the carrier's run-next slot. Woken from
//!    anywhere else (a plain thread, another runtime, an actor's inline start), it gets a new
//!    carrier.
//! 3. The slot holds one activation. A second one woken in the same poll takes the slot (the
//!    newest wins, as tokio's own LIFO slot does), and the one it displaces goes on top of the
//!    carrier's stack (the list rule 9's batches use): the carrier runs the slot, then the
//!    stack, newest first. So a tree of actors that spawn and message children (`skynet`,
//!    `fib`) unfolds depth first in one task, with a few hundred actors alive at a time instead
//!    of a whole level of the tree, and no task per actor. Work still spreads: when the stack
//!    holds [`SPILL`], its oldest half (the roots of the largest subtrees) goes to a carrier of
//!    its own, where another worker can take it; and what the running actor put on the stack
//!    leaves with its slot when it takes another message (rule 4). The stack, like the slot,
//!    never outlives the poll (rule 5).
//! 4. An actor that takes a message (or a system message) while the slot is full first hands
//!    the slot's activation, and what it displaced onto the stack (rule 3), to carriers of
//!    their own, so the woken actors never wait behind the sender's backlog. An actor that
//!    finds its mailbox empty while the slot is full *hands off*: instead of waiting on its
//!    mailbox with the carrier's waker, it parks its activation, future and all, in its cell
//!    (`cell.rs`, status `Handing`, then `Idle`), and the carrier goes on with the slot's
//!    activation on the same thread. The next message to it puts that same activation,
//!    unchanged, into the sender's slot. So a chain of messages between idle actors (a
//!    ping-pong, a token round a ring) runs as a loop in one task, with no allocation, no wake
//!    and no spawn per hop.
//! 5. Fairness: all the actors a carrier runs in one poll share one budget of
//!    [`POLL_BUDGET`] messages and hops. When it is spent the poll's time slice is looked at:
//!    a poll that has run less than [`POLL_SLICE`] since its budget first ran out gets a new
//!    budget and goes on; otherwise the carrier goes to the back of its worker's run queue. So
//!    one poll runs at most about two budgets' worth of messages plus the slice. (Each yield
//!    makes tokio wake an idle worker, which finds nothing to do or steals the carrier: with a
//!    budget alone, a ping-pong on two workers yielded every 256 hops and ran slower than on
//!    one.) When a poll ends (it
//!    yielded, or an actor awaits something else) the slot is handed to a carrier of its own,
//!    so it never outlives the poll.
//! 6. An activation is armed (`spawn.rs`): dropped before it finished, it kills its actor
//!    (`cell.rs`, rule 10). So an activation in the slot, parked in a cell, in a dock, or in a
//!    carrier the runtime drops, is never lost silently.
//! 7. A carrier left with nothing to run idles in its thread's pool (at most [`POOL_SIZE`] per
//!    thread, all of one runtime) instead of ending, and "a carrier of its own" (rules 2-5)
//!    means an idle carrier from the waking thread's pool when there is one: the activation is
//!    put in its dock and the carrier is woken, a plain tokio wake with no allocation; only when
//!    the pool is empty is a new carrier spawned. An actor with an empty mailbox, an empty
//!    slot and no batch left (rule 9) waits on its mailbox (keeping its carrier): handing off
//!    then too was measured slower where busy actors wake idle ones (`chameneos`, `big`),
//!    except for rule 8.
//! 8. A chain step hands off even with an empty slot: an actor that, since its mailbox was last
//!    empty, took exactly one message (or system message) and woke exactly one actor *waiting*
//!    in a carrier of its own (a tokio wake), hands off as in rule 4 instead of waiting. The
//!    actor it woke does the same when it passes the message on, so a chain through waiting
//!    actors (a token round a ring whose nodes were told their successor first) becomes, after
//!    one lap, a chain of hand-offs in one carrier (rule 4) instead of tokio wakes, which tokio
//!    sends to another worker from the fourth hop of a tick on. An actor that was woken into
//!    a slot or the stack and then sent to a carrier of its own (spilled, rule 3, or released,
//!    rule 4), or that was woken from a hand-off where no slot could take it (outside any
//!    carrier), gains nothing from chains: it is marked (`cell.rs`, `no_chains`) and from then
//!    on hands off only to a full slot (rule 4), as rule 7 has every actor do.
//! 9. Batches: an activation woken outside any carrier (a plain task such as a benchmark's
//!    driver or a transport's reader, a thread, a `block_on`) joins the last batch this
//!    thread started, when that batch is of the same runtime, holds fewer than [`BATCH`] and
//!    its carrier has not been polled yet; else it goes to an idle carrier of the thread's
//!    pool (rule 7); else it starts a new batch, in a new carrier. The carrier takes the whole
//!    batch at its first poll and runs it in wake order, one activation after another, as it
//!    runs its slot (the slot first). An actor of a batch that finds its mailbox empty while
//!    some of the batch is left hands off (rule 4: its activation parks in its cell, and the
//!    next message to it puts it in the sender's slot or a batch), so the actors of a burst
//!    keep no task each once they have handled their message. One that waits on anything else
//!    while some of the batch is left goes to a carrier of its own, which polls it again (so
//!    its wakes reach that carrier). Either way the batch goes on without it. When the
//!    poll's budget first runs out (rule 5), or the poll ends (a yield), with some of the batch
//!    left, the rest goes on at once in a carrier of its own, in order. So no actor waits
//!    behind another's wait, a batch of long-running actors is spread over the workers as one
//!    task each would be, and a burst of wakes from outside (spawning and messaging many
//!    actors) costs one task spawn per 16 short-lived actors instead of one each.
//!
//! The slot, the current carrier, the budget and the hand-off flag are thread-locals read and
//! replaced whole (`std::cell::Cell`), never borrowed, so no code runs while one is borrowed.
//! They are set through `with(|c| c.set(..))`: `LocalKey::set` goes through an initializer
//! that is not inlined, measurably slower on this path.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Waker;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::runtime::{Handle, Id};

/// One actor's activation as a carrier holds it: boxed once, pinned, and able to park itself
/// in its cell when its actor hands off (rule 4).
pub(crate) trait Runnable: Send {
    /// Polls the activation (the actor's loop).
    fn poll_run(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()>;
    /// Parks the activation in its cell (rule 4), or gives it back when the cell has work or a
    /// kill after all: the carrier then polls it again.
    fn park(self: Pin<Box<Self>>) -> Result<(), Activation>;
    /// It was put in a slot or a carrier's stack and then sent to a carrier of its own
    /// (spilled or released): its actor's hand-offs do not form chains (rule 8).
    fn released(&self);
    /// Its actor's home runtime (`cell.rs`, rule 9): the carrier running it is of that runtime,
    /// so a carrier reads its own home from what it runs instead of keeping it.
    fn home(&self) -> &Arc<Handle>;
}

/// An activation, type-erased so a carrier can run actors of any message type.
pub(crate) type Activation = Pin<Box<dyn Runnable>>;

/// Messages and hops a carrier runs between looks at the clock (rule 5).
pub(crate) const POLL_BUDGET: u32 = 256;

/// How long a carrier's poll may go on renewing its budget before it yields (rule 5).
pub(crate) const POLL_SLICE: Duration = Duration::from_micros(200);

/// Idle carriers a thread keeps (rule 7).
pub(crate) const POOL_SIZE: usize = 16;

/// Activations one batch holds at most (rule 9).
pub(crate) const BATCH: usize = 16;

/// Rule 3: when the carrier's stack holds this many activations, its oldest half goes to a
/// carrier of its own. Measured (`docs/results/micro-stack-2026-12-08/`): at 16 or more, `fib`
/// on two workers ran slower than on one (too little left for the second worker to take); at
/// 2 or 4, `skynet` lost most of what depth first gains.
pub(crate) const SPILL: usize = 8;

/// The runtime a carrier runs on: its handle's address (the fast check) and its id.
#[derive(Clone, Copy)]
struct Home {
    ptr: usize,
    id: Id,
}

impl Home {
    fn of(handle: &Arc<Handle>) -> Self {
        Home { ptr: Arc::as_ptr(handle) as usize, id: handle.id() }
    }

    fn is(self, handle: &Arc<Handle>) -> bool {
        self.ptr == Arc::as_ptr(handle) as usize || self.id == handle.id()
    }
}

thread_local! {
    /// The carrier polling on this thread, if any (rule 2).
    static CURRENT: Cell<Option<Home>> = const { Cell::new(None) };
    /// Its run-next slot (rule 3). Only taken or replaced, never borrowed, so dropping or
    /// spawning what comes out of it can never re-enter a borrow.
    static NEXT: Cell<Option<Activation>> = const { Cell::new(None) };
    /// Whether the slot is full (kept beside it so looking costs no take-and-put-back).
    static NEXT_FULL: Cell<bool> = const { Cell::new(false) };
    /// What is left of the current poll's budget (rule 5).
    static BUDGET: Cell<u32> = const { Cell::new(0) };
    /// When the current poll's budget first ran out (rule 5), if it has.
    static SLICE: Cell<Option<Instant>> = const { Cell::new(None) };
    /// The activation just polled chose to hand off (rule 4): its carrier parks it.
    static HANDING: Cell<bool> = const { Cell::new(false) };
    /// Rule 8: waiting actors the running actor woke through tokio since it last found its
    /// mailbox empty, and the budget then (what it has spent since is what it took).
    static WOKE: Cell<u32> = const { Cell::new(0) };
    static MARK: Cell<u32> = const { Cell::new(0) };
    /// Idle carriers (rule 7), taken and put back whole, never borrowed.
    static POOL: Cell<Vec<Arc<Dock>>> = const { Cell::new(Vec::new()) };
    /// Rule 9: the batch this thread last started outside any carrier.
    /// Weak, so a batch whose carrier the runtime drops unrun is dropped with it (its
    /// activations kill their actors, rule 6), not kept here.
    static OPEN: Cell<Option<std::sync::Weak<Dock>>> = const { Cell::new(None) };
    /// The carrier's stack (rules 3 and 9): the rest of the batch it took and the activations
    /// displaced from its slot, next to run last; and whether it holds any.
    static SPARE: Cell<Vec<Activation>> = const { Cell::new(Vec::new()) };
    static SPARE_FULL: Cell<bool> = const { Cell::new(false) };
    /// Rules 3 and 4: how many of the stack's top the running actor displaced (it releases
    /// them when it takes another message).
    static PUSHED: Cell<usize> = const { Cell::new(0) };
}

/// Where an idle carrier is handed its next activation (rule 7).
struct Dock {
    home: Home,
    inner: parking_lot::Mutex<Docked>,
}

#[derive(Default)]
struct Docked {
    activation: Option<Activation>,
    waker: Option<Waker>,
    /// Dropped from its pool, or idle for a sweep period: the carrier ends at its next poll.
    retired: bool,
    /// Idling in a pool (its carrier runs nothing).
    docked: bool,
    /// Handed an activation since the sweeper's last visit.
    used: bool,
    /// Rule 9: activations woken outside any carrier, waiting for this carrier's first poll.
    batch: Vec<Activation>,
    /// Rule 9: the batch still takes more (its carrier has not started).
    open: bool,
    /// On the sweeper's list.
    swept: bool,
}

impl Docked {
    /// Retires the carrier; the waker to wake so it ends.
    fn retire(&mut self) -> Option<Waker> {
        self.retired = true;
        self.waker.take()
    }
}

/// Rule 7: an idle carrier that was handed nothing for a whole sweep period ends, so idle
/// carriers, like idle actors, cost no task for long (`sweeper.rs`).
impl crate::sweeper::Sweepable for Dock {
    fn sweep(self: Arc<Self>) -> bool {
        let mut g = self.inner.lock();
        if g.retired {
            return false;
        }
        if !g.docked || g.used {
            g.used = false;
            return true;
        }
        let waker = g.retire();
        drop(g);
        if let Some(w) = waker {
            w.wake();
        }
        false
    }
}

/// An idle carrier of `home` from this thread's pool.
fn pool_pop(home: Home) -> Option<Arc<Dock>> {
    let mut pool = POOL.take();
    let dock = match pool.last() {
        Some(d) if d.home.id == home.id => pool.pop(),
        _ => None,
    };
    POOL.with(|c| c.set(pool));
    dock
}

/// Puts an idle carrier in this thread's pool; false when the pool is full. Carriers of
/// another runtime are dropped from it first (the pool holds one runtime's carriers).
fn pool_push(dock: &Arc<Dock>) -> bool {
    let mut pool = POOL.take();
    if pool.first().is_some_and(|d| d.home.id != dock.home.id) {
        for old in pool.drain(..) {
            let waker = old.inner.lock().retire();
            if let Some(w) = waker {
                w.wake();
            }
        }
    }
    let room = pool.len() < POOL_SIZE;
    if room {
        pool.push(dock.clone());
    }
    POOL.with(|c| c.set(pool));
    room
}

/// Whether this thread's pool can take one more idle carrier of `home`.
fn pool_has_room(home: Home) -> bool {
    let pool = POOL.take();
    let room = pool.len() < POOL_SIZE || pool.first().is_some_and(|d| d.home.id != home.id);
    POOL.with(|c| c.set(pool));
    room
}

/// Runs `activation` in a carrier of its own on `home` (rule 7): an idle one from this
/// thread's pool, else a new one.
fn run_elsewhere(home: Home, handle: Option<&Arc<Handle>>, activation: Activation) {
    let mut activation = Some(activation);
    if !to_pool(home, |d| d.activation = activation.take()) {
        let activation = activation.expect("not handed to a dock");
        match handle {
            Some(h) => drop(h.spawn(carrier(activation))),
            None => drop(tokio::spawn(carrier(activation))),
        }
    }
}

/// Hands work to an idle carrier of `home` from this thread's pool (rule 7): `give` puts it in
/// the carrier's dock. False when the pool has none (and `give` was not called).
fn to_pool(home: Home, give: impl FnOnce(&mut Docked)) -> bool {
    let mut give = Some(give);
    // Bounded by the pool's size: each turn takes one carrier out of it.
    while let Some(dock) = pool_pop(home) {
        let waker = {
            let mut d = dock.inner.lock();
            if d.retired {
                continue;
            }
            (give.take().expect("given once"))(&mut d);
            d.docked = false;
            d.used = true;
            d.waker.take()
        };
        // A docked carrier always left its waker (it docks itself during its own poll).
        if let Some(w) = waker {
            w.wake();
        }
        return true;
    }
    false
}

fn put_next(a: Activation) -> Option<Activation> {
    NEXT_FULL.with(|c| c.set(true));
    NEXT.replace(Some(a))
}

#[inline]
fn take_next() -> Option<Activation> {
    if NEXT_FULL.replace(false) {
        return NEXT.take();
    }
    if SPARE_FULL.get() {
        return take_spare();
    }
    None
}

/// Rule 9: a carrier takes the batch handed to its dock: the first to run comes back, the rest
/// becomes the spare list, last to run first. The spare list is empty here (a carrier looks at
/// its dock only when it has run all of it).
#[cold]
#[inline(never)]
fn take_batch(g: &mut Docked) -> Option<Activation> {
    g.open = false;
    let mut batch = std::mem::take(&mut g.batch);
    batch.reverse();
    let first = batch.pop();
    if !batch.is_empty() {
        SPARE_FULL.with(|c| c.set(true));
        drop(SPARE.replace(batch));
    }
    first
}

/// Rule 9: the next activation of the current carrier's batch.
#[cold]
#[inline(never)]
fn take_spare() -> Option<Activation> {
    let mut spare = SPARE.take();
    let next = spare.pop();
    SPARE_FULL.with(|c| c.set(!spare.is_empty()));
    SPARE.with(|c| c.set(spare));
    next
}

/// Whether an activation of `home` woken here would go into a slot (rule 2).
pub(crate) fn in_carrier_of(home: &Arc<Handle>) -> bool {
    CURRENT.get().is_some_and(|here| here.is(home))
}

/// Runs `activation` on `home` (`cell.rs`, rules 2 and 9): in the current carrier's slot when
/// there is one on that runtime (rules 2 and 3), else in a new carrier.
pub(crate) fn schedule(home: &Arc<Handle>, activation: Activation) {
    match CURRENT.get() {
        Some(here) if here.is(home) => {
            if let Some(displaced) = put_next(activation) {
                push_displaced(here, displaced);
            }
        }
        _ => run_batched(home, activation),
    }
}

/// Rule 9: an activation woken outside any carrier joins this thread's open batch of `home`,
/// else goes to an idle carrier of this thread's pool, else starts a batch in a new carrier.
fn run_batched(home: &Arc<Handle>, activation: Activation) {
    let mut activation = Some(activation);
    if let Some(d) = OPEN.take().and_then(|w| w.upgrade()) {
        if d.home.is(home) {
            let mut g = d.inner.lock();
            if g.open && g.batch.len() < BATCH {
                g.batch.push(activation.take().expect("not handed yet"));
            }
            drop(g);
            if activation.is_none() {
                OPEN.with(|c| c.set(Some(Arc::downgrade(&d))));
                return;
            }
        }
    }
    if !to_pool(Home::of(home), |d| d.activation = activation.take()) {
        start_batch(home, activation.expect("not handed yet"));
    }
}

/// Rule 9: a new carrier whose first poll runs `first` (and whatever joins it before then).
fn start_batch(home: &Arc<Handle>, first: Activation) {
    let mut batch = Vec::with_capacity(BATCH);
    batch.push(first);
    let dock = Arc::new(Dock {
        home: Home::of(home),
        inner: parking_lot::Mutex::new(Docked { batch, open: true, ..Default::default() }),
    });
    OPEN.with(|c| c.set(Some(Arc::downgrade(&dock))));
    drop(home.spawn(carrier_state(None, Some(dock))));
}

/// Rules 4, 8 and 9: whether an actor that found its mailbox empty should hand off rather than
/// wait: it runs in a carrier whose slot holds another activation or whose batch is not done,
/// or (when `chains`: its cell is not marked, rule 8) it has just made a chain step. When
/// true, the caller has marked its cell `Handing` and must return `Pending` at once; the
/// carrier parks it after the poll.
#[must_use = "true means the caller must mark its cell `Handing` and return `Pending` at once"]
pub(crate) fn hand_off(chains: bool) -> bool {
    let left = BUDGET.get();
    let step = WOKE.replace(0) == 1 && MARK.replace(left).saturating_sub(left) == 1;
    if CURRENT.get().is_some() && (NEXT_FULL.get() || SPARE_FULL.get() || (chains && step)) {
        HANDING.with(|c| c.set(true));
        true
    } else {
        false
    }
}

/// Rule 8: an arrival woke an actor waiting in a carrier of its own (a tokio wake).
pub(crate) fn note_task_wake() {
    WOKE.with(|c| c.set(WOKE.get().saturating_add(1)));
}

/// Rule 3: an activation displaced from the slot goes on top of the carrier's stack; when the
/// stack is full, its oldest half goes on in a carrier of its own.
fn push_displaced(here: Home, displaced: Activation) {
    let mut stack = SPARE.take();
    stack.push(displaced);
    SPARE_FULL.with(|c| c.set(true));
    PUSHED.with(|c| c.set(PUSHED.get() + 1));
    if stack.len() < SPILL {
        SPARE.with(|c| c.set(stack));
        return;
    }
    spill(here, stack);
}

#[cold]
#[inline(never)]
fn spill(here: Home, mut stack: Vec<Activation>) {
    let oldest: Vec<Activation> = stack.drain(..SPILL / 2).collect();
    for a in &oldest {
        a.released();
    }
    PUSHED.with(|c| c.set(PUSHED.get().min(stack.len())));
    SPARE.with(|c| c.set(stack));
    batch_elsewhere(here, oldest);
}

/// Rule 4: the actor has work of its own, so the slot's activation, and what the actor
/// displaced onto the stack (rule 3), get carriers of their own. One look on this path (every
/// message taken): a displacement leaves the slot full, and nothing empties the slot while the
/// same actor runs but `release_woken` (which forgets `PUSHED`), so `PUSHED > 0` implies a
/// full slot.
#[inline]
pub(crate) fn release_next() {
    if NEXT_FULL.get() {
        release_woken();
    }
}

#[cold]
#[inline(never)]
fn release_woken() {
    let Some(here) = CURRENT.get() else {
        return;
    };
    if NEXT_FULL.replace(false) {
        if let Some(next) = NEXT.take() {
            next.released();
            run_elsewhere(here, None, next);
        }
    }
    let pushed = PUSHED.replace(0);
    if pushed > 0 && SPARE_FULL.get() {
        let mut stack = SPARE.take();
        let mine = stack.split_off(stack.len().saturating_sub(pushed));
        SPARE_FULL.with(|c| c.set(!stack.is_empty()));
        SPARE.with(|c| c.set(stack));
        for a in &mine {
            a.released();
        }
        if mine.len() == 1 {
            run_elsewhere(here, None, mine.into_iter().next().expect("one"));
        } else {
            batch_elsewhere(here, mine);
        }
    }
}

/// Spends one unit of the current carrier poll's budget, or of `local` outside a carrier;
/// true when it is spent and the caller should yield (rule 5).
pub(crate) fn spend(local: &mut u32) -> bool {
    if CURRENT.get().is_some() {
        spent()
    } else {
        *local = local.saturating_sub(1);
        if *local == 0 {
            *local = POLL_BUDGET;
            true
        } else {
            false
        }
    }
}

/// Runs `f` with no current carrier (an actor's inline start on its spawner's stack: what it
/// wakes gets carriers of its own, rule 2, and it never hands off).
pub(crate) fn outside<R>(f: impl FnOnce() -> R) -> R {
    let saved = CURRENT.replace(None);
    let full = NEXT_FULL.replace(false);
    let next = NEXT.take();
    // The batch's rest (rule 9), kept aside only when there is one.
    let spare = SPARE_FULL.replace(false).then(|| SPARE.take());
    let woke = WOKE.get();
    let pushed = PUSHED.replace(0);
    let out = f();
    PUSHED.with(|c| c.set(pushed));
    CURRENT.with(|c| c.set(saved));
    NEXT_FULL.with(|c| c.set(full));
    if let Some(spare) = spare {
        SPARE_FULL.with(|c| c.set(true));
        SPARE.with(|c| c.set(spare));
    }
    WOKE.with(|c| c.set(woke));
    if let Some(stray) = NEXT.replace(next) {
        // Nothing outside a carrier fills the slot; should anything, it still runs.
        match saved {
            Some(here) => run_elsewhere(here, None, stray),
            None => drop(stray),
        }
    }
    out
}

/// A tokio task running activations one after the other (rules 1-5, 7): `first`, then those
/// it takes from its slot when the one it runs finishes or hands off, then, idle in its
/// thread's pool, those handed to its dock.
///
/// A plain `poll_fn` holding the activation and the dock only (24 bytes), not an `async fn`
/// (which kept its arguments twice, 80 bytes): so a carrier's tokio task fits in 128 bytes
/// instead of 256 (a task is aligned to 128). Its home is read from what it holds: every
/// activation it runs, and its dock, are of the runtime it was spawned on (rules 1 and 2).
/// Spawned here for woken activations, and by `spawn.rs` for an inline start that waits.
pub(crate) fn carrier(first: Activation) -> impl Future<Output = ()> + Send + 'static {
    carrier_state(Some(first), None)
}

/// A carrier holding `current` and `dock` (a batch carrier starts with its dock only, rule 9).
fn carrier_state(
    mut current: Option<Activation>,
    mut dock: Option<Arc<Dock>>,
) -> impl Future<Output = ()> + Send + 'static {
    std::future::poll_fn(move |cx: &mut Context<'_>| {
        let home = match (&current, &dock) {
            (Some(a), _) => Home::of(a.home()),
            (None, Some(d)) => d.home,
            (None, None) => return Poll::Ready(()),
        };
        let _polling = Polling::enter(home);
        loop {
            if current.is_none() {
                // Docked (rule 7): run what was handed over, or go on idling.
                let Some(d) = dock.as_ref() else {
                    return Poll::Ready(());
                };
                let mut g = d.inner.lock();
                if !g.batch.is_empty() {
                    current = take_batch(&mut g);
                    continue;
                }
                match g.activation.take() {
                    Some(a) => current = Some(a),
                    None if g.retired => return Poll::Ready(()),
                    None => {
                        if !g.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                            g.waker = Some(cx.waker().clone());
                        }
                        return Poll::Pending;
                    }
                }
            }
            WOKE.with(|c| c.set(0));
            MARK.with(|c| c.set(BUDGET.get()));
            PUSHED.with(|c| c.set(0));
            let run = current.as_mut().expect("set above");
            match run.as_mut().poll_run(cx) {
                Poll::Pending if HANDING.replace(false) => {
                    // Rule 4: park it in its cell; a cell that got work meanwhile gives it back.
                    let act = current.take().expect("polled just now");
                    if let Err(back) = act.park() {
                        current = Some(back);
                        if spent() {
                            cx.waker().wake_by_ref();
                            return Poll::Pending;
                        }
                        continue;
                    }
                }
                Poll::Pending if !SPARE_FULL.get() => return Poll::Pending,
                Poll::Pending => {
                    // Rule 9: it waits on something other than its mailbox (with an empty
                    // mailbox it hands off), and the rest of its batch must not wait behind it. It
                    // goes to a carrier of its own, whose first poll registers that carrier's
                    // waker (a wake meanwhile reaches this one, which polls what it holds);
                    // this one goes on with the batch.
                    let waiting = current.take().expect("polled just now");
                    run_elsewhere(home, None, waiting);
                }
                // The finished activation is dropped here, outside any borrow.
                Poll::Ready(()) => current = None,
            }
            match take_next() {
                Some(next) => current = Some(next),
                None => {
                    // Rule 7: idle in this thread's pool, or end when it is full (a carrier
                    // that never docked makes no dock, and one that ends is never put on the
                    // sweeper's list, so a burst of carriers leaves nothing).
                    if !pool_has_room(home) {
                        return Poll::Ready(());
                    }
                    let d = dock.get_or_insert_with(|| Arc::new(Dock { home, inner: Default::default() }));
                    let register = {
                        let mut g = d.inner.lock();
                        if !g.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                            g.waker = Some(cx.waker().clone());
                        }
                        g.docked = true;
                        !std::mem::replace(&mut g.swept, true)
                    };
                    if register {
                        crate::sweeper::register(Arc::downgrade(d) as std::sync::Weak<dyn crate::sweeper::Sweepable>);
                    }
                    if pool_push(d) {
                        return Poll::Pending;
                    }
                    return Poll::Ready(());
                }
            }
            if spent() {
                // Rule 5: to the back of the run queue (a self-wake during a poll is a yield).
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
        }
    })
}

/// One hop of the current poll's budget; true when it is spent and the poll's slice is over,
/// so the carrier must yield (rule 5).
fn spent() -> bool {
    let left = BUDGET.get().saturating_sub(1);
    BUDGET.with(|c| c.set(left));
    if left > 0 {
        return false;
    }
    // Rule 9: a batch stays together only while its actors are short; one that spends a whole
    // budget sends the rest on, where another worker can take them.
    if let Some(home) = CURRENT.get() {
        spare_elsewhere(home);
    }
    let mut start = SLICE.get();
    let over = slice_over(&mut start, Instant::now());
    SLICE.with(|c| c.set(start));
    if !over {
        BUDGET.with(|c| c.set(POLL_BUDGET));
    }
    over
}

/// Rule 5: a budget ran out at `now`; `start` is when the poll's budget first did. True when
/// the slice is over (the carrier yields), false when the budget is renewed.
fn slice_over(start: &mut Option<Instant>, now: Instant) -> bool {
    let first = *start.get_or_insert(now);
    now.duration_since(first) >= POLL_SLICE
}

/// Rule 9: what is left of the current carrier's batch goes on in a carrier of its own. The
/// look is inlined (one thread-local flag, on every carrier poll); the move is not.
#[inline]
fn spare_elsewhere(home: Home) {
    if SPARE_FULL.get() {
        move_spare(home);
    }
}

#[cold]
#[inline(never)]
fn move_spare(home: Home) {
    SPARE_FULL.with(|c| c.set(false));
    PUSHED.with(|c| c.set(0));
    let mut rest = SPARE.take();
    if rest.len() == 1 {
        let last = rest.pop().expect("one left");
        SPARE.with(|c| c.set(rest));
        return run_elsewhere(home, None, last);
    }
    rest.reverse();
    batch_elsewhere(home, rest);
}

/// Rules 3, 4 and 9: `batch` goes on in a carrier of its own, in order: an idle carrier of
/// this thread's pool when there is one (no allocation), else a new one.
fn batch_elsewhere(home: Home, batch: Vec<Activation>) {
    let mut batch = Some(batch);
    if !to_pool(home, |d| d.batch = batch.take().expect("given once")) {
        let batch = batch.expect("not handed to a dock");
        let dock = Arc::new(Dock { home, inner: parking_lot::Mutex::new(Docked { batch, ..Default::default() }) });
        drop(tokio::spawn(carrier_state(None, Some(dock))));
    }
}

/// Makes a carrier current for one poll; on drop, hands a left-over slot to a carrier of its
/// own (rule 5) and restores what was current before.
struct Polling {
    saved: Option<Home>,
    saved_budget: u32,
    saved_slice: Option<Instant>,
    saved_full: bool,
    saved_next: Option<Activation>,
    home: Home,
}

impl Polling {
    #[inline(always)]
    fn enter(home: Home) -> Self {
        let saved = CURRENT.replace(Some(home));
        let saved_budget = BUDGET.replace(POLL_BUDGET);
        let saved_slice = SLICE.replace(None);
        let saved_full = NEXT_FULL.replace(false);
        let saved_next = NEXT.take();
        // A poll inside another's (never in practice) sends the outer one's batch on.
        spare_elsewhere(home);
        Polling { saved, saved_budget, saved_slice, saved_full, saved_next, home }
    }
}

impl Drop for Polling {
    #[inline(always)]
    fn drop(&mut self) {
        HANDING.with(|c| c.set(false));
        if NEXT_FULL.replace(false) {
            if let Some(next) = NEXT.take() {
                run_elsewhere(self.home, None, next);
            }
        }
        spare_elsewhere(self.home);
        CURRENT.with(|c| c.set(self.saved));
        BUDGET.with(|c| c.set(self.saved_budget));
        SLICE.with(|c| c.set(self.saved_slice));
        NEXT_FULL.with(|c| c.set(self.saved_full));
        NEXT.with(|c| c.set(self.saved_next.take()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rule 5: a spent budget is renewed while the poll's slice lasts (measured from when the
    /// budget first ran out), and the carrier yields once it is over.
    #[test]
    fn rule_5_a_spent_budget_is_renewed_until_the_slice_is_over() {
        let t0 = Instant::now();
        let mut start = None;
        assert!(!slice_over(&mut start, t0), "the first time the budget runs out starts the slice");
        assert_eq!(start, Some(t0));
        assert!(!slice_over(&mut start, t0 + POLL_SLICE / 2), "within the slice: renewed");
        assert!(slice_over(&mut start, t0 + POLL_SLICE), "the slice is over: yield");
        assert!(slice_over(&mut start, t0 + POLL_SLICE * 3));
        assert_eq!(start, Some(t0), "the slice is the poll's, never restarted within it");
    }

    /// Rule 5 through the carrier's own counter: eight budgets' worth of hops spent at once
    /// (well within the slice) never ask for a yield; a poll whose slice is over yields when
    /// its budget next runs out, and the next poll starts afresh. Without the slice the 256th
    /// hop asked for a yield (each one woke an idle worker: a ping-pong on two workers ran
    /// about 1.5x slower than on one).
    #[test]
    fn rule_5_a_poll_renews_its_budget_within_its_slice_and_yields_after_it() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let home = Home::of(&Arc::new(rt.handle().clone()));
        // A try that the OS stops for longer than the slice may see a yield: up to 10 tries.
        let renewed = (0..10).any(|_| {
            let _polling = Polling::enter(home);
            (0..POLL_BUDGET * 8).all(|_| !spent())
        });
        assert!(renewed, "a spent budget within the slice is renewed");
        {
            let _polling = Polling::enter(home);
            SLICE.with(|c| c.set(Some(Instant::now() - POLL_SLICE)));
            let asked: Vec<u32> = (1..=POLL_BUDGET).filter(|_| spent()).collect();
            assert_eq!(asked, vec![POLL_BUDGET], "past its slice, the poll yields when its budget runs out");
        }
        let _polling = Polling::enter(home);
        assert_eq!((BUDGET.get(), SLICE.get()), (POLL_BUDGET, None), "a new poll: a full budget, no slice yet");
    }
}
