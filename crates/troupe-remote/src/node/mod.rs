//! A node: an OS process with a name and a listen address that hosts actors and reaches the
//! actors of other nodes. [`Node`] is the public handle; the connection machinery is in
//! `conn.rs`, inbound dispatch in `inbound.rs`, remote refs in `refs.rs`, peers in `peer.rs`,
//! a lane's send queue in `lane.rs`.
//!
//! Rules:
//! 1. Connections are one-way for data: a node sends over connections it dialled and receives
//!    over connections it accepted, so two nodes never race to own one connection. A node that
//!    accepts a control connection from a peer it has no session with dials back at once.
//! 2. A peer is `Up` once our control lane to it has completed the handshake. It goes down when
//!    a connection of the current session breaks or closes (prompt on SIGKILL: the kernel
//!    closes the sockets), or when nothing arrived from it for `heartbeat_timeout` (a frozen
//!    peer). Going down signals every crossing monitor and link with `NoConnection`, fails the
//!    asks waiting on it, and drops what was queued for it.
//! 3. Configured peers (and peers passed to [`Node::connect`]) are reconnected with exponential
//!    backoff (`reconnect_min_ms` doubling to `reconnect_max_ms`); others reconnect on demand,
//!    at the next send.
//! 4. Unknown node names and unreachable addresses are typed errors ([`ErrorKind::UnknownNode`],
//!    [`ErrorKind::Unreachable`], [`ErrorKind::Timeout`]), never hangs.
//! 5. The peer table is bounded (`max_peers`). A peer that is not connected, not configured
//!    and referred to by nothing but the table is reclaimed after `peer_idle_ms`, or at once
//!    when the table is full and room is needed. When nothing can be reclaimed, a peer the
//!    network asks for is refused (`peers_refused`).
//! 6. A peer index names one live peer: indices are handed out fresh (1..=65,534) and only a
//!    reclaimed peer's index is reused, once fresh ones run out. When none is free, the local
//!    API gets a detached peer (index 65,535) that never connects and fails its sends.
//! 7. An address that arrives inside a message (a ref or a reply handle) is honoured only
//!    when it is this node, the peer the message came from, a configured or connected member,
//!    or the home of a global name: a forged address never creates a peer or a dial
//!    (`refs_refused`).
//! 8. Tearing a session down is linear in the relations it leaves: monitors and links are
//!    indexed on both sides (this node's per-peer maps, the actor's `troupe` `keyed.rs`), so
//!    each is released in O(1); the first `conn::TEARDOWN_BATCH` at once, the rest by a task
//!    that yields between batches, so other peers are served meanwhile (`teardown_pending`
//!    counts what is still to release).
//! 9. Connections one peer dials to this node are budgeted (`max_connections_per_peer`, never
//!    below this node's own lanes plus one: `NodeConfig::connection_budget`): one past
//!    it is closed after its handshake (`connections_refused`, logged rate-limited) and the
//!    peer's session carries on. Each connection may hold at most one partly read frame of
//!    `max_frame_bytes`, so this bounds how many unfinished frames one peer has (rule 11
//!    bounds their bytes).
//! 10. Replies to remote askers are budgeted over the whole node (`max_reply_bytes`): the
//!     bytes of reply frames queued on any peer's lanes or being written to it are one gauge
//!     (`reply_bytes`, kept by the lanes: `lane.rs` rule 6). A reply that would take it past
//!     the budget closes the session of the peer holding the most of them, which frees them
//!     (`limit_closes`, logged rate-limited); when that peer is the asker itself, its reply is
//!     dropped (`replies_dropped`). Askers that never read their answers so hold at most the
//!     budget together, however many identities they use; each identity's lanes are also
//!     capped by `max_buffer_bytes`. Before this, five identities could hold 5 x 256 MiB.
//! 11. Large frames being received (64 KiB and more) are budgeted per peer
//!     (`max_partial_frame_bytes_per_peer`, never below this node's own lanes times
//!     `max_frame_bytes`: `NodeConfig::partial_frame_budget`): a frame counts at its full
//!     length from when its header is in until it is complete or its connection ends
//!     (`partial_frame_bytes`); a frame past the budget closes the session (`limit_closes`),
//!     before any of its body is buffered. Before this, the 16 connections rule 9 allows one
//!     peer could hold a nearly complete 16 MiB frame each, 256 MiB (246 MiB measured with 15).
//! 12. Replies and refusals go over this node's own session to the asker, which the asker's
//!     control connection starts when it is accepted. The asker dials that connection, and
//!     finishes its handshake, before any data connection, but this node handles accepted
//!     connections on separate tasks, so a data connection could be read, and its ask
//!     answered, before the control connection's task had started the session back; the
//!     reply was then dropped as if the asker were gone (`replies_dropped`) and the ask timed
//!     out. So a data connection accepted while the peer is down waits, before it is read,
//!     until the session back is starting or up, for at most 1 s (a peer that never opens a
//!     control connection is then read as before). Test: `tests/remote_messaging.rs`.

pub(crate) mod causal_wire;
pub(crate) mod conn;
pub(crate) mod downs;
pub(crate) mod globals;
pub(crate) mod inbound;
pub(crate) mod lane;
pub(crate) mod lifecycle;
pub(crate) mod peer;
pub(crate) mod refs;
pub(crate) mod relay;
pub(crate) mod stream;
pub(crate) mod trim;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use serde::Serialize;
use tokio::sync::{broadcast, oneshot};
use tokio::task::JoinHandle;
use troupe::remote_api::SerdeHook;
use troupe::ActorRef;

use crate::config::{ChannelConfig, NodeConfig};
use crate::error::{Error, ErrorKind};
use crate::fault::{FaultConfig, Faults};
use crate::frame::Target;
use crate::handshake::Identity;
use crate::proto::{Control, GlobalEntry};
use crate::types::{self, RemoteMessage};
use peer::Peer;
use refs::{Export, PendingReply, RemoteActor, SendOptions};

