//! The shared heart of one actor: its mailbox (two lanes), its lifecycle status, and its
//! relations (links, monitors, names, death watchers). Every `ActorRef` points at a `Cell`.
//!
//! Rules (each is checked by tests in `tests/core_*.rs`):
//! 1. Status is `Running` (a tokio task owns the actor state and is working), `Waiting` (the task
//!    is parked on the mailbox with its waker stored), `Idle` (no task: the state is parked in the
//!    cell as `dormant`) or `Dead`. All transitions happen under the cell's lock.
//! 2. A message or system message arriving at an `Idle` actor moves it to `Running` and starts
//!    its activation (`sched.rs`: in the waking carrier's run-next slot, or a carrier of its
//!    own); at a `Waiting` actor it moves it to `Running` and wakes the task; at a
//!    `Running` actor it only enqueues (the task re-checks the mailbox before it waits).
//! 3. A task waits, or parks the state, only when, under the lock, both lanes are empty and no
//!    kill is pending. So no message is ever stranded in a waiting or idle mailbox.
//! 4. A task parks the state (and ends) when it has had nothing to do since the previous sweep
//!    of the sweeper (`sweeper.rs`, about a second), or at once after `started` when it has
//!    never had a message. Busy actors keep their task; idle ones cost no task.
//! 5. System messages are taken before user messages.
//! 6. Kill sets `killed` under the lock. An idle actor dies at once; a running one is woken and
//!    its task stops at its next poll without running more actor code.
//! 7. Death happens once: status becomes `Dead`, queued messages are dropped (pending `ask`s see
//!    `Gone`), then links get an exit signal, names are released, monitors get a `Down`, and
//!    only then are death watchers told the reason. Nothing is accepted after death.
//! 8. An actor lives until it stops, referenced or not (as an Erlang process does): its parked
//!    state holds its own cell, so dropping every `ActorRef` does not end it.
//! 9. An actor belongs to the runtime it was spawned in (its `home`): every activation runs on
//!    that runtime (in a carrier spawned through the cell's handle, or in the slot of a carrier
//!    already running there, `sched.rs` rule 2), whoever wakes it (a plain thread,
//!    another runtime), so waking never needs the caller's runtime and never moves the actor.
//! 10. An activation that is dropped before it finishes (its runtime shut down, or was already
//!     gone when the activation was spawned) kills the actor: its state is dropped, then it dies
//!     with `Killed` as in rule 7. So no actor is left marked running with no task (a zombie).
//! 11. A drain request (`Sys::Drain`) closes the mailbox at once, under the lock: every later
//!     send fails with `Gone`, so the messages queued before it are exactly those the actor
//!     still handles; when it finds its mailbox empty it stops with the request's reason.
//! 12. Hand-off (`sched.rs`, rule 4): a task that finds both lanes empty while its carrier's
//!     run-next slot is full becomes `Handing` instead of `Waiting`, and its carrier then parks
//!     the whole activation in the cell as its dormant (`Idle`, `handed`), under the lock, only
//!     if both lanes are still empty and no kill is pending; else it becomes `Running` again and
//!     is polled again. An arrival at a `Handing` actor only enqueues. Waking a handed dormant
//!     resumes that same activation where it stopped. A handed activation that stays idle for a
//!     sweep period is woken once with the park request of rule 4, so it parks its state.
//! 13. A death with more than [`DOWN_CHUNK`] monitors, on a runtime's thread, signals them from
//!     a task of its own on that runtime, [`DOWN_CHUNK`] at a time, yielding between chunks:
//!     what its links woke (a supervisor that restarts it) runs first instead of waiting, on
//!     the dying actor's thread, behind tens of thousands of `Down`s. Rule 7's order holds: its
//!     watchers are told after the last chunk. A task its runtime drops unrun (shut down)
//!     signals them all at once, as does a death outside any runtime (a kill of an idle actor
//!     from a plain thread), where nothing waits behind them.
//!
//! # Who touches what
//!
//! | field | written | read | why that is enough |
//! |---|---|---|---|
//! | `id`, `home` | by `new` only | anywhere, no lock | never change |
//! | `inner` (queue, dormant, waker, extra, status, exit, flags, cap, overflow) | under the lock | under the lock | every transition of rules 1-12 is one locked step on these |
//! | `killed` | once, false to true, by `kill`, under the lock (`Release`) | under the lock by every transition that could let the actor wait, park or take more (`send`, `next_item`, `try_hibernate`, `park_handed`, `add_link`, `add_name`); without it (`Acquire`) by `is_killed`: the activation before each poll and each batched message, `is_alive` | it never goes back to false, and it is written under the lock, so a locked reader sees it exactly; an unlocked reader that misses it only runs until its next locked step, which sees it (and `kill` also wakes a waiting task): rule 6's "at its next poll" |
//! | `sys_pending` | under the lock: set (`Release`) by `push_sys` with the system message queued, cleared (`Release`) by `next_item` when it takes the last one | without the lock (`Acquire`), only by `next_item` serving a batch | it only decides whether a batched message may be served without the lock; a stale `false` serves the batched message already racing the system message, a stale `true` costs one lock. Taking and emptying the system lane itself is under the lock (rule 5) |
//! | `batched` | only by the activation, no lock (`Relaxed`) | by `mailbox_len` (`Relaxed`) | a count for reports and metrics, never a decision: a snapshot off by the message in flight is fine |
//! | `no_chains` | once, false to true, no lock (`Relaxed`): by the carrier that sends the activation to a carrier of its own from its slot or stack (`sched.rs` rules 3 and 4, `released`), or by the waker of a handed activation outside any carrier (`Wake::run`), each before it hands the activation on | by the activation, in `next_item`'s hand-off decision (`Relaxed`) | the activation is not running while it is set, and reaches its next poll through a dock's lock or a task spawn, which order the store before that poll's read; it only picks between two correct schedules (`sched.rs` rule 8), never a transition |
//!
//! The lock is a spin lock (`spin.rs`: its unlock is a plain store, not a locked instruction)
//! and the atomics `std`'s, through `crate::loom`, so the loom models below can swap them for
//! loom's.
//!
//! # Loom models
//!
//! `cell/models.rs`, built only as this crate's unit tests with `--cfg troupe_loom` (run them
//! with `scripts/loom.sh`), drives this file's real transitions (`send`, `next_item`,
//! `try_hibernate`, `park_handed`, `push_sys`, `kill`, `sweep`, `die`, `wait_for_room`) from loom
//! threads, and loom tries every interleaving of their locks and atomics (up to a preemption
//! bound). Around them the models stand in for what is not this file's: the activation's loop
//! (`spawn.rs`) reduced to its calls on the cell; a carrier by the hand-off decision passed to
//! `next_item_with` (the scheduler's thread-locals are not modelled) and the `park_handed` it
//! makes after the poll; the sweeper's thread by a model thread calling `sweep` (in these builds
//! `sweeper::register` keeps nothing); and an activation's spawn by a dormant that resumes the
//! model's actor thread. Each model, and the rules it checks:
//!
//! | model | rules | the race |
//! |---|---|---|
//! | `a_send_wakes_a_waiting_task` | 2, 3 | two sends against a task going to wait |
//! | `a_send_activates_a_parking_actor` | 2, 3 | a send against a fresh activation parking its state |
//! | `a_park_request_races_a_send` | 2, 3, 4 | the sweeper's park request against a send and the task waiting |
//! | `a_kill_races_a_send_and_a_wait` | 3, 6, 7 | a kill against a send and the task waiting |
//! | `a_kill_races_a_park` | 3, 6, 7 | a kill against the state being parked |
//! | `a_send_races_a_hand_off` | 2, 12 | a send against a hand-off and its `park_handed` |
//! | `a_kill_races_a_hand_off` | 6, 7, 12 | a kill against a hand-off and its `park_handed` |
//! | `a_handed_activation_swept_races_a_send` | 4, 12 | the sweeper waking a handed activation to park, against a send |
//! | `a_drain_races_a_send` | 7, 11 | a drain request against a send: queued before it means handled |
//! | `a_blocked_sender_is_woken_by_the_take` | 2, `mailbox.rs` 3 | a full bounded mailbox's `send_wait` against the take that frees room |
//! | `a_system_message_overtakes_a_batch` | 5 | a system message against an activation serving a batch without the lock |
//!
//! A lost wake-up shows as a loom deadlock (the model's actor, or sender, waits for ever); a
//! message stranded, a death missed or doubled, as a failed assertion.

