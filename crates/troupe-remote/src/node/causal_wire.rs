//! Causal delivery on the wire: the node-wide [`crate::causal::CausalOrder`] per causal label,
//! the `CAUSAL` frame that carries a stamp in front of an ordinary data frame's body, and the
//! hold of frames that arrived before their causes.
//!
//! Rules:
//! 1. A send with `SendOptions::causal(label)` is stamped by this node's order for `label`
//!    (one per node and label, shared by every actor of the node), with the destination node
//!    keyed by the stable hash of its address; the stamp counts only if the frame was queued
//!    (`CausalOrder::stamp_with`). Nodes know themselves by the address they advertise, which
//!    is the address their peers key them by.
//! 2. A `CAUSAL` frame's body is `u16 label length, label, u32 stamp length, stamp (codec),
//!    then a DATA body`. The DATA body must carry no ack sequence (causal and acknowledged
//!    delivery do not combine: such a send fails, and such a frame is malformed).
//! 3. A received frame goes through the label's order; the frames it releases are handled as
//!    data frames, in order, while the label's lock is held, so two connections releasing at
//!    once cannot reorder deliveries into one mailbox.
//! 4. Bounds: at most [`MAX_LABELS`] labels per node (a frame for a new label past it is
//!    dropped and counted), [`MAX_HELD`] held frames per label (past it the arriving frame is
//!    dropped and counted, `causal_refused`), [`MAX_NODES`] nodes named in one stamp (more is a
//!    malformed frame) and known to one label's state (a frame that would grow it past that is
//!    dropped and counted), so a misbehaving peer cannot grow a node's memory without bound. A
//!    frame whose cause was lost (a dropped frame, a crashed sender) stays held while its
//!    sender's session lasts: `causal_held` in the stats says how many wait now.
//! 5. What is held is also bounded in bytes (a frame's size plus [`STAMP_ENTRY_COST`] per node
//!    its stamp names, for the decoded stamp): per label (`max_causal_held_bytes_per_label`),
//!    per sending session (`max_causal_held_bytes_per_session`) and per node
//!    (`max_causal_held_bytes`). A frame that would go past any of them closes its sender's
//!    session instead (`limit_closes`, the reason logged rate-limited); the node serves
//!    everyone else. Before issue 36 only the count was bounded: 2,808 frames of 1 MiB held
//!    3.3 GB.
//! 6. When a sender's session ends (closed for a budget or any other reason), or a connection
//!    of a sender this node has no session with closes, every frame it sent that is still held
//!    is dropped and its bytes freed (`causal_dropped`); frames of other senders that waited on
//!    them stay held, as after a loss.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::causal::{CausalOrder, Stamp};
use crate::codec::{self, tag_hash};
use crate::error::Error;
use crate::frame::DataHeader;
use crate::logging::Esc;
use crate::node::canonical;
use crate::node::peer::Peer;

/// Labels one node keeps order for (rule 4).
pub(crate) const MAX_LABELS: usize = 1024;
/// Frames one label may hold back (rule 4).
pub(crate) const MAX_HELD: usize = 65_536;
/// Nodes a stamp may name (its clock's entries, its order buffer's destinations and each of
/// their clocks' entries), and a label's state may know (rule 4).
pub(crate) const MAX_NODES: usize = 4096;

/// Bytes a held frame is charged per node its stamp names (rule 5): a decoded clock entry in
/// a `BTreeMap`, with its share of the tree's nodes.
pub(crate) const STAMP_ENTRY_COST: usize = 48;

/// A frame held until its causes are delivered.
pub(crate) struct Held {
    pub(crate) peer: Arc<Peer>,
    pub(crate) body: Vec<u8>,
    /// What it is charged against the byte budgets (rule 5).
    pub(crate) cost: usize,
}

/// One label's order and the bytes it holds.
struct Label {
    order: CausalOrder<Held>,
    bytes: usize,
}

/// The byte budgets of rule 5.
#[derive(Clone, Copy)]
pub(crate) struct Budgets {
    pub(crate) per_label: usize,
    pub(crate) per_session: usize,
    pub(crate) per_node: usize,
}

/// A node's causal orders, one per label.
pub(crate) struct CausalState {
    me: u64,
    labels: Mutex<HashMap<String, Label>>,
    /// Bytes held over all labels (rule 5).
    bytes: std::sync::atomic::AtomicU64,
    /// Frames dropped because their sender's session ended (rule 6).
    dropped: std::sync::atomic::AtomicU64,
}

/// The key a node is known by in vector clocks (rule 1).
pub(crate) fn node_key(addr: &str) -> u64 {
    tag_hash(&canonical(addr))
}

/// Why a causal frame was not taken.
pub(crate) enum Dropped {
    /// Too many labels.
    Labels,
    /// The label's hold is full.
    Held,
    /// The label's state knows too many nodes.
    Nodes,
    /// Holding it would pass a byte budget (rule 5): the sender's session must close.
    Budget(String),
}