/// What a node reports to subscribers ([`Node::subscribe`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "ev", rename_all = "snake_case")]
#[non_exhaustive]
pub enum NodeEvent {
    /// A session with a peer is established.
    NodeUp {
        /// Its name.
        name: String,
        /// Its listen address.
        addr: String,
    },
    /// A peer was lost.
    NodeDown {
        /// Its name.
        name: String,
        /// Its listen address.
        addr: String,
        /// Why (connection closed, heartbeat timeout, ...).
        reason: String,
    },
    /// A peer refused a message we sent (unknown actor, type mismatch, undecodable).
    Refused {
        /// The peer.
        addr: String,
        /// The target as we addressed it.
        target: String,
        /// Why.
        reason: String,
    },
    /// This node, as a relay, refused a routed connection and closed it back (no next hop, too
    /// many legs, a destination it does not know, too many tunnels for one peer, the next hop
    /// unreachable; `relay.rs` rules 4 and 7), counted in `tunnels_refused`.
    TunnelRefused {
        /// The destination the tunnel asked for.
        to: String,
        /// The node that opened it.
        origin: String,
        /// Why.
        reason: String,
    },
}

/// Counters, readable with [`Node::stats`].
#[derive(Default, Debug)]
pub(crate) struct Stats {
    pub(crate) frames_out: AtomicU64,
    pub(crate) frames_in: AtomicU64,
    pub(crate) bytes_out: AtomicU64,
    pub(crate) writes_through: AtomicU64,
    pub(crate) bytes_in: AtomicU64,
    pub(crate) connections_accepted: AtomicU64,
    pub(crate) connections_closed: AtomicU64,
    pub(crate) handshake_failures: AtomicU64,
    pub(crate) auth_failures: AtomicU64,
    pub(crate) tls_failures: AtomicU64,
    pub(crate) malformed_frames: AtomicU64,
    pub(crate) oversized_frames: AtomicU64,
    pub(crate) refused_in: AtomicU64,
    pub(crate) refused_by_peer: AtomicU64,
    pub(crate) encode_errors: AtomicU64,
    pub(crate) fault_dropped: AtomicU64,
    pub(crate) fault_duplicated: AtomicU64,
    pub(crate) fault_delayed: AtomicU64,
    pub(crate) retransmits: AtomicU64,
    pub(crate) duplicates_dropped: AtomicU64,
    pub(crate) held_for_order: AtomicU64,
    pub(crate) order_gaps_skipped: AtomicU64,
    pub(crate) nodes_down: AtomicU64,
    pub(crate) replies_dropped: AtomicU64,
    pub(crate) refs_refused: AtomicU64,
    pub(crate) peers_refused: AtomicU64,
    pub(crate) peers_reclaimed: AtomicU64,
    pub(crate) held_bytes: AtomicU64,
    pub(crate) held_limit_closes: AtomicU64,
    pub(crate) causal_refused: AtomicU64,
    pub(crate) teardown_pending: AtomicU64,
    pub(crate) limit_closes: AtomicU64,
    pub(crate) connections_refused: AtomicU64,
    pub(crate) reply_bytes: AtomicU64,
    pub(crate) partial_frame_bytes: AtomicU64,
    pub(crate) trace_context_dropped: AtomicU64,
    pub(crate) downs_out: AtomicU64,
    pub(crate) down_frames_out: AtomicU64,
}

/// A snapshot of a node's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[allow(missing_docs)]
pub struct StatsSnapshot {
    pub frames_out: u64,
    pub frames_in: u64,
    pub bytes_out: u64,
    /// Frames (or runs of frames) written by their sender on an idle connection (rule 6 of
    /// the lanes: `write_through`).
    pub writes_through: u64,
    pub bytes_in: u64,
    pub connections_accepted: u64,
    pub connections_closed: u64,
    pub handshake_failures: u64,
    pub auth_failures: u64,
    /// TLS handshakes that failed (no certificate, one from another CA, a plaintext peer).
    pub tls_failures: u64,
    pub malformed_frames: u64,
    pub oversized_frames: u64,
    pub refused_in: u64,
    pub refused_by_peer: u64,
    pub encode_errors: u64,
    pub fault_dropped: u64,
    pub fault_duplicated: u64,
    pub fault_delayed: u64,
    pub retransmits: u64,
    pub duplicates_dropped: u64,
    /// Acknowledged frames that arrived ahead of a missing one and waited for it.
    pub held_for_order: u64,
    /// Gaps given up because too many frames waited behind a lost one (frames lost for good).
    pub order_gaps_skipped: u64,
    pub nodes_down: u64,
    /// Replies to a peer that is down (its ask already failed there): dropped, not buffered.
    pub replies_dropped: u64,
    /// Messages refused because a ref or reply handle in them named an address that is not a
    /// known member (rule 7 of the node).
    pub refs_refused: u64,
    /// New peers refused because the peer table was full of live peers (rule 5).
    pub peers_refused: u64,
    /// Unconnected peers forgotten (rule 5).
    pub peers_reclaimed: u64,
    /// Peers in the table now.
    pub peers_known: u64,
    /// Bytes of out-of-order acknowledged frames held now, over all sessions.
    pub held_bytes: u64,
    /// Sessions closed because they held too many out-of-order bytes.
    pub held_limit_closes: u64,
    /// Causally labelled messages delivered (after their causes).
    pub causal_delivered: u64,
    /// Causally labelled messages that arrived before a cause and waited for it.
    pub causal_waited: u64,
    /// Repeated copies of causally labelled messages, dropped.
    pub causal_duplicates: u64,
    /// Causally labelled messages waiting for a cause now (one whose cause was lost waits
    /// until its sender's session ends: `node/causal_wire.rs`, rules 4-6).
    pub causal_held: u64,
    /// Causally labelled messages dropped because their label's hold (or the node's label
    /// table) was full.
    pub causal_refused: u64,
    /// Bytes of causal frames held for their causes now (`causal_wire.rs` rule 5).
    pub causal_held_bytes: u64,
    /// Held causal frames dropped because their sender's session ended (rule 6 there).
    pub causal_dropped: u64,
    /// Global names known now (this node's and its peers').
    pub globals: u64,
    /// Monitors peers hold on this node's actors now, over all peers.
    pub monitors_in: u64,
    /// Links between this node's actors and peers' actors now, over all peers.
    pub links: u64,
    /// Relations of sessions that ended, still being released (rule 8).
    pub teardown_pending: u64,
    /// Sessions closed because their peer went past a budget (held bytes, held causal bytes,
    /// monitors, links, global names, reply bytes, bytes of large frames being received);
    /// each is also counted by its own counter where one exists (`held_limit_closes`).
    pub limit_closes: u64,
    /// Connections closed because their peer already had `max_connections_per_peer` (rule 9).
    pub connections_refused: u64,
    /// Bytes of replies to remote askers queued for their peers or being written now, over
    /// all peers (rule 10, `max_reply_bytes`).
    pub reply_bytes: u64,
    /// Bytes counted now for large frames being received, over all peers (rule 11,
    /// `max_partial_frame_bytes_per_peer`).
    pub partial_frame_bytes: u64,
    /// W3C trace contexts received in a frame header and ignored because they were malformed
    /// or oversized (feature `otel`, `otel.rs`; the message itself was delivered).
    pub trace_context_dropped: u64,
    /// Times freed memory was handed back to the operating system after a large session
    /// ended (`node/trim.rs`; process-wide).
    pub trims: u64,
    /// Warning lines suppressed by the log rate limit (process-wide).
    pub log_lines_suppressed: u64,
    /// Log lines dropped because stderr did not keep up (process-wide).
    pub log_lines_dropped: u64,
    /// Routed connections this node opened through a neighbour (`relay.rs`).
    pub tunnels_opened: u64,
    /// Chunks of other nodes' routed connections this node passed on.
    pub tunnel_chunks_relayed: u64,
    /// Routed connections refused here (no route, too many legs, next hop unreachable).
    pub tunnels_refused: u64,
    /// Tunnel legs closed because a session they rode ended.
    pub tunnels_broken: u64,
    /// Tunnel legs held here now.
    pub tunnels_live: u64,
    /// `Down`s sent to peers for the monitors they held on this node's actors, one per
    /// monitor (`node/downs.rs` rule 4).
    pub downs_out: u64,
    /// Frames that carried them: a `Downs` frame carries the `Down`s of one death to one peer.
    pub down_frames_out: u64,
}

