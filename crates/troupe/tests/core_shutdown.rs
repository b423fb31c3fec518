//! Coordinated shutdown of a `System` and its services (`lifecycle.rs` rules 1-6), with
//! services that only record when they stop; the node, cluster and replicator are tested in
//! `troupe-crdt/tests/replicator_shutdown.rs`.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use troupe::lifecycle::{Phase, Service, StopFuture};
use troupe::{Actor, Ctx, ExitReason, System};

type Log = Arc<Mutex<Vec<String>>>;

/// Logs `stop:NAME` when stopped, then signals `done`; never finishes when `hang`.
struct Recorder {
    name: &'static str,
    phase: Phase,
    log: Log,
    hang: bool,
    done: Arc<Notify>,
}

impl Service for Recorder {
    fn name(&self) -> &str {
        self.name
    }
    fn phase(&self) -> Phase {
        self.phase
    }
    fn stop(&self) -> StopFuture {
        let (log, name, hang, done) = (self.log.clone(), self.name, self.hang, self.done.clone());
        Box::pin(async move {
            if hang {
                std::future::pending::<()>().await;
            }
            log.lock().push(format!("stop:{name}"));
            done.notify_one();
        })
    }
}

fn rec(name: &'static str, phase: Phase, log: &Log) -> Recorder {
    Recorder { name, phase, log: log.clone(), hang: false, done: Arc::new(Notify::new()) }
}

