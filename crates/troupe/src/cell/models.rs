//! Loom models of the cell's races (`cell.rs`, "Loom models", which says which rules each one
//! checks and what the models stand in for). Built only as unit tests with `--cfg troupe_loom`;
//! run them with `scripts/loom.sh`.
//!
//! Every model drives the cell's real transitions from loom threads. The model's actor
//! (`actor` below) is `spawn.rs`'s activation loop reduced to its calls on the cell; when it
//! parks (its state, or its whole activation after a hand-off) it blocks until its dormant is
//! activated (it goes on: the activation the waker would have started) or dropped (a kill: it
//! ends). So a lost wake-up is a thread blocked for ever, which loom reports as a deadlock.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::{Arc, LazyLock};
use std::task::Poll;

use loom::sync::atomic::AtomicUsize;
use loom::sync::Notify;
use loom::thread;
use std::sync::atomic::Ordering::SeqCst;
use tokio::sync::oneshot;

use super::{Cell, Dormant, Item, Status, Sys};
use crate::any_ref::Process;
use crate::sweeper::Sweepable;
use crate::{ExitReason, MailboxConfig, SendErrorKind};

/// Thread switches each model may force (unless `LOOM_MAX_PREEMPTIONS` says otherwise). Every
/// race here is between one locked step and one other, so two preemptions already put each
/// inside the other; five leave room for the third thread and a retry, and the whole suite
/// still explores in seconds (about 80,000 interleavings; the models with two threads are
/// exhaustive well before that bound).
const PREEMPTIONS: usize = 5;

/// Runs `f` under every interleaving loom tries within `preemptions`.
fn check(preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(preemptions);
    }
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = runs.clone();
    builder.check(move || {
        counted.fetch_add(1, SeqCst);
        f();
    });
    // Shown with `--nocapture` (`scripts/loom.sh`): how much each model explored.
    let name = std::thread::current().name().unwrap_or("a loom model").to_owned();
    println!("{name}: {} interleavings", runs.load(SeqCst));
}

/// The home runtime of the models' cells (`cell.rs`, rule 9). Never run: the models' dormants
/// resume the model's actor thread instead of spawning on it.
static HOME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread().build().expect("a current-thread runtime for the loom models' cells")
});

fn new_cell(config: MailboxConfig) -> Arc<Cell<u32>> {
    Arc::new(Cell::new(config, Vec::new(), Arc::new(HOME.handle().clone())))
}

/// A death watcher (rule 7), registered before the race.
fn watch(cell: &Arc<Cell<u32>>) -> oneshot::Receiver<ExitReason> {
    cell.watch().expect("a new cell is alive")
}

/// Rule 7 after the race: dead, nothing left queued, the watcher told `reason`, and nothing
/// accepted any more.
fn assert_dead(cell: &Arc<Cell<u32>>, mut watcher: oneshot::Receiver<ExitReason>, reason: ExitReason) {
    {
        let g = cell.inner.lock();
        assert_eq!(g.status, Status::Dead);
        assert!(g.queue.is_empty(), "rule 7: a death drops what was queued");
        assert!(g.dormant.is_none(), "rule 7: a death drops the parked state");
    }
    assert_eq!(watcher.try_recv().ok(), Some(reason), "rule 7: the watcher is told once the actor is dead");
    let refused = cell.send(99).expect_err("rule 7: nothing is accepted after death");
    assert_eq!(refused.kind(), SendErrorKind::Gone);
}

/// How a parked actor of the model comes back: its dormants count here and wake its thread.
struct Resumes {
    /// Dormants activated (rule 2): an arrival, or the sweeper's park request (rule 12).
    activated: AtomicUsize,
    /// Dormants dropped without being activated (a kill, or a death).
    dropped: AtomicUsize,
    /// Parked states a kill reported through `drop_killed` (rule 6).
    killed: AtomicUsize,
    notify: Notify,
}

impl Resumes {
    fn new() -> Arc<Self> {
        Arc::new(Resumes {
            activated: AtomicUsize::new(0),
            dropped: AtomicUsize::new(0),
            killed: AtomicUsize::new(0),
            notify: Notify::new(),
        })
    }

