//! Stop, kill, panics, links with trap-exit, monitors: OTP's rules, pinned.

mod common;

use std::sync::atomic::Ordering;

use common::{log, Cmd, Probe, T};
use troupe::{Actor, ActorRef, AnyRef, Ctx, ExitReason, LinkError, ReplyTo};

#[tokio::test]
async fn graceful_stop_runs_the_stopped_hook() {
    let lg = log();
    let p = troupe::spawn(Probe::new("p", &lg));
    p.stop();
    assert_eq!(p.terminated().await, ExitReason::Normal);
    assert_eq!(*lg.lock(), vec!["p:started", "p:stopped:normal"]);
}

#[tokio::test]
async fn kill_during_a_handler_runs_no_more_of_its_code() {
    let lg = log();
    let p = troupe::spawn(Probe::new("p", &lg));
    let (release, done) = common::hold(&p).await;
    p.kill();
    assert_eq!(p.terminated().await, ExitReason::Killed);
    // Releasing the await the victim was parked in must not resume it.
    release.notify_one();
    tokio::task::yield_now().await;
    assert!(!done.load(Ordering::SeqCst), "code after the await ran after the kill");
    assert_eq!(*lg.lock(), vec!["p:started"], "the stopped hook must not run after a kill");
}

/// Rule 6 when the kill comes during the very poll that then awaits something other than the
/// mailbox (here the actor kills itself, then awaits for ever): an activation stores the waker a
/// kill wakes only after such a poll, so it must see the kill there and poll again; else the
/// actor would stay alive, awaiting, for ever.
#[tokio::test]
async fn a_kill_during_the_poll_that_then_awaits_elsewhere_still_ends_the_actor() {
    struct SelfKill;
    impl Actor for SelfKill {
        type Msg = ();
        async fn handle(&mut self, _: (), ctx: &mut Ctx<Self>) {
            ctx.myself().kill();
            std::future::pending::<()>().await;
        }
    }
    let a = troupe::spawn(SelfKill);
    a.send(()).unwrap();
    let end = tokio::time::timeout(std::time::Duration::from_secs(10), a.terminated()).await;
    assert_eq!(end.expect("the killed actor went on awaiting"), ExitReason::Killed);
}

#[tokio::test]
async fn a_panic_is_an_exit_reason_and_harms_no_one_else() {
    let lg = log();
    let victim = troupe::spawn(Probe::new("victim", &lg));
    let bystander = troupe::spawn(Probe::new("bystander", &lg));
    victim.send(Cmd::Panic("boom".into())).unwrap();
    assert_eq!(victim.terminated().await, ExitReason::Panicked("boom".into()));
    assert!(bystander.ask(Cmd::Ping, T).await.is_ok());
}

/// Links itself to a target on request and reports what it saw.
struct Linker {
    inner: Probe,
}

enum LMsg {
    Link(AnyRef, ReplyTo<Result<(), LinkError>>),
    Monitor(AnyRef, ReplyTo<()>),
    Probe(Cmd),
}

impl Actor for Linker {
    type Msg = LMsg;
    async fn handle(&mut self, m: LMsg, ctx: &mut Ctx<Self>) {
        match m {
            LMsg::Link(other, r) => r.send(ctx.link(&other)),
            LMsg::Monitor(other, r) => {
                ctx.monitor(&other);
                r.send(());
            }
            LMsg::Probe(Cmd::TrapExit(t)) => ctx.trap_exit(t),
            LMsg::Probe(Cmd::Signals(r)) => r.send(self.inner.seen.clone()),
            LMsg::Probe(Cmd::Ping(r)) => r.send(0),
            LMsg::Probe(_) => {}
        }
    }
    async fn on_exit(&mut self, sig: troupe::ExitSignal, _: &mut Ctx<Self>) {
        self.inner.seen.push(format!("exit:{}", sig.reason));
    }
    async fn on_down(&mut self, d: troupe::Down, _: &mut Ctx<Self>) {
        self.inner.seen.push(format!("down:{}", d.reason));
    }
}

fn linker(lg: &common::Log) -> ActorRef<LMsg> {
    troupe::spawn(Linker { inner: Probe::new("linker", lg) })
}

async fn signals(l: &ActorRef<LMsg>) -> Vec<String> {
    l.ask(|r| LMsg::Probe(Cmd::Signals(r)), T).await.unwrap()
}

#[tokio::test]
async fn an_abnormal_exit_propagates_over_a_link() {
    let lg = log();
    let l = linker(&lg);
    let target = troupe::spawn(Probe::new("t", &lg));
    l.ask(|r| LMsg::Link(target.any(), r), T).await.unwrap().unwrap();
    target.send(Cmd::Panic("linked crash".into())).unwrap();
    assert_eq!(l.terminated().await, ExitReason::Panicked("linked crash".into()));
}

