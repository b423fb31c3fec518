//! Rule 9 of `src/supervisor/server.rs` (OTP's `try_again`): a restart whose start fails marks
//! the child `restarting`, retries it through the supervisor's mailbox, and each retry restarts
//! the strategy's whole group again; other calls are served between tries.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::tree::Builder;
use common::{log, T};
use troupe::supervisor::{ChildSpec, Restart, Strategy, SupervisorError, SupervisorSpec};

/// OTP: when a child fails to restart under `one_for_all`, the siblings already restarted are
/// stopped again and the whole group restarts; Troupe used to retry only the failed child.
#[tokio::test]
async fn one_for_all_restart_failure_stops_the_restarted_siblings_and_restarts_the_whole_group() {
    let lg = log();
    let starts = Arc::new(AtomicUsize::new(0));
    let s = starts.clone();
    let tree = Builder::new(SupervisorSpec::new(Strategy::OneForAll).intensity(10, Duration::from_secs(60)), &lg)
        .probe("a", Restart::Permanent)
        // b's second start (its first restart) fails; the others succeed.
        .probe_with("b", Restart::Permanent, |w| w, move |p| p.fail_start = s.fetch_add(1, Ordering::SeqCst) == 1)
        .probe("c", Restart::Permanent)
        .start()
        .await
        .unwrap();
    lg.lock().clear();
    tree.crash("a").await;
    common::wait_until("the group's second restart", T, || lg.lock().len() >= 8).await;
    assert_eq!(
        *lg.lock(),
        [
            "c:stopped:shutdown",
            "b:stopped:shutdown",
            "a:started",
            "b:failed",
            // The retry: a (already restarted) is stopped again, then the whole group starts.
            "a:stopped:shutdown",
            "a:started",
            "b:started",
            "c:started",
        ]
    );
    let kids = tree.sup.which_children().await.unwrap();
    assert!(kids.iter().all(|c| c.actor.is_some() && !c.restarting), "all running after the retry");
}

/// Rule 9 for `rest_for_one`: the retry restarts the failed child and those after it; children
/// before it are untouched.
#[tokio::test]
async fn rest_for_one_restart_failure_retries_the_failed_child_and_those_after_it() {
    let lg = log();
    let starts = Arc::new(AtomicUsize::new(0));
    let s = starts.clone();
    let tree = Builder::new(SupervisorSpec::new(Strategy::RestForOne).intensity(10, Duration::from_secs(60)), &lg)
        .probe("a", Restart::Permanent)
        .probe("b", Restart::Permanent)
        .probe_with("c", Restart::Permanent, |w| w, move |p| p.fail_start = s.fetch_add(1, Ordering::SeqCst) == 1)
        .probe("d", Restart::Permanent)
        .start()
        .await
        .unwrap();
    let a0 = tree.child("a").id();
    lg.lock().clear();
    tree.crash("b").await;
    common::wait_until("the retry", T, || lg.lock().len() >= 6).await;
    assert_eq!(
        *lg.lock(),
        ["d:stopped:shutdown", "c:stopped:shutdown", "b:started", "c:failed", "c:started", "d:started"]
    );
    assert_eq!(tree.child("a").id(), a0, "a child before the failed one is untouched");
}

