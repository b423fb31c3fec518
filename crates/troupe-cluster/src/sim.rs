//! A deterministic simulation of the membership protocol: hundreds of [`Engine`]s in one
//! process, a virtual clock, and a seeded network (latency, loss, partitions, crashes).
//! The same seed gives the same run, event for event ([`Sim::digest`]).
//!
//! ```
//! use troupe_cluster::sim::{Sim, SimConfig};
//! let mut sim = Sim::new(SimConfig { nodes: 20, seed: 7, ..SimConfig::default() });
//! let t = sim.run_until(60_000, |s| s.all_up()).expect("20 nodes converge");
//! assert!(t < 60_000);
//! ```

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::ClusterConfig;
use crate::engine::{Engine, Out};
use crate::member::{MemberStatus, NodeId};
use crate::ring::stable_hash;
use crate::wire::{ClusterEvent, Wire};

/// A simulation's parameters.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// How many nodes (node 0 starts the cluster; the others join through it).
    pub nodes: usize,
    /// The seed of everything random.
    pub seed: u64,
    /// Every node's cluster configuration (`seeds` is set by the simulator).
    pub cluster: ClusterConfig,
    /// One-way latency, uniformly drawn from this range (ms).
    pub latency_ms: (u64, u64),
    /// Probability that a message is lost.
    pub loss: f64,
    /// Virtual time between two ticks of every engine (ms).
    pub tick_ms: u64,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self { nodes: 10, seed: 1, cluster: ClusterConfig::default(), latency_ms: (1, 5), loss: 0.0, tick_ms: 10 }
    }
}

/// The address of simulated node `i`.
#[must_use]
pub fn addr(i: usize) -> String {
    format!("sim-{i}:1")
}

fn index(addr: &str) -> Option<usize> {
    addr.strip_prefix("sim-")?.strip_suffix(":1")?.parse().ok()
}

/// A running simulation.
pub struct Sim {
    cfg: SimConfig,
    now: u64,
    engines: Vec<Option<Engine>>,
    queue: BinaryHeap<Reverse<(u64, u64)>>,
    in_flight: HashMap<u64, (usize, Wire)>,
    seq: u64,
    rng: ChaCha8Rng,
    cut: BTreeSet<(usize, usize)>,
    frozen: BTreeSet<usize>,
    digest: u64,
    /// Messages delivered so far.
    pub delivered: u64,
    /// Events reported so far, with their time and node.
    pub events: Vec<(u64, usize, ClusterEvent)>,
}

