//! The energy programs' typed actors and messages (spec §4), the same in one process and
//! across nodes: every message is a [`RemoteMessage`].
//!
//! The shapes follow seed 002's CAF programs (`ping_pong.cpp`, `ping_pong_lb.cpp`,
//! `ping_pong_lb_prime.cpp`, `prime_calculation.cpp`): a ping is (client, ping) answered by a
//! bare pong; a prime request is (client, range) answered by the bare count; docs/energy.md,
//! "Seed programs", lists what differs and why.
//!
//! Rules:
//! 1. A client sends `Ping` carrying its own ref (in `ping_pong_lb_prime`: `Prime` carrying its
//!    ref and the range), waits for the answer, and repeats until it has received `msgs`
//!    answers; then it counts itself done (the last client done tells the main task, which
//!    stamps the end of the repetition's interval).
//! 2. The load balancer forwards each request, unchanged, to the next server, round-robin (index
//!    `(next + 1) % servers`); the server answers the client directly (not through the load
//!    balancer).
//! 3. A server answers `Ping` with `Pong`, and `Prime(client, range)` with `Primes(n)`, n the
//!    count of primes <= the range the request carries, computed by the seed's trial division
//!    (`primes::find_primes`) for every request; the client checks n against pi(range) and
//!    counts a wrong answer.
//! 4. The prime actor answers `Count` with the count of primes <= range by the same trial
//!    division.
//! 5. The node process's control actor builds a repetition's servers (`Setup`, answered with the
//!    entry: the server, the load balancer or the prime actor) and stops them (`Teardown`,
//!    answered once every one of them has ended).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;
use troupe::{Actor, ActorRef, Ctx, ReplyTo};
use troupe_remote::{Nested, RemoteMessage};

use super::primes::{count_trial, find_primes};

/// What a client understands.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) enum ClientMsg {
    /// Start the round trips.
    Go,
    /// A server's answer to `Ping` (rule 3).
    Pong,
    /// A server's answer to `Prime`: the count of primes <= the range (rule 3).
    Primes(i32),
}

/// What a server, the load balancer and the prime actor understand.
#[derive(Serialize, Deserialize)]
pub(crate) enum WorkMsg {
    /// A client's ping (rules 1-2).
    Ping(ActorRef<ClientMsg>),
    /// A client's prime request: its ref and the range, the seed's `int` (rules 1-3).
    Prime(ActorRef<ClientMsg>, i32),
    /// Count the primes <= range (rule 4).
    Count(u64, ReplyTo<u64>),
}

/// What the node process's control actor understands (rule 5).
#[derive(Serialize, Deserialize)]
pub(crate) enum ControlMsg {
    /// Build the servers of a repetition: (workload, servers); answered with the entry.
    Setup(String, u64, ReplyTo<Entry>),
    /// Stop the repetition's servers; answered once done.
    Teardown(ReplyTo<()>),
    /// End the node process.
    Quit,
}

/// The entry of a repetition's servers.
#[derive(Serialize, Deserialize)]
pub(crate) struct Entry(pub(crate) ActorRef<WorkMsg>);

impl RemoteMessage for ClientMsg {
    const TAG: &'static str = "troupe.lab.energy.client.v2";
}

impl RemoteMessage for WorkMsg {
    const TAG: &'static str = "troupe.lab.energy.work.v2";
    fn nested(n: &mut Nested) {
        n.add::<ClientMsg>();
        n.add::<u64>();
    }
}

impl RemoteMessage for ControlMsg {
    const TAG: &'static str = "troupe.lab.energy.control.v2";
    fn nested(n: &mut Nested) {
        n.add::<Entry>();
        n.add::<()>();
    }
}

impl RemoteMessage for Entry {
    const TAG: &'static str = "troupe.lab.energy.entry.v2";
    fn nested(n: &mut Nested) {
        n.add::<WorkMsg>();
    }
}

/// A server: answers pings and prime requests (rule 3) and counts (rule 4; the prime actor is
/// a server asked `Count`).
pub(crate) struct Server;

impl Actor for Server {
    type Msg = WorkMsg;

    async fn handle(&mut self, msg: WorkMsg, _: &mut Ctx<Self>) {
        match msg {
            WorkMsg::Ping(client) => {
                let _ = client.send(ClientMsg::Pong);
            }
            WorkMsg::Prime(client, range) => {
                let _ = client.send(ClientMsg::Primes(find_primes(range)));
            }
            WorkMsg::Count(range, reply) => reply.send(count_trial(range)),
        }
    }
}

/// The round-robin load balancer (rule 2).
pub(crate) struct Balancer {
    pub(crate) servers: Vec<ActorRef<WorkMsg>>,
    pub(crate) next: usize,
}

impl Actor for Balancer {
    type Msg = WorkMsg;

    async fn handle(&mut self, msg: WorkMsg, _: &mut Ctx<Self>) {
        let i = self.next;
        self.next = (self.next + 1) % self.servers.len().max(1);
        if let Some(s) = self.servers.get(i) {
            let _ = s.send(msg);
        }
    }
}

/// A repetition's servers in this process: the entry and every actor to stop afterwards.
pub(crate) struct Servers {
    pub(crate) entry: ActorRef<WorkMsg>,
    all: Vec<ActorRef<WorkMsg>>,
}

