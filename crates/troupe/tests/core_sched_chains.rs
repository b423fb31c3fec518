//! Scheduling, chain steps (`sched.rs`, rule 8): an actor that took one message and woke one
//! actor waiting in a carrier of its own hands off even with an empty slot, so a chain through
//! waiting actors goes from hop to hop inside a carrier; an actor released from a slot to a
//! carrier of its own is marked and waits instead.
//!
//! Each test builds its own runtime, so what it checks does not depend on the test harness.

use std::sync::{mpsc, Arc, OnceLock};
use std::time::Duration;

use tokio::runtime::{Builder, Runtime};
use tokio::sync::oneshot;
use troupe::{Actor, ActorRef, Ctx};

const T: Duration = Duration::from_secs(20);

fn two_workers() -> Runtime {
    Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

struct Token {
    left: u32,
    done: Option<oneshot::Sender<()>>,
}

/// Passes a token along `next`, noting the tokio task (the carrier) each hop ran in.
struct Hop {
    next: Arc<OnceLock<ActorRef<Token>>>,
    tasks: Arc<parking_lot::Mutex<Vec<Option<tokio::task::Id>>>>,
}

impl Actor for Hop {
    type Msg = Token;

    async fn handle(&mut self, mut t: Token, _: &mut Ctx<Self>) {
        if t.left == 0 {
            if let Some(done) = t.done.take() {
                let _ = done.send(());
            }
            return;
        }
        self.tasks.lock().push(tokio::task::try_id());
        t.left -= 1;
        if let Some(next) = self.next.get() {
            let _ = next.send(t);
        }
    }
}

#[test]
fn rule_8_after_one_lap_a_token_round_a_ring_of_waiting_actors_rarely_changes_carrier() {
    const N: usize = 16;
    const LAPS: usize = 6;
    let rt = two_workers();
    rt.block_on(async {
        let tasks = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let links: Vec<Arc<OnceLock<ActorRef<Token>>>> = (0..N).map(|_| Arc::default()).collect();
        let ring: Vec<ActorRef<Token>> =
            links.iter().map(|next| troupe::spawn(Hop { next: next.clone(), tasks: tasks.clone() })).collect();
        for (i, link) in links.iter().enumerate() {
            link.set(ring[(i + 1) % N].clone()).expect("set once");
        }
        // One message each from outside any carrier: every node then waits on its mailbox in a
        // carrier of its own (rule 7), as `threadring`'s nodes do after being told their
        // successor.
        for node in &ring {
            let (tx, rx) = oneshot::channel();
            node.send(Token { left: 0, done: Some(tx) }).unwrap();
            tokio::time::timeout(T, rx).await.expect("the node answered").unwrap();
        }
        let (tx, rx) = oneshot::channel();
        ring[0].send(Token { left: (N * LAPS) as u32, done: Some(tx) }).unwrap();
        tokio::time::timeout(T, rx).await.expect("the token came round").unwrap();
        let seen = tasks.lock().clone();
        assert_eq!(seen.len(), N * LAPS, "one entry per hop");
        assert!(seen.iter().all(Option::is_some), "every hop ran in a tokio task");
        // The first lap wakes each waiting node through tokio (every hop in another carrier),
        // and each then hands off (a chain step); from then on the token goes from hand-off to
        // hand-off inside a carrier. Races of the first lap (a node still handing off in its own
        // carrier when the token comes round takes it there, `cell.rs` rule 12) can leave a
        // node that the token reaches through tokio once a lap; so the last three laps (48 hops)
        // may change carrier a few times, where without rule 8 every hop does.
        let rest = &seen[N * (LAPS - 3)..];
        let changes = rest.windows(2).filter(|w| w[0] != w[1]).count();
        assert!(changes <= 6, "the last three laps changed carrier {changes} times: {seen:?}");
        for node in &ring {
            node.stop();
        }
        for node in &ring {
            node.terminated().await;
        }
    });
}

/// Rule 8's mark: what the actor under test (`Link`) does, and the sink it passes to.
enum LinkMsg {
    /// Its first message, from outside: it then waits in a carrier of its own.
    Start,
    /// Take one message and wake one waiting actor (`sink`): a chain step.
    Forward,
}

struct Link {
    sink: ActorRef<()>,
    tasks: mpsc::Sender<Option<tokio::task::Id>>,
}

impl Actor for Link {
    type Msg = LinkMsg;

    async fn handle(&mut self, msg: LinkMsg, _: &mut Ctx<Self>) {
        if let LinkMsg::Forward = msg {
            let _ = self.tasks.send(tokio::task::try_id());
            let _ = self.sink.send(());
        }
    }
}

/// Waits on its mailbox (it is messaged once from outside first) and reports each message.
struct Sink(mpsc::Sender<()>);

impl Actor for Sink {
    type Msg = ();

    async fn handle(&mut self, (): (), _: &mut Ctx<Self>) {
        let _ = self.0.send(());
    }
}

/// From inside a carrier: wakes `to` into its slot, then takes a message of its own, so the
/// slot's actor is released to a carrier of its own (rule 4), which marks it (rule 8).
enum DriverMsg {
    Mark(ActorRef<LinkMsg>),
    Then,
    Forward(ActorRef<LinkMsg>),
}

struct Driver;

impl Actor for Driver {
    type Msg = DriverMsg;

    async fn handle(&mut self, msg: DriverMsg, ctx: &mut Ctx<Self>) {
        match msg {
            DriverMsg::Mark(to) => {
                let _ = to.send(LinkMsg::Start);
                let _ = ctx.myself().send(DriverMsg::Then);
            }
            DriverMsg::Then => {}
            DriverMsg::Forward(to) => {
                let _ = to.send(LinkMsg::Forward);
            }
        }
    }
}

/// The tasks `link` ran its second and third `Forward` in, each sent by a fresh driver from
/// its carrier. (The first settles it: it may have come while `Start` was still being handled,
/// so it is not counted.)
async fn forwards(
    link: &ActorRef<LinkMsg>,
    tasks: &mpsc::Receiver<Option<tokio::task::Id>>,
    sunk: &mpsc::Receiver<()>,
) -> (tokio::task::Id, tokio::task::Id) {
    let mut seen = Vec::new();
    for _ in 0..3 {
        troupe::spawn(Driver).send(DriverMsg::Forward(link.clone())).unwrap();
        let t = tasks.recv_timeout(T).expect("the link took the message");
        sunk.recv_timeout(T).expect("the sink took the message");
        seen.push(t.expect("ran in a tokio task"));
    }
    (seen[1], seen[2])
}

#[test]
fn rule_8_a_chain_step_hands_off_unless_the_actor_was_released_from_a_slot() {
    let rt = two_workers();
    rt.block_on(async {
        let (sunk_tx, sunk) = mpsc::channel();
        let sink = troupe::spawn(Sink(sunk_tx));
        sink.send(()).unwrap();
        sunk.recv_timeout(T).expect("the sink started waiting");

        // Unmarked: after a chain step it hands off, so each `Forward` runs in the carrier of
        // the driver that sent it.
        let (tx, tasks) = mpsc::channel();
        let plain = troupe::spawn(Link { sink: sink.clone(), tasks: tx });
        plain.send(LinkMsg::Start).unwrap();
        // On a loaded machine a `Forward` can reach the link through tokio in the link's own
        // carrier (the driver's carrier descheduled before its slot took it, or the sweeper
        // parked the sink): up to 32 tries (each a few messages; eight failed once at a load
        // of 10 on 2 cores), of which an actor that never hands off passes none.
        let mut tries = Vec::new();
        // Bounded: 32 tries.
        for _ in 0..32 {
            let (second, third) = forwards(&plain, &tasks, &sunk).await;
            tries.push((second, third));
            if second != third {
                break;
            }
        }
        assert!(
            tries.iter().any(|(a, b)| a != b),
            "an unmarked actor no longer hands off after a chain step: {tries:?}"
        );

        // Marked: woken into a driver's slot and then released (the driver had more work).
        // After the same chain steps it waits in its own carrier, where each message finds it.
        let (tx, tasks) = mpsc::channel();
        let marked = troupe::spawn(Link { sink: sink.clone(), tasks: tx });
        troupe::spawn(Driver).send(DriverMsg::Mark(marked.clone())).unwrap();
        // The sweeper (about a second idle, `cell.rs` rule 4) may park the sink or the actor on a
        // slow machine, and a parked sink woken by it fills its slot (a hand-off by rule 4): up
        // to 32 tries (a loaded 2-core machine once failed three in a row), of which an
        // unmarked actor would pass none.
        let mut tries = Vec::new();
        // Bounded: 32 tries.
        for _ in 0..32 {
            let (second, third) = forwards(&marked, &tasks, &sunk).await;
            tries.push((second, third));
            if second == third {
                break;
            }
        }
        assert!(tries.iter().any(|(a, b)| a == b), "a released actor no longer hands off on a chain step: {tries:?}");

        for a in [&plain, &marked] {
            a.stop();
            a.terminated().await;
        }
    });
}
