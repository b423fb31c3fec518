//! The replicated counter of seed 004 §6.3 on a live overlay ([`Counter`]): the application
//! that `overlay-scale --set mode=processes` runs in every node process, the same counter the
//! overlay simulator runs (`overlay/sim.rs`, `counter_round`), but as a Troupe actor sending
//! typed messages over the node layer to the counter actors of its overlay neighbours.
//!
//! Rules:
//! 1. Node `index` of `nodes` owns entry `index`; a counter holds its own entry from
//!    [`Counter::go`] on (the increment), and nothing before it.
//! 2. Every `period` after `go` (the first one period after it), the counter sends its full
//!    state ([`CounterMsg::State`], the sorted entries it holds) to the actor exported as
//!    [`COUNTER_ACTOR`] on each node that is its overlay neighbour at that moment
//!    ([`super::Overlay::neighbours`]): a typed `ActorRef<CounterMsg>` send
//!    (`Node::remote_ref`), never through the overlay's routing.
//! 3. A state received is merged by union; a counter's state never shrinks. Entries at or
//!    above `nodes` are ignored (a sender from another run must not make it "converge").
//! 4. The counter has converged when it holds all `nodes` entries: it records the
//!    milliseconds since its `go` once, and [`Counter::converged`] returns from then on.
//! 5. [`CounterMsg::Go`] and [`CounterMsg::Round`] are local: they do not serialize, so no
//!    other node can send them (a decoding node refuses them).
//! 6. [`Counter::start`] refuses `nodes == 0`, `index >= nodes` and a zero period, naming the
//!    value; it exports the actor before it returns, so a neighbour's state sent after every
//!    node's start has an actor to reach. A second `go` is ignored.
//! 7. A send that fails (the neighbour's node unreachable) is counted
//!    ([`CounterReport::send_failures`]) and never retried: the next round sends again.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::time::Instant;
use troupe::{Actor, ActorRef, Ctx};
use troupe_remote::{Node, RemoteMessage};

use super::Overlay;
use crate::error::Error;

/// The name the counter actor is exported under on every node.
pub const COUNTER_ACTOR: &str = "troupe.overlay.counter";

/// What a counter actor receives.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum CounterMsg {
    /// A neighbour's full state: the entries (node indices) whose increment it holds, sorted.
    State(Vec<u32>),
    /// Local (rule 5): increment and start the rounds.
    #[serde(skip)]
    Go,
    /// Local (rule 5): time to send the state to the neighbours.
    #[serde(skip)]
    Round,
}

impl RemoteMessage for CounterMsg {
    const TAG: &'static str = "troupe.overlay.counter.v1";
}

/// A counter's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterConfig {
    /// This node's entry (rule 1).
    pub index: u32,
    /// How many entries a converged counter holds.
    pub nodes: u32,
    /// Time between two rounds (rule 2).
    pub period: Duration,
}

/// What a counter did so far.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterReport {
    /// This node's entry.
    pub index: u32,
    /// Entries a converged counter holds.
    pub nodes: u32,
    /// Entries it holds now.
    pub held: u32,
    /// Rounds it ran.
    pub rounds: u64,
    /// States it sent (one per neighbour per round).
    pub sent: u64,
    /// Sends that failed (rule 7).
    pub send_failures: u64,
    /// States it received.
    pub received: u64,
    /// Milliseconds from its `go` until it held every entry (rule 4).
    pub converged_ms: Option<u64>,
}

/// A running counter on one node (cheap to clone).
#[derive(Clone)]
pub struct Counter {
    actor: ActorRef<CounterMsg>,
    report: Arc<Mutex<CounterReport>>,
    converged: watch::Receiver<bool>,
}

struct CounterActor {
    cfg: CounterConfig,
    node: Node,
    overlay: Overlay,
    held: BTreeSet<u32>,
    go: Option<Instant>,
    next_round: Option<Instant>,
    refs: HashMap<String, ActorRef<CounterMsg>>,
    report: Arc<Mutex<CounterReport>>,
    converged: watch::Sender<bool>,
}

impl CounterActor {
    fn check_converged(&mut self) {
        let held = self.held.len() as u32;
        let mut r = self.report.lock();
        r.held = held;
        if held == self.cfg.nodes && r.converged_ms.is_none() {
            let since = self.go.map_or(Duration::ZERO, |g| g.elapsed());
            r.converged_ms = Some(since.as_millis() as u64);
            drop(r);
            let _ = self.converged.send(true);
        }
    }

