//! The task that runs one node's overlay over a real `troupe_remote::Node`: it owns the
//! overlay's state (HyParView and Plumtree for the peer-to-peer overlay, a member set for the
//! others), turns their outputs into messages to other nodes' `troupe.overlay` actors, and
//! keeps the node's connections to what the overlay allows.
//!
//! Rules:
//! 1. One task owns the state; the inbox actor, the [`super::Overlay`] handles, probes and the
//!    node's up/down events reach it through one queue, and a timer ticks it every `tick_ms`.
//! 2. Neighbours: full mesh: every member it knows; static: its listed peers and the nodes
//!    that listed it (they said `Hello`); client-server: a client's servers, a server's other
//!    servers (listed, or that said `Hello` as servers) and the clients that said `Hello`;
//!    HyParView: the active view.
//! 3. Kept links (static peers, a client's servers, a server's other servers) are dialled at
//!    start and redialled by the node layer when lost; each time one comes up this node says
//!    `Hello` on it.
//! 4. A connection to an overlay node that is not a neighbour and has carried nothing for
//!    `max(500 ms, 4 ticks)` is closed (HyParView's temporary connections: neighbour requests,
//!    shuffle replies, first contacts). A connection from an overlay node (in the passive view,
//!    or whose link state this node holds) that the overlay never talked on counts from the
//!    first sweep that sees it. Connections of non-overlay clients are left alone.
//! 5. Sending to a node that is not connected starts a probe (one at a time per node); when
//!    it fails, HyParView is told the node failed (its rule 5), full mesh forgets the member.
//! 6. A lost connection to a neighbour is a failure: HyParView heals its active view from the
//!    passive one, full mesh forgets the member, a server forgets the client.
//! 7. Full mesh: `Hello` carries the members the sender knows; a node says `Hello` to every
//!    member it learns of, and back to a sender that was new or knew fewer members; and every
//!    `shuffle_interval_ms` to one member picked at random (anti-entropy: a member one node
//!    dropped after a passing connection loss is learned again from another).
//! 8. HyParView: broadcasts, and unicasts to a node outside the active view, travel as
//!    Plumtree broadcasts (transitive delivery over the tree); a unicast is delivered only at
//!    its destination.
//! 9. Every envelope is handled once per node (the last `MAX_SEEN` ids are remembered) and is
//!    not passed on after `max_hops` hops.
//! 10. Full mesh and HyParView: while this node has no neighbour it joins through its
//!     contacts, the next one every `JOIN_RETRY`.
//! 11. A HyParView node that stops tells its active neighbours (`Disconnect`), so they heal
//!     at once instead of waiting for the connection to drop.
//! 12. A user-defined overlay (`service.rs`): its service joins at start through the contacts,
//!     hears its peers' messages, failures (rules 5, 6) and ticks, and leaves at stop; its
//!     neighbours are what `neighbours()` said after the last call, each change published as
//!     an event, a new neighbour dialled and kept, a neighbour that went and is not connected
//!     no longer redialled. Unicasts go to its `next_hop`, broadcasts to its `broadcast_to`.
//! 13. A unicast for another node with no next hop is counted, logged and published as
//!     `Unroutable` (`live/mod.rs` rule 5): under a user-defined overlay wherever it is, under
//!     a built-in one at its origin (a flood that reaches a node with no other link is not
//!     a failure).

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tokio::sync::{broadcast, mpsc, oneshot};
use troupe::ActorRef;
use troupe_remote::{Node, NodeEvent};

use super::config::{addr_of, LiveKind, OverlayConfig};
use super::links::{LinkTable, Outgoing};
use super::service::{Outbox, PeerService};
use super::Shared;

mod timer;
use super::route::{next_hops, View};
use super::wire::{Body, Delivery, Envelope, OverlayEvent, OverlayStatus, OverlayWire, OVERLAY_ACTOR};
use crate::overlay::hyparview::{HvMsg, HvOut, HyParView};
use crate::overlay::plumtree::{MsgId, Plumtree, PlumtreeConfig, PtMsg, PtOut};

const MAX_SEEN: usize = 100_000;
const JOIN_RETRY: Duration = Duration::from_millis(500);

