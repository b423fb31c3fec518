//! Counters: [`GCounter`] (grow-only, one entry per replica, join = entry-wise max) and
//! [`PNCounter`] (a pair of them: increments and decrements).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{DeltaCrdt, Pending, StateLattice};

/// A grow-only counter.
///
/// ```
/// use troupe_crdt::{DeltaCrdt, GCounter};
/// let mut c = GCounter::default();
/// c.increment("a", 3);
/// assert_eq!(c.value(), 3);
/// assert_eq!(c.take_delta().unwrap().value(), 3);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GCounter {
    counts: BTreeMap<String, u64>,
    #[serde(skip)]
    pending: Pending<GCounter>,
}

impl GCounter {
    /// Adds `n` as replica `me`; the delta is `me`'s new entry.
    pub fn increment(&mut self, me: &str, n: u64) {
        let c = self.counts.entry(me.to_owned()).or_insert(0);
        *c = c.saturating_add(n);
        let delta = GCounter { counts: BTreeMap::from([(me.to_owned(), *c)]), pending: Pending::default() };
        self.record(delta);
    }

    /// The sum of the entries (saturating).
    #[must_use]
    pub fn value(&self) -> u64 {
        self.counts.values().fold(0u64, |a, b| a.saturating_add(*b))
    }

    /// Replica `r`'s entry.
    #[must_use]
    pub fn entry(&self, r: &str) -> u64 {
        self.counts.get(r).copied().unwrap_or(0)
    }
}

impl StateLattice for GCounter {
    fn kind() -> String {
        "troupe.crdt.gcounter.v1".to_owned()
    }
    fn join(&mut self, other: &Self) {
        for (r, n) in &other.counts {
            let e = self.counts.entry(r.clone()).or_insert(0);
            *e = (*e).max(*n);
        }
    }
    fn pending(&mut self) -> &mut Pending<Self> {
        &mut self.pending
    }
}

/// A counter that goes up and down.
///
/// ```
/// use troupe_crdt::PNCounter;
/// let mut c = PNCounter::default();
/// c.add("a", 5);
/// c.add("b", -7);
/// assert_eq!(c.value(), -2);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PNCounter {
    inc: GCounter,
    dec: GCounter,
    #[serde(skip)]
    pending: Pending<PNCounter>,
}

impl PNCounter {
    /// Adds `n` (negative: subtracts) as replica `me`.
    pub fn add(&mut self, me: &str, n: i64) {
        let mut delta = PNCounter::default();
        if n >= 0 {
            self.inc.increment(me, n.unsigned_abs());
            delta.inc = self.inc.take_delta().unwrap_or_default();
        } else {
            self.dec.increment(me, n.unsigned_abs());
            delta.dec = self.dec.take_delta().unwrap_or_default();
        }
        self.record(delta);
    }

    /// Increments minus decrements (saturating at the `i64` range).
    #[must_use]
    pub fn value(&self) -> i64 {
        let v = i128::from(self.inc.value()) - i128::from(self.dec.value());
        v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }
}

impl StateLattice for PNCounter {
    fn kind() -> String {
        "troupe.crdt.pncounter.v1".to_owned()
    }
    fn join(&mut self, other: &Self) {
        self.inc.join(&other.inc);
        self.dec.join(&other.dec);
    }
    fn pending(&mut self) -> &mut Pending<Self> {
        &mut self.pending
    }
}
