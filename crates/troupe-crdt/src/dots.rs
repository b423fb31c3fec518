//! Dots and causal contexts, the bookkeeping of the observed-remove types ([`crate::ORSet`],
//! [`crate::Flag`], [`crate::ORMap`]'s keys).
//!
//! A dot `(replica, n)` names the `n`-th event of a replica. A [`DotContext`] is the set of
//! dots a state has seen: a version vector (every dot up to `vv[r]`) plus a cloud of dots
//! beyond it. It is kept compact (no cloud dot is covered by or adjacent to the vector), so
//! equal sets of dots have equal representations.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// `(replica, n)`: the `n`-th event (from 1) of a replica.
pub type Dot = (String, u64);

/// The dots a state has seen.
///
/// ```
/// use troupe_crdt::DotContext;
/// let mut c = DotContext::default();
/// let d = c.next("a");
/// c.insert(d.clone());
/// assert!(c.contains(&d));
/// assert_eq!(c.next("a"), ("a".to_owned(), 2));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DotContext {
    vv: BTreeMap<String, u64>,
    cloud: BTreeSet<Dot>,
}

impl DotContext {
    /// Whether the dot was seen.
    #[must_use]
    pub fn contains(&self, (r, n): &Dot) -> bool {
        self.vv.get(r).is_some_and(|m| m >= n) || self.cloud.contains(&(r.clone(), *n))
    }

    /// The next dot of replica `r` (its own dots are contiguous, so they sit in the vector).
    #[must_use]
    pub fn next(&self, r: &str) -> Dot {
        (r.to_owned(), self.vv.get(r).copied().unwrap_or(0) + 1)
    }

    /// Adds a dot.
    pub fn insert(&mut self, d: Dot) {
        self.cloud.insert(d);
        self.compact();
    }

    /// Adds every dot of `other`.
    pub fn join(&mut self, other: &DotContext) {
        for (r, n) in &other.vv {
            let e = self.vv.entry(r.clone()).or_insert(0);
            *e = (*e).max(*n);
        }
        self.cloud.extend(other.cloud.iter().cloned());
        self.compact();
    }

    /// A context holding exactly `dots`.
    #[must_use]
    pub fn of(dots: impl IntoIterator<Item = Dot>) -> Self {
        let mut c = DotContext { vv: BTreeMap::new(), cloud: dots.into_iter().collect() };
        c.compact();
        c
    }

    fn compact(&mut self) {
        let vv = &mut self.vv;
        // The cloud is sorted by (replica, n): one pass moves every contiguous run.
        self.cloud.retain(|(r, n)| {
            let v = vv.get(r).copied().unwrap_or(0);
            if *n == v + 1 {
                vv.insert(r.clone(), *n);
                false
            } else {
                *n > v
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_makes_equal_sets_equal() {
        let a = DotContext::of([("a".into(), 1), ("a".into(), 2), ("b".into(), 3)]);
        let mut b = DotContext::of([("b".into(), 3)]);
        b.join(&DotContext::of([("a".into(), 2)]));
        b.insert(("a".into(), 1));
        assert_eq!(a, b);
        assert!(a.contains(&("a".into(), 2)) && !a.contains(&("b".into(), 2)));
        assert_eq!(a.next("a").1, 3);
    }
}
