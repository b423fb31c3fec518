//! A deterministic simulator for the overlays: nodes running HyParView and Plumtree (or a
//! static full mesh or client-server shape) over a seeded network with latency and crashes,
//! counting every message and byte. The same seed gives the same numbers.
//!
//! Rules:
//! 1. Node `i` is `p-i`; node 0 starts alone, node `i > 0` joins (HyParView) through a random
//!    earlier node at `i * join_gap_ms`.
//! 2. A crash is seen by the crashed node's active neighbours one latency later (a TCP reset),
//!    and by anyone who sends to it one latency after the send.
//! 3. Every message is counted with its estimated size (`HvMsg::size`, `PtMsg::size`, a state
//!    message: 16 bytes plus 12 per entry).
//! 4. Messages between two nodes arrive in the order they were sent (a link is FIFO, as a TCP
//!    connection is); the latency of each is drawn from `latency_ms`.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};
use std::sync::Arc;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::hyparview::{HvMsg, HvOut, HyParView, HyParViewConfig};
use super::plumtree::{MsgId, Plumtree, PlumtreeConfig, PtMsg, PtOut};
use super::OverlayKind;

/// What travels between simulated nodes.
#[derive(Clone, Debug)]
pub enum NetMsg {
    /// Membership.
    Hv(HvMsg),
    /// Broadcast.
    Pt(PtMsg),
    /// The replicated counter's full state: the nodes whose increment it holds.
    State(Arc<BTreeSet<u32>>),
    /// (Internal) the transport reports this peer unreachable (rule 2).
    Failed(usize),
}

impl NetMsg {
    fn size(&self) -> usize {
        match self {
            Self::Hv(m) => m.size(),
            Self::Pt(m) => m.size(),
            Self::State(s) => 16 + 12 * s.len(),
            Self::Failed(_) => 0,
        }
    }
}

/// A simulated node.
pub struct Node {
    /// Membership.
    pub hv: HyParView,
    /// Broadcast.
    pub pt: Plumtree,
    rng: ChaCha8Rng,
    /// Broadcasts delivered here.
    pub delivered: BTreeSet<MsgId>,
    /// The counter state (which nodes' increments it holds).
    pub state: Arc<BTreeSet<u32>>,
}

/// The simulator's parameters.
#[derive(Clone, Debug)]
pub struct OverlaySimConfig {
    /// Nodes.
    pub nodes: usize,
    /// The seed of everything random.
    pub seed: u64,
    /// HyParView's parameters.
    pub hyparview: HyParViewConfig,
    /// Plumtree's parameters.
    pub plumtree: PlumtreeConfig,
    /// One-way latency range (ms).
    pub latency_ms: (u64, u64),
    /// Time between two node joins (ms).
    pub join_gap_ms: u64,
    /// Tick of every node (ms).
    pub tick_ms: u64,
}

impl Default for OverlaySimConfig {
    fn default() -> Self {
        Self {
            nodes: 64,
            seed: 1,
            hyparview: HyParViewConfig::default(),
            plumtree: PlumtreeConfig::default(),
            latency_ms: (1, 5),
            join_gap_ms: 10,
            tick_ms: 10,
        }
    }
}

/// Message and byte counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Traffic {
    /// Messages sent.
    pub messages: u64,
    /// Bytes sent (estimated, rule 3).
    pub bytes: u64,
    /// Of which full broadcast payload messages (Plumtree `Gossip`).
    pub gossip_messages: u64,
}

fn name(i: usize) -> String {
    format!("p-{i}")
}

fn index(n: &str) -> usize {
    n.strip_prefix("p-").and_then(|s| s.parse().ok()).unwrap_or(usize::MAX)
}

/// A running overlay simulation.
pub struct OverlaySim {
    cfg: OverlaySimConfig,
    now: u64,
    nodes: Vec<Option<Node>>,
    started: Vec<bool>,
    queue: BinaryHeap<Reverse<(u64, u64)>>,
    flight: HashMap<u64, (usize, usize, NetMsg)>,
    seq: u64,
    fifo: HashMap<(usize, usize), u64>,
    rng: ChaCha8Rng,
    /// Traffic so far.
    pub traffic: Traffic,
}

