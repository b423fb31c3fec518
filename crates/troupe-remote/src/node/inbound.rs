//! Inbound dispatch: what a node does with each authenticated frame from a peer.
//!
//! Rules:
//! 1. A frame that does not parse, or a kind not allowed after the handshake, is an error that
//!    closes this connection only; a payload that does not decode as the target's message type
//!    is refused back to the sender (the connection stays).
//! 2. A data frame goes to the actor its target names (number or exported name) only when the
//!    frame's type tag equals the actor's; otherwise the sender gets `Refused` with the actor's
//!    real tag and every reply handle the message carried fails at once.
//! 3. With a sequence number, a data frame is acknowledged after this read batch, and handled
//!    only the first time that number arrives on its lane (duplicates are dropped and counted),
//!    in sequence order: a frame ahead of a missing one waits until a retransmission fills the
//!    gap (`peer::Reorder`), so acknowledged sends keep their lane's FIFO.
//! 4. What a peer's session holds back for order is bounded in bytes, per session
//!    (`max_held_bytes_per_session`) and per node (`max_held_bytes`), not only in count: past
//!    either, that session is closed (its peer goes down with the reason, `held_limit_closes`)
//!    and everything it held is freed. What a connection held is also freed when that
//!    connection ends (`Peer::drop_held`), so nothing stays held after a peer leaves.
//! 5. A monitor number names one monitor per peer: a `Monitor` that reuses a number still in
//!    use replaces the old monitor, on the actor as well as in the peer's table, so repeating
//!    it grows nothing (before issue 36 each repeat left one monitor on the actor for good).
//! 6. What a peer's control frames make this node keep is budgeted per peer: monitors on this
//!    node's actors (`max_monitors_per_peer`) and links with them (`max_links_per_peer`). A
//!    frame that would go past a budget closes the session instead (its peer goes down with
//!    the reason, logged rate-limited, `limit_closes`), and what the session held is released
//!    (rule 8 of `node/mod.rs`); the node keeps serving every other peer.
//! 7. Global names a peer announces are budgeted the same way: per peer
//!    (`max_globals_per_peer`) and over all peers (`max_globals`; this node's own names do
//!    not count). A name past either closes the session; its names are dropped with it.
//! 8. A refused message's reply handles fail at the asker with a typed `AskError` (never a
//!    silent drop): `UnknownType` naming the type when the receiver did not know the type the
//!    message is (a tag mismatch: another type or version) or carries (`types.rs` rule 3),
//!    `Gone` for no actor, `Full` for a full mailbox, `NoReply` when the payload did not
//!    decode. The receiver names an unknown carried type (`RefuseReason::UnknownType`) only to
//!    peers that advertised it (`handshake.rs` rule 9); older peers get `Undecodable`.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use troupe::remote_api;
use troupe::{ActorId, AskError};

use crate::codec;
use crate::error::{Error, ErrorKind};
use crate::frame::{kind, read_reply_ext, DataHeader, HeaderExt, Target};
use crate::logging::Esc;
use crate::node::causal_wire;
use crate::node::peer::{Arrival, Peer, Reorder};
use crate::node::refs::{self, target_key, RemoteActor, SendOptions, WatcherProxy};
use crate::node::{NodeEvent, NodeInner};
use crate::proto::{Control, GlobalEntry, RefuseReason};
use crate::types;

/// The state of one inbound connection.
pub(crate) struct InCtx {
    pub(crate) channel: String,
    pub(crate) lane: u16,
    pub(crate) incarnation: u64,
    pub(crate) acks: Vec<u64>,
}

