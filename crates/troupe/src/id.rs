//! Identities: [`ActorId`] names one incarnation of an actor, [`MonitorId`] one monitor.
//!
//! An `ActorId` is 8 bytes: the upper 16 bits name the node (0 is this node), the lower 48 bits
//! are a sequence number that never repeats within a node's lifetime, so a restarted actor always
//! has a new identity, as in Erlang.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_ACTOR: AtomicU64 = AtomicU64::new(1);
static NEXT_MONITOR: AtomicU64 = AtomicU64::new(1);

const SEQ_BITS: u32 = 48;
const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;

/// The identity of one actor incarnation.
///
/// ```
/// let id = troupe::ActorId::new(3, 42);
/// assert_eq!((id.node(), id.seq()), (3, 42));
/// assert_eq!(id.to_string(), "<3.42>");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct ActorId(u64);

impl ActorId {
    /// Builds an id from a node index and a sequence number (the sequence keeps its low 48 bits).
    #[must_use]
    pub const fn new(node: u16, seq: u64) -> Self {
        Self(((node as u64) << SEQ_BITS) | (seq & SEQ_MASK))
    }

    pub(crate) fn next_local() -> Self {
        Self::new(0, NEXT_ACTOR.fetch_add(1, Ordering::Relaxed))
    }

    /// The node index; 0 is the local node.
    #[must_use]
    pub const fn node(self) -> u16 {
        (self.0 >> SEQ_BITS) as u16
    }

    /// The sequence number within the node.
    #[must_use]
    pub const fn seq(self) -> u64 {
        self.0 & SEQ_MASK
    }

    /// The raw 64-bit form, for wire formats.
    #[must_use]
    pub const fn to_bits(self) -> u64 {
        self.0
    }

    /// Rebuilds an id from [`ActorId::to_bits`].
    #[must_use]
    pub const fn from_bits(bits: u64) -> Self {
        Self(bits)
    }
}

impl fmt::Display for ActorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{}.{}>", self.node(), self.seq())
    }
}

impl fmt::Debug for ActorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The identity of one monitor, returned by [`crate::Ctx::monitor`] and carried in [`crate::Down`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct MonitorId(pub(crate) u64);

impl MonitorId {
    pub(crate) fn next() -> Self {
        Self(NEXT_MONITOR.fetch_add(1, Ordering::Relaxed))
    }
}
