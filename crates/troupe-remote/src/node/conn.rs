//! Connections: the accept loop, dialling a peer's lanes (with reconnect backoff), the writer
//! and reader task of every connection, the maintenance tick (heartbeats, the heartbeat
//! timeout, retransmission, sweeping abandoned asks), and what happens when a peer is lost.
//! The rules are those of `node/mod.rs` (connection model, up/down), `peer.rs` (peers) and
//! `lane.rs` (a lane's queue and writer).

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use troupe::remote_api;
use troupe::{ActorId, Down, ExitReason};

use crate::error::{Error, ErrorKind};
use crate::frame::{FrameBuf, LARGE_AT_FRONT};
use crate::handshake::{self, Identity};
use crate::logging::Esc;
use crate::node::inbound::{self, InCtx};
use crate::node::lane::{Lane, Owner, Seg};
use crate::node::peer::{Came, Peer, Status, Watcher};
use crate::node::relay::{self, Route};
use crate::node::stream::{ReadHalf, Stream, WriteHalf};
use crate::node::{NodeEvent, NodeInner};
use crate::proto::Control;

const READ_CHUNK: usize = 64 * 1024;

pub(crate) fn start_background(inner: &Arc<NodeInner>, listener: TcpListener) {
    let weak = Arc::downgrade(inner);
    let a = tokio::spawn(accept_loop(weak.clone(), listener));
    let m = tokio::spawn(maintenance(weak));
    inner.tasks.lock().extend([a, m]);
}

/// Rule 12 of `node/mod.rs`: how long a data connection waits, before it is read, for the
/// peer's control connection to start this node's session back.
const SESSION_BACK_WAIT: Duration = Duration::from_secs(1);