pub(crate) fn dispatch(
    node: &Arc<NodeInner>,
    peer: &Arc<Peer>,
    ctx: &mut InCtx,
    k: u8,
    body: &[u8],
) -> Result<(), Error> {
    // Read first: a line every sender shares is written once per look, not per frame.
    if k != kind::CONTROL && !peer.used.load(Ordering::Relaxed) {
        peer.used.store(true, Ordering::Relaxed);
    }
    match k {
        kind::DATA => data(node, peer, ctx, body),
        kind::CAUSAL => {
            let (label, stamp, rest) = causal_wire::read(body)?;
            let cost = causal_wire::cost(&label, &stamp, rest);
            let held = causal_wire::Held { peer: peer.clone(), body: rest.to_vec(), cost };
            let cfg = &node.cfg;
            let budgets = causal_wire::Budgets {
                per_label: cfg.max_causal_held_bytes_per_label,
                per_session: cfg.max_causal_held_bytes_per_session,
                per_node: cfg.max_causal_held_bytes,
            };
            let r = node.causal.receive(&label, stamp, held, budgets, |h| {
                // Parsed when it arrived, with no ack sequence (causal_wire rule 2).
                if let Ok((dh, ext, payload, replies)) = DataHeader::read_ext(&h.body) {
                    handle(node, &h.peer, dh, &ext, payload, replies);
                }
            });
            match r {
                Ok(()) => Ok(()),
                Err(causal_wire::Dropped::Budget(why)) => Err(limit_close(node, peer, why)),
                Err(why) => {
                    causal_wire::dropped(node, peer, why);
                    Ok(())
                }
            }
        }
        kind::REPLY => {
            let (id, tag, ext, payload) = read_reply_ext(body)?;
            let pending = node.pending.lock().remove(&id);
            if let Some((_, p)) = pending {
                // `otel.rs` rule 3: the asker's side of the trace.
                #[cfg(feature = "otel")]
                let _span = crate::otel::receive(node, peer, crate::otel::Received::Reply(id), tag, &ext);
                let _ = (tag, &ext);
                let r = refs::decoding_from(peer.index, || {
                    remote_api::with_serde_hook(&node.shared.hook, || p.deliver(payload))
                });
                if let Err(e) = r {
                    crate::warn_limited!(peer = %Esc(&peer.addr), "reply {id} did not decode: {}", Esc(&e));
                }
            }
            Ok(())
        }
        kind::CONTROL => {
            let c: Control = codec::decode(body)?;
            control(node, peer, c)
        }
        k => Err(Error::malformed(format!("frame kind {k} is not allowed after the handshake"))),
    }
}

