//! The membership protocol as a state machine without I/O: [`Engine`] takes messages and the
//! time, and returns messages to send and events to report ([`Out`]). The real daemon
//! (`daemon.rs`) drives it with sockets and a clock; the simulator (`sim.rs`) drives hundreds
//! of them in one process from a seed. Gossip state and its convergence rules: `gossip.rs`.
//!
//! Rules:
//! 1. A node starts outside the cluster and asks every seed (configured, resolved from
//!    `seed_dns`, and, when rejoining, every member it knew) to let it join, retrying with a
//!    doubling backoff; it reports each failed round. With no seeds it starts a cluster at
//!    once; when its own address is the first seed it starts one only after `seed_timeout_ms`
//!    without an answer. A rejoining node never starts a cluster.
//! 2. A member that is joining or up accepts a join from the same cluster name and protocol
//!    version: the joiner enters the table as `Joining` and receives the state. Otherwise the
//!    joiner is refused with the reason, which both sides report; it never enters the table.
//! 3. Gossip from another cluster, another protocol version, a sender not in its own table,
//!    or larger than `max_members` is dropped and reported; it changes nothing.
//! 4. The changes of one tick are pushed together, at its end, to `gossip_fanout` reachable
//!    members; every
//!    `gossip_interval_ms` a member also gossips to one reachable member, preferring those
//!    that have not seen its state. A receiver whose merged state differs from what it got
//!    answers with it (push-pull), so two nodes converge in one exchange.
//! 5. Each member heartbeats the `monitored_by` members that follow it on the ring of live
//!    members (ordered by a stable hash of the address) and feeds the answers to one
//!    phi-accrual detector per member (`phi.rs`). Crossing the threshold either way changes
//!    this observer's reachability record, which gossip spreads.
//! 6. The leader (`Gossip::leader`) acts only at convergence: joining -> up (numbered in
//!    address order, for keep-oldest), leaving -> exiting, exiting and down -> removed.
//! 7. Downing happens only when configured (`downing.rs`), after membership and reachability
//!    stayed unchanged for `stable_after_ms`.
//! 8. A member that sees itself down or removed stops; a downed one rejoins as a new
//!    incarnation when `rejoin_when_downed` is set. A leaving member stops once it is exiting
//!    and has pushed that to the others.
//! 9. On an overlay (seed 004 §3's peer service: [`Engine::set_neighbours`]) a member gossips
//!    (rule 4) and heartbeats (rule 5) only its overlay neighbours that are live members: the
//!    membership's own traffic stays on the overlay's links, and a non-neighbour's failure is
//!    learned from the reachability records its neighbours gossip. A neighbour that leaves the
//!    neighbours (an overlay drops a failed node at once) stays monitored for
//!    `FORMER_HEARTBEATS` (20) heartbeat intervals, and for as long as it is unreachable, so that
//!    its failure is still judged. While none of its neighbours is a member yet, it gossips
//!    and monitors as without an overlay.

/// The state, for changing: counts the change (so work that depends only on the state is
/// skipped while it stays the same) and copies it only when a sent message still shares it.
macro_rules! gm {
    ($s:ident) => {{
        $s.gen += 1;
        std::sync::Arc::make_mut(&mut $s.gossip)
    }};
}

/// Rule 9: how many heartbeat intervals a former overlay neighbour stays monitored.
pub(crate) const FORMER_HEARTBEATS: u64 = 20;

mod detect;
mod downing;
mod events;
mod leader;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::{ClusterConfig, PROTOCOL_VERSION};
use crate::gossip::{Entry, Gossip};
use crate::member::{Member, MemberStatus, NodeId};
use crate::phi::PhiDetector;
use crate::status::Status;
use crate::wire::{ClusterEvent, Wire};

/// What the engine asks its driver to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Out {
    /// Send this message to the member at this address.
    Send(String, Wire),
    /// Report this event.
    Event(ClusterEvent),
}

