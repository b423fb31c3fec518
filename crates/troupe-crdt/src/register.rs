//! [`LWWRegister`]: last writer wins, by (timestamp, replica id, value) — the replica id
//! breaks timestamp ties, the value breaks the (theoretical) tie of one replica writing two
//! values with one timestamp, so the join is a true max.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::sets::Element;
use crate::{Pending, StateLattice};

/// A last-writer-wins register.
///
/// ```
/// use troupe_crdt::{DeltaCrdt, LWWRegister};
/// let mut a = LWWRegister::default();
/// a.set_at("a", "old".to_owned(), 1);
/// let mut b = LWWRegister::default();
/// b.set_at("b", "new".to_owned(), 2);
/// a.merge(&b);
/// assert_eq!(a.get().map(String::as_str), Some("new"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(bound = "T: Element")]
pub struct LWWRegister<T: Element> {
    /// (timestamp in microseconds, writer, value)
    cell: Option<(u64, String, T)>,
    #[serde(skip)]
    pending: Pending<LWWRegister<T>>,
}

impl<T: Element> Default for LWWRegister<T> {
    fn default() -> Self {
        Self { cell: None, pending: Pending::default() }
    }
}

impl<T: Element> LWWRegister<T> {
    /// Writes `v` as replica `me` at the wall clock, or just after the current write when
    /// the clock is behind it (so a replica's own writes always win over its earlier ones).
    pub fn set(&mut self, me: &str, v: T) {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64);
        let floor = self.cell.as_ref().map_or(0, |c| c.0 + 1);
        self.set_at(me, v, now.max(floor));
    }

    /// Writes `v` with an explicit timestamp (ignored when it loses to the current value).
    pub fn set_at(&mut self, me: &str, v: T, ts: u64) {
        let d = LWWRegister { cell: Some((ts, me.to_owned(), v)), pending: Pending::default() };
        self.join(&d);
        self.record(d);
    }

    /// The value.
    #[must_use]
    pub fn get(&self) -> Option<&T> {
        self.cell.as_ref().map(|c| &c.2)
    }

    /// The winning write's timestamp and writer.
    #[must_use]
    pub fn stamp(&self) -> Option<(u64, &str)> {
        self.cell.as_ref().map(|c| (c.0, c.1.as_str()))
    }
}

impl<T: Element> StateLattice for LWWRegister<T> {
    fn kind() -> String {
        format!("troupe.crdt.lwwregister.v1<{}>", std::any::type_name::<T>())
    }
    fn join(&mut self, other: &Self) {
        if other.cell > self.cell {
            self.cell = other.cell.clone();
        }
    }
    fn pending(&mut self) -> &mut Pending<Self> {
        &mut self.pending
    }
}