fn data(node: &Arc<NodeInner>, peer: &Arc<Peer>, ctx: &mut InCtx, body: &[u8]) -> Result<(), Error> {
    let (h, ext, payload, replies) = DataHeader::read_ext(body)?;
    if h.ack_seq == 0 {
        handle(node, peer, h, &ext, payload, replies);
        return Ok(());
    }
    ctx.acks.push(h.ack_seq);
    let key = (ctx.channel.clone(), ctx.lane);
    let stats = &node.shared.stats;
    let (arrival, session_bytes) = {
        let mut d = peer.dedup.lock();
        let a = d.lanes.entry(key.clone()).or_default().arrive(h.ack_seq, body);
        if matches!(a, Arrival::Held { .. }) {
            d.held_bytes += body.len();
            stats.held_bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
        }
        (a, d.held_bytes)
    };
    match arrival {
        Arrival::Duplicate => {
            stats.duplicates_dropped.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        Arrival::Deliver => handle(node, peer, h, &ext, payload, replies),
        Arrival::Held { skipped } => {
            stats.held_for_order.fetch_add(1, Ordering::Relaxed);
            if skipped {
                stats.order_gaps_skipped.fetch_add(1, Ordering::Relaxed);
                crate::warn_limited!(
                    peer = %Esc(&peer.addr),
                    "gave up waiting for a lost acknowledged frame (too many held)"
                );
            }
            let node_bytes = stats.held_bytes.load(Ordering::Relaxed) as usize;
            let cfg = &node.cfg;
            if session_bytes > cfg.max_held_bytes_per_session || node_bytes > cfg.max_held_bytes {
                return Err(held_limit(node, peer, session_bytes, node_bytes));
            }
        }
    }
    loop {
        let next = {
            let mut d = peer.dedup.lock();
            let b = d.lanes.get_mut(&key).and_then(Reorder::release);
            if let Some(b) = &b {
                d.held_bytes = d.held_bytes.saturating_sub(b.len());
                stats.held_bytes.fetch_sub(b.len() as u64, Ordering::Relaxed);
            }
            b
        };
        let Some(held) = next else { return Ok(()) };
        // It parsed when it arrived.
        let (h, ext, payload, replies) = DataHeader::read_ext(&held)?;
        handle(node, peer, h, &ext, payload, replies);
    }
}

/// Rule 4: the session holds too many out-of-order bytes; it is closed with a reason.
fn held_limit(node: &Arc<NodeInner>, peer: &Arc<Peer>, session: usize, all: usize) -> Error {
    node.shared.stats.held_limit_closes.fetch_add(1, Ordering::Relaxed);
    let cfg = &node.cfg;
    let why = if session > cfg.max_held_bytes_per_session {
        format!(
            "the session holds {session} bytes of out-of-order acknowledged frames, over \
             max_held_bytes_per_session ({})",
            cfg.max_held_bytes_per_session
        )
    } else {
        format!(
            "the node holds {all} bytes of out-of-order acknowledged frames, over max_held_bytes ({})",
            cfg.max_held_bytes
        )
    };
    limit_close(node, peer, why)
}

/// Rule 2: hands a data frame to its actor, or refuses it; with a trace context in `ext`,
/// inside a receive span parented on it (`otel.rs` rule 3).
fn handle(
    node: &Arc<NodeInner>,
    peer: &Arc<Peer>,
    h: DataHeader,
    ext: &HeaderExt<'_>,
    payload: &[u8],
    replies: Vec<u64>,
) {
    #[cfg(feature = "otel")]
    let _span = crate::otel::receive(node, peer, crate::otel::Received::Data(&h.target), h.tag, ext);
    let _ = ext;
    let refuse = |reason: RefuseReason| {
        node.shared.stats.refused_in.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(peer = %Esc(&peer.addr), target = ?h.target, "refused: {reason:?}");
        let refused =
            |reason| Control::Refused { target: h.target.clone(), tag: h.tag, replies: replies.clone(), reason };
        match reason {
            RefuseReason::UnknownType { tag } => {
                let why = format!("the message carries type {}, unknown here", types::tag_name_of(tag));
                peer.refuse_typed(refused(RefuseReason::UnknownType { tag }), refused(RefuseReason::Undecodable(why)));
            }
            r => peer.control(&refused(r)),
        }
    };
    let Some((_, ex)) = node.resolve_local(&h.target) else {
        refuse(RefuseReason::NoActor);
        return;
    };
    if ex.tag != h.tag {
        refuse(RefuseReason::TypeMismatch { found: ex.tag_name.to_owned() });
        return;
    }
    let r = refs::decoding_from(peer.index, || {
        remote_api::with_serde_hook(&node.shared.hook, || (ex.deliver)(&*ex.typed, payload))
    });
    if let Err(reason) = r {
        refuse(reason);
    }
}

fn control(node: &Arc<NodeInner>, peer: &Arc<Peer>, c: Control) -> Result<(), Error> {
    match c {
        Control::Heartbeat => {}
        Control::Ack { channel, lane, seqs } => peer.acked(&channel, lane, &seqs),
        Control::Refused { target, tag, replies, reason } => {
            node.shared.stats.refused_by_peer.fetch_add(1, Ordering::Relaxed);
            // Rule 8.
            let err = match &reason {
                RefuseReason::TypeMismatch { .. } => {
                    types::static_tag_name(tag).map(|tag| AskError::UnknownType { tag })
                }
                RefuseReason::UnknownType { tag } => {
                    types::static_tag_name(*tag).map(|tag| AskError::UnknownType { tag })
                }
                RefuseReason::NoActor => Some(AskError::Gone),
                RefuseReason::Full => Some(AskError::Full),
                RefuseReason::Undecodable(_) => None,
            };
            let failed: Vec<_> = {
                let mut p = node.pending.lock();
                replies.iter().filter_map(|r| p.remove(r)).collect()
            };
            for (_, p) in failed {
                match err {
                    Some(e) => p.fail(e),
                    None => drop(p),
                }
            }
            let reason = match reason {
                RefuseReason::TypeMismatch { found } => {
                    format!("type mismatch: sent {} but the actor accepts {found}", types::tag_name_of(tag))
                }
                RefuseReason::UnknownType { tag } => {
                    format!("the actor's node does not know type {} the message carries", types::tag_name_of(tag))
                }
                r => format!("{r:?}"),
            };
            crate::warn_limited!(peer = %Esc(&peer.addr), ?target, "message refused: {}", Esc(&reason));
            node.emit(NodeEvent::Refused { addr: peer.addr.clone(), target: format!("{target:?}"), reason });
        }
        Control::Monitor { mid, target } => match node.resolve_local(&target).filter(|(_, e)| e.any.is_alive()) {
            Some((id, ex)) => {
                let held = {
                    let r = peer.relations.lock();
                    (!r.monitors_in.contains_key(&mid)).then_some(r.monitors_in.len())
                };
                let max = node.cfg.max_monitors_per_peer;
                if held.is_some_and(|n| n >= max) {
                    return Err(limit_close(
                        node,
                        peer,
                        format!("the peer holds {max} monitors on this node's actors, max_monitors_per_peer"),
                    ));
                }
                let local_mid = remote_api::new_monitor_id();
                let proxy = troupe::AnyRef::from_remote(Arc::new(WatcherProxy { peer: peer.clone(), mid }));
                let old = peer.relations.lock().monitors_in.insert(mid, (ex.any.clone(), local_mid));
                if let Some((old_any, old_mid)) = old {
                    // Rule 5: a reused monitor number replaces the old monitor on the actor
                    // too; it used to stay there, one leaked entry per repeat (issue 36).
                    remote_api::remove_monitor(&old_any, old_mid);
                }
                if !remote_api::add_monitor(&ex.any, local_mid, proxy) {
                    peer.relations.lock().monitors_in.remove(&mid);
                    peer.control(&Control::Down { mid, actor: id, reason: troupe::ExitReason::NoProc });
                }
            }
            None => {
                peer.control(&Control::Down { mid, actor: target_key(&target), reason: troupe::ExitReason::NoProc })
            }
        },
        Control::Demonitor { mid } => {
            if let Some((any, id)) = peer.relations.lock().monitors_in.remove(&mid) {
                remote_api::remove_monitor(&any, id);
            }
        }
        Control::Down { mid, actor: _, reason } => {
            let w = peer.relations.lock().monitors_out.remove(&mid);
            if let Some((key, w)) = w {
                crate::node::conn::fire(peer, key, mid, w, reason);
            }
        }
        Control::Downs { actor: _, reason, mids } => peer.receive_downs(&reason, &mids),
        Control::Link { from, to } => match node.resolve_local(&to).filter(|(_, e)| e.any.is_alive()) {
            Some((id, ex)) => {
                let held = {
                    let r = peer.relations.lock();
                    (!r.links.contains_key(&(id, from))).then_some(r.links.len())
                };
                let max = node.cfg.max_links_per_peer;
                if held.is_some_and(|n| n >= max) {
                    return Err(limit_close(
                        node,
                        peer,
                        format!("the peer holds {max} links with this node's actors, max_links_per_peer"),
                    ));
                }
                let proxy = RemoteActor::new(node, peer.clone(), Target::Id(from), 0, SendOptions::default());
                let proxy = troupe::AnyRef::from_remote(Arc::new(proxy));
                peer.relations.lock().links.insert((id, from), (ex.any.clone(), to.clone()));
                if !remote_api::add_link(&ex.any, proxy) {
                    peer.relations.lock().links.remove(&(id, from));
                    peer.control(&Control::Exit { from: to, to: Target::Id(from), reason: troupe::ExitReason::NoProc });
                }
            }
            None => peer.control(&Control::Exit { from: to, to: Target::Id(from), reason: troupe::ExitReason::NoProc }),
        },
        Control::Unlink { from, to } => {
            if let Some((id, ex)) = node.resolve_local(&to) {
                peer.relations.lock().links.remove(&(id, from));
                remote_api::remove_link(&ex.any, ActorId::new(peer.index, from));
            }
        }
        Control::Exit { from, to, reason } => {
            let key = target_key(&from);
            let local = match &to {
                Target::Id(id) => peer.relations.lock().links.remove(&(*id, key)).map(|(a, _)| a),
                Target::Name(_) => node.resolve_local(&to).map(|(_, e)| e.any.clone()),
            };
            if let Some(local) = local {
                let _ = remote_api::deliver_exit(&local, ActorId::new(peer.index, key), reason);
            }
        }
        Control::Kill { target } => {
            if let Some((_, ex)) = node.resolve_local(&target) {
                ex.any.kill();
            }
        }
        Control::Stop { target, reason } => {
            if let Some((_, ex)) = node.resolve_local(&target) {
                ex.any.stop(reason);
            }
        }
        Control::Lookup { req, name } => {
            let found = node
                .resolve_local(&Target::Name(name))
                .filter(|(_, e)| e.any.is_alive())
                .map(|(id, e)| (id, e.tag, e.tag_name.to_owned()));
            peer.control(&Control::LookupReply { req, found });
        }
        Control::LookupReply { req, found } => {
            if let Some(tx) = node.lookups.lock().remove(&req) {
                let _ = tx.send(found);
            }
        }
        Control::Globals { entries, full } => {
            let over = {
                let mut g = node.globals.write();
                if full {
                    g.remove_node(&peer.addr);
                }
                let me = &node.shared.me.listen;
                let (per_peer, all) = (node.cfg.max_globals_per_peer, node.cfg.max_globals);
                let mut over = None;
                for e in entries {
                    // Rule 7: a name new to this peer must fit both budgets.
                    if g.get(&e.name).is_none_or(|old| old.node != peer.addr) {
                        if g.count_of(&peer.addr) >= per_peer {
                            over = Some(format!("the peer holds {per_peer} global names, max_globals_per_peer"));
                            break;
                        }
                        if g.len() - g.count_of(me) >= all {
                            over = Some(format!("peers hold {all} global names on this node, max_globals"));
                            break;
                        }
                    }
                    merge_global(&mut g, e, &peer.addr);
                }
                over
            };
            if let Some(why) = over {
                return Err(limit_close(node, peer, why));
            }
        }
        c @ (Control::TunnelOpen { .. } | Control::TunnelData { .. } | Control::TunnelClose { .. }) => {
            crate::node::relay::control(node, peer, c);
        }
        Control::GlobalGone { name } => {
            let mut g = node.globals.write();
            if g.get(&name).is_some_and(|e| e.node == peer.addr) {
                g.remove(&name);
            }
        }
    }
    Ok(())
}

/// Rules 4 and 6: a peer went past a budget; its session is closed with `why`, logged
/// (rate-limited) and counted (`limit_closes`).
pub(crate) fn limit_close(node: &Arc<NodeInner>, peer: &Arc<Peer>, why: String) -> Error {
    node.shared.stats.limit_closes.fetch_add(1, Ordering::Relaxed);
    crate::warn_limited!(peer_addr = %Esc(&peer.addr), reason = "limit", error = %Esc(&why), "closing the session: a budget was exceeded");
    crate::node::conn::peer_down(node, peer, None, crate::node::conn::Cause::Limit, &why);
    ErrorKind::LimitExceeded(why).into()
}

/// Two nodes claiming one name: the lower node address keeps it, on every node alike.
fn merge_global(g: &mut crate::node::globals::Globals, mut e: GlobalEntry, from: &str) {
    e.node = crate::node::canonical(from);
    match g.get(&e.name) {
        Some(old) if old.node != e.node && old.node < e.node => {}
        _ => {
            g.insert(e);
        }
    }
}
