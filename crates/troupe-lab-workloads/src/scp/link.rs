//! The wire between the Troupe SCP SUB and its fault injector when the injector runs as its own
//! OS process (workloads.md §1: "run it as a separate OS process (a separate node), as the paper
//! did"). The SUB starts a `troupe-remote` node on loopback with a fresh secret, exports the
//! `scp-targets` actor, and starts `troupe lab exec scp-injector` with the node's address and
//! secret in its environment. Seed 001's Erlang injector asked the supervisor for its children
//! and killed one with `exit(Pid, kill)` across the wire; here the injector asks `scp-targets`
//! which server a (group, slot) resolves to and kills that ref remotely.
//!
//! Rules:
//! 1. `Ready` from the injector is answered with the window start (microseconds since the Unix
//!    epoch) once the window opens, so both processes time actions from the same instant. The
//!    SUB starts its warm-up only once the injector said `Ready` (or its process ended, or a
//!    minute passed), as the Erlang and Akka peers do, so no action waits for a late start.
//! 2. `Pick {group, slot}` answers rule 2 of `injector.rs` (the next live slot in index order,
//!    wrapping; none when no server of the group is alive) with the slot and a ref to its
//!    server; the SUB counts the picks it answered with a server as kills carried out.
//! 3. `Done` ends the injector's work; the SUB then reaps the process. An injector that never
//!    says `Done` (it crashed or hung) is an error, is killed, and every action it did not
//!    pick counts as skipped. The SUB kills it too when the run is interrupted.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Mutex;
use tokio::sync::Notify;
use troupe::{Actor, ActorRef, Ctx, ReplyTo};
use troupe_remote::{Nested, Node, NodeConfig, RemoteMessage};

use super::actors::ServerMsg;
use super::injector::Targets;
use troupe_lab::events::writer::Emitter;
use troupe_lab::nodes::{self, NodeCmd, NodeProc};

/// The name the SUB exports its targets actor under.
pub(crate) const TARGETS: &str = "scp-targets";
/// Environment variables that hand the SUB's node to the injector process.
pub(crate) const ENV_ADDR: &str = "TROUPE_INJECTOR_NODE";
pub(crate) const ENV_SECRET: &str = "TROUPE_INJECTOR_SECRET";

/// What the injector process sends to the SUB's `scp-targets` actor.
#[derive(Serialize, Deserialize)]
pub(crate) enum TargetMsg {
    /// The injector is connected (its pid); answered with the window start (rule 1).
    Ready(u32, ReplyTo<i64>),
    /// Rule 2.
    Pick { group: u32, slot: u32, reply: ReplyTo<Victim> },
    /// Rule 3: every action was carried out or skipped; answered once recorded.
    Done { killed: u64, skipped: u64, reply: ReplyTo<()> },
}

/// The answer to `Pick`: the slot actually chosen and its server.
#[derive(Serialize, Deserialize)]
pub(crate) struct Victim(pub(crate) Option<(u32, ActorRef<ServerMsg>)>);

impl RemoteMessage for TargetMsg {
    const TAG: &'static str = "troupe.lab.scp.targets.v1";
    fn nested(n: &mut Nested) {
        n.add::<i64>();
        n.add::<()>();
        n.add::<Victim>();
    }
}

impl RemoteMessage for Victim {
    const TAG: &'static str = "troupe.lab.scp.victim.v1";
    fn nested(n: &mut Nested) {
        n.add::<ServerMsg>();
    }
}

impl RemoteMessage for ServerMsg {
    const TAG: &'static str = "troupe.lab.scp.server.v1";
}

#[derive(Default)]
struct State {
    ready: bool,
    start_us: Option<i64>,
    waiting: Option<ReplyTo<i64>>,
    picked: u64,
    done: Option<(u64, u64)>,
}

struct TargetsActor {
    targets: Targets,
    state: Arc<Mutex<State>>,
    ready: Arc<Notify>,
    done: Arc<Notify>,
    emitter: Emitter,
}

impl Actor for TargetsActor {
    type Msg = TargetMsg;