use std::collections::VecDeque;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Waker};

use tokio::sync::oneshot;

use crate::loom::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use crate::loom::sync::Mutex;

use crate::any_ref::{AnyRef, Process};
use crate::error::{SendError, SendErrorKind};
use crate::keyed::{IntoValues, Keyed};
use crate::mailbox::{MailboxConfig, Overflow};
use crate::registry::Registry;
use crate::{ActorId, Down, ExitReason, ExitSignal, MonitorId};

/// A system message: handled before user messages, never counted against capacity.
pub(crate) enum Sys {
    Exit(ExitSignal),
    Down(Down),
    Stop(ExitReason),
    /// Stop with this reason once the messages already queued are handled (rule 11).
    Drain(ExitReason),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Status {
    Running,
    Waiting,
    /// The activation is handing off (`sched.rs`, rule 4): its carrier is about to park it in
    /// the cell. Arrivals only enqueue; the carrier re-checks under the lock (rule 12).
    Handing,
    Idle,
    Dead,
}

/// Actor state parked in an idle cell; activating it spawns its task again.
pub(crate) trait Dormant<M>: Send {
    fn activate(self: Box<Self>, cell: &Arc<Cell<M>>);
    /// Dropped by a kill (rule 6), before the death: a parked state reports the end
    /// (`reports.rs` rules 5 and 6); a handed activation's guard does when it is dropped.
    fn drop_killed(self: Box<Self>) {}
}

/// A queued user message: the message alone, or with the `trace-context` feature also the span
/// its sender was in (`reports.rs` rule 4). Without the feature [`seal`] and [`open`] are the
/// identity, so the mailbox holds bare messages.
#[cfg(not(feature = "trace-context"))]
pub(crate) type Envelope<M> = M;

/// A queued user message with the span its sender was in (`reports.rs` rule 4), boxed so a
/// queue slot grows by one pointer only (an idle actor keeps its queue's capacity), and absent,
/// allocating nothing, when the sender was in no span.
#[cfg(feature = "trace-context")]
pub(crate) struct Envelope<M> {
    pub(crate) msg: M,
    pub(crate) span: Option<Box<tracing::Span>>,
}

#[cfg(not(feature = "trace-context"))]
#[inline(always)]
fn seal<M>(msg: M) -> Envelope<M> {
    msg
}

#[cfg(not(feature = "trace-context"))]
#[inline(always)]
fn open<M>(env: Envelope<M>) -> M {
    env
}

#[cfg(feature = "trace-context")]
#[inline]
fn seal<M>(msg: M) -> Envelope<M> {
    let span = tracing::Span::current();
    Envelope { msg, span: (!span.is_none()).then(|| Box::new(span)) }
}

#[cfg(feature = "trace-context")]
#[inline]
fn open<M>(env: Envelope<M>) -> M {
    env.msg
}

/// What the activation loop gets from the mailbox. A message is not carried in the item: it
/// is written once into the caller's slot (`next_item`'s `slot`), and `Msg` says it is there.
/// Carried in the item it was moved through four or five temporaries between the queue and the
/// handler, and for a message enum whose fields follow a one-byte tag each move was a copy at
/// an odd offset that the next move's load could not forward from (a store-forwarding stall
/// per move, measured as the hottest instructions of `chameneos` on one worker).
#[must_use = "an item taken from the mailbox must be handled"]
pub(crate) enum Item {
    Msg,
    Sys(Sys),
    Killed,
    Empty,
}

pub(crate) struct Cell<M> {
    pub(crate) id: ActorId,
    /// The runtime the actor was spawned in; activations are spawned on it (rule 9). Shared by
    /// the actors spawned on one runtime from one thread (a thin pointer: 8 bytes an actor).
    pub(crate) home: Arc<tokio::runtime::Handle>,
    killed: AtomicBool,
    /// A system message is queued: a task working through a batch checks this between
    /// messages so the system lane stays first (rule 5).
    sys_pending: AtomicBool,
    /// Messages taken out of the queue in a batch and not yet handed to the actor (so
    /// `mailbox_len` counts them). Only the activation writes it; it fits in the padding.
    batched: AtomicU32,
    /// Once put in a slot and then sent to a carrier of its own, or woken from a handed state
    /// where no slot took it: hands off only to a full slot (`sched.rs`, rule 8). Set without
    /// the lock (a displacement is no locked step of the cell); it fits in the padding.
    no_chains: AtomicBool,
    inner: Mutex<Inner<M>>,
}

struct Inner<M> {
    queue: VecDeque<Envelope<M>>,
    dormant: Option<Box<dyn Dormant<M>>>,
    waker: Option<Waker>,
    extra: Option<Box<Extra>>,
    /// The mailbox's bound (0: unbounded) and overflow policy, kept as fields rather than a
    /// `MailboxConfig` so they share one word with the status, the exit code and the flags.
    cap: u32,
    overflow: Overflow,
    status: Status,
    /// After death: the reason when it carries no text (see `ExitCode`), else in `extra.exit`.
    exit: ExitCode,
    /// The `F_*` bits below, one byte for six booleans (an idle actor's cell stays within 128
    /// bytes with its `Arc` counts: the allocator's 128-byte class, not the 160-byte one).
    flags: u8,
}

/// On the sweeper's list (rule 4).
const F_SWEPT: u8 = 1;
/// Took a message since the last sweep.
const F_ACTIVE: u8 = 2;
/// The sweeper asked the task to park the state.
const F_PARK: u8 = 4;
/// After death: links and monitors have been signalled (rule 13: maybe some time after the
/// status became `Dead`); `terminated()` may answer at once.
const F_SETTLED: u8 = 8;
/// A drain request arrived: sends are refused (rule 11).
const F_CLOSING: u8 = 16;
/// The dormant is a whole activation parked by a hand-off (rule 12), not a parked state.
const F_HANDED: u8 = 32;

/// An exit reason without text, kept in a byte so a death allocates nothing.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ExitCode {
    None,
    Normal,
    Shutdown,
    Killed,
    NoProc,
    NoConnection,
}

