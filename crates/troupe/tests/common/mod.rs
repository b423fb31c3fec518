//! Test actors and helpers shared by the integration tests: a probe that records what happens
//! to it, and a bounded wait for a condition (waiting on an event, never sleeping-and-hoping).
#![allow(dead_code, unreachable_pub)]

pub mod tree;

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use troupe::{Actor, ActorError, Ctx, Down, ExitReason, ExitSignal, ReplyTo};

/// A shared, ordered log of lifecycle events.
pub type Log = Arc<Mutex<Vec<String>>>;

pub fn log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

/// What a probe can be asked to do.
pub enum Cmd {
    Ping(ReplyTo<u64>),
    Exit(ExitReason),
    Panic(String),
    SleepThenMark(Duration, Arc<std::sync::atomic::AtomicBool>),
    /// Signals `entered`, waits for `release`, then sets `done`.
    Hold {
        entered: tokio::sync::oneshot::Sender<()>,
        release: Arc<tokio::sync::Notify>,
        done: Arc<std::sync::atomic::AtomicBool>,
    },
    TrapExit(bool),
    /// Asks for its own graceful stop through the system lane and carries on.
    StopViaSystemLane,
    Signals(ReplyTo<Vec<String>>),
}

/// A probe actor: answers pings, exits or panics on demand, records signals it receives and
/// its lifecycle into `log` under its `name`.
pub struct Probe {
    pub name: String,
    pub log: Log,
    pub seen: Vec<String>,
    pub fail_start: bool,
    pub stop_delay: Option<Duration>,
    pub hang_on_stop: bool,
}

impl Probe {
    pub fn new(name: &str, log: &Log) -> Self {
        Self {
            name: name.into(),
            log: log.clone(),
            seen: vec![],
            fail_start: false,
            stop_delay: None,
            hang_on_stop: false,
        }
    }
}

impl Actor for Probe {
    type Msg = Cmd;

    async fn started(&mut self, _: &mut Ctx<Self>) -> Result<(), ActorError> {
        if self.fail_start {
            self.log.lock().push(format!("{}:failed", self.name));
            return Err(ActorError::new(format!("{} refuses to start", self.name)));
        }
        self.log.lock().push(format!("{}:started", self.name));
        Ok(())
    }

    async fn handle(&mut self, msg: Cmd, ctx: &mut Ctx<Self>) {
        match msg {
            Cmd::Ping(r) => r.send(ctx.id().seq()),
            Cmd::Exit(reason) => ctx.stop(reason),
            Cmd::Panic(m) => panic!("{m}"),
            Cmd::SleepThenMark(d, flag) => {
                tokio::time::sleep(d).await;
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            Cmd::Hold { entered, release, done } => {
                let _ = entered.send(());
                release.notified().await;
                done.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            Cmd::TrapExit(t) => ctx.trap_exit(t),
            Cmd::StopViaSystemLane => ctx.myself().any().stop(ExitReason::Shutdown),
            Cmd::Signals(r) => r.send(self.seen.clone()),
        }
    }

    async fn stopped(&mut self, reason: &ExitReason, _: &mut Ctx<Self>) {
        if self.hang_on_stop {
            std::future::pending::<()>().await;
        }
        if let Some(d) = self.stop_delay {
            tokio::time::sleep(d).await;
        }
        self.log.lock().push(format!("{}:stopped:{reason}", self.name));
    }

    async fn on_exit(&mut self, sig: ExitSignal, _: &mut Ctx<Self>) {
        self.seen.push(format!("exit:{}", sig.reason));
    }

    async fn on_down(&mut self, d: Down, _: &mut Ctx<Self>) {
        self.seen.push(format!("down:{}", d.reason));
    }
}

/// Sends a `Hold` to `p` and returns once its handler is running: (release, done).
pub async fn hold(p: &troupe::ActorRef<Cmd>) -> (Arc<tokio::sync::Notify>, Arc<std::sync::atomic::AtomicBool>) {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let release = Arc::new(tokio::sync::Notify::new());
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    p.send(Cmd::Hold { entered: tx, release: release.clone(), done: done.clone() }).expect("probe alive");
    rx.await.expect("probe entered the handler");
    (release, done)
}

/// Waits until `cond` holds, yielding to the runtime; panics with `what` after `limit`.
pub async fn wait_until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !cond() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

pub const T: Duration = Duration::from_secs(10);
