//! Stop variants (`cell.rs` rule 11): `drain_and_stop` handles what was queued, then stops,
//! refusing later sends; `stop` stops now, dropping what is queued. Pipe-to-self: `Ctx::pipe`
//! delivers a future's output as a message, and the future dies with the actor.

mod common;

use std::sync::Arc;

use common::T;
use parking_lot::Mutex;
use tokio::sync::{oneshot, Notify};
use troupe::{Actor, ActorRef, AskError, Ctx, ExitReason, MailboxConfig, PipeRef, ReplyTo, SendErrorKind, Spawn};

enum Msg {
    /// Signals `entered`, then waits for `release`.
    Hold(oneshot::Sender<()>, Arc<Notify>),
    Push(u32),
    Get(ReplyTo<Vec<u32>>),
    /// Pipes a future that waits for the notify, then yields the number; `alive` is dropped
    /// with the future.
    Pipe {
        release: Arc<Notify>,
        n: u32,
        alive: oneshot::Sender<()>,
        keep: Option<oneshot::Sender<PipeRef>>,
    },
    DrainSelf,
}

struct Worker {
    seen: Vec<u32>,
    stopped: Arc<Mutex<Option<ExitReason>>>,
}

impl Actor for Worker {
    type Msg = Msg;
    async fn handle(&mut self, msg: Msg, ctx: &mut Ctx<Self>) {
        match msg {
            Msg::Hold(entered, release) => {
                let _ = entered.send(());
                release.notified().await;
            }
            Msg::Push(n) => self.seen.push(n),
            Msg::Get(r) => r.send(self.seen.clone()),
            Msg::Pipe { release, n, alive, keep } => {
                let p = ctx.pipe(
                    async move {
                        let _alive = alive;
                        release.notified().await;
                        n
                    },
                    Msg::Push,
                );
                if let Some(k) = keep {
                    let _ = k.send(p);
                }
            }
            Msg::DrainSelf => ctx.drain_and_stop(ExitReason::Shutdown),
        }
    }
    async fn stopped(&mut self, reason: &ExitReason, _: &mut Ctx<Self>) {
        *self.stopped.lock() = Some(reason.clone());
    }
}

fn worker(opts: Spawn) -> (ActorRef<Msg>, Arc<Mutex<Option<ExitReason>>>) {
    let stopped = Arc::new(Mutex::new(None));
    (troupe::spawn_with(Worker { seen: vec![], stopped: stopped.clone() }, opts), stopped)
}

/// Parks `w` in a handler until the returned notify is released.
async fn hold(w: &ActorRef<Msg>) -> Arc<Notify> {
    let (tx, rx) = oneshot::channel();
    let release = Arc::new(Notify::new());
    w.send(Msg::Hold(tx, release.clone())).unwrap();
    rx.await.unwrap();
    release
}

#[tokio::test]
async fn drain_and_stop_handles_what_was_queued_then_stops_refusing_later_sends() {
    let (w, stopped) = worker(Spawn::new());
    let release = hold(&w).await;
    for n in 1..=3 {
        w.send(Msg::Push(n)).unwrap();
    }
    let (tx, rx) = oneshot::channel();
    w.send(Msg::Get(ReplyTo::from_fn(move |v| {
        let _ = tx.send(v);
    })))
    .unwrap();
    w.drain_and_stop();
    let refused = w.send(Msg::Push(4)).unwrap_err();
    assert_eq!(refused.kind(), SendErrorKind::Gone);
    assert!(w.is_alive(), "alive while it drains");
    release.notify_one();
    assert_eq!(rx.await.unwrap(), vec![1, 2, 3], "the ask queued before the drain is answered");
    assert_eq!(w.terminated().await, ExitReason::Normal);
    assert_eq!(*stopped.lock(), Some(ExitReason::Normal), "stopped ran");
}

#[tokio::test]
async fn stop_now_drops_what_is_queued() {
    let (w, stopped) = worker(Spawn::new());
    let release = hold(&w).await;
    w.send(Msg::Push(1)).unwrap();
    let pending = {
        let w = w.clone();
        tokio::spawn(async move { w.ask(Msg::Get, T).await })
    };
    tokio::task::yield_now().await;
    w.stop();
    release.notify_one();
    assert_eq!(w.terminated().await, ExitReason::Normal);
    assert_eq!(pending.await.unwrap().unwrap_err(), AskError::Gone);
    assert_eq!(*stopped.lock(), Some(ExitReason::Normal));
}