#[tokio::test]
async fn a_kill_propagates_over_a_link_as_killed() {
    let lg = log();
    let l = linker(&lg);
    let target = troupe::spawn(Probe::new("t", &lg));
    l.ask(|r| LMsg::Link(target.any(), r), T).await.unwrap().unwrap();
    target.kill();
    assert_eq!(l.terminated().await, ExitReason::Killed);
}

#[tokio::test]
async fn a_normal_exit_does_not_propagate() {
    let lg = log();
    let l = linker(&lg);
    let target = troupe::spawn(Probe::new("t", &lg));
    l.ask(|r| LMsg::Link(target.any(), r), T).await.unwrap().unwrap();
    target.stop();
    target.terminated().await;
    assert!(l.ask(|r| LMsg::Probe(Cmd::Ping(r)), T).await.is_ok(), "linked actor survives a normal exit");
}

#[tokio::test]
async fn links_work_in_both_directions() {
    let lg = log();
    let l = linker(&lg);
    let target = troupe::spawn(Probe::new("t", &lg));
    l.ask(|r| LMsg::Link(target.any(), r), T).await.unwrap().unwrap();
    l.kill();
    assert_eq!(target.terminated().await, ExitReason::Killed);
}

#[tokio::test]
async fn trapping_exits_turns_signals_into_messages() {
    let lg = log();
    let l = linker(&lg);
    l.send(LMsg::Probe(Cmd::TrapExit(true))).unwrap();
    let a = troupe::spawn(Probe::new("a", &lg));
    let b = troupe::spawn(Probe::new("b", &lg));
    l.ask(|r| LMsg::Link(a.any(), r), T).await.unwrap().unwrap();
    l.ask(|r| LMsg::Link(b.any(), r), T).await.unwrap().unwrap();
    a.kill();
    a.terminated().await;
    b.stop();
    b.terminated().await;
    assert_eq!(signals(&l).await, vec!["exit:killed", "exit:normal"]);
}

#[tokio::test]
async fn linking_to_a_dead_actor_is_noproc() {
    let lg = log();
    let dead = troupe::spawn(Probe::new("dead", &lg));
    dead.kill();
    dead.terminated().await;
    let l = linker(&lg);
    let r = l.ask(|r| LMsg::Link(dead.any(), r), T).await.unwrap();
    assert_eq!(r, Err(LinkError::NoProc(dead.id())));
    // When trapping exits, the same link delivers an exit signal with NoProc instead.
    l.send(LMsg::Probe(Cmd::TrapExit(true))).unwrap();
    l.ask(|r| LMsg::Link(dead.any(), r), T).await.unwrap().unwrap();
    assert_eq!(signals(&l).await, vec!["exit:noproc"]);
}

#[tokio::test]
async fn monitors_deliver_down_with_the_reason() {
    let lg = log();
    let l = linker(&lg);
    let target = troupe::spawn(Probe::new("t", &lg));
    l.ask(|r| LMsg::Monitor(target.any(), r), T).await.unwrap();
    target.send(Cmd::Exit(ExitReason::Error("bad".into()))).unwrap();
    target.terminated().await;
    assert_eq!(signals(&l).await, vec!["down:error: bad"]);
    assert!(l.is_alive(), "a monitor never kills the watcher");
}

#[tokio::test]
async fn monitoring_a_dead_actor_delivers_noproc_at_once() {
    let lg = log();
    let dead = troupe::spawn(Probe::new("dead", &lg));
    dead.kill();
    dead.terminated().await;
    let l = linker(&lg);
    l.ask(|r| LMsg::Monitor(dead.any(), r), T).await.unwrap();
    assert_eq!(signals(&l).await, vec!["down:noproc"]);
}

#[tokio::test]
async fn started_failure_is_an_error_exit() {
    let lg = log();
    let mut p = Probe::new("p", &lg);
    p.fail_start = true;
    let r = troupe::spawn(p);
    assert_eq!(r.terminated().await, ExitReason::Error("p refuses to start".into()));
}

#[tokio::test]
async fn terminated_on_a_dead_actor_returns_its_reason() {
    let lg = log();
    let p = troupe::spawn(Probe::new("p", &lg));
    p.send(Cmd::Panic("x".into())).unwrap();
    p.terminated().await;
    assert_eq!(p.terminated().await, ExitReason::Panicked("x".into()));
    assert!(!p.is_alive());
}
