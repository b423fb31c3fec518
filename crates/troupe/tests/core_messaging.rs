//! Send, ask, mailboxes (bounded, drop policies, priority lane), adapters and timers.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{log, Cmd, Probe, T};
use troupe::{Actor, AskError, Ctx, ExitReason, MailboxConfig, Overflow, ReplyTo, SendErrorKind, Spawn};

/// Records every number it gets; can be told to block until released.
struct Recorder {
    got: Vec<u32>,
    mirror: Arc<parking_lot::Mutex<Vec<u32>>>,
    gate: Option<Arc<tokio::sync::Notify>>,
}

enum RMsg {
    Num(u32),
    Block(Arc<tokio::sync::Notify>, tokio::sync::oneshot::Sender<()>),
    Get(ReplyTo<Vec<u32>>),
}

impl Actor for Recorder {
    type Msg = RMsg;
    async fn handle(&mut self, m: RMsg, _: &mut Ctx<Self>) {
        match m {
            RMsg::Num(n) => {
                self.got.push(n);
                self.mirror.lock().push(n);
            }
            RMsg::Block(g, entered) => {
                self.gate = Some(g.clone());
                let _ = entered.send(());
                g.notified().await;
            }
            RMsg::Get(r) => r.send(self.got.clone()),
        }
    }
}

/// Blocks the recorder in a handler; returns once it is blocked, with the gate that releases it.
async fn block(r: &troupe::ActorRef<RMsg>) -> Arc<tokio::sync::Notify> {
    let gate = Arc::new(tokio::sync::Notify::new());
    let (tx, rx) = tokio::sync::oneshot::channel();
    r.send(RMsg::Block(gate.clone(), tx)).unwrap();
    rx.await.unwrap();
    gate
}

fn recorder() -> Recorder {
    Recorder { got: vec![], mirror: Default::default(), gate: None }
}

#[tokio::test]
async fn messages_from_one_sender_arrive_in_order() {
    let r = troupe::spawn(recorder());
    for i in 0..1000 {
        r.send(RMsg::Num(i)).unwrap();
    }
    let got = r.ask(RMsg::Get, T).await.unwrap();
    assert_eq!(got, (0..1000).collect::<Vec<_>>());
}

#[tokio::test]
async fn send_to_a_dead_actor_hands_the_message_back() {
    let r = troupe::spawn(recorder());
    r.kill();
    assert_eq!(r.terminated().await, ExitReason::Killed);
    let err = r.send(RMsg::Num(7)).unwrap_err();
    assert_eq!(err.kind(), SendErrorKind::Gone);
    assert!(matches!(err.into_inner(), Some(RMsg::Num(7))));
}

