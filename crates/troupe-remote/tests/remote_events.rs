//! The node's structured `tracing` events (fields, not formatted strings) with in-process
//! nodes on loopback and a capturing subscriber: `node up` names the peer, its address,
//! incarnation and channels; `node down` names the peer, a bounded `cause` and the reason; a
//! refused handshake is a WARN naming where it came from and why.

use troupe_test_support::capture;

use std::time::Duration;

use tracing::Level;
use troupe_remote::{Node, NodeConfig};

const T: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_up_and_node_down_carry_the_peer_and_the_cause() {
    let cap = capture::install();
    let a = Node::start(NodeConfig::new("events-a", "ev")).await.unwrap();
    let b = Node::start(NodeConfig::new("events-b", "ev")).await.unwrap();
    let (a_addr, b_addr) = (a.addr(), b.addr());
    a.connect(&b_addr).await.unwrap();

    // a's session to b: the dialling side's `node up`.
    let up = cap
        .wait_for("node up (a sees b)", T, |e| e.message() == "node up" && e.get("peer_addr") == Some(&b_addr))
        .await;
    assert_eq!(up.level, Level::INFO);
    assert!(up.target.starts_with("troupe_remote"), "{}", up.target);
    assert_eq!(up.get("peer_name"), Some("events-b"));
    let inc: u64 = up.get("incarnation").unwrap().parse().unwrap();
    assert!(inc > 0, "{up:?}");
    let channels = up.get("channels").unwrap();
    assert!(channels.split(',').any(|c| c == "control"), "{up:?}");
    assert!(up.get("connections").unwrap().parse::<u64>().unwrap() >= 2, "{up:?}");

    // b's session to a (it dials back) is up too before b goes, so both sides report.
    cap.wait_for("node up (b sees a)", T, |e| e.message() == "node up" && e.get("peer_addr") == Some(&a_addr)).await;

    // b shuts down: a's `node down` names b, in order (INFO), with the cause as a bounded word.
    b.shutdown();
    let down = cap
        .wait_for("node down (a loses b)", T, |e| e.message() == "node down" && e.get("peer_addr") == Some(&b_addr))
        .await;
    assert_eq!(down.get("peer_name"), Some("events-b"));
    assert_eq!(down.get("incarnation"), Some(inc.to_string().as_str()), "the same session's incarnation");
    // Closed in order (FIN: INFO), or reset when b closed with a heartbeat unread (WARN).
    match down.get("cause") {
        Some("peer_closed") => assert_eq!(down.level, Level::INFO),
        Some("io_error") => assert_eq!(down.level, Level::WARN),
        other => panic!("cause {other:?}: {down:?}"),
    }
    assert!(down.get("reason").is_some_and(|r| !r.is_empty()), "{down:?}");

    // b's own side of its shutdown: every session it had ends with cause `local`.
    let local = cap.matching(|e| e.message() == "node down" && e.get("peer_addr") == Some(&a_addr));
    assert!(!local.is_empty() && local.iter().all(|e| e.get("cause") == Some("local")), "{local:?}");
    a.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_handshake_is_a_warning_with_its_origin_and_reason() {
    let cap = capture::install();
    let b = Node::start(NodeConfig::new("events-refuser", "right")).await.unwrap();
    let a = Node::start(NodeConfig::new("events-intruder", "wrong")).await.unwrap();
    assert!(a.connect(&b.addr()).await.is_err(), "the wrong secret was accepted");
    let refused = cap
        .wait_for("refused handshake", T, |e| {
            e.level == Level::WARN
                && e.message().starts_with("closing connection from")
                && e.get("reason") == Some("auth")
        })
        .await;
    let from = refused.get("from").unwrap();
    assert!(from.starts_with("127.0.0.1:"), "{refused:?}");
    assert!(refused.get("error").is_some_and(|e| !e.is_empty()), "{refused:?}");
    assert!(refused.target.starts_with("troupe_remote"), "{}", refused.target);
    a.shutdown();
    b.shutdown();
}