impl ExitCode {
    fn of(reason: &ExitReason) -> Self {
        match reason {
            ExitReason::Normal => ExitCode::Normal,
            ExitReason::Shutdown => ExitCode::Shutdown,
            ExitReason::Killed => ExitCode::Killed,
            ExitReason::NoProc => ExitCode::NoProc,
            ExitReason::NoConnection => ExitCode::NoConnection,
            _ => ExitCode::None,
        }
    }

    fn reason(self) -> Option<ExitReason> {
        Some(match self {
            ExitCode::None => return None,
            ExitCode::Normal => ExitReason::Normal,
            ExitCode::Shutdown => ExitReason::Shutdown,
            ExitCode::Killed => ExitReason::Killed,
            ExitCode::NoProc => ExitReason::NoProc,
            ExitCode::NoConnection => ExitReason::NoConnection,
        })
    }
}

/// The rarely used parts, allocated on first use so an idle actor stays small.
#[derive(Default)]
struct Extra {
    sys: VecDeque<Sys>,
    /// Links and monitors, keyed (`keyed.rs`): O(1) to add and remove however many there are.
    links: Keyed<ActorId, AnyRef>,
    monitors: Keyed<MonitorId, AnyRef>,
    /// Registered names and group memberships, with the registry each is in.
    names: Vec<(String, Weak<Registry>)>,
    groups: Vec<(String, Weak<Registry>)>,
    watchers: Watchers,
    blocked_senders: Vec<Waker>,
    dropped: u64,
    /// After death, a reason with text (others are in `Inner::exit`).
    exit: Option<ExitReason>,
    /// A name for people (`Spawn::name`).
    name: Option<Arc<str>>,
}

