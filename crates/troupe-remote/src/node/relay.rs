//! Routed connections: how a node reaches a node it holds no connection to, through its
//! neighbours, when a [`Router`] (an overlay: `troupe_cluster::overlay::live`) is installed
//! with [`crate::Node::set_router`].
//!
//! A routed connection is a pipe. The dialling node asks its router for the next hop, opens a
//! tunnel on its session with that hop (`Control::TunnelOpen`), and runs its usual handshake,
//! TLS included when the node uses TLS, through the tunnel; each node on the way either ends
//! the tunnel (it is the destination: the pipe becomes an accepted connection, exactly as if
//! it came over TCP) or splices it to a tunnel of its own toward the next hop its router
//! names. The session on top is the ordinary one: typed sends, asks, monitors, links,
//! heartbeats, causal delivery and the handshake's authentication all run end to end.
//!
//! Rules:
//! 1. The router decides at dial time, per connection: [`Route::Direct`] dials TCP as without
//!    a router; [`Route::Via`] routes through that node, which must be reachable directly
//!    (a router that names a hop it would itself route is refused: no route); [`Route::None`]
//!    fails the dial with [`ErrorKind::NoRoute`], so sends and asks to that node fail with a
//!    typed error, never a silent drop. A session keeps its route until it ends.
//! 2. Each leg of a tunnel rides its node's session with the next hop, on the lane of the
//!    routed connection's channel and lane when that session has one (else on its control
//!    lane): channels and parallelism apply per hop, and a tunnel's bytes keep their order.
//! 3. A tunnel ends when either end closes it, when any session it rides ends (the next hop
//!    was lost, or disconnected), or when a leg's lane is over `max_buffer_bytes` (the bytes
//!    are never dropped from the middle of a stream); the close travels to both ends, and the
//!    routed session on top goes down like a broken TCP connection: its peer's monitors and
//!    links get `NoConnection`, its asks fail (at-most-once, as any lost connection). The
//!    next send dials again, on the route the router gives then.
//! 4. A tunnel travels at most [`MAX_HOPS`] legs; a node with no next hop, or past the bound,
//!    closes it back with the reason (`tunnels_refused`, and [`NodeEvent::TunnelRefused`] to
//!    the node's subscribers).
//! 5. A node's fault rules apply to the legs it sends: a dropped or duplicated chunk breaks the
//!    routed connection (rule 3) rather than dropping one message.
//! 6. The session back takes the path the peer took: a node whose peer's control connection
//!    came over TCP dials it back over TCP, whatever its router says (the peer chose a direct
//!    link, an overlay's neighbour request say); one that came through a tunnel dials back
//!    through the neighbour that tunnel came from, whatever its router says (its router may
//!    not know the peer yet: an overlay's link states travel behind the first dial). The other
//!    lanes of a session follow its control lane. A node asked to
//!    dial a peer directly ([`crate::Node::dial_directly`], what an overlay's own protocol
//!    does) does so for its next session with it, whatever its router says.
//! 7. A relay passes a tunnel on only toward a node it knows (rule 7 of `node/mod.rs`: a
//!    configured or connected member, or the peer it came from), never to an address that
//!    merely arrived in the `TunnelOpen`; and one peer's session carries at most
//!    [`MAX_TUNNELS_PER_PEER`] tunnel legs here. Past either the tunnel is refused
//!    (`tunnels_refused`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;

use crate::error::{Error, ErrorKind};
use crate::frame::kind;
use crate::logging::Esc;
use crate::node::lane::Lane;
use crate::node::peer::Peer;
use crate::node::stream::Stream;
use crate::node::{NodeEvent, NodeInner};
use crate::proto::Control;

/// The most legs a routed connection travels (rule 4).
pub const MAX_HOPS: u8 = 16;

/// The most tunnel legs one peer's session carries on this node (rule 7).
pub const MAX_TUNNELS_PER_PEER: usize = 4096;

/// Bytes read from a pipe per `TunnelData` frame, and the pipe's buffer.
const CHUNK: usize = 64 * 1024;

