//! HyParView (Leitão, Pereira, Rodrigues, DSN 2007): the peer-to-peer overlay's membership, as
//! a state machine without I/O. Each node keeps a small *active* view (its overlay neighbours,
//! kept symmetric) and a larger *passive* view (a reserve to heal the active view from).
//!
//! Rules:
//! 1. This node is in neither view; the views are disjoint; `active.len() <= active_size` and
//!    `passive.len() <= passive_size`.
//! 2. Join: the contact adds the joiner to its active view, tells it (`Added`, so the joiner adds
//!    the contact: active views are symmetric), and sends `ForwardJoin(joiner, arwl)` to every
//!    other active neighbour.
//! 3. `ForwardJoin(j, ttl)`: with `ttl == 0` or no other active neighbour, the receiver adds `j`
//!    to its active view (and tells `j`); otherwise, at `ttl == prwl` it adds `j` to its
//!    passive view, and forwards `ForwardJoin(j, ttl - 1)` to a random active neighbour other
//!    than the sender.
//! 4. Adding to a full active view first drops a random neighbour, which is told
//!    (`Disconnect`) and moved to the passive view (and moves this node to its own).
//! 5. A failed active neighbour (the transport says so) is removed; a node whose active view is
//!    not full asks one random passive peer at a time `Neighbor(high)` when its active view is
//!    empty, `Neighbor(low)` otherwise (or `high` by rule 8). A `high` request is always
//!    accepted; a `low` one only with room. A failed candidate is dropped from the passive view;
//!    a refused one stays there (it is alive, and may be the only peer this node knows outside
//!    its part). The next candidate is tried on the next tick, and at most [`ESCALATE_AFTER`]
//!    `low` requests may be refused per shuffle period (then the node waits for the next one).
//! 6. Every `shuffle_ms` a node sends itself plus `shuffle_ka` active and `shuffle_kp` passive
//!    peers on a random walk of `shuffle_ttl` hops; the walk's end answers with as many of its
//!    passive peers, and both merge what they got into their passive views (evicting at random).
//! 7. Every outgoing message is bounded by the views' sizes; every walk by its ttl.
//! 8. Escalation: a node whose active view has been neither empty nor full for a whole shuffle
//!    period, and which had [`ESCALATE_AFTER`] `low` requests refused in that period, sends its
//!    next request (one, in the next period) as `high`. Without it a part whose every node is
//!    full never lets in a part that knows only it (a split as the overlay forms: a full
//!    4-clique and a triangle at `active_size = 3`). The accepter drops a random neighbour (rule
//!    4), which must itself be short for a whole period before it may escalate: a node that
//!    stays short for good (an odd sum of view sizes) moves the gap at most once per period.
//!
//! Where this departs from the paper: the paper sends `high` only from an empty active view and
//! retries refused requests without a cap; rules 5's cap and 8 are this project's. Rule 8 costs
//! some churn (in the simulator, at 7 nodes and `active_size = 3`, one link replaced every two
//! shuffle periods for good), and an escalation can cut a bridge: the parts are then apart
//! until the cut-off side escalates in turn (about two periods).

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Rules 5 and 8: `low` requests refused per shuffle period before a node stops asking until
/// the next period, and escalates if it stayed short through the whole period.
pub const ESCALATE_AFTER: u32 = 3;

/// HyParView's parameters (the paper's defaults for about a thousand nodes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HyParViewConfig {
    /// Active view size (the paper: log10(N) + c; 5 for up to ~10,000 nodes).
    pub active_size: usize,
    /// Passive view size.
    pub passive_size: usize,
    /// Active random walk length of a forward-join.
    pub arwl: u32,
    /// Where on the walk the joiner enters passive views.
    pub prwl: u32,
    /// Shuffle period.
    pub shuffle_ms: u64,
    /// Active peers in a shuffle sample.
    pub shuffle_ka: usize,
    /// Passive peers in a shuffle sample.
    pub shuffle_kp: usize,
    /// Hops of a shuffle walk.
    pub shuffle_ttl: u32,
}

impl Default for HyParViewConfig {
    fn default() -> Self {
        Self {
            active_size: 5,
            passive_size: 30,
            arwl: 6,
            prwl: 3,
            shuffle_ms: 10_000,
            shuffle_ka: 3,
            shuffle_kp: 4,
            shuffle_ttl: 6,
        }
    }
}

impl HyParViewConfig {
    /// Refuses sizes that cannot work, naming the key.
    pub fn validate(&self) -> Result<(), String> {
        if self.active_size == 0 {
            return Err("hyparview active_size must be at least 1 (the paper uses 5)".into());
        }
        if self.passive_size == 0 {
            return Err("hyparview passive_size must be at least 1 (the paper uses 30)".into());
        }
        if self.prwl > self.arwl {
            return Err("hyparview prwl must not exceed arwl".into());
        }
        Ok(())
    }
}

