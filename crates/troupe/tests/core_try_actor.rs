//! `?` in handlers: a `TryActor`'s `Err` stops it with `ExitReason::Failed` (the error's type
//! name and message), after its `stopped` hook, and links, monitors and supervisors see it as a
//! crash; the crate's errors convert into `ActorError`; `whereis` reads as a plain `Result`.

mod common;

use std::time::Duration;

use common::T;
use tokio::sync::{mpsc, oneshot};
use troupe::supervisor::{self, ChildSpec, Restart, Strategy, SupervisorSpec};
use troupe::{
    Actor, ActorError, ActorRef, AnyRef, AskError, Ctx, Down, ExitReason, ExitSignal, Failure, RegistryError, ReplyTo,
    TryActor,
};

/// Parses numbers; `?` on the parse error stops it.
struct Parser {
    stopped: Option<oneshot::Sender<ExitReason>>,
}

enum PMsg {
    Parse(String, ReplyTo<u32>),
}

impl TryActor for Parser {
    type Msg = PMsg;
    type Error = std::num::ParseIntError;

    async fn handle(&mut self, PMsg::Parse(text, reply): PMsg, _: &mut Ctx<Self>) -> Result<(), Self::Error> {
        reply.send(text.parse()?);
        Ok(())
    }

    async fn stopped(&mut self, reason: &ExitReason, _: &mut Ctx<Self>) {
        if let Some(tx) = self.stopped.take() {
            let _ = tx.send(reason.clone());
        }
    }
}

fn parse(p: &ActorRef<PMsg>, text: &str) {
    let _ = p.send(PMsg::Parse(text.to_owned(), ReplyTo::from_fn(|_| {})));
}

#[tokio::test]
async fn an_err_stops_the_actor_with_the_errors_type_and_message_after_stopped() {
    let (tx, rx) = oneshot::channel();
    let p = troupe::spawn(Parser { stopped: Some(tx) });
    assert_eq!(p.ask(|r| PMsg::Parse("7".into(), r), T).await.unwrap(), 7, "Ok goes on");
    parse(&p, "seven");
    let reason = p.terminated().await;
    assert_eq!(
        reason,
        ExitReason::Failed(Box::new(Failure {
            error: "core::num::error::ParseIntError".into(),
            message: "invalid digit found in string".into()
        }))
    );
    assert!(reason.failed_with::<std::num::ParseIntError>());
    assert!(!reason.failed_with::<std::io::Error>());
    assert!(reason.is_abnormal());
    assert_eq!(rx.await.unwrap(), reason, "stopped ran with the failure");
}

#[tokio::test]
async fn messages_queued_behind_the_failing_one_are_not_handled() {
    let p = troupe::spawn(Parser { stopped: None });
    parse(&p, "x");
    let late = p.ask(|r| PMsg::Parse("1".into(), r), T).await;
    assert_eq!(late.unwrap_err(), AskError::Gone);
}

/// Watches one actor (monitor) and another (link, trapping exits); reports what arrives.
struct Watcher {
    out: mpsc::UnboundedSender<String>,
}

impl Actor for Watcher {
    type Msg = (AnyRef, AnyRef, oneshot::Sender<()>);
    async fn handle(&mut self, (mon, link, ready): Self::Msg, ctx: &mut Ctx<Self>) {
        ctx.trap_exit(true);
        ctx.monitor(&mon);
        ctx.link(&link).unwrap();
        let _ = ready.send(());
    }
    async fn on_down(&mut self, d: Down, _: &mut Ctx<Self>) {
        let _ = self.out.send(format!("down {}", d.reason));
    }
    async fn on_exit(&mut self, s: ExitSignal, _: &mut Ctx<Self>) {
        let _ = self.out.send(format!("exit {}", s.reason));
    }
}

#[tokio::test]
async fn monitors_and_links_see_the_failure_as_they_see_a_crash() {
    let (out, mut seen) = mpsc::unbounded_channel();
    let w = troupe::spawn(Watcher { out });
    let (a, b) = (troupe::spawn(Parser { stopped: None }), troupe::spawn(Parser { stopped: None }));
    let (ready, set) = oneshot::channel();
    w.send((a.any(), b.any(), ready)).unwrap();
    set.await.unwrap();
    parse(&a, "nan");
    parse(&b, "-");
    let mut got = vec![seen.recv().await.unwrap(), seen.recv().await.unwrap()];
    got.sort();
    assert_eq!(got[0], "down failed: invalid digit found in string (core::num::error::ParseIntError)");
    assert!(got[1].starts_with("exit failed: "), "{got:?}");
    assert!(w.is_alive(), "a trapping linked actor survives");
}

/// Uses `?` on the crate's own errors through `ActorError`.
struct Client;

enum CMsg {
    /// Looks `name` up and asks it for a number.
    Fetch(&'static str, ReplyTo<u32>),
}

impl TryActor for Client {
    type Msg = CMsg;
    type Error = ActorError;

    async fn handle(&mut self, CMsg::Fetch(name, reply): CMsg, _: &mut Ctx<Self>) -> Result<(), ActorError> {
        let server = troupe::whereis::<PMsg>(name)?;
        let n = server.ask(|r| PMsg::Parse("41".into(), r), Duration::from_secs(5)).await?;
        reply.send(n + 1);
        Ok(())
    }
}

#[tokio::test]
async fn crate_errors_convert_into_actor_error_for_question_mark() {
    let server = troupe::spawn(Parser { stopped: None });
    troupe::register("try-server", &server).unwrap();
    let c = troupe::spawn(Client);
    assert_eq!(c.ask(|r| CMsg::Fetch("try-server", r), T).await.unwrap(), 42);
    let _ = c.send(CMsg::Fetch("try-nobody", ReplyTo::from_fn(|_| {})));
    match c.terminated().await {
        ExitReason::Failed(f) => {
            assert_eq!(f.error, std::any::type_name::<ActorError>());
            assert_eq!(f.message, RegistryError::NotRegistered("try-nobody".into()).to_string());
        }
        other => panic!("expected a failure, got {other}"),
    }
}

#[tokio::test]
async fn whereis_is_a_plain_result() {
    assert_eq!(troupe::whereis::<PMsg>("try-absent").unwrap_err(), RegistryError::NotRegistered("try-absent".into()));
    assert!(troupe::whereis::<PMsg>("try-absent").ok().is_none());
    let p = troupe::spawn(Parser { stopped: None });
    troupe::register("try-present", &p).unwrap();
    assert_eq!(troupe::whereis::<PMsg>("try-present").unwrap().id(), p.id());
}

#[tokio::test]
async fn a_supervisor_restarts_a_transient_child_that_failed() {
    let spec = ChildSpec::worker("parser", || Parser { stopped: None }).restart(Restart::Transient);
    let child = spec.handle();
    let sup =
        supervisor::start(SupervisorSpec::new(Strategy::OneForOne).intensity(3, Duration::from_secs(5)).child(spec))
            .await
            .unwrap();
    let first = child.get().unwrap();
    parse(&first, "oops");
    assert!(first.terminated().await.failed_with::<std::num::ParseIntError>());
    let second = loop {
        match child.get() {
            Some(r) if r.id() != first.id() => break r,
            _ => tokio::time::sleep(Duration::from_millis(1)).await,
        }
    };
    assert_eq!(second.ask(|r| PMsg::Parse("3".into(), r), T).await.unwrap(), 3);
    sup.stop().await;
}
