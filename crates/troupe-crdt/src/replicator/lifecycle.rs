//! A [`Replicator`] in a `troupe::System`'s lifecycle (`troupe::lifecycle`).
//!
//! Rules (tests in `troupe-crdt/tests/replicator_shutdown.rs`):
//! 1. [`Replicator::start_in`] attaches the replicator to the system; it stops in the phase
//!    [`Phase::StopReplicator`]: after the cluster was left and the application's actors
//!    stopped (they may write to it while they stop), before the node closes.
//! 2. Stopping stops the timers, unexports the replicator and waits until both are done;
//!    what it holds stays readable locally through the handle.

use troupe::lifecycle::{Phase, Service, StopFuture};
use troupe::System;
use troupe_cluster::Cluster;

use super::{Replicator, ReplicatorConfig};
use crate::error::Error;

impl Replicator {
    /// [`Replicator::start`], then attaches the replicator to `system` (rule 1).
    ///
    /// ```
    /// # #[tokio::main] async fn main() {
    /// use std::time::Duration;
    /// use troupe::{Phase, System};
    /// use troupe_cluster::{Cluster, ClusterConfig};
    /// use troupe_crdt::{Replicator, ReplicatorConfig};
    /// use troupe_remote::{Node, NodeConfig};
    /// let sys = System::new();
    /// let node = Node::start_in(&sys, NodeConfig::new("solo", "s3cret")).await.unwrap();
    /// let cluster = Cluster::start_in(&sys, &node, ClusterConfig::default()).await.unwrap();
    /// let _r = Replicator::start_in(&sys, &cluster, ReplicatorConfig::default()).unwrap();
    /// let report = sys.shutdown().await;
    /// assert_eq!(report.phase(Phase::StopReplicator).unwrap().services, ["replicator"]);
    /// assert!(report.timed_out().is_empty());
    /// # }
    /// ```
    pub fn start_in(system: &System, cluster: &Cluster, cfg: ReplicatorConfig) -> Result<Replicator, Error> {
        let r = Replicator::start(cluster, cfg)?;
        system.attach(r.clone());
        Ok(r)
    }
}

impl Service for Replicator {
    fn name(&self) -> &str {
        "replicator"
    }

    fn phase(&self) -> Phase {
        Phase::StopReplicator
    }

    /// Rule 2.
    fn stop(&self) -> StopFuture {
        Replicator::stop(self);
        let mut ended = self.inner.ended.subscribe();
        Box::pin(async move {
            let _ = ended.wait_for(|e| *e).await;
        })
    }
}