impl<M> Inner<M> {
    /// Queues a message, allocating an empty queue at the 4 slots `push_back` would grow it to
    /// (for messages up to 1 KiB) without going through its growth path: the first message
    /// since the queue was created or handed to a batch.
    #[inline(always)]
    fn push(&mut self, msg: Envelope<M>) {
        if self.queue.capacity() == 0 && std::mem::size_of::<Envelope<M>>() <= 1024 {
            self.queue = VecDeque::with_capacity(4);
        }
        self.queue.push_back(msg);
    }

    fn flag(&self, f: u8) -> bool {
        self.flags & f != 0
    }

    fn set_flag(&mut self, f: u8, on: bool) {
        if on {
            self.flags |= f;
        } else {
            self.flags &= !f;
        }
    }

    fn config(&self) -> MailboxConfig {
        MailboxConfig::from_parts(self.cap, self.overflow)
    }

    fn extra(&mut self) -> &mut Extra {
        self.extra.get_or_insert_with(Default::default)
    }

    fn has_sys(&self) -> bool {
        self.extra.as_ref().is_some_and(|e| !e.sys.is_empty())
    }

    /// Rule 2: what an arrival must do to get the message handled.
    #[must_use = "the wake must be run (after the lock is released), or the message is stranded"]
    fn wake(&mut self) -> Wake<M> {
        match self.status {
            Status::Idle => match self.dormant.take() {
                Some(d) => {
                    self.status = Status::Running;
                    let handed = self.flag(F_HANDED);
                    self.set_flag(F_HANDED, false);
                    Wake::Activate(d, handed)
                }
                None => Wake::Nothing,
            },
            Status::Waiting => {
                self.status = Status::Running;
                self.waker.clone().map_or(Wake::Nothing, Wake::Task)
            }
            _ => Wake::Nothing,
        }
    }
}

/// What an arrival does to the receiving actor (rule 2), carried out after the lock is released.
#[must_use = "a wake must be run, or the actor it should start stays waiting or idle with work queued"]
pub(crate) enum Wake<M> {
    Nothing,
    Task(Waker),
    /// The dormant, and whether it is a handed-off activation (rule 12).
    Activate(Box<dyn Dormant<M>>, bool),
}

impl<M> Wake<M> {
    /// Borrows the cell: an activation takes the references it keeps, a task wake needs none.
    fn run(self, cell: &Arc<Cell<M>>) {
        match self {
            Wake::Nothing => {}
            Wake::Task(w) => {
                crate::sched::note_task_wake();
                w.wake();
            }
            Wake::Activate(d, handed) => {
                if handed && !crate::sched::in_carrier_of(&cell.home) {
                    // `sched.rs`, rule 8: it handed off, and was woken where no slot takes it.
                    cell.no_chains();
                }
                d.activate(cell);
            }
        }
    }
}

impl<M> Cell<M> {
    /// `sched.rs`, rule 8: this actor's hand-offs do not form chains (from now on it hands
    /// off only to a full slot, rule 4).
    pub(crate) fn no_chains(&self) {
        self.no_chains.store(true, Ordering::Relaxed);
    }
}

