//! `start.rs` rules 1-3 (`troupe::start`, `System::start`: a start that returns `started`'s
//! error) and `system.rs` rule 6 (`ActorRef::call` waits the system's default ask timeout).

mod common;

use std::error::Error as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use troupe::{Actor, ActorError, AskError, Ctx, ExitReason, ReplyTo, Spawn, System, DEFAULT_ASK_TIMEOUT};

/// What its `started` does.
#[derive(Clone, Copy)]
enum Opening {
    Ok,
    Fail,
    Panic,
    /// Succeeds, then asks to stop.
    OkThenStop,
}

struct Opener {
    opening: Opening,
    ready: Arc<AtomicBool>,
}

impl Opener {
    fn new(opening: Opening) -> (Self, Arc<AtomicBool>) {
        let ready = Arc::new(AtomicBool::new(false));
        (Self { opening, ready: ready.clone() }, ready)
    }
}

impl Actor for Opener {
    type Msg = ReplyTo<bool>;

    async fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), ActorError> {
        // A start that takes a while: `start` must wait for it.
        tokio::task::yield_now().await;
        match self.opening {
            Opening::Ok => {}
            Opening::Fail => return Err(ActorError::new("no database at db:5432")),
            Opening::Panic => panic!("bad opening"),
            Opening::OkThenStop => ctx.stop(ExitReason::Normal),
        }
        self.ready.store(true, Ordering::SeqCst);
        Ok(())
    }

    async fn handle(&mut self, r: ReplyTo<bool>, _: &mut Ctx<Self>) {
        r.send(self.ready.load(Ordering::SeqCst));
    }
}

/// Keeps every request and never answers.
struct Silent(Vec<ReplyTo<()>>);

impl Actor for Silent {
    type Msg = ReplyTo<()>;
    async fn handle(&mut self, r: ReplyTo<()>, _: &mut Ctx<Self>) {
        self.0.push(r);
    }
}

/// Rule 1: `start` returns once `started` has finished, with a working ref.
#[tokio::test]
async fn start_returns_the_ref_after_started_succeeded() {
    let (actor, ready) = Opener::new(Opening::Ok);
    let r = troupe::start(actor).await.expect("it starts");
    assert!(ready.load(Ordering::SeqCst), "started had finished when start returned");
    assert!(r.ask(|t| t, common::T).await.unwrap());
    r.stop();
    assert_eq!(r.terminated().await, ExitReason::Normal);
}

/// Rules 2 and 3: a failing `started` is the error, with the actor's error as its source, and
/// the actor is dead by then.
#[tokio::test]
async fn a_failing_started_is_returned_as_the_start_error() {
    let (actor, _) = Opener::new(Opening::Fail);
    let err = troupe::start_with(actor, Spawn::new().name("db-pool")).await.unwrap_err();
    assert_eq!(err.actor_error().map(ToString::to_string).as_deref(), Some("no database at db:5432"));
    assert_eq!(err.source().map(ToString::to_string).as_deref(), Some("no database at db:5432"));
    assert_eq!(err.reason(), &ExitReason::Error("no database at db:5432".into()));
    assert_eq!(err.name(), Some("db-pool"));
    assert!(err.actor_type().ends_with("Opener"), "{}", err.actor_type());
    let text = err.to_string();
    for part in [&err.actor().to_string(), "Opener", "db-pool", "failed to start", "no database at db:5432"] {
        assert!(text.contains(part), "{text:?} lacks {part:?}");
    }
}

/// Rule 3: a panic in `started` has no source; its reason says it panicked.
#[tokio::test]
async fn a_panicking_started_is_a_start_error_without_a_source() {
    let (actor, _) = Opener::new(Opening::Panic);
    let err = troupe::start(actor).await.unwrap_err();
    assert!(err.source().is_none());
    assert!(matches!(err.reason(), ExitReason::Panicked(m) if m.contains("bad opening")), "{:?}", err.reason());
}