async fn accept_loop(weak: Weak<NodeInner>, listener: TcpListener) {
    loop {
        let accepted = listener.accept().await;
        let Some(node) = weak.upgrade() else { return };
        match accepted {
            Ok((sock, from)) => {
                node.shared.stats.connections_accepted.fetch_add(1, Ordering::Relaxed);
                let _ = sock.set_nodelay(true);
                tokio::spawn(inbound_conn(node, sock, from));
            }
            Err(e) => {
                crate::warn_limited!("accept failed: {e}");
                drop(node);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

impl NodeInner {
    /// Starts connecting to `peer` unless it is up or already connecting.
    pub(crate) fn ensure_connected(self: &Arc<Self>, peer: &Arc<Peer>) {
        if self.closed.load(Ordering::Acquire) || peer.index > crate::node::MAX_PEER_INDEX {
            return;
        }
        let start = peer.status.send_if_modified(|s| {
            if matches!(s, Status::Down(_)) {
                *s = Status::Connecting;
                true
            } else {
                false
            }
        });
        if start {
            tokio::spawn(connect_task(self.clone(), peer.clone()));
        }
    }

    /// Connects if needed and waits for the outcome (rule 4 of `node/mod.rs`).
    pub(crate) async fn wait_up(self: &Arc<Self>, peer: &Arc<Peer>) -> Result<(), Error> {
        if self.closed.load(Ordering::Acquire) {
            return Err(ErrorKind::Closed.into());
        }
        let mut rx = peer.status.subscribe();
        self.ensure_connected(peer);
        let limit = Duration::from_millis(self.cfg.connect_timeout_ms + self.cfg.handshake_timeout_ms + 1000);
        let wait = async {
            loop {
                let st = rx.borrow_and_update().clone();
                match st {
                    Status::Up => return Ok(()),
                    Status::Down(Some(e)) => return Err(e),
                    Status::Down(None) => self.ensure_connected(peer),
                    Status::Connecting => {}
                }
                if rx.changed().await.is_err() {
                    return Err(ErrorKind::Closed.into());
                }
            }
        };
        tokio::time::timeout(limit, wait)
            .await
            .map_err(|_| Error::new(ErrorKind::Timeout(format!("connecting to {}", peer.addr))))?
    }
}

async fn connect_task(node: Arc<NodeInner>, peer: Arc<Peer>) {
    let mut backoff = Duration::from_millis(node.cfg.reconnect_min_ms);
    let max = Duration::from_millis(node.cfg.reconnect_max_ms);
    loop {
        let e = match connect_once(&node, &peer).await {
            Ok(()) => return,
            Err(e) => e,
        };
        tracing::info!(peer_addr = %Esc(&peer.addr), error = %Esc(&troupe::error_chain(&e)), "connect failed");
        let self_dial = matches!(&e.kind, ErrorKind::Unreachable(m) if m.ends_with(SELF_DIAL));
        {
            let mut s = peer.session.lock();
            s.generation += 1;
            for t in s.tasks.drain(..) {
                t.abort();
            }
        }
        peer.up.store(false, Ordering::Release);
        peer.status.send_replace(Status::Down(Some(e)));
        fail_relations(&node, &peer);
        for l in peer.channels.iter().flat_map(|c| &c.lanes) {
            let _ = l.reset(&node.shared);
        }
        if self_dial {
            // Not reconnected on its own: the address is ours now. A later send or connect
            // dials it again (an address, a pod IP say, may belong to another node later).
            peer.keep.store(false, Ordering::Relaxed);
        }
        if !peer.keep.load(Ordering::Relaxed) || node.closed.load(Ordering::Acquire) {
            return;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(max);
        let again = peer.status.send_if_modified(|s| {
            if matches!(s, Status::Down(_)) {
                *s = Status::Connecting;
                true
            } else {
                false
            }
        });
        if !again || node.closed.load(Ordering::Acquire) {
            return;
        }
    }
}

/// The identity a handshake stated is this very node (same address and incarnation): it was
/// reached through another address of its own (its IP where it advertises a name, or one of
/// the addresses a seed DNS name resolves to), and must not become a peer of itself.
const SELF_DIAL: &str = " is this node itself";

fn is_me(node: &NodeInner, id: &Identity) -> bool {
    id.incarnation == node.shared.me.incarnation && id.listen == node.shared.me.listen
}

/// A dialled connection: who answered, the stream, what it advertised, and the neighbour it
/// is routed through (`relay.rs`; `None` for TCP).
type Dialled = (Identity, Stream, handshake::Features, Option<String>);

/// Dials `addr` for one lane: over TCP when `direct`, else through `through` when given (the
/// path the peer took, `relay.rs` rule 6), else as the router says.
async fn dial(
    node: &Arc<NodeInner>,
    addr: &str,
    channel: &str,
    lane: u16,
    direct: bool,
    through: Option<&str>,
) -> Result<Dialled, Error> {
    let hs = Duration::from_millis(node.cfg.handshake_timeout_ms);
    let route = match (direct, through) {
        (true, _) => Route::Direct,
        (false, Some(hop)) => Route::Via(hop.to_owned()),
        (false, None) => node.relays.route(addr),
    };
    let via = match route {
        Route::Direct => None,
        Route::Via(hop) => Some(hop),
        Route::None => return Err(ErrorKind::NoRoute(addr.to_owned()).into()),
    };
    let mut stream = match &via {
        None => dial_tcp(node, addr, hs).await?,
        Some(hop) => {
            let Stream::Tunnel(pipe) = relay::dial_via(node, hop, addr, channel, lane).await? else {
                unreachable!("dial_via gives a tunnel")
            };
            match &node.tls {
                None => Stream::Tunnel(pipe),
                Some(tls) => {
                    let name = tls.name_for(addr)?;
                    match tokio::time::timeout(hs, tls.connector.connect(name, pipe)).await {
                        Ok(Ok(s)) => Stream::TunnelTls(Box::new(s.into())),
                        Ok(Err(e)) => return Err(tls_failed(node, addr, String::new(), Some(e))),
                        Err(_) => return Err(tls_failed(node, addr, format!(": no TLS answer within {hs:?}"), None)),
                    }
                }
            }
        }
    };
    let cert = stream.peer_cert_name();
    let (id, _, features) =
        handshake::dial_features(&mut stream, &node.shared.me, channel, lane, &node.secret, hs, cert.as_deref())
            .await?;
    if is_me(node, &id) {
        return Err(ErrorKind::Unreachable(format!("{addr}{SELF_DIAL}")).into());
    }
    Ok((id, stream, features, via))
}

fn tls_failed(node: &NodeInner, addr: &str, why: String, e: Option<std::io::Error>) -> Error {
    node.shared.stats.tls_failures.fetch_add(1, Ordering::Relaxed);
    let kind = ErrorKind::Handshake(format!(
        "TLS with {addr} failed{why} (do both nodes use TLS, with certificates from the same CA?)"
    ));
    match e {
        Some(e) => Error::with_source(kind, e),
        None => Error::new(kind),
    }
}

async fn dial_tcp(node: &NodeInner, addr: &str, hs: Duration) -> Result<Stream, Error> {
    let limit = Duration::from_millis(node.cfg.connect_timeout_ms);
    let sock = match tokio::time::timeout(limit, TcpStream::connect(addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(Error::with_source(ErrorKind::Unreachable(addr.to_owned()), e)),
        Err(_) => return Err(ErrorKind::Unreachable(format!("{addr} (no answer within {limit:?})")).into()),
    };
    let _ = sock.set_nodelay(true);
    Ok(match &node.tls {
        None => Stream::Plain(sock),
        Some(tls) => {
            let name = tls.name_for(addr)?;
            match tokio::time::timeout(hs, tls.connector.connect(name, sock)).await {
                Ok(Ok(s)) => Stream::Tls(Box::new(s.into())),
                Ok(Err(e)) => return Err(tls_failed(node, addr, String::new(), Some(e))),
                Err(_) => return Err(tls_failed(node, addr, format!(": no TLS answer within {hs:?}"), None)),
            }
        }
    })
}

async fn connect_once(node: &Arc<NodeInner>, peer: &Arc<Peer>) -> Result<(), Error> {
    if node.shared.faults.is_partitioned(&peer.addr) {
        return Err(ErrorKind::Unreachable(format!("{} (partitioned by fault injection)", peer.addr)).into());
    }
    let came = peer.came.lock().clone();
    let direct = came == Some(Came::Tcp) || peer.direct_hint.load(Ordering::Relaxed);
    let back = match came {
        Some(Came::Through(hop)) if !direct => Some(hop),
        _ => None,
    };
    let (ident, control, features, via) = dial(node, &peer.addr, "control", 0, direct, back.as_deref()).await?;
    // `otel.rs`: trace context goes to this session only if its Welcome advertised it.
    #[cfg(feature = "otel")]
    peer.trace_context.store(features.trace_context, Ordering::Relaxed);
    let mut streams = vec![(peer.control_lane().clone(), control)];
    for ch in peer.channels.iter().skip(1) {
        for lane in &ch.lanes {
            // The other lanes follow the control lane's path (`relay.rs` rule 6).
            let (id2, s, _, _) = dial(node, &peer.addr, &ch.name, lane.index, via.is_none(), via.as_deref()).await?;
            if id2.incarnation != ident.incarnation {
                return Err(ErrorKind::Handshake("the peer restarted while we connected".into()).into());
            }
            streams.push((lane.clone(), s));
        }
    }
    let gen = {
        let mut s = peer.session.lock();
        s.name = ident.name.clone();
        s.incarnation = ident.incarnation;
        s.generation += 1;
        s.generation
    };
    peer.seen();
    *peer.via.lock() = via.clone();
    let mut handles = Vec::new();
    for (lane, sock) in streams {
        let (r, w) = sock.into_split();
        lane.buf.lock().sink = w.shared();
        handles.push(tokio::spawn(writer(Arc::downgrade(node), peer.clone(), lane, w, gen)).abort_handle());
        handles.push(tokio::spawn(outbound_reader(Arc::downgrade(node), peer.clone(), r, gen)).abort_handle());
    }
    {
        let mut s = peer.session.lock();
        if s.generation != gen {
            for h in handles {
                h.abort();
            }
            return Err(ErrorKind::Closed.into());
        }
        s.tasks.extend(handles);
    }
    peer.up.store(true, Ordering::Release);
    peer.ever_up.store(true, Ordering::Relaxed);
    peer.status.send_replace(Status::Up);
    let channels: Vec<&str> = peer.channels.iter().map(|c| &*c.name).collect();
    tracing::info!(
        peer_name = %Esc(&ident.name),
        peer_addr = %Esc(&peer.addr),
        incarnation = ident.incarnation,
        channels = %channels.join(","),
        connections = peer.channels.iter().map(|c| c.lanes.len()).sum::<usize>(),
        via = %Esc(via.as_deref().unwrap_or("")),
        "node up"
    );
    node.emit(NodeEvent::NodeUp { name: ident.name, addr: peer.addr.clone() });
    let me = &node.shared.me.listen;
    let mine = node.globals.read().of_node(me);
    peer.control(&Control::Globals { entries: mine, full: true });
    peer.set_typed_refusals(features.typed_refusals);
    peer.batched_downs.store(features.batched_downs, Ordering::Relaxed);
    Ok(())
}

/// A lane's writer task (rules 1 and 2 of `lane.rs`): owns the socket while the queue has
/// bytes, gives it up when the queue is empty.
async fn writer(node: Weak<NodeInner>, peer: Arc<Peer>, lane: Arc<Lane>, mut w: WriteHalf, gen: u64) {
    let mut spare = Vec::new();
    let mut wrote = false;
    loop {
        let turn = {
            let mut g = lane.buf.lock();
            if std::mem::take(&mut wrote) {
                g.written(&peer.shared, 0); // rule 6 of `lane.rs`: the last turn is out
            }
            if g.owner == Owner::Sender {
                None // a sender is writing through; it hands over when it is done
            } else if g.is_empty() {
                g.owner = Owner::Nobody;
                None
            } else {
                g.owner = Owner::Task;
                Some(g.take_turn(std::mem::take(&mut spare)))
            }
        };
        let Some(mut turn) = turn else {
            lane.notify.notified().await;
            continue;
        };
        let segs = turn.segs.iter().map(|s| s.bytes());
        for bytes in segs.chain(std::iter::once(&turn.out[..])).filter(|b| !b.is_empty()) {
            if let Err(e) = w.write_all(bytes).await {
                if let Some(n) = node.upgrade() {
                    peer_down(&n, &peer, Some(gen), Cause::Io, &format!("write failed: {e}"));
                }
                return;
            }
            peer.shared.stats.bytes_out.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        }
        for seg in turn.segs {
            if let Seg::Own(v) = seg {
                peer.shared.large.put(v); // rule 5 of `lane.rs`
            }
        }
        turn.out.clear();
        if turn.out.capacity() <= 4 << 20 {
            spare = turn.out;
        }
        wrote = true;
    }
}

async fn outbound_reader(node: Weak<NodeInner>, peer: Arc<Peer>, mut r: ReadHalf, gen: u64) {
    let mut buf = [0u8; 256];
    let (cause, why) = loop {
        match r.read(&mut buf).await {
            Ok(0) => break (Cause::PeerClosed, "the peer closed the connection".to_owned()),
            Ok(_) => {}
            Err(e) => break (Cause::Io, format!("read failed: {e}")),
        }
    };
    if let Some(n) = node.upgrade() {
        peer_down(&n, &peer, Some(gen), cause, &why);
    }
}

async fn inbound_conn(node: Arc<NodeInner>, sock: TcpStream, from: SocketAddr) {
    let stats = &node.shared.stats;
    let hs = Duration::from_millis(node.cfg.handshake_timeout_ms);
    let started = tokio::time::Instant::now();
    // A connection closed before its first byte is a TCP health check (a Kubernetes probe)
    // or a port scan, not a peer: counted as a failed handshake like any other, but logged at
    // debug level, so a probe every few seconds does not fill the log with warnings.
    match tokio::time::timeout(hs, sock.peek(&mut [0u8; 1])).await {
        Ok(Ok(0)) => {
            stats.handshake_failures.fetch_add(1, Ordering::Relaxed);
            stats.connections_closed.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(%from, reason = "closed_before_handshake", "connection from {from} closed before its first byte (a health check?)");
            return;
        }
        Ok(_) => {}
        Err(_) => {
            stats.handshake_failures.fetch_add(1, Ordering::Relaxed);
            stats.connections_closed.fetch_add(1, Ordering::Relaxed);
            crate::warn_limited!(
                %from,
                reason = "handshake_timeout",
                "closing connection from {from}: nothing received within the handshake deadline {hs:?}"
            );
            return;
        }
    }
    // What is left of the handshake deadline after the wait for the first byte.
    let hs = hs.saturating_sub(started.elapsed());
    let sock = match &node.tls {
        None => Stream::Plain(sock),
        Some(tls) => match tokio::time::timeout(hs, tls.acceptor.accept(sock)).await {
            Ok(Ok(s)) => Stream::Tls(Box::new(s.into())),
            failed => {
                let why = match failed {
                    Ok(Err(e)) => e.to_string(),
                    _ => format!("no TLS handshake within {hs:?}"),
                };
                stats.tls_failures.fetch_add(1, Ordering::Relaxed);
                stats.handshake_failures.fetch_add(1, Ordering::Relaxed);
                stats.connections_closed.fetch_add(1, Ordering::Relaxed);
                crate::warn_limited!(
                    %from,
                    reason = "tls",
                    error = %Esc(&why),
                    "closing connection from {from}: TLS handshake failed"
                );
                return;
            }
        },
    };
    accepted(node, sock, hs, from.to_string(), None).await;
}

/// `relay.rs`: a routed connection that ends at this node, from `origin`: accepted as if it
/// came over TCP (under TLS when this node uses TLS).
pub(crate) async fn inbound_tunnel(node: Arc<NodeInner>, pipe: tokio::io::DuplexStream, origin: String, hop: String) {
    let stats = &node.shared.stats;
    stats.connections_accepted.fetch_add(1, Ordering::Relaxed);
    let hs = Duration::from_millis(node.cfg.handshake_timeout_ms);
    let from = format!("{origin} (routed)");
    let sock = match &node.tls {
        None => Stream::Tunnel(pipe),
        Some(tls) => match tokio::time::timeout(hs, tls.acceptor.accept(pipe)).await {
            Ok(Ok(s)) => Stream::TunnelTls(Box::new(s.into())),
            _ => {
                stats.tls_failures.fetch_add(1, Ordering::Relaxed);
                stats.handshake_failures.fetch_add(1, Ordering::Relaxed);
                stats.connections_closed.fetch_add(1, Ordering::Relaxed);
                crate::warn_limited!(from = %Esc(&from), reason = "tls", "closing routed connection: TLS handshake failed");
                return;
            }
        },
    };
    accepted(node, sock, hs, from, Some(hop)).await;
}

/// An accepted connection after TCP (and TLS): the handshake, then its reader. `hop` is the
/// neighbour a routed connection came through (`None` over TCP).
async fn accepted(node: Arc<NodeInner>, mut sock: Stream, hs: Duration, from: String, hop: Option<String>) {
    let stats = &node.shared.stats;
    let cert = sock.peer_cert_name();
    let (acc, fb) = match handshake::accept_bound(&mut sock, &node.shared.me, &node.secret, hs, cert.as_deref()).await {
        Ok(x) => x,
        Err(e) => {
            stats.handshake_failures.fetch_add(1, Ordering::Relaxed);
            let mut reason = "handshake";
            if cert.is_some() && troupe::error_chain(&e).contains("TLS certificate") {
                stats.tls_failures.fetch_add(1, Ordering::Relaxed);
                reason = "tls";
            }
            if matches!(e.kind, ErrorKind::Auth(_)) {
                stats.auth_failures.fetch_add(1, Ordering::Relaxed);
                reason = "auth";
            }
            stats.connections_closed.fetch_add(1, Ordering::Relaxed);
            crate::warn_limited!(
                %from,
                reason,
                error = %Esc(&troupe::error_chain(&e)),
                "closing connection from {from}: handshake refused"
            );
            return;
        }
    };
    if is_me(&node, &acc.peer) {
        // Our own dial of an address that turned out to be ours (a seed list or DNS name that
        // includes this node): the dialling side reports it; this side just closes.
        stats.connections_closed.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(%from, reason = "self", "closing connection from {from}: it is this node itself");
        return;
    }
    let peer = match node.accepted_peer(&acc.peer.listen) {
        Ok(p) => p,
        Err(_) => {
            stats.connections_closed.fetch_add(1, Ordering::Relaxed);
            crate::warn_limited!(
                %from,
                peer_name = %Esc(&acc.peer.name),
                peer_addr = %Esc(&acc.peer.listen),
                reason = "peer_table_full",
                "closing connection from {from}: the peer table is full (max_peers)"
            );
            return;
        }
    };
    if node.shared.faults.is_partitioned(&peer.addr) {
        stats.connections_closed.fetch_add(1, Ordering::Relaxed);
        return;
    }
    // Rule 9 of `node/mod.rs`: connections from one peer are budgeted.
    let Some(guard) = InboundGuard::take(&peer, node.cfg.connection_budget()) else {
        stats.connections_closed.fetch_add(1, Ordering::Relaxed);
        stats.connections_refused.fetch_add(1, Ordering::Relaxed);
        crate::warn_limited!(
            %from,
            peer_addr = %Esc(&peer.addr),
            reason = "connection_budget",
            "closing connection from {from}: the peer already has {} connections to this node, \
             max_connections_per_peer",
            node.cfg.connection_budget()
        );
        return;
    };
    let restarted = {
        let s = peer.session.lock();
        (s.incarnation != 0 && s.incarnation != acc.peer.incarnation && peer.is_up()).then_some(s.generation)
    };
    if let Some(gen) = restarted {
        peer_down(&node, &peer, Some(gen), Cause::Restarted, "the peer restarted (new incarnation)");
    }
    peer.seen();
    tracing::debug!(
        %from,
        peer_name = %Esc(&acc.peer.name),
        peer_addr = %Esc(&peer.addr),
        incarnation = acc.peer.incarnation,
        channel = %Esc(&acc.channel),
        lane = acc.lane,
        "connection accepted"
    );
    let control = acc.channel == "control";
    if control {
        // `relay.rs` rule 6: the session back takes the same path.
        *peer.came.lock() = Some(hop.map_or(Came::Tcp, Came::Through));
        node.ensure_connected(&peer);
    }
    let ctx = InCtx { channel: acc.channel, lane: acc.lane, incarnation: acc.peer.incarnation, acks: Vec::new() };
    let mut status = (!control).then(|| peer.status.subscribe());
    let reader = inbound_reader(Arc::downgrade(&node), peer.clone(), sock, fb, ctx, from);
    let task = tokio::spawn(async move {
        let _guard = guard; // released when the reader ends or is aborted
        if let Some(status) = status.as_mut() {
            // Rule 12 of `node/mod.rs`: the session back starts before this lane is read.
            let _ = tokio::time::timeout(SESSION_BACK_WAIT, status.wait_for(|s| !matches!(s, Status::Down(_)))).await;
        }
        reader.await;
    });
    peer.session.lock().tasks.push(task.abort_handle());
}

/// What one connection's large frame being received counts against its peer's budget (rule
/// 11 of `node/mod.rs`), and the node's gauge; released when the connection ends.
struct Partial {
    peer: Arc<Peer>,
    bytes: usize,
}

impl Partial {
    /// Counts `n` bytes instead of what was counted; returns the peer's total after.
    fn set(&mut self, n: usize) -> usize {
        let gauge = &self.peer.shared.stats.partial_frame_bytes;
        let old = std::mem::replace(&mut self.bytes, n);
        if n >= old {
            gauge.fetch_add((n - old) as u64, Ordering::Relaxed);
            self.peer.partial_bytes.fetch_add(n - old, Ordering::AcqRel) + (n - old)
        } else {
            gauge.fetch_sub((old - n) as u64, Ordering::Relaxed);
            self.peer.partial_bytes.fetch_sub(old - n, Ordering::AcqRel) - (old - n)
        }
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        // The connection ended with a large frame unfinished (`trim.rs` rule 1).
        crate::node::trim::released(self.bytes, 0);
        self.set(0);
    }
}

/// One of a peer's live inbound connections (rule 9 of `node/mod.rs`).
struct InboundGuard(Arc<Peer>);

impl InboundGuard {
    /// Counts a new connection from `peer`, unless it already has `max`.
    fn take(peer: &Arc<Peer>, max: usize) -> Option<Self> {
        let live = peer.inbound.fetch_add(1, Ordering::AcqRel);
        if live >= max {
            peer.inbound.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Self(peer.clone()))
    }
}

impl Drop for InboundGuard {
    fn drop(&mut self) {
        self.0.inbound.fetch_sub(1, Ordering::AcqRel);
    }
}

async fn inbound_reader(
    node: Weak<NodeInner>,
    peer: Arc<Peer>,
    mut sock: Stream,
    fb: FrameBuf,
    mut ctx: InCtx,
    from: String,
) {
    let Some((spin, max_frame, budget)) = node
        .upgrade()
        .map(|n| (Duration::from_micros(n.cfg.spin_us), n.shared.max_frame, n.cfg.partial_frame_budget()))
    else {
        return;
    };
    let mut partial = Partial { peer: peer.clone(), bytes: 0 };
    // Declared after `partial`, so dropped before it: the buffer is freed before the trim
    // that `partial`'s drop may ask for (`trim.rs` rule 1).
    let mut fb = fb;
    let why = loop {
        let Some(n) = node.upgrade() else { return };
        let mut r = drain_frames(&n, &peer, &mut fb, &mut ctx);
        // Rule 11 of `node/mod.rs`: a large frame is counted before its body is buffered.
        let want = fb.large_in_progress(LARGE_AT_FRONT, max_frame);
        if r.is_ok() && want != partial.bytes {
            let total = partial.set(want);
            if want > 0 && total > budget {
                let why = format!(
                    "the peer's connections hold {total} bytes of large frames still being received, over \
                     max_partial_frame_bytes_per_peer ({budget})"
                );
                r = Err(inbound::limit_close(&n, &peer, why));
            }
        }
        drop(n);
        if let Err(e) = r {
            break Err(e);
        }
        let room = fb.room(READ_CHUNK, max_frame);
        let res = read_spinning(&mut sock, room, spin).await;
        match res {
            Ok(0) => break Ok((Cause::PeerClosed, "the peer closed the connection")),
            Ok(n) => {
                peer.shared.stats.bytes_in.fetch_add(n as u64, Ordering::Relaxed);
                if !peer.shared.faults.active() || !peer.shared.faults.is_partitioned(&peer.addr) {
                    peer.seen();
                }
            }
            Err(_) => break Ok((Cause::Io, "read failed")),
        }
    };
    peer.drop_held(&ctx.channel, ctx.lane);
    let Some(n) = node.upgrade() else { return };
    if !peer.is_up() {
        // `causal_wire.rs` rule 6 for a peer without a session (no control connection of
        // ours to it): nothing else would end its session and free what it sent.
        let freed = n.causal.drop_peer(&peer);
        crate::node::trim::released(freed, 0);
    }
    let stats = &n.shared.stats;
    stats.connections_closed.fetch_add(1, Ordering::Relaxed);
    match why {
        Err(e) => {
            // Bad input closes only this connection.
            let reason = match e.kind {
                ErrorKind::FrameTooLarge { .. } => {
                    stats.oversized_frames.fetch_add(1, Ordering::Relaxed);
                    "oversized"
                }
                // Logged once, where the budget was checked (`inbound::limit_close`).
                ErrorKind::LimitExceeded(_) => return,
                _ => {
                    stats.malformed_frames.fetch_add(1, Ordering::Relaxed);
                    "malformed"
                }
            };
            crate::warn_limited!(
                %from,
                peer_addr = %Esc(&peer.addr),
                channel = %Esc(&ctx.channel),
                reason,
                error = %Esc(&troupe::error_chain(&e)),
                "closing connection from {from}: bad input"
            );
        }
        Ok((cause, reason)) if ctx.channel == "control" => {
            let current = {
                let s = peer.session.lock();
                (s.incarnation == ctx.incarnation).then_some(s.generation)
            };
            if let Some(gen) = current {
                peer_down(&n, &peer, Some(gen), cause, reason);
            }
        }
        Ok(_) => {}
    }
}

/// Reads into `buf`'s spare capacity (rule 5 of `frame.rs`); with a non-zero `spin`, polls the
/// socket for that long first, yielding to other tasks between polls (the `spin_us` setting),
/// before waiting for readiness as usual.
async fn read_spinning(sock: &mut Stream, buf: &mut Vec<u8>, spin: Duration) -> std::io::Result<usize> {
    if !spin.is_zero() {
        let until = Instant::now() + spin;
        loop {
            match sock.try_read_buf(buf) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                r => return r,
            }
            if Instant::now() >= until {
                break;
            }
            tokio::task::yield_now().await;
        }
    }
    sock.read_buf(buf).await
}

fn drain_frames(node: &Arc<NodeInner>, peer: &Arc<Peer>, fb: &mut FrameBuf, ctx: &mut InCtx) -> Result<(), Error> {
    let partitioned = peer.shared.faults.active() && peer.shared.faults.is_partitioned(&peer.addr);
    let max = node.shared.max_frame;
    loop {
        // Rule 6 of `frame.rs`: a large frame arrives as owned bytes that a `SharedBlob` in it
        // may keep (`blob.rs`); the others are borrowed from the buffer.
        if let Some((k, frame)) = fb.take_large(max, LARGE_AT_FRONT)? {
            node.shared.stats.frames_in.fetch_add(1, Ordering::Relaxed);
            if !partitioned {
                crate::blob::with_arriving(&frame, || inbound::dispatch(node, peer, ctx, k, &frame[5..]))?;
            }
            continue;
        }
        let Some((k, body)) = fb.next_frame(max)? else { break };
        node.shared.stats.frames_in.fetch_add(1, Ordering::Relaxed);
        if partitioned {
            continue;
        }
        inbound::dispatch(node, peer, ctx, k, body)?;
    }
    if !ctx.acks.is_empty() {
        let seqs = std::mem::take(&mut ctx.acks);
        peer.control(&Control::Ack { channel: ctx.channel.clone(), lane: ctx.lane, seqs });
    }
    Ok(())
}

/// Delivers a monitor's `Down`.
pub(crate) fn fire(peer: &Peer, key: u64, mid: u64, w: Watcher, reason: ExitReason) {
    match w {
        Watcher::Actor(any, id) => {
            let down = Down { id, actor: ActorId::new(peer.index, key), reason };
            let _ = remote_api::deliver_down(&any, down);
        }
        Watcher::Once(tx) => {
            let _ = tx.send(reason);
        }
    }
    let _ = mid;
}

/// Rule 8 of `node/mod.rs`: relations released between two yields of a teardown.
pub(crate) const TEARDOWN_BATCH: usize = 1024;

/// Rule 2 of `node/mod.rs`: every relation crossing to `peer` learns it is lost. Rule 8: the
/// first [`TEARDOWN_BATCH`] are released at once; the rest by a task that yields between
/// batches, so a peer with hundreds of thousands of relations does not starve other work.
pub(crate) fn fail_relations(node: &NodeInner, peer: &Arc<Peer>) {
    let rel = std::mem::take(&mut *peer.relations.lock());
    node.pending.lock().retain(|_, (idx, _)| *idx != peer.index);
    let total = rel.monitors_out.len() + rel.links.len() + rel.monitors_in.len();
    node.shared.stats.teardown_pending.fetch_add(total as u64, Ordering::Relaxed);
    let mut work = Teardown {
        shared: node.shared.clone(),
        peer: peer.clone(),
        monitors_out: rel.monitors_out.into_iter(),
        links: rel.links.into_iter(),
        monitors_in: rel.monitors_in.into_iter(),
    };
    if work.step(TEARDOWN_BATCH) {
        return;
    }
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => {
            rt.spawn(async move {
                while !work.step(TEARDOWN_BATCH) {
                    tokio::task::yield_now().await;
                }
                drop(work);
                crate::node::trim::released(0, total);
            });
        }
        Err(_) => {
            while !work.step(usize::MAX) {}
            drop(work);
            crate::node::trim::released(0, total);
        }
    }
}

/// What is left of one peer's relations to release (rule 8 of `node/mod.rs`).
struct Teardown {
    shared: Arc<crate::node::Shared>,
    peer: Arc<Peer>,
    monitors_out: std::collections::hash_map::IntoIter<u64, (u64, Watcher)>,
    links: std::collections::hash_map::IntoIter<(u64, u64), (troupe::AnyRef, crate::frame::Target)>,
    monitors_in: std::collections::hash_map::IntoIter<u64, (troupe::AnyRef, troupe::MonitorId)>,
}

impl Teardown {
    /// Releases up to `n` relations (each O(1), `troupe`'s `keyed.rs`); true when none is left.
    fn step(&mut self, n: usize) -> bool {
        let peer = &*self.peer;
        let mut done = 0;
        while done < n {
            done += 1;
            if let Some((mid, (key, w))) = self.monitors_out.next() {
                fire(peer, key, mid, w, ExitReason::NoConnection);
            } else if let Some(((_, remote), (local, _))) = self.links.next() {
                let _ = remote_api::deliver_exit(&local, ActorId::new(peer.index, remote), ExitReason::NoConnection);
            } else if let Some((_, (local, id))) = self.monitors_in.next() {
                remote_api::remove_monitor(&local, id);
            } else {
                done -= 1;
                break;
            }
        }
        self.shared.stats.teardown_pending.fetch_sub(done as u64, Ordering::Relaxed);
        self.monitors_out.len() + self.links.len() + self.monitors_in.len() == 0
    }
}

/// Why a session ended: the `cause` field of the `node down` event, a bounded set (the
/// `reason` field says the rest in words).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cause {
    /// The peer closed the connection (it stopped, or closed the session itself).
    PeerClosed,
    /// This node ended it (`Node::disconnect`, `Node::shutdown`, the end of a fuzz input).
    Local,
    /// Nothing arrived from the peer for `heartbeat_timeout`: it is declared down.
    HeartbeatTimeout,
    /// A read or write on one of its connections failed.
    Io,
    /// The peer came back as a new incarnation.
    Restarted,
    /// The peer went past a budget (`inbound::limit_close`).
    Limit,
}

impl Cause {
    /// The `cause` field's value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Cause::PeerClosed => "peer_closed",
            Cause::Local => "local",
            Cause::HeartbeatTimeout => "heartbeat_timeout",
            Cause::Io => "io_error",
            Cause::Restarted => "restarted",
            Cause::Limit => "limit",
        }
    }

    /// Whether the session ended by a failure (logged at WARN), not in order (INFO).
    fn is_failure(self) -> bool {
        matches!(self, Cause::HeartbeatTimeout | Cause::Io | Cause::Limit)
    }
}

/// Declares `peer` down (when `gen` is its current session, or always with `None`).
pub(crate) fn peer_down(node: &Arc<NodeInner>, peer: &Arc<Peer>, gen: Option<u64>, cause: Cause, reason: &str) {
    let (tasks, name, incarnation, was_up) = {
        let mut s = peer.session.lock();
        if gen.is_some_and(|g| g != s.generation) {
            return;
        }
        s.generation += 1;
        (std::mem::take(&mut s.tasks), s.name.clone(), s.incarnation, peer.up.swap(false, Ordering::AcqRel))
    };
    for t in tasks {
        t.abort();
    }
    let queued: usize = peer.channels.iter().flat_map(|c| &c.lanes).map(|l| l.reset(&node.shared)).sum();
    let held = peer.clear_dedup();
    let err = Error::new(ErrorKind::Unreachable(format!("{} ({reason})", peer.addr)));
    peer.status.send_replace(Status::Down(Some(err)));
    fail_relations(node, peer);
    relay::peer_gone(node, peer); // `relay.rs` rule 3
    peer.direct_hint.store(false, Ordering::Relaxed);
    // `downs.rs` rule 2: the next session says again whether it decodes batched `Down`s (the
    // peer may come back as an older build).
    peer.batched_downs.store(false, Ordering::Relaxed);
    *peer.came.lock() = None;
    node.globals.write().remove_node(&peer.addr);
    let causal = node.causal.drop_peer(peer); // `causal_wire.rs` rule 6
    crate::node::trim::released(queued + held + causal, 0);
    if was_up {
        node.shared.stats.nodes_down.fetch_add(1, Ordering::Relaxed);
        let (addr, cause_str) = (Esc(&peer.addr), cause.as_str());
        if cause.is_failure() {
            tracing::warn!(peer_name = %Esc(&name), peer_addr = %addr, incarnation, cause = cause_str, reason = %Esc(reason), "node down");
        } else {
            tracing::info!(peer_name = %Esc(&name), peer_addr = %addr, incarnation, cause = cause_str, reason = %Esc(reason), "node down");
        }
        node.emit(NodeEvent::NodeDown { name, addr: peer.addr.clone(), reason: reason.to_owned() });
    }
    if peer.keep.load(Ordering::Relaxed) && !node.closed.load(Ordering::Acquire) {
        let node = Arc::downgrade(node);
        let peer = peer.clone();
        let delay = Duration::from_millis(node.upgrade().map_or(100, |n| n.cfg.reconnect_min_ms));
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            if let Some(n) = node.upgrade() {
                n.ensure_connected(&peer);
            }
        });
    }
}

