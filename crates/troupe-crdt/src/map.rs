//! [`ORMap`]: keys in an add-wins [`ORSet`], each key's value a CRDT joined entry-wise.
//!
//! Rules: `update` adds the key (a fresh dot) and records the value's delta; `remove` drops
//! the key's observed dots, so an update concurrent with a remove keeps the key. A removed
//! key's value state is kept (values only grow), so re-adding the key shows the joined value
//! (Akka's ORMap has the same caveat for counters; use a fresh key to start from zero).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::sets::{Element, ORSet};
use crate::{DeltaCrdt, Pending, StateLattice};

/// A map of CRDTs with observed-remove keys.
///
/// ```
/// use troupe_crdt::{GCounter, ORMap};
/// let mut m: ORMap<String, GCounter> = ORMap::default();
/// m.update("a", "hits".to_owned(), |c| c.increment("a", 2));
/// assert_eq!(m.get(&"hits".to_owned()).map(GCounter::value), Some(2));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(bound = "K: Element, V: StateLattice")]
pub struct ORMap<K: Element, V: StateLattice> {
    keys: ORSet<K>,
    values: BTreeMap<K, V>,
    #[serde(skip)]
    pending: Pending<ORMap<K, V>>,
}

impl<K: Element, V: StateLattice> Default for ORMap<K, V> {
    fn default() -> Self {
        Self { keys: ORSet::default(), values: BTreeMap::new(), pending: Pending::default() }
    }
}

impl<K: Element, V: StateLattice> ORMap<K, V> {
    /// Adds `k` (if absent) as replica `me` and applies `f` to its value.
    pub fn update(&mut self, me: &str, k: K, f: impl FnOnce(&mut V)) {
        self.keys.add(me, k.clone());
        let v = self.values.entry(k.clone()).or_default();
        f(v);
        let mut delta = ORMap::<K, V> { keys: self.keys.take_delta().unwrap_or_default(), ..ORMap::default() };
        if let Some(vd) = v.take_delta() {
            delta.values.insert(k, vd);
        }
        self.record(delta);
    }

    /// Removes `k` (the adds this replica saw).
    pub fn remove(&mut self, k: &K) {
        self.keys.remove(k);
        if let Some(keys) = self.keys.take_delta() {
            self.record(ORMap { keys, ..ORMap::default() });
        }
    }

    /// The value under `k`, if the key is in the map.
    #[must_use]
    pub fn get(&self, k: &K) -> Option<&V> {
        self.keys.contains(k).then(|| self.values.get(k)).flatten()
    }

    /// The entries.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.keys.iter().filter_map(|k| self.values.get(k).map(|v| (k, v)))
    }

    /// How many keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

impl<K: Element, V: StateLattice> StateLattice for ORMap<K, V> {
    fn kind() -> String {
        format!("troupe.crdt.ormap.v1<{},{}>", std::any::type_name::<K>(), <V as StateLattice>::kind())
    }
    fn join(&mut self, other: &Self) {
        self.keys.join(&other.keys);
        for (k, v) in &other.values {
            self.values.entry(k.clone()).or_default().join(v);
        }
    }
    fn pending(&mut self) -> &mut Pending<Self> {
        &mut self.pending
    }
}
