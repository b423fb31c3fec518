//! The replicator's rules (module docs of `replicator/`) with in-process nodes on loopback:
//! each test forms a cluster of real `troupe_remote::Node`s (TCP on 127.0.0.1), starts a
//! replicator on each, and waits for events (subscriptions, acknowledged calls), never sleeps.

use std::time::Duration;

use troupe_cluster::{Cluster, ClusterConfig};
use troupe_crdt::{
    Changes, Consistency, CrdtMsg, DeltaCrdt, ErrorKind, GCounter, GSet, Key, ORSet, Replicator, ReplicatorConfig,
    WireAck, REPLICATOR_ACTOR,
};
use troupe_remote::{codec, tag_hash, FaultConfig, Node, NodeConfig};

const LONG: Duration = Duration::from_secs(30);
const SHORT: Duration = Duration::from_millis(400);

struct Member {
    node: Node,
    cluster: Cluster,
    r: Replicator,
}

fn cluster_cfg(seeds: Vec<String>) -> ClusterConfig {
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

async fn member(name: &str, seeds: Vec<String>, rcfg: &ReplicatorConfig) -> Member {
    let node = Node::start(NodeConfig::new(name, "crdt-test")).await.unwrap();
    let cluster = Cluster::start(&node, cluster_cfg(seeds)).await.unwrap();
    let r = Replicator::start(&cluster, rcfg.clone()).unwrap();
    Member { node, cluster, r }
}

async fn members(n: usize, rcfg: &ReplicatorConfig) -> Vec<Member> {
    let first = member("m1", Vec::new(), rcfg).await;
    let seed = first.node.addr();
    let mut v = vec![first];
    for i in 2..=n {
        v.push(member(&format!("m{i}"), vec![seed.clone()], rcfg).await);
    }
    for m in &v {
        up(&m.cluster, n).await;
    }
    v
}

/// Waits (bounded) until `c` sees `n` members up, reachable, converged: re-checked on every
/// cluster event and at least every 100 ms (convergence itself raises no event).
async fn up(c: &Cluster, n: usize) {
    let mut events = c.subscribe();
    let deadline = tokio::time::Instant::now() + LONG;
    loop {
        let s = c.status();
        let ok = s.converged
            && s.members.len() == n
            && s.members.iter().all(|m| m.reachable && m.status == troupe_cluster::MemberStatus::Up);
        if ok {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "cluster of {n} not formed: {s:?}");
        let _ = tokio::time::timeout(Duration::from_millis(100), events.recv()).await;
    }
}

/// Waits (bounded) until the subscribed value satisfies `pred`.
async fn until<T: DeltaCrdt>(ch: &mut Changes<T>, pred: impl Fn(&T) -> bool) -> T {
    let v = ch.current();
    if pred(&v) {
        return v;
    }
    tokio::time::timeout(LONG, async {
        loop {
            let v = ch.changed().await.unwrap();
            if pred(&v) {
                return v;
            }
        }
    })
    .await
    .expect("the value was not reached in time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_majority_write_reaches_every_member_and_an_all_read_merges_the_others() {
    let m = members(3, &ReplicatorConfig::default()).await;
    let k = Key::<GCounter>::new("hits");
    let mut subs: Vec<Changes<GCounter>> = m[1..].iter().map(|x| x.r.subscribe(&k).unwrap()).collect();
    let v = m[0].r.update(&k, Consistency::Majority, LONG, |c, me| c.increment(me, 2)).await.unwrap();
    assert_eq!(v.value(), 2);
    for s in &mut subs {
        until(s, |c| c.value() == 2).await;
    }
    // Rule 6 for reads: b writes locally; c's `All` read must include it.
    let r = Key::<ORSet<String>>::new("names");
    m[1].r.update(&r, Consistency::Local, LONG, |s, me| s.add(me, "bee".into())).await.unwrap();
    let seen = m[2].r.get(&r, Consistency::All, LONG).await.unwrap();
    assert!(seen.contains(&"bee".to_owned()));
    assert_eq!(m[0].r.stats().rejected_decode + m[0].r.stats().rejected_kind, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_converge_under_drops_and_duplicates_through_resends_alone() {
    // Gossip off (an hour): only rule 4's resends can make up for dropped deltas and acks.
    let rcfg = ReplicatorConfig { gossip_interval_ms: 3_600_000, resend_interval_ms: 100, ..Default::default() };
    let m = members(3, &rcfg).await;
    for (i, x) in m.iter().enumerate() {
        let f = FaultConfig { drop: 0.3, duplicate: 0.3, seed: 7 + i as u64, ..FaultConfig::default() };
        x.node.set_faults(None, None, f);
    }
    let k = Key::<GCounter>::new("c");
    let s = Key::<ORSet<u32>>::new("s");
    let mut subs: Vec<_> = m.iter().map(|x| (x.r.subscribe(&k).unwrap(), x.r.subscribe(&s).unwrap())).collect();
    for round in 0..20u32 {
        for x in &m {
            x.r.update(&k, Consistency::Local, LONG, |c, me| c.increment(me, 1)).await.unwrap();
            x.r.update(&s, Consistency::Local, LONG, |c, me| c.add(me, round)).await.unwrap();
            if round % 3 == 0 {
                x.r.update(&s, Consistency::Local, LONG, |c, _| c.remove(&round)).await.unwrap();
            }
        }
    }
    // Every replica holds its own operations: the join of the three is the final state.
    let mut all = ORSet::default();
    for x in &m {
        all.merge(&x.r.get(&s, Consistency::Local, SHORT).await.unwrap());
    }
    assert_eq!(all.len(), 13, "20 rounds, the 7 rounds divisible by 3 removed");
    for (c, st) in &mut subs {
        until(c, |c| c.value() == 60).await;
        until(st, |s| *s == all).await;
    }
    assert!(m.iter().map(|x| x.r.stats()).all(|s| s.rejected_decode == 0 && s.rejected_kind == 0));
    // The faults did bite: more delta messages than one per update and peer (the resends).
    let updates_times_peers = 3 * (20 + 20 + 7) * 2;
    let sent: u64 = m.iter().map(|x| x.r.stats().deltas_sent).sum();
    assert!(sent > updates_times_peers, "{sent} delta messages: no resend happened");
    let dropped: u64 = m.iter().map(|x| x.node.stats().fault_dropped).sum();
    let duplicated: u64 = m.iter().map(|x| x.node.stats().fault_duplicated).sum();
    assert!(dropped > 10 && duplicated > 10, "dropped {dropped}, duplicated {duplicated}");
    assert!(m.iter().all(|x| x.r.stats().states_sent == 0), "gossip was off");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_joins_later_gets_the_state_from_full_state_gossip() {
    // Resends off (an hour): only rule 5's gossip reaches the newcomer.
    let rcfg = ReplicatorConfig { resend_interval_ms: 3_600_000, gossip_interval_ms: 100, ..Default::default() };
    let m = members(2, &rcfg).await;
    let k = Key::<GSet<u8>>::new("g");
    for i in 0..5 {
        m[0].r.update(&k, Consistency::All, LONG, |s, _| s.insert(i)).await.unwrap();
    }
    let late = member("late", vec![m[0].node.addr()], &rcfg).await;
    up(&late.cluster, 3).await;
    let mut sub = late.r.subscribe(&k).unwrap();
    until(&mut sub, |s| s.len() == 5).await;
    assert!(late.r.stats().states_received > 0 && late.r.stats().deltas_received == 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn majority_and_all_without_enough_reachable_members_time_out_and_never_report_success() {
    let m = members(3, &ReplicatorConfig::default()).await;
    let k = Key::<GCounter>::new("k");
    let (b, c) = (m[1].node.addr(), m[2].node.addr());
    // One of three cut off: majority still holds, all does not.
    m[0].node.partition(&c);
    m[0].r.update(&k, Consistency::Majority, LONG, |x, me| x.increment(me, 1)).await.unwrap();
    let e = m[0].r.update(&k, Consistency::All, SHORT, |x, me| x.increment(me, 1)).await.unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Timeout { needed: 3, acked: 2, .. }), "{e}");
    // Two of three cut off: majority times out too, for writes and reads.
    m[0].node.partition(&b);
    let e = m[0].r.update(&k, Consistency::Majority, SHORT, |x, me| x.increment(me, 1)).await.unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Timeout { needed: 2, acked: 1, .. }), "{e}");
    let e = m[0].r.get(&k, Consistency::Majority, SHORT).await.unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Timeout { .. }), "{e}");
    // The failed writes are applied here and spread after the heal.
    assert_eq!(m[0].r.get(&k, Consistency::Local, SHORT).await.unwrap().value(), 3);
    let mut subs: Vec<_> = m[1..].iter().map(|x| x.r.subscribe(&k).unwrap()).collect();
    m[0].node.heal(&b);
    m[0].node.heal(&c);
    for s in &mut subs {
        until(s, |x| x.value() == 3).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payload_that_does_not_decode_or_is_of_another_kind_is_rejected_whole_and_counted() {
    let m = members(2, &ReplicatorConfig::default()).await;
    let k = Key::<GCounter>::new("k");
    m[0].r.update(&k, Consistency::All, LONG, |c, me| c.increment(me, 5)).await.unwrap();
    let b = &m[1].r;
    assert_eq!(b.get(&k, Consistency::Local, SHORT).await.unwrap().value(), 5);
    let to_b = m[0].node.remote_ref::<CrdtMsg>(&m[1].node.addr(), REPLICATOR_ACTOR);
    let kind = tag_hash(&GCounter::kind());
    let mut good = GCounter::default();
    good.increment("x", 100);
    let good = codec::encode(&good).unwrap();
    let send = |items: Vec<Vec<u8>>, kind: u64| {
        let from = m[0].node.addr();
        to_b.ask(move |reply| CrdtMsg::Deltas { from, key: "k".into(), kind, first: 1, last: 1, items, reply }, LONG)
    };
    // Garbage, and a good delta bundled with garbage: both refused, nothing merged.
    assert_eq!(send(vec![vec![0xff; 3]], kind).await.unwrap(), WireAck { ok: false });
    assert_eq!(send(vec![good.clone(), vec![0xff; 3]], kind).await.unwrap(), WireAck { ok: false });
    // A good payload under another kind's tag.
    let other = tag_hash(&GSet::<u8>::kind());
    assert_eq!(send(vec![good.clone()], other).await.unwrap(), WireAck { ok: false });
    let s = b.stats();
    assert_eq!((s.rejected_decode, s.rejected_kind), (2, 1));
    assert_eq!(b.get(&k, Consistency::Local, SHORT).await.unwrap().value(), 5, "the replica is untouched");
    // The same good delta with the right kind is merged.
    assert_eq!(send(vec![good], kind).await.unwrap(), WireAck { ok: true });
    assert_eq!(b.get(&k, Consistency::Local, SHORT).await.unwrap().value(), 105);
    // A local use of the key with another type is refused.
    let e = b.get(&Key::<GSet<u8>>::new("k"), Consistency::Local, SHORT).await.unwrap_err();
    assert!(matches!(e.kind, ErrorKind::TypeMismatch { .. }), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_unused_here_keeps_what_arrives_until_its_first_typed_use() {
    let m = members(2, &ReplicatorConfig::default()).await;
    let k = Key::<GCounter>::new("late");
    m[0].r.update(&k, Consistency::All, LONG, |c, me| c.increment(me, 3)).await.unwrap();
    m[0].r.update(&k, Consistency::All, LONG, |c, me| c.increment(me, 4)).await.unwrap();
    assert_eq!(m[1].r.get(&k, Consistency::Local, SHORT).await.unwrap().value(), 7);
    let k2 = Key::<GCounter>::new("late2");
    m[0].r.update(&k2, Consistency::All, LONG, |c, me| c.increment(me, 1)).await.unwrap();
    let e = m[1].r.get(&Key::<GSet<u8>>::new("late2"), Consistency::Local, SHORT).await.unwrap_err();
    assert!(matches!(e.kind, ErrorKind::TypeMismatch { .. }), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_behind_the_delta_buffer_gets_the_full_state_from_a_resend() {
    // A buffer of 2 deltas and gossip off: after 10 updates b missed, only rule 4's full-state
    // fallback can bring b up to date.
    let rcfg = ReplicatorConfig {
        delta_buffer: 2,
        gossip_interval_ms: 3_600_000,
        resend_interval_ms: 100,
        ack_timeout_ms: 300,
    };
    let m = members(2, &rcfg).await;
    let k = Key::<GCounter>::new("k");
    let mut sub = m[1].r.subscribe(&k).unwrap();
    let b = m[1].node.addr();
    // Every frame a sends to b is dropped (a partition would not do: the transport queues
    // frames while a connection is down and delivers them after the heal).
    m[0].node.set_faults(Some(&b), None, FaultConfig { drop: 1.0, ..FaultConfig::default() });
    // `All` writes, so each delta is sent (and dropped) before the call returns; they fail.
    for _ in 0..10 {
        let w = m[0].r.update(&k, Consistency::All, Duration::from_millis(50), |c, me| c.increment(me, 1)).await;
        assert!(matches!(w.unwrap_err().kind, ErrorKind::Timeout { .. }));
    }
    assert!(m[0].node.stats().fault_dropped >= 10);
    m[0].node.clear_faults();
    until(&mut sub, |c| c.value() == 10).await;
    assert!(
        m[0].r.stats().states_sent > 0,
        "the catch-up was a full state: {:?} {:?}",
        m[0].r.stats(),
        m[0].node.stats()
    );
}
