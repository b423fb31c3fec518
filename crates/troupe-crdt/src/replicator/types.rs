//! The replicator's public types: [`Consistency`] levels, typed [`Key`]s, the
//! [`ReplicatorConfig`], [`ReplicatorStats`] and [`Changes`] subscriptions.

use std::marker::PhantomData;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::error::{Error, ErrorKind};

/// How many replicas must take part in a read or write (rule 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Consistency {
    /// This node only; the change spreads in the background.
    Local,
    /// A majority of the members (this node included).
    Majority,
    /// Every member.
    All,
}

impl Consistency {
    /// Replicas needed among `n` (this node included).
    #[must_use]
    pub fn needed(self, n: usize) -> usize {
        match self {
            Consistency::Local => 1,
            Consistency::Majority => n / 2 + 1,
            Consistency::All => n,
        }
    }
}

impl std::str::FromStr for Consistency {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "local" => Ok(Consistency::Local),
            "majority" => Ok(Consistency::Majority),
            "all" => Ok(Consistency::All),
            _ => Err(format!("unknown consistency {s:?}: local, majority or all")),
        }
    }
}

/// A typed key: the replicas under it are `T`s.
///
/// ```
/// use troupe_crdt::{GCounter, Key};
/// let hits: Key<GCounter> = Key::new("hits");
/// assert_eq!(hits.name(), "hits");
/// ```
pub struct Key<T> {
    name: String,
    _t: PhantomData<fn() -> T>,
}

impl<T> Key<T> {
    /// A key named `name`.
    #[must_use]
    pub fn new(name: &str) -> Self {
        Self { name: name.to_owned(), _t: PhantomData }
    }
    /// Its name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl<T> Clone for Key<T> {
    fn clone(&self) -> Self {
        Self::new(&self.name)
    }
}

/// The replicator's timing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplicatorConfig {
    /// Rule 4 (default 200 ms).
    pub resend_interval_ms: u64,
    /// Rule 5 (default 1000 ms).
    pub gossip_interval_ms: u64,
    /// Deltas buffered per key (default 64).
    pub delta_buffer: usize,
    /// How long a background send waits for its acknowledgement (default 2000 ms).
    pub ack_timeout_ms: u64,
}

impl Default for ReplicatorConfig {
    fn default() -> Self {
        Self { resend_interval_ms: 200, gossip_interval_ms: 1000, delta_buffer: 64, ack_timeout_ms: 2000 }
    }
}

/// What a replicator sent, received and refused (rule 7).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReplicatorStats {
    /// Delta messages sent.
    pub deltas_sent: u64,
    /// Their payload bytes.
    pub delta_bytes_sent: u64,
    /// Full-state messages sent.
    pub states_sent: u64,
    /// Their payload bytes.
    pub state_bytes_sent: u64,
    /// Delta messages received.
    pub deltas_received: u64,
    /// Full-state messages received.
    pub states_received: u64,
    /// Payloads rejected because they did not decode.
    pub rejected_decode: u64,
    /// Payloads rejected because the key holds another kind.
    pub rejected_kind: u64,
    /// Delta messages a peer acknowledged (positively).
    pub deltas_acked: u64,
    /// Full-state messages a peer acknowledged (positively).
    pub states_acked: u64,
    /// Delta and state messages that got no answer in time (the peer down or unreachable,
    /// the acknowledgement late); resends and gossip make up for them.
    pub sends_unanswered: u64,
    /// Delta and state messages the peer rejected (rule 7 on its side: a negative
    /// acknowledgement).
    pub sends_nacked: u64,
    /// The replicator's actors (inbox, ticker) started again by its supervisor after a crash
    /// (rule 9).
    pub restarts: u64,
}

/// The changes of one key ([`crate::Replicator::subscribe`]).
pub struct Changes<T> {
    pub(crate) rx: watch::Receiver<T>,
}

impl<T: Clone> Changes<T> {
    /// Waits for the next change and returns the value then.
    pub async fn changed(&mut self) -> Result<T, Error> {
        self.rx.changed().await.map_err(|_| Error::from(ErrorKind::Stopped))?;
        Ok(self.rx.borrow_and_update().clone())
    }
    /// The latest value.
    #[must_use]
    pub fn current(&self) -> T {
        self.rx.borrow().clone()
    }
}
