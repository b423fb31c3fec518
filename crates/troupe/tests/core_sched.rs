//! Scheduling (`sched.rs`, rules 2-5 and 7; rule 8 in `core_sched_chains.rs`, rule 3's stack in
//! `core_sched_stack.rs`): a send from an actor to an idle actor on the same
//! runtime runs the receiver in the sender's carrier, on the sender's thread; the run-next slot
//! never strands an activation (a displaced one, one behind a busy sender, one behind a sender
//! that awaits it); and a chain of handoffs that never ends does not starve other tasks.
//!
//! Each test builds its own runtime, so what it checks does not depend on the test harness.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, OnceLock};
use std::thread::ThreadId;
use std::time::Duration;

use tokio::runtime::{Builder, Runtime};
use tokio::sync::oneshot;
use troupe::{Actor, ActorRef, Ctx, ExitReason};

const T: Duration = Duration::from_secs(20);

fn two_workers() -> Runtime {
    Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// Passes a token along `next` and reports, at the end, the threads it was handled on.
struct Node {
    next: Option<ActorRef<Token>>,
    seen: Arc<parking_lot::Mutex<Vec<ThreadId>>>,
}

struct Token {
    left: u32,
    done: Option<oneshot::Sender<()>>,
}

impl Actor for Node {
    type Msg = Token;

    async fn handle(&mut self, mut t: Token, _: &mut Ctx<Self>) {
        self.seen.lock().push(std::thread::current().id());
        if t.left == 0 {
            if let Some(done) = t.done.take() {
                let _ = done.send(());
            }
            return;
        }
        t.left -= 1;
        if let Some(next) = &self.next {
            let _ = next.send(t);
        }
    }
}

/// A ring of `n` fresh (idle) nodes; the token goes round once from outside any actor.
async fn round(n: usize) -> Vec<ThreadId> {
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    // Built back to front so each node knows its successor at spawn.
    let mut next: Option<ActorRef<Token>> = None;
    let mut all = Vec::new();
    for _ in 0..n {
        let node = troupe::spawn(Node { next: next.take(), seen: seen.clone() });
        all.push(node.clone());
        next = Some(node);
    }
    let first = next.expect("n > 0");
    let (tx, rx) = oneshot::channel();
    first.send(Token { left: n as u32 - 1, done: Some(tx) }).unwrap();
    tokio::time::timeout(T, rx).await.expect("the token came round").unwrap();
    for a in &all {
        a.stop();
    }
    for a in &all {
        a.terminated().await;
    }
    let v = seen.lock().clone();
    v
}

#[test]
fn rule_2_a_chain_of_sends_to_idle_actors_runs_on_one_thread() {
    let rt = two_workers();
    rt.block_on(async {
        for _ in 0..20 {
            let threads = round(16).await;
            assert_eq!(threads.len(), 16, "every node handled the token once");
            assert!(
                threads.iter().all(|t| *t == threads[0]),
                "the token is handed from actor to actor in one carrier, on one thread: {threads:?}"
            );
        }
    });
}

/// Sends a note to every actor in `to` from one handler, then reports when all have answered.
struct Fan {
    to: Vec<ActorRef<Note>>,
}

struct Note(mpsc::Sender<usize>, usize);

struct Leaf;

impl Actor for Leaf {
    type Msg = Note;
    async fn handle(&mut self, Note(tx, i): Note, _: &mut Ctx<Self>) {
        let _ = tx.send(i);
    }
}

impl Actor for Fan {
    type Msg = mpsc::Sender<usize>;
    async fn handle(&mut self, tx: mpsc::Sender<usize>, _: &mut Ctx<Self>) {
        for (i, leaf) in self.to.iter().enumerate() {
            leaf.send(Note(tx.clone(), i)).unwrap();
        }
    }
}

#[test]
fn rule_3_every_actor_woken_in_one_handler_runs_the_displaced_ones_included() {
    let rt = two_workers();
    let (tx, rx) = mpsc::channel();
    rt.block_on(async {
        let leaves: Vec<_> = (0..50).map(|_| troupe::spawn(Leaf)).collect();
        let fan = troupe::spawn(Fan { to: leaves });
        fan.send(tx).unwrap();
    });
    let mut got: Vec<usize> = (0..50).map(|_| rx.recv_timeout(T).expect("every leaf answers")).collect();
    got.sort_unstable();
    assert_eq!(got, (0..50).collect::<Vec<_>>());
}

/// On `Kick` wakes its idle leaves; on `Block` waits, blocking its thread, for their notes, and
/// reports how many came.
struct Busy {
    leaves: Vec<ActorRef<Note>>,
    notes: Option<mpsc::Sender<usize>>,
    from_leaves: Option<mpsc::Receiver<usize>>,
    result: Option<mpsc::Sender<usize>>,
}

enum BusyMsg {
    Kick,
    Block,
}

impl Actor for Busy {
    type Msg = BusyMsg;
    async fn handle(&mut self, msg: BusyMsg, _: &mut Ctx<Self>) {
        match msg {
            BusyMsg::Kick => {
                let tx = self.notes.take().unwrap();
                for (i, leaf) in self.leaves.iter().enumerate() {
                    leaf.send(Note(tx.clone(), i)).unwrap();
                }
            }
            BusyMsg::Block => {
                let (rx, n) = (self.from_leaves.take().unwrap(), self.leaves.len());
                // The worker's queues move to another thread while this one blocks; the leaves
                // can run there only if they are in them, not in this carrier's slot or stack.
                let got = tokio::task::block_in_place(|| (0..n).take_while(|_| rx.recv_timeout(T).is_ok()).count());
                let _ = self.result.take().unwrap().send(got);
            }
        }
    }
}

/// A busy actor wakes `n` idle leaves on `Kick`, then takes `Block` with them just woken (both
/// queued before it runs): how many leaves ran while it blocked, within `wait`.
fn leaves_run_while_their_waker_blocks(n: usize, wait: Duration) -> usize {
    let rt = two_workers();
    let (result_tx, result_rx) = mpsc::channel();
    rt.block_on(async {
        let (tx, rx) = mpsc::channel();
        let leaves = (0..n).map(|_| troupe::spawn(Leaf)).collect();
        let busy = troupe::spawn(Busy { leaves, notes: Some(tx), from_leaves: Some(rx), result: Some(result_tx) });
        busy.send(BusyMsg::Kick).unwrap();
        busy.send(BusyMsg::Block).unwrap();
    });
    result_rx.recv_timeout(wait).expect("the busy actor finished")
}

#[test]
fn rule_4_an_actor_with_more_work_releases_the_actor_it_woke() {
    let got = leaves_run_while_their_waker_blocks(1, T + T);
    assert!(got == 1, "the leaf woken by Kick ran while its waker blocked on Block");
}

/// Rule 3 puts the two leaves woken before the last on the stack (`core_sched_stack.rs`).
#[test]
fn rule_4_an_actor_with_more_work_releases_what_it_stacked() {
    let got = leaves_run_while_their_waker_blocks(3, T * 4);
    assert_eq!(got, 3, "the three leaves woken by Kick ran while their waker blocked on Block");
}

/// Wakes an idle `Leaf` and then awaits its answer in the same handler.
struct Asker {
    leaf: ActorRef<Note>,
    result: Option<oneshot::Sender<usize>>,
}

impl Actor for Asker {
    type Msg = ();
    async fn handle(&mut self, (): (), _: &mut Ctx<Self>) {
        let (tx, rx) = mpsc::channel();
        self.leaf.send(Note(tx, 3)).unwrap();
        // Await (not block): the carrier's poll ends, and the slot goes to a carrier of its own.
        // The blocking receive runs on tokio's blocking pool; this handler awaits its end.
        let got = tokio::task::spawn_blocking(move || rx.recv_timeout(T)).await.unwrap();
        let _ = self.result.take().unwrap().send(got.unwrap_or(usize::MAX));
    }
}

#[test]
fn rule_5_an_actor_awaiting_the_actor_it_woke_is_not_stuck() {
    // One thread: the leaf can only run if the slot is handed on when the poll ends.
    let rt = Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let leaf = troupe::spawn(Leaf);
        let (tx, rx) = oneshot::channel();
        let asker = troupe::spawn(Asker { leaf, result: Some(tx) });
        asker.send(()).unwrap();
        assert_eq!(tokio::time::timeout(T, rx).await.expect("the asker got its answer").unwrap(), 3);
    });
}

