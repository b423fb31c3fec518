//! A member's view of its cluster published through the [`metrics`] facade at scrape time
//! (feature `metrics`).
//!
//! The daemon keeps its state and counters in snapshots it refreshes after every step
//! (`daemon.rs` rule 2); nothing on its path talks to a recorder. Whoever renders `/metrics`
//! calls [`publish`] right before rendering: it reads those snapshots and hands them to the
//! installed recorder as absolute values. [`describe`] gives each series its help text; call
//! it once after installing the recorder.
//!
//! Rules:
//! 1. Every series without a per-member label is published at every call, zeros included:
//!    `troupe_cluster_members` once for every status.
//! 2. The only per-member label is on `troupe_cluster_phi`, one series per member this node
//!    monitors (at most `monitored_by`), so labels are bounded by the cluster's size.
//! 3. A member this node stops monitoring (it left, was removed, the ring moved) has its
//!    `troupe_cluster_phi` series set to 0 at the next call, so a stale suspicion never
//!    lingers on a dashboard.
//!
//! # Series
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `troupe_cluster_members` | gauge | `status` = `joining`, `up`, `leaving`, `exiting`, `down`, `removed` | members in this node's table by status (`removed`: tombstones still held) |
//! | `troupe_cluster_unreachable` | gauge | | live members some live observer judges unreachable now |
//! | `troupe_cluster_self_up` | gauge | | 1 when this node is a member with status up ([`Cluster::is_up`]), else 0 |
//! | `troupe_cluster_is_leader` | gauge | | 1 when this node is the leader in its own view, else 0 |
//! | `troupe_cluster_converged` | gauge | | 1 when every reachable live member has seen this node's state, else 0 |
//! | `troupe_cluster_gossip_rounds_total` | counter | | periodic gossip rounds run (one every `gossip_interval_ms` while a member) |
//! | `troupe_cluster_gossip_messages_total` | counter | `direction` = `in`, `out` | gossip messages received and merged / sent (rounds, pushes of changes, push-pull answers) |
//! | `troupe_cluster_heartbeats_sent_total` | counter | | failure-detector heartbeats sent to monitored members |
//! | `troupe_cluster_refused_total` | counter | | joins and gossip refused (another cluster name or protocol, unknown sender, too many members) |
//! | `troupe_cluster_join_retries_total` | counter | | join rounds no seed answered |
//! | `troupe_cluster_phi` | gauge | `member` = node name, `addr` = its address | phi-accrual suspicion of each monitored member, as of the daemon's last tick (at most 100 ms old); compare with `phi_threshold` |
//!
//! ```
//! # #[tokio::main] async fn main() {
//! use troupe_cluster::{Cluster, ClusterConfig};
//! use troupe_remote::{Node, NodeConfig};
//! let node = Node::start(NodeConfig::new("solo", "s3cret")).await.unwrap();
//! let cluster = Cluster::start(&node, ClusterConfig::default()).await.unwrap();
//! // With a recorder installed (say a Prometheus exporter), before rendering /metrics:
//! troupe_cluster::metrics::publish(&cluster);
//! node.shutdown();
//! # }
//! ```

use ::metrics::{counter, describe_counter, describe_gauge, gauge, Unit};

use crate::member::MemberStatus;
use crate::Cluster;

/// Every status, in lifecycle order: the `status` values of `troupe_cluster_members`.
pub const STATUSES: [MemberStatus; 6] = [
    MemberStatus::Joining,
    MemberStatus::Up,
    MemberStatus::Leaving,
    MemberStatus::Exiting,
    MemberStatus::Down,
    MemberStatus::Removed,
];

/// Reads `cluster`'s snapshots and publishes every series of the module docs to the installed
/// recorder. Cheap enough for every scrape.
pub fn publish(cluster: &Cluster) {
    let g = cluster.gossip();
    for status in STATUSES {
        let n = g.members.values().filter(|m| m.status == status).count();
        gauge!("troupe_cluster_members", "status" => status.as_str()).set(n as f64);
    }
    gauge!("troupe_cluster_unreachable").set(g.unreachable().len() as f64);
    let flag = |b: bool| if b { 1.0 } else { 0.0 };
    gauge!("troupe_cluster_self_up").set(flag(cluster.is_up()));
    let me = cluster.me();
    gauge!("troupe_cluster_is_leader").set(flag(g.leader().as_deref() == Some(me.addr.as_str())));
    gauge!("troupe_cluster_converged").set(flag(g.converged()));

    let s = cluster.stats();
    counter!("troupe_cluster_gossip_rounds_total").absolute(s.gossip_rounds);
    counter!("troupe_cluster_gossip_messages_total", "direction" => "in").absolute(s.gossip_in);
    counter!("troupe_cluster_gossip_messages_total", "direction" => "out").absolute(s.gossip_out);
    counter!("troupe_cluster_heartbeats_sent_total").absolute(s.heartbeats_out);
    counter!("troupe_cluster_refused_total").absolute(s.refused);
    counter!("troupe_cluster_join_retries_total").absolute(s.join_retries);

    // Rule 3: series of members no longer monitored go to 0.
    let now = cluster.phi();
    let mut published = cluster.shared.phi_published.lock();
    let current: std::collections::BTreeSet<(String, String)> =
        now.iter().map(|(addr, name, _)| (name.clone(), addr.clone())).collect();
    for (name, addr) in published.difference(&current) {
        gauge!("troupe_cluster_phi", "member" => name.clone(), "addr" => addr.clone()).set(0.0);
    }
    for (addr, name, phi) in now {
        gauge!("troupe_cluster_phi", "member" => name, "addr" => addr).set(phi);
    }
    *published = current;
}

/// Gives every series of the module docs its unit and help text. Call it once, after
/// installing the recorder.
pub fn describe() {
    let g = |name: &'static str, help: &'static str| describe_gauge!(name, Unit::Count, help);
    let c = |name: &'static str, help: &'static str| describe_counter!(name, Unit::Count, help);
    g("troupe_cluster_members", "Members in this node's table by status (removed: tombstones held).");
    g("troupe_cluster_unreachable", "Live members judged unreachable now.");
    g("troupe_cluster_self_up", "1 when this node is a member with status up, else 0.");
    g("troupe_cluster_is_leader", "1 when this node is the leader in its own view, else 0.");
    g("troupe_cluster_converged", "1 when every reachable live member has seen this node's state, else 0.");
    c("troupe_cluster_gossip_rounds_total", "Periodic gossip rounds run.");
    c("troupe_cluster_gossip_messages_total", "Gossip messages received and merged (in) and sent (out).");
    c("troupe_cluster_heartbeats_sent_total", "Failure-detector heartbeats sent.");
    c("troupe_cluster_refused_total", "Joins and gossip refused.");
    c("troupe_cluster_join_retries_total", "Join rounds no seed answered.");
    describe_gauge!(
        "troupe_cluster_phi",
        "Phi-accrual suspicion of each monitored member (compare with phi_threshold)."
    );
}
