//! OTP's supervisor API details, pinned: `{shutdown, Term}` exit reasons (`exit.rs` rule 2),
//! start results `ignore` (rule 10 of `src/supervisor/server.rs`), `already_started` /
//! `already_present` (rule 11), significant children and auto-shutdown (rule 12),
//! `count_children` and `get_childspec`.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::tree::Builder;
use common::{log, Cmd, Probe, T};
use troupe::supervisor::{
    self, AutoShutdown, ChildCount, ChildKind, ChildSpec, Restart, Strategy, SupervisorError, SupervisorSpec,
};
use troupe::{ActorId, ExitReason};

fn spec() -> SupervisorSpec {
    SupervisorSpec::new(Strategy::OneForOne).intensity(10, Duration::from_secs(60))
}

/// `exit.rs` rule 2: a transient child exiting with `{shutdown, Term}` is not restarted; a
/// permanent one is.
#[tokio::test]
async fn a_transient_child_exiting_with_a_shutdown_term_is_not_restarted() {
    let lg = log();
    let tree = Builder::new(spec(), &lg)
        .probe("transient", Restart::Transient)
        .probe("permanent", Restart::Permanent)
        .start()
        .await
        .unwrap();
    let reason = ExitReason::ShutdownWith("reconfigured".into());
    assert!(!reason.is_abnormal());
    assert_eq!(reason.to_string(), "shutdown: reconfigured");
    for id in ["transient", "permanent"] {
        let c = tree.child(id);
        c.send(Cmd::Exit(reason.clone())).unwrap();
        assert_eq!(c.terminated().await, reason);
    }
    let ids: Vec<(String, Option<ActorId>)> = tree.ids().await;
    assert!(ids[0].1.is_none(), "transient: not restarted");
    assert!(ids[1].1.is_some(), "permanent: restarted");
}

/// Rule 11: a taken id is `AlreadyStarted` when that child runs, `AlreadyPresent` when it is
/// only in the spec.
#[tokio::test]
async fn start_child_with_a_taken_id_is_already_started_or_already_present() {
    let lg = log();
    let tree = Builder::new(spec(), &lg).probe("a", Restart::Permanent).start().await.unwrap();
    let l = lg.clone();
    let again = move || {
        let l = l.clone();
        ChildSpec::worker("a", move || Probe::new("a2", &l))
    };
    let running = tree.child("a").id();
    assert_eq!(
        tree.sup.start_child(again()).await,
        Err(SupervisorError::AlreadyStarted { child: "a".into(), actor: running })
    );
    tree.sup.terminate_child("a").await.unwrap();
    let present = tree.sup.start_child(again()).await;
    assert_eq!(present, Err(SupervisorError::AlreadyPresent("a".into())));
    assert!(present.unwrap_err().to_string().contains("restart_child"));
}

/// `count_children`: specs, running, and kinds (running or not).
#[tokio::test]
async fn count_children_counts_specs_active_supervisors_and_workers() {
    let lg = log();
    let l = lg.clone();
    let nested = ChildSpec::supervisor(
        "inner",
        SupervisorSpec::new(Strategy::OneForOne).child(ChildSpec::worker("w", move || Probe::new("w", &l))),
    );
    let sup = supervisor::start(spec().child(nested)).await.unwrap();
    let l = lg.clone();
    sup.start_child(ChildSpec::worker("x", move || Probe::new("x", &l))).await.unwrap();
    let l = lg.clone();
    sup.start_child(ChildSpec::worker("y", move || Probe::new("y", &l))).await.unwrap();
    assert_eq!(sup.count_children().await.unwrap(), ChildCount { specs: 3, active: 3, supervisors: 1, workers: 2 });
    sup.terminate_child("x").await.unwrap();
    sup.terminate_child("inner").await.unwrap();
    assert_eq!(sup.count_children().await.unwrap(), ChildCount { specs: 3, active: 1, supervisors: 1, workers: 2 });
    sup.stop().await;
}

