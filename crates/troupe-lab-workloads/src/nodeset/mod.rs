//! What the two nemesis workloads with cluster node processes share (`crdt`, `cluster`;
//! docs/nemesis-crdt.md, docs/nemesis-cluster.md): the node process ([`node`]) and the
//! orchestrator's handle on the set of them ([`fleet`]), which the nemesis acts on through
//! `troupe_lab::nemesis::procs::Target`.
//!
//! Rules:
//! 1. Node i is network node `node-<i>` ([`net_nodes`]); its address is fixed for the run
//!    ([`addresses`]): at the network layer its namespace's address, port [`NET_PORT`];
//!    otherwise a free loopback port. A node started again after a kill listens on the same
//!    address (a new incarnation of the same member address).
//! 2. Every node process gets the run's secret, its index and every address (its seeds) in
//!    the environment ([`ENV_SECRET`], [`ENV_INDEX`], [`ENV_ADDRS`]).

pub(crate) mod fleet;
pub(crate) mod node;

use std::time::Duration;

use troupe_cluster::Downing;

/// The run's secret.
pub(crate) const ENV_SECRET: &str = "TROUPE_NEM_SECRET";
/// A node process's index.
pub(crate) const ENV_INDEX: &str = "TROUPE_NEM_INDEX";
/// Every node's address, space-separated, by index.
pub(crate) const ENV_ADDRS: &str = "TROUPE_NEM_ADDRS";
/// The crdt planted bug (tests only; `node.rs` rule 4).
pub(crate) const ENV_CRDT_BUG: &str = "TROUPE_CRDT_PLANTED_BUG";
/// The cluster planted bug (tests only; `node.rs` rule 4).
pub(crate) const ENV_CLUSTER_BUG: &str = "TROUPE_CLUSTER_PLANTED_BUG";
/// How long a node process may take to start and join.
pub(crate) const START_LIMIT: Duration = Duration::from_secs(30);
/// The port every node listens on at the network layer (its namespace is its own).
pub(crate) const NET_PORT: u16 = 7300;

/// What a workload's node process runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Opts {
    /// The workload (for messages).
    pub(crate) workload: &'static str,
    /// The cluster's downing strategy.
    pub(crate) downing: Downing,
    /// Whether the node runs a replicator.
    pub(crate) replicator: bool,
    /// Whether the node prints its cluster events.
    pub(crate) events: bool,
    /// Whether `ready` waits until the node is a member (`node.rs` rule 1).
    pub(crate) ready_when_member: bool,
}

/// The network nodes of a run of `n` node processes (rule 1).
pub(crate) fn net_nodes(n: u32) -> Vec<String> {
    (0..n).map(|i| format!("node-{i}")).collect()
}

/// The nodes' addresses (rule 1).
pub(crate) fn addresses(n: u32) -> std::result::Result<Vec<String>, String> {
    if let Some(f) = troupe_lab::netlayer::NetFile::from_env()? {
        return net_nodes(n)
            .iter()
            .map(|name| {
                f.node(name).map(|p| format!("{}:{NET_PORT}", p.addr)).ok_or(format!("{name} is not in netns.json"))
            })
            .collect();
    }
    // Bound together, then released for the nodes.
    let listeners: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<_>>()
        .map_err(|e| format!("cannot find free loopback ports for the nodes: {e}"))?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.to_string()).map_err(|e| format!("cannot read a bound port: {e}")))
        .collect()
}

/// The command that starts node `i` of `workload` as `role` (rules 1-2).
pub(crate) fn starter(role: &'static str, secret: String, addrs: &[String]) -> fleet::Starter {
    let joined = addrs.join(" ");
    Box::new(move |i| {
        troupe_lab::nodes::NodeCmd::new(format!("node process node-{i}"), role)
            .net_node(&format!("node-{i}"))
            .env(ENV_SECRET, secret.clone())
            .env(ENV_INDEX, i.to_string())
            .env(ENV_ADDRS, joined.clone())
    })
}

/// A node's membership table, when it answered `status`.
pub(crate) async fn status(procs: &fleet::Procs, i: u32, limit: Duration) -> Option<troupe_cluster::Status> {
    match procs.ask(i, "status", "", limit).await {
        fleet::Answer::Ok(json) => serde_json::from_str(&json).ok(),
        _ => None,
    }
}

/// Whether a table shows `n` members, all up and reachable, converged.
pub(crate) fn all_up(s: &troupe_cluster::Status, n: usize) -> bool {
    s.converged
        && s.members.len() == n
        && s.members.iter().all(|m| m.reachable && m.status == troupe_cluster::MemberStatus::Up)
}

/// Waits (polling every 100 ms, at most `limit`) until every node sees all `n` members up
/// and reachable; an error naming the first node that does not.
pub(crate) async fn wait_all_up(procs: &fleet::Procs, limit: Duration) -> std::result::Result<(), String> {
    let n = procs.len();
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let mut behind = None;
        for i in 0..n {
            let s = status(procs, i, Duration::from_secs(2)).await;
            if !s.as_ref().is_some_and(|s| all_up(s, n as usize)) {
                behind = Some((i, s));
                break;
            }
        }
        let Some((i, s)) = behind else { return Ok(()) };
        if tokio::time::Instant::now() >= deadline {
            let seen = s.map_or("no answer".to_string(), |s| {
                let up = s.members.iter().filter(|m| m.status == troupe_cluster::MemberStatus::Up).count();
                format!("{up} of {} members up, converged {}", s.members.len(), s.converged)
            });
            return Err(format!("node-{i} did not see all {n} members up within {} s ({seen})", limit.as_secs()));
        }
        // Polling a table that changes by itself: there is no event to wait on from here.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