#[tokio::test]
async fn ask_a_dead_actor_fails_promptly_with_gone() {
    let r = troupe::spawn(recorder());
    r.stop();
    r.terminated().await;
    let started = tokio::time::Instant::now();
    assert_eq!(r.ask(RMsg::Get, Duration::from_secs(30)).await.unwrap_err(), AskError::Gone);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn ask_an_actor_that_dies_before_replying_fails_with_gone() {
    let r = troupe::spawn(recorder());
    let _gate = block(&r).await;
    let pending = {
        let r = r.clone();
        tokio::spawn(async move { r.ask(RMsg::Get, Duration::from_secs(30)).await })
    };
    // The Get is queued behind the blocked handler; killing drops it.
    tokio::task::yield_now().await;
    r.kill();
    assert_eq!(pending.await.unwrap().unwrap_err(), AskError::Gone);
}

#[tokio::test(start_paused = true)]
async fn ask_past_its_timeout_fails_with_timeout() {
    let r = troupe::spawn(recorder());
    let gate = block(&r).await;
    assert_eq!(
        r.ask(RMsg::Get, Duration::from_millis(50)).await.unwrap_err(),
        AskError::Timeout(Duration::from_millis(50))
    );
    gate.notify_one();
}

#[tokio::test]
async fn bounded_mailbox_refuses_when_full_and_hands_the_message_back() {
    let r = troupe::spawn_with(recorder(), Spawn::new().mailbox(MailboxConfig::bounded(2)));
    let gate = block(&r).await;
    r.send(RMsg::Num(1)).unwrap();
    r.send(RMsg::Num(2)).unwrap();
    let err = r.send(RMsg::Num(3)).unwrap_err();
    assert_eq!(err.kind(), SendErrorKind::Full);
    assert!(matches!(err.into_inner(), Some(RMsg::Num(3))));
    // send_wait waits for room instead.
    let waiter = {
        let r = r.clone();
        tokio::spawn(async move { r.send_wait(RMsg::Num(3)).await.is_ok() })
    };
    gate.notify_one();
    assert!(waiter.await.unwrap());
    assert_eq!(r.ask(RMsg::Get, T).await.unwrap(), vec![1, 2, 3]);
}

async fn overflow_run(policy: Overflow) -> (Vec<u32>, u64) {
    let rec = recorder();
    let mirror = rec.mirror.clone();
    let r = troupe::spawn_with(rec, Spawn::new().mailbox(MailboxConfig::bounded(3).with_overflow(policy)));
    let gate = block(&r).await;
    for i in 1..=5 {
        r.send(RMsg::Num(i)).unwrap();
    }
    let dropped = r.dropped();
    gate.notify_one();
    common::wait_until("the recorder to drain its mailbox", T, || mirror.lock().len() >= 3).await;
    let got = mirror.lock().clone();
    (got, dropped)
}

#[tokio::test]
async fn drop_newest_keeps_the_oldest_and_counts_drops() {
    let (got, dropped) = overflow_run(Overflow::DropNewest).await;
    assert_eq!(dropped, 2);
    assert_eq!(got, vec![1, 2, 3]);
}

#[tokio::test]
async fn drop_oldest_keeps_the_newest_and_counts_drops() {
    let (got, dropped) = overflow_run(Overflow::DropOldest).await;
    assert_eq!(dropped, 2);
    assert_eq!(got, vec![3, 4, 5]);
}

#[tokio::test]
async fn system_messages_jump_the_queue() {
    let lg = log();
    let p = troupe::spawn(Probe::new("p", &lg));
    let (release, done) = common::hold(&p).await;
    // Had any of these user messages been handled, the probe would exit with an Error.
    for _ in 0..100 {
        p.send(Cmd::Exit(ExitReason::Error("a user message overtook the stop".into()))).unwrap();
    }
    p.any().stop(ExitReason::Shutdown);
    release.notify_one();
    assert_eq!(p.terminated().await, ExitReason::Shutdown);
    assert!(done.load(Ordering::SeqCst), "the message in hand finishes first");
}

/// A mailbox served in batches still puts the system lane first: a stop request that arrives
/// while a batch is being worked through pre-empts the rest of the batch.
#[tokio::test]
async fn a_stop_arriving_mid_batch_pre_empts_the_batch() {
    let lg = log();
    let p = troupe::spawn(Probe::new("p", &lg));
    let (release, _) = common::hold(&p).await;
    for _ in 0..10 {
        p.send(Cmd::TrapExit(false)).unwrap();
    }
    p.send(Cmd::StopViaSystemLane).unwrap();
    for _ in 0..100 {
        p.send(Cmd::Exit(ExitReason::Error("a batched user message overtook the stop".into()))).unwrap();
    }
    release.notify_one();
    assert_eq!(p.terminated().await, ExitReason::Shutdown);
}

#[tokio::test]
async fn adapter_maps_into_the_actor_type_and_reports_gone() {
    let r = troupe::spawn(recorder());
    let strings = r.adapt(|s: &'static str| RMsg::Num(s.len() as u32));
    strings.send("four").unwrap();
    assert_eq!(r.ask(RMsg::Get, T).await.unwrap(), vec![4]);
    assert_eq!(strings.id(), r.id());
    r.kill();
    r.terminated().await;
    let err = strings.send("x").unwrap_err();
    assert_eq!(err.kind(), SendErrorKind::Gone);
    assert_eq!(err.into_inner(), Some("x"));
}

/// error.rs rule 3: an adapter whose target's bounded mailbox is full refuses before
/// transforming, so the caller gets its own message back.
#[tokio::test]
async fn adapter_to_a_full_mailbox_hands_the_untransformed_message_back() {
    let r = troupe::spawn_with(recorder(), Spawn::new().mailbox(MailboxConfig::bounded(1)));
    let gate = block(&r).await;
    r.send(RMsg::Num(1)).unwrap();
    let strings = r.adapt(|s: &'static str| RMsg::Num(s.len() as u32));
    let err = strings.send("full").unwrap_err();
    assert_eq!(err.kind(), SendErrorKind::Full);
    assert_eq!(err.into_inner(), Some("full"));
    gate.notify_one();
}

/// Counts ticks from its own timers.
struct Ticker {
    ticks: Arc<AtomicU64>,
}

#[derive(Clone)]
enum TMsg {
    Tick,
    StartInterval(Duration),
    After(Duration),
}

impl Actor for Ticker {
    type Msg = TMsg;
    async fn handle(&mut self, m: TMsg, ctx: &mut Ctx<Self>) {
        match m {
            TMsg::Tick => {
                self.ticks.fetch_add(1, Ordering::SeqCst);
            }
            TMsg::StartInterval(d) => {
                let _ = ctx.interval(d, TMsg::Tick);
            }
            TMsg::After(d) => {
                let _ = ctx.send_after(d, TMsg::Tick);
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn send_after_and_interval_deliver_on_time() {
    let ticks = Arc::new(AtomicU64::new(0));
    let t = troupe::spawn(Ticker { ticks: ticks.clone() });
    t.send(TMsg::After(Duration::from_millis(100))).unwrap();
    tokio::time::sleep(Duration::from_millis(99)).await;
    assert_eq!(ticks.load(Ordering::SeqCst), 0);
    common::wait_until("send_after to fire", T, || ticks.load(Ordering::SeqCst) == 1).await;
    t.send(TMsg::StartInterval(Duration::from_millis(10))).unwrap();
    common::wait_until("five interval ticks", T, || ticks.load(Ordering::SeqCst) >= 6).await;
}

/// On the real clock: a `send_after` never fires early, and its last stretch (sent from the
/// precise timer thread) reaches an actor that went idle in the meantime, on either runtime
/// flavour (the timer thread enters the actor's runtime to wake it).
#[test]
fn send_after_never_fires_early_and_reaches_an_idle_actor() {
    for multi in [false, true] {
        let rt = if multi {
            tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
        } else {
            tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
        };
        rt.block_on(async {
            let ticks = Arc::new(AtomicU64::new(0));
            let t = troupe::spawn(Ticker { ticks: ticks.clone() });
            for ms in [1u64, 3, 40, 2600] {
                let before = ticks.load(Ordering::SeqCst);
                let start = std::time::Instant::now();
                t.send(TMsg::After(Duration::from_millis(ms))).unwrap();
                common::wait_until("send_after to fire", T, || ticks.load(Ordering::SeqCst) > before).await;
                assert!(
                    start.elapsed() >= Duration::from_millis(ms),
                    "{ms} ms timer fired early: {:?}",
                    start.elapsed()
                );
            }
        });
    }
}

#[tokio::test(flavor = "current_thread")]
async fn timers_die_with_their_actor() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    let ticks = Arc::new(AtomicU64::new(0));
    let t = troupe::spawn(Ticker { ticks: ticks.clone() });
    t.send(TMsg::StartInterval(Duration::from_millis(5))).unwrap();
    t.send(TMsg::After(Duration::from_secs(3600))).unwrap();
    common::wait_until("a tick", T, || ticks.load(Ordering::SeqCst) >= 1).await;
    assert!(metrics.num_alive_tasks() >= before + 2, "two timer tasks are running");
    t.kill();
    t.terminated().await;
    common::wait_until("timer tasks to end", T, || metrics.num_alive_tasks() == before).await;
}

#[tokio::test(flavor = "current_thread")]
async fn compute_does_not_starve_other_actors() {
    // One thread runs every actor; the compute job spins until another actor flips a flag.
    let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spinning = {
        let flag = flag.clone();
        tokio::spawn(troupe::compute(move || {
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while !flag.load(Ordering::SeqCst) {
                assert!(std::time::Instant::now() < deadline, "the other actor never ran");
                std::hint::spin_loop();
            }
            42
        }))
    };
    let lg = log();
    let other = troupe::spawn(Probe::new("other", &lg));
    other.ask(Cmd::Ping, T).await.unwrap();
    flag.store(true, Ordering::SeqCst);
    assert_eq!(spinning.await.unwrap(), 42);
}
