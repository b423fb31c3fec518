//! The energy programs' typed actors and messages (spec §4), the same in one process and
//! across nodes: every message is a [`RemoteMessage`].
//!
//! Rules:
//! 1. A client sends `Ping` carrying its own ref, waits for `Pong`, and repeats until it has
//!    received `msgs` pongs; then it counts itself done (the last client done tells the main
//!    task, which stamps the end of the repetition's interval).
//! 2. The load balancer forwards each `Ping` to the next server, round-robin; the server answers
//!    the client directly (not through the load balancer).
//! 3. A server's `Pong` carries 0, or in `ping_pong_lb_prime` the count of primes <= range,
//!    computed by trial division for every request; the client checks it against pi(range)
//!    and counts a wrong answer.
//! 4. The prime actor answers `Count` with the count of primes <= range by trial division.
//! 5. The node process's control actor builds a repetition's servers (`Setup`, answered with the
//!    entry: the server, the load balancer or the prime actor) and stops them (`Teardown`,
//!    answered once every one of them has ended).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;
use troupe::{Actor, ActorRef, Ctx, ReplyTo};
use troupe_remote::{Nested, RemoteMessage};

use super::primes::count_trial;

/// What a client understands.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) enum ClientMsg {
    /// Start the round trips.
    Go,
    /// A server's answer (rule 3).
    Pong(u64),
}

/// What a server, the load balancer and the prime actor understand.
#[derive(Serialize, Deserialize)]
pub(crate) enum WorkMsg {
    /// A client's ping (rules 1-2).
    Ping(ActorRef<ClientMsg>),
    /// Count the primes <= range (rule 4).
    Count(u64, ReplyTo<u64>),
}

/// What the node process's control actor understands (rule 5).
#[derive(Serialize, Deserialize)]
pub(crate) enum ControlMsg {
    /// Build the servers of a repetition: (workload, servers, range); answered with the entry.
    Setup(String, u64, u64, ReplyTo<Entry>),
    /// Stop the repetition's servers; answered once done.
    Teardown(ReplyTo<()>),
    /// End the node process.
    Quit,
}

/// The entry of a repetition's servers.
#[derive(Serialize, Deserialize)]
pub(crate) struct Entry(pub(crate) ActorRef<WorkMsg>);

impl RemoteMessage for ClientMsg {
    const TAG: &'static str = "troupe.lab.energy.client.v1";
}

impl RemoteMessage for WorkMsg {
    const TAG: &'static str = "troupe.lab.energy.work.v1";
    fn nested(n: &mut Nested) {
        n.add::<ClientMsg>();
        n.add::<u64>();
    }
}

impl RemoteMessage for ControlMsg {
    const TAG: &'static str = "troupe.lab.energy.control.v1";
    fn nested(n: &mut Nested) {
        n.add::<Entry>();
        n.add::<()>();
    }
}

impl RemoteMessage for Entry {
    const TAG: &'static str = "troupe.lab.energy.entry.v1";
    fn nested(n: &mut Nested) {
        n.add::<WorkMsg>();
    }
}

/// A server: answers pings (rule 3) and counts (rule 4; the prime actor is a server asked
/// `Count`).
pub(crate) struct Server {
    /// 0: answer 0; else count primes <= range per ping.
    pub(crate) range: u64,
}

impl Actor for Server {
    type Msg = WorkMsg;

    async fn handle(&mut self, msg: WorkMsg, _: &mut Ctx<Self>) {
        match msg {
            WorkMsg::Ping(client) => {
                let answer = if self.range > 0 { count_trial(self.range) } else { 0 };
                let _ = client.send(ClientMsg::Pong(answer));
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
    pub(crate) fn spawn(workload: &str, servers: u64, range: u64) -> Servers {
        match workload {
            "ping_pong_lb" | "ping_pong_lb_prime" => {
                let r = if workload == "ping_pong_lb_prime" { range } else { 0 };
                let all: Vec<_> = (0..servers.max(1)).map(|_| troupe::spawn(Server { range: r })).collect();
                let entry = troupe::spawn(Balancer { servers: all.clone(), next: 0 });
                let mut all = all;
                all.push(entry.clone());
                Servers { entry, all }
            }
            _ => {
                let s = troupe::spawn(Server { range: 0 });
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
            ControlMsg::Setup(workload, servers, range, reply) => {
                if let Some(old) = self.current.take() {
                    let _ = old.stop().await;
                }
                let s = Servers::spawn(&workload, servers, range);
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

/// A client (rule 1).
pub(crate) struct Client {
    pub(crate) entry: ActorRef<WorkMsg>,
    pub(crate) left: u64,
    pub(crate) done: Arc<Done>,
    /// The answer every pong must carry (rule 3).
    pub(crate) expect: u64,
}

impl Actor for Client {
    type Msg = ClientMsg;

    async fn handle(&mut self, msg: ClientMsg, ctx: &mut Ctx<Self>) {
        match msg {
            ClientMsg::Go => {
                let _ = self.entry.send(WorkMsg::Ping(ctx.myself()));
            }
            ClientMsg::Pong(answer) => {
                self.done.pongs.fetch_add(1, Ordering::Relaxed);
                if answer != self.expect {
                    self.done.wrong.fetch_add(1, Ordering::Relaxed);
                }
                self.left = self.left.saturating_sub(1);
                if self.left > 0 {
                    let _ = self.entry.send(WorkMsg::Ping(ctx.myself()));
                } else if self.done.running.fetch_sub(1, Ordering::AcqRel) == 1 {
                    // The main task stamps `end_us` when it learns this (contract rule 4).
                    self.done.all_done.notify_one();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn contract_rule_5_a_repetitions_servers_have_ended_when_stop_returns() {
        let s = Servers::spawn("ping_pong_lb_prime", 3, 100);
        assert!(s.all.iter().all(ActorRef::is_alive));
        s.stop().await.unwrap();
        assert!(s.all.iter().all(|a| !a.is_alive()), "an actor outlived the repetition's teardown");
    }
}