/// What every peer and lane of a node shares.
pub(crate) struct Shared {
    pub(crate) me: Identity,
    pub(crate) channels: Vec<ChannelConfig>,
    pub(crate) max_buffer: usize,
    pub(crate) max_frame: usize,
    /// `max_reply_bytes` (rule 10).
    pub(crate) max_reply: usize,
    pub(crate) write_through: bool,
    pub(crate) faults: Faults,
    pub(crate) stats: Stats,
    pub(crate) hook: Arc<dyn SerdeHook>,
    /// Buffers for large frames (rule 5 of `lane.rs`).
    pub(crate) large: lane::LargeBufs,
    epoch: Instant,
}

impl Shared {
    pub(crate) fn now_us(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }
}

/// The highest index a peer in the table can get (rule 6); `MAX_PEER_INDEX + 1` is a detached
/// peer's.
pub(crate) const MAX_PEER_INDEX: u16 = u16::MAX - 1;

/// The peer table (rules 5 and 6).
pub(crate) struct Peers {
    by_addr: HashMap<String, Arc<Peer>>,
    by_index: Vec<Arc<Peer>>,
    next_index: u32,
    free: Vec<u16>,
}

impl Default for Peers {
    fn default() -> Self {
        Self { by_addr: HashMap::new(), by_index: Vec::new(), next_index: 1, free: Vec::new() }
    }
}

impl Peers {
    fn alloc_index(&mut self) -> Option<u16> {
        if self.next_index <= u32::from(MAX_PEER_INDEX) {
            let i = self.next_index as u16;
            self.next_index += 1;
            return Some(i);
        }
        self.free.pop()
    }

    /// Whether `p` may be forgotten: only the table refers to it, it is not connected or
    /// connecting, and nobody asked to keep it.
    fn reclaimable(p: &Arc<Peer>) -> bool {
        Arc::strong_count(p) == 2
            && !p.is_up()
            && !p.keep.load(Ordering::Relaxed)
            && matches!(*p.status.borrow(), peer::Status::Down(_))
    }

    fn remove(&mut self, p: &Arc<Peer>) {
        p.clear_dedup();
        self.by_addr.remove(&p.addr);
        self.by_index.retain(|q| !Arc::ptr_eq(q, p));
        self.free.push(p.index);
    }
}

/// Why [`NodeInner::wire_peer`] refused an address.
pub(crate) enum PeerRefused {
    /// Not a known member (rule 7).
    Unknown,
    /// The table is full of live peers (rule 5).
    Full,
}

/// A lookup's answer: (actor number, tag hash, tag).
pub(crate) type Found = (u64, u64, String);

#[allow(clippy::type_complexity)]
pub(crate) struct NodeInner {
    pub(crate) shared: Arc<Shared>,
    pub(crate) cfg: NodeConfig,
    pub(crate) secret: Vec<u8>,
    /// Mutual TLS, when configured (`tls.rs`).
    pub(crate) tls: Option<crate::tls::Tls>,
    pub(crate) peers: RwLock<Peers>,
    pub(crate) exports: RwLock<IdMap<Arc<Export>>>,
    pub(crate) names: RwLock<HashMap<String, u64>>,
    /// Asks waiting for a remote answer: reply number -> (peer index, the waiting handle).
    pub(crate) pending: Mutex<HashMap<u64, (u16, Box<dyn PendingReply>)>>,
    pub(crate) lookups: Mutex<HashMap<u64, oneshot::Sender<Option<Found>>>>,
    pub(crate) globals: RwLock<globals::Globals>,
    pub(crate) events: broadcast::Sender<NodeEvent>,
    /// The accept loop and the maintenance task: aborted by `close`, awaited by
    /// [`Node::shutdown_and_wait`] (`lifecycle.rs`).
    pub(crate) tasks: Mutex<Vec<JoinHandle<()>>>,
    /// Names that follow a supervised child across restarts (`lifecycle.rs`, rule 4).
    pub(crate) followed: RwLock<HashMap<String, Arc<dyn lifecycle::Follow>>>,
    pub(crate) closed: AtomicBool,
    /// Causal delivery's orders, one per label (`causal_wire.rs`).
    pub(crate) causal: causal_wire::CausalState,
    /// The router and the routed connections (`relay.rs`).
    pub(crate) relays: relay::Relays,
    next: AtomicU64,
}

impl NodeInner {
    pub(crate) fn next_id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn channel_index(&self, name: Option<&str>) -> usize {
        match name {
            None => 1,
            Some(n) => self.shared.channels.iter().position(|c| c.name == n).unwrap_or(1),
        }
    }