/// Two of these bounce a ball forever (until `stop` is set), each hop a handoff: each learns
/// the other at spawn, so neither has had a message (and a task) before the ball.
struct Bouncer {
    other: Arc<OnceLock<ActorRef<Ball>>>,
    hops: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

struct Ball;

impl Actor for Bouncer {
    type Msg = Ball;
    async fn handle(&mut self, Ball: Ball, ctx: &mut Ctx<Self>) {
        self.hops.fetch_add(1, Ordering::Relaxed);
        if self.stop.load(Ordering::Relaxed) {
            ctx.stop(ExitReason::Normal);
        } else if let Some(o) = self.other.get() {
            let _ = o.send(Ball);
        }
    }
}

#[test]
fn rule_5_an_endless_chain_of_handoffs_does_not_starve_other_tasks() {
    let (done_tx, done_rx) = mpsc::channel();
    // A thread of its own, so a starved runtime fails the test (by the deadline) instead of
    // hanging it.
    std::thread::spawn(move || {
        let rt = Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let hops = Arc::new(AtomicU64::new(0));
            let stop = Arc::new(AtomicBool::new(false));
            let (to_b, to_a) = (Arc::new(OnceLock::new()), Arc::new(OnceLock::new()));
            let a = troupe::spawn(Bouncer { other: to_b.clone(), hops: hops.clone(), stop: stop.clone() });
            let b = troupe::spawn(Bouncer { other: to_a.clone(), hops: hops.clone(), stop: stop.clone() });
            let _ = to_b.set(b.clone());
            let _ = to_a.set(a.clone());
            a.send(Ball).unwrap();
            // Other tasks keep running while the ball bounces.
            for _ in 0..100 {
                tokio::spawn(async {}).await.unwrap();
            }
            let during = hops.load(Ordering::Relaxed);
            stop.store(true, Ordering::Relaxed);
            a.terminated().await;
            let _ = done_tx.send(during);
        });
    });
    let during = done_rx.recv_timeout(T).expect("other tasks ran while the ball bounced");
    assert!(during > 0, "the ball was bouncing meanwhile");
}