/// Counters of one engine.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct EngineStats {
    /// Gossip messages sent.
    pub gossip_out: u64,
    /// Gossip messages received and merged.
    pub gossip_in: u64,
    /// Gossip and joins refused (rules 2 and 3).
    pub refused: u64,
    /// Heartbeats sent.
    pub heartbeats_out: u64,
    /// Join rounds without an answer.
    pub join_retries: u64,
    /// Periodic gossip rounds run (rule 4: one every `gossip_interval_ms` while a member).
    pub gossip_rounds: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    Joining { attempt: u32, next_at: u64, since: u64, rejoin: bool },
    Member { exiting_since: Option<u64> },
    Stopped(String),
}

/// One node's membership protocol (rules at the top of the module).
pub struct Engine {
    cfg: ClusterConfig,
    me: NodeId,
    phase: Phase,
    gossip: Arc<Gossip>,
    gen: u64,
    leader_gen: u64,
    events_gen: u64,
    detectors: BTreeMap<String, (u64, PhiDetector)>,
    hb_seq: u64,
    next_hb: u64,
    next_gossip: u64,
    rng: ChaCha8Rng,
    dns_seeds: Vec<String>,
    view: events::View,
    stable: downing::Stability,
    services: BTreeMap<String, Vec<Entry>>,
    names: BTreeMap<String, Entry>,
    dirty: bool,
    /// Counts content changes (not `seen` changes): events depend on content only.
    cgen: u64,
    left: bool,
    stats: EngineStats,
    /// Rule 9: the overlay's neighbours, when the cluster runs on one.
    neighbours: Option<BTreeSet<String>>,
    /// Rule 9: former neighbours still monitored, with when they left the neighbours (ms; 0
    /// until the next heartbeat round notes it).
    former: BTreeMap<String, u64>,
}

impl Engine {
    /// An engine for the node `me`, at time `now` (ms), with its own random stream.
    #[must_use]
    pub fn new(cfg: ClusterConfig, me: NodeId, seed: u64, now: u64) -> Self {
        let mut e = Self {
            cfg,
            me,
            phase: Phase::Joining { attempt: 0, next_at: now, since: now, rejoin: false },
            gossip: Arc::new(Gossip::default()),
            gen: 1,
            leader_gen: 0,
            events_gen: 0,
            detectors: BTreeMap::new(),
            hb_seq: 0,
            next_hb: now,
            next_gossip: now,
            rng: ChaCha8Rng::seed_from_u64(seed),
            dns_seeds: Vec::new(),
            view: events::View::default(),
            stable: downing::Stability::default(),
            services: BTreeMap::new(),
            names: BTreeMap::new(),
            dirty: false,
            cgen: 1,
            left: false,
            stats: EngineStats::default(),
            neighbours: None,
            former: BTreeMap::new(),
        };
        if e.cfg.seeds.is_empty() && e.cfg.seed_dns.is_none() {
            e.form();
        }
        e
    }