    async fn handle(&mut self, m: TargetMsg, _: &mut Ctx<Self>) {
        match m {
            TargetMsg::Ready(pid, reply) => {
                self.emitter.emit("ready", json!({"what": "injector", "count": 1, "pid": pid}));
                let mut s = lock(&self.state);
                s.ready = true;
                self.ready.notify_one();
                match s.start_us {
                    Some(t) => reply.send(t),
                    None => s.waiting = Some(reply),
                }
            }
            TargetMsg::Pick { group, slot, reply } => {
                let victim = pick(&self.targets, group, slot);
                if victim.is_some() {
                    lock(&self.state).picked += 1;
                }
                reply.send(Victim(victim));
            }
            TargetMsg::Done { killed, skipped, reply } => {
                lock(&self.state).done = Some((killed, skipped));
                self.done.notify_one();
                reply.send(());
            }
        }
    }
}

/// Rule 2 (rule 2 of `injector.rs`).
fn pick(targets: &Targets, group: u32, slot: u32) -> Option<(u32, ActorRef<ServerMsg>)> {
    let slots = targets.get(group as usize)?;
    (0..slots.len()).find_map(|k| {
        let s = (slot as usize + k) % slots.len();
        slots[s].get().map(|r| (s as u32, r))
    })
}

/// The SUB's end of the link: its node, the injector process and what it reported.
pub(crate) struct Link {
    node: Node,
    child: NodeProc,
    state: Arc<Mutex<State>>,
    ready: Arc<Notify>,
    done: Arc<Notify>,
}

impl Link {
    /// Starts the SUB's node, exports the targets and starts the injector process.
    pub(crate) async fn start(targets: Targets, emitter: Emitter) -> Result<Link, String> {
        let secret = nodes::secret();
        let cfg = NodeConfig {
            heartbeat_interval_ms: 200,
            heartbeat_timeout_ms: 2000,
            ..NodeConfig::new("scp-sub", &secret)
        };
        let node =
            Node::start(cfg).await.map_err(|e| format!("cannot start the SUB's node: {}", troupe::error_chain(&e)))?;
        let state = Arc::new(Mutex::new(State::default()));
        let (ready, done) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let actor = troupe::spawn(TargetsActor {
            targets,
            state: state.clone(),
            ready: ready.clone(),
            done: done.clone(),
            emitter,
        });
        node.export(TARGETS, &actor).map_err(|e| format!("cannot export {TARGETS}: {e}"))?;
        let child = NodeCmd::new("the injector process", "scp-injector")
            .env(ENV_ADDR, node.addr())
            .env(ENV_SECRET, &secret)
            .start()?;
        Ok(Link { node, child, state, ready, done })
    }

    /// Rule 1: waits up to `limit` for the injector's `Ready`; `false` when it did not come (the
    /// process ended first, or the limit passed).
    pub(crate) async fn wait_ready(&mut self, limit: Duration) -> bool {
        let (state, ready) = (self.state.clone(), self.ready.clone());
        let said = async move {
            loop {
                let notified = ready.notified();
                if lock(&state).ready {
                    return true;
                }
                notified.await;
            }
        };
        tokio::select! {
            ok = tokio::time::timeout(limit, said) => ok.unwrap_or(false),
            _ = self.child.wait() => lock(&self.state).ready,
        }
    }

    /// Rule 1: the window opened at `start_us`.
    pub(crate) fn open_window(&self, start_us: i64) {
        let mut s = lock(&self.state);
        s.start_us = Some(start_us);
        if let Some(r) = s.waiting.take() {
            r.send(start_us);
        }
    }

    /// Rule 3: waits up to `grace` for `Done`, reaps (or kills) the process, and returns
    /// (kills carried out, whether the injector finished cleanly).
    pub(crate) async fn finish(mut self, grace: Duration, interrupted: bool) -> (u64, bool) {
        let reported = if interrupted {
            false
        } else {
            let (state, done) = (self.state.clone(), self.done.clone());
            let wait_done = async move {
                loop {
                    let notified = done.notified();
                    if lock(&state).done.is_some() {
                        return true;
                    }
                    notified.await;
                }
            };
            tokio::select! {
                ok = tokio::time::timeout(grace, wait_done) => ok.unwrap_or(false),
                _ = self.child.wait() => lock(&self.state).done.is_some(),
            }
        };
        let exited = reported && self.child.wait_for(Duration::from_secs(5)).await.is_some();
        if !exited {
            self.child.kill().await;
        }
        self.node.shutdown();
        let s = lock(&self.state);
        (s.picked, reported && exited)
    }
}

/// The state's lock (nothing panics while holding it; a poisoned lock is still consistent).
fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
