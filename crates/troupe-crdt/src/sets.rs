//! Sets: [`GSet`] (grow-only), [`ORSet`] (observed-remove, add-wins: each add is a dot; a
//! remove drops the dots it observed, so a concurrent add survives) and [`Flag`]
//! (enable-wins: an `ORSet` of one element).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::dots::{Dot, DotContext};
use crate::{DeltaCrdt, Pending, StateLattice};

/// What a set element needs.
pub trait Element: Ord + Clone + Debug + Serialize + DeserializeOwned + Send + Sync + 'static {}
impl<T: Ord + Clone + Debug + Serialize + DeserializeOwned + Send + Sync + 'static> Element for T {}

/// A grow-only set.
///
/// ```
/// use troupe_crdt::GSet;
/// let mut s = GSet::default();
/// s.insert("x".to_owned());
/// assert!(s.contains(&"x".to_owned()));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(bound = "E: Element")]
pub struct GSet<E: Element> {
    elems: BTreeSet<E>,
    #[serde(skip)]
    pending: Pending<GSet<E>>,
}

impl<E: Element> Default for GSet<E> {
    fn default() -> Self {
        Self { elems: BTreeSet::new(), pending: Pending::default() }
    }
}

impl<E: Element> GSet<E> {
    /// Adds `e`; the delta is `{e}`.
    pub fn insert(&mut self, e: E) {
        if self.elems.insert(e.clone()) {
            self.record(GSet { elems: BTreeSet::from([e]), pending: Pending::default() });
        }
    }
    /// Whether `e` is in.
    #[must_use]
    pub fn contains(&self, e: &E) -> bool {
        self.elems.contains(e)
    }
    /// The elements.
    pub fn iter(&self) -> impl Iterator<Item = &E> {
        self.elems.iter()
    }
    /// How many.
    #[must_use]
    pub fn len(&self) -> usize {
        self.elems.len()
    }
    /// Whether empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.elems.is_empty()
    }
}

impl<E: Element> StateLattice for GSet<E> {
    fn kind() -> String {
        format!("troupe.crdt.gset.v1<{}>", std::any::type_name::<E>())
    }
    fn join(&mut self, other: &Self) {
        self.elems.extend(other.elems.iter().cloned());
    }
    fn pending(&mut self) -> &mut Pending<Self> {
        &mut self.pending
    }
}

/// An observed-remove set, add-wins.
///
/// Rules: every dot in `entries` is in `ctx`; an element is in the set while it holds a dot;
/// a join keeps a dot that both sides hold or that the other side never saw.
///
/// ```
/// use troupe_crdt::{DeltaCrdt, ORSet};
/// let mut a = ORSet::default();
/// a.add("a", 1u32);
/// let mut b = a.clone();
/// b.remove(&1);          // b removes the add it saw...
/// a.add("a", 1);         // ...while a adds again, concurrently
/// a.merge(&b);
/// assert!(a.contains(&1)); // add wins
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(bound = "E: Element")]
pub struct ORSet<E: Element> {
    entries: BTreeMap<E, BTreeSet<Dot>>,
    ctx: DotContext,
    #[serde(skip)]
    pending: Pending<ORSet<E>>,
}

impl<E: Element> Default for ORSet<E> {
    fn default() -> Self {
        Self { entries: BTreeMap::new(), ctx: DotContext::default(), pending: Pending::default() }
    }
}

impl<E: Element> ORSet<E> {
    /// Adds `e` as replica `me`: a fresh dot replaces the dots of `e` this replica saw; the
    /// delta carries the new dot and, in its context, the replaced ones.
    pub fn add(&mut self, me: &str, e: E) {
        let dot = self.ctx.next(me);
        self.ctx.insert(dot.clone());
        let old = self.entries.insert(e.clone(), BTreeSet::from([dot.clone()])).unwrap_or_default();
        let ctx = DotContext::of(old.into_iter().chain([dot.clone()]));
        let delta = ORSet { entries: BTreeMap::from([(e, BTreeSet::from([dot]))]), ctx, pending: Pending::default() };
        self.record(delta);
    }

    /// Removes `e` (the dots this replica saw); the delta is those dots in a context.
    pub fn remove(&mut self, e: &E) {
        if let Some(dots) = self.entries.remove(e) {
            let delta = ORSet { entries: BTreeMap::new(), ctx: DotContext::of(dots), pending: Pending::default() };
            self.record(delta);
        }
    }

    /// Whether `e` is in.
    #[must_use]
    pub fn contains(&self, e: &E) -> bool {
        self.entries.contains_key(e)
    }

    /// The elements.
    pub fn iter(&self) -> impl Iterator<Item = &E> {
        self.entries.keys()
    }

    /// How many.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<E: Element> StateLattice for ORSet<E> {
    fn kind() -> String {
        format!("troupe.crdt.orset.v1<{}>", std::any::type_name::<E>())
    }
    fn join(&mut self, other: &Self) {
        let keys: BTreeSet<E> = self.entries.keys().chain(other.entries.keys()).cloned().collect();
        for e in keys {
            let mine = self.entries.remove(&e).unwrap_or_default();
            let theirs = other.entries.get(&e);
            let mut keep: BTreeSet<Dot> = mine
                .iter()
                .filter(|d| theirs.is_some_and(|t| t.contains(*d)) || !other.ctx.contains(d))
                .cloned()
                .collect();
            if let Some(t) = theirs {
                keep.extend(t.iter().filter(|d| !self.ctx.contains(d)).cloned());
            }
            if !keep.is_empty() {
                self.entries.insert(e, keep);
            }
        }
        self.ctx.join(&other.ctx);
    }
    fn pending(&mut self) -> &mut Pending<Self> {
        &mut self.pending
    }
}

/// A flag, enable-wins: `disable` removes the enables it saw, a concurrent `enable` wins.
///
/// ```
/// use troupe_crdt::Flag;
/// let mut f = Flag::default();
/// f.enable("a");
/// assert!(f.value());
/// f.disable();
/// assert!(!f.value());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flag {
    set: ORSet<()>,
    #[serde(skip)]
    pending: Pending<Flag>,
}

impl Flag {
    /// Turns it on as replica `me`.
    pub fn enable(&mut self, me: &str) {
        self.set.add(me, ());
        self.forward();
    }
    /// Turns it off (the enables this replica saw).
    pub fn disable(&mut self) {
        self.set.remove(&());
        self.forward();
    }
    /// Whether it is on.
    #[must_use]
    pub fn value(&self) -> bool {
        self.set.contains(&())
    }
    fn forward(&mut self) {
        if let Some(d) = self.set.take_delta() {
            self.record(Flag { set: d, pending: Pending::default() });
        }
    }
}

impl StateLattice for Flag {
    fn kind() -> String {
        "troupe.crdt.flag.v1".to_owned()
    }
    fn join(&mut self, other: &Self) {
        self.set.join(&other.set);
    }
    fn pending(&mut self) -> &mut Pending<Self> {
        &mut self.pending
    }
}
