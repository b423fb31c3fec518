//! The engine's refusals (engine rules 2 and 3) driven directly, without I/O: another
//! cluster's name, another protocol version, gossip from a stranger or over `max_members`.

use std::sync::Arc;

use troupe_cluster::{
    ClusterConfig, ClusterEvent, Engine, Gossip, Member, MemberStatus, NodeId, Out, Wire, PROTOCOL_VERSION,
};

fn id(addr: &str) -> NodeId {
    NodeId { addr: addr.into(), name: addr.into(), uid: 7 }
}

fn seed() -> Engine {
    let mut e = Engine::new(ClusterConfig { max_members: 3, ..ClusterConfig::fast() }, id("a:1"), 1, 0);
    let mut out = Vec::new();
    for t in 0..20 {
        e.tick(t * 10, &mut out);
    }
    assert_eq!(e.status().count(MemberStatus::Up), 1, "a lone seed starts the cluster and is up");
    e
}

fn refused(out: &[Out]) -> Vec<String> {
    out.iter()
        .filter_map(|o| match o {
            Out::Event(ClusterEvent::Refused { reason, .. }) => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_join_from_another_cluster_or_protocol_is_refused_with_the_reason_and_not_listed() {
    let mut e = seed();
    let mut out = Vec::new();
    e.receive(Wire::Join { cluster: "other".into(), proto: PROTOCOL_VERSION, node: id("b:1") }, 300, &mut out);
    e.receive(Wire::Join { cluster: "troupe".into(), proto: PROTOCOL_VERSION + 1, node: id("c:1") }, 300, &mut out);
    let r = refused(&out);
    assert_eq!(r.len(), 2, "{out:?}");
    assert!(r[0].contains("\"other\"") && r[1].contains("protocol"), "{r:?}");
    let answers: Vec<&String> = out
        .iter()
        .filter_map(|o| match o {
            Out::Send(to, Wire::JoinRefused { .. }) => Some(to),
            _ => None,
        })
        .collect();
    assert_eq!(answers, ["b:1", "c:1"], "each joiner is told why");
    assert_eq!(e.gossip().members.len(), 1, "neither appears in the table");
    assert_eq!(e.stats().refused, 2);
}

#[test]
fn garbage_gossip_is_dropped_and_changes_nothing() {
    let mut e = seed();
    let before = e.gossip().clone();
    let mut out = Vec::new();
    let mut stranger = Gossip::default();
    stranger.members.insert("x:1".into(), Member { id: id("x:1"), status: MemberStatus::Up, up_number: 1 });
    let g = |from: &str, cluster: &str, proto, gossip: &Gossip| Wire::Gossip {
        cluster: cluster.into(),
        proto,
        from: from.into(),
        gossip: Arc::new(gossip.clone()),
    };
    e.receive(g("y:1", "troupe", PROTOCOL_VERSION, &stranger), 300, &mut out);
    e.receive(g("x:1", "other", PROTOCOL_VERSION, &stranger), 300, &mut out);
    e.receive(g("x:1", "troupe", 99, &stranger), 300, &mut out);
    let mut big = stranger.clone();
    for i in 0..5 {
        let a = format!("m{i}:1");
        big.members.insert(a.clone(), Member { id: id(&a), status: MemberStatus::Up, up_number: 2 + i });
    }
    e.receive(g("x:1", "troupe", PROTOCOL_VERSION, &big), 300, &mut out);
    let r = refused(&out);
    assert_eq!(r.len(), 4, "{r:?}");
    assert!(r[0].contains("not in its own table") && r[3].contains("max_members"), "{r:?}");
    assert!(e.gossip().same_content(&before), "nothing merged");
}

/// Regression: `wait_members` missed a cluster that converged without a new event (the
/// convergence itself raises none); it now re-checks at every status change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_members_sees_convergence_that_raises_no_event() {
    use troupe_remote::{Node, NodeConfig};
    let cfg = ClusterConfig {
        heartbeat_interval_ms: 100,
        acceptable_pause_ms: 1000,
        gossip_interval_ms: 1000,
        ..ClusterConfig::default()
    };
    let a = Node::start(NodeConfig::new("a", "s")).await.unwrap();
    let b = Node::start(NodeConfig::new("b", "s")).await.unwrap();
    let ca = troupe_cluster::Cluster::start(&a, cfg.clone()).await.unwrap();
    let cb = troupe_cluster::Cluster::start(&b, ClusterConfig { seeds: vec![a.addr()], ..cfg }).await.unwrap();
    for c in [&ca, &cb] {
        c.wait_members(2, std::time::Duration::from_secs(60)).await.expect("both see two members up, converged");
    }
}
