//! The replicas of one node: a slot per key, typed once the key is used locally (rule 8),
//! with the key's own delta sequence, buffer and the peers' acknowledgement marks.

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::watch;
use troupe_remote::logging::Esc;
use troupe_remote::{codec, tag_hash};

use crate::error::{Error, ErrorKind};
use crate::DeltaCrdt;

/// How many undecoded deltas an untyped key keeps (older ones are dropped; gossip of full
/// states makes up for them).
const RAW_DELTAS: usize = 1024;

/// A typed replica, type-erased.
pub(crate) trait Erased: Send + Sync {
    /// Decodes every item, then joins them all (nothing is joined when one fails, rule 7).
    fn merge_items(&mut self, items: &[&[u8]], delta: bool) -> Result<bool, String>;
    fn state_bytes(&self) -> Vec<u8>;
    fn any_mut(&mut self) -> &mut dyn Any;
}

pub(crate) struct Typed<T: DeltaCrdt> {
    pub(crate) value: T,
    pub(crate) tx: watch::Sender<T>,
}

impl<T: DeltaCrdt> Erased for Typed<T> {
    fn merge_items(&mut self, items: &[&[u8]], delta: bool) -> Result<bool, String> {
        let before = self.value.clone();
        if delta {
            let ds: Vec<T::Delta> =
                items.iter().map(|b| codec::decode(b)).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
            ds.iter().for_each(|d| self.value.merge_delta(d));
        } else {
            let ss: Vec<T> =
                items.iter().map(|b| codec::decode(b)).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
            ss.iter().for_each(|s| self.value.merge(s));
        }
        let changed = self.value != before;
        if changed {
            self.tx.send_replace(self.value.clone());
        }
        Ok(changed)
    }
    fn state_bytes(&self) -> Vec<u8> {
        codec::encode(&self.value).unwrap_or_default()
    }
    fn any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// What an untyped key holds (rule 8).
#[derive(Default)]
pub(crate) struct Raw {
    pub(crate) kind: Option<u64>,
    pub(crate) states: HashMap<String, Vec<u8>>,
    pub(crate) deltas: VecDeque<Vec<u8>>,
}

pub(crate) enum Data {
    Typed(Box<dyn Erased>),
    Raw(Raw),
}

pub(crate) struct Slot {
    pub(crate) kind: String,
    pub(crate) kind_hash: u64,
    pub(crate) data: Data,
    /// The last sequence number of this node's own deltas of the key (rule 2).
    pub(crate) seq: u64,
    pub(crate) buffer: VecDeque<(u64, Instant, Arc<Vec<u8>>)>,
    /// Peer address -> the last own delta it acknowledged, contiguously (rule 3).
    pub(crate) acked: HashMap<String, u64>,
    /// Peer address -> deltas it acknowledged beyond a gap (concurrent sends can be
    /// acknowledged out of order); they join the mark once the gap closes.
    pub(crate) early: HashMap<String, std::collections::BTreeSet<u64>>,
}

impl Slot {
    fn raw() -> Self {
        Slot {
            kind: String::new(),
            kind_hash: 0,
            data: Data::Raw(Raw::default()),
            seq: 0,
            buffer: VecDeque::new(),
            acked: HashMap::new(),
            early: HashMap::new(),
        }
    }

    pub(crate) fn typed_mut<T: DeltaCrdt>(&mut self) -> &mut Typed<T> {
        match &mut self.data {
            Data::Typed(t) => t.any_mut().downcast_mut::<Typed<T>>().expect("kind checked by Store::typed"),
            Data::Raw(_) => unreachable!("Store::typed converts raw slots"),
        }
    }

    /// Rule 3.
    pub(crate) fn ack(&mut self, peer: &str, first: u64, last: u64) {
        let m = self.acked.entry(peer.to_owned()).or_insert(0);
        let early = self.early.entry(peer.to_owned()).or_default();
        if *m + 1 >= first {
            *m = (*m).max(last);
            while early.first().is_some_and(|s| *s <= *m + 1) {
                let s = early.pop_first().unwrap_or(0);
                *m = (*m).max(s);
            }
        } else if last - first < 1024 {
            early.extend(first..=last);
        }
    }
}

/// Counts of what the replicator did and refused.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) deltas_sent: AtomicU64,
    pub(crate) delta_bytes_sent: AtomicU64,
    pub(crate) states_sent: AtomicU64,
    pub(crate) state_bytes_sent: AtomicU64,
    pub(crate) deltas_received: AtomicU64,
    pub(crate) states_received: AtomicU64,
    pub(crate) rejected_decode: AtomicU64,
    pub(crate) rejected_kind: AtomicU64,
    pub(crate) deltas_acked: AtomicU64,
    pub(crate) states_acked: AtomicU64,
    pub(crate) sends_unanswered: AtomicU64,
    pub(crate) sends_nacked: AtomicU64,
    pub(crate) restarts: AtomicU64,
}

/// Rule 7: a payload rejected, counted and logged (rate-limited: a peer can send many).
fn reject(stats: &Counters, key: &str, from: &str, reason: &'static str, error: &str) {
    bump(if reason == "kind" { &stats.rejected_kind } else { &stats.rejected_decode }, 1);
    troupe_remote::warn_limited!(
        key = %Esc(key),
        peer = %Esc(from),
        reason,
        error = %Esc(error),
        "replicated payload rejected"
    );
}

pub(crate) fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

#[derive(Default)]
pub(crate) struct Store {
    pub(crate) slots: HashMap<String, Slot>,
}

