//! In-process cluster members for tests: real `troupe_remote::Node`s on 127.0.0.1 with fast
//! timings, joined through the first and formed with a bounded wait (no sleeps).

#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use troupe_cluster::{Cluster, ClusterConfig, Downing};
use troupe_remote::{Node, NodeConfig};

/// How long a test waits for the cluster to form or to reach a state on its own timers.
pub const LONG: Duration = Duration::from_secs(60);

/// Fast timings for a loopback cluster (100 ms heartbeats and gossip, 1 s pauses tolerated,
/// 1.5 s to stability) with the given downing strategy.
pub fn cfg(seeds: Vec<String>, downing: Downing) -> ClusterConfig {
    ClusterConfig {
        seeds,
        heartbeat_interval_ms: 100,
        acceptable_pause_ms: 1000,
        min_std_dev_ms: 50,
        gossip_interval_ms: 100,
        stable_after_ms: 1500,
        join_retry_min_ms: 100,
        join_retry_max_ms: 500,
        downing,
        ..ClusterConfig::default()
    }
}

/// `n` members named `{prefix}1..` (secret `prefix`), all up and converged in every view.
pub async fn members(prefix: &str, n: usize, downing: Downing) -> Vec<(Node, Cluster)> {
    let mut v: Vec<(Node, Cluster)> = Vec::new();
    for i in 1..=n {
        let node = Node::start(NodeConfig::new(&format!("{prefix}{i}"), prefix)).await.unwrap();
        let seeds = v.first().map(|(n, _)| vec![n.addr()]).unwrap_or_default();
        let c = Cluster::start(&node, cfg(seeds, downing)).await.unwrap();
        v.push((node, c));
    }
    for (_, c) in &v {
        c.wait_members(n, LONG).await.expect("all members up, converged");
    }
    v
}