    /// Blocks the actor's thread until the dormant it just parked is activated (true) or
    /// dropped (false); `seen` counts the activations it has already gone on from. (loom's
    /// `Notify` may wake spuriously, as a real thread may: it counts, it does not trust.)
    fn wait(&self, seen: &mut usize) -> bool {
        loop {
            if self.dropped.load(SeqCst) > 0 {
                return false;
            }
            let activated = self.activated.load(SeqCst);
            if activated > *seen {
                *seen = activated;
                return true;
            }
            self.notify.wait();
        }
    }
}

/// A dormant (a parked state, or a handed-off activation) of the model's actor.
struct Parked {
    resumes: Arc<Resumes>,
    fired: bool,
}

impl Parked {
    fn boxed(resumes: &Arc<Resumes>) -> Box<Self> {
        Box::new(Parked { resumes: resumes.clone(), fired: false })
    }

    /// A dormant the cell gave back (`Err` from a park): the activation goes on with it, so
    /// dropping it is no resume.
    fn taken_back(&mut self) {
        self.fired = true;
    }
}

impl Dormant<u32> for Parked {
    /// Where the runtime would schedule an activation, the model's actor thread goes on.
    fn activate(mut self: Box<Self>, _cell: &Arc<Cell<u32>>) {
        self.fired = true;
        self.resumes.activated.fetch_add(1, SeqCst);
        self.resumes.notify.notify();
    }

    fn drop_killed(self: Box<Self>) {
        self.resumes.killed.fetch_add(1, SeqCst);
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        if !self.fired {
            self.resumes.dropped.fetch_add(1, SeqCst);
            self.resumes.notify.notify();
        }
    }
}

/// How the model's actor behaves.
#[derive(Clone, Copy)]
struct Plan {
    /// It has handled a message before: on an empty mailbox it waits (with a context) rather
    /// than parking its state at once (rule 4).
    waits: bool,
    /// Its carrier's slot is full (`sched.rs`, rule 4): on an empty mailbox it hands off.
    hands_off: bool,
    /// It stops (`Normal`) after this many user messages.
    until: usize,
}

/// What the model's actor took, and how it ended.
#[derive(Debug, Default)]
struct Run {
    msgs: Vec<u32>,
    ended: Option<ExitReason>,
}

/// `spawn.rs`'s activation loop, reduced to its calls on the cell.
fn actor(cell: &Arc<Cell<u32>>, resumes: &Arc<Resumes>, plan: Plan) -> Run {
    let mut run = Run::default();
    let mut batch = VecDeque::new();
    let mut slot = None;
    let mut waits = plan.waits;
    let mut draining = None;
    let mut resumed = 0;
    let end = |run: &mut Run, reason: ExitReason| {
        run.ended = Some(reason.clone());
        cell.die(reason);
    };
    loop {
        let item = if waits && draining.is_none() {
            loom::future::block_on(poll_fn(|cx| loop {
                // What `spawn.rs`'s `Life` does before each poll of the loop (rule 6). It
                // stores no waker for a poll that waits on the mailbox: `next_item` does.
                if cell.is_killed() {
                    return Poll::Ready(Some(Item::Killed));
                }
                match cell.next_item_with(&mut batch, &mut slot, Some(cx), |_| plan.hands_off) {
                    Poll::Ready(item) => return Poll::Ready(Some(item)),
                    // The carrier's part (`sched.rs`, rule 4): park the activation after the poll.
                    Poll::Pending if plan.hands_off => match cell.park_handed(Parked::boxed(resumes)) {
                        Ok(()) => return Poll::Ready(None),
                        Err(mut back) => {
                            back.taken_back();
                            continue;
                        }
                    },
                    Poll::Pending => return Poll::Pending,
                }
            }))
        } else {
            match cell.next_item(&mut batch, &mut slot, None) {
                Poll::Ready(item) => Some(item),
                Poll::Pending => unreachable!("next_item without a context never waits"),
            }
        };
        let Some(item) = item else {
            // Handed off and parked (rule 12): resumed by an arrival or the sweeper, or dropped
            // by a kill (which already made it die).
            if !resumes.wait(&mut resumed) {
                run.ended = Some(ExitReason::Killed);
                return run;
            }
            continue;
        };
        match item {
            Item::Msg => {
                run.msgs.push(slot.take().expect("`Item::Msg` fills the slot"));
                waits = true;
                if run.msgs.len() == plan.until {
                    end(&mut run, ExitReason::Normal);
                    return run;
                }
            }
            Item::Sys(Sys::Drain(reason)) => {
                waits = true;
                draining = Some(reason);
            }
            Item::Sys(Sys::Stop(reason)) => {
                end(&mut run, reason);
                return run;
            }
            Item::Sys(_) => waits = true,
            Item::Killed => {
                end(&mut run, ExitReason::Killed);
                return run;
            }
            Item::Empty => {
                if let Some(reason) = draining.take() {
                    end(&mut run, reason);
                    return run;
                }
                match cell.try_hibernate(Parked::boxed(resumes)) {
                    Ok(()) => {
                        if !resumes.wait(&mut resumed) {
                            run.ended = Some(ExitReason::Killed);
                            return run;
                        }
                    }
                    Err(mut back) => back.taken_back(),
                }
            }
        }
    }
}