/// `Input::Subscribe`'s `ack`, when given: answered once the subscription is in force (for the
/// AMQP overlay, once the broker bound the topic to this node's queue), or with why it could
/// not be made.
pub(crate) type SubscribeAck = oneshot::Sender<Result<(), String>>;

/// What reaches the driver (rule 1).
pub(crate) enum Input {
    Wire(OverlayWire),
    Send { to: String, actor: String, bytes: Vec<u8> },
    Broadcast { topic: String, bytes: Vec<u8> },
    Subscribe { topic: String, tx: mpsc::UnboundedSender<Delivery>, ack: Option<SubscribeAck> },
    Register { actor: String, tx: mpsc::UnboundedSender<Delivery> },
    Status(oneshot::Sender<OverlayStatus>),
    ProbeDone { addr: String, failed: bool },
    Stop(Option<oneshot::Sender<()>>),
}

pub(crate) struct Driver {
    node: Node,
    me: String,
    kind: LiveKind,
    cfg: OverlayConfig,
    hv: Option<HyParView>,
    pt: Option<Plumtree>,
    rng: ChaCha8Rng,
    members: BTreeSet<String>,
    servers: Vec<String>,
    kept: BTreeSet<String>,
    refs: HashMap<String, ActorRef<OverlayWire>>,
    last_used: HashMap<String, Instant>,
    probing: HashSet<String>,
    seen: HashSet<MsgId>,
    seen_order: VecDeque<MsgId>,
    seq: u64,
    inboxes: HashMap<String, mpsc::UnboundedSender<Delivery>>,
    topics: HashMap<String, Vec<mpsc::UnboundedSender<Delivery>>>,
    events: broadcast::Sender<OverlayEvent>,
    tx: mpsc::UnboundedSender<Input>,
    start: Instant,
    contact_next: usize,
    next_join: Instant,
    next_gossip: Instant,
    delivered: u64,
    forwarded: u64,
    swept: u64,
    shared: Arc<Shared>,
    links: Arc<parking_lot::RwLock<LinkTable>>,
    /// Routed sessions and when they were last seen in use (`timer.rs`, `links.rs` rule 4).
    routed_idle: HashMap<String, Instant>,
}

impl Driver {
    pub(crate) fn new(
        node: &Node,
        cfg: OverlayConfig,
        kind: LiveKind,
        events: broadcast::Sender<OverlayEvent>,
        tx: mpsc::UnboundedSender<Input>,
        shared: Arc<Shared>,
        links: Arc<parking_lot::RwLock<LinkTable>>,
    ) -> Self {
        let me = node.addr();
        let servers: Vec<String> = cfg.servers.iter().map(|s| addr_of(s).to_owned()).collect();
        let mut kept = BTreeSet::new();
        match kind {
            LiveKind::Static => kept.extend(cfg.peers.iter().map(|p| addr_of(p).to_owned())),
            LiveKind::ClientServer => kept.extend(servers.iter().cloned()),
            LiveKind::FullMesh | LiveKind::Hyparview | LiveKind::Amqp | LiveKind::Registered => {}
        }
        kept.remove(&me);
        let (hv, pt) = if kind == LiveKind::Hyparview {
            (Some(HyParView::new(&me, cfg.hyparview(), 0)), Some(Plumtree::new(&me, PlumtreeConfig::default())))
        } else {
            (None, None)
        };
        Self {
            node: node.clone(),
            members: kept.clone(),
            me,
            kind,
            hv,
            pt,
            rng: ChaCha8Rng::seed_from_u64(rand::random()),
            servers,
            kept,
            refs: HashMap::new(),
            last_used: HashMap::new(),
            probing: HashSet::new(),
            seen: HashSet::new(),
            seen_order: VecDeque::new(),
            seq: 0,
            inboxes: HashMap::new(),
            topics: HashMap::new(),
            events,
            tx,
            start: Instant::now(),
            contact_next: 0,
            next_join: Instant::now(),
            next_gossip: Instant::now(),
            delivered: 0,
            forwarded: 0,
            swept: 0,
            cfg,
            shared,
            links,
            routed_idle: HashMap::new(),
        }
    }