impl<M: Send + 'static> Cell<M> {
    /// A new cell, `Running`: the caller spawns its first activation.
    pub(crate) fn new(config: MailboxConfig, links: Vec<AnyRef>, home: Arc<tokio::runtime::Handle>) -> Self {
        let extra = if links.is_empty() {
            None
        } else {
            let links = links.into_iter().map(|l| (l.id(), l)).collect();
            Some(Box::new(Extra { links, ..Default::default() }))
        };
        Self {
            id: ActorId::next_local(),
            home,
            killed: AtomicBool::new(false),
            sys_pending: AtomicBool::new(false),
            batched: AtomicU32::new(0),
            no_chains: AtomicBool::new(false),
            inner: Mutex::new(Inner {
                queue: VecDeque::new(),
                dormant: None,
                waker: None,
                extra,
                cap: config.raw_cap(),
                overflow: config.overflow(),
                status: Status::Running,
                exit: ExitCode::None,
                flags: 0,
            }),
        }
    }

    pub(crate) fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    pub(crate) fn send(self: &Arc<Self>, msg: M) -> Result<(), SendError<M>> {
        // Outside the lock: with `trace-context` this captures the sender's span.
        let msg = seal(msg);
        let mut g = self.inner.lock();
        if g.status == Status::Dead || g.flag(F_CLOSING) || self.is_killed() {
            drop(g);
            return Err(SendError::new(SendErrorKind::Gone, Some(open(msg))));
        }
        if g.config().capacity().is_some_and(|cap| g.queue.len() >= cap) {
            return self.send_full(g, msg);
        }
        // The path of nearly every send, kept free of the full mailbox's locals (an evicted
        // message kept across the unlock was copied through memory at every send, a
        // store-forwarding stall measured on `chameneos`).
        g.push(msg);
        let wake = g.wake();
        drop(g);
        wake.run(self);
        Ok(())
    }

    /// [`Cell::send`] to a full bounded mailbox: refused, dropped or evicting the oldest by its
    /// overflow policy (`mailbox.rs`). Out of line so the common path stays small.
    #[cold]
    #[inline(never)]
    fn send_full(
        self: &Arc<Self>,
        mut g: crate::loom::sync::MutexGuard<'_, Inner<M>>,
        msg: Envelope<M>,
    ) -> Result<(), SendError<M>> {
        match g.config().overflow() {
            Overflow::Backpressure => {
                drop(g);
                Err(SendError::new(SendErrorKind::Full, Some(open(msg))))
            }
            Overflow::DropNewest => {
                g.extra().dropped += 1;
                drop(g);
                drop(msg);
                Ok(())
            }
            Overflow::DropOldest => {
                let evicted = g.queue.pop_front();
                g.extra().dropped += 1;
                g.push(msg);
                let wake = g.wake();
                drop(g);
                drop(evicted);
                wake.run(self);
                Ok(())
            }
        }
    }

    /// Why a send would be refused right now, if it would (a snapshot: an adapter checks it
    /// before transforming its message, so the refusal can still hand the message back).
    #[must_use]
    pub(crate) fn refusal(&self) -> Option<SendErrorKind> {
        let g = self.inner.lock();
        if g.status == Status::Dead || g.flag(F_CLOSING) || self.is_killed() {
            return Some(SendErrorKind::Gone);
        }
        let full = g.config().capacity().is_some_and(|c| g.queue.len() >= c);
        (full && g.config().overflow() == Overflow::Backpressure).then_some(SendErrorKind::Full)
    }

    /// Registers a blocked `send_wait` caller; returns false when there is room (or the actor is
    /// dead) so the caller should retry at once.
    #[must_use = "false means there is room already: the caller must retry, or it waits for a wake that never comes"]
    pub(crate) fn wait_for_room(&self, waker: &Waker) -> bool {
        let mut g = self.inner.lock();
        let full = g.status != Status::Dead && g.config().capacity().is_some_and(|c| g.queue.len() >= c);
        if full {
            g.extra().blocked_senders.push(waker.clone());
        }
        full
    }

    /// The activation's next item, in one locked step at most (rules 3, 5 and 6).
    ///
    /// Messages come from `batch` while it holds some: an unbounded mailbox holding several
    /// gives its whole queue to the batch under one lock, and the batch is then served without
    /// locking, a kill and the system lane still checked before each message. A bounded
    /// mailbox is served one by one, so its capacity keeps counting every undelivered message.
    ///
    /// When nothing is there: without `cx` the answer is `Ready(Empty)`; with `cx` the task
    /// waits (status `Waiting`, its waker stored) and the answer is `Pending`, unless the
    /// sweeper asked it to park (rule 4), which answers `Ready(Empty)`.
    #[must_use = "the item must be handled, and `Pending` means the task now waits or hands off"]
    pub(crate) fn next_item(
        self: &Arc<Self>,
        batch: &mut VecDeque<Envelope<M>>,
        slot: &mut Option<Envelope<M>>,
        cx: Option<&Context<'_>>,
    ) -> Poll<Item> {
        self.next_item_with(batch, slot, cx, crate::sched::hand_off)
    }

    /// [`Cell::next_item`] with the carrier's hand-off decision (`sched::hand_off`, given
    /// whether this actor's hand-offs may form chains) passed in: the loom models decide it
    /// themselves, as the scheduler's thread-locals are not modelled. Inlined always, so the
    /// runtime's `next_item` is this body with `sched::hand_off` called in place.
    #[inline(always)]
    #[must_use = "the item must be handled, and `Pending` means the task now waits or hands off"]
    fn next_item_with(
        self: &Arc<Self>,
        batch: &mut VecDeque<Envelope<M>>,
        slot: &mut Option<Envelope<M>>,
        cx: Option<&Context<'_>>,
        hand_off: impl FnOnce(bool) -> bool,
    ) -> Poll<Item> {
        if !batch.is_empty() {
            if self.is_killed() {
                return Poll::Ready(Item::Killed);
            }
            if !self.sys_pending.load(Ordering::Acquire) {
                return Poll::Ready(self.serve_batch(batch, slot));
            }
        }
        let mut g = self.inner.lock();
        if self.is_killed() {
            return Poll::Ready(Item::Killed);
        }
        if let Some(e) = g.extra.as_mut() {
            if let Some(s) = e.sys.pop_front() {
                if e.sys.is_empty() {
                    self.sys_pending.store(false, Ordering::Release);
                }
                return Poll::Ready(Item::Sys(s));
            }
        }
        if !batch.is_empty() {
            drop(g);
            return Poll::Ready(self.serve_batch(batch, slot));
        }
        if g.config().capacity().is_none() && g.queue.len() >= 2 {
            std::mem::swap(&mut g.queue, batch);
            g.set_flag(F_ACTIVE, true);
            g.set_flag(F_PARK, false);
            drop(g);
            return Poll::Ready(self.serve_batch(batch, slot));
        }
        *slot = g.queue.pop_front();
        if slot.is_some() {
            g.set_flag(F_ACTIVE, true);
            g.set_flag(F_PARK, false);
            let unblock = match g.extra.as_mut() {
                Some(e) if !e.blocked_senders.is_empty() => Some(std::mem::take(&mut e.blocked_senders)),
                _ => None,
            };
            drop(g);
            if let Some(unblock) = unblock {
                for w in unblock {
                    w.wake();
                }
            }
            return Poll::Ready(Item::Msg);
        }
        let Some(cx) = cx else {
            return Poll::Ready(Item::Empty);
        };
        if g.flag(F_PARK) {
            g.set_flag(F_PARK, false);
            return Poll::Ready(Item::Empty);
        }
        if hand_off(!self.no_chains.load(Ordering::Relaxed)) {
            // Rule 12: the carrier parks this activation once this poll returns.
            g.status = Status::Handing;
        } else {
            g.status = Status::Waiting;
            match &g.waker {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => g.waker = Some(cx.waker().clone()),
            }
        }
        let register = !g.flag(F_SWEPT);
        g.set_flag(F_SWEPT, true);
        drop(g);
        if register {
            crate::sweeper::register(Arc::downgrade(self) as std::sync::Weak<dyn crate::sweeper::Sweepable>);
        }
        Poll::Pending
    }

    fn serve_batch(&self, batch: &mut VecDeque<Envelope<M>>, slot: &mut Option<Envelope<M>>) -> Item {
        *slot = batch.pop_front();
        self.batched.store(batch.len() as u32, Ordering::Relaxed);
        if slot.is_some() {
            Item::Msg
        } else {
            Item::Empty
        }
    }

    /// Rule 3: parks the state unless something arrived or a kill is pending.
    #[must_use = "an `Err` hands the state back: the activation must go on with it"]
    pub(crate) fn try_hibernate<D: Dormant<M> + 'static>(&self, state: Box<D>) -> Result<(), Box<D>> {
        let mut g = self.inner.lock();
        if self.is_killed() || !g.queue.is_empty() || g.has_sys() {
            return Err(state);
        }
        g.status = Status::Idle;
        g.waker = None;
        g.dormant = Some(state);
        Ok(())
    }

    /// Rule 12: parks a handed-off activation, unless something arrived or a kill is pending
    /// since it chose to hand off; then it is given back, `Running`, to be polled again.
    #[must_use = "an `Err` hands the activation back, `Running`: the carrier must poll it again"]
    pub(crate) fn park_handed<D: Dormant<M> + 'static>(&self, activation: Box<D>) -> Result<(), Box<D>> {
        let mut g = self.inner.lock();
        if g.status != Status::Handing || self.is_killed() || !g.queue.is_empty() || g.has_sys() {
            if g.status == Status::Handing {
                g.status = Status::Running;
            }
            return Err(activation);
        }
        g.status = Status::Idle;
        g.set_flag(F_HANDED, true);
        g.dormant = Some(activation);
        Ok(())
    }

    /// Stores the waker a kill wakes (rule 6) for a task awaiting something other than its
    /// mailbox; false when a kill came first, which it then cannot wake: the caller must see
    /// to another poll.
    #[must_use = "false means a kill came first and will not wake this task: poll it again"]
    pub(crate) fn set_waker(&self, waker: &Waker) -> bool {
        let mut g = self.inner.lock();
        match &g.waker {
            Some(w) if w.will_wake(waker) => {}
            _ => g.waker = Some(waker.clone()),
        }
        !self.is_killed()
    }

    /// User messages waiting: queued, plus those an activation took in a batch and has not
    /// handed to the actor yet. The one being handled is not counted.
    pub(crate) fn mailbox_len(&self) -> usize {
        let g = self.inner.lock();
        g.queue.len() + self.batched.load(Ordering::Relaxed) as usize
    }

    pub(crate) fn set_name(&self, name: Arc<str>) {
        self.inner.lock().extra().name = Some(name);
    }

    /// Its name (`Spawn::name`), else the first name it is registered under.
    pub(crate) fn name(&self) -> Option<String> {
        let g = self.inner.lock();
        let e = g.extra.as_ref()?;
        e.name.as_deref().map(str::to_owned).or_else(|| e.names.first().map(|(n, _)| n.clone()))
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.inner.lock().extra.as_ref().map_or(0, |e| e.dropped)
    }

    /// Rule 7. Watchers (`terminated()`) are told last, so a caller that saw the death knows
    /// its links and monitors have already been signalled.
    pub(crate) fn die(self: &Arc<Self>, reason: ExitReason) {
        let (extra, queue, dormant) = {
            let mut g = self.inner.lock();
            if g.status == Status::Dead {
                return;
            }
            g.status = Status::Dead;
            g.waker = None;
            let queue = std::mem::take(&mut g.queue);
            let dormant = g.dormant.take();
            let extra = g.extra.take();
            g.exit = ExitCode::of(&reason);
            if g.exit == ExitCode::None {
                g.extra = Some(Box::new(Extra { exit: Some(reason.clone()), ..Default::default() }));
            }
            (extra, queue, dormant)
        };
        drop(dormant);
        drop(queue);
        let (monitors, watchers) = match extra {
            Some(e) => notify_death(self.id, &reason, *e),
            None => (Keyed::default(), Vec::new()),
        };
        let left = monitors.len();
        if left > DOWN_CHUNK && cfg!(not(troupe_loom)) {
            // Rule 13, on the runtime this death happens on; outside any runtime nothing waits
            // behind the signals, and they are sent below. Dropped unrun (its runtime shutting
            // down), the task signals them at once too.
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                let mut dying =
                    Dying { cell: Arc::clone(self), reason, monitors: monitors.into_values(), left, watchers };
                rt.spawn(async move {
                    while dying.signal(DOWN_CHUNK) {
                        tokio::task::yield_now().await;
                    }
                });
                return;
            }
        }
        if left > 0 {
            signal_downs(self.id, &reason, &mut monitors.into_values(), left);
        }
        self.settle(&reason, watchers);
    }

    /// Rule 7's last step: the death is settled and its watchers are told.
    fn settle(&self, reason: &ExitReason, mut watchers: Watchers) {
        {
            let mut g = self.inner.lock();
            g.set_flag(F_SETTLED, true);
            if let Some(e) = g.extra.as_mut() {
                watchers.append(&mut e.watchers);
            }
        }
        for w in watchers {
            let _ = w.send(reason.clone());
        }
    }
}

