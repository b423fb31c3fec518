//! OTP supervisor semantics, pinned: a table over every strategy x restart type x exit reason,
//! then intensity and escalation, shutdown order and timeouts, start failure, dynamic children,
//! handles across restarts, backoff, and spec validation. Rule numbers refer to
//! `src/supervisor/server.rs`.

mod common;

use std::time::Duration;

use common::tree::Builder;
use common::{log, Cmd, Probe, T};
use troupe::supervisor::{
    self, Backoff, ChildSpec, IntensityWindow, Restart, Shutdown, Strategy, SupervisorError, SupervisorSpec,
};
use troupe::{ActorId, ExitReason};

#[derive(Clone, Copy, Debug)]
enum How {
    Normal,
    Shutdown,
    Killed,
    Panicked,
    Error,
}

impl How {
    fn reason(self) -> ExitReason {
        match self {
            How::Normal => ExitReason::Normal,
            How::Shutdown => ExitReason::Shutdown,
            How::Killed => ExitReason::Killed,
            How::Panicked => ExitReason::Panicked("table".into()),
            How::Error => ExitReason::Error("table".into()),
        }
    }

    fn apply(self, victim: &troupe::ActorRef<Cmd>) {
        match self {
            How::Killed => victim.kill(),
            How::Panicked => victim.send(Cmd::Panic("table".into())).expect("alive"),
            other => victim.send(Cmd::Exit(other.reason())).expect("alive"),
        }
    }
}

/// Rules 3 and 5, every combination: children [a, b, c], a and c permanent, b the victim.
#[tokio::test]
async fn every_strategy_restart_type_and_exit_reason() {
    let strategies = [Strategy::OneForOne, Strategy::OneForAll, Strategy::RestForOne];
    let restarts = [Restart::Permanent, Restart::Transient, Restart::Temporary];
    let hows = [How::Normal, How::Shutdown, How::Killed, How::Panicked, How::Error];
    for strategy in strategies {
        for restart in restarts {
            for how in hows {
                let case = format!("{strategy:?} x {restart:?} x {how:?}");
                let lg = log();
                let tree = Builder::new(SupervisorSpec::new(strategy).intensity(100, Duration::from_secs(5)), &lg)
                    .probe("a", Restart::Permanent)
                    .probe("b", restart)
                    .probe("c", Restart::Permanent)
                    .start()
                    .await
                    .unwrap();
                let before = tree.ids().await;
                let victim = tree.child("b");
                how.apply(&victim);
                assert_eq!(victim.terminated().await, how.reason(), "{case}: victim's reason");
                // The supervisor handles the exit signal (system lane) before this call.
                let after = tree.ids().await;
                let restarted =
                    restart == Restart::Permanent || (restart == Restart::Transient && how.reason().is_abnormal());
                let (a0, b0, c0) = (before[0].1, before[1].1, before[2].1);
                if !restarted {
                    let expected: Vec<(String, Option<ActorId>)> = if restart == Restart::Temporary {
                        vec![("a".into(), a0), ("c".into(), c0)]
                    } else {
                        vec![("a".into(), a0), ("b".into(), None), ("c".into(), c0)]
                    };
                    assert_eq!(after, expected, "{case}: no restart, siblings untouched");
                } else {
                    let names: Vec<_> = after.iter().map(|(n, _)| n.as_str()).collect();
                    assert_eq!(names, ["a", "b", "c"], "{case}");
                    assert!(after.iter().all(|(_, id)| id.is_some()), "{case}: all running");
                    assert_ne!(after[1].1, b0, "{case}: b restarted with a new identity");
                    let (a_same, c_same) = match strategy {
                        Strategy::OneForOne => (true, true),
                        Strategy::OneForAll => (false, false),
                        Strategy::RestForOne => (true, false),
                    };
                    assert_eq!(after[0].1 == a0, a_same, "{case}: a");
                    assert_eq!(after[2].1 == c0, c_same, "{case}: c");
                }
                tree.sup.stop().await;
            }
        }
    }
}

/// Rule 5: siblings stop in reverse start order, then all restart in start order.
#[tokio::test]
async fn one_for_all_stops_in_reverse_and_restarts_in_order() {
    let lg = log();
    let tree = Builder::new(SupervisorSpec::new(Strategy::OneForAll).intensity(5, Duration::from_secs(5)), &lg)
        .probe("a", Restart::Permanent)
        .probe("b", Restart::Permanent)
        .probe("c", Restart::Permanent)
        .start()
        .await
        .unwrap();
    lg.lock().clear();
    tree.crash("b").await;
    assert_eq!(*lg.lock(), ["c:stopped:shutdown", "a:stopped:shutdown", "a:started", "b:started", "c:started"]);
}

