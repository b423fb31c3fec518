//! Device tracking, rule by rule (`troupe_cluster::devices`, rules 1-10): server nodes and a
//! device node in this process, talking over loopback. Every wait is for an event, bounded by a
//! deadline; nothing sleeps and hopes.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use troupe_cluster::devices::{
    peer_membership, Device, DeviceConfig, DeviceEvent, DeviceServer, LinkFaults, ServerConfig, ServerEvent,
};
use troupe_cluster::HashRing;
use troupe_remote::{Node, NodeConfig};

const SECRET: &str = "devices-test";
const LIMIT: Duration = Duration::from_secs(30);

async fn node(name: &str) -> Node {
    let cfg = NodeConfig { listen: "127.0.0.1:0".into(), ..NodeConfig::new(name, SECRET) };
    Node::start(cfg).await.expect("start a node on loopback")
}

fn fast_server() -> ServerConfig {
    ServerConfig {
        heartbeat_ms: 100,
        acceptable_pause_ms: 200,
        report_len: 10,
        report_timeout_ms: 200,
        sync_ms: 200,
        ..ServerConfig::default()
    }
}

fn fast_device(name: &str, seeds: Vec<String>) -> DeviceConfig {
    DeviceConfig {
        heartbeat_ms: 100,
        acceptable_pause_ms: 200,
        hello_retry_ms: 100,
        report_len: 10,
        ..DeviceConfig::new(name, seeds)
    }
}

fn values(n: usize) -> Vec<i64> {
    (1..=n as i64).collect()
}

struct Server {
    node: Node,
    desk: DeviceServer,
    events: mpsc::UnboundedReceiver<ServerEvent>,
}

async fn servers(n: usize) -> Vec<Server> {
    let mut nodes = Vec::new();
    for i in 0..n {
        nodes.push(node(&format!("server-{i}")).await);
    }
    let addrs: Vec<String> = nodes.iter().map(Node::addr).collect();
    let mut views: Vec<_> =
        nodes.iter().map(|node| peer_membership(node, addrs.clone(), Duration::from_millis(50))).collect();
    // Wait until every view holds all the servers, and only then start the desks, which read
    // the view once at start and follow its changes through a task of their own (rule 3 reads
    // it; the nodes being connected is not enough: the view follows them on a 50 ms poll). A
    // desk started earlier could take a device's Hello between its view changing and the desk
    // hearing of it, and keep a device another server owns (seen once in 60 runs).
    for view in &mut views {
        tokio::time::timeout(LIMIT, view.wait_for(|v| v.len() == n))
            .await
            .expect("servers did not see each other live in time")
            .expect("the membership view is open");
    }
    nodes.into_iter().zip(views).map(|(node, live)| start_server(node, live)).collect()
}

fn start_server(node: Node, live: watch::Receiver<Vec<String>>) -> Server {
    let (tx, events) = mpsc::unbounded_channel();
    let desk = DeviceServer::start(&node, fast_server(), live, Arc::new(move |e| drop(tx.send(e)))).expect("desk");
    Server { node, desk, events }
}

fn device(
    node: &Node,
    cfg: DeviceConfig,
    report: fn(usize) -> Vec<i64>,
) -> (Device, mpsc::UnboundedReceiver<DeviceEvent>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let d = Device::start(node, cfg, Arc::new(report), move |e| drop(tx.send(e)));
    (d, rx)
}