    async fn round(&mut self, ctx: &mut Ctx<Self>) {
        let next = self.next_round.unwrap_or_else(Instant::now) + self.cfg.period;
        self.next_round = Some(next);
        let _ = ctx.send_after(next.saturating_duration_since(Instant::now()), CounterMsg::Round);
        let neighbours = self.overlay.neighbours().await.unwrap_or_default();
        let state: Vec<u32> = self.held.iter().copied().collect();
        let (mut sent, mut failed) = (0, 0);
        for addr in neighbours {
            let node = &self.node;
            let to =
                self.refs.entry(addr).or_insert_with_key(|addr| node.remote_ref::<CounterMsg>(addr, COUNTER_ACTOR));
            match to.send(CounterMsg::State(state.clone())) {
                Ok(()) => sent += 1,
                Err(_) => failed += 1,
            }
        }
        let mut r = self.report.lock();
        r.rounds += 1;
        r.sent += sent;
        r.send_failures += failed;
    }
}

impl Actor for CounterActor {
    type Msg = CounterMsg;

    async fn handle(&mut self, msg: CounterMsg, ctx: &mut Ctx<Self>) {
        match msg {
            CounterMsg::Go if self.go.is_none() => {
                let now = Instant::now();
                self.go = Some(now);
                self.next_round = Some(now);
                self.held.insert(self.cfg.index);
                self.check_converged();
                let _ = ctx.send_after(self.cfg.period, CounterMsg::Round);
            }
            CounterMsg::Go => {}
            CounterMsg::Round => self.round(ctx).await,
            CounterMsg::State(entries) => {
                self.report.lock().received += 1;
                let before = self.held.len();
                self.held.extend(entries.into_iter().filter(|&e| e < self.cfg.nodes));
                if self.held.len() != before {
                    self.check_converged();
                }
            }
        }
    }
}

impl Counter {
    /// Spawns the counter actor of node `cfg.index` and exports it as [`COUNTER_ACTOR`] on
    /// `node` (rule 6); it sends nothing before [`Counter::go`].
    pub fn start(node: &Node, overlay: &Overlay, cfg: CounterConfig) -> Result<Counter, Error> {
        if cfg.nodes == 0 || cfg.index >= cfg.nodes {
            return Err(Error::config(format!(
                "counter index {} of {} nodes: the index must be below the node count, which must be at least 1",
                cfg.index, cfg.nodes
            )));
        }
        if cfg.period.is_zero() {
            return Err(Error::config("counter period of 0 ms: give at least 1 ms"));
        }
        let report =
            Arc::new(Mutex::new(CounterReport { index: cfg.index, nodes: cfg.nodes, ..CounterReport::default() }));
        let (tx, converged) = watch::channel(false);
        let actor = troupe::spawn(CounterActor {
            cfg,
            node: node.clone(),
            overlay: overlay.clone(),
            held: BTreeSet::new(),
            go: None,
            next_round: None,
            refs: HashMap::new(),
            report: Arc::clone(&report),
            converged: tx,
        });
        if let Err(e) = node.export(COUNTER_ACTOR, &actor) {
            actor.kill();
            return Err(Error::node(format!("cannot export the counter actor as {COUNTER_ACTOR:?}"), e));
        }
        Ok(Counter { actor, report, converged })
    }

    /// Increments this node's entry and starts the rounds (rules 1, 2; a second call is
    /// ignored). Fails when the actor has stopped.
    pub fn go(&self) -> Result<(), Error> {
        self.actor.send(CounterMsg::Go).map_err(|_| Error::from(crate::error::ErrorKind::Stopped))
    }

    /// What the counter did so far.
    #[must_use]
    pub fn report(&self) -> CounterReport {
        self.report.lock().clone()
    }

    /// Waits until the counter holds every entry (rule 4) and returns its report; callers
    /// bound the wait (`tokio::time::timeout`). Returns at once when it already has.
    pub async fn converged(&self) -> CounterReport {
        let mut rx = self.converged.clone();
        let _ = rx.wait_for(|c| *c).await;
        self.report()
    }

    /// Stops the counter actor (its export goes with it).
    pub fn stop(&self) {
        self.actor.kill();
    }
}
