//! `troupe_crdt::metrics` (feature `metrics`) with in-process members on loopback: after real
//! updates the delta, acknowledgement and full-state series count them; a rejected payload
//! and a send nobody answers show under their reasons. Run with
//! `cargo test -p troupe-crdt --features metrics --test crdt_metrics`.

mod inproc;
use troupe_test_support::recorder;

use std::time::Duration;

use troupe_test_support::wait::until;

use inproc::{members, LONG};
use recorder::TestRecorder;
use troupe_crdt::{metrics as crdt_metrics, Consistency, CrdtMsg, DeltaCrdt, GCounter, GSet, Key, Replicator};
use troupe_crdt::{ReplicatorConfig, WireAck, REPLICATOR_ACTOR};
use troupe_remote::{codec, tag_hash};

fn scrape(r: &Replicator) -> TestRecorder {
    let rec = TestRecorder::default();
    metrics::with_local_recorder(&rec, || crdt_metrics::publish(r));
    rec
}

const ALL: [(&str, &[(&str, &str)]); 12] = [
    ("troupe_crdt_deltas_sent_total", &[]),
    ("troupe_crdt_deltas_acked_total", &[]),
    ("troupe_crdt_delta_bytes_sent_total", &[]),
    ("troupe_crdt_full_states_sent_total", &[]),
    ("troupe_crdt_full_states_acked_total", &[]),
    ("troupe_crdt_full_state_bytes_sent_total", &[]),
    ("troupe_crdt_received_total", &[("kind", "delta")]),
    ("troupe_crdt_received_total", &[("kind", "state")]),
    ("troupe_crdt_rejected_total", &[("reason", "decode")]),
    ("troupe_crdt_rejected_total", &[("reason", "kind")]),
    ("troupe_crdt_send_failures_total", &[("reason", "no_answer")]),
    ("troupe_crdt_send_failures_total", &[("reason", "rejected_by_peer")]),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_counts_deltas_acks_states_and_rejections() {
    let cfg = ReplicatorConfig { gossip_interval_ms: 100, ..ReplicatorConfig::default() };
    let m = members("cmx", 2, &cfg).await;
    let k = Key::<GCounter>::new("hits");
    for _ in 0..5 {
        m[0].r.update(&k, Consistency::All, LONG, |c, me| c.increment(me, 1)).await.unwrap();
    }
    // Full-state gossip runs every 100 ms: wait (bounded) until one was acknowledged.
    until(LONG, || m[0].r.stats().states_acked > 0, || format!("no full state acknowledged: {:?}", m[0].r.stats()))
        .await;

    let rec = scrape(&m[0].r);
    for (name, labels) in ALL {
        assert!(rec.counter(name, labels).is_some(), "{name}{labels:?} not published");
    }
    let c = |name: &str, labels: &[(&str, &str)]| rec.counter(name, labels).unwrap();
    // Consistency::All with one peer: each of the 5 updates was sent and acknowledged.
    assert!(c("troupe_crdt_deltas_sent_total", &[]) >= 5);
    assert!(c("troupe_crdt_deltas_acked_total", &[]) >= 5);
    assert!(c("troupe_crdt_delta_bytes_sent_total", &[]) > 0);
    assert!(c("troupe_crdt_full_states_sent_total", &[]) >= 1);
    assert!(c("troupe_crdt_full_states_acked_total", &[]) >= 1);
    assert!(c("troupe_crdt_full_state_bytes_sent_total", &[]) > 0);
    assert_eq!(c("troupe_crdt_rejected_total", &[("reason", "decode")]), 0);
    assert_eq!(rec.gauge("troupe_crdt_keys", &[]), Some(1.0));
    let rb = scrape(&m[1].r);
    assert!(rb.counter("troupe_crdt_received_total", &[("kind", "delta")]).unwrap() >= 5);

    // A payload that does not decode and one of another kind: rejected on m[1], counted by
    // reason; the sender (this test, through m[0]'s node) gets negative acknowledgements.
    // m[1] uses the key first, so it decodes what arrives (rule 8 keeps an unused key's
    // payloads undecoded).
    assert!(m[1].r.get(&k, Consistency::Local, LONG).await.unwrap().value() >= 5);
    let to_b = m[0].node.remote_ref::<CrdtMsg>(&m[1].node.addr(), REPLICATOR_ACTOR);
    let send = |items: Vec<Vec<u8>>, kind: u64| {
        let from = m[0].node.addr();
        to_b.ask(move |reply| CrdtMsg::Deltas { from, key: "hits".into(), kind, first: 1, last: 1, items, reply }, LONG)
    };
    assert_eq!(send(vec![vec![0xff; 3]], tag_hash(&GCounter::kind())).await.unwrap(), WireAck { ok: false });
    let good = codec::encode(&GCounter::default()).unwrap();
    assert_eq!(send(vec![good], tag_hash(&GSet::<u8>::kind())).await.unwrap(), WireAck { ok: false });
    let rb = scrape(&m[1].r);
    assert_eq!(rb.counter("troupe_crdt_rejected_total", &[("reason", "decode")]), Some(1));
    assert_eq!(rb.counter("troupe_crdt_rejected_total", &[("reason", "kind")]), Some(1));

    // The peer goes away: the next update's send is never answered.
    m[1].node.shutdown();
    let short = Duration::from_millis(300);
    let _ = m[0].r.update(&k, Consistency::All, short, |c, me| c.increment(me, 1)).await;
    let counted = || m[0].r.stats().sends_unanswered > 0;
    until(LONG, counted, || format!("the unanswered send was not counted: {:?}", m[0].r.stats())).await;
    let rec = scrape(&m[0].r);
    assert!(rec.counter("troupe_crdt_send_failures_total", &[("reason", "no_answer")]).unwrap() >= 1);
    m[0].node.shutdown();
}

#[test]
fn describe_gives_every_series_a_help_text() {
    let rec = TestRecorder::default();
    metrics::with_local_recorder(&rec, crdt_metrics::describe);
    for (name, _) in ALL.iter().chain([("troupe_crdt_keys", &[][..])].iter()) {
        assert!(rec.described().iter().any(|d| d == name), "{name} has no help text");
    }
}