/// Starts the model's actor on its own loom thread.
fn spawn_actor(cell: &Arc<Cell<u32>>, plan: Plan) -> (thread::JoinHandle<Run>, Arc<Resumes>) {
    let resumes = Resumes::new();
    let (c, r) = (cell.clone(), resumes.clone());
    (thread::spawn(move || actor(&c, &r, plan)), resumes)
}

const WAITING: Plan = Plan { waits: true, hands_off: false, until: usize::MAX };
const FRESH: Plan = Plan { waits: false, hands_off: false, until: usize::MAX };
const HANDING: Plan = Plan { waits: true, hands_off: true, until: usize::MAX };

/// Rules 2 and 3: two senders against a task that is about to wait; both messages are taken,
/// each sender's in order (the second may find the first still queued: a batch).
#[test]
fn a_send_wakes_a_waiting_task() {
    check(PREEMPTIONS, || {
        let cell = new_cell(MailboxConfig::unbounded());
        let watcher = watch(&cell);
        let (actor, _) = spawn_actor(&cell, Plan { until: 3, ..WAITING });
        let other = {
            let cell = cell.clone();
            thread::spawn(move || cell.send(3).expect("alive"))
        };
        cell.send(1).expect("alive");
        cell.send(2).expect("alive");
        other.join().unwrap();
        let mut run = actor.join().unwrap();
        let from_one_sender: Vec<u32> = run.msgs.iter().copied().filter(|&m| m != 3).collect();
        assert_eq!(from_one_sender, [1, 2], "one sender's messages are taken in order");
        run.msgs.sort_unstable();
        assert_eq!(run.msgs, [1, 2, 3]);
        assert_dead(&cell, watcher, ExitReason::Normal);
    });
}

/// Rules 2 and 3: a fresh activation parks its state (rule 4, at once) while a message
/// arrives: either the park sees it and the activation goes on, or the send activates the
/// parked state, exactly once.
#[test]
fn a_send_activates_a_parking_actor() {
    check(PREEMPTIONS, || {
        let cell = new_cell(MailboxConfig::unbounded());
        let watcher = watch(&cell);
        let (actor, resumes) = spawn_actor(&cell, Plan { until: 1, ..FRESH });
        cell.send(7).expect("alive");
        let run = actor.join().unwrap();
        assert_eq!(run.msgs, [7]);
        assert!(resumes.activated.load(SeqCst) <= 1);
        assert_eq!(resumes.dropped.load(SeqCst), 0);
        assert_dead(&cell, watcher, ExitReason::Normal);
    });
}

/// The sweeper asks `plan`'s actor to park while a message arrives: the message is taken,
/// whether the actor parked first or not.
fn a_sweep_races_a_send(plan: Plan) {
    check(PREEMPTIONS, move || {
        let cell = new_cell(MailboxConfig::unbounded());
        let watcher = watch(&cell);
        let (actor, _) = spawn_actor(&cell, Plan { until: 1, ..plan });
        let sweeper = {
            let cell = cell.clone();
            thread::spawn(move || {
                let _ = cell.sweep();
            })
        };
        cell.send(7).expect("alive");
        sweeper.join().unwrap();
        assert_eq!(actor.join().unwrap().msgs, [7]);
        assert_dead(&cell, watcher, ExitReason::Normal);
    });
}

