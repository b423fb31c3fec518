//! Plumtree (Leitão, Pereira, Rodrigues, SRDS 2007): broadcast over the peer-to-peer overlay,
//! as a state machine without I/O. Messages travel eagerly along a spanning tree that builds
//! itself, and announcements (`IHave`) travel lazily along the other overlay links to repair
//! it when a tree link fails.
//!
//! Rules:
//! 1. A new neighbour (HyParView's active view) starts as an eager peer; a lost one leaves
//!    both sets.
//! 2. A message seen for the first time is delivered, pushed in full to every eager peer but
//!    its sender and announced (`IHave`, batched per tick) to every lazy peer but its sender;
//!    its sender becomes an eager peer.
//! 3. A message seen again moves its sender to the lazy peers and sends it `Prune` (that link
//!    is not needed in the tree).
//! 4. `Prune` moves its sender to the lazy peers.
//! 5. An announcement of an unknown message starts a timer; when it expires without the
//!    message, the first announcer is grafted (`Graft`: it becomes eager and sends the message)
//!    and the next announcer gets a shorter timer.
//! 6. `Graft` makes its sender eager and, when this node holds the message, sends it.
//! 7. Known message ids are kept up to `max_known`; the oldest are forgotten first.
//! 8. A new neighbour is announced (`IHave`, in the next tick's batch) the last
//!    `announce_on_up` messages this node holds, so a message that was lost while a link was
//!    down (a connection dropped under load, the overlay healing around a failure) is grafted
//!    over the link that replaces it, instead of being missed for good.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A broadcast's id: its origin and the origin's sequence number.
pub type MsgId = (String, u64);

/// Plumtree's parameters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PlumtreeConfig {
    /// Wait for the message after its first announcement before grafting.
    pub graft_timeout_ms: u64,
    /// Wait after a graft before grafting the next announcer.
    pub graft_retry_ms: u64,
    /// Message ids (and payloads) remembered.
    pub max_known: usize,
    /// The most recent messages announced to a neighbour when it comes up (rule 8).
    pub announce_on_up: usize,
}

impl Default for PlumtreeConfig {
    fn default() -> Self {
        Self { graft_timeout_ms: 200, graft_retry_ms: 100, max_known: 10_000, announce_on_up: 32 }
    }
}

/// Plumtree's messages.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PtMsg {
    /// A broadcast in full.
    Gossip {
        /// Its id.
        id: MsgId,
        /// Hops from its origin.
        round: u32,
        /// Its payload.
        payload: Arc<Vec<u8>>,
    },
    /// Announcements of broadcasts the sender holds.
    IHave {
        /// Their ids and rounds.
        ids: Vec<(MsgId, u32)>,
    },
    /// Send me this one, and keep me eager.
    Graft {
        /// The id.
        id: MsgId,
        /// Its round.
        round: u32,
    },
    /// Stop pushing to me in full.
    Prune,
}

impl PtMsg {
    /// Bytes on the wire, estimated (a 16-byte header plus ids and payload).
    #[must_use]
    pub fn size(&self) -> usize {
        16 + match self {
            Self::Gossip { id, payload, .. } => id.0.len() + 12 + payload.len(),
            Self::IHave { ids } => ids.iter().map(|(id, _)| id.0.len() + 12).sum(),
            Self::Graft { id, .. } => id.0.len() + 12,
            Self::Prune => 1,
        }
    }
}

/// What Plumtree asks its driver to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PtOut {
    /// Send this message to this neighbour.
    Send(String, PtMsg),
    /// Deliver this broadcast to the application.
    Deliver(MsgId, Arc<Vec<u8>>),
}

struct Missing {
    announcers: VecDeque<(String, u32)>,
    due: u64,
}

/// One node's Plumtree state.
pub struct Plumtree {
    me: String,
    cfg: PlumtreeConfig,
    eager: BTreeSet<String>,
    lazy: BTreeSet<String>,
    known: HashMap<MsgId, (u32, Arc<Vec<u8>>)>,
    order: VecDeque<MsgId>,
    missing: BTreeMap<MsgId, Missing>,
    announce: BTreeMap<String, Vec<(MsgId, u32)>>,
    seq: u64,
}

impl Plumtree {
    /// A node with no neighbours.
    #[must_use]
    pub fn new(me: &str, cfg: PlumtreeConfig) -> Self {
        Self {
            me: me.to_owned(),
            cfg,
            eager: BTreeSet::new(),
            lazy: BTreeSet::new(),
            known: HashMap::new(),
            order: VecDeque::new(),
            missing: BTreeMap::new(),
            announce: BTreeMap::new(),
            seq: 0,
        }
    }

