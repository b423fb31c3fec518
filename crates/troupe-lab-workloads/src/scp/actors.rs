//! The SCP actors on the Troupe core: the server of a pair (child of a sub-supervisor), its
//! linked client, and the aggregator that counts exchanges per second of the window.
//!
//! Rules (common.md, "SCP"):
//! 1. A server spawns its client LINKED to itself when it starts, so killing the server kills
//!    the client (and the client's pending timer, which dies with it).
//! 2. Exchange loop: the server sends `Ping(payload)`; the client waits `delay_ms` with a
//!    timer (no thread blocks), then answers `Pong(payload)`; the server tells the aggregator
//!    +1 and sends the next Ping at once.
//! 3. A server started for the 2nd+ time emits `restarted {target, attempt}`, `attempt` the
//!    number of restarts of its slot so far (1 at the first restart).
//! 4. The aggregator counts; on `StartWindow` it zeroes its count and, at the end of each
//!    window second s (timed from the window start, not from the previous tick, so it does not
//!    drift), emits `throughput {second: s, count}`; after the last second it signals done.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::oneshot;
use tokio::time::Instant;
use troupe::supervisor::ChildRef;
use troupe::{Actor, ActorError, ActorRef, Ctx};

use troupe_lab::events::writer::Emitter;

/// Shared by every actor of one SCP run.
pub(crate) struct Shared {
    pub(crate) emitter: Emitter,
    pub(crate) delay: Duration,
    pub(crate) payload_bytes: usize,
    pub(crate) aggregator: ChildRef<AggMsg>,
    pub(crate) errors: AtomicU64,
}

/// Messages to a server (serialisable only so the injector process can hold a ref to one).
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) enum ServerMsg {
    /// The client's answer.
    Pong(Vec<u8>),
}

/// Messages to a client.
pub(crate) enum ClientMsg {
    /// The server's request.
    Ping(Vec<u8>),
    /// The delay is over: answer.
    Reply(Vec<u8>),
}

/// The server of pair (group, slot).
pub(crate) struct Server {
    shared: Arc<Shared>,
    group: u32,
    slot: u32,
    attempt: u32,
    client: Option<ActorRef<ClientMsg>>,
}

impl Server {
    /// A fresh server; `starts` counts this slot's starts across restarts.
    pub(crate) fn new(shared: Arc<Shared>, group: u32, slot: u32, starts: &AtomicU32) -> Server {
        let attempt = starts.fetch_add(1, Ordering::Relaxed) + 1;
        Server { shared, group, slot, attempt, client: None }
    }
}

impl Actor for Server {
    type Msg = ServerMsg;

    async fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), ActorError> {
        if self.attempt > 1 {
            self.shared.emitter.emit(
                "restarted",
                // The number of restarts of the slot so far (1 at the first), as Erlang and Akka
                // count it (docs/scp.md contract rule 6).
                json!({"target": format!("g{}/s{}", self.group, self.slot), "attempt": self.attempt - 1}),
            );
        }
        let client = ctx.spawn_link(Client { server: ctx.myself(), delay: self.shared.delay });
        if client.send(ClientMsg::Ping(vec![0u8; self.shared.payload_bytes])).is_err() {
            self.shared.errors.fetch_add(1, Ordering::Relaxed);
        }
        self.client = Some(client);
        Ok(())
    }

    async fn handle(&mut self, msg: ServerMsg, _ctx: &mut Ctx<Self>) {
        let ServerMsg::Pong(payload) = msg;
        // An aggregator mid-restart misses the +1; that is the aggregator's failure to report.
        let _ = self.shared.aggregator.send(AggMsg::Inc);
        if let Some(c) = &self.client {
            if c.send(ClientMsg::Ping(payload)).is_err() {
                self.shared.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The client of a pair.
pub(crate) struct Client {
    server: ActorRef<ServerMsg>,
    delay: Duration,
}

impl Actor for Client {
    type Msg = ClientMsg;

    async fn handle(&mut self, msg: ClientMsg, ctx: &mut Ctx<Self>) {
        match msg {
            ClientMsg::Ping(p) => {
                // The timer is owned by this actor and dies with it; its ref is not needed.
                let _timer = ctx.send_after(self.delay, ClientMsg::Reply(p));
            }
            ClientMsg::Reply(p) => {
                let _ = self.server.send(ServerMsg::Pong(p));
            }
        }
    }
}

/// Messages to the aggregator.
pub(crate) enum AggMsg {
    /// One exchange completed.
    Inc,
    /// Start the window at `start`, lasting `seconds`; `done` fires after the last second.
    StartWindow { start: Instant, seconds: u32, done: oneshot::Sender<()> },
    /// Window second n ended.
    Tick(u32),
}

/// Counts exchanges and reports them per window second.
pub(crate) struct Aggregator {
    shared: Arc<Shared>,
    count: u64,
    window: Option<(Instant, u32)>,
    done: Option<oneshot::Sender<()>>,
}

impl Aggregator {
    pub(crate) fn new(shared: Arc<Shared>) -> Aggregator {
        Aggregator { shared, count: 0, window: None, done: None }
    }
}

impl Actor for Aggregator {
    type Msg = AggMsg;

    async fn handle(&mut self, msg: AggMsg, ctx: &mut Ctx<Self>) {
        match msg {
            AggMsg::Inc => self.count += 1,
            AggMsg::StartWindow { start, seconds, done } => {
                self.count = 0;
                self.window = Some((start, seconds));
                self.done = Some(done);
                let first = (start + Duration::from_secs(1)).saturating_duration_since(Instant::now());
                let _t = ctx.send_after(first, AggMsg::Tick(0));
            }
            AggMsg::Tick(s) => {
                let Some((start, seconds)) = self.window else {
                    return;
                };
                self.shared.emitter.emit("throughput", json!({"second": s, "count": self.count}));
                self.count = 0;
                if s + 1 < seconds {
                    let next = start + Duration::from_secs(u64::from(s) + 2);
                    let _t = ctx.send_after(next.saturating_duration_since(Instant::now()), AggMsg::Tick(s + 1));
                } else if let Some(d) = self.done.take() {
                    let _ = d.send(());
                }
            }
        }
    }
}