/// HyParView's messages.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HvMsg {
    /// A new node asks to join through the receiver.
    Join,
    /// Rule 3.
    ForwardJoin {
        /// The joining node.
        joiner: String,
        /// Hops left.
        ttl: u32,
    },
    /// The sender added the receiver to its active view (rule 2: symmetry).
    Added,
    /// The sender dropped the receiver from its active view (rule 4).
    Disconnect,
    /// Rule 5: may the sender join the receiver's active view?
    Neighbor {
        /// The sender's active view is empty.
        high: bool,
    },
    /// The answer to `Neighbor`.
    NeighborReply {
        /// Accepted (both sides then hold each other in their active views).
        accepted: bool,
    },
    /// Rule 6: a shuffle on its walk.
    Shuffle {
        /// Who started it (the reply goes there).
        origin: String,
        /// The peers it offers.
        sample: Vec<String>,
        /// Hops left.
        ttl: u32,
    },
    /// Rule 6: the walk's end answers.
    ShuffleReply {
        /// The peers it offers back.
        sample: Vec<String>,
    },
}

impl HvMsg {
    /// Bytes on the wire, estimated (a 16-byte header plus the addresses it carries).
    #[must_use]
    pub fn size(&self) -> usize {
        16 + match self {
            Self::ForwardJoin { joiner, .. } => joiner.len() + 4,
            Self::Shuffle { origin, sample, .. } => origin.len() + sample.iter().map(String::len).sum::<usize>() + 4,
            Self::ShuffleReply { sample } => sample.iter().map(String::len).sum(),
            _ => 1,
        }
    }
}

/// What HyParView asks its driver to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HvOut {
    /// Send this message to this peer.
    Send(String, HvMsg),
    /// A peer entered the active view (a neighbour for the broadcast layer).
    Up(String),
    /// A peer left the active view.
    Down(String),
}

/// One node's HyParView state.
pub struct HyParView {
    me: String,
    cfg: HyParViewConfig,
    active: Vec<String>,
    passive: Vec<String>,
    pending: Option<String>,
    next_shuffle: u64,
    /// Rule 5: `low` requests refused since the last shuffle.
    refused: u32,
    /// Rule 8: since when the active view has been neither empty nor full.
    short_since: Option<u64>,
    /// Rule 8: the next request goes out as `high`.
    escalate: bool,
}

impl HyParView {
    /// A node with empty views.
    #[must_use]
    pub fn new(me: &str, cfg: HyParViewConfig, now: u64) -> Self {
        let next_shuffle = now + cfg.shuffle_ms;
        Self {
            me: me.to_owned(),
            cfg,
            active: Vec::new(),
            passive: Vec::new(),
            pending: None,
            next_shuffle,
            refused: 0,
            short_since: None,
            escalate: false,
        }
    }

    /// The active view (overlay neighbours).
    #[must_use]
    pub fn active(&self) -> &[String] {
        &self.active
    }

    /// The passive view.
    #[must_use]
    pub fn passive(&self) -> &[String] {
        &self.passive
    }

    /// Joins through `contact` (rule 2).
    pub fn join(&mut self, contact: &str, out: &mut Vec<HvOut>) {
        if contact != self.me {
            out.push(HvOut::Send(contact.to_owned(), HvMsg::Join));
        }
    }

    fn add_passive(&mut self, p: &str, rng: &mut ChaCha8Rng) {
        if p == self.me || self.active.iter().any(|a| a == p) || self.passive.iter().any(|a| a == p) {
            return;
        }
        if self.passive.len() >= self.cfg.passive_size {
            let i = rng.gen_range(0..self.passive.len());
            self.passive.swap_remove(i);
        }
        self.passive.push(p.to_owned());
    }

    /// Adds `p` to the active view (rules 1 and 4); true when it was not there.
    fn add_active(&mut self, p: &str, rng: &mut ChaCha8Rng, out: &mut Vec<HvOut>) -> bool {
        if p == self.me || self.active.iter().any(|a| a == p) {
            return false;
        }
        if self.active.len() >= self.cfg.active_size {
            let i = rng.gen_range(0..self.active.len());
            let dropped = self.active.swap_remove(i);
            out.push(HvOut::Send(dropped.clone(), HvMsg::Disconnect));
            out.push(HvOut::Down(dropped.clone()));
            self.add_passive(&dropped, rng);
        }
        self.passive.retain(|x| x != p);
        self.active.push(p.to_owned());
        out.push(HvOut::Up(p.to_owned()));
        if self.active.len() >= self.cfg.active_size {
            // Rule 8: a node that was full since is short anew, whatever it was before.
            self.short_since = None;
            self.escalate = false;
        }
        true
    }

