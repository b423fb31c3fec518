//! The orchestrator of the chat's distributed deployment (rules of `sub.rs`): it hosts
//! discovery under its global name on its node, exports the coordinator, starts the server
//! groups and then the client groups as `troupe lab exec chat-server|chat-clients` processes,
//! answers their `Ready` with the window start, watches them, and kills them all whatever
//! happens (rule 4).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::sync::{mpsc, watch, Notify};
use troupe::{Actor, Ctx, ReplyTo};
use troupe_remote::{Node, NodeConfig};

use super::actors::Discovery;
use super::config::ChatConfig;
use super::process::{open_window, Tally, ENV_GROUP, ENV_MEMBERS, ENV_NODE, ENV_SECRET, SETUP_LIMIT};
use super::protocol::{CoordMsg, COORDINATOR, DISCOVERY};
use crate::SutError;
use troupe_lab::error::Result;
use troupe_lab::events::writer::Emitter;
use troupe_lab::nodes::{self, describe, instant_of, interrupted, NodeCmd};

/// The coordinator's state (distributed mode).
#[derive(Default)]
struct Coord {
    ready: Vec<String>,
    addrs: Vec<String>,
    waiting: Vec<ReplyTo<i64>>,
    start_us: Option<i64>,
}

struct Coordinator {
    state: Arc<Mutex<Coord>>,
    changed: Arc<Notify>,
}

impl Actor for Coordinator {
    type Msg = CoordMsg;

    async fn handle(&mut self, CoordMsg::Ready { node, addr, reply }: CoordMsg, _: &mut Ctx<Self>) {
        let mut s = lock(&self.state);
        s.ready.push(node);
        s.addrs.push(addr);
        match s.start_us {
            Some(t) => reply.send(t),
            None => s.waiting.push(reply),
        }
        drop(s);
        self.changed.notify_waiters();
    }
}

fn lock(m: &Mutex<Coord>) -> std::sync::MutexGuard<'_, Coord> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How a node process ended, as its waiter reports it.
struct Ended {
    name: String,
    /// `exit status N`, `killed by signal N`, ...
    status: String,
    /// Whether that fails the run.
    bad: bool,
    /// The last lines of its stderr.
    tail: Option<String>,
}

impl Ended {
    /// `node process NAME WHAT: STATUS`, with its stderr's last lines.
    fn reason(&self, what: &str) -> String {
        let tail = self.tail.as_ref().map(|t| format!("; its stderr ends: {t}")).unwrap_or_default();
        format!("node process {} {what}: {}{tail}", self.name, self.status)
    }
}

