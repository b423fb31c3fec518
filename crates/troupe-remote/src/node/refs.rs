//! Remote references: [`RemoteActor`] (a remote actor as the core sees it, for links, monitors,
//! kill and stop), the typed sender behind a remote `ActorRef<M>`, exports of local actors,
//! reply plumbing for remote `ask`, and the serde hook that lets refs and reply handles travel
//! inside messages.
//!
//! Rules:
//! 1. A remote send encodes the message straight into a lane buffer; it never blocks on the
//!    network. It fails (message handed back) only when the lane's buffer is over its limit or
//!    the message does not encode.
//! 2. A local actor becomes reachable from other nodes when it is exported: by name
//!    ([`crate::Node::export`]) or by its ref being sent inside a message. An export is removed
//!    when its actor dies.
//! 3. Links and monitors across nodes follow the protocol in `proto.rs`: each side keeps the
//!    crossing relations in the peer's tables, so losing the peer signals every one of them
//!    with `NoConnection`.

use std::any::{Any, TypeId};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use tokio::sync::oneshot;
use troupe::remote_api::{self, RemoteProcess, SerdeHook, WireRef, WireReply};
use troupe::{
    ActorId, ActorRef, AnyRef, DynSender, ExitReason, ExitSignal, MonitorId, ReplyTo, SendError, SendErrorKind,
};

use crate::codec::{self, tag_hash};
use crate::frame::{kind, write_reply_header, DataHeader, HeaderExt, Target};
use crate::logging::Esc;
use crate::node::peer::{Peer, SendFail, Size, Status, Watcher};
use crate::node::NodeInner;
use crate::proto::{Control, RefuseReason};
use crate::types::{self, RemoteMessage};

/// Per-send options (Partisan's, seed 004 §5): channel, partition key, acknowledged delivery.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[must_use]
pub struct SendOptions {
    /// The channel's name (default: `default`).
    pub channel: Option<String>,
    /// Picks the lane by this key instead of by sender and receiver.
    pub partition_key: Option<u64>,
    /// The sending actor, for affinity (hash of sender and receiver).
    pub sender: Option<ActorId>,
    /// At-least-once delivery with retransmission; the receiver drops duplicates.
    pub ack: bool,
    /// Causal delivery under this label (Partisan's `causal_label`): every node delivers the
    /// messages sent under one label in an order consistent with causality
    /// (`crate::causal`). Does not combine with `ack`.
    pub causal: Option<String>,
}

impl SendOptions {
    /// Default options.
    pub fn new() -> Self {
        Self::default()
    }
    /// On channel `name`.
    pub fn channel(mut self, name: &str) -> Self {
        self.channel = Some(name.to_owned());
        self
    }
    /// With partition key `k`.
    pub fn partition_key(mut self, k: u64) -> Self {
        self.partition_key = Some(k);
        self
    }
    /// From sender `id` (affinity).
    pub fn sender(mut self, id: ActorId) -> Self {
        self.sender = Some(id);
        self
    }
    /// Acknowledged.
    pub fn ack(mut self, on: bool) -> Self {
        self.ack = on;
        self
    }
    /// Causally ordered under `label` (see [`crate::causal`]; not with [`SendOptions::ack`]).
    pub fn causal(mut self, label: &str) -> Self {
        self.causal = Some(label.to_owned());
        self
    }
}

/// The key a remote actor is known by on our side: its number, or a hash of its name with the
/// top sequence bit set.
pub(crate) fn target_key(t: &Target) -> u64 {
    match t {
        Target::Id(s) => *s,
        Target::Name(n) => (1 << 47) | (tag_hash(n) & ((1 << 47) - 1)),
    }
}

/// A remote actor.
pub(crate) struct RemoteActor {
    pub(crate) peer: Arc<Peer>,
    pub(crate) node: Weak<NodeInner>,
    pub(crate) target: Target,
    pub(crate) tag: u64,
    pub(crate) dead: AtomicBool,
    pub(crate) channel: usize,
    pub(crate) opts: SendOptions,
}

