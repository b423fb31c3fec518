//! `ChildRef`: `send`/`ask` reach the current incarnation, `current(timeout)` waits during a
//! restart, and a child supervisor's handle (and its children's) follow it across its restarts.

mod common;

use std::time::Duration;

use common::{log, Cmd, Probe, T};
use troupe::supervisor::{self, Backoff, ChildSpec, Restart, Strategy, SupervisorSpec};
use troupe::{AskError, ReplyTo, SendErrorKind};

fn ping(r: ReplyTo<u64>) -> Cmd {
    Cmd::Ping(r)
}

#[tokio::test]
async fn send_and_ask_reach_the_current_incarnation_and_current_waits_during_a_restart() {
    let lg = log();
    let spec = ChildSpec::worker("p", move || Probe::new("p", &lg));
    let child = spec.handle();
    // A backoff keeps the child down for a while after it dies, so "mid-restart" is observable.
    let backoff = Backoff { min: Duration::from_millis(300), max: Duration::from_millis(300), jitter: 0.0 };
    let sup = supervisor::start(SupervisorSpec::new(Strategy::OneForOne).backoff(backoff).child(spec)).await.unwrap();

    let first = child.current(T).await.unwrap();
    assert_eq!(child.ask(ping, T).await.unwrap(), first.id().seq());
    child.send(Cmd::Panic("boom".into())).unwrap();
    first.terminated().await;

    // Down until the backoff runs out: send fails at once, handing the message back...
    let err = child.send(Cmd::Exit(troupe::ExitReason::Normal)).unwrap_err();
    assert_eq!(err.kind(), SendErrorKind::Gone);
    assert!(err.into_inner().is_some());
    assert!(child.get().is_none());
    // ...while ask and current wait for the next incarnation.
    let answer = child.ask(ping, T).await.unwrap();
    let second = child.current(T).await.unwrap();
    assert_ne!(second.id(), first.id());
    assert_eq!(answer, second.id().seq());
    assert_eq!(child.current_after(first.id(), T).await.unwrap().id(), second.id());
    sup.stop().await;
}

#[tokio::test]
async fn current_times_out_when_the_child_is_not_restarted() {
    let lg = log();
    let spec = ChildSpec::worker("t", move || Probe::new("t", &lg)).restart(Restart::Temporary);
    let child = spec.handle();
    let sup = supervisor::start(SupervisorSpec::new(Strategy::OneForOne).child(spec)).await.unwrap();
    let only = child.current(T).await.unwrap();
    only.kill();
    only.terminated().await;
    let t = Duration::from_millis(50);
    assert_eq!(child.current(t).await.unwrap_err(), AskError::Timeout(t));
    assert_eq!(child.ask(ping, t).await.unwrap_err(), AskError::Timeout(t));
    sup.stop().await;
}

#[tokio::test]
async fn a_child_supervisors_handle_and_its_childrens_follow_it_across_restarts() {
    let lg = log();
    let worker = ChildSpec::worker("w", move || Probe::new("w", &lg));
    let w = worker.handle();
    let nested = ChildSpec::supervisor("sub", SupervisorSpec::new(Strategy::OneForOne).child(worker));
    let sub = nested.handle();
    let top =
        supervisor::start(SupervisorSpec::new(Strategy::OneForOne).intensity(5, Duration::from_secs(5)).child(nested))
            .await
            .unwrap();

    for round in 0..3 {
        let sub_now = sub.supervisor(T).await.unwrap();
        let w_now = w.current(T).await.unwrap();
        let kids = sub_now.which_children().await.unwrap();
        assert_eq!(kids[0].actor.as_ref().unwrap().id(), w_now.id(), "round {round}");
        // Kill the child supervisor: the top one restarts it, and it starts a fresh worker.
        sub_now.any().kill();
        assert_eq!(sub_now.terminated().await, troupe::ExitReason::Killed);
        let sub_next = sub.current_after(sub_now.any().id(), T).await.unwrap();
        let w_next = w.current_after(w_now.id(), T).await.unwrap();
        assert_ne!(sub_next.id(), sub_now.any().id());
        assert_eq!(w.ask(ping, T).await.unwrap(), w_next.id().seq());
    }
    top.stop().await;
}