#[tokio::test]
async fn a_stop_or_kill_during_a_drain_acts_at_once() {
    for kill in [false, true] {
        let (w, _) = worker(Spawn::new());
        let release = hold(&w).await;
        for n in 0..100 {
            w.send(Msg::Push(n)).unwrap();
        }
        w.drain_and_stop();
        if kill {
            w.kill();
        } else {
            w.any().stop(ExitReason::Shutdown);
        }
        release.notify_one();
        let want = if kill { ExitReason::Killed } else { ExitReason::Shutdown };
        assert_eq!(w.terminated().await, want);
    }
}

#[tokio::test]
async fn an_actor_can_drain_itself_and_blocked_senders_see_gone() {
    let (w, stopped) = worker(Spawn::new().mailbox(MailboxConfig::bounded(2)));
    let release = hold(&w).await;
    w.send(Msg::DrainSelf).unwrap();
    w.send(Msg::Push(1)).unwrap();
    let blocked = {
        let w = w.clone();
        tokio::spawn(async move { w.send_wait(Msg::Push(2)).await.map_err(|e| e.kind()) })
    };
    // Let the sender block on the full mailbox (current-thread runtime: it runs on our yield).
    assert_eq!(w.mailbox_len(), 2);
    tokio::task::yield_now().await;
    release.notify_one();
    assert_eq!(w.terminated().await, ExitReason::Shutdown);
    assert_eq!(blocked.await.unwrap(), Err(SendErrorKind::Gone));
    assert_eq!(*stopped.lock(), Some(ExitReason::Shutdown));
}

#[tokio::test]
async fn mailbox_len_counts_queued_messages_including_a_taken_batch() {
    let (w, _) = worker(Spawn::new());
    assert_eq!(w.mailbox_len(), 0);
    let release = hold(&w).await;
    for n in 0..5 {
        w.send(Msg::Push(n)).unwrap();
    }
    assert_eq!(w.mailbox_len(), 5);
    release.notify_one();
    let seen = w.ask(Msg::Get, T).await.unwrap();
    assert_eq!(seen.len(), 5);
    assert_eq!(w.mailbox_len(), 0);
}

#[tokio::test]
async fn pipe_delivers_the_output_as_a_message_while_the_actor_goes_on() {
    let (w, _) = worker(Spawn::new());
    let release = Arc::new(Notify::new());
    let (alive, gone) = oneshot::channel();
    w.send(Msg::Pipe { release: release.clone(), n: 7, alive, keep: None }).unwrap();
    w.send(Msg::Push(1)).unwrap();
    assert_eq!(w.ask(Msg::Get, T).await.unwrap(), vec![1], "the actor is free while the future runs");
    release.notify_one();
    // The future finished (dropping its guard); its output was sent then, so it is handled
    // before a later ask.
    gone.await.unwrap_err();
    assert_eq!(w.ask(Msg::Get, T).await.unwrap(), vec![1, 7]);
}

#[tokio::test]
async fn a_piped_future_is_cancelled_when_the_actor_stops_or_on_request() {
    let (w, _) = worker(Spawn::new());
    let (alive, gone) = oneshot::channel();
    w.send(Msg::Pipe { release: Arc::new(Notify::new()), n: 1, alive, keep: None }).unwrap();
    w.kill();
    w.terminated().await;
    gone.await.unwrap_err();

    let (w, _) = worker(Spawn::new());
    let (alive, gone) = oneshot::channel();
    let (keep, kept) = oneshot::channel();
    w.send(Msg::Pipe { release: Arc::new(Notify::new()), n: 1, alive, keep: Some(keep) }).unwrap();
    let pipe = kept.await.unwrap();
    assert!(!pipe.is_finished());
    pipe.cancel();
    gone.await.unwrap_err();
    assert!(w.ask(Msg::Get, T).await.unwrap().is_empty(), "a cancelled pipe delivers nothing");
}