/// Where a node's connections to another node go: the answer of an overlay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// Dial it over TCP.
    Direct,
    /// Route through this node (a neighbour reachable directly).
    Via(String),
    /// No path is known: sends and asks to it fail with [`ErrorKind::NoRoute`].
    None,
}

/// Decides, per destination, how a node reaches another node (rule 1). An overlay installs
/// one with [`crate::Node::set_router`]; without one every node is dialled directly.
///
/// ```
/// use troupe_remote::{Route, Router};
/// /// Everything through one gateway, except the gateway itself.
/// struct Gateway(String);
/// impl Router for Gateway {
///     fn route(&self, to: &str) -> Route {
///         if to == self.0 { Route::Direct } else { Route::Via(self.0.clone()) }
///     }
/// }
/// assert_eq!(Gateway("g:1".into()).route("x:2"), Route::Via("g:1".into()));
/// ```
pub trait Router: Send + Sync + 'static {
    /// How to reach the node at `to` (a canonical `host:port`).
    fn route(&self, to: &str) -> Route;
}

/// One leg of a tunnel as this node keys it: (the session's peer index, the tunnel's number
/// on that leg, whether this node opened it on that leg).
type Key = (u16, u64, bool);

enum End {
    /// This node is an end: bytes go into the pipe.
    Local(mpsc::UnboundedSender<Vec<u8>>),
    /// Passed on to another leg.
    Splice(Leg),
    /// Waiting for the next hop's session; what arrived meanwhile.
    Pending(Vec<Vec<u8>>),
}

/// A leg to send on: its peer, number, lane and whether this node opened it.
#[derive(Clone)]
struct Leg {
    peer: Arc<Peer>,
    id: u64,
    opener: bool,
    lane: Arc<Lane>,
}

impl Leg {
    fn key(&self) -> Key {
        (self.peer.index, self.id, self.opener)
    }

    fn send(&self, msg: &Control) -> bool {
        let r = self.peer.send_frame(&self.lane, kind::CONTROL, false, None, |b, _| crate::codec::encode_into(msg, b));
        r.is_ok()
    }

    fn data(&self, bytes: Vec<u8>) -> bool {
        self.send(&Control::TunnelData { id: self.id, from_opener: self.opener, bytes: crate::Blob(bytes) })
    }

    fn close(&self, reason: &str) {
        let _ = self.send(&Control::TunnelClose { id: self.id, from_opener: self.opener, reason: reason.to_owned() });
    }
}

/// A node's router and tunnels.
#[derive(Default)]
pub(crate) struct Relays {
    router: RwLock<Option<Arc<dyn Router>>>,
    ends: Mutex<HashMap<Key, End>>,
    pub(crate) opened: AtomicU64,
    pub(crate) relayed: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) broken: AtomicU64,
}

impl Relays {
    pub(crate) fn set_router(&self, r: Option<Arc<dyn Router>>) {
        *self.router.write() = r;
    }

    /// Rule 1: the route to `to`.
    pub(crate) fn route(&self, to: &str) -> Route {
        let Some(r) = self.router.read().clone() else { return Route::Direct };
        match r.route(to) {
            Route::Via(h) if h == to => Route::Direct,
            Route::Via(h) if r.route(&h) != Route::Direct => Route::None,
            other => other,
        }
    }

    /// Tunnels riding sessions with the peer at `index` now.
    pub(crate) fn through(&self, index: u16) -> usize {
        self.ends.lock().keys().filter(|k| k.0 == index).count()
    }

    /// Tunnel ends this node holds now (its own routed connections' and those it passes on).
    pub(crate) fn live(&self) -> usize {
        self.ends.lock().len()
    }
}

/// The lane of `peer` for a routed connection of `channel`, `lane` (rule 2).
fn lane_for(peer: &Peer, channel: &str, lane: u16) -> Arc<Lane> {
    peer.channels
        .iter()
        .find(|c| &*c.name == channel)
        .and_then(|c| c.lanes.get(usize::from(lane)))
        .unwrap_or_else(|| peer.control_lane())
        .clone()
}