/// Rule 7 and ordered start: start in order, stop in reverse order.
#[tokio::test]
async fn children_start_in_order_and_stop_in_reverse() {
    let lg = log();
    let tree = Builder::new(SupervisorSpec::new(Strategy::OneForOne), &lg)
        .probe("a", Restart::Permanent)
        .probe("b", Restart::Permanent)
        .probe("c", Restart::Permanent)
        .start()
        .await
        .unwrap();
    assert_eq!(tree.sup.stop().await, ExitReason::Shutdown);
    assert_eq!(
        *lg.lock(),
        ["a:started", "b:started", "c:started", "c:stopped:shutdown", "b:stopped:shutdown", "a:stopped:shutdown"]
    );
}

/// Rule 4: more than `intensity` restarts within `period` -> children stop, supervisor exits
/// with Shutdown.
#[tokio::test]
async fn exceeding_the_intensity_shuts_the_supervisor_down() {
    let lg = log();
    let tree = Builder::new(SupervisorSpec::new(Strategy::OneForOne).intensity(2, Duration::from_secs(60)), &lg)
        .probe("a", Restart::Permanent)
        .probe("b", Restart::Permanent)
        .start()
        .await
        .unwrap();
    for _ in 0..2 {
        tree.crash("b").await; // restart 1 and 2 are within the intensity
    }
    let a = tree.child("a");
    tree.child("b").kill();
    assert_eq!(tree.sup.terminated().await, ExitReason::Shutdown);
    assert_eq!(a.terminated().await, ExitReason::Shutdown, "the remaining child was shut down");
}

/// Rule 4 with `IntensityWindow::Exact`: the window slides on the monotonic clock. (OTP's whole
/// seconds, the default, are pinned in `supervision_intensity.rs`.)
#[tokio::test(start_paused = true)]
async fn restarts_outside_the_period_do_not_count() {
    let lg = log();
    let spec = SupervisorSpec::new(Strategy::OneForOne).intensity(1, Duration::from_secs(1));
    let tree =
        Builder::new(spec.window(IntensityWindow::Exact), &lg).probe("a", Restart::Permanent).start().await.unwrap();
    for _ in 0..3 {
        tree.crash("a").await;
        tokio::time::advance(Duration::from_millis(1100)).await;
    }
    assert!(tree.sup.actor().is_alive(), "one restart per period never exceeds intensity 1");
    tree.crash("a").await;
    let a = tree.child("a");
    a.kill();
    assert_eq!(tree.sup.terminated().await, ExitReason::Shutdown, "two restarts within one period exceed 1");
}

/// Rule 4, escalation: a child supervisor that gives up is restarted by its parent.
#[tokio::test]
async fn a_supervisor_that_gives_up_escalates_to_its_parent() {
    let lg = log();
    let l2 = lg.clone();
    let inner_w = ChildSpec::worker("w", move || Probe::new("w", &l2));
    let w = inner_w.handle();
    let inner = SupervisorSpec::new(Strategy::OneForOne).intensity(0, Duration::from_secs(60)).child(inner_w);
    let inner_child = ChildSpec::supervisor("inner", inner);
    let inner_handle = inner_child.handle();
    let outer = supervisor::start(
        SupervisorSpec::new(Strategy::OneForOne).intensity(5, Duration::from_secs(60)).child(inner_child),
    )
    .await
    .unwrap();
    let first_inner = inner_handle.get().unwrap();
    let first_w = w.get().unwrap();
    first_w.kill(); // intensity 0: the first restart already exceeds it
    assert_eq!(first_inner.terminated().await, ExitReason::Shutdown);
    outer.which_children().await.unwrap();
    let second_inner = inner_handle.get().expect("outer restarted inner");
    assert_ne!(second_inner.id(), first_inner.id());
    assert!(w.get().is_some(), "inner started a fresh worker");
    outer.stop().await;
    assert!(!second_inner.is_alive() && w.get().is_none(), "no child outlives its supervisor");
}

/// Rule 7: an exit signal from the parent stops the supervisor's children first.
#[tokio::test]
async fn a_killed_supervisor_takes_its_children_with_it() {
    let lg = log();
    let tree = Builder::new(SupervisorSpec::new(Strategy::OneForOne), &lg)
        .probe("a", Restart::Permanent)
        .probe("b", Restart::Permanent)
        .start()
        .await
        .unwrap();
    let (a, b) = (tree.child("a"), tree.child("b"));
    tree.sup.any().kill();
    assert_eq!(a.terminated().await, ExitReason::Killed);
    assert_eq!(b.terminated().await, ExitReason::Killed);
}