    /// The peer at `addr`, created (not connected) when new: for addresses this node's own
    /// user or configuration names. Rule 6 when no index is free.
    pub(crate) fn peer_for(self: &Arc<Self>, addr: &str) -> Arc<Peer> {
        match self.make_peer(addr, false) {
            Ok(p) => p,
            Err(_) => {
                let p = Arc::new(Peer::new(MAX_PEER_INDEX + 1, canonical(addr), self.shared.clone()));
                let why = format!("{} (the peer table has no free index)", p.addr);
                p.status.send_replace(peer::Status::Down(Some(ErrorKind::Unreachable(why).into())));
                p
            }
        }
    }

    /// The peer at `addr` for a connection the network opened: bounded by `max_peers`.
    pub(crate) fn accepted_peer(self: &Arc<Self>, addr: &str) -> Result<Arc<Peer>, PeerRefused> {
        self.make_peer(addr, true)
    }

    /// Rule 7: the peer at an address that arrived inside a message from peer index `from`.
    pub(crate) fn wire_peer(self: &Arc<Self>, addr: &str, from: u16) -> Result<Arc<Peer>, PeerRefused> {
        // Every key of `by_addr` is canonical, so an address found as it is needs no parsing
        // and printing (the common case: a node writes its own canonical address into refs;
        // each ref in each message decoded paid for both).
        let is_member =
            |p: &Peer| p.index == from || p.keep.load(Ordering::Relaxed) || p.ever_up.load(Ordering::Relaxed);
        if let Some(p) = self.peers.read().by_addr.get(addr).filter(|p| is_member(p)) {
            return Ok(p.clone());
        }
        let addr = canonical(addr);
        let member = self.peers.read().by_addr.get(&addr).is_some_and(|p| is_member(p));
        if member || self.globals.read().holds_any(&addr) {
            return self.make_peer(&addr, true);
        }
        self.shared.stats.refs_refused.fetch_add(1, Ordering::Relaxed);
        Err(PeerRefused::Unknown)
    }

    fn make_peer(self: &Arc<Self>, addr: &str, capped: bool) -> Result<Arc<Peer>, PeerRefused> {
        let addr = canonical(addr);
        if let Some(p) = self.peers.read().by_addr.get(&addr) {
            return Ok(p.clone());
        }
        let mut g = self.peers.write();
        if let Some(p) = g.by_addr.get(&addr) {
            return Ok(p.clone());
        }
        if g.by_index.len() >= self.cfg.max_peers || g.next_index > u32::from(MAX_PEER_INDEX) && g.free.is_empty() {
            // Rule 5: make room by forgetting the least recently seen reclaimable peer.
            let victim = g
                .by_index
                .iter()
                .filter(|p| Peers::reclaimable(p))
                .min_by_key(|p| p.last_seen_us.load(Ordering::Relaxed));
            if let Some(v) = victim.cloned() {
                g.remove(&v);
                self.shared.stats.peers_reclaimed.fetch_add(1, Ordering::Relaxed);
            } else if capped || g.by_index.len() >= usize::from(MAX_PEER_INDEX) {
                self.shared.stats.peers_refused.fetch_add(1, Ordering::Relaxed);
                return Err(PeerRefused::Full);
            }
        }
        let index = g.alloc_index().ok_or(PeerRefused::Full)?;
        let p = Arc::new(Peer::new(index, addr.clone(), self.shared.clone()));
        p.seen();
        g.by_addr.insert(addr, p.clone());
        g.by_index.push(p.clone());
        Ok(p)
    }

    /// Rule 5: forgets unconnected peers idle for longer than `peer_idle_ms`.
    pub(crate) fn reclaim_idle(&self) {
        let now = self.shared.now_us();
        let idle = self.cfg.peer_idle_ms.saturating_mul(1000);
        let mut g = self.peers.write();
        let gone: Vec<Arc<Peer>> = g
            .by_index
            .iter()
            .filter(|p| Peers::reclaimable(p) && now.saturating_sub(p.last_seen_us.load(Ordering::Relaxed)) >= idle)
            .cloned()
            .collect();
        for p in &gone {
            g.remove(p);
        }
        drop(g);
        if !gone.is_empty() {
            self.shared.stats.peers_reclaimed.fetch_add(gone.len() as u64, Ordering::Relaxed);
            let idx: Vec<u16> = gone.iter().map(|p| p.index).collect();
            self.pending.lock().retain(|_, (i, _)| !idx.contains(i));
        }
    }

    /// Rule 10: a reply of `n` bytes to `peer` would take the node's reply bytes past
    /// `max_reply_bytes`. Closes the session of the peer that holds the most reply bytes
    /// (counting this reply as `peer`'s); true when that is `peer`, whose reply is then
    /// dropped. Runs only near the budget: it visits every peer's lanes.
    pub(crate) fn reply_budget(self: &Arc<Self>, peer: &Arc<Peer>, n: usize) -> bool {
        let held = |p: &Peer| p.channels.iter().flat_map(|c| &c.lanes).map(|l| l.buf.lock().reply_bytes()).sum();
        let mine: usize = held(peer) + n;
        let mut most: Option<(Arc<Peer>, usize)> = None;
        for p in self.all_peers() {
            let h = held(&p);
            if !Arc::ptr_eq(&p, peer) && h > most.as_ref().map_or(mine, |(_, m)| *m) {
                most = Some((p, h));
            }
        }
        let (victim, bytes, itself) = match most {
            Some((p, h)) => (p, h, false),
            None => (peer.clone(), mine, true),
        };
        if matches!(*victim.status.borrow(), peer::Status::Down(_)) {
            // Closed already (by a reply on another thread): its replies are released.
            return itself;
        }
        let total = self.shared.stats.reply_bytes.load(Ordering::Relaxed);
        let why = format!(
            "a reply of {n} bytes would take the {total} bytes of replies this node holds for their askers past \
             max_reply_bytes ({}); this peer's share, {bytes} bytes, is the largest",
            self.cfg.max_reply_bytes
        );
        let _ = inbound::limit_close(self, &victim, why);
        itself
    }

    pub(crate) fn all_peers(&self) -> Vec<Arc<Peer>> {
        self.peers.read().by_index.clone()
    }

