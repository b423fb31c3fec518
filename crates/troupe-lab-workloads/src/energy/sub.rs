//! The Troupe energy programs as OS processes (the energy peer contract of docs/energy.md):
//! `troupe lab exec energy` runs the repetitions and writes the events; with
//! `mode = "distributed"` it first starts `troupe lab exec energy-node`, a second
//! `troupe-remote` node on loopback that builds each repetition's servers (or the prime actor).
//!
//! Rules:
//! 1. Events, from this process only: `run_started {workload: "energy", config, version}`,
//!    then per repetition r `work {rep: r, start_us, end_us, result}`, then `run_finished`.
//! 2. A repetition's set-up (servers, load balancer, clients; the node process, started once
//!    for all repetitions) is outside `[start_us, end_us]`; `end_us` is when this task learns
//!    that the last client got its last pong, or when the prime count is known; its actors are
//!    stopped, and their ends awaited, before the next (docs/energy.md contract rules 4-5).
//!    A wrong prime count is counted (`run_finished {errors, wrong_answers}`) and the
//!    repetitions go on (contract rule 6).
//! 3. The node process is a child of this one (killed when this one ends, never detached), so
//!    the lab's meter counts it; it hands its address over its stdout, quits when told, when
//!    this node goes away or at its deadline.
//! 4. A config the programs cannot run is refused with one line on stderr naming the key and
//!    the allowed values, exit 2. A repetition that fails (a timeout, the node process gone)
//!    is an error: the run stops, `run_finished {errors}` counts it and names the node process's
//!    exit status when it died, and the exit status is 1.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::Notify;
use troupe::ActorRef;
use troupe_remote::{Node, NodeConfig};

use super::actors::{stop_all, Ask, Client, ClientMsg, Control, ControlMsg, Done, Servers, WorkMsg};
use super::config::EnergyConfig;
use super::primes::count_sieve;
use crate::SutError;
use troupe_lab::error::Result;
use troupe_lab::events::writer::{now_us, Emitter};
use troupe_lab::nodes::{self, NodeCmd, NodeProc};
use troupe_lab::subprocess;

/// The name the node process exports its control actor under.
const CONTROL: &str = "energy-control";
/// The secret of the run's two nodes, handed to the node process in its environment.
const ENV_SECRET: &str = "TROUPE_ENERGY_SECRET";
/// How long the node process may take to start and connect.
const START_LIMIT: Duration = Duration::from_secs(60);

/// Runs one role; the exit code.
pub(super) fn exec(role: &str) -> Result<i32> {
    // Rule 4: a bad config is one line naming the key and the allowed values.
    let cfg_value = match subprocess::config_or_exit(&super::Energy) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let cfg = EnergyConfig::from_config(&cfg_value);
    if role == "energy-node" {
        return subprocess::block_on(node_process(&cfg))?;
    }
    subprocess::run_events("energy", &cfg_value, "clients", |em| async move {
        let (outcome, failed_nodes, wrong) = match run_reps(&cfg, &em).await {
            Ok(wrong) => (Ok(()), Vec::new(), wrong),
            Err((e, nodes)) => (Err(e), nodes, 0),
        };
        // Contract rule 6: wrong answers are counted as errors; the repetitions went on.
        let mut extra = json!({ "failed_nodes": failed_nodes, "wrong_answers": wrong });
        if wrong > 0 {
            eprintln!("troupe energy: {wrong} pongs carried a wrong prime count");
            extra["errors"] = wrong.into();
        }
        (outcome, extra)
    })
}

/// The longest a repetition may take: generous, so a loaded machine is not a failure, and
/// bounded, so a wedged run ends (the lab's own deadline is longer still).
pub(super) fn rep_limit(cfg: &EnergyConfig) -> Duration {
    Duration::from_secs(60) + super::expected_rep(cfg) * 20
}

/// Where a repetition's servers live.
enum Place {
    Here(Option<Servers>),
    Node { node: Node, proc: NodeProc, control: ActorRef<ControlMsg> },
}

impl Place {
    async fn setup(&mut self, cfg: &EnergyConfig) -> std::result::Result<ActorRef<WorkMsg>, String> {
        let servers = cfg.servers;
        match self {
            Place::Here(cur) => {
                let s = Servers::spawn(&cfg.workload, servers);
                let entry = s.entry.clone();
                *cur = Some(s);
                Ok(entry)
            }
            Place::Node { control, .. } => {
                let w = cfg.workload.clone();
                control
                    .ask(|r| ControlMsg::Setup(w, servers, r), START_LIMIT)
                    .await
                    .map(|e| e.0)
                    .map_err(|e| format!("the node process did not set up the servers: {e}"))
            }
        }
    }

    async fn teardown(&mut self) -> std::result::Result<(), String> {
        match self {
            Place::Here(cur) => match cur.take() {
                Some(s) => s.stop().await,
                None => Ok(()),
            },
            Place::Node { control, .. } => control
                .ask(ControlMsg::Teardown, START_LIMIT)
                .await
                .map_err(|e| format!("the node process did not stop the servers: {e}")),
        }
    }

    /// How the node process ended, when it has (for error messages).
    fn node_status(&mut self) -> Option<String> {
        match self {
            Place::Node { proc, .. } => {
                proc.try_wait().ok().flatten().map(|s| format!("node process servers ended: {s}"))
            }
            Place::Here(_) => None,
        }
    }

    async fn close(self) {
        if let Place::Node { node, proc, control } = self {
            let _ = control.send(ControlMsg::Quit);
            proc.close(Duration::from_secs(10)).await;
            node.shutdown();
        }
    }
}