/// Rule 6: Timeout(t) asks, then kills after t.
#[tokio::test(start_paused = true)]
async fn shutdown_timeout_then_brutal_kill() {
    let lg = log();
    let tree = Builder::new(SupervisorSpec::new(Strategy::OneForOne), &lg)
        .probe_with(
            "stuck",
            Restart::Permanent,
            |w| w.shutdown(Shutdown::Timeout(Duration::from_millis(100))),
            |p| p.hang_on_stop = true,
        )
        .start()
        .await
        .unwrap();
    let stuck = tree.child("stuck");
    let t0 = tokio::time::Instant::now();
    tree.sup.stop().await;
    assert_eq!(stuck.terminated().await, ExitReason::Killed);
    assert!(t0.elapsed() >= Duration::from_millis(100));
}

/// Rule 6: Infinity waits for a slow stop; Brutal kills without running the stopped hook.
#[tokio::test(start_paused = true)]
async fn shutdown_infinity_waits_and_brutal_kills() {
    let lg = log();
    let tree = Builder::new(SupervisorSpec::new(Strategy::OneForOne), &lg)
        .probe_with(
            "slow",
            Restart::Permanent,
            |w| w.shutdown(Shutdown::Infinity),
            |p| p.stop_delay = Some(Duration::from_secs(30)),
        )
        .probe_with("brutal", Restart::Permanent, |w| w.shutdown(Shutdown::Brutal), |_| {})
        .start()
        .await
        .unwrap();
    let (slow, brutal) = (tree.child("slow"), tree.child("brutal"));
    tree.sup.stop().await;
    assert_eq!(brutal.terminated().await, ExitReason::Killed);
    assert_eq!(slow.terminated().await, ExitReason::Shutdown);
    let lines = lg.lock().clone();
    assert!(lines.contains(&"slow:stopped:shutdown".to_string()));
    assert!(!lines.iter().any(|l| l.starts_with("brutal:stopped")));
}