/// The orchestrator of the distributed mode (rules 1-5).
pub(super) async fn orchestrate(cfg: &ChatConfig, em: &Emitter) -> Result<Tally> {
    let secret = nodes::secret();
    let node_cfg = NodeConfig {
        heartbeat_interval_ms: 200,
        heartbeat_timeout_ms: 2000,
        listen: troupe_lab::netlayer::listen_any_port(),
        ..NodeConfig::new("discovery", &secret)
    };
    let node = Node::start(node_cfg)
        .await
        .map_err(|e| SutError::Node(format!("cannot start the discovery node: {}", troupe::error_chain(&e))))?;
    let discovery = troupe::spawn(Discovery::new(cfg.lookup, std::time::Duration::from_millis(cfg.retry_delay_ms)));
    node.register_global(DISCOVERY, &discovery)
        .map_err(|e| SutError::Node(format!("cannot register discovery: {e}")))?;
    let state = Arc::new(Mutex::new(Coord::default()));
    let changed = Arc::new(Notify::new());
    let coord = troupe::spawn(Coordinator { state: Arc::clone(&state), changed: Arc::clone(&changed) });
    node.export(COORDINATOR, &coord).map_err(|e| SutError::Node(format!("cannot export the coordinator: {e}")))?;

    let (exit_tx, mut exit_rx) = mpsc::unbounded_channel::<Ended>();
    let (kill_tx, kill_rx) = watch::channel(false);
    let window_end = Arc::new(Mutex::new(None::<tokio::time::Instant>));
    // One waiter task per node process: it reports how the process ended, or kills it.
    let mut started: Vec<tokio::task::JoinHandle<()>> = Vec::new();
    let spawn = |role: &str, name: String, g: usize, members: &str| -> Result<tokio::task::JoinHandle<()>> {
        let mut child = NodeCmd::new(format!("node process {name}"), role)
            .net_node(&name)
            .env(ENV_MEMBERS, members)
            .env(ENV_NODE, node.addr())
            .env(ENV_SECRET, &secret)
            .env(ENV_GROUP, g.to_string())
            .start()
            .map_err(SutError::Node)?;
        let (tx, mut kill) = (exit_tx.clone(), kill_rx.clone());
        let end = Arc::clone(&window_end);
        Ok(tokio::spawn(async move {
            tokio::select! {
                st = child.wait() => {
                    let window_end = *end.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    let early = window_end.is_none_or(|t| tokio::time::Instant::now() < t);
                    let (desc, bad) = match st {
                        Ok(s) if s.success() && early => ("exited before the window ended (exit status 0)".into(), true),
                        Ok(s) if s.success() => ("exit status 0".to_string(), false),
                        Ok(s) => (describe(s), true),
                        Err(e) => (format!("cannot be waited for: {e}"), true),
                    };
                    let tail = if bad { child.stderr_tail() } else { None };
                    let _ = tx.send(Ended { name, status: desc, bad, tail });
                    return;
                }
                // The watch's guard is dropped with the branch; the kill happens after it.
                _ = kill.wait_for(|k| *k) => {}
            }
            child.kill().await;
        }))
    };

    let mut tally = Tally::default();
    let outcome: std::result::Result<(), String> = async {
        // Rule 1: server groups, then client groups.
        for g in 0..cfg.num_supervisor as usize {
            started.push(spawn("chat-server", format!("server-{g}"), g, "").map_err(|e| e.to_string())?);
        }
        wait_ready(&state, &changed, &mut exit_rx, started.len(), &mut tally).await?;
        em.emit("ready", json!({"what": "server_groups", "count": started.len()}));
        // Membership: the client groups connect to every server node before their clients
        // take refs to chats there (a node honours refs only to nodes it knows).
        let members = lock(&state).addrs.join(",");
        for (g, _) in cfg.client_groups().iter().enumerate() {
            started.push(spawn("chat-clients", format!("clients-{g}"), g, &members).map_err(|e| e.to_string())?);
        }
        wait_ready(&state, &changed, &mut exit_rx, started.len(), &mut tally).await?;
        // Rule 2.
        let start_us = open_window(cfg, em);
        *window_end.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some(instant_of(start_us) + Duration::from_secs(cfg.duration_s));
        {
            let mut s = lock(&state);
            s.start_us = Some(start_us);
            for r in s.waiting.drain(..) {
                r.send(start_us);
            }
        }
        // Rule 5: every process ends by itself; wait for them under a deadline.
        let deadline = instant_of(start_us) + Duration::from_secs(cfg.duration_s + 60);
        let mut left = started.len();
        while left > 0 {
            tokio::select! {
                ended = exit_rx.recv() => match ended {
                    Some(ended) => {
                        left -= 1;
                        if ended.bad {
                            tally.failed_nodes.push(format!("{} ({})", ended.name, ended.status));
                            return Err(ended.reason("failed"));
                        }
                    }
                    None => return Err("lost track of the node processes".into()),
                },
                _ = tokio::time::sleep_until(deadline) => {
                    return Err(format!("{left} node process(es) did not end by the deadline"));
                }
                _ = interrupted() => {
                    tally.interrupted = true;
                    return Ok(());
                }
            }
        }
        Ok(())
    }
    .await;
    if let Err(reason) = outcome {
        eprintln!("troupe chat: {reason}");
        tally.errors += 1;
        if tally.failed_nodes.is_empty() && !tally.interrupted {
            tally.failed_nodes.push(reason);
        }
    }
    // Whatever happened, no node process outlives the orchestrator (rule 4).
    // Wait for every waiter: each has reported its process's end or killed and reaped it.
    let _ = kill_tx.send(true);
    let reaped = join_all(started);
    if tokio::time::timeout(Duration::from_secs(10), reaped).await.is_err() {
        eprintln!("troupe chat: node processes were not reaped within 10 s (the lab kills their group)");
    }
    node.shutdown();
    coord.kill();
    discovery.kill();
    Ok(tally)
}

/// Waits for every handle in turn.
async fn join_all(handles: Vec<tokio::task::JoinHandle<()>>) {
    for h in handles {
        let _ = h.await;
    }
}

/// Waits until `n` processes said `Ready`, failing when one of them ends first (rule 4).
async fn wait_ready(
    state: &Arc<Mutex<Coord>>,
    changed: &Notify,
    exits: &mut mpsc::UnboundedReceiver<Ended>,
    n: usize,
    tally: &mut Tally,
) -> std::result::Result<(), String> {
    let deadline = tokio::time::Instant::now() + SETUP_LIMIT;
    loop {
        let notified = changed.notified();
        if lock(state).ready.len() >= n {
            return Ok(());
        }
        tokio::select! {
            _ = notified => {}
            ended = exits.recv() => {
                if let Some(ended) = ended {
                    tally.failed_nodes.push(format!("{} ({})", ended.name, ended.status));
                    return Err(ended.reason("ended during set-up"));
                }
            }
            _ = tokio::time::sleep_until(deadline) => return Err(format!("set-up took longer than {} s", SETUP_LIMIT.as_secs())),
            _ = interrupted() => {
                tally.interrupted = true;
                return Err("interrupted during set-up".into());
            }
        }
    }
}
