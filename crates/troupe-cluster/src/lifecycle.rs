//! A [`Cluster`] in a `troupe::System`'s lifecycle (`troupe::lifecycle`).
//!
//! Rules (tests in `troupe-crdt/tests/replicator_shutdown.rs`, with a replicator):
//! 1. [`Cluster::start_in`] attaches the membership to the system; it stops in the first
//!    phase of the system's shutdown, [`Phase::LeaveCluster`], while the node is still open.
//! 2. Stopping leaves gracefully (leaving, exiting, removed: the other members see this node
//!    leave, not fail) and waits until this node's membership has ended.
//! 3. When the phase runs out first (no leader, a partition), the daemon is told to stop
//!    anyway (`daemon.rs` rule 5): nothing of the membership outlives the shutdown; the
//!    other members then see this node become unreachable when the node closes.

use std::time::Duration;

use troupe::lifecycle::{Phase, Service, StopFuture};
use troupe::System;
use troupe_remote::Node;

use crate::config::ClusterConfig;
use crate::daemon::{Cluster, Cmd};
use crate::error::Error;

impl Cluster {
    /// [`Cluster::start`], then attaches the membership to `system` (rule 1): the system's
    /// shutdown leaves the cluster gracefully before it stops the actors and closes the node.
    ///
    /// ```
    /// # #[tokio::main] async fn main() {
    /// use std::time::Duration;
    /// use troupe::{Phase, System};
    /// use troupe_cluster::{Cluster, ClusterConfig};
    /// use troupe_remote::{Node, NodeConfig};
    /// let sys = System::new();
    /// let node = Node::start_in(&sys, NodeConfig::new("solo", "s3cret")).await.unwrap();
    /// let cluster = Cluster::start_in(&sys, &node, ClusterConfig::default()).await.unwrap();
    /// cluster.wait_members(1, Duration::from_secs(10)).await.unwrap();
    /// let report = sys.shutdown().await;
    /// assert_eq!(report.phase(Phase::LeaveCluster).unwrap().services, ["cluster"]);
    /// assert!(report.timed_out().is_empty());
    /// assert!(cluster.status().phase.starts_with("stopped"));
    /// # }
    /// ```
    pub async fn start_in(system: &System, node: &Node, cfg: ClusterConfig) -> Result<Cluster, Error> {
        let cluster = Cluster::start(node, cfg).await?;
        system.attach(cluster.clone());
        Ok(cluster)
    }
}

/// Rule 3: tells the daemon to stop when dropped (after the leave, a no-op: it has ended).
struct StopDaemon(Cluster);

impl Drop for StopDaemon {
    fn drop(&mut self) {
        let _ = self.0.shared.cmd.send(Cmd::Stop);
    }
}

impl Service for Cluster {
    fn name(&self) -> &str {
        "cluster"
    }

    fn phase(&self) -> Phase {
        Phase::LeaveCluster
    }

    /// Rules 2 and 3.
    fn stop(&self) -> StopFuture {
        let guard = StopDaemon(self.clone());
        Box::pin(async move {
            // The phase's timeout bounds the wait (`troupe::lifecycle` rule 3).
            let _ = guard.0.leave_and_wait(Duration::from_secs(24 * 3600)).await;
            drop(guard);
        })
    }
}