/// Rule 9: between tries the supervisor answers calls; the `restarting` state is visible, and
/// `restart_child`/`delete_child` refuse it, `terminate_child` ends the retries. (Two workers:
/// the supervisor retries as fast as it can, and a current-thread runtime would let this test's
/// own task run only every few thousand retries.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_being_restarted_is_visible_and_calls_are_served_between_tries() {
    let lg = log();
    let fail = Arc::new(AtomicBool::new(false));
    let f = fail.clone();
    let tree =
        Builder::new(SupervisorSpec::new(Strategy::OneForOne).intensity(1_000_000, Duration::from_secs(3600)), &lg)
            .probe("a", Restart::Permanent)
            .probe_with("b", Restart::Permanent, |w| w, move |p| p.fail_start = f.load(Ordering::SeqCst))
            .start()
            .await
            .unwrap();
    fail.store(true, Ordering::SeqCst);
    tree.crash("b").await;
    loop {
        let kids = tree.sup.which_children().await.unwrap();
        if kids[1].restarting {
            assert!(kids[1].actor.is_none());
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(tree.sup.restart_child("b").await, Err(SupervisorError::Restarting("b".into())));
    assert_eq!(tree.sup.delete_child("b").await, Err(SupervisorError::Restarting("b".into())));
    tree.sup.terminate_child("b").await.unwrap();
    let kids = tree.sup.which_children().await.unwrap();
    assert!(!kids[1].restarting && kids[1].actor.is_none(), "terminated: no more retries");
    let failures = lg.lock().iter().filter(|l| *l == "b:failed").count();
    tree.sup.which_children().await.unwrap();
    assert_eq!(lg.lock().iter().filter(|l| *l == "b:failed").count(), failures, "no retry after terminate_child");
    fail.store(false, Ordering::SeqCst);
    tree.sup.restart_child("b").await.unwrap();
    assert!(tree.sup.which_children().await.unwrap()[1].actor.is_some());
    assert!(tree.sup.actor().is_alive());
}

/// Rule 9 with rule 4: every retry is a restart and counts; failing forever exceeds the
/// intensity and the supervisor shuts down.
#[tokio::test]
async fn retries_count_against_the_intensity() {
    let lg = log();
    let fail = Arc::new(AtomicBool::new(false));
    let f = fail.clone();
    let tree = Builder::new(SupervisorSpec::new(Strategy::OneForOne).intensity(3, Duration::from_secs(3600)), &lg)
        .probe_with("b", Restart::Permanent, |w| w, move |p| p.fail_start = f.load(Ordering::SeqCst))
        .start()
        .await
        .unwrap();
    fail.store(true, Ordering::SeqCst);
    tree.child("b").kill();
    assert_eq!(tree.sup.terminated().await, troupe::ExitReason::Shutdown);
    let failures = lg.lock().iter().filter(|l| *l == "b:failed").count();
    assert_eq!(failures, 3, "restarts 1-3 are allowed (each fails); the 4th exceeds intensity 3");
}

/// A worker whose start number `gated` waits for `gate` and then fails (OTP's `init` returning
/// `{stop, failed}`); its other starts succeed. `waiting` says the gated start has begun.
struct Gated {
    n: usize,
    gated: usize,
    gate: Arc<tokio::sync::Notify>,
    waiting: Arc<AtomicBool>,
}

impl troupe::Actor for Gated {
    type Msg = ();

    async fn started(&mut self, _: &mut troupe::Ctx<Self>) -> Result<(), troupe::ActorError> {
        if self.n != self.gated {
            return Ok(());
        }
        let open = self.gate.notified();
        self.waiting.store(true, Ordering::SeqCst);
        let _ = tokio::time::timeout(T, open).await;
        Err(troupe::ActorError::new("failed"))
    }

    async fn handle(&mut self, _: (), _: &mut troupe::Ctx<Self>) {}
}

/// Rule 9, the order: the retry goes behind the messages already queued when the restart
/// failed, as OTP's `try_again_restart` cast does. A `which_children` that reached the
/// supervisor while its `one_for_all` restart was under way is answered first, and sees the
/// failed child `restarting` and the one after it stopped (OTP 25 answers the same:
/// `tests/otpdiff`, scenario `a_call_queued_during_a_failed_restart_is_answered_before_the_retry`);
/// the retry then restarts the group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_queued_during_a_failed_restart_is_answered_before_the_retry() {
    let lg = log();
    let gate = Arc::new(tokio::sync::Notify::new());
    let waiting = Arc::new(AtomicBool::new(false));
    let starts = Arc::new(AtomicUsize::new(0));
    let (g, w, s) = (gate.clone(), waiting.clone(), starts.clone());
    let b = ChildSpec::worker("b", move || Gated {
        n: s.fetch_add(1, Ordering::SeqCst) + 1,
        gated: 2,
        gate: g.clone(),
        waiting: w.clone(),
    });
    let (la, lc) = (lg.clone(), lg.clone());
    let a = ChildSpec::worker("a", move || common::Probe::new("a", &la));
    let a_handle = a.handle();
    let spec = SupervisorSpec::new(Strategy::OneForAll)
        .intensity(10, Duration::from_secs(60))
        .child(a)
        .child(b)
        .child(ChildSpec::worker("c", move || common::Probe::new("c", &lc)));
    let sup = troupe::supervisor::start(spec).await.unwrap();
    let first_a = a_handle.get().unwrap();
    first_a.kill();
    first_a.terminated().await;
    common::wait_until("b's second start to wait", T, || waiting.load(Ordering::SeqCst)).await;
    let asker = sup.clone();
    let call = tokio::spawn(async move { asker.which_children().await });
    common::wait_until("the call to be queued", T, || sup.actor().mailbox_len() > 0).await;
    gate.notify_one();
    let seen = call.await.unwrap().unwrap();
    let state: Vec<(&str, bool, bool)> =
        seen.iter().map(|k| (k.id.as_str(), k.actor.is_some(), k.restarting)).collect();
    assert_eq!(state, [("a", true, false), ("b", false, true), ("c", false, false)], "answered before the retry");
    common::wait_until("the retry to restart the group", T, || starts.load(Ordering::SeqCst) >= 3).await;
    let kids = sup.which_children().await.unwrap();
    assert!(kids.iter().all(|k| k.actor.is_some() && !k.restarting), "all running after the retry: {kids:?}");
    sup.stop().await;
}