impl OverlaySim {
    /// Nodes exist from time 0 and join at rule 1's times.
    #[must_use]
    pub fn new(cfg: OverlaySimConfig) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        let nodes = (0..cfg.nodes)
            .map(|i| {
                let me = name(i);
                Some(Node {
                    hv: HyParView::new(&me, cfg.hyparview.clone(), 0),
                    pt: Plumtree::new(&me, cfg.plumtree.clone()),
                    rng: ChaCha8Rng::seed_from_u64(rng.gen()),
                    delivered: BTreeSet::new(),
                    state: Arc::new(BTreeSet::new()),
                })
            })
            .collect();
        let n = cfg.nodes;
        Self {
            cfg,
            now: 0,
            nodes,
            started: vec![false; n],
            queue: BinaryHeap::new(),
            flight: HashMap::new(),
            seq: 0,
            fifo: HashMap::new(),
            rng,
            traffic: Traffic::default(),
        }
    }

    /// The virtual time (ms).
    #[must_use]
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Node `i`, unless it crashed.
    #[must_use]
    pub fn node(&self, i: usize) -> Option<&Node> {
        self.nodes.get(i).and_then(Option::as_ref)
    }

    /// Indices of running nodes.
    #[must_use]
    pub fn alive(&self) -> Vec<usize> {
        (0..self.nodes.len()).filter(|&i| self.nodes[i].is_some()).collect()
    }

    fn send(&mut self, from: usize, to: usize, msg: NetMsg) {
        self.traffic.messages += 1;
        self.traffic.bytes += msg.size() as u64;
        if matches!(msg, NetMsg::Pt(PtMsg::Gossip { .. })) {
            self.traffic.gossip_messages += 1;
        }
        self.enqueue(from, to, msg);
    }

    /// Puts `msg` on the link from `from` to `to`, one drawn latency later (rule 4: one link
    /// is FIFO, as a TCP connection is).
    fn enqueue(&mut self, from: usize, to: usize, msg: NetMsg) {
        let (lo, hi) = self.cfg.latency_ms;
        let drawn = self.now + self.rng.gen_range(lo..=hi.max(lo));
        let last = self.fifo.entry((from, to)).or_insert(0);
        let at = drawn.max(*last);
        *last = at;
        self.seq += 1;
        self.flight.insert(self.seq, (to, from, msg));
        self.queue.push(Reverse((at, self.seq)));
    }

    fn run_outs(&mut self, i: usize, hv: Vec<HvOut>, pt: Vec<PtOut>) {
        for o in hv {
            match o {
                HvOut::Send(to, m) => self.send(i, index(&to), NetMsg::Hv(m)),
                HvOut::Up(p) => {
                    if let Some(n) = self.nodes[i].as_mut() {
                        n.pt.neighbor_up(&p);
                    }
                }
                HvOut::Down(p) => {
                    if let Some(n) = self.nodes[i].as_mut() {
                        n.pt.neighbor_down(&p);
                    }
                }
            }
        }
        for o in pt {
            match o {
                PtOut::Send(to, m) => self.send(i, index(&to), NetMsg::Pt(m)),
                PtOut::Deliver(id, _) => {
                    if let Some(n) = self.nodes[i].as_mut() {
                        n.delivered.insert(id);
                    }
                }
            }
        }
    }

    fn deliver(&mut self, to: usize, from: usize, msg: NetMsg) {
        if self.nodes.get(to).is_none_or(Option::is_none) {
            // Rule 2: the sender learns the peer is gone.
            if !matches!(msg, NetMsg::Failed(_)) && self.nodes.get(from).is_some_and(Option::is_some) {
                self.enqueue(to, from, NetMsg::Failed(to));
            }
            return;
        }
        let now = self.now;
        let (mut hv, mut pt) = (Vec::new(), Vec::new());
        let n = self.nodes[to].as_mut().expect("checked");
        let from_name = name(from);
        match msg {
            NetMsg::Hv(m) => n.hv.receive(&from_name, m, &mut n.rng, &mut hv),
            NetMsg::Pt(m) => n.pt.receive(&from_name, m, now, &mut pt),
            NetMsg::State(s) => {
                if n.state.len() < self.cfg.nodes && !s.is_subset(&n.state) {
                    Arc::make_mut(&mut n.state).extend(s.iter().copied());
                }
            }
            NetMsg::Failed(peer) => n.hv.peer_failed(&name(peer), &mut n.rng, &mut hv),
        }
        self.run_outs(to, hv, pt);
    }

    /// Advances one tick: joins that are due, deliveries, then every node's tick.
    pub fn step(&mut self) {
        self.now += self.cfg.tick_ms;
        for i in 0..self.nodes.len() {
            if !self.started[i] && self.now >= i as u64 * self.cfg.join_gap_ms && self.nodes[i].is_some() {
                self.started[i] = true;
                if i > 0 {
                    let earlier: Vec<usize> = (0..i).filter(|&j| self.nodes[j].is_some()).collect();
                    if let Some(&c) = earlier.choose(&mut self.rng) {
                        let mut hv = Vec::new();
                        if let Some(n) = self.nodes[i].as_mut() {
                            n.hv.join(&name(c), &mut hv);
                        }
                        self.run_outs(i, hv, Vec::new());
                    }
                }
            }
        }
        while let Some(Reverse((at, seq))) = self.queue.peek().copied() {
            if at > self.now {
                break;
            }
            self.queue.pop();
            if let Some((to, from, msg)) = self.flight.remove(&seq) {
                self.deliver(to, from, msg);
            }
        }
        let now = self.now;
        for i in 0..self.nodes.len() {
            if !self.started[i] {
                continue;
            }
            let (mut hv, mut pt) = (Vec::new(), Vec::new());
            if let Some(n) = self.nodes[i].as_mut() {
                n.hv.tick(now, &mut n.rng, &mut hv);
                n.pt.tick(now, &mut pt);
            }
            self.run_outs(i, hv, pt);
        }
    }

    /// Steps until `done` (returns the time) or until `limit_ms` pass.
    pub fn run_until(&mut self, limit_ms: u64, mut done: impl FnMut(&OverlaySim) -> bool) -> Option<u64> {
        let end = self.now + limit_ms;
        while self.now < end {
            self.step();
            if done(self) {
                return Some(self.now);
            }
        }
        None
    }

    /// Crashes node `i` (rule 2).
    pub fn kill(&mut self, i: usize) {
        let Some(n) = self.nodes[i].take() else { return };
        for p in n.hv.active() {
            let j = index(p);
            if j < self.nodes.len() {
                self.enqueue(i, j, NetMsg::Failed(i));
            }
        }
    }

    /// Node `i` broadcasts a payload of `bytes` bytes (Plumtree); returns its id.
    pub fn broadcast(&mut self, i: usize, bytes: usize) -> Option<MsgId> {
        let mut pt = Vec::new();
        let id = self.nodes[i].as_mut()?.pt.broadcast(vec![0u8; bytes], &mut pt);
        self.run_outs(i, Vec::new(), pt);
        Some(id)
    }

    /// Whether every running node delivered `id`.
    #[must_use]
    pub fn all_delivered(&self, id: &MsgId) -> bool {
        self.nodes.iter().flatten().all(|n| n.delivered.contains(id))
    }

    /// Whether the running nodes' active views form one connected graph.
    #[must_use]
    pub fn connected(&self) -> bool {
        let alive = self.alive();
        let Some(&start) = alive.first() else { return true };
        let mut seen = BTreeSet::from([start]);
        let mut stack = vec![start];
        while let Some(i) = stack.pop() {
            for p in self.nodes[i].as_ref().map(|n| n.hv.active().to_vec()).unwrap_or_default() {
                let j = index(&p);
                if self.nodes.get(j).is_some_and(Option::is_some) && seen.insert(j) {
                    stack.push(j);
                }
            }
        }
        seen.len() == alive.len()
    }

    /// The replicated counter's round: every running node sends its state to its neighbours in
    /// `overlay` (rule 3 counts it).
    pub fn counter_round(&mut self, overlay: OverlayKind) {
        let alive = self.alive();
        for &i in &alive {
            let Some(state) = self.nodes[i].as_ref().map(|n| Arc::clone(&n.state)) else { continue };
            let targets: Vec<usize> = match overlay {
                OverlayKind::FullMesh => alive.iter().copied().filter(|&j| j != i).collect(),
                OverlayKind::ClientServer if i == 0 => alive.iter().copied().filter(|&j| j != 0).collect(),
                OverlayKind::ClientServer => vec![0],
                OverlayKind::Hyparview => {
                    self.nodes[i].as_ref().map_or(Vec::new(), |n| n.hv.active().iter().map(|p| index(p)).collect())
                }
            };
            for j in targets {
                self.send(i, j, NetMsg::State(Arc::clone(&state)));
            }
        }
    }

    /// Every node increments the counter (its own entry).
    pub fn increment_all(&mut self) {
        for (i, n) in self.nodes.iter_mut().enumerate() {
            if let Some(n) = n {
                Arc::make_mut(&mut n.state).insert(i as u32);
            }
        }
    }

    /// Whether every running node's counter holds every node's increment.
    #[must_use]
    pub fn counter_converged(&self) -> bool {
        self.nodes.iter().flatten().all(|n| n.state.len() == self.cfg.nodes)
    }
}