/// Rules 2, 3 and 4: the sweeper asks a waiting task to park while a message arrives and the
/// task goes to wait.
#[test]
fn a_park_request_races_a_send() {
    a_sweep_races_a_send(WAITING);
}

/// Rules 3, 6 and 7: a kill against a send and a task going to wait: the task stops (it is
/// woken, or sees the kill before it waits), the actor dies once with `Killed`, and the
/// message was refused, taken, or dropped at the death: never left queued.
#[test]
fn a_kill_races_a_send_and_a_wait() {
    check(PREEMPTIONS, || {
        let cell = new_cell(MailboxConfig::unbounded());
        let watcher = watch(&cell);
        let (actor, _) = spawn_actor(&cell, WAITING);
        let killer = {
            let cell = cell.clone();
            thread::spawn(move || cell.kill())
        };
        if let Err(e) = cell.send(7) {
            assert_eq!(e.kind(), SendErrorKind::Gone);
        }
        killer.join().unwrap();
        let run = actor.join().unwrap();
        assert_eq!(run.ended, Some(ExitReason::Killed));
        assert!(run.msgs.len() <= 1);
        assert_dead(&cell, watcher, ExitReason::Killed);
    });
}

/// Rules 3, 6 and 7: a kill against a fresh activation parking its state: the park fails and
/// the activation sees the kill, or the kill finds the state parked, reports it
/// (`drop_killed`) and the actor dies at once. Either way it dies once.
#[test]
fn a_kill_races_a_park() {
    check(PREEMPTIONS, || {
        let cell = new_cell(MailboxConfig::unbounded());
        let watcher = watch(&cell);
        let (actor, resumes) = spawn_actor(&cell, FRESH);
        cell.clone().kill();
        assert_eq!(actor.join().unwrap().ended, Some(ExitReason::Killed));
        assert_eq!(resumes.activated.load(SeqCst), 0);
        let dropped = resumes.dropped.load(SeqCst);
        assert!(dropped <= 1);
        assert_eq!(resumes.killed.load(SeqCst), dropped, "rule 6: a parked state is dropped by the kill");
        assert_dead(&cell, watcher, ExitReason::Killed);
    });
}

/// Rules 2 and 12: a send against a hand-off: an arrival at a `Handing` actor only enqueues,
/// so the carrier's `park_handed` must see it and give the activation back; or the activation
/// is parked first and the send activates it.
#[test]
fn a_send_races_a_hand_off() {
    check(PREEMPTIONS, || {
        let cell = new_cell(MailboxConfig::unbounded());
        let watcher = watch(&cell);
        let (actor, resumes) = spawn_actor(&cell, Plan { until: 1, ..HANDING });
        cell.send(7).expect("alive");
        assert_eq!(actor.join().unwrap().msgs, [7]);
        assert!(resumes.activated.load(SeqCst) <= 1);
        assert_dead(&cell, watcher, ExitReason::Normal);
    });
}

/// Rules 6, 7 and 12: a kill against a hand-off: `park_handed` sees the kill and the
/// activation stops at its next poll, or the kill finds it parked and drops it.
#[test]
fn a_kill_races_a_hand_off() {
    check(PREEMPTIONS, || {
        let cell = new_cell(MailboxConfig::unbounded());
        let watcher = watch(&cell);
        let (actor, resumes) = spawn_actor(&cell, HANDING);
        cell.clone().kill();
        assert_eq!(actor.join().unwrap().ended, Some(ExitReason::Killed));
        assert_eq!(resumes.activated.load(SeqCst), 0);
        assert_dead(&cell, watcher, ExitReason::Killed);
    });
}

/// Rules 4 and 12: the sweeper wakes a handed activation to park its state while a message
/// arrives: the activation takes the message, or parks its state and the send activates it.
#[test]
fn a_handed_activation_swept_races_a_send() {
    a_sweep_races_a_send(HANDING);
}