/// Rule 2: a failed start stops the started children in reverse and names the child.
#[tokio::test]
async fn a_child_failing_to_start_fails_the_supervisor_naming_it() {
    let lg = log();
    let err = Builder::new(SupervisorSpec::new(Strategy::OneForOne), &lg)
        .probe("a", Restart::Permanent)
        .probe("b", Restart::Permanent)
        .probe_with("bad", Restart::Permanent, |w| w, |p| p.fail_start = true)
        .probe("never", Restart::Permanent)
        .start()
        .await
        .err()
        .expect("start must fail");
    match err {
        SupervisorError::StartFailed { child, reason } => {
            assert_eq!(child, "bad");
            assert_eq!(reason, ExitReason::Error("bad refuses to start".into()));
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert_eq!(*lg.lock(), ["a:started", "b:started", "bad:failed", "b:stopped:shutdown", "a:stopped:shutdown"]);
}

#[tokio::test]
async fn a_child_ref_follows_restarts() {
    let lg = log();
    let tree = Builder::new(SupervisorSpec::new(Strategy::OneForOne).intensity(10, Duration::from_secs(5)), &lg)
        .probe("a", Restart::Permanent)
        .start()
        .await
        .unwrap();
    let h = &tree.handles["a"];
    let mut seen = vec![];
    for _ in 0..3 {
        let cur = h.get().unwrap();
        seen.push(cur.ask(Cmd::Ping, T).await.unwrap());
        tree.crash("a").await;
    }
    seen.dedup();
    assert_eq!(seen.len(), 3, "three distinct incarnations answered through one handle");
}

#[tokio::test]
async fn dynamic_children_are_started_listed_terminated_and_deleted() {
    let lg = log();
    let sup = supervisor::start(SupervisorSpec::new(Strategy::OneForOne).max_children(2)).await.unwrap();
    let l = lg.clone();
    let spec = || {
        let l = l.clone();
        ChildSpec::worker("", move || Probe::new("dyn", &l)).restart(Restart::Transient)
    };
    sup.start_child(spec()).await.unwrap();
    sup.start_child(spec()).await.unwrap();
    assert_eq!(sup.start_child(spec()).await, Err(SupervisorError::MaxChildren(2)));
    let kids = sup.which_children().await.unwrap();
    assert_eq!(kids.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["child-1", "child-2"]);
    assert_eq!(sup.delete_child("child-1").await, Err(SupervisorError::ChildRunning("child-1".into())));
    sup.terminate_child("child-1").await.unwrap();
    assert!(sup.which_children().await.unwrap()[0].actor.is_none());
    sup.restart_child("child-1").await.unwrap();
    sup.terminate_child("child-1").await.unwrap();
    sup.delete_child("child-1").await.unwrap();
    assert_eq!(sup.terminate_child("child-1").await, Err(SupervisorError::NoSuchChild("child-1".into())));
    let l = lg.clone();
    let dup = ChildSpec::worker("child-2", move || Probe::new("dup", &l));
    let taken = sup.start_child(dup).await;
    assert!(matches!(&taken, Err(SupervisorError::AlreadyStarted { child, .. }) if child == "child-2"), "{taken:?}");
    sup.stop().await;
}

/// Rule 8: backoff delays the restart.
#[tokio::test(start_paused = true)]
async fn backoff_delays_restarts() {
    let lg = log();
    let backoff = Backoff { min: Duration::from_millis(200), max: Duration::from_secs(2), jitter: 0.0 };
    let tree = Builder::new(
        SupervisorSpec::new(Strategy::OneForOne).intensity(10, Duration::from_secs(60)).backoff(backoff),
        &lg,
    )
    .probe("a", Restart::Permanent)
    .start()
    .await
    .unwrap();
    for expected in [200u64, 400] {
        let a = tree.child("a");
        let t0 = tokio::time::Instant::now();
        a.kill();
        a.terminated().await;
        assert!(tree.ids().await[0].1.is_none(), "not restarted before the backoff delay");
        common::wait_until("the delayed restart", T, || tree.handles["a"].get().is_some()).await;
        let waited = t0.elapsed();
        // A timer's last 2 ms run on the real clock (`precise.rs`), so on a paused clock the
        // restart can be seen up to 2 ms before tokio's clock reaches the delay (it failed so on
        // a loaded machine: "restart after 399ms").
        let floor = Duration::from_millis(expected - 2);
        assert!(waited >= floor, "restart after {waited:?}, expected >= {expected} ms less 2 ms");
    }
}

#[test]
fn invalid_specs_are_refused_naming_the_field() {
    let lg = log();
    let p = |name: &str| {
        let (n, l) = (name.to_owned(), lg.clone());
        ChildSpec::worker(name, move || Probe::new(&n, &l))
    };
    let field = |spec: SupervisorSpec| match spec.validate() {
        Err(SupervisorError::InvalidSpec { field, .. }) => field,
        Err(SupervisorError::DuplicateId(id)) => format!("duplicate:{id}"),
        other => panic!("expected a refusal, got {other:?}"),
    };
    let base = || SupervisorSpec::new(Strategy::OneForOne);
    assert_eq!(field(base().intensity(1, Duration::ZERO)), "period");
    assert_eq!(field(base().child(p("x")).child(p("x"))), "duplicate:x");
    assert_eq!(field(base().child(p(""))), "child.id");
    assert_eq!(field(base().child(p("t").shutdown(Shutdown::Timeout(Duration::ZERO)))), "child \"t\" shutdown");
    assert_eq!(field(base().max_children(0)), "max_children");
    assert_eq!(field(base().max_children(1).child(p("a")).child(p("b"))), "children");
    let bo = |min: u64, max: u64, jitter: f64| Backoff {
        min: Duration::from_millis(min),
        max: Duration::from_millis(max),
        jitter,
    };
    assert_eq!(field(base().backoff(bo(0, 10, 0.0))), "backoff.min");
    assert_eq!(field(base().backoff(bo(20, 10, 0.0))), "backoff.max");
    assert_eq!(field(base().backoff(bo(1, 10, 1.5))), "backoff.jitter");
    let nested = ChildSpec::supervisor("inner", base().intensity(1, Duration::ZERO));
    assert_eq!(field(base().child(nested)), "period");
}

#[tokio::test]
async fn starting_an_invalid_spec_fails_before_anything_starts() {
    let lg = log();
    let err = Builder::new(SupervisorSpec::new(Strategy::OneForOne).intensity(1, Duration::ZERO), &lg)
        .probe("a", Restart::Permanent)
        .start()
        .await
        .err()
        .unwrap();
    assert!(err.to_string().contains("period"), "{err}");
    assert!(lg.lock().is_empty(), "no child started");
}