/// Checks that numbered notes from one sender arrive in order.
struct InOrder {
    next: usize,
    done: Option<oneshot::Sender<usize>>,
    total: usize,
}

impl Actor for InOrder {
    type Msg = usize;
    async fn handle(&mut self, i: usize, ctx: &mut Ctx<Self>) {
        assert_eq!(i, self.next, "messages from one sender arrive in the order sent");
        self.next += 1;
        if self.next == self.total {
            let _ = self.done.take().unwrap().send(self.next);
            ctx.stop(ExitReason::Normal);
        }
    }
}

/// Sends `0..n` to its target, a few at a time, one batch per message it gets.
struct Feeder {
    to: ActorRef<usize>,
    sent: usize,
    n: usize,
}

impl Actor for Feeder {
    type Msg = ();
    async fn handle(&mut self, (): (), ctx: &mut Ctx<Self>) {
        for _ in 0..3 {
            if self.sent < self.n {
                self.to.send(self.sent).unwrap();
                self.sent += 1;
            }
        }
        if self.sent < self.n {
            let _ = ctx.myself().send(());
        }
    }
}

#[test]
fn rule_4_order_per_sender_holds_across_handoffs() {
    let rt = two_workers();
    rt.block_on(async {
        let n = 30_000;
        let (tx, rx) = oneshot::channel();
        let sink = troupe::spawn(InOrder { next: 0, done: Some(tx), total: n });
        let feeder = troupe::spawn(Feeder { to: sink, sent: 0, n });
        feeder.send(()).unwrap();
        assert_eq!(tokio::time::timeout(T, rx).await.expect("all arrived").unwrap(), n);
    });
}