    /// This node's identity (its incarnation changes when it rejoins).
    #[must_use]
    pub fn me(&self) -> &NodeId {
        &self.me
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &ClusterConfig {
        &self.cfg
    }

    /// The current state.
    #[must_use]
    pub fn gossip(&self) -> &Gossip {
        &self.gossip
    }

    /// The current state as a shared snapshot (no copy: the engine copies on its next change
    /// while the snapshot is held).
    #[must_use]
    pub fn shared_gossip(&self) -> Arc<Gossip> {
        Arc::clone(&self.gossip)
    }

    /// Counts changes of the state (`seen` included): equal generations, equal states.
    #[must_use]
    pub fn generation(&self) -> u64 {
        self.gen
    }

    /// The counters.
    #[must_use]
    pub fn stats(&self) -> &EngineStats {
        &self.stats
    }

    /// Whether this node is a member (joined and not stopped).
    #[must_use]
    pub fn is_member(&self) -> bool {
        matches!(self.phase, Phase::Member { .. })
    }

    /// Why membership ended, once it has.
    #[must_use]
    pub fn stopped(&self) -> Option<&str> {
        match &self.phase {
            Phase::Stopped(r) => Some(r),
            _ => None,
        }
    }

    /// The membership table as this node sees it.
    #[must_use]
    pub fn status(&self) -> Status {
        let phase = match &self.phase {
            Phase::Joining { .. } => "joining".to_owned(),
            Phase::Member { .. } => "member".to_owned(),
            Phase::Stopped(r) => format!("stopped: {r}"),
        };
        Status::of(&self.me.addr, &self.cfg.name, phase, &self.gossip)
    }

    /// Seeds resolved from `seed_dns` by the driver (rule 1).
    pub fn set_dns_seeds(&mut self, seeds: Vec<String>) {
        self.dns_seeds = seeds;
    }

    fn form(&mut self) {
        gm!(self)
            .members
            .insert(self.me.addr.clone(), Member { id: self.me.clone(), status: MemberStatus::Joining, up_number: 0 });
        gm!(self).touched(&self.me.addr);
        self.phase = Phase::Member { exiting_since: None };
        self.changed();
    }

    fn candidates(&self, rejoin: bool) -> Vec<String> {
        let mut c: BTreeSet<String> = self.cfg.seeds.iter().chain(&self.dns_seeds).cloned().collect();
        if rejoin {
            c.extend(self.gossip.live().map(|m| m.id.addr.clone()));
        }
        c.remove(&self.me.addr);
        c.into_iter().collect()
    }

    /// Advances time: join attempts, heartbeats, reachability, gossip rounds, leader actions,
    /// downing. Appends what to do to `out`.
    pub fn tick(&mut self, now: u64, out: &mut Vec<Out>) {
        match self.phase.clone() {
            Phase::Joining { attempt, next_at, since, rejoin } => {
                if now >= next_at {
                    self.join_round(attempt, since, rejoin, now, out);
                }
            }
            Phase::Member { .. } => {
                self.heartbeats(now, out);
                self.reachability(now);
                self.leader_actions();
                self.downing(now);
                self.names_check(out);
                if now >= self.next_gossip {
                    self.next_gossip = now + self.cfg.gossip_interval_ms;
                    self.stats.gossip_rounds += 1;
                    self.gossip_round(out);
                }
            }
            Phase::Stopped(_) => return,
        }
        self.finish(now, out);
        self.push_changes(out);
    }

    fn join_round(&mut self, attempt: u32, since: u64, rejoin: bool, now: u64, out: &mut Vec<Out>) {
        let first_seed = self.cfg.seeds.first() == Some(&self.me.addr);
        if !rejoin && first_seed && now.saturating_sub(since) >= self.cfg.seed_timeout_ms {
            self.form();
            return;
        }
        let tried = self.candidates(rejoin);
        if tried.is_empty() && !rejoin && self.cfg.seed_dns.is_none() {
            self.form();
            return;
        }
        for to in &tried {
            let node = self.me.clone();
            let join = Wire::Join { cluster: self.cfg.name.clone(), proto: PROTOCOL_VERSION, node };
            out.push(Out::Send(to.clone(), join));
        }
        let delay = self.cfg.join_retry_min_ms.saturating_mul(1 << attempt.min(16)).min(self.cfg.join_retry_max_ms);
        if attempt > 0 {
            self.stats.join_retries += 1;
            out.push(Out::Event(ClusterEvent::JoinRetry { tried: tried.clone(), next_in_ms: delay }));
        }
        self.phase = Phase::Joining { attempt: attempt + 1, next_at: now + delay, since, rejoin };
    }

    /// Handles one message at time `now`.
    pub fn receive(&mut self, msg: Wire, now: u64, out: &mut Vec<Out>) {
        match msg {
            Wire::Join { cluster, proto, node } => self.on_join(cluster, proto, node, out),
            Wire::Welcome { cluster, gossip } => {
                let joining = matches!(self.phase, Phase::Joining { .. });
                let me_in = gossip.member(&self.me.addr).is_some_and(|m| m.id.uid == self.me.uid);
                if joining && me_in && cluster == self.cfg.name {
                    gm!(self).receive(&gossip, &self.me.addr);
                    self.phase = Phase::Member { exiting_since: None };
                    self.next_gossip = now + self.cfg.gossip_interval_ms;
                    self.changed();
                }
            }
            Wire::JoinRefused { from, reason } => {
                if matches!(self.phase, Phase::Joining { .. }) {
                    out.push(Out::Event(ClusterEvent::JoinRefused { seed: from, reason }));
                }
            }
            Wire::Gossip { cluster, proto, from, gossip } => self.on_gossip(cluster, proto, from, gossip, out),
            Wire::Heartbeat { from, seq } => {
                if self.is_member() {
                    let uid = self.me.uid;
                    out.push(Out::Send(from, Wire::HeartbeatRsp { from: self.me.addr.clone(), uid, seq }));
                }
                return;
            }
            Wire::HeartbeatRsp { from, uid, .. } => {
                if let Some((u, d)) = self.detectors.get_mut(&from) {
                    if *u == uid {
                        d.heartbeat(now as f64);
                    }
                }
                return;
            }
        }
        if self.is_member() {
            self.leader_actions();
            self.names_check(out);
        }
        self.finish(now, out);
    }

    fn refuse(&mut self, from: &str, reason: String, out: &mut Vec<Out>) {
        self.stats.refused += 1;
        out.push(Out::Event(ClusterEvent::Refused { from: from.to_owned(), reason }));
    }

    fn on_join(&mut self, cluster: String, proto: u32, node: NodeId, out: &mut Vec<Out>) {
        let reason = if cluster != self.cfg.name {
            Some(format!("it asked to join cluster {cluster:?}; this is cluster {:?}", self.cfg.name))
        } else if proto != PROTOCOL_VERSION {
            Some(format!("it speaks membership protocol {proto}; this node speaks {PROTOCOL_VERSION}"))
        } else {
            None
        };
        if let Some(reason) = reason {
            self.refuse(&node.addr, format!("join refused: {reason}"), out);
            out.push(Out::Send(node.addr, Wire::JoinRefused { from: self.me.addr.clone(), reason }));
            return;
        }
        let my_status = self.gossip.member(&self.me.addr).map(|m| m.status);
        if !self.is_member() || !matches!(my_status, Some(MemberStatus::Joining | MemberStatus::Up)) {
            return; // Not a member that can admit anyone: the joiner tries its other seeds.
        }
        match self.gossip.members.get(&node.addr) {
            Some(m) if m.id.uid > node.uid => return, // A stale join from an older incarnation.
            Some(m) if m.id.uid == node.uid => {}
            _ => {
                let m = Member { id: node.clone(), status: MemberStatus::Joining, up_number: 0 };
                gm!(self).members.insert(node.addr.clone(), m);
                gm!(self).touched(&self.me.addr);
                self.changed();
            }
        }
        let welcome = Wire::Welcome { cluster: self.cfg.name.clone(), gossip: Arc::clone(&self.gossip) };
        out.push(Out::Send(node.addr, welcome));
    }

    fn on_gossip(&mut self, cluster: String, proto: u32, from: String, gossip: Arc<Gossip>, out: &mut Vec<Out>) {
        if !self.is_member() {
            return;
        }
        let reason = if cluster != self.cfg.name {
            Some(format!("gossip from cluster {cluster:?}; this is cluster {:?}", self.cfg.name))
        } else if proto != PROTOCOL_VERSION {
            Some(format!("gossip in protocol {proto}; this node speaks {PROTOCOL_VERSION}"))
        } else if gossip.members.len() > self.cfg.max_members {
            Some(format!("gossip with {} members, over max_members {}", gossip.members.len(), self.cfg.max_members))
        } else if gossip.member(&from).is_none() {
            Some("gossip from a node that is not in its own table".to_owned())
        } else {
            None
        };
        if let Some(reason) = reason {
            self.refuse(&from, reason, out);
            return;
        }
        self.stats.gossip_in += 1;
        // One full comparison in the common case (nothing new): rule 3 without a merge.
        let same = if self.gossip.same_content(&gossip) {
            if !gossip.seen.is_subset(&self.gossip.seen) {
                gm!(self).seen.extend(gossip.seen.iter().cloned());
            }
            true
        } else {
            let (changed, same) = gm!(self).receive_full(&gossip, &self.me.addr);
            if changed {
                self.changed();
            }
            same
        };
        if !same || !self.gossip.seen.is_subset(&gossip.seen) {
            // Push-pull (rule 4): the sender lacks something we hold.
            self.send_gossip(&from, out);
        }
    }

    /// Marks a content change: pushed at the end of the tick, reported as events.
    fn changed(&mut self) {
        self.dirty = true;
        self.cgen += 1;
    }

    fn send_gossip(&mut self, to: &str, out: &mut Vec<Out>) {
        self.stats.gossip_out += 1;
        let msg = Wire::Gossip {
            cluster: self.cfg.name.clone(),
            proto: PROTOCOL_VERSION,
            from: self.me.addr.clone(),
            gossip: Arc::clone(&self.gossip),
        };
        out.push(Out::Send(to.to_owned(), msg));
    }

    /// Reachable live members other than this node.
    fn targets(&self) -> Vec<String> {
        let unreachable = self.gossip.unreachable();
        let all: Vec<String> = self
            .gossip
            .live()
            .filter(|m| m.id.addr != self.me.addr && !unreachable.contains(&m.id.addr))
            .map(|m| m.id.addr.clone())
            .collect();
        self.on_overlay(all)
    }

    /// Rule 9: of `members`, the overlay neighbours, when the cluster runs on an overlay and
    /// some neighbour is among them; else all of them.
    pub(crate) fn on_overlay(&self, members: Vec<String>) -> Vec<String> {
        let Some(n) = &self.neighbours else { return members };
        let near: Vec<String> = members.iter().filter(|m| n.contains(*m)).cloned().collect();
        if near.is_empty() {
            members
        } else {
            near
        }
    }

    /// Rule 9: runs the membership on an overlay whose neighbours of this node are
    /// `neighbours` (called again at each change); `None` runs it as a full mesh.
    ///
    /// ```
    /// use troupe_cluster::{ClusterConfig, Engine, NodeId};
    /// let mut e = Engine::new(ClusterConfig::default(), NodeId::fresh("127.0.0.1:1", "a"), 1, 0);
    /// e.set_neighbours(Some(["127.0.0.1:2".to_owned()].into()));
    /// ```
    pub fn set_neighbours(&mut self, neighbours: Option<BTreeSet<String>>) {
        if let (Some(old), Some(new)) = (&self.neighbours, &neighbours) {
            for gone in old.difference(new) {
                self.former.entry(gone.clone()).or_insert(0);
            }
        }
        if let Some(new) = &neighbours {
            self.former.retain(|a, _| !new.contains(a));
        } else {
            self.former.clear();
        }
        self.neighbours = neighbours;
    }

    fn gossip_round(&mut self, out: &mut Vec<Out>) {
        let targets = self.targets();
        let unseen: Vec<&String> = targets.iter().filter(|a| !self.gossip.seen.contains(*a)).collect();
        let pick = if !unseen.is_empty() && self.rng.gen_bool(0.8) {
            unseen.choose(&mut self.rng).map(|s| (*s).clone())
        } else {
            targets.choose(&mut self.rng).cloned()
        };
        if let Some(to) = pick {
            self.send_gossip(&to, out);
        }
    }

    /// Reports events and checks this node's own fate (rule 8). Changes are pushed by the
    /// next tick ([`Engine::push_changes`]), so the changes of one tick travel together.
    fn finish(&mut self, now: u64, out: &mut Vec<Out>) {
        self.republish();
        self.emit_events(out);
        self.self_check(now, out);
    }

    /// Pushes this tick's changes to `gossip_fanout` reachable members (rule 4).
    fn push_changes(&mut self, out: &mut Vec<Out>) {
        if self.dirty && self.is_member() {
            self.dirty = false;
            let mut targets = self.targets();
            targets.shuffle(&mut self.rng);
            for to in targets.into_iter().take(self.cfg.gossip_fanout) {
                self.send_gossip(&to, out);
            }
        }
    }

    fn self_check(&mut self, now: u64, out: &mut Vec<Out>) {
        let Phase::Member { exiting_since } = self.phase else { return };
        let Some(mine) = self.gossip.member(&self.me.addr).cloned() else { return };
        let reason = if mine.id.uid != self.me.uid {
            Some("a newer incarnation of this address joined".to_owned())
        } else {
            match mine.status {
                MemberStatus::Removed if self.left => Some("left".to_owned()),
                // Removed without having asked to leave: it was downed first.
                MemberStatus::Down | MemberStatus::Removed => Some("downed".to_owned()),
                MemberStatus::Exiting => match exiting_since {
                    None => {
                        self.phase = Phase::Member { exiting_since: Some(now) };
                        None
                    }
                    Some(t) if now.saturating_sub(t) >= 2 * self.cfg.gossip_interval_ms => Some("left".to_owned()),
                    Some(_) => None,
                },
                _ => None,
            }
        };
        let Some(reason) = reason else { return };
        // Make sure the others hear of it before going quiet.
        for to in self.targets() {
            self.send_gossip(&to, out);
        }
        self.detectors.clear();
        if reason == "downed" && self.cfg.rejoin_when_downed {
            self.me = NodeId::fresh(&self.me.addr, &self.me.name);
            self.phase = Phase::Joining { attempt: 0, next_at: now, since: now, rejoin: true };
        } else {
            out.push(Out::Event(ClusterEvent::Stopped { reason: reason.clone() }));
            self.phase = Phase::Stopped(reason);
        }
    }

    /// This node asks to leave (rule 8).
    pub fn leave(&mut self, now: u64, out: &mut Vec<Out>) {
        if let Some(m) = gm!(self).members.get_mut(&self.me.addr) {
            if matches!(m.status, MemberStatus::Joining | MemberStatus::Up) && m.id.uid == self.me.uid {
                m.status = MemberStatus::Leaving;
                self.left = true;
                gm!(self).touched(&self.me.addr);
                self.changed();
            }
        }
        self.leader_actions();
        self.finish(now, out);
    }

    /// An operator downs the member at `addr`; false when it is not a live member.
    pub fn down(&mut self, addr: &str, now: u64, out: &mut Vec<Out>) -> bool {
        let ok = self.mark_down(addr);
        self.leader_actions();
        self.finish(now, out);
        ok
    }

    fn mark_down(&mut self, addr: &str) -> bool {
        match gm!(self).members.get_mut(addr) {
            Some(m) if m.status.is_live() => {
                m.status = MemberStatus::Down;
                gm!(self).touched(&self.me.addr);
                self.changed();
                true
            }
            _ => false,
        }
    }

    /// Replaces what this node publishes (receptionist services and global names).
    pub fn publish(
        &mut self,
        services: BTreeMap<String, Vec<Entry>>,
        names: BTreeMap<String, Entry>,
        now: u64,
        out: &mut Vec<Out>,
    ) {
        self.services = services;
        self.names = names;
        self.republish();
        self.finish(now, out);
    }

    fn republish(&mut self) {
        let current = self.gossip.owned.get(&self.me.addr);
        let same =
            current.is_some_and(|o| o.uid == self.me.uid && o.services == self.services && o.names == self.names);
        if same || !self.is_member() {
            return;
        }
        let version = current.filter(|o| o.uid == self.me.uid).map_or(1, |o| o.version + 1);
        let me = self.me.addr.clone();
        let owned = crate::gossip::Owned {
            uid: self.me.uid,
            version,
            services: self.services.clone(),
            names: self.names.clone(),
        };
        gm!(self).owned.insert(me, owned);
        gm!(self).touched(&self.me.addr);
        self.changed();
    }

    /// The names this node publishes (after conflicts were resolved).
    #[must_use]
    pub fn own_names(&self) -> &BTreeMap<String, Entry> {
        &self.names
    }
}