    fn remove_active(&mut self, p: &str, out: &mut Vec<HvOut>) -> bool {
        let before = self.active.len();
        self.active.retain(|x| x != p);
        let removed = self.active.len() != before;
        if removed {
            out.push(HvOut::Down(p.to_owned()));
        }
        removed
    }

    /// Handles one message from `from`.
    pub fn receive(&mut self, from: &str, msg: HvMsg, rng: &mut ChaCha8Rng, out: &mut Vec<HvOut>) {
        match msg {
            HvMsg::Join => {
                let others: Vec<String> = self.active.iter().filter(|a| *a != from).cloned().collect();
                if self.add_active(from, rng, out) {
                    out.push(HvOut::Send(from.to_owned(), HvMsg::Added));
                }
                for o in others {
                    let fj = HvMsg::ForwardJoin { joiner: from.to_owned(), ttl: self.cfg.arwl };
                    out.push(HvOut::Send(o, fj));
                }
            }
            HvMsg::ForwardJoin { joiner, ttl } => {
                let next: Vec<String> = self.active.iter().filter(|a| *a != from && **a != joiner).cloned().collect();
                if ttl == 0 || next.is_empty() {
                    if self.add_active(&joiner, rng, out) {
                        out.push(HvOut::Send(joiner, HvMsg::Added));
                    }
                } else {
                    if ttl == self.cfg.prwl {
                        self.add_passive(&joiner, rng);
                    }
                    if let Some(n) = next.choose(rng).cloned() {
                        out.push(HvOut::Send(n, HvMsg::ForwardJoin { joiner, ttl: ttl - 1 }));
                    }
                }
            }
            HvMsg::Added => {
                self.add_active(from, rng, out);
            }
            HvMsg::Disconnect => {
                if self.remove_active(from, out) {
                    self.add_passive(from, rng);
                }
            }
            HvMsg::Neighbor { high } => {
                let accept = high || self.active.len() < self.cfg.active_size;
                if accept {
                    self.add_active(from, rng, out);
                }
                out.push(HvOut::Send(from.to_owned(), HvMsg::NeighborReply { accepted: accept }));
            }
            HvMsg::NeighborReply { accepted } => {
                if self.pending.as_deref() == Some(from) {
                    self.pending = None;
                }
                if accepted {
                    self.add_active(from, rng, out);
                } else {
                    // Rule 5: the refuser stays a candidate (the paper keeps it too).
                    self.refused = self.refused.saturating_add(1);
                }
            }
            HvMsg::Shuffle { origin, sample, ttl } => {
                let next: Vec<String> = self.active.iter().filter(|a| *a != from && **a != origin).cloned().collect();
                if ttl > 0 && !next.is_empty() {
                    if let Some(n) = next.choose(rng).cloned() {
                        out.push(HvOut::Send(n, HvMsg::Shuffle { origin, sample, ttl: ttl - 1 }));
                    }
                } else if origin != self.me {
                    let mut mine = self.passive.clone();
                    mine.shuffle(rng);
                    mine.truncate(sample.len());
                    out.push(HvOut::Send(origin.clone(), HvMsg::ShuffleReply { sample: mine }));
                    for p in sample.iter().chain(std::iter::once(&origin)) {
                        self.add_passive(p, rng);
                    }
                }
            }
            HvMsg::ShuffleReply { sample } => {
                for p in &sample {
                    self.add_passive(p, rng);
                }
            }
        }
    }

    /// The transport reports `peer` unreachable (rule 5).
    pub fn peer_failed(&mut self, peer: &str, rng: &mut ChaCha8Rng, out: &mut Vec<HvOut>) {
        self.remove_active(peer, out);
        self.passive.retain(|x| x != peer);
        if self.pending.as_deref() == Some(peer) {
            self.pending = None;
        }
        self.heal(rng, out);
    }

    fn heal(&mut self, rng: &mut ChaCha8Rng, out: &mut Vec<HvOut>) {
        if self.pending.is_some() || self.active.len() >= self.cfg.active_size {
            return;
        }
        let high = self.active.is_empty() || self.escalate;
        if !high && self.refused >= ESCALATE_AFTER {
            return;
        }
        if let Some(q) = self.passive.choose(rng).cloned() {
            self.pending = Some(q.clone());
            if high {
                self.escalate = false;
            }
            out.push(HvOut::Send(q, HvMsg::Neighbor { high }));
        }
    }