impl Servers {
    /// Spawns what `workload` needs (rules 2-4).
    pub(crate) fn spawn(workload: &str, servers: u64) -> Servers {
        match workload {
            "ping_pong_lb" | "ping_pong_lb_prime" => {
                let all: Vec<_> = (0..servers.max(1)).map(|_| troupe::spawn(Server)).collect();
                let entry = troupe::spawn(Balancer { servers: all.clone(), next: 0 });
                let mut all = all;
                all.push(entry.clone());
                Servers { entry, all }
            }
            _ => {
                let s = troupe::spawn(Server);
                Servers { entry: s.clone(), all: vec![s] }
            }
        }
    }

    /// Stops them all and waits until every one has ended (contract rule 5).
    pub(crate) async fn stop(&self) -> std::result::Result<(), String> {
        stop_all(&self.all).await
    }
}

/// How long the actors of a repetition may take to end once stopped (contract rule 5).
pub(crate) const STOP_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Stops `refs` and waits until every one has ended, at most [`STOP_LIMIT`] (contract rule 5:
/// nothing of a repetition runs into the next one's set-up).
pub(crate) async fn stop_all<M: Send + 'static>(refs: &[ActorRef<M>]) -> std::result::Result<(), String> {
    for a in refs {
        a.stop();
    }
    let deadline = tokio::time::Instant::now() + STOP_LIMIT;
    while refs.iter().any(ActorRef::is_alive) {
        if tokio::time::Instant::now() >= deadline {
            let left = refs.iter().filter(|a| a.is_alive()).count();
            return Err(format!("{left} actors had not ended {} s after being stopped", STOP_LIMIT.as_secs()));
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    Ok(())
}

/// The control actor of a node process (rule 5).
pub(crate) struct Control {
    pub(crate) current: Option<Servers>,
    pub(crate) quit: Arc<Notify>,
}

impl Actor for Control {
    type Msg = ControlMsg;

    async fn handle(&mut self, msg: ControlMsg, _: &mut Ctx<Self>) {
        match msg {
            ControlMsg::Setup(workload, servers, reply) => {
                if let Some(old) = self.current.take() {
                    let _ = old.stop().await;
                }
                let s = Servers::spawn(&workload, servers);
                reply.send(Entry(s.entry.clone()));
                self.current = Some(s);
            }
            ControlMsg::Teardown(reply) => {
                // Answered once every actor of the repetition has ended (contract rule 5).
                if let Some(old) = self.current.take() {
                    if let Err(e) = old.stop().await {
                        eprintln!("troupe energy-node: {e}");
                        return;
                    }
                }
                reply.send(());
            }
            ControlMsg::Quit => self.quit.notify_one(),
        }
    }
}

/// Shared by a repetition's clients: pongs received, clients still running, and when the
/// last one finished (rule 1).
pub(crate) struct Done {
    pub(crate) pongs: AtomicU64,
    pub(crate) wrong: AtomicU64,
    pub(crate) running: AtomicU64,
    pub(crate) all_done: Notify,
}

impl Done {
    pub(crate) fn new(clients: u64) -> Arc<Done> {
        Arc::new(Done {
            pongs: AtomicU64::new(0),
            wrong: AtomicU64::new(0),
            running: AtomicU64::new(clients),
            all_done: Notify::new(),
        })
    }
}

/// What a client asks for (rule 1).
#[derive(Clone, Copy)]
pub(crate) enum Ask {
    /// `Ping`, answered by `Pong`.
    Ping,
    /// `Prime` with this range, answered by `Primes(expect)` (rule 3).
    Prime {
        /// The range every request carries.
        range: i32,
        /// The answer every reply must carry.
        expect: i32,
    },
}

/// A client (rule 1).
pub(crate) struct Client {
    pub(crate) entry: ActorRef<WorkMsg>,
    pub(crate) left: u64,
    pub(crate) done: Arc<Done>,
    pub(crate) ask: Ask,
}

impl Client {
    fn request(&self, ctx: &Ctx<Self>) {
        let msg = match self.ask {
            Ask::Ping => WorkMsg::Ping(ctx.myself()),
            Ask::Prime { range, .. } => WorkMsg::Prime(ctx.myself(), range),
        };
        let _ = self.entry.send(msg);
    }

    fn answered(&mut self, ctx: &Ctx<Self>) {
        self.done.pongs.fetch_add(1, Ordering::Relaxed);
        self.left = self.left.saturating_sub(1);
        if self.left > 0 {
            self.request(ctx);
        } else if self.done.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            // The main task stamps `end_us` when it learns this (contract rule 4).
            self.done.all_done.notify_one();
        }
    }
}

impl Actor for Client {
    type Msg = ClientMsg;

    async fn handle(&mut self, msg: ClientMsg, ctx: &mut Ctx<Self>) {
        match msg {
            ClientMsg::Go => self.request(ctx),
            ClientMsg::Pong => self.answered(ctx),
            ClientMsg::Primes(n) => {
                if !matches!(self.ask, Ask::Prime { expect, .. } if expect == n) {
                    self.done.wrong.fetch_add(1, Ordering::Relaxed);
                }
                self.answered(ctx);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn contract_rule_5_a_repetitions_servers_have_ended_when_stop_returns() {
        let s = Servers::spawn("ping_pong_lb_prime", 3);
        assert!(s.all.iter().all(ActorRef::is_alive));
        s.stop().await.unwrap();
        assert!(s.all.iter().all(|a| !a.is_alive()), "an actor outlived the repetition's teardown");
    }
}