/// Rules 7 and 11: a drain request against a send: a message accepted was queued before the
/// drain and is handled before the actor stops; a send after it is refused as `Gone`.
#[test]
fn a_drain_races_a_send() {
    check(PREEMPTIONS, || {
        let cell = new_cell(MailboxConfig::unbounded());
        let watcher = watch(&cell);
        let (actor, _) = spawn_actor(&cell, WAITING);
        let drainer = {
            let cell = cell.clone();
            thread::spawn(move || assert!(cell.push_sys(Sys::Drain(ExitReason::Normal)), "alive until drained"))
        };
        let sent = cell.send(7);
        drainer.join().unwrap();
        let run = actor.join().unwrap();
        match sent {
            Ok(()) => assert_eq!(run.msgs, [7], "rule 11: queued before the drain, so handled"),
            Err(e) => {
                assert_eq!(e.kind(), SendErrorKind::Gone);
                assert!(run.msgs.is_empty());
            }
        }
        assert_eq!(run.ended, Some(ExitReason::Normal));
        assert_dead(&cell, watcher, ExitReason::Normal);
    });
}

/// Rule 2 and `mailbox.rs` rule 3: a sender blocked on a full bounded mailbox (`send_wait`'s
/// loop, as `actor_ref.rs` has it) against the take that frees room: the sender is woken, and
/// both messages are handled in order.
#[test]
fn a_blocked_sender_is_woken_by_the_take() {
    check(PREEMPTIONS, || {
        let cell = new_cell(MailboxConfig::bounded(1));
        let watcher = watch(&cell);
        cell.send(1).expect("room for one");
        let (actor, _) = spawn_actor(&cell, Plan { until: 2, ..WAITING });
        let mut msg = Some(2);
        loom::future::block_on(poll_fn(|cx| match cell.send(msg.take().expect("not sent yet")) {
            Ok(()) => Poll::Ready(()),
            Err(e) => {
                assert_eq!(e.kind(), SendErrorKind::Full);
                msg = e.into_inner();
                if !cell.wait_for_room(cx.waker()) {
                    cx.waker().wake_by_ref();
                }
                Poll::Pending
            }
        }));
        assert_eq!(actor.join().unwrap().msgs, [1, 2]);
        assert_dead(&cell, watcher, ExitReason::Normal);
    });
}

/// Rule 5: a system message pushed before the activation asks for its next item comes before
/// the user messages the activation already holds in a batch (taken out of the queue under an
/// earlier lock): `sys_pending` sends the batch path back to the lock.
#[test]
fn a_system_message_overtakes_a_batch() {
    check(PREEMPTIONS, || {
        let cell = new_cell(MailboxConfig::unbounded());
        for m in 1..=3 {
            cell.send(m).expect("alive");
        }
        let pushed = Arc::new(loom::sync::atomic::AtomicBool::new(false));
        let pusher = {
            let (cell, pushed) = (cell.clone(), pushed.clone());
            thread::spawn(move || {
                assert!(cell.push_sys(Sys::Stop(ExitReason::Normal)), "alive");
                pushed.store(true, SeqCst);
            })
        };
        let mut batch = VecDeque::new();
        let mut slot = None;
        let mut taken = Vec::new();
        loop {
            let (published, item) = loom::future::block_on(poll_fn(|cx| {
                let published = pushed.load(SeqCst);
                cell.next_item_with(&mut batch, &mut slot, Some(cx), |_| false).map(|item| (published, item))
            }));
            match item {
                Item::Msg => {
                    let m = slot.take().expect("`Item::Msg` fills the slot");
                    assert!(!published, "rule 5: message {m} was taken after a system message was queued");
                    taken.push(m);
                }
                Item::Sys(Sys::Stop(reason)) => {
                    cell.die(reason);
                    break;
                }
                _ => panic!("only messages and the stop were sent"),
            }
        }
        pusher.join().unwrap();
        assert_eq!(taken, [1, 2, 3][..taken.len()], "one sender's messages are taken in order");
    });
}
