//! The core's error story (`error.rs` rules): a timeout is a timeout and a stopped actor is
//! stopped (rule 1), `ActorError` keeps its cause as `source()` (rule 2), a send error hands the
//! message back (rule 3), and each error's text says what happened and what to do.

use std::error::Error as _;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, Notify};
use troupe::supervisor::{self, ChildSpec, Strategy, SupervisorError, SupervisorSpec};
use troupe::{Actor, ActorError, AskError, Ctx, ExitReason, ReplyTo, SendErrorKind};

/// Bound for every wait in these tests (generous for a loaded machine).
const LONG: Duration = Duration::from_secs(10);

/// Keeps every reply handle and never answers.
struct Mute(Vec<ReplyTo<()>>);
impl Actor for Mute {
    type Msg = ReplyTo<()>;
    async fn handle(&mut self, r: ReplyTo<()>, _: &mut Ctx<Self>) {
        self.0.push(r);
    }
}

#[tokio::test]
async fn rule_1_an_ask_nobody_answers_is_a_timeout_with_its_duration_and_an_ask_to_a_stopped_actor_is_gone() {
    let a = troupe::spawn(Mute(vec![]));
    let t = Duration::from_millis(50);
    let e = a.ask(|r| r, t).await.unwrap_err();
    assert_eq!(e, AskError::Timeout(t));
    let text = e.to_string();
    assert!(text.contains("no reply within 50ms") && text.contains("raise the timeout"), "{text}");
    assert!(a.is_alive(), "a timeout does not mean the actor stopped");

    a.stop();
    a.terminated().await;
    let e = a.ask(|r| r, t).await.unwrap_err();
    assert_eq!(e, AskError::Gone);
    assert!(e.to_string().contains("has stopped"), "{e}");
}

/// A child whose `started` says it began and then waits for `release`.
struct Slow {
    entered: Option<oneshot::Sender<()>>,
    release: Arc<Notify>,
}
impl Actor for Slow {
    type Msg = ();
    async fn started(&mut self, _: &mut Ctx<Self>) -> Result<(), ActorError> {
        if let Some(tx) = self.entered.take() {
            let _ = tx.send(());
        }
        self.release.notified().await;
        Ok(())
    }
    async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {}
}

#[tokio::test]
async fn rule_1_a_supervisor_busy_starting_a_slow_child_times_out_and_a_stopped_one_is_gone() {
    let sup = supervisor::start(SupervisorSpec::new(Strategy::OneForOne)).await.unwrap();
    let (entered_tx, entered) = oneshot::channel();
    let release = Arc::new(Notify::new());
    let entered_tx = parking_lot::Mutex::new(Some(entered_tx));
    let rel = release.clone();
    let spec = ChildSpec::worker("slow", move || Slow { entered: entered_tx.lock().take(), release: rel.clone() });
    let starter = {
        let sup = sup.clone();
        tokio::spawn(async move { sup.start_child(spec).await })
    };
    // The supervisor is now inside the slow child's start.
    tokio::time::timeout(LONG, entered).await.expect("the child's start began").unwrap();

    let t = Duration::from_millis(100);
    let quick = sup.with_call_timeout(t);
    let e = quick.which_children().await.unwrap_err();
    assert_eq!(e, SupervisorError::Timeout(t));
    let text = e.to_string();
    assert!(text.contains("did not answer within 100ms") && text.contains("raise the call timeout"), "{text}");
    assert!(!text.contains("stopped"), "a timeout is not reported as a stop: {text}");

    release.notify_one();
    let started = tokio::time::timeout(LONG, starter).await.unwrap().unwrap();
    assert!(matches!(started, Ok(Some(_))), "{started:?}");
    assert_eq!(quick.which_children().await.unwrap().len(), 1);

    sup.stop().await;
    let e = quick.which_children().await.unwrap_err();
    assert_eq!(e, SupervisorError::Gone);
    assert!(e.to_string().contains("has stopped"), "{e}");
}

#[test]
fn rule_2_an_actor_error_from_an_io_error_keeps_it_as_its_source() {
    fn open() -> Result<(), ActorError> {
        Err(std::io::Error::new(std::io::ErrorKind::AddrInUse, "port 4000 is taken"))?;
        Ok(())
    }
    let e = open().unwrap_err();
    assert_eq!(e.msg(), "port 4000 is taken");
    let io = e.source().expect("a source").downcast_ref::<std::io::Error>().expect("the io::Error");
    assert_eq!(io.kind(), std::io::ErrorKind::AddrInUse);

    let e = ActorError::with_source("cannot open the journal; check its path", std::io::Error::other("denied"));
    assert_eq!(e.to_string(), "cannot open the journal; check its path");
    assert_eq!(troupe::error_chain(&e), "cannot open the journal; check its path: denied");

    let plain = ActorError::new("no config");
    assert!(plain.source().is_none());
    assert_eq!(troupe::error_chain(&plain), "no config");

    let parse = "x".parse::<u8>().map_err(ActorError::from_source).unwrap_err();
    assert!(parse.source().unwrap().is::<std::num::ParseIntError>());

    let ask: ActorError = AskError::Timeout(Duration::from_secs(2)).into();
    assert_eq!(ask.source().unwrap().downcast_ref::<AskError>(), Some(&AskError::Timeout(Duration::from_secs(2))));
}

/// Refuses to start with an io error underneath.
struct NoDisk;
impl Actor for NoDisk {
    type Msg = ();
    async fn started(&mut self, _: &mut Ctx<Self>) -> Result<(), ActorError> {
        Err(ActorError::with_source("cannot open the store", std::io::Error::other("disk full")))
    }
    async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {}
}

#[tokio::test]
async fn rule_2_a_failed_start_reports_the_whole_chain_as_its_exit_reason() {
    let a = troupe::spawn(NoDisk);
    let reason = tokio::time::timeout(LONG, a.terminated()).await.unwrap();
    assert_eq!(reason, ExitReason::Error("cannot open the store: disk full".into()));
}

#[tokio::test]
async fn rule_3_a_refused_send_hands_the_message_back() {
    let a = troupe::spawn(Mute(vec![]));
    a.stop();
    a.terminated().await;
    let (tx, _rx) = oneshot::channel::<()>();
    let e = a.send(ReplyTo::from_fn(move |()| drop(tx))).unwrap_err();
    assert_eq!(e.kind(), SendErrorKind::Gone);
    assert!(e.to_string().contains("has stopped; look it up again or restart it"), "{e}");
    assert!(e.into_inner().is_some(), "the message comes back");
}
