//! Causal delivery (Partisan's `{causal_label, Label}` send option, seed 004 §5): messages sent
//! with the same causal label are delivered at every node in an order consistent with
//! causality, however the network delays and reorders them. The ordering is the
//! Schiper-Eggli-Sandoz scheme for point-to-point messages (vector clocks plus an order buffer
//! of the latest clock sent to each destination), as a state machine without I/O:
//! [`CausalOrder`] stamps what a node sends and holds back what it receives until it may be
//! delivered. The node wires it to frames (`SendOptions::causal`); tests drive it directly.
//!
//! Rules (one [`CausalOrder`] per node and label; "clock" is a vector clock, absent = 0):
//! 1. Sending to `d` increments this node's own entry of its clock; the message carries the
//!    clock (`clock`) and a copy of the order buffer as it was *before* this send (`deps`: for
//!    each destination, the latest clock a message this node knows of was sent to it with).
//!    Then the order buffer's entry for `d` becomes the message's clock.
//! 2. A received message is deliverable when its `deps` hold no entry for this node, or that
//!    entry is <= this node's clock (every message it depends on that was sent to this node has
//!    been delivered here).
//! 3. Delivering merges: this node's clock becomes the entrywise max of itself and the
//!    message's clock; every `deps` entry for another destination is merged (entrywise max)
//!    into this node's order buffer.
//! 4. A message that is not deliverable is held; after every delivery the held messages are
//!    re-examined until none is deliverable, so one arrival may release a chain.
//! 5. What is held is bounded (`max_held`): past it a new arrival is refused (the caller drops
//!    and counts it); a message that depended on a refused one stays held, which is why the
//!    caller reports held and refused counts.
//! 6. Duplicates (a network that repeats a frame) are delivered once: messages from one sender
//!    to this node are delivered in the sender's order (rule 2 implies it), so a message whose
//!    sender entry is not above the last one delivered from that sender, or equals one already
//!    held, is a copy, dropped and counted.
//!
//! ```
//! use troupe_remote::causal::CausalOrder;
//! let (mut a, mut b, mut c) = (CausalOrder::<&str>::new(1, 100), CausalOrder::new(2, 100), CausalOrder::new(3, 100));
//! let m1 = a.stamp(3); // a -> c
//! let m2 = a.stamp(2); // a -> b, after m1
//! assert_eq!(b.receive(m2, "m2").unwrap(), vec!["m2"]);
//! let m3 = b.stamp(3); // b -> c, caused by m2, so after m1
//! assert!(c.receive(m3, "m3").unwrap().is_empty(), "m3 waits for m1");
//! assert_eq!(c.receive(m1, "m1").unwrap(), vec!["m1", "m3"]);
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A vector clock: node key -> count; an absent key is 0.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Clock(BTreeMap<u64, u64>);

impl Clock {
    /// The entry for `node`.
    #[must_use]
    pub fn get(&self, node: u64) -> u64 {
        self.0.get(&node).copied().unwrap_or(0)
    }

    /// Whether every entry of `self` is <= the same entry of `other`.
    #[must_use]
    pub fn le(&self, other: &Clock) -> bool {
        self.0.iter().all(|(k, v)| *v <= other.get(*k))
    }

    /// Entrywise max with `other`; how many entries it gained.
    pub fn merge(&mut self, other: &Clock) -> usize {
        let before = self.0.len();
        for (k, v) in &other.0 {
            let e = self.0.entry(*k).or_insert(0);
            *e = (*e).max(*v);
        }
        self.0.len() - before
    }

    /// Entries, for encoding and inspection.
    pub fn entries(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.0.iter().map(|(k, v)| (*k, *v))
    }
}

impl FromIterator<(u64, u64)> for Clock {
    fn from_iter<I: IntoIterator<Item = (u64, u64)>>(it: I) -> Self {
        Clock(it.into_iter().collect())
    }
}

/// What a causally ordered message carries (rule 1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    /// The sending node's key.
    pub sender: u64,
    /// The sender's clock after this send.
    pub clock: Clock,
    /// The sender's order buffer before this send: destination -> latest clock sent to it.
    pub deps: BTreeMap<u64, Clock>,
}

