//! Device tracking over a gossip cluster (`devices::cluster_membership`): two server nodes
//! form a cluster in this process over loopback; each desk's view of the live servers is the
//! cluster's up and reachable members. A device homes to the ring owner over both; when that
//! server leaves and stops, the other's view shrinks and the device re-homes there. Every wait
//! is bounded by a deadline.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use troupe_cluster::devices::{cluster_membership, Device, DeviceConfig, DeviceEvent, DeviceServer, ServerConfig};
use troupe_cluster::{Cluster, ClusterConfig, HashRing};
use troupe_remote::{Node, NodeConfig};

const LIMIT: Duration = Duration::from_secs(60);

async fn node(name: &str) -> Node {
    let cfg = NodeConfig { listen: "127.0.0.1:0".into(), ..NodeConfig::new(name, "devices-cluster") };
    Node::start(cfg).await.expect("start a node on loopback")
}

async fn until(
    rx: &mut mpsc::UnboundedReceiver<DeviceEvent>,
    what: &str,
    pred: impl Fn(&DeviceEvent) -> bool,
) -> DeviceEvent {
    let deadline = Instant::now() + LIMIT;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(e)) if pred(&e) => return e,
            Ok(Some(_)) => {}
            Ok(None) => panic!("event stream closed while waiting for {what}"),
            Err(_) => panic!("no {what} within {LIMIT:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_s_members_are_the_ring_and_a_leaving_owner_s_devices_rehome() {
    let (n1, n2) = (node("s1").await, node("s2").await);
    let (a1, a2) = (n1.addr(), n2.addr());
    let c1 = Cluster::start(&n1, ClusterConfig::fast()).await.expect("first member");
    let c2 =
        Cluster::start(&n2, ClusterConfig { seeds: vec![a1.clone()], ..ClusterConfig::fast() }).await.expect("join");
    c1.wait_members(2, LIMIT).await.expect("two members up on s1");
    c2.wait_members(2, LIMIT).await.expect("two members up on s2");
    let mut both = vec![a1.clone(), a2.clone()];
    both.sort();
    let mut v1 = cluster_membership(&c1, Duration::from_millis(50));
    let v2 = cluster_membership(&c2, Duration::from_millis(50));
    for v in [&mut v1, &mut v2.clone()] {
        tokio::time::timeout(LIMIT, v.wait_for(|m| *m == both)).await.expect("view of both").unwrap();
    }
    let cfg = ServerConfig { heartbeat_ms: 100, acceptable_pause_ms: 200, report_len: 10, ..ServerConfig::default() };
    let _d1 = DeviceServer::start(&n1, cfg.clone(), v1.clone(), Arc::new(|_| {})).unwrap();
    let d2 = DeviceServer::start(&n2, cfg, v2, Arc::new(|_| {})).unwrap();
    // A device owned by s2 by the ring over both, seeded with s1 only: redirected to s2.
    let ring = HashRing::with_nodes(128, both.iter().map(String::as_str));
    let name =
        (0..100).map(|k| format!("device-{k}")).find(|n| ring.node_for(n.as_bytes()) == Some(a2.as_str())).unwrap();
    let dn = node("devices").await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let dcfg = DeviceConfig {
        heartbeat_ms: 100,
        acceptable_pause_ms: 200,
        hello_retry_ms: 100,
        report_len: 10,
        ..DeviceConfig::new(&name, vec![a1.clone()])
    };
    let _dev = Device::start(&dn, dcfg, Arc::new(|n| (1..=n as i64).collect()), move |e| drop(tx.send(e)));
    let e = until(&mut rx, "a welcome", |e| matches!(e, DeviceEvent::Homed { .. })).await;
    assert_eq!(e, DeviceEvent::Homed { device: name.clone(), owner: a2.clone() });
    // s2 leaves the cluster and stops: s1's view shrinks to itself and the device comes to s1.
    c2.leave_and_wait(LIMIT).await.expect("s2 leaves");
    d2.stop();
    n2.shutdown();
    tokio::time::timeout(LIMIT, v1.wait_for(|m| *m == vec![a1.clone()])).await.expect("s1 alone").unwrap();
    let e = until(&mut rx, "a new home", |e| matches!(e, DeviceEvent::Homed { .. })).await;
    assert_eq!(e, DeviceEvent::Homed { device: name, owner: a1 });
}