/// Logs `actor:NAME` in its `stopped` hook.
struct Worker(&'static str, Log);

impl Actor for Worker {
    type Msg = ();
    async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {}
    async fn stopped(&mut self, _: &ExitReason, _: &mut Ctx<Self>) {
        self.1.lock().push(format!("actor:{}", self.0));
    }
}

#[tokio::test]
async fn rule_1_2_phases_run_in_order_and_services_stop_in_reverse_attach_order() {
    let log = Log::default();
    let sys = System::new();
    // Attached in an order unlike the phases', to show the phase decides.
    sys.attach(rec("node", Phase::CloseNode, &log));
    sys.attach(rec("replicator", Phase::StopReplicator, &log));
    sys.attach(rec("cluster", Phase::LeaveCluster, &log));
    sys.attach(rec("app-a", Phase::StopActors, &log));
    sys.attach(rec("app-b", Phase::StopActors, &log));
    let first = sys.spawn(Worker("first", log.clone()));
    let second = sys.spawn(Worker("second", log.clone()));
    assert_eq!(sys.services(), ["node", "replicator", "cluster", "app-a", "app-b"]);

    let report = sys.shutdown().await;
    assert_eq!(
        *log.lock(),
        ["stop:cluster", "actor:second", "actor:first", "stop:app-b", "stop:app-a", "stop:replicator", "stop:node"]
    );
    assert!(!first.is_alive() && !second.is_alive());
    assert!(report.first);
    assert_eq!(report.phases.iter().map(|p| p.phase).collect::<Vec<_>>(), Phase::ALL);
    assert_eq!(report.phase(Phase::StopActors).unwrap().services, ["app-b", "app-a"]);
    assert!(report.timed_out().is_empty(), "{report:?}");
    assert!(sys.services().is_empty(), "the system lets go of its services");
}

#[tokio::test]
async fn rule_3_4_a_phase_that_hangs_is_abandoned_at_its_timeout_and_the_next_runs() {
    let log = Log::default();
    let bound = Duration::from_millis(300);
    let sys = System::new().with_phase_timeout(Phase::LeaveCluster, bound);
    sys.attach(rec("node", Phase::CloseNode, &log));
    sys.attach(Recorder { hang: true, ..rec("stuck", Phase::LeaveCluster, &log) });
    sys.attach(rec("after-stuck", Phase::LeaveCluster, &log));
    let started = std::time::Instant::now();
    let report = tokio::time::timeout(Duration::from_secs(20), sys.shutdown()).await.expect("shutdown is bounded");
    let took = started.elapsed();
    assert!(took >= bound, "waited for the stuck service up to the bound, took {took:?}");
    assert!(took < Duration::from_secs(10), "returned near the bound, took {took:?}");
    assert_eq!(report.timed_out(), [Phase::LeaveCluster]);
    let leave = report.phase(Phase::LeaveCluster).unwrap();
    assert_eq!(leave.overran, ["stuck"]);
    assert!(leave.elapsed >= bound);
    // `after-stuck` stopped first (reverse attach order), the node after the overrun.
    assert_eq!(*log.lock(), ["stop:after-stuck", "stop:node"]);
}

#[tokio::test]
async fn rule_3_actors_still_alive_at_the_phase_deadline_are_killed() {
    struct Stubborn;
    impl Actor for Stubborn {
        type Msg = ();
        async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {}
        async fn stopped(&mut self, _: &ExitReason, _: &mut Ctx<Self>) {
            std::future::pending::<()>().await;
        }
    }
    let sys = System::new()
        .with_shutdown_timeout(Duration::from_secs(60))
        .with_phase_timeout(Phase::StopActors, Duration::from_millis(200));
    let a = sys.spawn(Stubborn);
    let report = tokio::time::timeout(Duration::from_secs(20), sys.shutdown()).await.expect("bounded");
    assert_eq!(report.timed_out(), [Phase::StopActors]);
    assert_eq!(report.phase(Phase::StopActors).unwrap().overran, ["actors"]);
    assert_eq!(tokio::time::timeout(Duration::from_secs(10), a.terminated()).await.unwrap(), ExitReason::Killed);
}

#[tokio::test]
async fn rule_5_a_second_shutdown_returns_at_once_with_the_first_report() {
    let log = Log::default();
    let sys = System::new();
    sys.attach(rec("node", Phase::CloseNode, &log));
    let first = sys.shutdown().await;
    let again = tokio::time::timeout(Duration::from_secs(1), sys.shutdown()).await.expect("at once");
    assert!(first.first && !again.first);
    assert_eq!(again.phases, first.phases);
    assert_eq!(*log.lock(), ["stop:node"], "nothing stopped twice");
}

#[tokio::test]
async fn rule_5_a_concurrent_shutdown_returns_at_once_while_the_first_runs() {
    /// Says when its stop began, then never finishes.
    struct Stuck(Arc<tokio::sync::Notify>);
    impl Service for Stuck {
        fn name(&self) -> &str {
            "stuck"
        }
        fn phase(&self) -> Phase {
            Phase::CloseNode
        }
        fn stop(&self) -> StopFuture {
            let began = self.0.clone();
            Box::pin(async move {
                began.notify_one();
                std::future::pending::<()>().await;
            })
        }
    }
    let began = Arc::new(tokio::sync::Notify::new());
    let sys = Arc::new(System::new().with_phase_timeout(Phase::CloseNode, Duration::from_secs(3)));
    sys.attach(Stuck(began.clone()));
    let running = tokio::spawn({
        let sys = sys.clone();
        async move { sys.shutdown().await }
    });
    tokio::time::timeout(Duration::from_secs(10), began.notified()).await.expect("the first call reaches close-node");
    let second = tokio::time::timeout(Duration::from_millis(500), sys.shutdown()).await.expect("at once");
    assert!(!second.first);
    assert!(second.phases.is_empty(), "the first call is still running: {second:?}");
    let first = running.await.unwrap();
    assert!(first.first);
    assert_eq!(first.timed_out(), [Phase::CloseNode]);
}

#[tokio::test]
async fn rule_6_a_service_attached_after_shutdown_is_stopped_at_once() {
    let log = Log::default();
    let sys = System::new();
    sys.shutdown().await;
    let late = rec("late", Phase::CloseNode, &log);
    let done = late.done.clone();
    sys.attach(late);
    tokio::time::timeout(Duration::from_secs(10), done.notified()).await.expect("the late service is stopped");
    assert_eq!(*log.lock(), ["stop:late"]);
}