/// One `overlay-scale` measurement (seed 004 §6.3): `nodes` nodes on `overlay` (HyParView's
/// membership traffic included), every node increments a replicated counter once, and every
/// `period_ms` every node sends its full state to its neighbours, for `duration_ms` after the
/// overlay formed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ScaleResult {
    /// The overlay.
    pub overlay: OverlayKind,
    /// Nodes.
    pub nodes: usize,
    /// The seed.
    pub seed: u64,
    /// Every byte sent (membership included).
    pub bytes_total: u64,
    /// Every message sent.
    pub messages_total: u64,
    /// From the increments to every node holding every increment (None: not within the run).
    pub convergence_ms: Option<u64>,
    /// Simulated time at which the overlay had formed and the counter started (0 for the
    /// static overlays).
    pub formed_ms: u64,
    /// Simulated time at the end.
    pub end_ms: u64,
}

/// Runs one `overlay-scale` measurement with the default simulator parameters.
#[must_use]
pub fn scale(overlay: OverlayKind, nodes: usize, seed: u64, period_ms: u64, duration_ms: u64) -> ScaleResult {
    let cfg = OverlaySimConfig { nodes, seed, ..OverlaySimConfig::default() };
    scale_observed(overlay, cfg, period_ms, duration_ms, &mut |_, _| {})
}

