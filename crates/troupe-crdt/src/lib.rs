//! Troupe delta-state CRDTs (seed 003 §2.9; Akka Distributed Data's set) and the
//! [`Replicator`] that spreads them over a `troupe_cluster::Cluster`.
//!
//! - The lattice types: [`GCounter`], [`PNCounter`], [`GSet`], [`ORSet`] (add-wins, dots
//!   with a causal context), [`LWWRegister`], [`ORMap`] (values are CRDTs), [`Flag`]
//!   (enable-wins). Every mutator records a *delta*, a small state of the same lattice;
//!   [`DeltaCrdt::take_delta`] hands the joined deltas since the last call to the replicator.
//! - Replica ids are strings. The replicator uses `ADDR#UID` (the member's address and its
//!   incarnation), so a restarted node never reuses the counters or dots of its previous life.
//! - [`Replicator`] (`replicator/`): typed [`Key`]s, [`Consistency`] levels, delta
//!   dissemination with acknowledgements, full-state gossip as the fallback, subscriptions.
//! - Observing: rejected payloads and failed sends are structured `tracing` warnings under
//!   the `troupe_crdt` target (rate-limited, naming the key and the peer); with the feature
//!   `metrics`, the `metrics` module publishes the replicator's counters at scrape time.
//!
//! ```
//! use troupe_crdt::{DeltaCrdt, GCounter};
//! let (mut a, mut b) = (GCounter::default(), GCounter::default());
//! a.increment("a", 2);
//! b.increment("b", 3);
//! let delta = a.take_delta().unwrap(); // only a's entry
//! b.merge_delta(&delta);
//! a.merge(&b);
//! assert_eq!((a.value(), b.value()), (5, 5));
//! ```

use std::fmt::Debug;

use serde::de::DeserializeOwned;
use serde::Serialize;

#[cfg(feature = "bench")]
pub mod bench;
#[cfg(feature = "cli")]
pub mod cli;
mod counters;
mod dots;
mod error;
mod map;
#[cfg(feature = "metrics")]
pub mod metrics;
mod register;
mod replicator;
mod sets;

pub use counters::{GCounter, PNCounter};
pub use dots::{Dot, DotContext};
pub use error::{Error, ErrorKind};
pub use map::ORMap;
pub use register::LWWRegister;
pub use replicator::{
    Changes, Consistency, CrdtMsg, Key, ReadReply, Replicator, ReplicatorConfig, ReplicatorStats, WireAck,
    REPLICATOR_ACTOR,
};
pub use sets::{Flag, GSet, ORSet};

/// A delta-state CRDT: a join-semilattice whose mutators also record deltas.
///
/// Rules every implementation keeps (the property tests in `tests/crdt_laws.rs` check them):
/// 1. `merge` is commutative, associative and idempotent (a join).
/// 2. Merging the deltas a replica produced, in any order, any number of times each, gives
///    the same state as merging that replica's full state.
/// 3. Deltas are joinable with [`DeltaCrdt::join_delta`], and a joined delta is worth its
///    parts.
pub trait DeltaCrdt:
    Clone + Default + PartialEq + Debug + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// What mutators record and replicas exchange.
    type Delta: Clone + Debug + Serialize + DeserializeOwned + Send + Sync + 'static;
    /// A stable name of the type (the same in every build of the same source); a replica
    /// refuses deltas and states for a key whose kind differs.
    fn kind() -> String;
    /// Joins another replica's full state into this one.
    fn merge(&mut self, other: &Self);
    /// Joins a delta into this state.
    fn merge_delta(&mut self, delta: &Self::Delta);
    /// Joins `delta` into `into` (deltas form a lattice too).
    fn join_delta(into: &mut Self::Delta, delta: &Self::Delta);
    /// The join of the deltas recorded since the last call; `None` when nothing changed.
    fn take_delta(&mut self) -> Option<Self::Delta>;
}

/// The deltas a state recorded and has not handed out yet. Not part of the state: it is
/// never serialised and never compared (two states with different pending deltas are equal).
#[derive(Clone, Debug)]
pub struct Pending<T>(Option<Box<T>>);

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<T> PartialEq for Pending<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> Eq for Pending<T> {}

/// A lattice whose deltas are states of its own type (all the types of this crate); it is a
/// [`DeltaCrdt`] with `Delta = Self`.
pub trait StateLattice:
    Clone + Default + PartialEq + Debug + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// See [`DeltaCrdt::kind`].
    fn kind() -> String;
    /// The join.
    fn join(&mut self, other: &Self);
    /// Where the mutators record their deltas.
    fn pending(&mut self) -> &mut Pending<Self>;
    /// Records `delta` (joins it into the pending one).
    fn record(&mut self, delta: Self) {
        match &mut self.pending().0 {
            Some(p) => p.join(&delta),
            slot @ None => *slot = Some(Box::new(delta)),
        }
    }
}

impl<T: StateLattice> DeltaCrdt for T {
    type Delta = T;
    fn kind() -> String {
        <T as StateLattice>::kind()
    }
    fn merge(&mut self, other: &Self) {
        self.join(other);
    }
    fn merge_delta(&mut self, delta: &T) {
        self.join(delta);
    }
    fn join_delta(into: &mut T, delta: &T) {
        into.join(delta);
    }
    fn take_delta(&mut self) -> Option<T> {
        self.pending().0.take().map(|b| *b)
    }
}

/// The lifecycle guide's example (it needs a node, a cluster and a replicator) compiles and
/// runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/lifecycle.md")]
struct LifecycleGuideDoctests;