impl Sim {
    /// Starts every node at time 0.
    #[must_use]
    pub fn new(cfg: SimConfig) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        let engines = (0..cfg.nodes)
            .map(|i| {
                let mut c = cfg.cluster.clone();
                c.seeds = if i == 0 { Vec::new() } else { vec![addr(0)] };
                let id = NodeId { addr: addr(i), name: format!("n{i}"), uid: 1_000 + i as u64 };
                Some(Engine::new(c, id, rng.gen(), 0))
            })
            .collect();
        Self {
            cfg,
            now: 0,
            engines,
            queue: BinaryHeap::new(),
            in_flight: HashMap::new(),
            seq: 0,
            rng,
            cut: BTreeSet::new(),
            frozen: BTreeSet::new(),
            digest: 0,
            delivered: 0,
            events: Vec::new(),
        }
    }

    /// The virtual time (ms).
    #[must_use]
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Node `i`'s engine, unless it crashed.
    #[must_use]
    pub fn engine(&self, i: usize) -> Option<&Engine> {
        self.engines.get(i).and_then(Option::as_ref)
    }

    /// A hash of every delivery and event so far: equal for equal seeds.
    #[must_use]
    pub fn digest(&self) -> u64 {
        self.digest
    }

    fn mix(&mut self, s: &str) {
        let mut b = self.digest.to_le_bytes().to_vec();
        b.extend_from_slice(s.as_bytes());
        self.digest = stable_hash(&b);
    }

    fn dispatch(&mut self, from: usize, outs: Vec<Out>) {
        for o in outs {
            match o {
                Out::Send(to, msg) => {
                    let Some(to) = index(&to) else { continue };
                    if self.cut.contains(&(from, to)) || self.rng.gen_bool(self.cfg.loss.clamp(0.0, 1.0)) {
                        continue;
                    }
                    let (lo, hi) = self.cfg.latency_ms;
                    let at = self.now + self.rng.gen_range(lo..=hi.max(lo));
                    self.seq += 1;
                    self.in_flight.insert(self.seq, (to, msg));
                    self.queue.push(Reverse((at, self.seq)));
                }
                Out::Event(e) => {
                    self.mix(&format!("{}:{from}:{e:?}", self.now));
                    self.events.push((self.now, from, e));
                }
            }
        }
    }

    /// Advances one tick: delivers what is due, then ticks every running node.
    pub fn step(&mut self) {
        self.now += self.cfg.tick_ms;
        while let Some(Reverse((at, seq))) = self.queue.peek().copied() {
            if at > self.now {
                break;
            }
            self.queue.pop();
            let Some((to, msg)) = self.in_flight.remove(&seq) else { continue };
            if self.frozen.contains(&to) {
                continue;
            }
            let mut out = Vec::new();
            let now = self.now;
            if let Some(e) = self.engines[to].as_mut() {
                e.receive(msg, now, &mut out);
                self.delivered += 1;
            }
            self.dispatch(to, out);
        }
        for i in 0..self.engines.len() {
            if self.frozen.contains(&i) {
                continue;
            }
            let mut out = Vec::new();
            let now = self.now;
            if let Some(e) = self.engines[i].as_mut() {
                e.tick(now, &mut out);
            }
            self.dispatch(i, out);
        }
    }

    /// Steps until `done` holds (returns the time) or `limit_ms` of virtual time pass.
    pub fn run_until(&mut self, limit_ms: u64, mut done: impl FnMut(&Sim) -> bool) -> Option<u64> {
        let end = self.now + limit_ms;
        while self.now < end {
            self.step();
            if done(self) {
                return Some(self.now);
            }
        }
        None
    }

    /// Crashes node `i` (it stops answering, as after SIGKILL).
    pub fn kill(&mut self, i: usize) {
        if let Some(e) = self.engines.get_mut(i) {
            *e = None;
        }
    }

    /// Freezes (true, as SIGSTOP) or thaws (false, as SIGCONT) node `i`.
    pub fn freeze(&mut self, i: usize, frozen: bool) {
        if frozen {
            self.frozen.insert(i);
        } else {
            self.frozen.remove(&i);
        }
    }

    /// Cuts every link between the two groups, both ways.
    pub fn partition(&mut self, a: &[usize], b: &[usize]) {
        for &x in a {
            for &y in b {
                self.cut.insert((x, y));
                self.cut.insert((y, x));
            }
        }
    }

    /// Restores every link.
    pub fn heal(&mut self) {
        self.cut.clear();
    }

    /// Asks node `i` to leave.
    pub fn leave(&mut self, i: usize) {
        let now = self.now;
        let mut out = Vec::new();
        if let Some(e) = self.engines[i].as_mut() {
            e.leave(now, &mut out);
        }
        self.dispatch(i, out);
    }

    /// Replaces what node `i` publishes (receptionist services and global names).
    pub fn publish(
        &mut self,
        i: usize,
        services: std::collections::BTreeMap<String, Vec<crate::gossip::Entry>>,
        names: std::collections::BTreeMap<String, crate::gossip::Entry>,
    ) {
        let now = self.now;
        let mut out = Vec::new();
        if let Some(e) = self.engines[i].as_mut() {
            e.publish(services, names, now, &mut out);
        }
        self.dispatch(i, out);
    }

    /// Running nodes that are members.
    pub fn members(&self) -> impl Iterator<Item = (usize, &Engine)> {
        self.engines.iter().enumerate().filter_map(|(i, e)| e.as_ref().filter(|e| e.is_member()).map(|e| (i, e)))
    }

    /// Whether every running node is a member that sees exactly the running nodes, all up
    /// and reachable, with a converged state.
    #[must_use]
    pub fn all_up(&self) -> bool {
        let running: BTreeSet<String> =
            self.engines.iter().enumerate().filter(|(_, e)| e.is_some()).map(|(i, _)| addr(i)).collect();
        self.engines.iter().flatten().all(|e| {
            let g = e.gossip();
            e.is_member()
                && g.converged()
                && g.unreachable().is_empty()
                && g.live().map(|m| m.id.addr.clone()).collect::<BTreeSet<_>>() == running
                && g.live().all(|m| m.status == MemberStatus::Up)
        })
    }

    /// Whether every running node that is a member sees `addr` with this status (a removed
    /// member may also be forgotten) and marks it unreachable (`Some(true)`), reachable
    /// (`Some(false)`), or either (`None`).
    #[must_use]
    pub fn everyone_sees(&self, who: usize, status: Option<MemberStatus>, unreachable: Option<bool>) -> bool {
        let a = addr(who);
        self.members().filter(|(i, _)| *i != who).all(|(_, e)| {
            let g = e.gossip();
            let st = g.member(&a).map(|m| m.status);
            status.is_none_or(|s| st == Some(s)) && unreachable.is_none_or(|u| g.is_unreachable(&a) == u)
        })
    }
}