    /// Exports an actor reached through a ref sent inside a message; returns its number.
    pub(crate) fn export_anonymous(self: &Arc<Self>, ex: Export) -> u64 {
        let id = if ex.adapter { (1 << 46) | self.next_id() } else { ex.any.id().seq() };
        self.add_export(id, ex);
        id
    }

    fn add_export(self: &Arc<Self>, id: u64, ex: Export) {
        let any = ex.any.clone();
        let fresh = {
            let mut g = self.exports.write();
            let fresh = !g.contains_key(&id);
            g.entry(id).or_insert_with(|| Arc::new(ex));
            fresh
        };
        if fresh {
            // Rule 2 of refs.rs: the export goes with its actor.
            let weak = Arc::downgrade(self);
            tokio::spawn(async move {
                any.terminated().await;
                if let Some(n) = weak.upgrade() {
                    n.exports.write().remove(&id);
                    n.names.write().retain(|_, v| *v != id);
                    let gone: Vec<String> = {
                        let mut g = n.globals.write();
                        let me = &n.shared.me.listen;
                        let names: Vec<String> =
                            g.of_node(me).into_iter().filter(|e| e.id == id).map(|e| e.name).collect();
                        for name in &names {
                            g.remove(name);
                        }
                        names
                    };
                    for name in gone {
                        n.broadcast(&Control::GlobalGone { name });
                    }
                }
            });
        }
    }

    pub(crate) fn resolve_local(self: &Arc<Self>, t: &Target) -> Option<(u64, Arc<Export>)> {
        let id = match t {
            Target::Id(id) => *id,
            Target::Name(n) => {
                let followed = self.followed.read().get(n).cloned();
                if let Some(f) = followed {
                    return self.follow(f.as_ref());
                }
                *self.names.read().get(n)?
            }
        };
        self.exports.read().get(&id).cloned().map(|e| (id, e))
    }

    pub(crate) fn broadcast(&self, msg: &Control) {
        for p in self.all_peers() {
            if p.is_up() {
                p.control(msg);
            }
        }
    }

    pub(crate) fn emit(&self, ev: NodeEvent) {
        let _ = self.events.send(ev);
    }
}

/// A map keyed by this node's own numbers (exported actors): hashed by one mix of the number
/// instead of SipHash. Only for keys this node chooses; a map keyed by numbers a peer chooses
/// (its monitor numbers) keeps the default hasher.
pub(crate) type IdMap<V> = HashMap<u64, V, std::hash::BuildHasherDefault<IdHasher>>;

/// The hasher of [`IdMap`].
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = peer::mix(self.0 ^ u64::from(*b));
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = peer::mix(self.0 ^ x);
    }
}

/// Canonical form of an address: a parsed socket address prints one way.
pub(crate) fn canonical(addr: &str) -> String {
    addr.parse::<std::net::SocketAddr>().map_or_else(|_| addr.to_owned(), |a| a.to_string())
}

/// A running node. Cheap to clone; [`Node::shutdown`] stops it, and so does dropping its last
/// handle (`lifecycle.rs` rule 2). [`Node::start_in`] hands it to a [`troupe::System`], whose
/// shutdown closes it last.
///
/// ```
/// # #[tokio::main] async fn main() {
/// use troupe_remote::{Node, NodeConfig};
/// let a = Node::start(NodeConfig::new("a", "secret")).await.unwrap();
/// let b = Node::start(NodeConfig::new("b", "secret")).await.unwrap();
/// let info = a.connect(&b.addr()).await.unwrap();
/// assert_eq!(info.name, "b");
/// a.shutdown();
/// b.shutdown();
/// # }
/// ```
#[derive(Clone)]
pub struct Node {
    pub(crate) inner: Arc<NodeInner>,
    /// Closes the node when the last handle goes (`lifecycle.rs` rule 2).
    _guard: Arc<lifecycle::Guard>,
}

/// A connected peer as [`Node::connect`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerInfo {
    /// Its name.
    pub name: String,
    /// Its listen address.
    pub addr: String,
    /// The neighbour this node's connections to it are routed through (`None`: direct TCP;
    /// [`Node::set_router`]).
    pub via: Option<String>,
}

impl Node {
    /// Binds the listen address, starts accepting, and connects to the configured peers (in
    /// the background: see [`Node::subscribe`] for when they are up).
    pub async fn start(cfg: NodeConfig) -> Result<Node, Error> {
        cfg.validate()?;
        let tls = cfg.tls.as_ref().map(crate::tls::Tls::load).transpose()?;
        let listener = tokio::net::TcpListener::bind(&cfg.listen).await.map_err(|e| {
            Error::io(format!("cannot listen on {}; free the port or pick another `listen`", cfg.listen), e)
        })?;
        // The identity others know this node by: the advertised address, else the bound one.
        let listen = match &cfg.advertise {
            Some(a) => canonical(a),
            None => {
                listener.local_addr().map_err(|e| Error::io("cannot read the bound listen address", e))?.to_string()
            }
        };
        let causal = causal_wire::CausalState::new(&listen);
        let me = Identity { name: cfg.name.clone(), listen, incarnation: rand::random::<u64>() | 1 };
        let inner = Arc::new_cyclic(|weak| {
            let hook: Arc<dyn SerdeHook> = Arc::new(refs::NodeHook { node: weak.clone() });
            let shared = Arc::new(Shared {
                me,
                channels: cfg.all_channels(),
                max_buffer: cfg.max_buffer_bytes,
                max_frame: cfg.max_frame_bytes,
                max_reply: cfg.max_reply_bytes,
                write_through: cfg.write_through,
                faults: Faults::default(),
                stats: Stats::default(),
                hook,
                large: lane::LargeBufs::default(),
                epoch: Instant::now(),
            });
            NodeInner {
                shared,
                secret: cfg.secret.as_bytes().to_vec(),
                tls,
                cfg: cfg.clone(),
                peers: RwLock::new(Peers::default()),
                exports: RwLock::new(IdMap::default()),
                names: RwLock::new(HashMap::new()),
                pending: Mutex::new(HashMap::new()),
                lookups: Mutex::new(HashMap::new()),
                globals: RwLock::new(globals::Globals::default()),
                events: broadcast::channel(1024).0,
                tasks: Mutex::new(Vec::new()),
                followed: RwLock::new(HashMap::new()),
                closed: AtomicBool::new(false),
                causal,
                relays: relay::Relays::default(),
                next: AtomicU64::new(1),
            }
        });
        conn::start_background(&inner, listener);
        for p in &cfg.peers {
            let peer = inner.peer_for(p);
            peer.keep.store(true, Ordering::Relaxed);
            inner.ensure_connected(&peer);
        }
        let _guard = Arc::new(lifecycle::Guard(Arc::downgrade(&inner)));
        Ok(Node { inner, _guard })
    }

