//! The ring overlay on real nodes on loopback, each its own `troupe_remote::Node` in this
//! process with the ring selected by name (`[overlay] kind = "ring"`): the ring forms through
//! one seed, a message to a member two places on crosses two hops, a send to a node that is
//! not a member fails with `ErrorKind::NoRoute`, and a member that leaves is routed around.
//! Rule numbers are those of `src/lib.rs`.

use std::collections::BTreeSet;
use std::time::Duration;

use example_overlay_ring::{expected_neighbours, start_member, wait_neighbours};
use troupe_cluster::overlay::live::{Overlay, OverlayEvent};
use troupe_cluster::ErrorKind;
use troupe_remote::Node;

const LONG: Duration = Duration::from_secs(30);

/// `n` members named `{prefix}1..` joined through the first, with the ring formed (rules 1, 2).
async fn ring(prefix: &str, n: usize) -> Vec<(Node, Overlay)> {
    let mut v: Vec<(Node, Overlay)> = Vec::new();
    for i in 1..=n {
        let seed = v.first().map(|(node, _)| format!("{prefix}1@{}", node.addr()));
        v.push(start_member(&format!("{prefix}{i}"), prefix, seed.as_deref()).await.expect("the member starts"));
    }
    let addrs: Vec<String> = v.iter().map(|(node, _)| node.addr()).collect();
    for ((node, o), want) in v.iter().zip(expected_neighbours(&addrs)) {
        let got = wait_neighbours(o, &want, LONG).await.unwrap();
        assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), want, "{} ({}) in {addrs:?}", node.name(), node.addr());
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_3_a_message_crosses_two_hops_and_a_node_outside_the_ring_has_no_route() {
    let v = ring("r", 4).await;
    let (n1, n3) = (&v[0].1, &v[2].1);
    let mut inbox = n3.register("inbox");
    let n3_addr = v[2].0.addr();
    // n1 -> n2 -> n3: n3 is not n1's neighbour, so the successor n2 passes it on.
    n1.send(&format!("r3@{n3_addr}"), "inbox", b"round the ring".to_vec()).unwrap();
    let d = tokio::time::timeout(LONG, inbox.recv()).await.expect("delivered in time").expect("open");
    assert_eq!(d.bytes, b"round the ring");
    assert_eq!(d.origin, v[0].0.addr());
    assert_eq!(d.hops, 2, "n1 -> n2 -> n3");
    assert_eq!(v[1].1.status().await.unwrap().forwarded, 1, "n2 passed it on");
    assert_eq!(n1.status().await.unwrap().kind, "ring");

    // Not a member: no route, a typed error, counted; nothing was sent.
    for stranger in ["127.0.0.1:9", "r9"] {
        let e = n1.send(stranger, "inbox", b"lost?".to_vec()).unwrap_err();
        assert_eq!(e.kind(), &ErrorKind::NoRoute { to: stranger.into(), overlay: "ring".into() }, "{e}");
    }
    assert_eq!(n1.status().await.unwrap().unroutable, 2);
    for (_, o) in &v {
        o.stop_and_wait(LONG).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_4_a_member_that_leaves_is_routed_around() {
    let v = ring("q", 5).await;
    let addr = |i: usize| v[i].0.addr();
    let mut events_q2 = v[1].1.events();
    // q3 leaves: it says Leave to q2 and q4, which close the ring over the gap.
    v[2].1.stop_and_wait(LONG).await;
    let want_q2 = BTreeSet::from([addr(0), addr(3)]);
    let want_q4 = BTreeSet::from([addr(1), addr(4)]);
    assert_eq!(wait_neighbours(&v[1].1, &want_q2, LONG).await.unwrap().into_iter().collect::<BTreeSet<_>>(), want_q2);
    assert_eq!(wait_neighbours(&v[3].1, &want_q4, LONG).await.unwrap().into_iter().collect::<BTreeSet<_>>(), want_q4);
    // The changes were published as events (service.rs rule 4).
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let ev = tokio::time::timeout(LONG, events_q2.recv()).await.expect("the events in time").expect("open");
        if matches!(ev, OverlayEvent::NeighbourDown { .. } | OverlayEvent::NeighbourUp { .. }) {
            seen.push(ev);
        }
    }
    assert!(seen.contains(&OverlayEvent::NeighbourDown { addr: addr(2) }), "{seen:?}");
    assert!(seen.contains(&OverlayEvent::NeighbourUp { addr: addr(3) }), "{seen:?}");

    // q1 -> q2 -> q4 now (two hops), and q2 knows q3 is gone.
    let mut inbox = v[3].1.register("inbox");
    v[0].1.send(&addr(3), "inbox", b"around the gap".to_vec()).unwrap();
    let d = tokio::time::timeout(LONG, inbox.recv()).await.expect("delivered in time").expect("open");
    assert_eq!((d.bytes.as_slice(), d.hops), (&b"around the gap"[..], 2));
    let e = v[1].1.send(&addr(2), "inbox", b"to the departed".to_vec()).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NoRoute { .. }), "{e}");
    for (i, (_, o)) in v.iter().enumerate() {
        if i != 2 {
            o.stop_and_wait(LONG).await;
        }
    }
}
