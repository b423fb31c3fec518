//! The replicated counter on a live overlay (`overlay/live/counter.rs`, rules C1-C7), on
//! in-process nodes on loopback: every counter of a client-server overlay converges through the
//! server by typed state sends; entries beyond the node count are ignored; local messages do
//! not serialize; bad parameters and a second counter on a node are refused. Every wait is
//! for the counter's own convergence, bounded.

use std::time::Duration;

use troupe_cluster::overlay::live::counter::{Counter, CounterConfig, CounterMsg, COUNTER_ACTOR};
use troupe_cluster::overlay::live::{Overlay, OverlayConfig};
use troupe_cluster::ErrorKind;
use troupe_remote::{Node, NodeConfig};

const LONG: Duration = Duration::from_secs(30);
const PERIOD: Duration = Duration::from_millis(50);

async fn node(name: &str) -> Node {
    Node::start(NodeConfig::new(name, "overlay-counter-test")).await.unwrap()
}

async fn overlay(node: &Node, section: &str) -> Overlay {
    let t: toml::Table = toml::from_str(section).unwrap();
    Overlay::start(node, OverlayConfig::from_table(&t).unwrap()).await.unwrap()
}

fn cfg(index: u32, nodes: u32) -> CounterConfig {
    CounterConfig { index, nodes, period: PERIOD }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_1_to_4_every_counter_of_a_client_server_overlay_converges_through_the_server() {
    let server = node("s").await;
    let s_overlay = overlay(&server, "kind = \"client_server\"\nrole = \"server\"").await;
    let clients = [node("c1").await, node("c2").await];
    let section = format!("kind = \"client_server\"\nservers = [\"s@{}\"]", server.addr());
    let mut counters = vec![Counter::start(&server, &s_overlay, cfg(0, 3)).unwrap()];
    for (i, c) in clients.iter().enumerate() {
        let o = overlay(c, &section).await;
        counters.push(Counter::start(c, &o, cfg(i as u32 + 1, 3)).unwrap());
    }
    // C1: before its go a counter holds nothing, so nothing converges.
    assert!(counters.iter().all(|c| c.report().held == 0));
    for c in &counters {
        c.go().unwrap();
    }
    for c in &counters {
        let r = tokio::time::timeout(LONG, c.converged()).await.expect("C4: every counter converges");
        assert_eq!((r.held, r.nodes), (3, 3), "{r:?}");
        assert!(r.converged_ms.is_some(), "{r:?}");
    }
    // C2: the clients reached each other only through the server, by typed sends.
    let s = counters[0].report();
    assert!(s.sent >= 2 && s.received >= 2 && s.rounds >= 1, "{s:?}");
    for c in &counters[1..] {
        let r = c.report();
        assert!(r.sent >= 1 && r.send_failures == 0, "a client sends to its server only: {r:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_3_entries_beyond_the_node_count_are_ignored() {
    let (a, b) = (node("a").await, node("b").await);
    let o = overlay(&a, "kind = \"static\"").await;
    let counter = Counter::start(&a, &o, cfg(0, 2)).unwrap();
    counter.go().unwrap();
    let to = b.remote_ref::<CounterMsg>(&a.addr(), COUNTER_ACTOR);
    to.send(CounterMsg::State(vec![5, 99])).unwrap();
    to.send(CounterMsg::State(vec![1])).unwrap();
    // One link is FIFO: when entry 1 made it converge, the bogus state came first.
    let r = tokio::time::timeout(LONG, counter.converged()).await.expect("converges on entry 1");
    assert_eq!((r.held, r.received), (2, 2), "{r:?}");
}

#[test]
fn rule_5_local_messages_do_not_serialize() {
    assert!(serde_json::to_string(&CounterMsg::Go).is_err());
    assert!(serde_json::to_string(&CounterMsg::Round).is_err());
    let state = serde_json::to_string(&CounterMsg::State(vec![0, 2])).unwrap();
    assert!(matches!(serde_json::from_str::<CounterMsg>(&state).unwrap(), CounterMsg::State(v) if v == [0, 2]));
    assert!(serde_json::from_str::<CounterMsg>("\"Go\"").is_err(), "no other node can send a go");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_6_bad_parameters_and_a_second_counter_are_refused() {
    let a = node("a").await;
    let o = overlay(&a, "kind = \"static\"").await;
    for bad in [cfg(3, 3), cfg(0, 0), CounterConfig { index: 0, nodes: 2, period: Duration::ZERO }] {
        let e = Counter::start(&a, &o, bad).err().expect("refused");
        assert!(matches!(e.kind(), ErrorKind::Config(_)), "{e}");
    }
    let first = Counter::start(&a, &o, cfg(0, 2)).unwrap();
    let e = Counter::start(&a, &o, cfg(1, 2)).err().expect("the name is taken");
    assert!(e.to_string().contains(COUNTER_ACTOR), "{e}");
    first.stop();
}