impl RemoteActor {
    pub(crate) fn new(node: &Arc<NodeInner>, peer: Arc<Peer>, target: Target, tag: u64, opts: SendOptions) -> Self {
        let channel = node.channel_index(opts.channel.as_deref());
        Self { peer, node: Arc::downgrade(node), target, tag, dead: AtomicBool::new(false), channel, opts }
    }

    fn key(&self) -> u64 {
        target_key(&self.target)
    }

    fn ensure_connected(&self) {
        if !self.peer.is_up() {
            if let Some(n) = self.node.upgrade() {
                n.ensure_connected(&self.peer);
            }
        }
    }

    fn control(&self, msg: &Control) {
        self.ensure_connected();
        self.peer.control(msg);
    }

    /// Rule 1: encodes `msg` into a lane.
    pub(crate) fn send_msg<M: RemoteMessage>(
        &self,
        msg: &M,
        opts: &SendOptions,
        channel: usize,
    ) -> Result<(), SendFail> {
        self.ensure_connected();
        let sender = opts.sender.map_or(0, |s| s.to_bits());
        let lane = self.peer.pick_lane(channel, opts.partition_key, sender, self.key());
        let peer = &self.peer;
        let size = Size::of(msg);
        // `otel.rs` rules 1 and 2: taken here, before any lane lock.
        #[cfg(feature = "otel")]
        let trace = crate::otel::Outgoing::for_peer(peer);
        #[cfg(feature = "otel")]
        let ext = trace.as_ref().map(crate::otel::Outgoing::ext).unwrap_or_default();
        #[cfg(not(feature = "otel"))]
        let ext = HeaderExt::default();
        let Some(label) = &opts.causal else {
            return peer.send_frame(lane, kind::DATA, opts.ack, size, |b, seq| {
                encode_data(peer, &self.target, self.tag, seq, &ext, msg, b)
            });
        };
        if opts.ack {
            return Err(SendFail::Encode(crate::Error::malformed(
                "causal and acknowledged delivery do not combine; send with one or the other",
            )));
        }
        let node =
            self.node.upgrade().ok_or_else(|| SendFail::Encode(crate::Error::malformed("the node has stopped")))?;
        node.causal.send(label, &peer.addr, |stamp| {
            peer.send_frame(lane, kind::CAUSAL, false, size, |b, seq| {
                crate::node::causal_wire::write_prefix(label, stamp, b)?;
                encode_data(peer, &self.target, self.tag, seq, &ext, msg, b)
            })
        })
    }
}