impl CausalState {
    /// The state of the node advertised at `me`.
    pub(crate) fn new(me: &str) -> Self {
        Self {
            me: node_key(me),
            labels: Mutex::new(HashMap::new()),
            bytes: Default::default(),
            dropped: Default::default(),
        }
    }

    /// The label's order, made on first use; `None` when the node already keeps
    /// [`MAX_LABELS`] others (rule 4).
    fn order<'a>(&self, labels: &'a mut HashMap<String, Label>, label: &str) -> Option<&'a mut Label> {
        if !labels.contains_key(label) && labels.len() >= MAX_LABELS {
            return None;
        }
        Some(
            labels
                .entry(label.to_owned())
                .or_insert_with(|| Label { order: CausalOrder::new(self.me, MAX_HELD), bytes: 0 }),
        )
    }

    /// Rule 1: stamps a send to `dest` under `label` and runs `send` with the stamp.
    pub(crate) fn send<R>(
        &self,
        label: &str,
        dest: &str,
        send: impl FnOnce(&Stamp) -> Result<R, crate::node::peer::SendFail>,
    ) -> Result<R, crate::node::peer::SendFail> {
        let mut labels = self.labels.lock();
        let Some(order) = self.order(&mut labels, label) else {
            return Err(crate::node::peer::SendFail::Encode(Error::malformed(format!(
                "more than {MAX_LABELS} causal labels on this node; use fewer labels"
            ))));
        };
        order.order.stamp_with(node_key(dest), send)
    }

    /// Rules 3-5: takes an arrived frame and runs `deliver` on every frame it releases, in
    /// order, under the label's lock.
    pub(crate) fn receive(
        &self,
        label: &str,
        stamp: Stamp,
        held: Held,
        budgets: Budgets,
        mut deliver: impl FnMut(Held),
    ) -> Result<(), Dropped> {
        let mut labels = self.labels.lock();
        let l = self.order(&mut labels, label).ok_or(Dropped::Labels)?;
        if l.order.known_nodes() > MAX_NODES {
            return Err(Dropped::Nodes);
        }
        if l.order.would_hold(&stamp) {
            // Rule 5: a frame that would be held must fit every byte budget.
            let cost = held.cost;
            let session = held.peer.causal_bytes.load(Ordering::Relaxed) as usize;
            let node = self.bytes.load(Ordering::Relaxed) as usize;
            let why = if l.bytes + cost > budgets.per_label {
                Some(format!(
                    "causal label {:?} would hold over {} bytes, max_causal_held_bytes_per_label",
                    Esc(label),
                    budgets.per_label
                ))
            } else if session + cost > budgets.per_session {
                Some(format!(
                    "the session would hold over {} bytes of causal frames, max_causal_held_bytes_per_session",
                    budgets.per_session
                ))
            } else if node + cost > budgets.per_node {
                Some(format!(
                    "the node would hold over {} bytes of causal frames, max_causal_held_bytes",
                    budgets.per_node
                ))
            } else {
                None
            };
            if let Some(why) = why {
                return Err(Dropped::Budget(why));
            }
        }
        let waited = l.order.stats().waited;
        let (cost, peer) = (held.cost, held.peer.clone());
        let released = l.order.receive(stamp, held).map_err(|_| Dropped::Held)?;
        if l.order.stats().waited > waited {
            l.bytes += cost;
            peer.causal_bytes.fetch_add(cost as u64, Ordering::Relaxed);
            self.bytes.fetch_add(cost as u64, Ordering::Relaxed);
        }
        let mut released = released.into_iter();
        if let Some(first) = released.next() {
            // The arrived frame itself, delivered at once: it was never charged.
            deliver(first);
        }
        for h in released {
            l.bytes -= h.cost;
            self.uncharge(&h);
            deliver(h);
        }
        Ok(())
    }

    fn uncharge(&self, h: &Held) {
        h.peer.causal_bytes.fetch_sub(h.cost as u64, Ordering::Relaxed);
        self.bytes.fetch_sub(h.cost as u64, Ordering::Relaxed);
    }

    /// Rule 6: drops every held frame `peer` sent; the bytes they were charged.
    pub(crate) fn drop_peer(&self, peer: &Arc<Peer>) -> usize {
        if peer.causal_bytes.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        let (mut n, mut bytes) = (0, 0);
        for l in self.labels.lock().values_mut() {
            for h in l.order.drop_held(|h| Arc::ptr_eq(&h.peer, peer)) {
                l.bytes -= h.cost;
                bytes += h.cost;
                self.uncharge(&h);
                n += 1;
            }
        }
        self.dropped.fetch_add(n, Ordering::Relaxed);
        bytes
    }

    /// Bytes held now, over all labels (rule 5).
    pub(crate) fn held_bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Frames dropped because their sender's session ended (rule 6).
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Frames held now, over all labels.
    pub(crate) fn held(&self) -> u64 {
        self.labels.lock().values().map(|o| o.order.held() as u64).sum()
    }

    /// The counters of every label, added up.
    pub(crate) fn counts(&self) -> crate::causal::CausalStats {
        self.labels.lock().values().fold(crate::causal::CausalStats::default(), |mut t, o| {
            let s = o.order.stats();
            t.stamped += s.stamped;
            t.delivered += s.delivered;
            t.waited += s.waited;
            t.refused += s.refused;
            t.duplicates += s.duplicates;
            t
        })
    }
}