/// `get_childspec`: the spec as held, which starts the same child elsewhere.
#[tokio::test]
async fn get_childspec_returns_a_spec_that_starts_the_same_child_elsewhere() {
    let lg = log();
    let tree = Builder::new(spec(), &lg).probe("a", Restart::Transient).start().await.unwrap();
    let got = tree.sup.get_childspec("a").await.unwrap();
    assert_eq!((got.id(), got.restart_type(), got.kind()), ("a", Restart::Transient, ChildKind::Worker));
    assert!(matches!(tree.sup.get_childspec("zz").await, Err(SupervisorError::NoSuchChild(id)) if id == "zz"));
    let other = supervisor::start(spec()).await.unwrap();
    lg.lock().clear();
    assert!(other.start_child(got).await.unwrap().is_some());
    assert_eq!(*lg.lock(), ["a:started"]);
}

/// Rule 10 at the supervisor's start and in `start_child`: an ignored child is kept, not
/// running; an ignored temporary child is dropped; neither is a failure.
#[tokio::test]
async fn an_ignored_start_keeps_the_child_not_running_and_drops_a_temporary_one() {
    let lg = log();
    let (l1, l2) = (lg.clone(), lg.clone());
    let sup = supervisor::start(
        spec()
            .child(ChildSpec::worker_or_ignore("kept", || None::<Probe>))
            .child(ChildSpec::worker_or_ignore("temp", || None::<Probe>).restart(Restart::Temporary))
            .child(ChildSpec::worker("runs", move || Probe::new("runs", &l1))),
    )
    .await
    .expect("an ignore is no start failure");
    let kids = sup.which_children().await.unwrap();
    let ids: Vec<_> = kids.iter().map(|c| (c.id.as_str(), c.actor.is_some())).collect();
    assert_eq!(ids, [("kept", false), ("runs", true)]);

    assert_eq!(sup.start_child(ChildSpec::worker_or_ignore("k2", || None::<Probe>)).await, Ok(None));
    let temp = ChildSpec::worker_or_ignore("t2", || None::<Probe>).restart(Restart::Temporary);
    assert_eq!(sup.start_child(temp).await, Ok(None));
    let ids: Vec<_> = sup.which_children().await.unwrap().into_iter().map(|c| c.id).collect();
    assert_eq!(ids, ["kept", "runs", "k2"], "the temporary one was dropped");
    assert_eq!(sup.restart_child("kept").await, Ok(None), "ignored again");
    let _ = l2;
    sup.stop().await;
}

/// Rule 10 in a restart: a child whose restart returns ignore stays down, with no retry and no
/// failure.
#[tokio::test]
async fn a_restart_that_returns_ignore_leaves_the_child_down() {
    let lg = log();
    let starts = Arc::new(AtomicUsize::new(0));
    let (s, l) = (starts.clone(), lg.clone());
    let w = ChildSpec::worker_or_ignore("once", move || {
        (s.fetch_add(1, Ordering::SeqCst) == 0).then(|| Probe::new("once", &l))
    });
    let h = w.handle();
    let sup = supervisor::start(spec().child(w)).await.unwrap();
    let first = h.get().unwrap();
    first.ask(Cmd::Ping, T).await.unwrap();
    first.kill();
    first.terminated().await;
    let kids = sup.which_children().await.unwrap();
    assert!(kids[0].actor.is_none() && !kids[0].restarting);
    sup.which_children().await.unwrap();
    assert_eq!(starts.load(Ordering::SeqCst), 2, "one restart, ignored, no retry");
    assert!(sup.actor().is_alive());
}

fn sig(name: &str, restart: Restart, lg: &common::Log) -> ChildSpec {
    let (n, l) = (name.to_owned(), lg.clone());
    ChildSpec::worker(name, move || Probe::new(&n, &l)).restart(restart).significant(true).into()
}