/// Signals the next `n` of `monitors` a `Down`. `remote_api.rs` rule 5: a transport sends the
/// remote `Down`s of these monitors per peer once they have all been signalled.
fn signal_downs(id: ActorId, reason: &ExitReason, monitors: &mut IntoValues<MonitorId, AnyRef>, n: usize) {
    crate::remote_api::deferring(|| {
        for (mid, watcher) in monitors.take(n) {
            watcher.0.push_sys(Sys::Down(Down { id: mid, actor: id, reason: reason.clone() }));
        }
    });
}

/// Who awaits an actor's death (`terminated()`), told its reason last (rule 7).
type Watchers = Vec<oneshot::Sender<ExitReason>>;

/// Rule 13: a death with more monitors than this signals them from a task of its own, this
/// many at a time.
pub(crate) const DOWN_CHUNK: usize = 1024;

/// Rule 13: a death's monitors not yet signalled, and its watchers. Dropped, it signals the
/// monitors left, marks the death settled and tells the watchers (rule 7's order).
struct Dying<M: Send + 'static> {
    cell: Arc<Cell<M>>,
    reason: ExitReason,
    monitors: IntoValues<MonitorId, AnyRef>,
    /// Live monitors still in `monitors` (its slots may hold holes).
    left: usize,
    watchers: Watchers,
}