/// Starts the node process and connects to it (rule 3).
async fn start_node() -> std::result::Result<Place, String> {
    let secret = nodes::secret();
    let cfg =
        NodeConfig { heartbeat_interval_ms: 200, heartbeat_timeout_ms: 5000, ..NodeConfig::new("clients", &secret) };
    let node =
        Node::start(cfg).await.map_err(|e| format!("cannot start this process's node: {}", troupe::error_chain(&e)))?;
    let mut proc = NodeCmd::new("the node process", "energy-node").env(ENV_SECRET, &secret).stdout().start()?;
    let connected = async {
        let addr = proc.line("report its address", START_LIMIT).await?;
        node.connect(&addr)
            .await
            .map_err(|e| format!("cannot reach the node process at {addr}: {}", troupe::error_chain(&e)))?;
        node.lookup(&addr, CONTROL).await.map_err(|e| format!("cannot find {CONTROL}: {}", troupe::error_chain(&e)))
    };
    match connected.await {
        Ok(control) => Ok(Place::Node { node, proc, control }),
        Err(e) => {
            proc.kill().await;
            node.shutdown();
            Err(e)
        }
    }
}

/// One repetition's work (rule 2): `(start_us, end_us, result, wrong answers)`.
async fn one_rep(cfg: &EnergyConfig, entry: &ActorRef<WorkMsg>) -> std::result::Result<(i64, i64, u64, u64), String> {
    let limit = rep_limit(cfg);
    if !cfg.is_ping() {
        let start_us = now_us();
        let n = entry
            .ask(|r| WorkMsg::Count(cfg.range, r), limit)
            .await
            .map_err(|e| format!("the prime actor did not answer: {e}"))?;
        return Ok((start_us, now_us(), n, 0));
    }
    let done = Done::new(cfg.clients);
    let ask = if cfg.workload == "ping_pong_lb_prime" {
        // The range key stops at 10^9, so both fit the seed's 32-bit int.
        let range = i32::try_from(cfg.range).map_err(|_| format!("range {} does not fit an i32", cfg.range))?;
        let expect = i32::try_from(count_sieve(cfg.range)).map_err(|_| "pi(range) does not fit an i32".to_string())?;
        Ask::Prime { range, expect }
    } else {
        Ask::Ping
    };
    let clients: Vec<ActorRef<ClientMsg>> = (0..cfg.clients)
        .map(|_| troupe::spawn(Client { entry: entry.clone(), left: cfg.msgs, done: Arc::clone(&done), ask }))
        .collect();
    let start_us = now_us();
    for c in &clients {
        let _ = c.send(ClientMsg::Go);
    }
    let waited = tokio::time::timeout(limit, done.all_done.notified()).await;
    // Contract rule 4: the end is when this task learns the last client got its last answer.
    let end_us = now_us();
    let stopped = stop_all(&clients).await;
    let pongs = done.pongs.load(std::sync::atomic::Ordering::Acquire);
    let wrong = done.wrong.load(std::sync::atomic::Ordering::Acquire);
    match waited {
        Ok(()) => stopped.map(|()| (start_us, end_us, pongs, wrong)),
        Err(_) => Err(format!("the repetition did not finish within {} s ({pongs} pongs)", limit.as_secs())),
    }
}

/// Every repetition in order; the wrong answers counted over them (contract rule 6).
async fn run_reps(cfg: &EnergyConfig, em: &Emitter) -> std::result::Result<u64, (String, Vec<String>)> {
    let mut place = if cfg.distributed {
        start_node().await.map_err(|e| (e, vec!["servers".to_string()]))?
    } else {
        Place::Here(None)
    };
    let mut result = Ok(0);
    for rep in 0..cfg.reps {
        let r = async {
            let entry = place.setup(cfg).await?;
            let (start_us, end_us, n, wrong) = one_rep(cfg, &entry).await?;
            em.emit("work", json!({"rep": rep, "start_us": start_us, "end_us": end_us, "result": n}));
            place.teardown().await.map(|()| wrong)
        }
        .await;
        match r {
            Ok(wrong) => {
                if let Ok(total) = result.as_mut() {
                    *total += wrong;
                }
            }
            Err(e) => {
                let nodes = place.node_status().map(|s| vec![s]).unwrap_or_default();
                result = Err((format!("repetition {rep}: {e}"), nodes));
                break;
            }
        }
    }
    place.close().await;
    result
}

/// The node process (rule 3).
async fn node_process(run: &EnergyConfig) -> Result<i32> {
    let secret = nodes::env(ENV_SECRET, "energy")?;
    let cfg =
        NodeConfig { heartbeat_interval_ms: 200, heartbeat_timeout_ms: 5000, ..NodeConfig::new("servers", &secret) };
    let node = Node::start(cfg)
        .await
        .map_err(|e| SutError::Node(format!("cannot start the node: {}", troupe::error_chain(&e))))?;
    let quit = Arc::new(Notify::new());
    let control = troupe::spawn(Control { current: None, quit: Arc::clone(&quit) });
    node.export(CONTROL, &control).map_err(|e| SutError::Node(format!("cannot export {CONTROL}: {e}")))?;
    let events = node.subscribe();
    println!("{}", node.addr());
    let limit = rep_limit(run) * run.reps as u32 + START_LIMIT;
    let code = nodes::serve_until_quit(events, &quit, limit, "energy-node", ("the clients' node", None)).await;
    control.stop();
    node.shutdown();
    Ok(code)
}
