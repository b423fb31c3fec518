//! One lifecycle for an application (`troupe::lifecycle` rules 1-5, `troupe-cluster`'s and
//! `troupe-crdt`'s `lifecycle.rs`, `troupe-remote`'s `node/lifecycle.rs`): three members, each a
//! `System` owning its node, cluster membership and replicator, on loopback. Shutting one
//! down leaves the cluster gracefully (the others see it leave and be removed, never become
//! unreachable or downed), stops its actors in reverse start order, stops its replicator,
//! frees its port; and a phase that hangs is abandoned at its bound.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use troupe::lifecycle::{Phase, Service, StopFuture};
use troupe::{Actor, Ctx, ExitReason, System};
use troupe_cluster::{Cluster, ClusterEvent, MemberStatus};
use troupe_crdt::{Consistency, GCounter, Key, Replicator, ReplicatorConfig};
use troupe_remote::{Node, NodeConfig};

const LONG: Duration = Duration::from_secs(60);

mod inproc;
use inproc::SysMember as Member;

async fn members(n: usize) -> Vec<Member> {
    inproc::system_members("life", n, "life-test", LONG).await
}

/// Logs its name in its `stopped` hook.
struct Worker(&'static str, Arc<Mutex<Vec<&'static str>>>);

impl Actor for Worker {
    type Msg = ();
    async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {}
    async fn stopped(&mut self, _: &ExitReason, _: &mut Ctx<Self>) {
        self.1.lock().push(self.0);
    }
}