impl<M: Send + 'static> Dying<M> {
    /// Signals up to `n` more monitors; whether some are left.
    fn signal(&mut self, n: usize) -> bool {
        let n = n.min(self.left);
        if n > 0 {
            signal_downs(self.cell.id, &self.reason, &mut self.monitors, n);
            self.left -= n;
        }
        self.left > 0
    }
}

impl<M: Send + 'static> Drop for Dying<M> {
    fn drop(&mut self) {
        self.signal(usize::MAX);
        self.cell.settle(&self.reason, std::mem::take(&mut self.watchers));
    }
}

/// Signals links, releases names, wakes blocked senders; returns the monitors, to be signalled
/// next, and the watchers.
fn notify_death(id: ActorId, reason: &ExitReason, e: Extra) -> (Keyed<MonitorId, AnyRef>, Watchers) {
    for (_, l) in e.links.into_values() {
        l.0.push_sys(Sys::Exit(ExitSignal { from: id, reason: reason.clone() }));
    }
    if !e.names.is_empty() || !e.groups.is_empty() {
        for (name, reg) in &e.names {
            if let Some(reg) = reg.upgrade() {
                reg.forget(id, name, false);
            }
        }
        for (group, reg) in &e.groups {
            if let Some(reg) = reg.upgrade() {
                reg.forget(id, group, true);
            }
        }
    }
    for w in e.blocked_senders {
        w.wake();
    }
    (e.monitors, e.watchers)
}

impl<M: Send + 'static> crate::sweeper::Sweepable for Cell<M> {
    fn sweep(self: Arc<Self>) -> bool {
        let mut g = self.inner.lock();
        match g.status {
            Status::Running | Status::Handing => {
                g.set_flag(F_ACTIVE, false);
                true
            }
            Status::Waiting if g.flag(F_ACTIVE) => {
                g.set_flag(F_ACTIVE, false);
                true
            }
            Status::Waiting => {
                // Rule 4: nothing to do for a whole sweep period; ask the task to park.
                g.set_flag(F_SWEPT, false);
                g.set_flag(F_PARK, true);
                g.status = Status::Running;
                let w = g.waker.clone();
                drop(g);
                if let Some(w) = w {
                    w.wake();
                }
                false
            }
            Status::Idle if g.flag(F_HANDED) && g.flag(F_ACTIVE) => {
                g.set_flag(F_ACTIVE, false);
                true
            }
            Status::Idle if g.flag(F_HANDED) => {
                // Rule 12: a handed-off activation idle for a whole sweep period is run once
                // more, asked to park its state (rule 4), so it ends and frees its future.
                g.set_flag(F_SWEPT, false);
                g.set_flag(F_PARK, true);
                let wake = match g.wake() {
                    // Woken to park, not by a message: says nothing about chains.
                    Wake::Activate(d, _) => Wake::Activate(d, false),
                    other => other,
                };
                drop(g);
                wake.run(&self);
                false
            }
            Status::Idle | Status::Dead => {
                g.set_flag(F_SWEPT, false);
                false
            }
        }
    }
}

