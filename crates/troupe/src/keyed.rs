//! [`Keyed`]: an insertion-ordered map for an actor's links and monitors, so that adding,
//! finding and removing one costs O(1) (amortised) however many an actor has. Before it (issue
//! 36) they sat in a `Vec` scanned on every removal (and, for links, on every addition): a peer
//! with 300,000 monitors on one actor took minutes of CPU to tear them down.
//!
//! Rules:
//! 1. Iteration (and [`Keyed::into_values`]) yields the live entries in the order their keys
//!    were first inserted; replacing the value of a present key keeps its place.
//! 2. A key is present at most once: [`Keyed::insert`] on a present key replaces its value and
//!    hands the old one back.
//! 3. Small sets (at most [`SMALL`] slots) keep no index and are searched in place, so an actor
//!    with a link or two pays for no hash table; a larger set keeps a hash index and leaves a
//!    hole where an entry was removed, and is compacted (O(n), index rebuilt) once the holes
//!    outnumber the live entries, so each operation costs O(1) amortised and the slots never
//!    exceed twice the live entries plus [`SMALL`].

use std::collections::HashMap;
use std::hash::Hash;

/// Slots searched in place before an index is built (rule 3).
pub(crate) const SMALL: usize = 8;

/// [`Keyed::into_values`]: the live entries, in order (rule 1).
pub(crate) type IntoValues<K, V> = std::iter::Flatten<std::vec::IntoIter<Option<(K, V)>>>;

/// An insertion-ordered map with O(1) amortised insert, lookup and removal.
pub(crate) struct Keyed<K, V> {
    slots: Vec<Option<(K, V)>>,
    /// Key -> slot, once there are more than [`SMALL`] slots (boxed: an actor's `Extra` holds
    /// two of these, and most never build an index: 8 bytes instead of 48 in every one).
    #[allow(clippy::box_collection)]
    index: Option<Box<HashMap<K, usize>>>,
    live: usize,
}

impl<K, V> Default for Keyed<K, V> {
    fn default() -> Self {
        Self { slots: Vec::new(), index: None, live: 0 }
    }
}

impl<K: Copy + Eq + Hash, V> Keyed<K, V> {
    /// Live entries.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    fn slot_of(&self, k: &K) -> Option<usize> {
        match &self.index {
            Some(ix) => ix.get(k).copied(),
            None => self.slots.iter().position(|s| s.as_ref().is_some_and(|(sk, _)| sk == k)),
        }
    }

    /// Whether `k` is present.
    pub(crate) fn contains(&self, k: &K) -> bool {
        self.slot_of(k).is_some()
    }

    /// Rule 2: inserts or replaces; the replaced value is handed back.
    pub(crate) fn insert(&mut self, k: K, v: V) -> Option<V> {
        if let Some(i) = self.slot_of(&k) {
            let slot = self.slots[i].as_mut().expect("an indexed slot is live");
            return Some(std::mem::replace(&mut slot.1, v));
        }
        self.slots.push(Some((k, v)));
        self.live += 1;
        let at = self.slots.len() - 1;
        match &mut self.index {
            Some(ix) => {
                ix.insert(k, at);
            }
            None if self.slots.len() > SMALL => self.rebuild(),
            None => {}
        }
        None
    }

    /// Removes `k`, handing its value back.
    pub(crate) fn remove(&mut self, k: &K) -> Option<V> {
        let i = self.slot_of(k)?;
        self.live -= 1;
        if self.index.is_none() {
            return self.slots.remove(i).map(|(_, v)| v);
        }
        if let Some(ix) = &mut self.index {
            ix.remove(k);
        }
        let v = self.slots[i].take().map(|(_, v)| v);
        if self.slots.len() - self.live > self.live.max(SMALL) {
            self.compact();
        }
        v
    }

    /// Rule 3: drops the holes and rebuilds (or drops) the index.
    fn compact(&mut self) {
        self.slots.retain(Option::is_some);
        if self.slots.len() <= SMALL {
            self.index = None;
            self.slots.shrink_to(SMALL);
        } else {
            self.rebuild();
        }
    }

    fn rebuild(&mut self) {
        let ix = self.slots.iter().enumerate().filter_map(|(i, s)| s.as_ref().map(|(k, _)| (*k, i))).collect();
        self.index = Some(Box::new(ix));
    }

    /// The live entries in order (rule 1).
    pub(crate) fn into_values(self) -> IntoValues<K, V> {
        self.slots.into_iter().flatten()
    }

    /// Slots in use, holes included (for the bound of rule 3).
    #[cfg(test)]
    fn slots(&self) -> usize {
        self.slots.len()
    }
}

impl<K: Copy + Eq + Hash, V> FromIterator<(K, V)> for Keyed<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(it: I) -> Self {
        let mut s = Self::default();
        for (k, v) in it {
            s.insert(k, v);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An actor's `Extra` holds two: they stay small until used.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_keyed_set_is_five_words() {
        assert_eq!(std::mem::size_of::<Keyed<u64, u64>>(), 40);
    }

    #[test]
    fn rule_1_live_entries_come_out_in_first_insertion_order() {
        let mut s: Keyed<u32, u32> = (0..100).map(|i| (i, i)).collect();
        for i in (0..100).step_by(3) {
            assert_eq!(s.remove(&i), Some(i));
        }
        assert_eq!(s.insert(4, 40), Some(4), "rule 2: replaced in place");
        let want: Vec<_> = (0..100).filter(|i| i % 3 != 0).map(|i| (i, if i == 4 { 40 } else { i })).collect();
        assert_eq!(s.into_values().collect::<Vec<_>>(), want);
    }

    #[test]
    fn rule_2_a_key_is_present_once() {
        let mut s = Keyed::default();
        for round in 0..1000 {
            s.insert(7u64, round);
        }
        assert_eq!(s.len(), 1);
        assert_eq!(s.remove(&7), Some(999));
        assert!(!s.contains(&7));
        assert_eq!(s.len(), 0);
    }

    #[test]
    fn rule_3_holes_are_bounded_and_a_drained_set_is_small_again() {
        let mut s = Keyed::default();
        for i in 0..100_000u64 {
            s.insert(i, ());
        }
        for i in 0..99_990u64 {
            s.remove(&i);
            assert!(s.slots() <= 2 * s.len() + SMALL + 1, "{} slots for {} live", s.slots(), s.len());
        }
        assert_eq!(s.len(), 10);
        for i in 99_990..100_000u64 {
            assert!(s.contains(&i));
            s.remove(&i);
        }
        assert_eq!((s.len(), s.slots()), (0, 0));
        assert!(s.index.is_none());
    }

    /// The regression of issue 36 at the data-structure level: 300,000 removals from one set
    /// finish in well under a second (the `Vec` it replaced scanned for each: ~4.5e10 steps).
    #[test]
    fn removing_300_000_entries_one_by_one_is_linear() {
        let n = 300_000u64;
        let mut s: Keyed<u64, u64> = (0..n).map(|i| (i, i)).collect();
        let t0 = std::time::Instant::now();
        for i in 0..n {
            assert_eq!(s.remove(&i), Some(i));
        }
        // Generous for an unoptimised build on a loaded machine.
        assert!(t0.elapsed() < std::time::Duration::from_secs(10), "{:?}", t0.elapsed());
    }
}
