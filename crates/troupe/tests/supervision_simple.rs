//! Rule 13 of `src/supervisor/server.rs`: a `simple_one_for_one` supervisor (OTP): children
//! from a template and an argument each, restarted with the same argument, gone for good when
//! not restarted, terminated by actor, ignored starts dropped, all stopped at once.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::T;
use troupe::supervisor::{self, Restart, Shutdown, SimpleSpec};
use troupe::{Actor, Ctx, ExitReason, ReplyTo};

enum Msg {
    Arg(ReplyTo<u32>),
    Exit(ExitReason),
}

/// A worker made from its argument; `stopped` waits at `barrier` when one is given.
struct Worker {
    arg: u32,
    barrier: Option<Arc<tokio::sync::Barrier>>,
    log: common::Log,
}

impl Actor for Worker {
    type Msg = Msg;

    async fn handle(&mut self, m: Msg, ctx: &mut Ctx<Self>) {
        match m {
            Msg::Arg(r) => r.send(self.arg),
            Msg::Exit(reason) => ctx.stop(reason),
        }
    }

    async fn stopped(&mut self, reason: &ExitReason, _: &mut Ctx<Self>) {
        if let Some(b) = &self.barrier {
            b.wait().await;
        }
        self.log.lock().push(format!("{}:stopped:{reason}", self.arg));
    }
}

fn worker(log: &common::Log) -> impl Fn(u32) -> Worker + Send + Sync + 'static {
    let log = log.clone();
    move |arg| Worker { arg, barrier: None, log: log.clone() }
}

#[tokio::test]
async fn children_start_from_their_argument_and_restart_with_it() {
    let lg = common::log();
    let spec = SimpleSpec::new(worker(&lg)).intensity(10, Duration::from_secs(60));
    let sup = supervisor::start_simple(spec).await.unwrap();
    let seven = sup.start_child(7).await.unwrap().unwrap();
    let nine = sup.start_child(9).await.unwrap().unwrap();
    assert_eq!(seven.ask(Msg::Arg, T).await.unwrap(), 7);
    assert_eq!(nine.ask(Msg::Arg, T).await.unwrap(), 9);
    seven.kill();
    seven.terminated().await;
    let kids = sup.which_children().await.unwrap();
    assert_eq!(kids.len(), 2);
    assert_ne!(kids[0].actor.as_ref().unwrap().id(), seven.id(), "a new incarnation");
    assert_eq!(sup.count_children().await.unwrap().active, 2);
    sup.stop().await;
}

#[tokio::test]
async fn a_child_not_restarted_terminated_or_ignored_is_gone_for_good() {
    let lg = common::log();
    let l = lg.clone();
    let spec =
        SimpleSpec::new_or_ignore(move |arg: u32| (arg != 0).then(|| Worker { arg, barrier: None, log: l.clone() }))
            .restart(Restart::Transient);
    let sup = supervisor::start_simple(spec).await.unwrap();
    assert!(sup.start_child(0).await.unwrap().is_none(), "ignored");
    let a = sup.start_child(1).await.unwrap().unwrap();
    let b = sup.start_child(2).await.unwrap().unwrap();
    let c = sup.start_child(3).await.unwrap().unwrap();
    a.send(Msg::Exit(ExitReason::Normal)).unwrap();
    a.terminated().await;
    sup.terminate_child(b.id()).await.unwrap();
    assert!(sup.terminate_child(b.id()).await.is_err(), "no longer a child");
    let kids = sup.which_children().await.unwrap();
    assert_eq!(kids.len(), 1, "only the third is left");
    assert_eq!(kids[0].actor.as_ref().unwrap().id(), c.id());
}

/// All children are asked to stop at once: each `stopped` waits until every child is in its
/// own (a barrier), which a one-by-one shutdown would never reach before its timeout.
#[tokio::test]
async fn shutdown_stops_all_children_at_once() {
    let lg = common::log();
    let barrier = Arc::new(tokio::sync::Barrier::new(4));
    let (l, b) = (lg.clone(), barrier.clone());
    let spec = SimpleSpec::new(move |arg| Worker { arg, barrier: Some(b.clone()), log: l.clone() })
        .shutdown(Shutdown::Timeout(Duration::from_secs(30)));
    let sup = supervisor::start_simple(spec).await.unwrap();
    for arg in 1..=4 {
        sup.start_child(arg).await.unwrap();
    }
    assert_eq!(tokio::time::timeout(T, sup.stop()).await, Ok(ExitReason::Shutdown));
    let mut lines = lg.lock().clone();
    lines.sort();
    assert_eq!(lines, ["1:stopped:shutdown", "2:stopped:shutdown", "3:stopped:shutdown", "4:stopped:shutdown"]);
}