    /// The eager peers (tree links).
    #[must_use]
    pub fn eager(&self) -> &BTreeSet<String> {
        &self.eager
    }

    /// The lazy peers.
    #[must_use]
    pub fn lazy(&self) -> &BTreeSet<String> {
        &self.lazy
    }

    /// Rules 1 and 8.
    pub fn neighbor_up(&mut self, p: &str) {
        self.lazy.remove(p);
        self.eager.insert(p.to_owned());
        let recent: Vec<(MsgId, u32)> = self
            .order
            .iter()
            .rev()
            .filter_map(|id| self.known.get(id).map(|(round, _)| (id.clone(), round + 1)))
            .take(self.cfg.announce_on_up)
            .collect();
        if !recent.is_empty() {
            let batch = self.announce.entry(p.to_owned()).or_default();
            batch.extend(recent.into_iter().rev());
        }
    }

    /// Rule 1.
    pub fn neighbor_down(&mut self, p: &str) {
        self.eager.remove(p);
        self.lazy.remove(p);
        self.announce.remove(p);
        for m in self.missing.values_mut() {
            m.announcers.retain(|(a, _)| a != p);
        }
    }

    fn remember(&mut self, id: MsgId, round: u32, payload: Arc<Vec<u8>>) {
        if self.known.len() >= self.cfg.max_known {
            if let Some(old) = self.order.pop_front() {
                self.known.remove(&old);
            }
        }
        self.order.push_back(id.clone());
        self.known.insert(id, (round, payload));
    }

    fn spread(&mut self, id: &MsgId, round: u32, payload: &Arc<Vec<u8>>, except: Option<&str>, out: &mut Vec<PtOut>) {
        for p in self.eager.iter().filter(|p| Some(p.as_str()) != except) {
            out.push(PtOut::Send(p.clone(), PtMsg::Gossip { id: id.clone(), round, payload: Arc::clone(payload) }));
        }
        for p in self.lazy.iter().filter(|p| Some(p.as_str()) != except) {
            self.announce.entry(p.clone()).or_default().push((id.clone(), round));
        }
    }

    /// Broadcasts `payload` from this node (delivered here too); returns its id.
    pub fn broadcast(&mut self, payload: Vec<u8>, out: &mut Vec<PtOut>) -> MsgId {
        self.seq += 1;
        let id = (self.me.clone(), self.seq);
        let payload = Arc::new(payload);
        self.remember(id.clone(), 0, Arc::clone(&payload));
        out.push(PtOut::Deliver(id.clone(), Arc::clone(&payload)));
        self.spread(&id, 1, &payload, None, out);
        id
    }

    /// Handles one message from neighbour `from` at time `now`.
    pub fn receive(&mut self, from: &str, msg: PtMsg, now: u64, out: &mut Vec<PtOut>) {
        match msg {
            PtMsg::Gossip { id, round, payload } => {
                if self.known.contains_key(&id) {
                    // Rule 3.
                    if self.eager.remove(from) {
                        self.lazy.insert(from.to_owned());
                        out.push(PtOut::Send(from.to_owned(), PtMsg::Prune));
                    }
                    return;
                }
                self.missing.remove(&id);
                self.remember(id.clone(), round, Arc::clone(&payload));
                out.push(PtOut::Deliver(id.clone(), Arc::clone(&payload)));
                self.spread(&id, round + 1, &payload, Some(from), out);
                self.lazy.remove(from);
                self.eager.insert(from.to_owned());
            }
            PtMsg::IHave { ids } => {
                for (id, round) in ids {
                    if self.known.contains_key(&id) {
                        continue;
                    }
                    let due = now + self.cfg.graft_timeout_ms;
                    let m = self.missing.entry(id).or_insert_with(|| Missing { announcers: VecDeque::new(), due });
                    if !m.announcers.iter().any(|(a, _)| a == from) {
                        m.announcers.push_back((from.to_owned(), round));
                    }
                }
            }
            PtMsg::Graft { id, round } => {
                self.lazy.remove(from);
                self.eager.insert(from.to_owned());
                if let Some((_, payload)) = self.known.get(&id) {
                    let payload = Arc::clone(payload);
                    out.push(PtOut::Send(from.to_owned(), PtMsg::Gossip { id, round, payload }));
                }
            }
            PtMsg::Prune => {
                if self.eager.remove(from) {
                    self.lazy.insert(from.to_owned());
                }
            }
        }
    }

