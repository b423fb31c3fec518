//! The pool example tested with `troupe::testkit`: a probe watches a shard crash, the next
//! incarnation is awaited, a seeded lossy reference stands in for a bad network, and the
//! resizers run on a paused clock.

use std::time::Duration;

use example_pool::{resizers, sessions, Resize, SessionMsg};
use troupe::testkit::{self, clock, faulty, Faults, TestProbe};
use troupe::{ExitReason, ReplyTo};

const T: Duration = Duration::from_secs(10);

#[tokio::test]
async fn a_crashed_shard_is_replaced_and_its_users_start_again() {
    let store = troupe::pool::start(sessions(3)).await.unwrap();
    for _ in 0..3 {
        store.ask(|reply| SessionMsg::Hit { user: 9, reply }, T).await.unwrap();
    }
    // Watch every shard: the one holding user 9 will crash.
    let mut probe = TestProbe::<()>::new();
    let owners: Vec<_> = store.workers().into_iter().flatten().collect();
    for w in &owners {
        probe.monitor(&w.any());
    }
    store.send(SessionMsg::Crash { user: 9 }).unwrap();
    let down = probe.expect_down(T).await;
    assert!(matches!(down.reason, ExitReason::Panicked(ref m) if m.contains("user 9")), "{down:?}");
    let dead = owners.iter().find(|w| w.id() == down.actor).unwrap();
    let index = owners.iter().position(|w| w.id() == down.actor).unwrap();
    let next = testkit::expect_restart(store.worker(index).unwrap(), dead, T).await;
    assert_ne!(next.id(), dead.id());
    assert_eq!(store.ask(|reply| SessionMsg::Hit { user: 9, reply }, T).await.unwrap(), 1, "fresh state");
    probe.expect_no_msg(Duration::from_millis(10)).await;
    store.stop().await;
}

#[tokio::test(start_paused = true)]
async fn visits_lost_on_a_lossy_link_are_exactly_the_dropped_ones() {
    let store = troupe::pool::start(sessions(2)).await.unwrap();
    let (lossy, stats) = faulty(store.actor_ref(), Faults::seeded(11).drop(0.25));
    for _ in 0..40 {
        lossy.send(SessionMsg::Hit { user: 5, reply: ReplyTo::from_fn(|_| {}) }).unwrap();
    }
    clock::settle().await;
    let n = store.ask(|reply| SessionMsg::Hit { user: 5, reply }, T).await.unwrap();
    assert_eq!(n, 40 - stats.dropped() + 1);
    assert!(stats.dropped() > 0, "seed 11 drops some of 40 at p = 0.25");
    store.stop().await;
}

#[tokio::test(start_paused = true)]
async fn least_loaded_resizers_share_the_jobs_on_a_paused_clock() {
    let pool = troupe::pool::start(resizers(3)).await.unwrap();
    let mut probe = TestProbe::<(u64, usize)>::new();
    for _ in 0..12 {
        let out = probe.actor_ref();
        let reply = ReplyTo::from_fn(move |done| {
            let _ = out.send(done);
        });
        pool.send(Resize { width: 1000, height: 1000, reply }).unwrap();
    }
    // Each job "takes" 1 ms of the paused clock: 12 jobs on 3 workers take 4 ms of it, and no
    // real time.
    let start = tokio::time::Instant::now();
    let mut per_worker = [0; 3];
    for _ in 0..12 {
        let (pixels, worker) = probe.expect_msg(T).await;
        assert_eq!(pixels, 1_000_000);
        per_worker[worker] += 1;
    }
    assert_eq!(per_worker, [4, 4, 4]);
    assert!(start.elapsed() >= Duration::from_millis(4), "{:?}", start.elapsed());
    pool.stop().await;
}
