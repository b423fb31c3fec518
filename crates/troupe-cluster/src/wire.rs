//! The membership protocol's messages ([`Wire`]) and what a node reports to subscribers
//! ([`ClusterEvent`]). `Wire` travels between nodes as the payload of [`ClusterMsg`], the
//! message type of the `troupe.cluster` actor every member exports.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use troupe::ReplyTo;
use troupe_remote::{Nested, RemoteMessage};

use crate::gossip::Gossip;
use crate::member::{MemberStatus, NodeId};
use crate::status::Status;

/// The export name of every member's cluster actor.
pub const CLUSTER_ACTOR: &str = "troupe.cluster";

/// Node-to-node membership messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Wire {
    /// A node asks to join through this one.
    Join {
        /// The cluster it wants to join.
        cluster: String,
        /// Its protocol version.
        proto: u32,
        /// Who it is.
        node: NodeId,
    },
    /// The join is accepted: the current state, the joiner included as `Joining`.
    Welcome {
        /// The cluster's name.
        cluster: String,
        /// The state.
        gossip: Arc<Gossip>,
    },
    /// The join is refused, and why.
    JoinRefused {
        /// Who refused.
        from: String,
        /// Why (cluster name or protocol version mismatch).
        reason: String,
    },
    /// A gossip round's state.
    Gossip {
        /// The sender's cluster.
        cluster: String,
        /// The sender's protocol version.
        proto: u32,
        /// The sender's address.
        from: String,
        /// Its state.
        gossip: Arc<Gossip>,
    },
    /// A failure-detector heartbeat.
    Heartbeat {
        /// The observer's address (where the response goes).
        from: String,
        /// A sequence number echoed in the response.
        seq: u64,
    },
    /// The answer to a heartbeat.
    HeartbeatRsp {
        /// The subject's address.
        from: String,
        /// The subject's incarnation.
        uid: u64,
        /// The heartbeat's sequence number.
        seq: u64,
    },
}

/// The message type of the `troupe.cluster` actor.
#[derive(Serialize, Deserialize)]
pub enum ClusterMsg {
    /// A protocol message from another member.
    Wire(Wire),
    /// `troupe cluster status`: the membership table as this node sees it.
    Status(ReplyTo<Status>),
}

impl RemoteMessage for ClusterMsg {
    const TAG: &'static str = "troupe.cluster.v1";
    fn nested(n: &mut Nested) {
        n.add::<Status>();
    }
}

/// What a member reports to subscribers ([`crate::Cluster::subscribe`]); one JSON line each
/// after `event ` on a cluster node's standard output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "ev", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ClusterEvent {
    /// A member asked to join.
    MemberJoined {
        /// Its address.
        addr: String,
        /// Its node name.
        name: String,
    },
    /// A member is up.
    MemberUp {
        /// Its address.
        addr: String,
        /// Its node name.
        name: String,
    },
    /// A member is leaving.
    MemberLeft {
        /// Its address.
        addr: String,
        /// Its node name.
        name: String,
    },
    /// A leaving member is exiting.
    MemberExited {
        /// Its address.
        addr: String,
        /// Its node name.
        name: String,
    },
    /// A member was downed.
    MemberDowned {
        /// Its address.
        addr: String,
        /// Its node name.
        name: String,
    },
    /// A member is gone.
    MemberRemoved {
        /// Its address.
        addr: String,
        /// Its node name.
        name: String,
        /// Its status before removal.
        previous: MemberStatus,
    },
    /// A member's failure detector fired (some observer marks it unreachable).
    Unreachable {
        /// Its address.
        addr: String,
        /// Its node name.
        name: String,
    },
    /// A member is reachable again (every observer's heartbeats arrive).
    Reachable {
        /// Its address.
        addr: String,
        /// Its node name.
        name: String,
    },
    /// The leader changed (None: no leader, e.g. all unreachable).
    LeaderChanged {
        /// The new leader's address.
        leader: Option<String>,
    },
    /// No seed answered; the next attempt is scheduled.
    JoinRetry {
        /// The addresses tried.
        tried: Vec<String>,
        /// Milliseconds until the next attempt.
        next_in_ms: u64,
    },
    /// A seed refused this node's join.
    JoinRefused {
        /// The seed.
        seed: String,
        /// Why.
        reason: String,
    },
    /// This node refused another's join or dropped its gossip.
    Refused {
        /// The other node.
        from: String,
        /// Why.
        reason: String,
    },
    /// Two members registered the same global name; the loser's registration was dropped.
    NameConflict {
        /// The name.
        name: String,
        /// The member that keeps it.
        winner: String,
        /// The member whose registration was dropped.
        loser: String,
    },
    /// This node's membership ended (it left, was downed, or a newer incarnation replaced it).
    Stopped {
        /// Why.
        reason: String,
    },
}