/// Rule 5: what a frame with this label, stamp and DATA body is charged while held.
pub(crate) fn cost(label: &str, stamp: &Stamp, body: &[u8]) -> usize {
    let named = stamp.clock.entries().count() + stamp.deps.values().map(|c| 1 + c.entries().count()).sum::<usize>();
    body.len() + label.len() + STAMP_ENTRY_COST * (named + 1)
}

/// Rule 2: writes the causal prefix of a frame body.
pub(crate) fn write_prefix(label: &str, stamp: &Stamp, out: &mut Vec<u8>) -> Result<(), Error> {
    let len = u16::try_from(label.len()).map_err(|_| Error::malformed("causal label longer than 65535 bytes"))?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(label.as_bytes());
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    codec::encode_into(stamp, out)?;
    let n = u32::try_from(out.len() - at - 4).map_err(|_| Error::malformed("causal stamp too large"))?;
    out[at..at + 4].copy_from_slice(&n.to_le_bytes());
    Ok(())
}

/// Rule 2: reads a causal frame body into (label, stamp, DATA body), checking the DATA body
/// parses and carries no ack sequence.
pub(crate) fn read(body: &[u8]) -> Result<(String, Stamp, &[u8]), Error> {
    let short = || Error::malformed("causal frame shorter than its prefix");
    let len = u16::from_le_bytes(body.get(..2).ok_or_else(short)?.try_into().map_err(|_| short())?) as usize;
    let label = body.get(2..2 + len).ok_or_else(short)?;
    let label = std::str::from_utf8(label).map_err(|_| Error::malformed("causal label is not UTF-8"))?.to_owned();
    let at = 2 + len;
    let n = u32::from_le_bytes(body.get(at..at + 4).ok_or_else(short)?.try_into().map_err(|_| short())?) as usize;
    let stamp_bytes = body.get(at + 4..at + 4 + n).ok_or_else(short)?;
    let stamp: Stamp = codec::decode(stamp_bytes)?;
    let named = stamp.clock.entries().count() + stamp.deps.values().map(|c| 1 + c.entries().count()).sum::<usize>();
    if named > MAX_NODES {
        return Err(Error::malformed(format!("causal stamp names {named} nodes, over {MAX_NODES}")));
    }
    let rest = &body[at + 4 + n..];
    let (h, _, _) = DataHeader::read(rest)?;
    if h.ack_seq != 0 {
        return Err(Error::malformed(
            "a causal frame carries an ack sequence; causal and acknowledged delivery do not combine",
        ));
    }
    Ok((label, stamp, rest))
}

/// Counts a dropped causal frame and says why, rate-limited.
pub(crate) fn dropped(node: &crate::node::NodeInner, peer: &Peer, why: Dropped) {
    node.shared.stats.causal_refused.fetch_add(1, Ordering::Relaxed);
    let why = match why {
        Dropped::Labels => format!("this node already keeps {MAX_LABELS} causal labels"),
        Dropped::Held => format!("{MAX_HELD} frames of its label already wait for their causes"),
        Dropped::Nodes => format!("its label's state already names over {MAX_NODES} nodes"),
        Dropped::Budget(why) => why,
    };
    crate::warn_limited!(peer = %crate::logging::Esc(&peer.addr), "dropped a causal frame: {why}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Target;

    fn frame(label: &str, stamp: &Stamp, ack_seq: u64) -> Vec<u8> {
        let mut b = Vec::new();
        write_prefix(label, stamp, &mut b).unwrap();
        DataHeader { target: Target::Name("sink".into()), tag: 7, ack_seq }.write(&mut b).unwrap();
        b.push(0); // no reply handles
        b
    }

    #[test]
    fn a_frame_reads_back_and_every_truncation_is_an_error() {
        let stamp = CausalOrder::<()>::new(1, 4).stamp(2);
        let b = frame("chat", &stamp, 0);
        let (label, s, rest) = read(&b).unwrap();
        assert_eq!((label.as_str(), &s), ("chat", &stamp));
        assert!(DataHeader::read(rest).is_ok());
        for cut in 0..b.len() - 1 {
            assert!(read(&b[..cut]).is_err(), "a frame cut at {cut} bytes must not parse");
        }
    }

    #[test]
    fn an_ack_sequence_or_too_many_nodes_is_malformed() {
        let stamp = CausalOrder::<()>::new(1, 4).stamp(2);
        let e = read(&frame("l", &stamp, 9)).unwrap_err();
        assert!(e.to_string().contains("do not combine"), "{e}");
        let deps = (0..MAX_NODES as u64).map(|d| (d + 10, [(1, 1)].into_iter().collect())).collect();
        let big = Stamp { sender: 1, clock: [(1, 2)].into_iter().collect(), deps };
        let e = read(&frame("l", &big, 0)).unwrap_err();
        assert!(e.to_string().contains("names"), "{e}");
    }
}
