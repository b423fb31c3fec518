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

/// Five engines joined through `a`, messages passed at once; ticks every 10 ms until `t_end`.
/// Returns what each engine sent, by sender, from `record_from` on.
fn pump(
    engines: &mut std::collections::BTreeMap<String, Engine>,
    t0: u64,
    t_end: u64,
    record_from: u64,
) -> std::collections::BTreeMap<String, Vec<(String, Wire)>> {
    let mut sent: std::collections::BTreeMap<String, Vec<(String, Wire)>> = Default::default();
    let mut t = t0;
    while t < t_end {
        let mut queue: std::collections::VecDeque<(String, Out)> = Default::default();
        for (a, e) in engines.iter_mut() {
            let mut out = Vec::new();
            e.tick(t, &mut out);
            queue.extend(out.into_iter().map(|o| (a.clone(), o)));
        }
        let mut budget = 10_000;
        while let Some((from, o)) = queue.pop_front() {
            budget -= 1;
            assert!(budget > 0, "messages never settle");
            let Out::Send(to, w) = o else { continue };
            if t >= record_from {
                sent.entry(from.clone()).or_default().push((to.clone(), w.clone()));
            }
            if let Some(e) = engines.get_mut(&to) {
                let mut out = Vec::new();
                e.receive(w, t, &mut out);
                queue.extend(out.into_iter().map(|o| (to.clone(), o)));
            }
        }
        t += 10;
    }
    sent
}

/// Engine rule 9: on an overlay a member gossips and heartbeats only its neighbours; a former
/// neighbour stays monitored for a while (its failure is still judged), then not.
#[test]
fn rule_9_on_an_overlay_gossip_and_heartbeats_go_to_the_neighbours_only() {
    let cfg = ClusterConfig { heartbeat_interval_ms: 100, gossip_interval_ms: 50, ..ClusterConfig::fast() };
    let mut engines = std::collections::BTreeMap::new();
    for (i, a) in ["a:1", "b:1", "c:1", "d:1", "e:1"].into_iter().enumerate() {
        let seeds = if a == "a:1" { Vec::new() } else { vec!["a:1".to_owned()] };
        engines.insert(a.to_owned(), Engine::new(ClusterConfig { seeds, ..cfg.clone() }, id(a), i as u64 + 1, 0));
    }
    pump(&mut engines, 0, 5_000, u64::MAX);
    assert!(engines.values().all(|e| e.status().count(MemberStatus::Up) == 5), "all five up");
    // A ring of five: each node's neighbours are the two next to it.
    let ring = [
        ("a:1", ["b:1", "e:1"]),
        ("b:1", ["a:1", "c:1"]),
        ("c:1", ["b:1", "d:1"]),
        ("d:1", ["c:1", "e:1"]),
        ("e:1", ["d:1", "a:1"]),
    ];
    let mut set = |a: &str, n: &[&str]| {
        engines.get_mut(a).unwrap().set_neighbours(Some(n.iter().map(|s| (*s).to_owned()).collect()));
    };
    for (a, n) in ring {
        set(a, &n);
    }
    let sent = pump(&mut engines, 5_000, 7_000, 5_000);
    for (a, n) in ring {
        let to: std::collections::BTreeSet<&str> = sent[a].iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(to, n.into_iter().collect(), "{a} talks to its neighbours only");
        assert!(sent[a].iter().any(|(_, w)| matches!(w, Wire::Heartbeat { .. })), "{a} monitors them");
    }
    // The link a - e goes: e is still monitored by a for 20 heartbeat intervals (2 s here),
    // then not.
    engines.get_mut("a:1").unwrap().set_neighbours(Some(["b:1".to_owned()].into()));
    engines.get_mut("e:1").unwrap().set_neighbours(Some(["d:1".to_owned()].into()));
    let hb_to_e = |s: &std::collections::BTreeMap<String, Vec<(String, Wire)>>| {
        s["a:1"].iter().filter(|(t, w)| t == "e:1" && matches!(w, Wire::Heartbeat { .. })).count()
    };
    let sent = pump(&mut engines, 7_000, 8_000, 7_000);
    assert!(hb_to_e(&sent) > 0, "a former neighbour is still monitored at first");
    let sent = pump(&mut engines, 8_000, 11_000, 9_500);
    assert_eq!(hb_to_e(&sent), 0, "then no longer");
    // Without an overlay again, a monitors by the ring as before.
    engines.get_mut("a:1").unwrap().set_neighbours(None);
    let sent = pump(&mut engines, 11_000, 12_000, 11_000);
    assert!(sent["a:1"].iter().any(|(t, _)| t != "b:1" && t != "e:1"), "back to every member");
}
