//! Channels and delivery: acknowledged delivery delivers every message exactly once under 20%
//! injected drops; plain sends under the same drops lose some (so the injector really drops);
//! duplication is filtered for acked sends; partitions injected at run time bring the peer
//! down and heal; affinity keeps per-pair FIFO over 4 parallel connections.

mod common;

use std::time::Duration;

use common::{cfg, wait_event, NodeProc};
use troupe::{Actor, Ctx};
use troupe_remote::services::{Counter, Echo};
use troupe_remote::{send_with, Blob, ChannelConfig, FaultConfig, Node, NodeConfig, NodeEvent, SendOptions};

const T: Duration = Duration::from_secs(20);

async fn wait_acked(a: &Node) {
    let end = std::time::Instant::now() + T;
    while a.unacked() > 0 {
        assert!(std::time::Instant::now() < end, "{} frames still unacknowledged", a.unacked());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_delivery_delivers_every_message_under_20_percent_drops() {
    let mut child = NodeProc::start("b", "services = [\"counter\"]");
    let a = Node::start(NodeConfig { ack_timeout_ms: 20, ..cfg("a") }).await.unwrap();
    let counter = a.lookup::<Counter>(&child.addr, "counter").await.unwrap();
    a.set_faults(None, Some("default"), FaultConfig { drop: 0.2, duplicate: 0.1, seed: 7, ..Default::default() });
    let n = 2000;
    for _ in 0..n {
        send_with(&counter, Counter::Add(1), &SendOptions::new().ack(true)).unwrap();
    }
    wait_acked(&a).await;
    a.clear_faults();
    assert_eq!(counter.ask(Counter::Get, T).await.unwrap(), n, "exactly once: no loss, no duplicate");
    let s = a.stats();
    assert!(s.fault_dropped > 200, "{s:?}");
    assert!(s.retransmits >= s.fault_dropped / 2, "{s:?}");
    let cs = child.stats();
    assert!(cs["duplicates_dropped"].as_u64().unwrap() > 0, "{cs}");

    // Without acks the same drop rate loses messages.
    a.set_faults(None, Some("default"), FaultConfig { drop: 0.2, seed: 8, ..Default::default() });
    for _ in 0..n {
        counter.send(Counter::Add(1)).unwrap();
    }
    a.clear_faults();
    let total = counter.ask(Counter::Get, T).await.unwrap();
    assert!(total < 2 * n && total > n + n / 2, "{total}");
    a.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_brings_the_peer_down_and_heals() {
    let child = NodeProc::start("b", "services = [\"echo\"]\nheartbeat_interval_ms = 50\nheartbeat_timeout_ms = 300");
    let a = Node::start(NodeConfig { heartbeat_interval_ms: 50, heartbeat_timeout_ms: 300, ..cfg("a") }).await.unwrap();
    let mut events = a.subscribe();
    a.connect(&child.addr).await.unwrap();
    let echo = a.lookup::<Echo>(&child.addr, "echo").await.unwrap();
    assert_eq!(echo.ask(|r| Echo(Blob(vec![1]), r), T).await.unwrap().0, vec![1]);
    a.partition(&child.addr);
    let down = wait_event(&mut events, T, |e| matches!(e, NodeEvent::NodeDown { .. })).await;
    let NodeEvent::NodeDown { reason, .. } = down else { unreachable!() };
    // Whichever side's heartbeat timeout fires first closes the session.
    assert!(reason.contains("heartbeat") || reason.contains("closed"), "{reason}");
    // While partitioned, connecting fails with a typed error, not a hang.
    assert!(a.connect(&child.addr).await.is_err());
    a.heal(&child.addr);
    wait_event(&mut events, T, |e| matches!(e, NodeEvent::NodeUp { .. })).await;
    // `a` is up towards `b`; the answer also needs `b`'s own lanes back to `a`, which `b`
    // re-dials on its side. A lookup gives up after `heartbeat_timeout_ms` (300 ms here), less
    // than a loaded machine may take for that, so it is asked again until `T`.
    let end = std::time::Instant::now() + T;
    let echo = loop {
        match a.lookup::<Echo>(&child.addr, "echo").await {
            Ok(r) => break r,
            Err(e) => assert!(std::time::Instant::now() < end, "no answer after healing: {e}"),
        }
    };
    assert_eq!(echo.ask(|r| Echo(Blob(vec![2]), r), T).await.unwrap().0, vec![2]);
    a.shutdown();
}

struct Order {
    last: Vec<u64>,
    errors: u64,
    seen: u64,
}

#[derive(serde::Serialize, serde::Deserialize)]
enum OrderMsg {
    Item { sender: u64, seq: u64 },
    Report(troupe::ReplyTo<Tally>),
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Tally(u64, u64);

impl troupe_remote::RemoteMessage for OrderMsg {
    const TAG: &'static str = "test.order.v1";
    fn nested(n: &mut troupe_remote::Nested) {
        n.add::<Tally>();
    }
}

impl troupe_remote::RemoteMessage for Tally {
    const TAG: &'static str = "test.pair.v1";
}

impl Actor for Order {
    type Msg = OrderMsg;
    async fn handle(&mut self, m: OrderMsg, _: &mut Ctx<Self>) {
        match m {
            OrderMsg::Item { sender, seq } => {
                let s = sender as usize;
                if seq != self.last[s] + 1 {
                    self.errors += 1;
                }
                self.last[s] = seq;
                self.seen += 1;
            }
            OrderMsg::Report(r) => r.send(Tally(self.seen, self.errors)),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn affinity_keeps_per_pair_fifo_over_parallel_connections_and_named_channels() {
    let bulk = ChannelConfig { name: "bulk".into(), parallelism: 3, affinity: true };
    let a = Node::start(NodeConfig { parallelism: 4, channels: vec![bulk.clone()], ..cfg("a") }).await.unwrap();
    let b = Node::start(NodeConfig { parallelism: 4, channels: vec![bulk], ..cfg("b") }).await.unwrap();
    let senders = 16u64;
    let per = 500u64;
    b.export("order", &troupe::spawn(Order { last: vec![0; senders as usize], errors: 0, seen: 0 })).unwrap();
    let r = a.lookup::<OrderMsg>(&b.addr(), "order").await.unwrap();
    for seq in 1..=per {
        for s in 0..senders {
            let opts = SendOptions::new().sender(troupe::ActorId::new(0, s + 1));
            let opts = if s % 2 == 0 { opts.channel("bulk") } else { opts };
            send_with(&r, OrderMsg::Item { sender: s, seq }, &opts).unwrap();
        }
    }
    let Tally(mut seen, _) = r.ask(OrderMsg::Report, T).await.unwrap();
    // The report may overtake items on other lanes: wait until all are in.
    let end = std::time::Instant::now() + T;
    while seen < senders * per && std::time::Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(10)).await;
        seen = r.ask(OrderMsg::Report, T).await.unwrap().0;
    }
    assert_eq!(seen, senders * per);
    let Tally(_, errors) = r.ask(OrderMsg::Report, T).await.unwrap();
    assert_eq!(errors, 0, "per-pair FIFO violated");
    a.shutdown();
    b.shutdown();
}

/// Senders on several threads share one connection, alternating lone messages (the lane idle,
/// so the sender writes through) with bursts (the writer task batches): every message arrives,
/// each sender's in order, with write-through on (and it was used) and off (and it was not),
/// and with the receiver spinning on its reads (`spin_us`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_through_and_batching_share_a_connection_without_loss_or_reordering() {
    for write_through in [true, false] {
        let a = Node::start(NodeConfig { write_through, ..cfg("a") }).await.unwrap();
        // The receiver also polls its connections for a while after data (`spin_us`) in one round.
        let b = Node::start(NodeConfig { spin_us: if write_through { 300 } else { 0 }, ..cfg("b") }).await.unwrap();
        let senders = 4u64;
        let per = 600u64;
        b.export("order", &troupe::spawn(Order { last: vec![0; senders as usize], errors: 0, seen: 0 })).unwrap();
        let r = a.lookup::<OrderMsg>(&b.addr(), "order").await.unwrap();
        let mut tasks = Vec::new();
        for s in 0..senders {
            let r = r.clone();
            tasks.push(tokio::spawn(async move {
                for seq in 1..=per {
                    r.send(OrderMsg::Item { sender: s, seq }).unwrap();
                    if seq % 50 < 5 {
                        tokio::time::sleep(Duration::from_micros(300)).await; // idle lane: lone sends
                    } else if seq % 7 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let end = std::time::Instant::now() + T;
        let mut tally = r.ask(OrderMsg::Report, T).await.unwrap();
        while tally.0 < senders * per && std::time::Instant::now() < end {
            tokio::time::sleep(Duration::from_millis(10)).await;
            tally = r.ask(OrderMsg::Report, T).await.unwrap();
        }
        assert_eq!(tally.0, senders * per, "write_through = {write_through}: messages lost");
        assert_eq!(tally.1, 0, "write_through = {write_through}: per-sender FIFO violated");
        let s = a.stats();
        if write_through {
            assert!(s.writes_through > 0, "{s:?}");
        } else {
            assert_eq!(s.writes_through, 0, "{s:?}");
        }
        a.shutdown();
        b.shutdown();
    }
}

/// Acknowledged sends keep their order under 20% drops and 10% duplicates: a frame that
/// arrives ahead of a lost one waits for its retransmission (and some did wait).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_delivery_keeps_fifo_across_retransmissions() {
    let a = Node::start(NodeConfig { ack_timeout_ms: 20, ..cfg("a") }).await.unwrap();
    let b = Node::start(cfg("b")).await.unwrap();
    let per = 2000u64;
    b.export("order", &troupe::spawn(Order { last: vec![0; 2], errors: 0, seen: 0 })).unwrap();
    let r = a.lookup::<OrderMsg>(&b.addr(), "order").await.unwrap();
    a.set_faults(None, Some("default"), FaultConfig { drop: 0.2, duplicate: 0.1, seed: 11, ..Default::default() });
    for seq in 1..=per {
        for s in 0..2 {
            let opts = SendOptions::new().ack(true).sender(troupe::ActorId::new(0, s + 1));
            send_with(&r, OrderMsg::Item { sender: s, seq }, &opts).unwrap();
        }
    }
    wait_acked(&a).await;
    a.clear_faults();
    let Tally(seen, errors) = r.ask(OrderMsg::Report, T).await.unwrap();
    assert_eq!(seen, 2 * per, "every acknowledged message arrives exactly once");
    assert_eq!(errors, 0, "acknowledged delivery reordered a sender's messages");
    let s = b.stats();
    assert!(s.held_for_order > 0 && s.duplicates_dropped > 0, "{s:?}");
    assert_eq!(s.order_gaps_skipped, 0, "{s:?}");
    a.shutdown();
    b.shutdown();
}
