//! In-process members for tests: real `troupe_remote::Node`s on 127.0.0.1, a cluster over
//! them and a replicator on each, formed with bounded waits (no sleeps); either started on
//! their own ([`members`]) or each owned by a `System` ([`system_members`]).

#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use troupe::System;
use troupe_cluster::{Cluster, ClusterConfig, MemberStatus};
use troupe_crdt::{Replicator, ReplicatorConfig};
use troupe_remote::{Node, NodeConfig};

pub const LONG: Duration = Duration::from_secs(30);

pub struct Member {
    pub node: Node,
    pub cluster: Cluster,
    pub r: Replicator,
}

/// Fast timings for a loopback cluster (100 ms heartbeats and gossip, 1 s to stability).
pub fn cluster_cfg(seeds: Vec<String>) -> ClusterConfig {
    ClusterConfig {
        seeds,
        heartbeat_interval_ms: 100,
        acceptable_pause_ms: 1500,
        min_std_dev_ms: 50,
        gossip_interval_ms: 100,
        stable_after_ms: 1000,
        join_retry_min_ms: 100,
        join_retry_max_ms: 500,
        ..ClusterConfig::default()
    }
}

/// `n` members named `{prefix}1..`, all up, reachable and converged in every member's view.
pub async fn members(prefix: &str, n: usize, rcfg: &ReplicatorConfig) -> Vec<Member> {
    let mut v: Vec<Member> = Vec::new();
    for i in 1..=n {
        let node = Node::start(NodeConfig::new(&format!("{prefix}{i}"), "crdt-obs")).await.unwrap();
        let seeds = v.first().map(|m| vec![m.node.addr()]).unwrap_or_default();
        let cluster = Cluster::start(&node, cluster_cfg(seeds)).await.unwrap();
        let r = Replicator::start(&cluster, rcfg.clone()).unwrap();
        v.push(Member { node, cluster, r });
    }
    for m in &v {
        let ok = |s: &troupe_cluster::Status| {
            s.converged && s.members.len() == n && s.members.iter().all(|m| m.reachable && m.status == MemberStatus::Up)
        };
        m.cluster.wait_status(ok, LONG).await.expect("the cluster formed");
    }
    v
}

/// A member whose `System` owns its node, membership and replicator (each `start_in`).
pub struct SysMember {
    pub sys: System,
    pub node: Node,
    pub cluster: Cluster,
    pub r: Replicator,
}

/// `n` members named `{prefix}1..`, each a `System` owning its node, membership and replicator,
/// joined through the first, all up and converged (bounded by `wait`). Checks on the way that
/// a replicator started with its system current adds no actor to that system (its supervisor
/// stops in the replicator's own phase, `replicator/` rule 9).
pub async fn system_members(prefix: &str, n: usize, secret: &str, wait: Duration) -> Vec<SysMember> {
    let mut v: Vec<SysMember> = Vec::new();
    for i in 1..=n {
        let sys = System::new();
        let node = Node::start_in(&sys, NodeConfig::new(&format!("{prefix}{i}"), secret)).await.unwrap();
        let seeds = v.first().map(|m| vec![m.node.addr()]).unwrap_or_default();
        let cluster = Cluster::start_in(&sys, &node, cluster_cfg(seeds)).await.unwrap();
        let before = sys.alive();
        let r = sys.run(async { Replicator::start_in(&sys, &cluster, ReplicatorConfig::default()) }).await.unwrap();
        assert_eq!(sys.alive(), before, "the replicator's supervisor and children are not the system's actors");
        v.push(SysMember { sys, node, cluster, r });
    }
    for m in &v {
        m.cluster.wait_members(n, wait).await.expect("all members up, converged");
    }
    v
}
