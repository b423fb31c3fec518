//! An actor is reachable from anywhere (`cell.rs`, rules 9 and 10): send, ask, kill, and the
//! exit signals and `Down`s of links and monitors reach an idle actor from a plain thread, from
//! another runtime, and after that runtime is dropped; the actor always runs on its home runtime,
//! and dies with `Killed` (links and monitors told) when its home runtime is gone.
//!
//! Each test builds its runtimes itself: a home runtime whose worker threads are named
//! `home-rt`, so a handler can report where it ran.

use std::future::Future;
use std::pin::pin;
use std::sync::mpsc;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use tokio::runtime::{Builder, Runtime};
use troupe::{Actor, ActorError, ActorRef, AnyRef, AskError, Ctx, Down, ExitReason, ExitSignal, ReplyTo};

const T: Duration = Duration::from_secs(20);

/// Polls `f` to completion on this thread, parking between polls (no runtime involved).
fn block_on<F: Future>(f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

/// Runs `f` on a new plain thread (no tokio runtime there) and returns its result.
fn on_plain_thread<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::spawn(move || {
        assert!(tokio::runtime::Handle::try_current().is_err(), "a plain thread has no runtime");
        f()
    })
    .join()
    .expect("the plain thread panicked")
}

fn home_runtime() -> Runtime {
    Builder::new_multi_thread().worker_threads(1).thread_name("home-rt").enable_all().build().unwrap()
}

fn other_runtime() -> Runtime {
    Builder::new_multi_thread().worker_threads(1).thread_name("other-rt").enable_all().build().unwrap()
}

fn thread_name() -> String {
    std::thread::current().name().unwrap_or("unnamed").to_owned()
}

enum Msg {
    /// Answers with the name of the thread the handler runs on.
    Where(ReplyTo<String>),
    /// Answers, then stays in the handler for good: the actor keeps its task, whatever the
    /// sweeper does.
    Busy(ReplyTo<String>),
}

/// An actor that links to and/or monitors another one in `started` (so it never needs a
/// message and stays idle), and reports every signal with the thread it was handled on.
struct Watcher {
    trap: bool,
    link: Option<AnyRef>,
    monitor: Option<AnyRef>,
    events: mpsc::Sender<String>,
}

impl Watcher {
    fn plain(events: &mpsc::Sender<String>) -> Self {
        Self { trap: false, link: None, monitor: None, events: events.clone() }
    }
}

impl Actor for Watcher {
    type Msg = Msg;

    async fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), ActorError> {
        ctx.trap_exit(self.trap);
        if let Some(l) = &self.link {
            ctx.link(l).map_err(|e| ActorError::new(e.to_string()))?;
        }
        if let Some(m) = &self.monitor {
            ctx.monitor(m);
        }
        Ok(())
    }

    async fn handle(&mut self, m: Msg, _: &mut Ctx<Self>) {
        match m {
            Msg::Where(r) => r.send(thread_name()),
            Msg::Busy(r) => {
                r.send(thread_name());
                std::future::pending::<()>().await;
            }
        }
    }

    async fn on_exit(&mut self, sig: ExitSignal, _: &mut Ctx<Self>) {
        let _ = self.events.send(format!("exit:{} on {}", sig.reason, thread_name()));
    }

    async fn on_down(&mut self, d: Down, _: &mut Ctx<Self>) {
        let _ = self.events.send(format!("down:{} on {}", d.reason, thread_name()));
    }

    async fn stopped(&mut self, reason: &ExitReason, _: &mut Ctx<Self>) {
        let _ = self.events.send(format!("stopped:{reason}"));
    }
}

/// Spawns on `rt` (its home) without running anything there yet: the actor stays idle.
fn spawn_on<A: Actor>(rt: &Runtime, a: A) -> ActorRef<A::Msg> {
    let _in = rt.enter();
    troupe::spawn(a)
}

fn ask_where(r: &ActorRef<Msg>) -> Result<String, AskError> {
    let r = r.clone();
    on_plain_thread(move || block_on(r.ask(Msg::Where, T)))
}