    /// Advances time: shuffles (rule 6), heals a short active view (rule 5) and escalates when
    /// that has not worked for a whole period (rule 8).
    pub fn tick(&mut self, now: u64, rng: &mut ChaCha8Rng, out: &mut Vec<HvOut>) {
        let short = !self.active.is_empty() && self.active.len() < self.cfg.active_size;
        if !short {
            self.short_since = None;
        } else if self.short_since.is_none() {
            self.short_since = Some(now);
        }
        if now >= self.next_shuffle {
            self.next_shuffle = now + self.cfg.shuffle_ms;
            // A pending request that never got an answer is given up at each shuffle.
            self.pending = None;
            // Rule 8: short through the whole period, and refused as often as rule 5 allows.
            let whole_period = self.short_since.is_some_and(|t| now.saturating_sub(t) >= self.cfg.shuffle_ms);
            self.escalate = whole_period && self.refused >= ESCALATE_AFTER;
            self.refused = 0;
            if let Some(to) = self.active.choose(rng).cloned() {
                let mut a: Vec<String> = self.active.iter().filter(|x| **x != to).cloned().collect();
                a.shuffle(rng);
                a.truncate(self.cfg.shuffle_ka);
                let mut p = self.passive.clone();
                p.shuffle(rng);
                p.truncate(self.cfg.shuffle_kp);
                let mut sample = vec![self.me.clone()];
                sample.extend(a);
                sample.extend(p);
                let msg = HvMsg::Shuffle { origin: self.me.clone(), sample, ttl: self.cfg.shuffle_ttl };
                out.push(HvOut::Send(to, msg));
            }
        }
        self.heal(rng, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// `me` with active_size 3, shuffles every second, neighbours `active`, passive `passive`.
    fn node(active: &[&str], passive: &[&str]) -> (HyParView, ChaCha8Rng) {
        let cfg = HyParViewConfig { active_size: 3, passive_size: 6, shuffle_ms: 1_000, ..HyParViewConfig::default() };
        let (mut hv, mut rng, mut out) = (HyParView::new("me", cfg, 0), ChaCha8Rng::seed_from_u64(7), Vec::new());
        for a in active {
            hv.receive(a, HvMsg::Added, &mut rng, &mut out);
        }
        let sample = passive.iter().map(|p| (*p).to_owned()).collect();
        hv.receive("me", HvMsg::ShuffleReply { sample }, &mut rng, &mut out);
        (hv, rng)
    }

    /// Ticks every 50 ms up to `until`, refusing every neighbour request; returns the requests
    /// (`high` flags) sent.
    fn refuse_all(hv: &mut HyParView, rng: &mut ChaCha8Rng, from: u64, until: u64) -> Vec<bool> {
        let mut asked = Vec::new();
        for now in (from..=until).step_by(50) {
            let mut out = Vec::new();
            hv.tick(now, rng, &mut out);
            for o in out {
                if let HvOut::Send(to, HvMsg::Neighbor { high }) = o {
                    asked.push(high);
                    hv.receive(&to, HvMsg::NeighborReply { accepted: false }, rng, &mut Vec::new());
                }
            }
        }
        asked
    }

    #[test]
    fn rule_5_a_refuser_stays_in_the_passive_view_and_a_period_allows_three_refusals() {
        let (mut hv, mut rng) = node(&["n1"], &["a", "b", "c", "d"]);
        let asked = refuse_all(&mut hv, &mut rng, 50, 950);
        assert_eq!(asked, vec![false; ESCALATE_AFTER as usize], "three low requests, then quiet");
        assert_eq!(hv.passive().len(), 4, "refusers are kept: {:?}", hv.passive());
    }

    #[test]
    fn rule_8_a_node_short_for_a_whole_period_escalates_once_per_period() {
        let (mut hv, mut rng) = node(&["n1"], &["a", "b", "c", "d"]);
        // Short since 50 ms: the shuffle at 1,000 ms is too early, the one at 2,000 escalates.
        let first = refuse_all(&mut hv, &mut rng, 50, 1_950);
        assert!(!first.contains(&true), "{first:?}");
        let second = refuse_all(&mut hv, &mut rng, 2_000, 2_950);
        assert_eq!(second.iter().filter(|h| **h).count(), 1, "{second:?}");
        assert!(second[0], "the escalated request goes first: {second:?}");
    }

    #[test]
    fn rule_8_a_node_dropped_from_a_full_view_waits_a_whole_period_before_escalating() {
        let (mut hv, mut rng) = node(&["n1", "n2", "n3"], &["a", "b", "c", "d"]);
        assert!(refuse_all(&mut hv, &mut rng, 50, 1_450).is_empty(), "a full node asks nothing");
        hv.receive("n3", HvMsg::Disconnect, &mut rng, &mut Vec::new());
        let asked = refuse_all(&mut hv, &mut rng, 1_500, 2_950);
        assert!(!asked.is_empty() && !asked.contains(&true), "low requests only: {asked:?}");
        let asked = refuse_all(&mut hv, &mut rng, 3_000, 3_950);
        assert_eq!(asked.first(), Some(&true), "{asked:?}");
    }
}