/// Waits (bounded) until `rx` reports `addr` removed; fails on any sign that it was seen to
/// fail instead of leave (unreachable, downed, removed from another status than exiting).
async fn sees_it_leave(rx: &mut tokio::sync::broadcast::Receiver<ClusterEvent>, addr: &str, who: &str) {
    let wait = async {
        loop {
            match rx.recv().await.expect("events keep coming") {
                ClusterEvent::Unreachable { addr: a, .. } | ClusterEvent::MemberDowned { addr: a, .. } if a == addr => {
                    panic!("{who} saw {addr} fail instead of leave");
                }
                ClusterEvent::MemberRemoved { addr: a, previous, .. } if a == addr => return previous,
                _ => {}
            }
        }
    };
    let previous = tokio::time::timeout(LONG, wait).await.unwrap_or_else(|_| panic!("{who} saw {addr} removed"));
    // An observer may merge leaving -> exiting -> removed in one gossip: it saw leaving last.
    assert!(
        matches!(previous, MemberStatus::Leaving | MemberStatus::Exiting),
        "{who}: removed after leaving or exiting, as a leaving member is, not after {previous:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutting_a_member_down_leaves_the_cluster_stops_its_actors_and_frees_its_port() {
    let mut v = members(3).await;
    let leaving = v.pop().unwrap();
    let addr = leaving.node.addr();
    let mut seen: Vec<_> = v.iter().map(|m| m.cluster.subscribe()).collect();

    // Its actors, and a write every replica acknowledged before it goes.
    let log = Arc::new(Mutex::new(Vec::new()));
    leaving.sys.spawn(Worker("first", log.clone()));
    leaving.sys.spawn(Worker("second", log.clone()));
    let hits = Key::<GCounter>::new("hits");
    leaving.r.update(&hits, Consistency::All, LONG, |c, me| c.increment(me, 3)).await.unwrap();

    let report = tokio::time::timeout(LONG, leaving.sys.shutdown()).await.expect("shutdown ends");
    assert!(report.first && report.timed_out().is_empty(), "{report:?}");
    let services = |p: Phase| report.phase(p).unwrap().services.clone();
    assert_eq!(services(Phase::LeaveCluster), ["cluster"]);
    assert_eq!(services(Phase::StopReplicator), ["replicator"]);
    assert_eq!(services(Phase::CloseNode), ["life3"]);

    // Phase 1: the membership ended by leaving, and the others saw it leave.
    assert!(leaving.cluster.status().phase.starts_with("stopped"), "{:?}", leaving.cluster.status().phase);
    for (i, rx) in seen.iter_mut().enumerate() {
        sees_it_leave(rx, &addr, &format!("life{}", i + 1)).await;
    }
    for m in &v {
        m.cluster.wait_members(2, LONG).await.expect("the two others stay up");
    }
    // Phase 2: reverse start order.
    assert_eq!(*log.lock(), ["second", "first"]);
    // Phase 4: the port is free.
    tokio::net::TcpListener::bind(&addr).await.expect("the closed node's port can be bound again");
    // What it wrote is still with the others.
    assert_eq!(v[0].r.get(&hits, Consistency::Local, LONG).await.unwrap().value(), 3);

    // Idempotent: a second call returns at once.
    let again = tokio::time::timeout(Duration::from_secs(1), leaving.sys.shutdown()).await.expect("at once");
    assert!(!again.first);
    for m in v {
        m.sys.shutdown().await;
    }
}

/// Never finishes stopping.
struct Hang;

impl Service for Hang {
    fn name(&self) -> &str {
        "hang"
    }
    fn phase(&self) -> Phase {
        Phase::StopReplicator
    }
    fn stop(&self) -> StopFuture {
        Box::pin(std::future::pending())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phase_that_hangs_is_abandoned_at_its_bound_and_the_node_still_closes() {
    let bound = Duration::from_millis(500);
    let sys = System::new().with_phase_timeout(Phase::StopReplicator, bound);
    let node = Node::start_in(&sys, NodeConfig::new("hang1", "life-test")).await.unwrap();
    let cluster = Cluster::start_in(&sys, &node, inproc::cluster_cfg(Vec::new())).await.unwrap();
    cluster.wait_members(1, LONG).await.unwrap();
    let _r = Replicator::start_in(&sys, &cluster, ReplicatorConfig::default()).unwrap();
    sys.attach(Hang);
    let addr = node.addr();

    let started = std::time::Instant::now();
    let report = tokio::time::timeout(LONG, sys.shutdown()).await.expect("shutdown is bounded");
    let took = started.elapsed();
    assert!(took >= bound && took < Duration::from_secs(30), "took {took:?}");
    assert_eq!(report.timed_out(), [Phase::StopReplicator]);
    let phase = report.phase(Phase::StopReplicator).unwrap();
    assert_eq!(phase.services, ["hang", "replicator"], "the last attached stops first");
    // The replicator's stop, begun past the deadline, got one poll (it may have ended by then).
    assert_eq!(phase.overran.first().map(String::as_str), Some("hang"));
    // The next phase ran anyway.
    assert_eq!(report.phase(Phase::CloseNode).unwrap().services, ["hang1"]);
    tokio::net::TcpListener::bind(&addr).await.expect("the node closed after the overrun");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leave_that_cannot_complete_is_abandoned_and_the_membership_still_ends() {
    let mut v = members(2).await;
    let cut_off = v.pop().unwrap();
    let other = v.pop().unwrap();
    // Nothing gets through between the two: the leave cannot converge.
    cut_off.node.partition(&other.node.addr());
    let bound = Duration::from_millis(500);
    let sys = cut_off.sys.with_phase_timeout(Phase::LeaveCluster, bound);
    let report = tokio::time::timeout(LONG, sys.shutdown()).await.expect("shutdown is bounded");
    assert_eq!(report.timed_out(), [Phase::LeaveCluster], "{report:?}");
    assert_eq!(report.phase(Phase::LeaveCluster).unwrap().overran, ["cluster"]);
    // The daemon was told to stop anyway (cluster `lifecycle.rs` rule 3): it takes no commands.
    let down = cut_off.cluster.down(&other.node.addr()).await;
    assert!(down.is_err(), "the daemon has ended: {down:?}");
    tokio::net::TcpListener::bind(&cut_off.node.addr()).await.expect("the node closed after the overrun");
    // The other cannot leave gracefully either (its only peer is gone unannounced).
    other.sys.with_phase_timeout(Phase::LeaveCluster, bound).shutdown().await;
}