fn next(events: &mpsc::Receiver<String>) -> String {
    events.recv_timeout(T).expect("an event within the time limit")
}

#[test]
fn send_from_a_plain_thread_to_a_never_run_actor_does_not_make_a_zombie() {
    let home = home_runtime();
    let (tx, events) = mpsc::channel();
    let a = spawn_on(&home, Watcher::plain(&tx));
    let (answer_tx, answer) = tokio::sync::oneshot::channel();
    let r = a.clone();
    on_plain_thread(move || r.send(Msg::Where(ReplyTo::from_fn(move |w| drop(answer_tx.send(w))))).is_ok())
        .then_some(())
        .expect("send accepted");
    let ran_on = block_on(answer).expect("the message was handled");
    assert!(ran_on.starts_with("home-rt"), "handled on its home runtime, not {ran_on}");
    // Not a zombie: it answers asks, and a kill from a plain thread ends it.
    assert!(ask_where(&a).unwrap().starts_with("home-rt"));
    let r = a.clone();
    let reason = on_plain_thread(move || {
        r.kill();
        block_on(r.terminated())
    });
    assert_eq!(reason, ExitReason::Killed);
    assert!(a.send(Msg::Where(ReplyTo::from_fn(|_| ()))).is_err(), "a dead actor refuses sends");
    drop(events);
}

#[test]
fn ask_from_a_plain_thread_reaches_an_idle_actor_and_times_out_on_its_home_clock() {
    let home = home_runtime();
    let (tx, _events) = mpsc::channel();
    let a = spawn_on(&home, Watcher::plain(&tx));
    assert!(ask_where(&a).unwrap().starts_with("home-rt"), "never-run actor");
    assert!(ask_where(&a).unwrap().starts_with("home-rt"), "recently active actor");
    // A message nobody answers: the timeout fires on the home runtime's clock.
    struct Mute;
    impl Actor for Mute {
        type Msg = ReplyTo<()>;
        async fn handle(&mut self, r: ReplyTo<()>, _: &mut Ctx<Self>) {
            std::mem::forget(r);
        }
    }
    let m = spawn_on(&home, Mute);
    let got = on_plain_thread(move || block_on(m.ask(|r| r, Duration::from_millis(50))));
    assert_eq!(got, Err(AskError::Timeout(Duration::from_millis(50))));
}

#[test]
fn kill_from_a_plain_thread_ends_an_idle_actor_and_tells_its_monitors() {
    let home = home_runtime();
    let (tx, events) = mpsc::channel();
    let target = spawn_on(&home, Watcher::plain(&tx));
    let watcher = spawn_on(&home, Watcher { monitor: Some(target.any()), ..Watcher::plain(&tx) });
    let t = target.clone();
    on_plain_thread(move || t.kill());
    assert_eq!(next(&events), "down:killed on home-rt");
    assert!(!target.is_alive());
    assert!(watcher.is_alive());
}

#[test]
fn link_exit_from_a_plain_thread_wakes_an_idle_trapping_actor_on_its_home() {
    let home = home_runtime();
    let (tx, events) = mpsc::channel();
    let target = spawn_on(&home, Watcher::plain(&tx));
    let trapper = spawn_on(&home, Watcher { trap: true, link: Some(target.any()), ..Watcher::plain(&tx) });
    let t = target.clone();
    on_plain_thread(move || t.any().stop(ExitReason::Error("boom".into())));
    // The target runs its stopped hook, then the link delivers the exit signal.
    assert_eq!(next(&events), "stopped:error: boom");
    assert_eq!(next(&events), "exit:error: boom on home-rt");
    assert!(trapper.is_alive());
}

#[test]
fn link_exit_from_a_plain_thread_kills_an_idle_actor_that_does_not_trap() {
    let home = home_runtime();
    let (tx, _events) = mpsc::channel();
    let target = spawn_on(&home, Watcher::plain(&tx));
    let linked = spawn_on(&home, Watcher { link: Some(target.any()), ..Watcher::plain(&tx) });
    let (t, l) = (target.clone(), linked.clone());
    let reason = on_plain_thread(move || {
        t.kill();
        block_on(l.terminated())
    });
    assert_eq!(reason, ExitReason::Killed);
}