/// Rule 1: opens a routed connection of `channel`, `lane` to `to` through the neighbour `hop`.
pub(crate) async fn dial_via(
    node: &Arc<NodeInner>,
    hop: &str,
    to: &str,
    channel: &str,
    lane: u16,
) -> Result<Stream, Error> {
    let q = node.peer_for(hop);
    node.wait_up(&q).await.map_err(|e| {
        Error::with_source(ErrorKind::Unreachable(format!("{to} (through {hop}, which is not reachable)")), e)
    })?;
    let id = node.next_id();
    let leg = Leg { lane: lane_for(&q, channel, lane), peer: q, id, opener: true };
    let (mine, pipe) = tokio::io::duplex(CHUNK);
    node.relays.opened.fetch_add(1, Ordering::Relaxed);
    let open = Control::TunnelOpen {
        id,
        to: to.to_owned(),
        origin: node.shared.me.listen.clone(),
        hops: 1,
        channel: channel.to_owned(),
        lane,
    };
    if !leg.send(&open) {
        return Err(ErrorKind::Unreachable(format!("{to} (the session with {hop} is full)")).into());
    }
    end_here(node, leg, pipe);
    Ok(Stream::Tunnel(mine))
}

/// Makes this node an end of `leg`: the pipe's bytes go out on it, its bytes into the pipe.
fn end_here(node: &Arc<NodeInner>, leg: Leg, pipe: DuplexStream) {
    let (mut rd, mut wr) = tokio::io::split(pipe);
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
    node.relays.ends.lock().insert(leg.key(), End::Local(tx));
    tokio::spawn(async move {
        while let Some(b) = rx.recv().await {
            if wr.write_all(&b).await.is_err() {
                break;
            }
        }
        let _ = wr.shutdown().await;
    });
    let weak = Arc::downgrade(node);
    tokio::spawn(async move {
        let mut buf = vec![0u8; CHUNK];
        let why = loop {
            match rd.read(&mut buf).await {
                Ok(0) | Err(_) => break "closed by its end",
                Ok(n) => {
                    if !leg.data(buf[..n].to_vec()) {
                        break "the next hop's lane is full (max_buffer_bytes)";
                    }
                }
            }
        };
        if let Some(node) = weak.upgrade() {
            if node.relays.ends.lock().remove(&leg.key()).is_some() {
                leg.close(why);
            }
        }
    });
}

/// A tunnel control frame from `peer`.
pub(crate) fn control(node: &Arc<NodeInner>, peer: &Arc<Peer>, c: Control) {
    match c {
        Control::TunnelOpen { id, to, origin, hops, channel, lane } => {
            let back = Leg { lane: lane_for(peer, &channel, lane), peer: peer.clone(), id, opener: false };
            open(node, back, to, origin, hops, channel, lane);
        }
        Control::TunnelData { id, from_opener, bytes: crate::Blob(bytes) } => {
            let key = (peer.index, id, !from_opener);
            let mut ends = node.relays.ends.lock();
            match ends.get_mut(&key) {
                Some(End::Local(tx)) => {
                    let _ = tx.send(bytes);
                }
                Some(End::Pending(held)) => held.push(bytes),
                Some(End::Splice(next)) => {
                    let next = next.clone();
                    drop(ends);
                    node.relays.relayed.fetch_add(1, Ordering::Relaxed);
                    if !next.data(bytes) {
                        close_pair(node, key, "a relay's lane is full (max_buffer_bytes)");
                    }
                }
                None => {}
            }
        }
        Control::TunnelClose { id, from_opener, reason } => {
            tracing::debug!(peer = %Esc(&peer.addr), id, reason = %Esc(&reason), "routed connection closed");
            close_pair(node, (peer.index, id, !from_opener), &reason);
        }
        _ => {}
    }
}

/// Removes the leg `key`, and what it was spliced to, closing the other side with `why`.
fn close_pair(node: &NodeInner, key: Key, why: &str) {
    let end = node.relays.ends.lock().remove(&key);
    if let Some(End::Splice(next)) = end {
        node.relays.ends.lock().remove(&next.key());
        next.close(why);
    }
}