/// [`scale`] with the simulator's parameters given, calling `each_second(s, traffic)` with the
/// cumulative traffic at the end of every simulated second `s` (0-based from the simulation's
/// start, the last possibly partial), so a caller can record traffic over time.
pub fn scale_observed(
    overlay: OverlayKind,
    cfg: OverlaySimConfig,
    period_ms: u64,
    duration_ms: u64,
    each_second: &mut dyn FnMut(u64, &Traffic),
) -> ScaleResult {
    let (nodes, seed) = (cfg.nodes, cfg.seed);
    let join_all = nodes as u64 * cfg.join_gap_ms + 2_000;
    let mut sim = OverlaySim::new(cfg);
    let mut next_second = 1_000;
    let mut observe = |sim: &OverlaySim| {
        while sim.now() >= next_second {
            each_second(next_second / 1_000 - 1, &sim.traffic);
            next_second += 1_000;
        }
    };
    if overlay == OverlayKind::Hyparview {
        sim.run_until(join_all, |s| {
            observe(s);
            false
        });
    } else {
        // Static overlays: nothing to form, no membership traffic.
        sim.started.iter_mut().for_each(|s| *s = true);
    }
    let t0 = sim.now();
    sim.increment_all();
    let mut convergence = None;
    let mut next_round = t0 + period_ms;
    while sim.now() < t0 + duration_ms {
        if sim.now() >= next_round {
            next_round += period_ms;
            sim.counter_round(overlay);
        }
        sim.step();
        observe(&sim);
        if convergence.is_none() && sim.counter_converged() {
            convergence = Some(sim.now() - t0);
        }
    }
    if sim.now() + 1_000 > next_second {
        each_second(next_second / 1_000 - 1, &sim.traffic);
    }
    ScaleResult {
        overlay,
        nodes,
        seed,
        bytes_total: sim.traffic.bytes,
        messages_total: sim.traffic.messages,
        convergence_ms: convergence,
        formed_ms: t0,
        end_ms: sim.now(),
    }
}