#[test]
fn an_idle_actor_woken_from_another_runtime_stays_on_its_home_after_that_runtime_is_dropped() {
    let home = home_runtime();
    let (tx, events) = mpsc::channel();
    let a = spawn_on(&home, Watcher::plain(&tx));
    let target = spawn_on(&home, Watcher::plain(&tx));
    let watcher = spawn_on(&home, Watcher { monitor: Some(target.any()), ..Watcher::plain(&tx) });
    let trapper = spawn_on(&home, Watcher { trap: true, link: Some(target.any()), ..Watcher::plain(&tx) });

    let other = other_runtime();
    let ran_on = other.block_on(a.ask(Msg::Where, T)).unwrap();
    assert!(ran_on.starts_with("home-rt"), "woken from another runtime, handled on {ran_on}");
    other.block_on(async { target.kill() });
    let mut seen = [next(&events), next(&events)];
    seen.sort();
    assert_eq!(seen, ["down:killed on home-rt", "exit:killed on home-rt"]);
    drop(other);

    // That runtime is gone; the actors it woke live on, on their home.
    assert!(a.is_alive() && watcher.is_alive() && trapper.is_alive());
    assert!(ask_where(&a).unwrap().starts_with("home-rt"));
    assert!(home.block_on(a.ask(Msg::Where, T)).unwrap().starts_with("home-rt"));
    let w = watcher.clone();
    assert_eq!(on_plain_thread(move || block_on(w.ask(Msg::Where, T))).map(|s| s.starts_with("home-rt")), Ok(true));
    let k = trapper.clone();
    let reason = on_plain_thread(move || {
        k.kill();
        block_on(k.terminated())
    });
    assert_eq!(reason, ExitReason::Killed);
}

#[test]
fn actors_die_killed_with_their_home_runtime_and_their_monitors_on_another_runtime_are_told() {
    let home = home_runtime();
    let survivor_rt = other_runtime();
    let (tx, events) = mpsc::channel();
    let never_run = spawn_on(&home, Watcher::plain(&tx));
    let active = spawn_on(&home, Watcher::plain(&tx));
    let a = active.clone();
    let busy = on_plain_thread(move || block_on(a.ask(Msg::Busy, T)));
    assert!(busy.unwrap().starts_with("home-rt"), "active: it now has a task, busy for good");
    let watch_never_run = spawn_on(&survivor_rt, Watcher { monitor: Some(never_run.any()), ..Watcher::plain(&tx) });
    let watch_active = spawn_on(&survivor_rt, Watcher { monitor: Some(active.any()), ..Watcher::plain(&tx) });

    drop(home);
    // The active actor's task was dropped with its runtime: it is dead, its monitor told.
    assert_eq!(next(&events), "down:killed on other-rt");
    assert_eq!(block_on(active.terminated()), ExitReason::Killed);
    // The idle one dies when something would wake it: its activation cannot run anywhere.
    let n = never_run.clone();
    let asked = on_plain_thread(move || block_on(n.ask(Msg::Where, T)));
    assert_eq!(asked, Err(AskError::Gone));
    assert_eq!(next(&events), "down:killed on other-rt");
    assert_eq!(block_on(never_run.terminated()), ExitReason::Killed);
    assert!(never_run.send(Msg::Where(ReplyTo::from_fn(|_| ()))).is_err());
    assert!(watch_never_run.is_alive() && watch_active.is_alive());
}

#[test]
fn spawning_outside_a_runtime_panics_with_a_message_that_says_what_to_do() {
    let (tx, _events) = mpsc::channel();
    let err = on_plain_thread(move || std::panic::catch_unwind(|| drop(troupe::spawn(Watcher::plain(&tx)))))
        .expect_err("spawn needs a runtime");
    let text = err.downcast_ref::<String>().cloned().or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()));
    assert!(text.unwrap_or_default().contains("outside a tokio runtime"));
}