/// An open from `back`'s peer: end it here, or pass it on (rules 1 and 4).
fn open(node: &Arc<NodeInner>, back: Leg, to: String, origin: String, hops: u8, channel: String, lane: u16) {
    let refuse = |why: String| refused(node, &back, to.clone(), origin.clone(), why);
    if to == node.shared.me.listen {
        let (mine, pipe) = tokio::io::duplex(CHUNK);
        let hop = back.peer.addr.clone();
        end_here(node, back, pipe);
        tokio::spawn(super::conn::inbound_tunnel(node.clone(), mine, origin, hop));
        return;
    }
    if hops >= MAX_HOPS {
        return refuse(format!("it travelled {hops} legs, the most a routed connection may (a routing loop?)"));
    }
    if node.relays.through(back.peer.index) >= MAX_TUNNELS_PER_PEER {
        return refuse(format!("{} already has {MAX_TUNNELS_PER_PEER} tunnels through this node", back.peer.addr));
    }
    let next = match node.relays.route(&to) {
        Route::Direct => to.clone(),
        Route::Via(h) => h,
        Route::None => return refuse(format!("this node ({}) knows no route to {to}", node.shared.me.listen)),
    };
    if next == back.peer.addr {
        return refuse(format!("the route to {to} leads back to {next}"));
    }
    // Rule 7: only toward a node this one knows.
    let Ok(q) = node.wire_peer(&next, back.peer.index) else {
        return refuse(format!("{next} is not a node this one knows (a forged destination?)"));
    };
    let back_key = back.key();
    node.relays.ends.lock().insert(back_key, End::Pending(Vec::new()));
    let node = node.clone();
    tokio::spawn(async move {
        if let Err(e) = node.wait_up(&q).await {
            node.relays.ends.lock().remove(&back_key);
            return refused(&node, &back, to, origin, format!("the next hop {next} is unreachable: {e}"));
        }
        let id = node.next_id();
        let fwd = Leg { lane: lane_for(&q, &channel, lane), peer: q, id, opener: true };
        let open = Control::TunnelOpen { id, to, origin, hops: hops + 1, channel, lane };
        let held = {
            let mut ends = node.relays.ends.lock();
            match ends.get_mut(&back_key) {
                Some(e @ End::Pending(_)) => {
                    let End::Pending(held) = std::mem::replace(e, End::Splice(fwd.clone())) else { unreachable!() };
                    ends.insert(fwd.key(), End::Splice(back.clone()));
                    held
                }
                // Closed meanwhile.
                _ => return,
            }
        };
        let ok = fwd.send(&open) && held.into_iter().all(|b| fwd.data(b));
        if !ok {
            close_pair(&node, back_key, "the next hop's lane is full (max_buffer_bytes)");
            back.close("the next hop's lane is full (max_buffer_bytes)");
        }
    });
}

/// Rules 4 and 7: this relay refuses the tunnel toward `to` that `back` carries: counted,
/// logged, closed back with `why`, and told to the node's subscribers.
fn refused(node: &NodeInner, back: &Leg, to: String, origin: String, why: String) {
    node.relays.refused.fetch_add(1, Ordering::Relaxed);
    crate::warn_limited!(to = %Esc(&to), origin = %Esc(&origin), "routed connection refused: {why}");
    back.close(&why);
    node.emit(NodeEvent::TunnelRefused { to, origin, reason: why });
}

/// Rule 3: the session with `peer` ended; every tunnel leg on it closes, and what it was
/// spliced to.
pub(crate) fn peer_gone(node: &NodeInner, peer: &Peer) {
    let gone: Vec<(Key, End)> = {
        let mut ends = node.relays.ends.lock();
        let keys: Vec<Key> = ends.keys().filter(|k| k.0 == peer.index).copied().collect();
        keys.into_iter().filter_map(|k| ends.remove(&k).map(|e| (k, e))).collect()
    };
    if gone.is_empty() {
        return;
    }
    node.relays.broken.fetch_add(gone.len() as u64, Ordering::Relaxed);
    let why = format!("the session with {} ended", peer.addr);
    for (_, end) in gone {
        if let End::Splice(next) = end {
            node.relays.ends.lock().remove(&next.key());
            next.close(&why);
        }
    }
}
