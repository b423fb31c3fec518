//! The replicator under its supervisor (`replicator/` rule 9, `replicator/lifecycle.rs`), with
//! three members on loopback, each a `System` owning its node, membership and replicator: a
//! panic in a replicator's inbox restarts it, the data from before the crash stays, and updates
//! keep replicating both ways; the supervisor gives up after its intensity and the replicator
//! then ends; the supervisor is no actor of the system.

use std::time::Duration;

use troupe::lifecycle::Service;
use troupe_crdt::{Consistency, GCounter, Key, RESTART_INTENSITY};

const LONG: Duration = Duration::from_secs(60);

mod inproc;
use inproc::SysMember as Member;

async fn members(n: usize) -> Vec<Member> {
    inproc::system_members("sup", n, "superv-test", LONG).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_inbox_is_restarted_keeps_its_data_and_replication_goes_on() {
    let v = members(3).await;
    let hits = Key::<GCounter>::new("hits");
    // Acknowledged by every replica before the crash.
    v[0].r.update(&hits, Consistency::All, LONG, |c, me| c.increment(me, 3)).await.unwrap();
    assert_eq!(v[1].r.get(&hits, Consistency::Local, LONG).await.unwrap().value(), 3);

    // Rule 9: the panic restarts the inbox (not the ticker: one_for_one), counted.
    assert!(v[1].r.debug_crash_inbox().await, "the supervisor started a new inbox");
    assert_eq!(v[1].r.stats().restarts, 1);
    for other in [&v[0], &v[2]] {
        assert_eq!(other.r.stats().restarts, 0);
    }

    // The data from before the crash is still there.
    assert_eq!(v[1].r.get(&hits, Consistency::Local, LONG).await.unwrap().value(), 3);
    // A write elsewhere reaches the restarted inbox (All: every replica acknowledges it)...
    v[0].r.update(&hits, Consistency::All, LONG, |c, me| c.increment(me, 1)).await.unwrap();
    assert_eq!(v[1].r.get(&hits, Consistency::Local, LONG).await.unwrap().value(), 4);
    // ...and its own writes still reach the others, read back with All through their inboxes.
    v[1].r.update(&hits, Consistency::All, LONG, |c, me| c.increment(me, 10)).await.unwrap();
    for m in &v {
        assert_eq!(m.r.get(&hits, Consistency::All, LONG).await.unwrap().value(), 14);
    }

    // A second crash is a second restart, and replication still works.
    assert!(v[1].r.debug_crash_inbox().await);
    assert_eq!(v[1].r.stats().restarts, 2);
    v[2].r.update(&hits, Consistency::All, LONG, |c, me| c.increment(me, 100)).await.unwrap();
    assert_eq!(v[1].r.get(&hits, Consistency::Local, LONG).await.unwrap().value(), 114);

    for m in v.into_iter().rev() {
        let report = tokio::time::timeout(LONG, m.sys.shutdown()).await.expect("shutdown ends");
        assert!(report.timed_out().is_empty(), "{report:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_its_intensity_the_supervisor_gives_up_and_the_replicator_ends() {
    let m = inproc::system_members("giveup", 1, "superv-test", LONG).await.remove(0);
    let hits = Key::<GCounter>::new("hits");
    m.r.update(&hits, Consistency::Local, LONG, |c, me| c.increment(me, 5)).await.unwrap();

    for n in 1..=RESTART_INTENSITY {
        assert!(m.r.debug_crash_inbox().await, "restart {n} of {RESTART_INTENSITY} allowed");
    }
    assert_eq!(m.r.stats().restarts, u64::from(RESTART_INTENSITY));
    // One more crash within the period: the supervisor gives up (all within 10 s here).
    assert!(!m.r.debug_crash_inbox().await, "no restart past the intensity");
    assert_eq!(m.r.stats().restarts, u64::from(RESTART_INTENSITY));

    // The replicator has ended: its stop returns at once, and the data stays readable locally.
    tokio::time::timeout(Duration::from_secs(5), Service::stop(&m.r)).await.expect("already ended");
    assert_eq!(m.r.get(&hits, Consistency::Local, LONG).await.unwrap().value(), 5);
    m.sys.shutdown().await;
}