impl<M: Send + 'static> Process for Cell<M> {
    fn id(&self) -> ActorId {
        self.id
    }

    fn home(&self) -> Option<&tokio::runtime::Handle> {
        Some(&*self.home)
    }

    fn is_alive(&self) -> bool {
        !self.is_killed() && self.inner.lock().status != Status::Dead
    }

    fn push_sys(self: Arc<Self>, sys: Sys) -> bool {
        let mut g = self.inner.lock();
        if g.status == Status::Dead {
            return false;
        }
        let mut unblock = Vec::new();
        if let Sys::Drain(_) = &sys {
            // Rule 11; blocked `send_wait`s retry and see `Gone`.
            g.set_flag(F_CLOSING, true);
            unblock = std::mem::take(&mut g.extra().blocked_senders);
        }
        let e = g.extra();
        if let Sys::Exit(sig) = &sys {
            // OTP: an exit signal over a link also removes that link.
            e.links.remove(&sig.from);
        }
        e.sys.push_back(sys);
        self.sys_pending.store(true, Ordering::Release);
        let wake = g.wake();
        drop(g);
        wake.run(&self);
        for w in unblock {
            w.wake();
        }
        true
    }

    fn kill(self: Arc<Self>) {
        let mut g = self.inner.lock();
        if g.status == Status::Dead || self.is_killed() {
            return;
        }
        self.killed.store(true, Ordering::Release);
        match g.status {
            Status::Idle => {
                let d = g.dormant.take();
                drop(g);
                if let Some(d) = d {
                    d.drop_killed();
                }
                self.die(ExitReason::Killed);
            }
            _ => {
                let w = g.waker.clone();
                drop(g);
                if let Some(w) = w {
                    w.wake();
                }
            }
        }
    }

    fn add_link(&self, other: AnyRef) -> bool {
        let mut g = self.inner.lock();
        if g.status == Status::Dead || self.is_killed() {
            return false;
        }
        let e = g.extra();
        if !e.links.contains(&other.id()) {
            e.links.insert(other.id(), other);
        }
        true
    }

    fn remove_link(&self, other: ActorId) {
        let mut g = self.inner.lock();
        if let Some(e) = g.extra.as_mut() {
            e.links.remove(&other);
        }
    }

    fn add_monitor(&self, id: MonitorId, watcher: AnyRef) -> bool {
        let mut g = self.inner.lock();
        if g.status == Status::Dead {
            return false;
        }
        // A monitor id names one monitor: adding it again replaces the watcher (issue 36).
        g.extra().monitors.insert(id, watcher);
        true
    }

    fn remove_monitor(&self, id: MonitorId) {
        let mut g = self.inner.lock();
        if let Some(e) = g.extra.as_mut() {
            e.monitors.remove(&id);
        }
    }

    fn add_name(&self, reg: &Arc<Registry>, name: &str, group: bool) -> bool {
        let mut g = self.inner.lock();
        if g.status == Status::Dead || self.is_killed() {
            return false;
        }
        let e = g.extra();
        let list = if group { &mut e.groups } else { &mut e.names };
        list.push((name.to_owned(), Arc::downgrade(reg)));
        true
    }

    fn remove_name(&self, reg: &Arc<Registry>, name: &str, group: bool) {
        let mut g = self.inner.lock();
        if let Some(e) = g.extra.as_mut() {
            let list = if group { &mut e.groups } else { &mut e.names };
            list.retain(|(n, r)| !(n == name && std::ptr::eq(r.as_ptr(), Arc::as_ptr(reg))));
        }
    }

    fn name(&self) -> Option<String> {
        Cell::name(self)
    }

    fn relation_counts(&self) -> (usize, usize) {
        self.inner.lock().extra.as_ref().map_or((0, 0), |e| (e.links.len(), e.monitors.len()))
    }

    fn watch(&self) -> Result<oneshot::Receiver<ExitReason>, ExitReason> {
        let mut g = self.inner.lock();
        if g.status == Status::Dead && g.flag(F_SETTLED) {
            let text = g.extra.as_ref().and_then(|e| e.exit.clone());
            return Err(g.exit.reason().or(text).unwrap_or(ExitReason::NoProc));
        }
        let (tx, rx) = oneshot::channel();
        g.extra().watchers.push(tx);
        Ok(rx)
    }
}

#[cfg(all(test, troupe_loom))]
mod models;

#[cfg(test)]
mod tests {
    /// The cell of an idle actor stays 112 bytes (128 with the `Arc`'s counts, the
    /// allocator's 128-byte class): new per-actor fields must fit in its padding or go in
    /// `Extra` (allocated on first use).
    #[test]
    #[cfg(all(target_pointer_width = "64", not(troupe_loom)))]
    fn the_cell_stays_small() {
        assert_eq!(std::mem::size_of::<super::Cell<()>>(), 112);
    }

    /// `reports.rs` rule 4: without `trace-context` a queued message is the bare message, so
    /// the mailbox costs what it did before the feature existed.
    #[test]
    #[cfg(not(feature = "trace-context"))]
    fn without_trace_context_a_queued_message_is_the_bare_message() {
        assert_eq!(std::any::type_name::<super::Envelope<u64>>(), "u64");
        assert_eq!(std::mem::size_of::<super::Envelope<u64>>(), 8);
    }
}