async fn maintenance(weak: Weak<NodeInner>) {
    let (hb, timeout, ack) = match weak.upgrade() {
        Some(n) => (
            Duration::from_millis(n.cfg.heartbeat_interval_ms),
            n.cfg.heartbeat_timeout_ms * 1000,
            Duration::from_millis(n.cfg.ack_timeout_ms.max(1)),
        ),
        None => return,
    };
    let tick = (hb / 4).min(ack / 2).clamp(Duration::from_millis(2), Duration::from_millis(100));
    let mut last_hb = Instant::now();
    let mut last_sweep = Instant::now();
    loop {
        tokio::time::sleep(tick).await;
        let Some(node) = weak.upgrade() else { return };
        let now = Instant::now();
        let beat = now.duration_since(last_hb) >= hb;
        if beat {
            last_hb = now;
        }
        let now_us = node.shared.now_us();
        for p in node.all_peers() {
            if !p.is_up() {
                continue;
            }
            if beat {
                p.control(&Control::Heartbeat);
            }
            let silent = now_us.saturating_sub(p.last_seen_us.load(Ordering::Relaxed));
            if silent > timeout {
                let gen = p.generation();
                let why =
                    format!("nothing received for {} ms (heartbeat timeout {} ms)", silent / 1000, timeout / 1000);
                peer_down(&node, &p, Some(gen), Cause::HeartbeatTimeout, &why);
                continue;
            }
            p.retransmit(ack);
        }
        if now.duration_since(last_sweep) >= Duration::from_secs(1) {
            last_sweep = now;
            node.pending.lock().retain(|_, (_, p)| !p.is_closed());
            node.reclaim_idle();
        }
    }
}