impl Store {
    /// The slot of `key`, typed as `T` (converting an untyped one, rule 8).
    pub(crate) fn typed<T: DeltaCrdt>(&mut self, key: &str, stats: &Counters) -> Result<&mut Slot, Error> {
        let kind = T::kind();
        let h = tag_hash(&kind);
        let slot = self.slots.entry(key.to_owned()).or_insert_with(Slot::raw);
        if let Data::Raw(raw) = &mut slot.data {
            if let Some(k) = raw.kind.filter(|k| *k != h) {
                return Err(mismatch(key, &kind, &format!("a CRDT of another kind (tag {k:#x})")));
            }
            let value = T::default();
            let mut t = Typed { tx: watch::channel(value.clone()).0, value };
            let held = raw.states.iter().map(|(from, b)| (from.as_str(), b, false));
            for (from, b, delta) in held.chain(raw.deltas.iter().map(|b| ("(a held delta)", b, true))) {
                if let Err(e) = t.merge_items(&[b], delta) {
                    reject(stats, key, from, "decode", &e);
                }
            }
            slot.data = Data::Typed(Box::new(t));
            slot.kind = kind.clone();
            slot.kind_hash = h;
        }
        if slot.kind_hash != h {
            return Err(mismatch(key, &kind, &slot.kind));
        }
        Ok(slot)
    }

    /// Merges what a peer sent (rules 7-8); false when rejected.
    pub(crate) fn receive(
        &mut self,
        from: &str,
        key: &str,
        kind: u64,
        items: &[&[u8]],
        delta: bool,
        stats: &Counters,
    ) -> bool {
        bump(if delta { &stats.deltas_received } else { &stats.states_received }, 1);
        let slot = self.slots.entry(key.to_owned()).or_insert_with(Slot::raw);
        match &mut slot.data {
            Data::Typed(t) => {
                if slot.kind_hash != kind {
                    reject(stats, key, from, "kind", &format!("kind tag {kind:#x}; the key holds {}", slot.kind));
                    return false;
                }
                if let Err(e) = t.merge_items(items, delta) {
                    reject(stats, key, from, "decode", &e);
                    return false;
                }
                true
            }
            Data::Raw(raw) => {
                if let Some(k) = raw.kind.filter(|k| *k != kind) {
                    reject(stats, key, from, "kind", &format!("kind tag {kind:#x}; the key holds tag {k:#x}"));
                    return false;
                }
                raw.kind = Some(kind);
                if delta {
                    raw.deltas.extend(items.iter().map(|b| b.to_vec()));
                    while raw.deltas.len() > RAW_DELTAS {
                        raw.deltas.pop_front();
                    }
                } else if let Some(b) = items.last() {
                    // A member's states only grow: its latest one covers the earlier ones.
                    raw.states.insert(from.to_owned(), b.to_vec());
                }
                true
            }
        }
    }

    /// What this node holds of `key`, for a read (`ReadReply` items).
    pub(crate) fn read(&self, key: &str) -> Vec<(u64, bool, Vec<u8>)> {
        let Some(slot) = self.slots.get(key) else { return Vec::new() };
        match &slot.data {
            Data::Typed(t) => vec![(slot.kind_hash, false, t.state_bytes())],
            Data::Raw(raw) => {
                let k = raw.kind.unwrap_or(0);
                raw.states
                    .values()
                    .map(|b| (k, false, b.clone()))
                    .chain(raw.deltas.iter().map(|b| (k, true, b.clone())))
                    .collect()
            }
        }
    }
}

fn mismatch(key: &str, expected: &str, found: &str) -> Error {
    ErrorKind::TypeMismatch { key: key.to_owned(), expected: expected.to_owned(), found: found.to_owned() }.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GCounter;

    #[test]
    fn acknowledgement_marks_move_only_contiguously_and_only_up() {
        let mut s = Slot::raw();
        s.ack("p", 2, 2);
        assert_eq!(s.acked.get("p"), Some(&0), "deltas 2..=2 with mark 0 leave a gap: no move");
        s.ack("p", 4, 4);
        assert_eq!(s.acked["p"], 0);
        s.ack("p", 1, 1);
        assert_eq!(s.acked["p"], 2, "closing the gap takes in 2, not 4 (3 is missing)");
        s.ack("p", 3, 3);
        assert_eq!(s.acked["p"], 4);
        s.ack("p", 1, 3);
        assert_eq!(s.acked["p"], 4);
        s.ack("p", 0, 2);
        assert_eq!(s.acked["p"], 4, "a state at 2 does not move a mark at 4 back");
        s.ack("p", 5, 5);
        assert_eq!(s.acked["p"], 5);
    }

    #[test]
    fn an_untyped_key_keeps_the_latest_state_per_sender_and_a_bounded_list_of_deltas() {
        let (mut st, c) = (Store::default(), Counters::default());
        let kind = tag_hash(&GCounter::kind());
        let mut g = GCounter::default();
        g.increment("a", 1);
        let one = codec::encode(&g).unwrap();
        g.increment("a", 1);
        let two = codec::encode(&g).unwrap();
        assert!(st.receive("a", "k", kind, &[&one], false, &c));
        assert!(st.receive("a", "k", kind, &[&two], false, &c));
        for _ in 0..RAW_DELTAS + 10 {
            assert!(st.receive("b", "k", kind, &[&one], true, &c));
        }
        assert!(!st.receive("c", "k", kind ^ 1, &[&one], true, &c), "another kind is refused");
        let Data::Raw(raw) = &st.slots["k"].data else { panic!("still raw") };
        assert_eq!((raw.states.len(), raw.deltas.len()), (1, RAW_DELTAS));
        let slot = st.typed::<GCounter>("k", &c).unwrap();
        assert_eq!(slot.typed_mut::<GCounter>().value.value(), 2);
    }
}