/// Rule 12, `AnySignificant`: one significant child exiting for good shuts the supervisor down;
/// one that is restarted (abnormal transient exit) or terminated does not.
#[tokio::test]
async fn any_significant_child_exiting_for_good_shuts_the_supervisor_down() {
    let lg = log();
    let l = lg.clone();
    let sup = supervisor::start(
        spec()
            .auto_shutdown(AutoShutdown::AnySignificant)
            .child(ChildSpec::worker("a", move || Probe::new("a", &l)))
            .child(sig("t", Restart::Transient, &lg))
            .child(sig("u", Restart::Temporary, &lg)),
    )
    .await
    .unwrap();
    let kids = |sup: &supervisor::SupervisorRef| {
        let sup = sup.clone();
        async move { sup.which_children().await.unwrap() }
    };
    let t = kids(&sup).await[1].actor.clone().unwrap();
    t.stop(ExitReason::Error("boom".into()));
    t.terminated().await;
    assert!(kids(&sup).await[1].actor.is_some(), "an abnormal transient exit restarts, no shutdown");
    sup.terminate_child("u").await.unwrap();
    assert!(sup.actor().is_alive(), "terminate_child never triggers auto-shutdown");
    let t = kids(&sup).await[1].actor.clone().unwrap();
    t.stop(ExitReason::Normal);
    assert_eq!(sup.terminated().await, ExitReason::Shutdown);
    assert!(lg.lock().contains(&"a:stopped:shutdown".to_string()), "the others were shut down");
}

/// Rule 12, `AllSignificant`: the supervisor shuts down when the last significant child has
/// exited for good.
#[tokio::test]
async fn all_significant_children_exiting_shut_the_supervisor_down_after_the_last() {
    let lg = log();
    let sup = supervisor::start(
        spec().auto_shutdown(AutoShutdown::AllSignificant).child(sig("t", Restart::Transient, &lg)).child(sig(
            "u",
            Restart::Temporary,
            &lg,
        )),
    )
    .await
    .unwrap();
    let first = sup.which_children().await.unwrap()[0].actor.clone().unwrap();
    first.stop(ExitReason::ShutdownWith("done".into()));
    first.terminated().await;
    assert!(sup.which_children().await.is_ok(), "u is still running");
    let u = sup.which_children().await.unwrap()[1].actor.clone().unwrap();
    u.stop(ExitReason::Error("boom".into()));
    assert_eq!(sup.terminated().await, ExitReason::Shutdown, "a temporary child is not restarted, whatever its reason");
}

/// Rule 12's spec checks (OTP's): no permanent significant child, and none under `Never`.
#[tokio::test]
async fn significant_children_are_refused_where_otp_refuses_them() {
    let lg = log();
    let field = |r: Result<(), SupervisorError>| match r {
        Err(SupervisorError::InvalidSpec { field, .. }) => field,
        other => panic!("expected a refusal, got {other:?}"),
    };
    let permanent = spec().auto_shutdown(AutoShutdown::AnySignificant).child(sig("p", Restart::Permanent, &lg));
    assert_eq!(field(permanent.validate()), "child \"p\" significant");
    let never = spec().child(sig("t", Restart::Transient, &lg));
    assert_eq!(field(never.validate()), "child \"t\" significant");
    let sup = supervisor::start(spec()).await.unwrap();
    let refused = sup.start_child(sig("t", Restart::Transient, &lg)).await;
    assert!(matches!(refused, Err(SupervisorError::InvalidSpec { .. })), "{refused:?}");
}

/// OTP's `check_childspecs`: the child rules, unique ids, significance against auto-shutdown.
#[test]
fn check_childspecs_refuses_what_a_supervisor_would() {
    let lg = log();
    let w = |id: &str| {
        let (n, l) = (id.to_owned(), lg.clone());
        ChildSpec::from(ChildSpec::worker(id, move || Probe::new(&n, &l)))
    };
    assert_eq!(supervisor::check_childspecs(&[w("a"), w("b")], AutoShutdown::Never), Ok(()));
    assert_eq!(
        supervisor::check_childspecs(&[w("a"), w("a")], AutoShutdown::Never),
        Err(SupervisorError::DuplicateId("a".into()))
    );
    let s = sig("s", Restart::Temporary, &lg);
    assert!(supervisor::check_childspecs(std::slice::from_ref(&s), AutoShutdown::Never).is_err());
    assert_eq!(supervisor::check_childspecs(&[s], AutoShutdown::AllSignificant), Ok(()));
}