/// Receives until `pred` holds for an event, failing after the deadline.
async fn until<T: std::fmt::Debug>(rx: &mut mpsc::UnboundedReceiver<T>, what: &str, pred: impl Fn(&T) -> bool) -> T {
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

fn owner_by_ring(addrs: &[String], device: &str) -> String {
    HashRing::with_nodes(128, addrs.iter().map(String::as_str)).node_for(device.as_bytes()).unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_1_3_4_6_devices_home_to_their_ring_owner_and_reports_are_summed() {
    let mut ss = servers(2).await;
    let addrs: Vec<String> = ss.iter().map(|s| s.node.addr()).collect();
    let dn = node("devices-0").await;
    let mut devs = Vec::new();
    // Every device starts at the first seed only: the other half must be redirected (rule 3).
    for k in 0..8 {
        let name = format!("device-{k}");
        let (d, rx) = device(&dn, fast_device(&name, vec![addrs[0].clone()]), values);
        devs.push((name, d, rx));
    }
    for (name, _, rx) in &mut devs {
        let homed = until(rx, "a welcome", |e| matches!(e, DeviceEvent::Homed { .. })).await;
        let DeviceEvent::Homed { owner, .. } = homed else { unreachable!() };
        assert_eq!(owner, owner_by_ring(&addrs, name), "{name} is tracked by its ring owner (rule 3)");
        until(rx, "a summed report", |e| matches!(e, DeviceEvent::FirstReportSummed { .. })).await;
    }
    // Rule 6: reports keep being asked for and summed; totals grow and every record's total is
    // a whole number of reports of 1..=10 (55 each), so no report counted twice or partly.
    let deadline = Instant::now() + LIMIT;
    loop {
        let reports: u64 = ss.iter().map(|s| s.desk.totals().reports).sum();
        if reports >= 200 {
            break;
        }
        assert!(Instant::now() < deadline, "only {reports} reports summed in {LIMIT:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for s in &ss {
        for r in s.desk.records().iter().filter(|r| r.owner == s.node.addr()) {
            assert_eq!(r.total, 55 * r.reports as i64, "{r:?}");
        }
    }
    let tracked: u64 = ss.iter().map(|s| s.desk.totals().tracked).sum();
    assert_eq!(tracked, 8, "one tracker per device across the servers (rule 4)");
    for s in &mut ss {
        while let Ok(e) = s.events.try_recv() {
            assert!(!matches!(e, ServerEvent::Refused { .. }), "nothing refused: {e:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_2_a_wrong_protocol_version_is_disconnected_with_the_reason_and_counted() {
    let mut ss = servers(1).await;
    let dn = node("devices-0").await;
    let cfg = DeviceConfig { version: 99, ..fast_device("device-0", vec![ss[0].node.addr()]) };
    let (d, mut rx) = device(&dn, cfg, values);
    let e = until(&mut rx, "a disconnect", |e| matches!(e, DeviceEvent::Disconnected { .. })).await;
    let DeviceEvent::Disconnected { reason, .. } = e else { unreachable!() };
    assert!(reason.contains("protocol version 99") && reason.contains("version 1"), "{reason}");
    let e = until(&mut ss[0].events, "a refusal", |e| matches!(e, ServerEvent::Refused { .. })).await;
    assert!(matches!(e, ServerEvent::Refused { device, .. } if device == "device-0"));
    assert_eq!(ss[0].desk.totals().refused, 1);
    assert_eq!(ss[0].desk.totals().tracked, 0, "no tracker for a refused device");
    let deadline = Instant::now() + LIMIT;
    while d.is_alive() {
        assert!(Instant::now() < deadline, "the disconnected device did not stop");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_7_a_malformed_report_is_disconnected_with_the_reason_and_counted() {
    let mut ss = servers(1).await;
    let dn = node("devices-0").await;
    let (_d, mut rx) = device(&dn, fast_device("device-0", vec![ss[0].node.addr()]), |_| vec![1, 2, 3]);
    let e = until(&mut rx, "a disconnect", |e| matches!(e, DeviceEvent::Disconnected { .. })).await;
    let DeviceEvent::Disconnected { reason, .. } = e else { unreachable!() };
    assert!(reason.contains("malformed report: 3 values where 10"), "{reason}");
    until(&mut ss[0].events, "a refusal", |e| matches!(e, ServerEvent::Refused { .. })).await;
    assert_eq!(ss[0].desk.totals().refused, 1);
    assert_eq!(ss[0].desk.totals().reports, 0, "a malformed report is not summed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_5_and_10_a_device_whose_owner_dies_goes_back_to_the_seeds_and_rehomes() {
    let ss = servers(2).await;
    let addrs: Vec<String> = ss.iter().map(|s| s.node.addr()).collect();
    // A device owned by server 1, seeded with both.
    let name = (0..100).map(|k| format!("device-{k}")).find(|n| owner_by_ring(&addrs, n) == addrs[1]).unwrap();
    let dn = node("devices-0").await;
    let (_d, mut rx) = device(&dn, fast_device(&name, addrs.clone()), values);
    let e = until(&mut rx, "a welcome", |e| matches!(e, DeviceEvent::Homed { .. })).await;
    assert_eq!(e, DeviceEvent::Homed { device: name.clone(), owner: addrs[1].clone() });
    until(&mut rx, "a summed report", |e| matches!(e, DeviceEvent::FirstReportSummed { .. })).await;
    // The owner goes away.
    ss[1].desk.stop();
    ss[1].node.shutdown();
    let e = until(&mut rx, "the owner's failure", |e| matches!(e, DeviceEvent::OwnerFailed { .. })).await;
    assert_eq!(e, DeviceEvent::OwnerFailed { device: name.clone(), owner: addrs[1].clone() });
    let e = until(&mut rx, "a new home", |e| matches!(e, DeviceEvent::Homed { .. })).await;
    assert_eq!(e, DeviceEvent::Homed { device: name.clone(), owner: addrs[0].clone() });
    let before = ss[0].desk.totals().reports;
    let deadline = Instant::now() + LIMIT;
    while ss[0].desk.totals().reports < before + 5 {
        assert!(Instant::now() < deadline, "the new owner sums no reports");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_10_a_new_server_takes_its_devices_and_the_old_owner_stands_down() {
    let a = node("server-a").await;
    let b = node("server-b").await;
    let (a_addr, b_addr) = (a.addr(), b.addr());
    // A sees only itself at first; B sees both.
    let (a_live_tx, a_live) = watch::channel(vec![a_addr.clone()]);
    let mut sa = start_server(a, a_live);
    let both = vec![a_addr.clone(), b_addr.clone()];
    let _sb = start_server(b, watch::channel(both.clone()).1);
    let name = (0..100).map(|k| format!("device-{k}")).find(|n| owner_by_ring(&both, n) == b_addr).unwrap();
    let dn = node("devices-0").await;
    let (_d, mut rx) = device(&dn, fast_device(&name, vec![a_addr.clone()]), values);
    let e = until(&mut rx, "a welcome", |e| matches!(e, DeviceEvent::Homed { .. })).await;
    assert_eq!(e, DeviceEvent::Homed { device: name.clone(), owner: a_addr.clone() }, "A owns all while alone");
    a_live_tx.send(both).unwrap();
    let e = until(&mut sa.events, "a stand-down", |e| matches!(e, ServerEvent::StoodDown { .. })).await;
    assert!(
        matches!(&e, ServerEvent::StoodDown { device, reason } if *device == name && reason.contains("owns it now")),
        "{e:?}"
    );
    let e = until(&mut rx, "the re-home", |e| matches!(e, DeviceEvent::Homed { .. })).await;
    assert_eq!(e, DeviceEvent::Homed { device: name, owner: b_addr });
    assert_eq!(sa.desk.totals().stood_down, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_8_a_restarted_device_is_current_once_every_server_acknowledged_its_record() {
    let mut ss = servers(3).await;
    let addrs: Vec<String> = ss.iter().map(|s| s.node.addr()).collect();
    let dn = node("devices-0").await;
    let started_us = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as i64;
    let cfg = DeviceConfig { incarnation: 3, started_us, ..fast_device("device-7", addrs.clone()) };
    let (_d, _rx) = device(&dn, cfg, values);
    let owner = owner_by_ring(&addrs, "device-7");
    let s = ss.iter_mut().find(|s| s.node.addr() == owner).unwrap();
    let e = until(&mut s.events, "the status", |e| matches!(e, ServerEvent::StatusCurrent { .. })).await;
    let ServerEvent::StatusCurrent { device, incarnation, ms, acked, asked } = e else { unreachable!() };
    assert_eq!((device.as_str(), incarnation, acked, asked), ("device-7", 3, 2, 2));
    assert!(ms > 0.0 && ms < LIMIT.as_millis() as f64, "{ms}");
    // Every server holds the record of incarnation 3 (acknowledged means merged).
    for s in &ss {
        let r = s.desk.records().into_iter().find(|r| r.device == "device-7").expect("a record on every server");
        assert_eq!((r.incarnation, r.owner.as_str()), (3, owner.as_str()));
        assert!(r.reports >= 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_9_of_two_servers_tracking_one_device_exactly_one_stands_down() {
    // Two servers that each believe they are alone, so both take the device.
    let a = node("server-a").await;
    let b = node("server-b").await;
    let (a_addr, b_addr) = (a.addr(), b.addr());
    let mut sa = start_server(a, watch::channel(vec![a_addr.clone()]).1);
    let mut sb = start_server(b, watch::channel(vec![b_addr.clone()]).1);
    let dn = node("devices-0").await;
    let (_d1, mut r1) = device(&dn, fast_device("device-1", vec![a_addr.clone()]), values);
    let (_d2, mut r2) = device(&dn, fast_device("device-1", vec![b_addr.clone()]), values);
    until(&mut r1, "a first report", |e| matches!(e, DeviceEvent::FirstReportSummed { .. })).await;
    until(&mut r2, "a first report", |e| matches!(e, DeviceEvent::FirstReportSummed { .. })).await;
    // Each learns the other's record (as rule 8's exchange would carry it).
    use troupe_cluster::devices::{DeskMsg, DESK};
    for (from, to, recs) in [(&a_addr, &b_addr, sa.desk.records()), (&b_addr, &a_addr, sb.desk.records())] {
        let desk = dn.remote_ref::<DeskMsg>(to, DESK);
        let n = desk
            .ask(|ack| DeskMsg::Status { from: from.clone(), records: recs, ack: Some(ack) }, LIMIT)
            .await
            .expect("the desk acknowledges");
        let _ = n;
    }
    let (loser, keeper) = if a_addr < b_addr { (&mut sb, &sa) } else { (&mut sa, &sb) };
    let e = until(&mut loser.events, "a stand-down", |e| matches!(e, ServerEvent::StoodDown { .. })).await;
    assert!(matches!(&e, ServerEvent::StoodDown { reason, .. } if reason.contains("smaller address keeps")), "{e:?}");
    assert_eq!(loser.desk.totals().stood_down, 1);
    assert_eq!(keeper.desk.totals().stood_down, 0, "the smaller address keeps its tracker");
    assert_eq!(keeper.desk.totals().tracked, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn link_faults_drop_and_delay_slow_reports_but_the_re_ask_keeps_them_going() {
    let ss = servers(1).await;
    let dn = node("devices-0").await;
    let faults = LinkFaults { drop_probability: 0.3, delay_min_ms: 1, delay_max_ms: 5, seed: 9 };
    let cfg = DeviceConfig { faults, acceptable_pause_ms: 2000, ..fast_device("device-0", vec![ss[0].node.addr()]) };
    let (_d, mut rx) = device(&dn, cfg, values);
    until(&mut rx, "a summed report", |e| matches!(e, DeviceEvent::FirstReportSummed { .. })).await;
    let deadline = Instant::now() + LIMIT;
    while ss[0].desk.totals().reports < 20 {
        assert!(Instant::now() < deadline, "reports stalled under 30% loss: the re-ask (rule 6) did not recover");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[test]
fn server_config_refuses_zero_periods_and_bad_thresholds_by_name() {
    let e = ServerConfig { heartbeat_ms: 0, ..ServerConfig::default() }.check().unwrap_err();
    assert!(e.to_string().contains("heartbeat_ms is 0"), "{e}");
    let e = ServerConfig { phi_threshold: f64::NAN, ..ServerConfig::default() }.check().unwrap_err();
    assert!(e.to_string().contains("phi_threshold"), "{e}");
    assert!(ServerConfig::default().check().is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_8_a_rehomed_device_is_not_counted_as_a_recovery_again() {
    let a = node("server-a").await;
    let b = node("server-b").await;
    let (a_addr, b_addr) = (a.addr(), b.addr());
    let (a_live_tx, a_live) = watch::channel(vec![a_addr.clone()]);
    let mut sa = start_server(a, a_live);
    let both = vec![a_addr.clone(), b_addr.clone()];
    let mut sb = start_server(b, watch::channel(both.clone()).1);
    let name = (0..100).map(|k| format!("device-{k}")).find(|n| owner_by_ring(&both, n) == b_addr).unwrap();
    let dn = node("devices-0").await;
    let cfg = DeviceConfig { incarnation: 1, ..fast_device(&name, vec![a_addr.clone()]) };
    let (_d, mut rx) = device(&dn, cfg, values);
    until(&mut rx, "a summed report", |e| matches!(e, DeviceEvent::FirstReportSummed { .. })).await;
    until(&mut sa.events, "the recovery", |e| matches!(e, ServerEvent::StatusCurrent { .. })).await;
    // The ring changes: the device moves to B, which sums its reports without a new recovery.
    a_live_tx.send(both).unwrap();
    let e = until(&mut rx, "the re-home", |e| matches!(e, DeviceEvent::Homed { owner, .. } if *owner == b_addr)).await;
    assert!(matches!(e, DeviceEvent::Homed { .. }));
    let deadline = Instant::now() + LIMIT;
    while sb.desk.totals().reports < 5 {
        assert!(Instant::now() < deadline, "B sums no reports of the re-homed device");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    while let Ok(e) = sb.events.try_recv() {
        assert!(!matches!(e, ServerEvent::StatusCurrent { .. }), "a re-home counted as a recovery: {e:?}");
    }
}

/// Regression test: a first report's replication that timed out was reported as current (with
/// fewer acknowledgements than asked). Now the live servers that did not acknowledge are asked
/// again; the status is current only once every server still live has acknowledged, and never
/// after ten unanswered rounds (rule 8).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_8_a_replication_is_current_only_when_every_live_server_acknowledged() {
    let a = node("server-a").await;
    let silent = node("server-x").await; // in A's view, but runs no desk: never acknowledges
    let (a_addr, x_addr) = (a.addr(), silent.addr());
    let both = vec![a_addr.clone(), x_addr.clone()];
    let (live_tx, live) = watch::channel(both.clone());
    let (tx, mut events) = mpsc::unbounded_channel();
    let cfg = ServerConfig { replicate_timeout_ms: 50, ..fast_server() };
    let _desk = DeviceServer::start(&a, cfg, live, Arc::new(move |e| drop(tx.send(e)))).expect("desk");
    let owned_by_a: Vec<String> =
        (0..200).map(|k| format!("device-{k}")).filter(|d| owner_by_ring(&both, d) == a_addr).take(2).collect();
    assert_eq!(owned_by_a.len(), 2, "the ring gives A some devices");
    let dn = node("devices-0").await;
    let first = DeviceConfig { incarnation: 1, ..fast_device(&owned_by_a[0], vec![a_addr.clone()]) };
    let (_d1, _rx1) = device(&dn, first, values);
    let done =
        |e: &ServerEvent| matches!(e, ServerEvent::StatusCurrent { .. } | ServerEvent::StatusNotReplicated { .. });
    let e = until(&mut events, "the end of the replication", done).await;
    assert_eq!(
        e,
        ServerEvent::StatusNotReplicated {
            device: owned_by_a[0].clone(),
            incarnation: 1,
            missing: vec![x_addr.clone()],
            asked: 1
        },
        "a live server that never acknowledges keeps the status from being current"
    );
    // The silent server leaves the view; a second restarted device: the status becomes current
    // without its acknowledgement. (The view changes before the device starts: changed after
    // its welcome, the ten 50 ms rounds could all pass first on a loaded machine, and did.)
    live_tx.send(vec![a_addr.clone()]).unwrap();
    let second = DeviceConfig { incarnation: 1, ..fast_device(&owned_by_a[1], vec![a_addr.clone()]) };
    let (_d2, mut rx2) = device(&dn, second, values);
    until(&mut rx2, "the welcome", |e| matches!(e, DeviceEvent::Homed { .. })).await;
    let e = until(&mut events, "the end of the second replication", done).await;
    assert!(
        matches!(&e, ServerEvent::StatusCurrent { device, acked: 0, .. } if *device == owned_by_a[1]),
        "current once no live server is missing: {e:?}"
    );
}