/// A message [`CausalOrder::receive`] refused because `max_held` messages are held (rule 5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldFull {
    /// How many were held.
    pub held: usize,
}

/// Counters of one [`CausalOrder`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CausalStats {
    /// Messages stamped (sent).
    pub stamped: u64,
    /// Messages delivered.
    pub delivered: u64,
    /// Messages that had to wait (held at least once).
    pub waited: u64,
    /// Messages refused because the hold was full.
    pub refused: u64,
    /// Copies of a message already delivered or held, dropped (rule 6).
    pub duplicates: u64,
}

/// The causal ordering state of one node for one label (rules 1-5).
#[derive(Debug)]
pub struct CausalOrder<T> {
    me: u64,
    clock: Clock,
    order: BTreeMap<u64, Clock>,
    /// Held messages by (sender, the sender's clock entry): a sender's messages to this node
    /// are delivered in that order (rule 6), so only each sender's first held one can be
    /// deliverable, and a copy is found by its key.
    held: BTreeMap<(u64, u64), (Stamp, T)>,
    /// [`CausalOrder::known_nodes`], kept up to date as the clock and order buffer grow.
    known: usize,
    /// Per sender, its clock entry of the last message delivered from it (rule 6).
    last_from: BTreeMap<u64, u64>,
    max_held: usize,
    stats: CausalStats,
}

impl<T> CausalOrder<T> {
    /// The state of node `me`, holding at most `max_held` undeliverable messages.
    #[must_use]
    pub fn new(me: u64, max_held: usize) -> Self {
        Self {
            me,
            clock: Clock::default(),
            order: BTreeMap::new(),
            held: BTreeMap::new(),
            known: 0,
            last_from: BTreeMap::new(),
            max_held,
            stats: CausalStats::default(),
        }
    }

    /// Rule 1: stamps a message this node sends to `dest`.
    pub fn stamp(&mut self, dest: u64) -> Stamp {
        match self.stamp_with(dest, |s| Ok::<Stamp, ()>(s.clone())) {
            Ok(s) => s,
            Err(()) => unreachable!("the closure never fails"),
        }
    }

    /// Rule 1 for a send that may fail: stamps a message to `dest` and hands the stamp to
    /// `send`; the stamp counts (the clock and order buffer move) only when `send` succeeds,
    /// so a message that never left cannot make later ones wait for it.
    pub fn stamp_with<R, E>(&mut self, dest: u64, send: impl FnOnce(&Stamp) -> Result<R, E>) -> Result<R, E> {
        let before = self.clock.0.get(&self.me).copied();
        self.clock.0.insert(self.me, before.unwrap_or(0) + 1);
        let stamp = Stamp { sender: self.me, clock: self.clock.clone(), deps: self.order.clone() };
        match send(&stamp) {
            Ok(r) => {
                let added = 1 + stamp.clock.0.len();
                let replaced = self.order.insert(dest, stamp.clock).map_or(0, |c| 1 + c.0.len());
                self.known = self.known + added + usize::from(before.is_none()) - replaced;
                self.stats.stamped += 1;
                Ok(r)
            }
            Err(e) => {
                match before {
                    Some(n) => self.clock.0.insert(self.me, n),
                    None => self.clock.0.remove(&self.me),
                };
                Err(e)
            }
        }
    }

    fn deliverable(&self, s: &Stamp) -> bool {
        s.deps.get(&self.me).is_none_or(|t| t.le(&self.clock))
    }

    /// Rule 6: whether `s` is a copy of a message delivered already.
    fn delivered_already(&self, s: &Stamp) -> bool {
        self.last_from.get(&s.sender).is_some_and(|last| s.clock.get(s.sender) <= *last)
    }

    fn deliver(&mut self, s: &Stamp) {
        self.last_from.insert(s.sender, s.clock.get(s.sender));
        self.known += self.clock.merge(&s.clock);
        for (dest, t) in &s.deps {
            if *dest != self.me {
                let entry = self.order.entry(*dest);
                self.known += usize::from(matches!(entry, std::collections::btree_map::Entry::Vacant(_)));
                self.known += entry.or_default().merge(t);
            }
        }
        self.stats.delivered += 1;
    }