thread_local! {
    static CURRENT_PEER: Cell<u16> = const { Cell::new(0) };
    /// The peer whose frame is being decoded (rule 7 of `node/mod.rs`); 0 outside inbound.
    static INBOUND_FROM: Cell<u16> = const { Cell::new(0) };
    static REPLIES: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` (which decodes a message from the peer with index `from`) so that refs and
/// reply handles inside it may name that peer (rule 7 of `node/mod.rs`).
pub(crate) fn decoding_from<T>(from: u16, f: impl FnOnce() -> T) -> T {
    let before = INBOUND_FROM.with(|c| c.replace(from));
    let r = f();
    INBOUND_FROM.with(|c| c.set(before));
    r
}

fn wire_peer(node: &Arc<NodeInner>, addr: &str) -> Result<Arc<Peer>, String> {
    let from = INBOUND_FROM.with(Cell::get);
    node.wire_peer(addr, from).map_err(|why| match why {
        crate::node::PeerRefused::Unknown => format!(
            "an address in the message ({}) is not a configured or connected node; refused",
            crate::logging::esc(addr)
        ),
        crate::node::PeerRefused::Full => "the peer table is full (max_peers); refused".to_owned(),
    })
}

/// Writes a data frame body: header (with `ext`, `frame.rs` rule 7), payload, then the reply
/// trailer (`[u64]*n`, `u8 n`).
fn encode_data<M: RemoteMessage>(
    peer: &Peer,
    target: &Target,
    tag: u64,
    seq: u64,
    ext: &HeaderExt<'_>,
    msg: &M,
    b: &mut Vec<u8>,
) -> Result<(), crate::Error> {
    DataHeader { target: target.clone(), tag, ack_seq: seq }.write_ext(ext, b)?;
    CURRENT_PEER.with(|c| c.set(peer.index));
    let r = remote_api::with_serde_hook(&peer.shared.hook, || codec::encode_into(msg, b));
    let replies = REPLIES.with(|r| std::mem::take(&mut *r.borrow_mut()));
    r?;
    let n = u8::try_from(replies.len())
        .map_err(|_| crate::Error::malformed("more than 255 reply handles in one message"))?;
    for id in &replies {
        b.extend_from_slice(&id.to_le_bytes());
    }
    b.push(n);
    Ok(())
}

impl RemoteProcess for RemoteActor {
    fn id(&self) -> ActorId {
        ActorId::new(self.peer.index, self.key())
    }

    fn is_alive(&self) -> bool {
        !self.dead.load(Ordering::Relaxed) && !matches!(*self.peer.status.borrow(), Status::Down(Some(_)))
    }

    fn kill(&self) {
        self.control(&Control::Kill { target: self.target.clone() });
    }

    fn stop(&self, reason: ExitReason) {
        self.control(&Control::Stop { target: self.target.clone(), reason });
    }

    fn exit_signal(&self, sig: ExitSignal) -> bool {
        let from = self.peer.relations.lock().links.remove(&(sig.from.seq(), self.key())).map(|(_, t)| t);
        let from = from.unwrap_or(Target::Id(sig.from.seq()));
        self.control(&Control::Exit { from, to: self.target.clone(), reason: sig.reason });
        true
    }

    fn down(&self, _down: troupe::Down) -> bool {
        false
    }

    fn add_link(&self, local: AnyRef) -> bool {
        if self.dead.load(Ordering::Relaxed) {
            return false;
        }
        let seq = local.id().seq();
        self.peer.relations.lock().links.insert((seq, self.key()), (local, Target::Id(seq)));
        self.control(&Control::Link { from: seq, to: self.target.clone() });
        true
    }

    fn remove_link(&self, local: ActorId) {
        self.peer.relations.lock().links.remove(&(local.seq(), self.key()));
        self.control(&Control::Unlink { from: local.seq(), to: self.target.clone() });
    }

    fn add_monitor(&self, id: MonitorId, watcher: AnyRef) -> bool {
        if self.dead.load(Ordering::Relaxed) {
            return false;
        }
        let mid = remote_api::monitor_id_to_bits(id);
        self.register_monitor(mid, Watcher::Actor(watcher, id));
        true
    }

    fn remove_monitor(&self, id: MonitorId) {
        let mid = remote_api::monitor_id_to_bits(id);
        self.peer.relations.lock().monitors_out.remove(&mid);
        self.control(&Control::Demonitor { mid });
    }

    fn watch(&self) -> Result<oneshot::Receiver<ExitReason>, ExitReason> {
        if self.dead.load(Ordering::Relaxed) {
            return Err(ExitReason::NoProc);
        }
        let (tx, rx) = oneshot::channel();
        let mid = remote_api::monitor_id_to_bits(remote_api::new_monitor_id());
        self.register_monitor(mid, Watcher::Once(tx));
        Ok(rx)
    }
}

impl RemoteActor {
    fn register_monitor(&self, mid: u64, w: Watcher) {
        self.ensure_connected();
        if matches!(*self.peer.status.borrow(), Status::Down(Some(_))) {
            // The node is known lost: the monitor fires at once, as OTP's does.
            crate::node::conn::fire(&self.peer, self.key(), mid, w, ExitReason::NoConnection);
            return;
        }
        self.peer.relations.lock().monitors_out.insert(mid, (self.key(), w));
        self.peer.control(&Control::Monitor { mid, target: self.target.clone() });
    }
}

/// Stands in a local actor's monitor list for a watcher on another node (rule 3).
pub(crate) struct WatcherProxy {
    pub(crate) peer: Arc<Peer>,
    pub(crate) mid: u64,
}

impl RemoteProcess for WatcherProxy {
    fn id(&self) -> ActorId {
        ActorId::new(self.peer.index, 0)
    }
    fn is_alive(&self) -> bool {
        self.peer.is_up()
    }
    fn kill(&self) {}
    fn stop(&self, _: ExitReason) {}
    fn exit_signal(&self, _: ExitSignal) -> bool {
        false
    }
    fn down(&self, d: troupe::Down) -> bool {
        if self.peer.relations.lock().monitors_in.remove(&self.mid).is_none() {
            return false;
        }
        self.peer.send_down(self.mid, d.actor.seq(), d.reason);
        true
    }
    fn add_link(&self, _: AnyRef) -> bool {
        false
    }
    fn remove_link(&self, _: ActorId) {}
    fn add_monitor(&self, _: MonitorId, _: AnyRef) -> bool {
        false
    }
    fn remove_monitor(&self, _: MonitorId) {}
    fn watch(&self) -> Result<oneshot::Receiver<ExitReason>, ExitReason> {
        Err(ExitReason::NoProc)
    }
}

/// The sender behind a remote `ActorRef<M>`.
pub(crate) struct RemoteSender<M> {
    pub(crate) actor: Arc<RemoteActor>,
    _m: std::marker::PhantomData<fn(M)>,
}

impl<M: RemoteMessage> DynSender<M> for RemoteSender<M> {
    fn send(&self, msg: M) -> Result<(), SendError<M>> {
        match self.actor.send_msg(&msg, &self.actor.opts, self.actor.channel) {
            Ok(()) => Ok(()),
            Err(SendFail::Full) => Err(remote_api::send_error(SendErrorKind::Full, Some(msg))),
            Err(SendFail::Encode(e)) => {
                tracing::error!(peer = %Esc(&self.actor.peer.addr), "message not sent: {e}");
                self.actor.peer.shared.stats.encode_errors.fetch_add(1, Ordering::Relaxed);
                Err(remote_api::send_error(SendErrorKind::Gone, Some(msg)))
            }
        }
    }

    fn any(&self) -> AnyRef {
        AnyRef::from_remote(self.actor.clone())
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

pub(crate) fn remote_ref<M: RemoteMessage>(actor: Arc<RemoteActor>) -> ActorRef<M> {
    ActorRef::from_dyn(Arc::new(RemoteSender::<M> { actor, _m: std::marker::PhantomData }))
}

pub(crate) fn remote_of<M: RemoteMessage>(r: &ActorRef<M>) -> Option<Arc<RemoteActor>> {
    remote_api::dyn_sender_any(r)?.downcast_ref::<RemoteSender<M>>().map(|s| s.actor.clone())
}

/// Sends `msg` with per-send options. A local target ignores the options.
pub fn send_with<M: RemoteMessage>(r: &ActorRef<M>, msg: M, opts: &SendOptions) -> Result<(), SendError<M>> {
    let Some(actor) = remote_of(r) else {
        return r.send(msg);
    };
    let channel = match actor.node.upgrade() {
        Some(n) => n.channel_index(opts.channel.as_deref()),
        None => actor.channel,
    };
    match actor.send_msg(&msg, opts, channel) {
        Ok(()) => Ok(()),
        Err(SendFail::Full) => Err(remote_api::send_error(SendErrorKind::Full, Some(msg))),
        Err(SendFail::Encode(_)) => Err(remote_api::send_error(SendErrorKind::Gone, Some(msg))),
    }
}

/// A local actor reachable from other nodes.
pub(crate) struct Export {
    pub(crate) any: AnyRef,
    pub(crate) adapter: bool,
    pub(crate) tag: u64,
    pub(crate) tag_name: &'static str,
    pub(crate) typed: Box<dyn Any + Send + Sync>,
    pub(crate) deliver: fn(&(dyn Any + Send + Sync), &[u8]) -> Result<(), RefuseReason>,
}

/// The number [`export_parts`] files a plain local actor's ref under (`None` for an adapter
/// or a remote actor, which get numbers of their own).
pub(crate) fn local_seq<M: RemoteMessage>(r: &ActorRef<M>) -> Option<u64> {
    (remote_api::dyn_sender_any(r).is_none() && r.id().node() == 0).then(|| r.id().seq())
}

pub(crate) fn export_parts<M: RemoteMessage>(r: &ActorRef<M>) -> Export {
    let e = types::registered::<M>();
    Export {
        any: r.any(),
        adapter: remote_api::dyn_sender_any(r).is_some() || r.id().node() != 0,
        tag: e.tag,
        tag_name: e.tag_name,
        typed: Box::new(r.clone()),
        deliver: types::deliver::<M>,
    }
}

/// An answer a local asker waits for from another node.
pub(crate) trait PendingReply: Send {
    fn deliver(self: Box<Self>, payload: &[u8]) -> Result<(), String>;
    /// The request was refused: the asker's `ask` returns `err`.
    fn fail(self: Box<Self>, err: troupe::AskError);
    fn is_closed(&self) -> bool;
}

struct Pending<R>(ReplyTo<R>);

impl<R: RemoteMessage> PendingReply for Pending<R> {
    fn deliver(self: Box<Self>, payload: &[u8]) -> Result<(), String> {
        let r: R = codec::decode(payload).map_err(|e| e.to_string())?;
        self.0.send(r);
        Ok(())
    }
    fn fail(self: Box<Self>, err: troupe::AskError) {
        remote_api::fail_reply(self.0, err);
    }
    fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
}

pub(crate) fn pending<R: RemoteMessage>(r: ReplyTo<R>) -> Box<dyn PendingReply> {
    Box::new(Pending(r))
}

/// Where a reply to a remote asker goes.
pub(crate) struct ReplySink {
    pub(crate) peer: Arc<Peer>,
    pub(crate) id: u64,
    pub(crate) tag: u64,
    /// The node, for its reply budget (rule 10 of `node/mod.rs`).
    pub(crate) node: Weak<NodeInner>,
    /// The trace context current when the handle was decoded (`otel.rs` rule 4).
    #[cfg(feature = "otel")]
    pub(crate) trace: Option<crate::otel::Outgoing>,
}

/// A reply frame's bytes beyond its body: the frame header, the reply number and the tag.
const REPLY_OVERHEAD: usize = 5 + 8 + 8;

pub(crate) fn reply_through<R: RemoteMessage>(sink: ReplySink) -> ReplyTo<R> {
    ReplyTo::from_fn(move |r: R| {
        let peer = &sink.peer;
        if matches!(*peer.status.borrow(), Status::Down(_)) {
            // The asker's session is gone and its ask failed there (rule 2 of `node/mod.rs`):
            // nothing would ever take this reply out of the buffer.
            peer.shared.stats.replies_dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let size = Size::of(&r);
        // Rule 10 of `node/mod.rs`: one relaxed load unless the node is near its budget.
        let n = size.map_or(0, |s| s.full) + REPLY_OVERHEAD;
        let stats = &peer.shared.stats;
        if stats.reply_bytes.load(Ordering::Relaxed).saturating_add(n as u64) > peer.shared.max_reply as u64 {
            if let Some(node) = sink.node.upgrade() {
                if node.reply_budget(peer, n) {
                    stats.replies_dropped.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        }
        let lane = peer.pick_lane(1, Some(sink.id), 0, 0);
        // `otel.rs` rule 4: the context current now, else the one the handle arrived in.
        #[cfg(feature = "otel")]
        let trace = crate::otel::Outgoing::for_peer(peer)
            .or_else(|| sink.trace.clone().filter(|_| crate::otel::Outgoing::takes(peer)));
        #[cfg(feature = "otel")]
        let ext = trace.as_ref().map(crate::otel::Outgoing::ext).unwrap_or_default();
        #[cfg(not(feature = "otel"))]
        let ext = HeaderExt::default();
        let res = peer.send_frame(lane, kind::REPLY, false, size, |b, _| {
            write_reply_header(b, sink.id, sink.tag, &ext)?;
            CURRENT_PEER.with(|c| c.set(peer.index));
            let r2 = remote_api::with_serde_hook(&peer.shared.hook, || codec::encode_into(&r, b));
            REPLIES.with(|r| r.borrow_mut().clear());
            r2
        });
        if let Err(e) = res {
            crate::warn_limited!(peer = %Esc(&peer.addr), "reply not sent: {e:?}");
        }
    })
}

/// The serde hook of one node.
pub(crate) struct NodeHook {
    pub(crate) node: Weak<NodeInner>,
}

impl NodeHook {
    fn node(&self) -> Result<Arc<NodeInner>, String> {
        self.node.upgrade().ok_or_else(|| "the node has shut down".to_owned())
    }
}

impl SerdeHook for NodeHook {
    fn encode_ref(&self, r: &dyn Any, ty: TypeId) -> Result<WireRef, String> {
        let e = types::entry(ty)?;
        if let Some(actor) = (e.remote_of)(r) {
            if let Target::Id(id) = actor.target {
                return Ok(WireRef { node: actor.peer.addr.clone(), id, tag: e.tag });
            }
        }
        let node = self.node()?;
        // An actor whose ref already went out is exported already: no `Export` to build.
        if let Some(id) = (e.local_seq)(r).filter(|id| node.exports.read().contains_key(id)) {
            return Ok(WireRef { node: node.shared.me.listen.clone(), id, tag: e.tag });
        }
        let export = (e.export)(r).ok_or("the ref is not of the registered type")?;
        let id = node.export_anonymous(export);
        Ok(WireRef { node: node.shared.me.listen.clone(), id, tag: e.tag })
    }

    fn decode_ref(&self, w: WireRef, ty: TypeId) -> Result<Box<dyn Any + Send>, String> {
        let e = types::entry(ty).inspect_err(|_| types::unknown(w.tag))?;
        if w.tag != e.tag {
            types::unknown(w.tag);
            return Err(format!(
                "a ref for message type {} arrived where {} was expected",
                types::tag_name_of(w.tag),
                e.tag_name
            ));
        }
        let node = self.node()?;
        if w.node == node.shared.me.listen {
            let ex = node.exports.read().get(&w.id).cloned();
            let ex = ex.ok_or_else(|| format!("a ref to local actor {} which is no longer exported", w.id))?;
            if ex.tag != e.tag {
                return Err(format!("a ref to local actor {} of another message type", w.id));
            }
            return (e.local_clone)(&*ex.typed).ok_or_else(|| "a local ref of another type".to_owned());
        }
        let peer = wire_peer(&node, &w.node)?;
        let actor = RemoteActor::new(&node, peer, Target::Id(w.id), w.tag, SendOptions::default());
        Ok((e.make_ref)(Arc::new(actor)))
    }

    fn encode_reply(&self, reply: Box<dyn Any + Send>, ty: TypeId) -> Result<WireReply, String> {
        let e = types::entry(ty)?;
        let node = self.node()?;
        let p = (e.pending)(reply).ok_or("the reply handle is not of the registered type")?;
        let id = node.next_id();
        let peer = CURRENT_PEER.with(Cell::get);
        node.pending.lock().insert(id, (peer, p));
        REPLIES.with(|r| r.borrow_mut().push(id));
        Ok(WireReply { node: node.shared.me.listen.clone(), id, tag: e.tag })
    }

    fn decode_reply(&self, w: WireReply, ty: TypeId) -> Result<Box<dyn Any + Send>, String> {
        let e = types::entry(ty).inspect_err(|_| types::unknown(w.tag))?;
        if w.tag != e.tag {
            types::unknown(w.tag);
            return Err(format!(
                "a reply handle for {} arrived where {} was expected",
                types::tag_name_of(w.tag),
                e.tag_name
            ));
        }
        let node = self.node()?;
        let peer = wire_peer(&node, &w.node)?;
        Ok((e.make_reply)(ReplySink {
            peer,
            id: w.id,
            tag: w.tag,
            node: self.node.clone(),
            #[cfg(feature = "otel")]
            trace: crate::otel::Outgoing::current(),
        }))
    }
}