    /// Runs until `Stop` (rule 1).
    pub(crate) async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Input>) {
        let mut node_events = self.node.subscribe();
        for k in self.kept.clone() {
            let (node, k2) = (self.node.clone(), k.clone());
            // Rule 3: kept links; the node layer redials them. Hello follows each `NodeUp`.
            tokio::spawn(async move {
                let _ = node.connect(&k2).await;
            });
            if self.node.is_connected(&k) {
                self.hello(&k);
            }
        }
        // Rule 12.
        let seeds = self.cfg.contacts.clone();
        self.service(|s, out| s.join(&seeds, out));
        let mut stopped = None;
        let mut tick = tokio::time::interval(Duration::from_millis(self.cfg.tick_ms));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                input = rx.recv() => match input {
                    Some(Input::Stop(ack)) => {
                        stopped = ack;
                        break;
                    }
                    None => break,
                    Some(i) => self.input(i),
                },
                ev = node_events.recv() => match ev {
                    Ok(NodeEvent::NodeUp { addr, .. }) => {
                        if self.kept.contains(&addr) {
                            self.hello(&addr);
                        }
                    }
                    Ok(NodeEvent::NodeDown { addr, .. }) => {
                        self.refs.remove(&addr);
                        if self.neighbours().contains(&addr) && !self.kept.contains(&addr) {
                            self.failed(&addr);
                        }
                    }
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => break,
                },
                _ = tick.tick() => self.tick(),
            }
        }
        // Rules 11 and 12.
        self.service(|s, out| s.leave(out));
        if self.hv.is_some() {
            for n in self.neighbours() {
                self.send_wire(&n, OverlayWire::Hv { from: self.me.clone(), msg: HvMsg::Disconnect });
            }
        }
        self.node.unexport(OVERLAY_ACTOR);
        if self.links.read().active() {
            self.node.set_router(None);
        }
        if let Some(ack) = stopped {
            let _ = ack.send(());
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    pub(crate) fn neighbours(&self) -> BTreeSet<String> {
        match &self.hv {
            Some(hv) => hv.active().iter().cloned().collect(),
            None => self.members.clone(),
        }
    }

    fn emit(&self, ev: OverlayEvent) {
        let _ = self.events.send(ev);
    }

    /// Rule 12: calls a user-defined overlay's service (nothing under a built-in one), sends
    /// what it asked, and publishes its neighbour changes.
    fn service(&mut self, call: impl FnOnce(&mut dyn PeerService, &mut Outbox)) {
        let shared = self.shared.clone();
        let Some(service) = &shared.service else { return };
        let mut out = Outbox::default();
        let now = {
            let mut s = service.lock();
            call(&mut **s, &mut out);
            let mut n = s.neighbours();
            n.remove(&self.me);
            n
        };
        for (to, bytes) in out.sends {
            self.send_wire(&to, OverlayWire::Service { from: self.me.clone(), bytes });
        }
        let gone: Vec<String> = self.members.difference(&now).cloned().collect();
        let new: Vec<String> = now.difference(&self.members).cloned().collect();
        self.members = now;
        for addr in gone {
            if !self.node.is_connected(&addr) {
                // Not redialled any more; a connection still up is swept once idle (rule 4).
                self.node.disconnect(&addr);
            }
            self.emit(OverlayEvent::NeighbourDown { addr });
        }
        for addr in new {
            self.last_used.insert(addr.clone(), Instant::now());
            let (node, a) = (self.node.clone(), addr.clone());
            tokio::spawn(async move {
                let _ = node.connect(&a).await;
            });
            self.emit(OverlayEvent::NeighbourUp { addr });
        }
    }

    /// Rule 13.
    fn unroutable(&mut self, to: &str, origin: &str) {
        self.shared.unroutable.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            "overlay {:?}: no route from here to {to} for a message from {origin}; not passed on",
            self.shared.name
        );
        self.emit(OverlayEvent::Unroutable { to: to.to_owned(), origin: origin.to_owned() });
    }

    fn add_member(&mut self, addr: &str) -> bool {
        if addr == self.me || !self.members.insert(addr.to_owned()) {
            return false;
        }
        self.emit(OverlayEvent::NeighbourUp { addr: addr.to_owned() });
        true
    }

    fn hello(&mut self, to: &str) {
        let members = if self.kind == LiveKind::FullMesh { self.members.iter().cloned().collect() } else { Vec::new() };
        let server = self.kind == LiveKind::ClientServer && self.cfg.is_server();
        self.send_wire(to, OverlayWire::Hello { from: self.me.clone(), members, server });
    }

    /// Sends one message to the overlay actor at `to` (rule 5: probes an unconnected node).
    fn send_wire(&mut self, to: &str, msg: OverlayWire) {
        if to == self.me {
            return;
        }
        self.last_used.insert(to.to_owned(), Instant::now());
        if !matches!(msg, OverlayWire::Links { .. } | OverlayWire::Env { .. } | OverlayWire::Pt { .. }) {
            // `links.rs` rule 2: the protocol's own partner is dialled directly.
            self.links.write().touch(to);
            self.node.dial_directly(to);
        }
        if !self.node.is_connected(to) && self.probing.insert(to.to_owned()) {
            let (node, tx, addr) = (self.node.clone(), self.tx.clone(), to.to_owned());
            tokio::spawn(async move {
                let failed = node.lookup::<OverlayWire>(&addr, OVERLAY_ACTOR).await.is_err();
                let _ = tx.send(Input::ProbeDone { addr, failed });
            });
        }
        let node = &self.node;
        let r = self.refs.entry(to.to_owned()).or_insert_with(|| node.remote_ref(to, OVERLAY_ACTOR));
        if let Err(e) = r.send(msg) {
            // A ref to a node that was lost refuses sends: make a fresh one and try once more.
            let fresh: ActorRef<OverlayWire> = self.node.remote_ref(to, OVERLAY_ACTOR);
            if let Some(m) = e.into_inner() {
                let _ = fresh.send(m);
            }
            self.refs.insert(to.to_owned(), fresh);
        }
    }

    fn input(&mut self, i: Input) {
        match i {
            Input::Wire(w) => self.wire(w),
            Input::Send { to, actor, bytes } => {
                let body = Body::Unicast { to, actor, bytes };
                self.originate(body);
            }
            Input::Broadcast { topic, bytes } => self.originate(Body::Broadcast { topic, bytes }),
            Input::Subscribe { topic, tx, ack } => {
                self.topics.entry(topic).or_default().push(tx);
                if let Some(ack) = ack {
                    let _ = ack.send(Ok(()));
                }
            }
            Input::Register { actor, tx } => {
                self.inboxes.insert(actor, tx);
            }
            Input::Status(reply) => {
                let _ = reply.send(self.status());
            }
            Input::ProbeDone { addr, failed } => {
                self.probing.remove(&addr);
                if failed && !self.kept.contains(&addr) {
                    self.failed(&addr);
                }
            }
            Input::Stop(_) => {}
        }
    }

    /// Rules 5 and 6.
    fn failed(&mut self, addr: &str) {
        if self.shared.service.is_some() {
            self.service(|s, out| s.peer_failed(addr, out));
        } else if let Some(hv) = &mut self.hv {
            let mut out = Vec::new();
            hv.peer_failed(addr, &mut self.rng, &mut out);
            self.run_hv(out);
        } else if self.members.remove(addr) {
            self.emit(OverlayEvent::NeighbourDown { addr: addr.to_owned() });
        }
    }

    fn wire(&mut self, w: OverlayWire) {
        let from = match &w {
            OverlayWire::Hello { from, .. }
            | OverlayWire::Hv { from, .. }
            | OverlayWire::Pt { from, .. }
            | OverlayWire::Env { from, .. }
            | OverlayWire::Service { from, .. }
            | OverlayWire::Links { from, .. } => from.clone(),
        };
        if !matches!(w, OverlayWire::Links { .. }) {
            // Link states are not a conversation: a node that announces to this one before its
            // `Hello` arrives is no reason to sweep its connection (rule 4).
            self.last_used.insert(from.clone(), Instant::now());
        }
        match w {
            OverlayWire::Hello { from, members, server } => self.on_hello(&from, members, server),
            OverlayWire::Hv { from, msg } => {
                if let Some(hv) = &mut self.hv {
                    let mut out = Vec::new();
                    hv.receive(&from, msg, &mut self.rng, &mut out);
                    self.run_hv(out);
                }
            }
            OverlayWire::Pt { from, msg } => {
                let now = self.now_ms();
                if let Some(pt) = &mut self.pt {
                    let mut out = Vec::new();
                    pt.receive(&from, msg, now, &mut out);
                    self.run_pt(out);
                }
            }
            OverlayWire::Env { from, env } => self.on_env(Some(&from), env),
            OverlayWire::Service { from, bytes } => self.service(|s, out| s.receive(&from, &bytes, out)),
            OverlayWire::Links { from, batch } => {
                let out = self.links.write().receive(&from, batch);
                self.send_links(out);
            }
        }
    }

    /// `links.rs` rule 1: tells the link table this node's neighbours, and sends what it says.
    pub(super) fn announce(&mut self) {
        let out = self.links.write().update(self.neighbours());
        self.send_links(out);
    }

    fn send_links(&mut self, out: Vec<Outgoing>) {
        for (to, batch) in out {
            self.send_wire(&to, OverlayWire::Links { from: self.me.clone(), batch });
        }
    }

    /// Rules 2, 3 and 7.
    fn on_hello(&mut self, from: &str, members: Vec<String>, server: bool) {
        match self.kind {
            LiveKind::FullMesh => {
                let knew_fewer = self.members.iter().any(|m| m != from && !members.contains(m));
                let new_sender = self.add_member(from);
                let fresh: Vec<String> = members.into_iter().filter(|m| self.add_member(m)).collect();
                if new_sender || knew_fewer || !fresh.is_empty() {
                    self.hello(from);
                }
                for m in fresh {
                    self.hello(&m);
                }
            }
            LiveKind::Static => {
                self.add_member(from);
            }
            LiveKind::ClientServer if self.cfg.is_server() => {
                if server && !self.servers.iter().any(|s| s == from) {
                    self.servers.push(from.to_owned());
                }
                self.add_member(from);
            }
            LiveKind::ClientServer | LiveKind::Hyparview | LiveKind::Amqp | LiveKind::Registered => {}
        }
    }

    fn remember(&mut self, id: &MsgId) -> bool {
        if !self.seen.insert(id.clone()) {
            return false;
        }
        self.seen_order.push_back(id.clone());
        if self.seen_order.len() > MAX_SEEN {
            if let Some(old) = self.seen_order.pop_front() {
                self.seen.remove(&old);
            }
        }
        true
    }

    fn originate(&mut self, body: Body) {
        self.seq += 1;
        let direct = matches!(&body, Body::Unicast { to, .. } if self.neighbours().contains(to));
        match &mut self.pt {
            // Rule 8.
            Some(pt) if !direct => {
                let Ok(payload) = serde_json::to_vec(&body) else { return };
                let mut out = Vec::new();
                pt.broadcast(payload, &mut out);
                self.run_pt(out);
            }
            _ => {
                let env = Envelope { id: (self.me.clone(), self.seq), hops: 0, body };
                self.on_env(None, env);
            }
        }
    }

    /// Rule 9 and `route.rs`.
    fn on_env(&mut self, from: Option<&str>, env: Envelope) {
        if !self.remember(&env.id) {
            return;
        }
        let mine = match &env.body {
            Body::Unicast { to, .. } => *to == self.me,
            Body::Broadcast { .. } => true,
        };
        if mine {
            self.deliver(&env.id.0, &env.body, env.hops);
            if matches!(env.body, Body::Unicast { .. }) {
                return;
            }
        }
        if env.hops >= self.cfg.max_hops {
            return;
        }
        let hops = match self.route_by_service(from, &env) {
            Some(hops) => hops,
            None => self.route_built_in(from, &env),
        };
        if hops.is_empty() && from.is_none() {
            if let Body::Unicast { to, .. } = &env.body {
                self.unroutable(to, &env.id.0);
            }
        }
        let next = Envelope { hops: env.hops + 1, ..env };
        for h in hops {
            if from.is_some() {
                self.forwarded += 1;
            }
            self.send_wire(&h, OverlayWire::Env { from: self.me.clone(), env: next.clone() });
        }
    }

    /// Rule 12: a user-defined overlay's next hops (`None` under a built-in one); a unicast
    /// with none is unroutable wherever it is (rule 13).
    fn route_by_service(&mut self, from: Option<&str>, env: &Envelope) -> Option<Vec<String>> {
        let shared = self.shared.clone();
        let service = shared.service.as_ref()?;
        let hops = match &env.body {
            Body::Unicast { to, .. } => match service.lock().next_hop(to) {
                Some(h) => vec![h],
                None if from.is_some() => {
                    self.unroutable(to, &env.id.0);
                    Vec::new()
                }
                None => Vec::new(),
            },
            Body::Broadcast { .. } => service.lock().broadcast_to(from),
        };
        Some(hops.into_iter().filter(|h| *h != self.me).collect())
    }

    /// `route.rs`.
    fn route_built_in(&self, from: Option<&str>, env: &Envelope) -> Vec<String> {
        let neighbours = self.neighbours();
        let connected: BTreeSet<String> = self.servers.iter().filter(|s| self.node.is_connected(s)).cloned().collect();
        let view = View {
            kind: self.kind,
            server: self.cfg.is_server(),
            me: &self.me,
            neighbours: &neighbours,
            servers: &self.servers,
            connected_servers: &connected,
        };
        next_hops(&view, from, env)
    }

    fn deliver(&mut self, origin: &str, body: &Body, hops: u32) {
        let (target, topic, bytes) = match body {
            Body::Unicast { actor, bytes, .. } => (self.inboxes.get(actor).cloned().into_iter().collect(), None, bytes),
            Body::Broadcast { topic, bytes } => {
                let subs = self.topics.entry(topic.clone()).or_default();
                subs.retain(|s| !s.is_closed());
                (subs.clone(), Some(topic.clone()), bytes)
            }
        };
        let targets: Vec<mpsc::UnboundedSender<Delivery>> = target;
        if targets.is_empty() {
            tracing::debug!("overlay: nobody here takes a message from {origin}");
            return;
        }
        self.delivered += 1;
        for t in targets {
            let _ = t.send(Delivery { origin: origin.to_owned(), topic: topic.clone(), bytes: bytes.clone(), hops });
        }
    }

    fn run_hv(&mut self, out: Vec<HvOut>) {
        for o in out {
            match o {
                HvOut::Send(to, msg) => self.send_wire(&to, OverlayWire::Hv { from: self.me.clone(), msg }),
                HvOut::Up(p) => {
                    if let Some(pt) = &mut self.pt {
                        pt.neighbor_up(&p);
                    }
                    self.emit(OverlayEvent::NeighbourUp { addr: p });
                }
                HvOut::Down(p) => {
                    if let Some(pt) = &mut self.pt {
                        pt.neighbor_down(&p);
                    }
                    self.emit(OverlayEvent::NeighbourDown { addr: p });
                }
            }
        }
    }

    fn run_pt(&mut self, out: Vec<PtOut>) {
        for o in out {
            match o {
                PtOut::Send(to, msg) => {
                    if matches!(&msg, PtMsg::Gossip { id, .. } if id.0 != self.me) {
                        self.forwarded += 1;
                    }
                    self.send_wire(&to, OverlayWire::Pt { from: self.me.clone(), msg });
                }
                PtOut::Deliver(id, payload) => match serde_json::from_slice::<Body>(&payload) {
                    Ok(body) => {
                        let mine = match &body {
                            Body::Unicast { to, .. } => *to == self.me,
                            Body::Broadcast { .. } => true,
                        };
                        if mine {
                            self.deliver(&id.0, &body, 0);
                        }
                    }
                    Err(e) => tracing::warn!("overlay: undecodable broadcast from {}: {e}", id.0),
                },
            }
        }
    }
}