/// Rule 1: an actor that started and then asked to stop did start.
#[tokio::test]
async fn an_actor_that_started_then_stops_has_started() {
    let (actor, _) = Opener::new(Opening::OkThenStop);
    let r = troupe::start(actor).await.expect("its started returned Ok");
    assert_eq!(r.terminated().await, ExitReason::Normal);
}

/// Rules 1 and 2 in a system: the started actor is the system's; a failed one is not alive.
#[tokio::test]
async fn system_start_starts_in_the_system_and_a_failed_start_leaves_nothing_running() {
    let sys = System::new();
    let (actor, _) = Opener::new(Opening::Ok);
    let r = sys.start(actor).await.unwrap();
    assert_eq!(sys.alive(), 1);
    let (actor, _) = Opener::new(Opening::Fail);
    let err = sys.start_with(actor, Spawn::new()).await.unwrap_err();
    assert!(err.to_string().contains("no database"), "{err}");
    assert_eq!(sys.alive(), 1, "the failed one is dead when start returns");
    sys.shutdown().await;
    assert_eq!(r.terminated().await, ExitReason::Shutdown);
}

/// `spawn` is unchanged: fire-and-forget, the failure is seen through `terminated`.
#[tokio::test]
async fn spawn_still_returns_at_once_and_a_failure_shows_in_terminated() {
    let (actor, _) = Opener::new(Opening::Fail);
    let r = troupe::spawn(actor);
    assert_eq!(r.terminated().await, ExitReason::Error("no database at db:5432".into()));
}

/// `system.rs` rule 6: `call` in a system waits the system's ask timeout, then times out.
#[tokio::test(start_paused = true)]
async fn call_times_out_after_the_system_s_default() {
    let sys = System::new().with_ask_timeout(Duration::from_millis(300));
    let s = sys.spawn(Silent(Vec::new()));
    let t0 = Instant::now();
    assert_eq!(sys.run(async { s.call(|r| r).await }).await, Err(AskError::Timeout(Duration::from_millis(300))));
    assert_eq!(t0.elapsed(), Duration::from_millis(300), "the paused clock moved exactly the timeout");
    // An explicit timeout overrides it.
    let t1 = Instant::now();
    assert_eq!(
        sys.run(async { s.ask(|r| r, Duration::from_millis(40)).await }).await,
        Err(AskError::Timeout(Duration::from_millis(40)))
    );
    assert_eq!(t1.elapsed(), Duration::from_millis(40));
    sys.shutdown().await;
}

/// Rule 6: outside any system, and in a system that set none, the default is 5 s.
#[tokio::test(start_paused = true)]
async fn call_outside_a_system_waits_the_documented_default() {
    assert_eq!(DEFAULT_ASK_TIMEOUT, Duration::from_secs(5));
    assert_eq!(System::new().ask_timeout(), DEFAULT_ASK_TIMEOUT);
    let s = troupe::spawn(Silent(Vec::new()));
    let t0 = Instant::now();
    assert_eq!(s.call(|r| r).await, Err(AskError::Timeout(DEFAULT_ASK_TIMEOUT)));
    assert_eq!(t0.elapsed(), DEFAULT_ASK_TIMEOUT);
}

/// Rule 6: an actor's `call` uses its own system's timeout (the caller's, not the target's).
#[tokio::test(start_paused = true)]
async fn an_actor_s_call_uses_its_system_s_timeout() {
    struct Asker(troupe::ActorRef<ReplyTo<()>>);
    impl Actor for Asker {
        type Msg = ReplyTo<(Result<(), AskError>, Duration)>;
        async fn handle(&mut self, r: Self::Msg, _: &mut Ctx<Self>) {
            let t0 = Instant::now();
            let res = self.0.call(|x| x).await;
            r.send((res, t0.elapsed()));
        }
    }
    let target = troupe::spawn(Silent(Vec::new()));
    let sys = System::new().with_ask_timeout(Duration::from_millis(750));
    let asker = sys.spawn(Asker(target));
    let (res, took) = asker.ask(|r| r, Duration::from_secs(60)).await.unwrap();
    assert_eq!(res, Err(AskError::Timeout(Duration::from_millis(750))));
    assert_eq!(took, Duration::from_millis(750));
    sys.shutdown().await;
}