    /// This node's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.inner.shared.me.name
    }

    /// The address this node is known by: [`NodeConfig::advertise`] when set, else the
    /// address it listens on (with the real port when port 0 was asked for).
    #[must_use]
    pub fn addr(&self) -> String {
        self.inner.shared.me.listen.clone()
    }

    /// Connects to the node at `addr` (if not yet connected) and waits until the session is up
    /// or fails. The peer is then kept connected (reconnected with backoff when lost).
    pub async fn connect(&self, addr: &str) -> Result<PeerInfo, Error> {
        let peer = self.inner.peer_for(addr);
        peer.keep.store(true, Ordering::Relaxed);
        self.inner.wait_up(&peer).await?;
        Ok(PeerInfo { name: peer.name(), addr: peer.addr.clone(), via: peer.via() })
    }

    /// The address of the connected or known node named `name`.
    pub fn resolve_node(&self, name: &str) -> Result<String, Error> {
        self.inner
            .all_peers()
            .into_iter()
            .find(|p| p.name() == name)
            .map(|p| p.addr.clone())
            .ok_or_else(|| ErrorKind::UnknownNode(name.to_owned()).into())
    }

    /// The connected peers.
    #[must_use]
    pub fn peers(&self) -> Vec<PeerInfo> {
        self.inner
            .all_peers()
            .into_iter()
            .filter(|p| p.is_up())
            .map(|p| PeerInfo { name: p.name(), addr: p.addr.clone(), via: p.via() })
            .collect()
    }

    /// Makes `actor` reachable from other nodes as `name`.
    pub fn export<M: RemoteMessage>(&self, name: &str, actor: &ActorRef<M>) -> Result<(), Error> {
        types::register::<M>();
        let ex = refs::export_parts(actor);
        let mut names = self.inner.names.write();
        if self.inner.followed.read().contains_key(name) {
            return Err(ErrorKind::NameTaken(name.to_owned()).into());
        }
        if let Some(old) = names.get(name) {
            if self.inner.exports.read().get(old).is_some_and(|e| e.any.is_alive()) {
                return Err(ErrorKind::NameTaken(name.to_owned()).into());
            }
        }
        let id = self.inner.export_anonymous(ex);
        names.insert(name.to_owned(), id);
        Ok(())
    }

    /// Removes a name given with [`Node::export`] or [`Node::export_child`].
    pub fn unexport(&self, name: &str) -> bool {
        let followed = self.inner.followed.write().remove(name).is_some();
        self.inner.names.write().remove(name).is_some() || followed
    }

    /// Forges a ref to the actor named `name` on the node at `addr`, accepting `M`, without
    /// asking that node (seed 003 §2.5). Sends go out when the node is reached; if the actor
    /// does not exist or accepts another type, that node refuses the messages and this node
    /// reports [`NodeEvent::Refused`]. Use [`Node::lookup`] to check first.
    #[must_use]
    pub fn remote_ref<M: RemoteMessage>(&self, addr: &str, name: &str) -> ActorRef<M> {
        self.remote_ref_with(addr, name, SendOptions::default())
    }

    /// [`Node::remote_ref`] whose sends use `opts` (channel, partition key, ack).
    #[must_use]
    pub fn remote_ref_with<M: RemoteMessage>(&self, addr: &str, name: &str, opts: SendOptions) -> ActorRef<M> {
        let tag = types::register::<M>();
        let peer = self.inner.peer_for(addr);
        let actor = RemoteActor::new(&self.inner, peer, Target::Name(name.to_owned()), tag, opts);
        refs::remote_ref::<M>(Arc::new(actor))
    }

    /// Asks the node at `addr` for its actor named `name` and checks it accepts `M`: a typed
    /// error when the node is unreachable, the name unknown, or the type another.
    pub async fn lookup<M: RemoteMessage>(&self, addr: &str, name: &str) -> Result<ActorRef<M>, Error> {
        self.lookup_with(addr, name, SendOptions::default()).await
    }

    /// [`Node::lookup`] whose ref sends with `opts`.
    pub async fn lookup_with<M: RemoteMessage>(
        &self,
        addr: &str,
        name: &str,
        opts: SendOptions,
    ) -> Result<ActorRef<M>, Error> {
        let tag = types::register::<M>();
        let peer = self.inner.peer_for(addr);
        self.inner.wait_up(&peer).await?;
        let req = self.inner.next_id();
        let (tx, rx) = oneshot::channel();
        self.inner.lookups.lock().insert(req, tx);
        peer.control(&Control::Lookup { req, name: name.to_owned() });
        let limit = Duration::from_millis(self.inner.cfg.heartbeat_timeout_ms);
        let found = tokio::time::timeout(limit, rx).await;
        self.inner.lookups.lock().remove(&req);
        let found = match found {
            Ok(Ok(f)) => f,
            Ok(Err(_)) => return Err(ErrorKind::Unreachable(peer.addr.clone()).into()),
            Err(_) => return Err(ErrorKind::Timeout(format!("lookup of {name:?} on {addr}")).into()),
        };
        let (id, found_tag, found_name) = found.ok_or_else(|| Error::new(ErrorKind::NoSuchName(name.to_owned())))?;
        if found_tag != tag {
            return Err(ErrorKind::TypeMismatch { expected: types::tag_of::<M>().to_owned(), found: found_name }.into());
        }
        let actor = RemoteActor::new(&self.inner, peer, Target::Id(id), tag, opts);
        Ok(refs::remote_ref::<M>(Arc::new(actor)))
    }

    /// Registers `actor` under a cluster-wide `name`, announced to every connected node (and to
    /// nodes that connect later). Fails when a known node already holds the name.
    pub fn register_global<M: RemoteMessage>(&self, name: &str, actor: &ActorRef<M>) -> Result<(), Error> {
        let tag = types::register::<M>();
        let entry = {
            let mut g = self.inner.globals.write();
            if let Some(e) = g.get(name) {
                return Err(ErrorKind::NameTaken(format!("{name} (held on {})", e.node)).into());
            }
            let id = self.inner.export_anonymous(refs::export_parts(actor));
            let entry = GlobalEntry {
                name: name.to_owned(),
                node: self.addr(),
                id,
                tag,
                tag_name: types::tag_of::<M>().to_owned(),
            };
            g.insert(entry.clone());
            entry
        };
        self.inner.broadcast(&Control::Globals { entries: vec![entry], full: false });
        Ok(())
    }

    /// Releases a global name held by this node.
    pub fn unregister_global(&self, name: &str) -> bool {
        let me = self.addr();
        let removed = {
            let mut g = self.inner.globals.write();
            match g.get(name) {
                Some(e) if e.node == me => g.remove(name).is_some(),
                _ => false,
            }
        };
        if removed {
            self.inner.broadcast(&Control::GlobalGone { name: name.to_owned() });
        }
        removed
    }

    /// Resolves a global name from any node: `Ok(None)` when nobody holds it, a
    /// `TypeMismatch` error when its actor accepts another type.
    pub fn whereis_global<M: RemoteMessage>(&self, name: &str) -> Result<Option<ActorRef<M>>, Error> {
        let tag = types::register::<M>();
        let Some(e) = self.inner.globals.read().get(name).cloned() else {
            return Ok(None);
        };
        if e.tag != tag {
            return Err(ErrorKind::TypeMismatch { expected: types::tag_of::<M>().to_owned(), found: e.tag_name }.into());
        }
        if e.node == self.addr() {
            let ex = self.inner.exports.read().get(&e.id).cloned();
            return Ok(ex.and_then(|x| x.typed.downcast_ref::<ActorRef<M>>().cloned()));
        }
        let peer = self.inner.peer_for(&e.node);
        let actor = RemoteActor::new(&self.inner, peer, Target::Id(e.id), tag, SendOptions::default());
        Ok(Some(refs::remote_ref::<M>(Arc::new(actor))))
    }

    /// Node-up, node-down and refusal events from now on.
    #[must_use]
    pub fn subscribe(&self) -> broadcast::Receiver<NodeEvent> {
        self.inner.events.subscribe()
    }

    /// The node's counters.
    #[must_use]
    pub fn stats(&self) -> StatsSnapshot {
        let s = &self.inner.shared.stats;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let causal = self.inner.causal.counts();
        let rel = self.inner.all_peers().iter().fold((0, 0), |(m, l), p| {
            let r = p.relations.lock();
            (m + r.monitors_in.len() as u64, l + r.links.len() as u64)
        });
        StatsSnapshot {
            frames_out: l(&s.frames_out),
            frames_in: l(&s.frames_in),
            bytes_out: l(&s.bytes_out),
            writes_through: l(&s.writes_through),
            bytes_in: l(&s.bytes_in),
            connections_accepted: l(&s.connections_accepted),
            connections_closed: l(&s.connections_closed),
            handshake_failures: l(&s.handshake_failures),
            auth_failures: l(&s.auth_failures),
            tls_failures: l(&s.tls_failures),
            malformed_frames: l(&s.malformed_frames),
            oversized_frames: l(&s.oversized_frames),
            refused_in: l(&s.refused_in),
            refused_by_peer: l(&s.refused_by_peer),
            encode_errors: l(&s.encode_errors),
            fault_dropped: l(&s.fault_dropped),
            fault_duplicated: l(&s.fault_duplicated),
            fault_delayed: l(&s.fault_delayed),
            retransmits: l(&s.retransmits),
            duplicates_dropped: l(&s.duplicates_dropped),
            held_for_order: l(&s.held_for_order),
            order_gaps_skipped: l(&s.order_gaps_skipped),
            nodes_down: l(&s.nodes_down),
            replies_dropped: l(&s.replies_dropped),
            refs_refused: l(&s.refs_refused),
            peers_refused: l(&s.peers_refused),
            peers_reclaimed: l(&s.peers_reclaimed),
            peers_known: self.inner.peers.read().by_index.len() as u64,
            held_bytes: l(&s.held_bytes),
            held_limit_closes: l(&s.held_limit_closes),
            causal_delivered: causal.delivered,
            causal_waited: causal.waited,
            causal_duplicates: causal.duplicates,
            causal_held: self.inner.causal.held(),
            causal_refused: l(&s.causal_refused),
            causal_held_bytes: self.inner.causal.held_bytes(),
            causal_dropped: self.inner.causal.dropped(),
            globals: self.inner.globals.read().len() as u64,
            monitors_in: rel.0,
            links: rel.1,
            teardown_pending: l(&s.teardown_pending),
            limit_closes: l(&s.limit_closes),
            connections_refused: l(&s.connections_refused),
            reply_bytes: l(&s.reply_bytes),
            partial_frame_bytes: l(&s.partial_frame_bytes),
            trace_context_dropped: l(&s.trace_context_dropped),
            trims: trim::trims(),
            log_lines_suppressed: crate::logging::lines_suppressed(),
            log_lines_dropped: crate::logging::lines_dropped(),
            tunnels_opened: l(&self.inner.relays.opened),
            tunnel_chunks_relayed: l(&self.inner.relays.relayed),
            tunnels_refused: l(&self.inner.relays.refused),
            tunnels_broken: l(&self.inner.relays.broken),
            tunnels_live: self.inner.relays.live() as u64,
            downs_out: l(&s.downs_out),
            down_frames_out: l(&s.down_frames_out),
        }
    }

    /// Frames sent with `ack` and not yet acknowledged, over all peers.
    #[must_use]
    pub fn unacked(&self) -> usize {
        self.inner.all_peers().iter().map(|p| p.unacked()).sum()
    }

    /// Sets a fault rule for frames this node sends: to `peer` (an address; `None` for every
    /// peer) on `channel` (`None` for every channel but `control`).
    pub fn set_faults(&self, peer: Option<&str>, channel: Option<&str>, cfg: FaultConfig) {
        self.inner.shared.faults.set(peer.map(canonical), channel.map(str::to_owned), cfg);
    }

    /// Removes every fault rule and heals every partition.
    pub fn clear_faults(&self) {
        self.inner.shared.faults.clear();
    }

    /// Cuts this node off from the peer at `addr`: every frame to and from it is dropped.
    pub fn partition(&self, addr: &str) {
        self.inner.shared.faults.partition(&canonical(addr), true);
    }

    /// Heals a partition made with [`Node::partition`].
    pub fn heal(&self, addr: &str) {
        let addr = canonical(addr);
        self.inner.shared.faults.partition(&addr, false);
        let peer = self.inner.peer_for(&addr);
        self.inner.ensure_connected(&peer);
    }

    /// Whether the peer at `addr` is connected.
    #[must_use]
    pub fn is_connected(&self, addr: &str) -> bool {
        self.inner.peers.read().by_addr.get(&canonical(addr)).is_some_and(|p| p.is_up())
    }

    /// Closes the connection to the peer at `addr` (if any) and stops keeping it connected:
    /// it is not redialled until something is sent to it or [`Node::connect`] is called.
    /// Overlays use it to hold connections only to their neighbours. Returns whether a
    /// connection was up.
    ///
    /// ```
    /// # #[tokio::main] async fn main() {
    /// use troupe_remote::{Node, NodeConfig};
    /// let a = Node::start(NodeConfig::new("a", "secret")).await.unwrap();
    /// let b = Node::start(NodeConfig::new("b", "secret")).await.unwrap();
    /// a.connect(&b.addr()).await.unwrap();
    /// assert!(a.disconnect(&b.addr()));
    /// assert!(!a.is_connected(&b.addr()));
    /// assert!(!a.disconnect(&b.addr()), "nothing left to close");
    /// a.shutdown();
    /// b.shutdown();
    /// # }
    /// ```
    pub fn disconnect(&self, addr: &str) -> bool {
        let Some(peer) = self.inner.peers.read().by_addr.get(&canonical(addr)).cloned() else {
            return false;
        };
        peer.keep.store(false, Ordering::Relaxed);
        let was_up = peer.is_up();
        if was_up {
            conn::peer_down(&self.inner, &peer, None, conn::Cause::Local, "disconnected by this node");
        }
        was_up
    }

    /// Installs (or, with `None`, removes) the router that decides how this node reaches
    /// nodes it holds no connection to: directly, through a neighbour, or not at all
    /// (`relay.rs`). Overlays install one; sessions up now keep their route.
    ///
    /// ```
    /// # #[tokio::main] async fn main() {
    /// use std::sync::Arc;
    /// use troupe_remote::{Node, NodeConfig, Route, Router};
    /// struct Through(String);
    /// impl Router for Through {
    ///     fn route(&self, to: &str) -> Route {
    ///         if to == self.0 { Route::Direct } else { Route::Via(self.0.clone()) }
    ///     }
    /// }
    /// let (a, b, c) = (
    ///     Node::start(NodeConfig::new("a", "s")).await.unwrap(),
    ///     Node::start(NodeConfig::new("b", "s")).await.unwrap(),
    ///     Node::start(NodeConfig::new("c", "s")).await.unwrap(),
    /// );
    /// b.connect(&c.addr()).await.unwrap(); // a relay passes tunnels on to nodes it knows
    /// a.set_router(Some(Arc::new(Through(b.addr()))));
    /// let info = a.connect(&c.addr()).await.unwrap();
    /// assert_eq!(info.via, Some(b.addr()), "a reaches c through b");
    /// # }
    /// ```
    pub fn set_router(&self, router: Option<Arc<dyn relay::Router>>) {
        self.inner.relays.set_router(router);
    }

    /// Whether the session with the peer at `addr` carried a data, reply or causal frame
    /// (either way) since the last call, and how many monitors and links cross it now; `None`
    /// when no such peer is known. An overlay closes routed sessions that stay unused.
    ///
    /// ```
    /// # #[tokio::main] async fn main() {
    /// use troupe_remote::{Node, NodeConfig};
    /// let a = Node::start(NodeConfig::new("a", "s")).await.unwrap();
    /// let b = Node::start(NodeConfig::new("b", "s")).await.unwrap();
    /// a.connect(&b.addr()).await.unwrap();
    /// assert_eq!(a.session_use(&b.addr()), Some((false, 0)), "only the runtime's own frames so far");
    /// # }
    /// ```
    #[must_use]
    pub fn session_use(&self, addr: &str) -> Option<(bool, usize)> {
        let p = self.inner.peers.read().by_addr.get(&canonical(addr)).cloned()?;
        let used = p.used.swap(false, Ordering::Relaxed);
        let r = p.relations.lock();
        Some((used, r.monitors_out.len() + r.monitors_in.len() + r.links.len()))
    }

    /// Makes the next session with the node at `addr` go over TCP whatever the router says
    /// (`relay.rs` rule 6): an overlay's own protocol needs its connection to the node it talks
    /// to. A session up now keeps its path; the hint ends with the next session.
    pub fn dial_directly(&self, addr: &str) {
        let p = self.inner.peer_for(addr);
        if !p.is_up() {
            p.direct_hint.store(true, Ordering::Relaxed);
        }
    }

    /// How many routed connections (tunnels, this node's own and those it passes on) ride
    /// this node's session with the peer at `addr` now: an overlay keeps such a session up.
    #[must_use]
    pub fn tunnels_through(&self, addr: &str) -> usize {
        let Some(p) = self.inner.peers.read().by_addr.get(&canonical(addr)).cloned() else { return 0 };
        self.inner.relays.through(p.index)
    }

    /// Stops listening, closes every connection (peers see this node go down) and fails what
    /// waits on them. Returns at once; the listener and tasks end as soon as the runtime next
    /// runs them: [`Node::shutdown_and_wait`] waits for that.
    pub fn shutdown(&self) {
        self.inner.close();
    }
}

#[cfg(test)]
mod tests {
    use super::{Peers, MAX_PEER_INDEX};

    /// Regression (issue 18): the index was `u16::try_from(len + 1).unwrap_or(u16::MAX)`, so
    /// every peer past 65,534 shared index 65,535.
    #[test]
    fn peer_indices_never_saturate_into_one_shared_index() {
        let mut p = Peers::default();
        assert_eq!(p.alloc_index(), Some(1));
        p.next_index = u32::from(MAX_PEER_INDEX);
        assert_eq!(p.alloc_index(), Some(MAX_PEER_INDEX));
        assert_eq!(p.alloc_index(), None, "no index is handed out twice");
        p.free.push(7);
        assert_eq!(p.alloc_index(), Some(7), "a reclaimed peer's index is reused");
        assert_eq!(p.alloc_index(), None);
    }
}