    /// Advances time: sends the batched announcements and grafts what is overdue (rule 5).
    pub fn tick(&mut self, now: u64, out: &mut Vec<PtOut>) {
        for (p, ids) in std::mem::take(&mut self.announce) {
            if !ids.is_empty() {
                out.push(PtOut::Send(p, PtMsg::IHave { ids }));
            }
        }
        let due: Vec<MsgId> = self.missing.iter().filter(|(_, m)| m.due <= now).map(|(id, _)| id.clone()).collect();
        for id in due {
            let Some(m) = self.missing.get_mut(&id) else { continue };
            match m.announcers.pop_front() {
                Some((p, round)) => {
                    m.due = now + self.cfg.graft_retry_ms;
                    self.lazy.remove(&p);
                    self.eager.insert(p.clone());
                    out.push(PtOut::Send(p, PtMsg::Graft { id, round }));
                }
                None => {
                    self.missing.remove(&id);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sends_to<'a>(out: &'a [PtOut], to: &'a str) -> impl Iterator<Item = &'a PtMsg> + 'a {
        out.iter().filter_map(move |o| match o {
            PtOut::Send(p, m) if p == to => Some(m),
            _ => None,
        })
    }

    #[test]
    fn rule_8_a_message_missed_while_the_link_was_down_is_grafted_when_it_comes_back() {
        let cfg = PlumtreeConfig::default();
        let (mut a, mut b) = (Plumtree::new("a", cfg.clone()), Plumtree::new("b", cfg.clone()));
        a.neighbor_up("b");
        b.neighbor_up("a");
        // The link drops; `a` broadcasts meanwhile, and `b` gets nothing.
        a.neighbor_down("b");
        b.neighbor_down("a");
        let mut out = Vec::new();
        let id = a.broadcast(b"while-down".to_vec(), &mut out);
        assert_eq!(sends_to(&out, "b").count(), 0, "b is no neighbour of a now");
        // The link is back: a's next tick announces what it holds.
        a.neighbor_up("b");
        b.neighbor_up("a");
        let mut out = Vec::new();
        a.tick(1_000, &mut out);
        let ihave: Vec<PtMsg> = sends_to(&out, "b").cloned().collect();
        assert!(matches!(&ihave[..], [PtMsg::IHave { ids }] if ids.iter().any(|(i, _)| *i == id)), "{ihave:?}");
        // b grafts it after its timeout and a sends it in full: b delivers it.
        let mut out = Vec::new();
        for m in ihave {
            b.receive("a", m, 1_000, &mut out);
        }
        b.tick(1_000 + cfg.graft_timeout_ms, &mut out);
        let graft: Vec<PtMsg> = sends_to(&out, "a").cloned().collect();
        assert!(matches!(&graft[..], [PtMsg::Graft { id: g, .. }] if *g == id), "{graft:?}");
        let mut out = Vec::new();
        a.receive("b", graft[0].clone(), 1_400, &mut out);
        let gossip: Vec<PtMsg> = sends_to(&out, "b").cloned().collect();
        let mut out = Vec::new();
        for m in gossip {
            b.receive("a", m, 1_400, &mut out);
        }
        assert!(out.iter().any(|o| matches!(o, PtOut::Deliver(i, p) if *i == id && p.as_slice() == b"while-down")));
    }

    #[test]
    fn rule_8_announces_only_the_most_recent_messages_and_nothing_already_known_is_grafted() {
        let cfg = PlumtreeConfig { announce_on_up: 2, ..PlumtreeConfig::default() };
        let mut a = Plumtree::new("a", cfg.clone());
        let mut out = Vec::new();
        let ids: Vec<MsgId> = (0..5).map(|i| a.broadcast(vec![i], &mut out)).collect();
        a.neighbor_up("b");
        let mut out = Vec::new();
        a.tick(0, &mut out);
        let announced: Vec<MsgId> = sends_to(&out, "b")
            .flat_map(|m| match m {
                PtMsg::IHave { ids } => ids.iter().map(|(i, _)| i.clone()).collect(),
                _ => Vec::new(),
            })
            .collect();
        assert_eq!(announced, ids[3..].to_vec(), "the two newest, oldest first");
        // A neighbour that holds them already grafts nothing.
        let mut b = Plumtree::new("b", cfg);
        let mut got = Vec::new();
        for id in &ids {
            b.receive("c", PtMsg::Gossip { id: id.clone(), round: 1, payload: Arc::new(Vec::new()) }, 0, &mut got);
        }
        let mut out = Vec::new();
        b.receive("a", PtMsg::IHave { ids: ids.iter().map(|i| (i.clone(), 1)).collect() }, 0, &mut out);
        b.tick(10_000, &mut out);
        assert!(!out.iter().any(|o| matches!(o, PtOut::Send(_, PtMsg::Graft { .. }))), "{out:?}");
    }
}
