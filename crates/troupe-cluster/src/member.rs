//! Members as the membership table holds them: a node's identity ([`NodeId`]: address, name,
//! incarnation), its [`MemberStatus`], and its age (`up_number`, for keep-oldest).

use serde::{Deserialize, Serialize};

/// One incarnation of a node. A node that restarts (or rejoins after being downed) comes back
/// with a larger `uid`, which supersedes everything known of the older one.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NodeId {
    /// Its listen (or advertised) address: the member's key.
    pub addr: String,
    /// Its node name.
    pub name: String,
    /// Its incarnation: microseconds since the Unix epoch at start, times 256, plus a random
    /// byte, so a later incarnation compares larger.
    pub uid: u64,
}

impl NodeId {
    /// A fresh incarnation of the node at `addr` named `name`.
    #[must_use]
    pub fn fresh(addr: &str, name: &str) -> Self {
        let micros = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0);
        Self { addr: addr.to_owned(), name: name.to_owned(), uid: (micros << 8) | u64::from(rand::random::<u8>()) }
    }
}

/// A member's status. The order is the order of the lifecycle: a merge keeps the later one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemberStatus {
    /// Asked to join; the leader moves it to `Up` at the next convergence.
    Joining,
    /// A full member.
    Up,
    /// Asked to leave; the leader moves it to `Exiting`.
    Leaving,
    /// Leaving; the leader removes it at the next convergence.
    Exiting,
    /// Declared failed (by a downing strategy or an operator); the leader removes it.
    Down,
    /// Gone from the cluster (kept as a tombstone so a merge cannot bring it back).
    Removed,
}

impl MemberStatus {
    /// Its name as the CLI and events print it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Joining => "joining",
            Self::Up => "up",
            Self::Leaving => "leaving",
            Self::Exiting => "exiting",
            Self::Down => "down",
            Self::Removed => "removed",
        }
    }

    /// Neither down nor removed: still counted as part of the cluster.
    #[must_use]
    pub fn is_live(self) -> bool {
        !matches!(self, Self::Down | Self::Removed)
    }
}

/// A row of the membership table.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Member {
    /// Which incarnation of which node.
    pub id: NodeId,
    /// Where it is in its lifecycle.
    pub status: MemberStatus,
    /// The order in which members became `Up` (1 is the oldest); 0 before that.
    pub up_number: u64,
}

impl Member {
    /// The lattice order of two rows for the same address: later incarnation, then later
    /// status, then larger up number.
    pub(crate) fn rank(&self) -> (u64, MemberStatus, u64) {
        (self.id.uid, self.status, self.up_number)
    }

    /// The age key of keep-oldest: smaller is older; members not yet up are youngest.
    #[must_use]
    pub fn age_key(&self) -> (u64, &str) {
        (if self.up_number == 0 { u64::MAX } else { self.up_number }, self.id.addr.as_str())
    }
}
