//! The test kit: probes, expectations on ends and restarts, seeded unreliable delivery, and
//! `send_after` on a paused clock (what `testkit::clock` relies on).

use std::time::Duration;

use troupe::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
use troupe::testkit::{self, faulty, Faults, TestProbe};
use troupe::{Actor, ActorRef, Ctx, ExitReason};

const T: Duration = Duration::from_secs(10);

/// Forwards `n + 1` to `out`; `0` makes it panic.
struct Inc {
    out: ActorRef<u32>,
}

impl Actor for Inc {
    type Msg = u32;
    async fn handle(&mut self, n: u32, _: &mut Ctx<Self>) {
        assert!(n != 0, "zero");
        let _ = self.out.send(n + 1);
    }
}

#[tokio::test]
async fn a_probe_receives_what_the_actor_under_test_sends() {
    let mut probe = TestProbe::new();
    let inc = troupe::spawn(Inc { out: probe.actor_ref() });
    inc.send(1).unwrap();
    inc.send(41).unwrap();
    assert_eq!(probe.expect_msg(T).await, 2);
    assert_eq!(probe.expect_msg(T).await, 42);
    probe.expect_no_msg(Duration::from_millis(20)).await;
    assert!(probe.try_recv(Duration::from_millis(1)).await.is_none());
}

#[tokio::test]
#[should_panic(expected = "no message within")]
async fn expect_msg_fails_when_nothing_comes() {
    let mut probe = TestProbe::<u32>::new();
    probe.expect_msg(Duration::from_millis(10)).await;
}

#[tokio::test]
#[should_panic(expected = "expect_no_msg: got 2")]
async fn expect_no_msg_fails_when_something_comes() {
    let mut probe = TestProbe::new();
    let inc = troupe::spawn(Inc { out: probe.actor_ref() });
    inc.send(1).unwrap();
    probe.expect_no_msg(T).await;
}

#[tokio::test]
async fn a_probe_monitors_and_expects_downs_including_of_the_already_dead() {
    let mut probe = TestProbe::<u32>::new();
    let inc = troupe::spawn(Inc { out: probe.actor_ref() });
    let id = probe.monitor(&inc.any());
    inc.send(0).unwrap();
    let down = probe.expect_down(T).await;
    assert_eq!((down.id, down.actor), (id, inc.id()));
    assert!(matches!(down.reason, ExitReason::Panicked(_)));
    probe.monitor(&inc.any());
    assert_eq!(probe.expect_down(T).await.reason, ExitReason::NoProc);
    assert!(matches!(testkit::expect_terminated(&inc.any(), T).await, ExitReason::Panicked(_)));
}

#[tokio::test]
async fn expect_restart_gives_the_next_incarnation() {
    let probe = TestProbe::new();
    let out = probe.actor_ref();
    let spec = ChildSpec::worker("inc", move || Inc { out: out.clone() });
    let child = spec.handle();
    let sup = supervisor::start(SupervisorSpec::new(Strategy::OneForOne).child(spec)).await.unwrap();
    let first = child.current(T).await.unwrap();
    first.send(0).unwrap();
    let second = testkit::expect_restart(&child, &first, T).await;
    assert_ne!(second.id(), first.id());
    assert!(second.is_alive());
    sup.stop().await;
}

/// What arrives through a faulty ref, in arrival order, for a given seed.
async fn run_faulty(seed: u64) -> (Vec<u32>, u64, u64) {
    let mut probe = TestProbe::new();
    let faults = Faults::seeded(seed).drop(0.3).delay(Duration::from_millis(1), Duration::from_millis(50));
    let (lossy, stats) = faulty(probe.actor_ref(), faults);
    for n in 0..200 {
        lossy.send(n).unwrap();
    }
    let mut got = Vec::new();
    while let Some(n) = probe.try_recv(Duration::from_millis(100)).await {
        got.push(n);
    }
    assert_eq!(stats.sent(), 200);
    (got, stats.dropped(), stats.delayed())
}

#[tokio::test(start_paused = true)]
async fn faulty_refs_drop_and_delay_the_same_way_for_the_same_seed() {
    let (a, dropped, delayed) = run_faulty(2024).await;
    assert_eq!(a.len() as u64, 200 - dropped);
    assert_eq!(delayed, 200 - dropped, "every kept send was delayed (min 1 ms)");
    assert!((40..80).contains(&dropped), "about 30% dropped: {dropped}");
    let mut sorted = a.clone();
    sorted.sort();
    assert_ne!(a, sorted, "random delays reorder");
    assert_eq!(run_faulty(2024).await.0, a, "same seed, same deliveries in the same order");
    assert_ne!(run_faulty(2025).await.0, a, "another seed, other deliveries");
}

/// Sends `out` a tick `after` each "go".
struct Later {
    out: ActorRef<u32>,
    after: Duration,
}

impl Actor for Later {
    type Msg = u32;
    async fn handle(&mut self, n: u32, ctx: &mut Ctx<Self>) {
        if n == 0 {
            let _ = ctx.send_after(self.after, 1);
        } else {
            let _ = self.out.send(n);
        }
    }
}

#[tokio::test(start_paused = true)]
async fn send_after_fires_at_the_paused_clocks_deadline() {
    let mut probe = TestProbe::new();
    let a = troupe::spawn(Later { out: probe.actor_ref(), after: Duration::from_secs(30) });
    let start = tokio::time::Instant::now();
    a.send(0).unwrap();
    // The probe's timeout and the timer share the paused clock: the tick comes at 30 s.
    assert_eq!(probe.expect_msg(Duration::from_secs(60)).await, 1);
    let waited = start.elapsed();
    assert!(waited >= Duration::from_secs(30) && waited < Duration::from_secs(31), "{waited:?}");
}