    /// Whether [`CausalOrder::receive`] would hold this message now (it is neither a copy nor
    /// deliverable), so a caller can check its own budget first.
    #[must_use]
    pub fn would_hold(&self, stamp: &Stamp) -> bool {
        let key = (stamp.sender, stamp.clock.get(stamp.sender));
        !self.held.contains_key(&key) && !self.delivered_already(stamp) && !self.deliverable(stamp)
    }

    /// Rules 2-5: takes a received message; returns the messages now deliverable, in delivery
    /// order (it, then any held ones it released), or refuses it when the hold is full.
    pub fn receive(&mut self, stamp: Stamp, item: T) -> Result<Vec<T>, HeldFull> {
        let key = (stamp.sender, stamp.clock.get(stamp.sender));
        if self.held.contains_key(&key) || self.delivered_already(&stamp) {
            self.stats.duplicates += 1;
            return Ok(Vec::new());
        }
        if !self.deliverable(&stamp) {
            if self.held.len() >= self.max_held {
                self.stats.refused += 1;
                return Err(HeldFull { held: self.held.len() });
            }
            self.stats.waited += 1;
            self.held.insert(key, (stamp, item));
            return Ok(Vec::new());
        }
        self.deliver(&stamp);
        let mut out = vec![item];
        while let Some((s, item)) = self.next_released().and_then(|k| self.held.remove(&k)) {
            self.deliver(&s);
            out.push(item);
        }
        Ok(out)
    }

    /// Rule 4: the key of a held message that is now deliverable. Only each sender's first
    /// held message can be (rule 6), so one look per sender.
    fn next_released(&self) -> Option<(u64, u64)> {
        let mut next = self.held.keys().next().copied();
        while let Some(key) = next {
            if self.held.get(&key).is_some_and(|(s, _)| self.deliverable(s)) {
                return Some(key);
            }
            next = key.0.checked_add(1).and_then(|s| self.held.range((s, 0)..).next().map(|(k, _)| *k));
        }
        None
    }

    /// Entries this state keeps: its clock's plus its order buffer's (the memory a label
    /// costs grows with the nodes it has heard of).
    #[must_use]
    pub fn known_nodes(&self) -> usize {
        self.known
    }

    /// Drops every held message `pred` picks (a sender's session ended: what it sent that
    /// still waits is freed, not kept for good) and hands them back. Messages that depended on
    /// one of them stay held, as after a loss (rule 5).
    pub fn drop_held(&mut self, mut pred: impl FnMut(&T) -> bool) -> Vec<T> {
        let keys: Vec<(u64, u64)> = self.held.iter().filter(|(_, (_, t))| pred(t)).map(|(k, _)| *k).collect();
        keys.into_iter().filter_map(|k| self.held.remove(&k)).map(|(_, t)| t).collect()
    }

    /// Messages held now.
    #[must_use]
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// This node's clock.
    #[must_use]
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The counters.
    #[must_use]
    pub fn stats(&self) -> CausalStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What [`CausalOrder::known_nodes`] counts, recomputed from scratch.
    fn recount<T>(o: &CausalOrder<T>) -> usize {
        o.clock.0.len() + o.order.values().map(|c| 1 + c.0.len()).sum::<usize>()
    }

    #[test]
    fn the_kept_count_of_known_nodes_matches_a_recount() {
        let mut nodes: Vec<CausalOrder<u32>> = (0..4).map(|i| CausalOrder::new(i, 100)).collect();
        let mut flight = Vec::new();
        for step in 0..200u64 {
            let from = (step * 7 % 4) as usize;
            let to = (from + 1 + (step % 3) as usize) % 4;
            if step % 5 == 4 {
                let _: Result<(), ()> = nodes[from].stamp_with(to as u64, |_| Err(()));
            } else {
                flight.push((to, nodes[from].stamp(to as u64)));
            }
            if step % 2 == 1 && !flight.is_empty() {
                let (to, s) = flight.remove((step as usize * 13) % flight.len());
                let _ = nodes[to].receive(s, 0);
            }
            for n in &nodes {
                assert_eq!(n.known_nodes(), recount(n), "after step {step}");
            }
        }
    }
}
