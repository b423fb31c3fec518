//! The replicator's structured `tracing` events with in-process members on loopback and a
//! capturing subscriber: a rejected payload is a WARN naming the key, the peer and the
//! reason (`decode`, `kind`); a send nobody answers is a WARN naming the key, the peer and
//! what was sent.

use troupe_test_support::capture;
mod inproc;

use std::time::Duration;

use inproc::{members, LONG};
use tracing::Level;
use troupe_crdt::{Consistency, CrdtMsg, DeltaCrdt, GCounter, GSet, Key, ReplicatorConfig, WireAck, REPLICATOR_ACTOR};
use troupe_remote::{codec, tag_hash};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_payloads_and_failed_sends_name_the_key_the_peer_and_the_reason() {
    let cap = capture::install();
    let m = members("cev", 2, &ReplicatorConfig::default()).await;
    let (a, b) = (m[0].node.addr(), m[1].node.addr());
    let k = Key::<GCounter>::new("ev-key");
    m[0].r.update(&k, Consistency::All, LONG, |c, me| c.increment(me, 1)).await.unwrap();
    assert_eq!(m[1].r.get(&k, Consistency::Local, LONG).await.unwrap().value(), 1);

    let to_b = m[0].node.remote_ref::<CrdtMsg>(&b, REPLICATOR_ACTOR);
    let send = |items: Vec<Vec<u8>>, kind: u64| {
        let from = a.clone();
        to_b.ask(
            move |reply| CrdtMsg::Deltas { from, key: "ev-key".into(), kind, first: 1, last: 1, items, reply },
            LONG,
        )
    };
    assert_eq!(send(vec![vec![0xff; 3]], tag_hash(&GCounter::kind())).await.unwrap(), WireAck { ok: false });
    let rejected = |reason: &'static str| {
        let a = a.clone();
        move |e: &capture::Captured| {
            e.message() == "replicated payload rejected"
                && e.get("key") == Some("ev-key")
                && e.get("peer") == Some(a.as_str())
                && e.get("reason") == Some(reason)
        }
    };
    let decode = cap.wait_for("payload rejected (decode)", LONG, rejected("decode")).await;
    assert_eq!(decode.level, Level::WARN);
    assert!(decode.target.starts_with("troupe_crdt"), "{}", decode.target);
    assert!(decode.get("error").is_some_and(|e| !e.is_empty()), "{decode:?}");
    let good = codec::encode(&GCounter::default()).unwrap();
    assert_eq!(send(vec![good], tag_hash(&GSet::<u8>::kind())).await.unwrap(), WireAck { ok: false });
    cap.wait_for("payload rejected (kind)", LONG, rejected("kind")).await;

    // b goes away: a's next delta to it is never answered.
    m[1].node.shutdown();
    let _ = m[0].r.update(&k, Consistency::All, Duration::from_millis(300), |c, me| c.increment(me, 1)).await;
    let failed = cap
        .wait_for("replication send failed", LONG, |e| {
            e.message() == "replication send failed"
                && e.get("key") == Some("ev-key")
                && e.get("peer") == Some(b.as_str())
        })
        .await;
    assert_eq!(failed.level, Level::WARN);
    assert_eq!(failed.get("reason"), Some("no_answer"));
    assert!(matches!(failed.get("what"), Some("deltas" | "state")), "{failed:?}");
    m[0].node.shutdown();
}
