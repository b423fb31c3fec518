//! `troupe_remote::metrics` (feature `metrics`) with two in-process nodes on loopback: after
//! real asks every series of the module docs is published, with values that match the
//! traffic; a refused handshake shows under its reason. Run with
//! `cargo test -p troupe-remote --features metrics --test remote_metrics`.

use troupe_test_support::recorder;
use troupe_test_support::wait::until;

use std::time::Duration;

use recorder::TestRecorder;
use troupe_remote::services::Echo;
use troupe_remote::{metrics as node_metrics, Blob, Node, NodeConfig, NodeEvent};

const T: Duration = Duration::from_secs(10);

fn scrape(node: &Node) -> TestRecorder {
    let rec = TestRecorder::default();
    metrics::with_local_recorder(&rec, || node_metrics::publish(node));
    rec
}

/// Every series the module docs list, as (name, labels) pairs.
fn documented() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    let mut v = Vec::new();
    for d in ["in", "out"] {
        for n in ["troupe_node_frames_total", "troupe_node_bytes_total", "troupe_node_connections"] {
            v.push((n, vec![("direction", d)]));
        }
    }
    for r in node_metrics::REFUSAL_REASONS {
        v.push(("troupe_node_refusals_total", vec![("reason", r)]));
    }
    for s in ["up", "connecting", "down"] {
        v.push(("troupe_node_peers", vec![("state", s)]));
    }
    for n in [
        "troupe_node_connections_accepted_total",
        "troupe_node_connections_closed_total",
        "troupe_node_sessions_lost_total",
        "troupe_node_reorder_buffer_bytes",
        "troupe_node_held_for_order_total",
        "troupe_node_retransmits_total",
        "troupe_node_reply_bytes",
        "troupe_node_replies_dropped_total",
        "troupe_node_limit_closes_total",
        "troupe_node_log_lines_suppressed_total",
        "troupe_node_log_lines_dropped_total",
    ] {
        v.push((n, vec![]));
    }
    v
}

fn value(rec: &TestRecorder, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    rec.counter(name, labels).map(|c| c as f64).or_else(|| rec.gauge(name, labels))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_reports_the_traffic_of_real_asks() {
    let a = Node::start(NodeConfig::new("metrics-a", "m-secret")).await.unwrap();
    let b = Node::start(NodeConfig::new("metrics-b", "m-secret")).await.unwrap();
    troupe_remote::services::start(&b, &["echo".to_owned()]).unwrap();
    let echo = a.lookup::<Echo>(&b.addr(), "echo").await.unwrap();
    for i in 0..20u8 {
        let got = echo.ask(|r| Echo(Blob(vec![i; 100]), r), T).await.unwrap();
        assert_eq!(got.0, vec![i; 100]);
    }

    let (ra, rb) = (scrape(&a), scrape(&b));
    for (name, labels) in documented() {
        for (who, rec) in [("a", &ra), ("b", &rb)] {
            assert!(value(rec, name, &labels).is_some(), "{who} did not publish {name}{labels:?}");
        }
    }
    let (sa, sb) = (a.stats(), b.stats());
    // 20 asks out and 20 replies in on a, the other way round on b (and control frames).
    let frames_in = |r: &TestRecorder| r.counter("troupe_node_frames_total", &[("direction", "in")]).unwrap();
    let frames_out = |r: &TestRecorder| r.counter("troupe_node_frames_total", &[("direction", "out")]).unwrap();
    assert!(frames_in(&ra) >= 20 && frames_out(&ra) >= 20, "a: {sa:?}");
    assert!(frames_in(&rb) >= 20 && frames_out(&rb) >= 20, "b: {sb:?}");
    assert!(frames_in(&ra) <= sa.frames_in, "published before the snapshot, so never above it");
    let bytes_out = ra.counter("troupe_node_bytes_total", &[("direction", "out")]).unwrap();
    assert!(bytes_out >= 20 * 100, "20 asks of 100 bytes each: {bytes_out}");
    assert_eq!(ra.gauge("troupe_node_peers", &[("state", "up")]), Some(1.0));
    assert_eq!(rb.gauge("troupe_node_peers", &[("state", "up")]), Some(1.0));
    // a dials every lane of b's channels; b accepted them (and dialled back its own).
    let lanes = ra.gauge("troupe_node_connections", &[("direction", "out")]).unwrap();
    assert!(lanes >= 2.0, "control and at least one data lane: {lanes}");
    // b counts a connection once its side of the handshake is done, which may be just after
    // a's side: wait (bounded) for b to hold every connection a dialled.
    let held = || scrape(&b).gauge("troupe_node_connections", &[("direction", "in")]) == Some(lanes);
    until(T, held, || format!("b never held the {lanes} connections a dialled")).await;
    assert!(rb.counter("troupe_node_connections_accepted_total", &[]).unwrap() >= lanes as u64);
    assert_eq!(ra.counter("troupe_node_refusals_total", &[("reason", "auth")]), Some(0));
    assert_eq!(ra.counter("troupe_node_sessions_lost_total", &[]), Some(0));

    // The same scrape again reads the same totals (absolute values, not added up).
    let again = scrape(&a);
    assert!(frames_in(&again) >= frames_in(&ra) && frames_in(&again) <= a.stats().frames_in);

    // A session that ends shows on the other side (counted before the event is sent).
    let mut events = a.subscribe();
    let b_addr = b.addr();
    b.shutdown();
    tokio::time::timeout(T, async {
        loop {
            match events.recv().await {
                Ok(NodeEvent::NodeDown { addr, .. }) if addr == b_addr => return,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("a's events ended: {e}"),
            }
        }
    })
    .await
    .expect("a saw b go down");
    let ra = scrape(&a);
    assert_eq!(ra.counter("troupe_node_sessions_lost_total", &[]), Some(1));
    assert_eq!(ra.gauge("troupe_node_peers", &[("state", "up")]), Some(0.0));
    a.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_with_the_wrong_secret_counts_under_reason_auth() {
    let b = Node::start(NodeConfig::new("metrics-auth-b", "right")).await.unwrap();
    let a = Node::start(NodeConfig::new("metrics-auth-a", "wrong")).await.unwrap();
    assert!(a.connect(&b.addr()).await.is_err(), "the wrong secret was accepted");
    a.shutdown();
    // The refusal is counted when b has read the handshake: wait (bounded) for b's counter.
    until(T, || b.stats().auth_failures > 0, || format!("b never counted the refusal: {:?}", b.stats())).await;
    let rb = scrape(&b);
    let auth = rb.counter("troupe_node_refusals_total", &[("reason", "auth")]).unwrap();
    let handshake = rb.counter("troupe_node_refusals_total", &[("reason", "handshake")]).unwrap();
    assert!(auth >= 1, "auth {auth}");
    assert!(handshake >= auth, "handshake counts every failed handshake: {handshake} < {auth}");
    assert_eq!(rb.gauge("troupe_node_peers", &[("state", "up")]), Some(0.0));
    b.shutdown();
}

#[test]
fn describe_gives_every_series_a_help_text() {
    let rec = TestRecorder::default();
    metrics::with_local_recorder(&rec, node_metrics::describe);
    let described = rec.described();
    for (name, _) in documented() {
        assert!(described.iter().any(|d| d == name), "{name} has no help text");
    }
}