/// Counts what it is sent and, on `Pass`, forwards to `peer` until `left` runs out.
struct Relay {
    peer: Option<ActorRef<RelayMsg>>,
    handled: u64,
}

enum RelayMsg {
    Peer(ActorRef<RelayMsg>),
    Pass(u32, Option<oneshot::Sender<()>>),
    Count(troupe::ReplyTo<u64>),
}

impl Actor for Relay {
    type Msg = RelayMsg;

    async fn handle(&mut self, msg: RelayMsg, _: &mut Ctx<Self>) {
        match msg {
            RelayMsg::Peer(p) => self.peer = Some(p),
            RelayMsg::Pass(0, done) => {
                self.handled += 1;
                if let Some(d) = done {
                    let _ = d.send(());
                }
            }
            RelayMsg::Pass(left, done) => {
                self.handled += 1;
                if let Some(p) = &self.peer {
                    let _ = p.send(RelayMsg::Pass(left - 1, done));
                }
            }
            RelayMsg::Count(r) => r.send(self.handled),
        }
    }
}

/// Two fresh relays that know each other, told from outside any actor (so both are parked).
fn relay_pair() -> (ActorRef<RelayMsg>, ActorRef<RelayMsg>) {
    let a = troupe::spawn(Relay { peer: None, handled: 0 });
    let b = troupe::spawn(Relay { peer: Some(a.clone()), handled: 0 });
    a.send(RelayMsg::Peer(b.clone())).unwrap();
    (a, b)
}

#[test]
fn rule_4_a_handed_off_actor_resumes_with_its_state_and_dies_when_killed_while_parked() {
    two_workers().block_on(async {
        let (a, b) = relay_pair();
        for _ in 0..3 {
            let (tx, rx) = oneshot::channel();
            a.send(RelayMsg::Pass(999, Some(tx))).unwrap();
            tokio::time::timeout(T, rx).await.expect("the chain ended").unwrap();
        }
        // 3 chains of 1,000 hops, alternating: each relay handled 1,500 of them.
        assert_eq!(a.ask(RelayMsg::Count, T).await.unwrap(), 1500, "a's state survived its hand-offs");
        assert_eq!(b.ask(RelayMsg::Count, T).await.unwrap(), 1500, "b's state survived its hand-offs");
        // Start one more chain and kill b at once: whether b is running, handing off or parked
        // in its cell, it dies with `Killed` and nothing is left running.
        a.send(RelayMsg::Pass(100_000, None)).unwrap();
        b.kill();
        assert_eq!(tokio::time::timeout(T, b.terminated()).await.expect("b died"), ExitReason::Killed);
        assert!(a.is_alive(), "a is not linked to b: b's death leaves it running");
        a.stop();
        a.terminated().await;
    });
}

#[test]
fn rule_7_idle_carriers_end_within_a_few_sweeps() {
    two_workers().block_on(async {
        let metrics = tokio::runtime::Handle::current().metrics();
        let base = metrics.num_alive_tasks();
        // Chains (hand-offs) and a burst of wakes from a busy actor (releases to idle carriers).
        let pairs: Vec<_> = (0..8).map(|_| relay_pair()).collect();
        for (a, _) in &pairs {
            let (tx, rx) = oneshot::channel();
            a.send(RelayMsg::Pass(2_000, Some(tx))).unwrap();
            tokio::time::timeout(T, rx).await.expect("the chain ended").unwrap();
        }
        for (a, b) in &pairs {
            a.stop();
            b.stop();
        }
        for (a, b) in &pairs {
            a.terminated().await;
            b.terminated().await;
        }
        // Every actor is dead; what is left are idle carriers, which the sweeper retires.
        common::wait_until("idle carriers to end", Duration::from_secs(15), || metrics.num_alive_tasks() <= base).await;
    });
}
