//! The Troupe energy programs as OS processes (the energy peer contract of docs/energy.md):
//! `troupe lab exec energy` runs the repetitions and writes the events; with
//! `mode = "distributed"` it first starts `troupe lab exec energy-node`, a second
//! `troupe-remote` node on loopback that builds each repetition's servers (or the prime actor).
//!
//! Rules:
//! 1. Events, from this process only: `run_started {workload: "energy", config, version}`,
//!    then per repetition r `work {rep: r, start_us, end_us, result}`, then `run_finished`.
//! 2. A repetition's set-up (servers, load balancer, clients; the node process, started once
//!    for all repetitions) is outside `[start_us, end_us]`; `end_us` is when the last client got
//!    its last pong, or when the prime count is known; its actors are stopped before the next.
//! 3. The node process is a child of this one (killed when this one ends, never detached), so
//!    the lab's meter counts it; it hands its address over its stdout, quits when told, when
//!    this node goes away or at its deadline.
//! 4. A config the programs cannot run is refused with one line on stderr naming the key and
//!    the allowed values, exit 2. A repetition that fails (a timeout, the node process gone)
//!    is an error: the run stops, `run_finished {errors}` counts it and names the node process's
//!    exit status when it died, and the exit status is 1.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::Notify;
use troupe::ActorRef;
use troupe_remote::{Node, NodeConfig, NodeEvent};

use super::actors::{Client, ClientMsg, Control, ControlMsg, Done, Servers, WorkMsg};
use super::config::EnergyConfig;
use super::primes::count_sieve;
use troupe_lab::error::{Error, Result};
use troupe_lab::events::writer::{now_us, Emitter, EventWriter};
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
    let writer = EventWriter::from_env("troupe", "clients")?;
    let em = writer.emitter();
    subprocess::run_started(&em, "energy", &cfg_value);
    let (errors, failed_nodes) = match subprocess::block_on(run_reps(&cfg, &em))? {
        Ok(()) => (0, Vec::new()),
        Err((e, nodes)) => {
            eprintln!("troupe energy: {e}");
            (1, nodes)
        }
    };
    let (_, write_errors) = writer.finish(json!({"errors": errors, "failed_nodes": failed_nodes}));
    Ok(subprocess::exit_code(errors, write_errors))
}

/// The longest a repetition may take: generous, so a loaded machine is not a failure, and
/// bounded, so a wedged run ends (the lab's own deadline is longer still).
pub(super) fn rep_limit(cfg: &EnergyConfig) -> Duration {
    Duration::from_secs(60) + super::expected_rep(cfg) * 20
}

/// Where a repetition's servers live.
enum Place {
    Here(Option<Servers>),
    Node { node: Node, child: Child, control: ActorRef<ControlMsg> },
}

impl Place {
    async fn setup(&mut self, cfg: &EnergyConfig) -> std::result::Result<ActorRef<WorkMsg>, String> {
        let (servers, range) = (cfg.servers, cfg.range);
        match self {
            Place::Here(cur) => {
                let s = Servers::spawn(&cfg.workload, servers, range);
                let entry = s.entry.clone();
                *cur = Some(s);
                Ok(entry)
            }
            Place::Node { control, .. } => {
                let w = cfg.workload.clone();
                control
                    .ask(|r| ControlMsg::Setup(w, servers, range, r), START_LIMIT)
                    .await
                    .map(|e| e.0)
                    .map_err(|e| format!("the node process did not set up the servers: {e}"))
            }
        }
    }

    async fn teardown(&mut self) -> std::result::Result<(), String> {
        match self {
            Place::Here(cur) => {
                if let Some(s) = cur.take() {
                    s.stop();
                }
                Ok(())
            }
            Place::Node { control, .. } => control
                .ask(ControlMsg::Teardown, START_LIMIT)
                .await
                .map_err(|e| format!("the node process did not stop the servers: {e}")),
        }
    }

    /// How the node process ended, when it has (for error messages).
    fn node_status(&mut self) -> Option<String> {
        match self {
            Place::Node { child, .. } => match child.try_wait() {
                Ok(Some(s)) => Some(format!("node process servers ended: {s}")),
                _ => None,
            },
            Place::Here(_) => None,
        }
    }

    async fn close(self) {
        if let Place::Node { node, mut child, control } = self {
            let _ = control.send(ControlMsg::Quit);
            if tokio::time::timeout(Duration::from_secs(10), child.wait()).await.is_err() {
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
            node.shutdown();
        }
    }
}

/// Starts the node process and connects to it (rule 3).
async fn start_node() -> std::result::Result<Place, String> {
    let secret = format!("{:032x}", rand::random::<u128>());
    let cfg =
        NodeConfig { heartbeat_interval_ms: 200, heartbeat_timeout_ms: 5000, ..NodeConfig::new("clients", &secret) };
    let node = Node::start(cfg).await.map_err(|e| format!("cannot start this process's node: {e}"))?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the troupe executable: {e}"))?;
    let mut child = Command::new(exe)
        .args(["lab", "exec", "energy-node"])
        .env(ENV_SECRET, &secret)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start the node process: {e}"))?;
    let stdout = child.stdout.take().ok_or("the node process has no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let addr = match tokio::time::timeout(START_LIMIT, lines.next_line()).await {
        Ok(Ok(Some(a))) => a.trim().to_string(),
        _ => {
            let _ = child.start_kill();
            let st = child.wait().await.map(|s| s.to_string()).unwrap_or_default();
            return Err(format!("the node process did not report its address ({st})"));
        }
    };
    node.connect(&addr).await.map_err(|e| format!("cannot reach the node process at {addr}: {e}"))?;
    let control = node.lookup(&addr, CONTROL).await.map_err(|e| format!("cannot find {CONTROL}: {e}"))?;
    Ok(Place::Node { node, child, control })
}

/// One repetition's work (rule 2): `(start_us, end_us, result)`.
async fn one_rep(cfg: &EnergyConfig, entry: &ActorRef<WorkMsg>) -> std::result::Result<(i64, i64, u64), String> {
    let limit = rep_limit(cfg);
    if !cfg.is_ping() {
        let start_us = now_us();
        let n = entry
            .ask(|r| WorkMsg::Count(cfg.range, r), limit)
            .await
            .map_err(|e| format!("the prime actor did not answer: {e}"))?;
        return Ok((start_us, now_us(), n));
    }
    let done = Done::new(cfg.clients);
    let expect = if cfg.workload == "ping_pong_lb_prime" { count_sieve(cfg.range) } else { 0 };
    let clients: Vec<ActorRef<ClientMsg>> = (0..cfg.clients)
        .map(|_| troupe::spawn(Client { entry: entry.clone(), left: cfg.msgs, done: Arc::clone(&done), expect }))
        .collect();
    let start_us = now_us();
    for c in &clients {
        let _ = c.send(ClientMsg::Go);
    }
    let waited = tokio::time::timeout(limit, done.all_done.notified()).await;
    for c in &clients {
        c.stop();
    }
    let pongs = done.pongs.load(std::sync::atomic::Ordering::Acquire);
    let wrong = done.wrong.load(std::sync::atomic::Ordering::Acquire);
    match waited {
        Ok(()) if wrong > 0 => Err(format!("{wrong} pongs carried a wrong prime count")),
        Ok(()) => Ok((start_us, done.end_us.load(std::sync::atomic::Ordering::Acquire), pongs)),
        Err(_) => Err(format!("the repetition did not finish within {} s ({pongs} pongs)", limit.as_secs())),
    }
}

async fn run_reps(cfg: &EnergyConfig, em: &Emitter) -> std::result::Result<(), (String, Vec<String>)> {
    let mut place = if cfg.distributed {
        start_node().await.map_err(|e| (e, vec!["servers".to_string()]))?
    } else {
        Place::Here(None)
    };
    let mut result = Ok(());
    for rep in 0..cfg.reps {
        let r = async {
            let entry = place.setup(cfg).await?;
            let (start_us, end_us, n) = one_rep(cfg, &entry).await?;
            em.emit("work", json!({"rep": rep, "start_us": start_us, "end_us": end_us, "result": n}));
            place.teardown().await
        }
        .await;
        if let Err(e) = r {
            let nodes = place.node_status().map(|s| vec![s]).unwrap_or_default();
            result = Err((format!("repetition {rep}: {e}"), nodes));
            break;
        }
    }
    place.close().await;
    result
}

/// The node process (rule 3).
async fn node_process(run: &EnergyConfig) -> Result<i32> {
    let secret = std::env::var(ENV_SECRET).map_err(|_| {
        Error::other(format!("{ENV_SECRET} is not set; the node process is started by `troupe lab exec energy`"))
    })?;
    let cfg =
        NodeConfig { heartbeat_interval_ms: 200, heartbeat_timeout_ms: 5000, ..NodeConfig::new("servers", &secret) };
    let node = Node::start(cfg).await.map_err(|e| Error::other(format!("cannot start the node: {e}")))?;
    let quit = Arc::new(Notify::new());
    let control = troupe::spawn(Control { current: None, quit: Arc::clone(&quit) });
    node.export(CONTROL, &control).map_err(|e| Error::other(format!("cannot export {CONTROL}: {e}")))?;
    let mut events = node.subscribe();
    println!("{}", node.addr());
    let lost = async {
        loop {
            match events.recv().await {
                Ok(NodeEvent::NodeDown { .. }) | Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                _ => {}
            }
        }
    };
    let code = tokio::select! {
        _ = quit.notified() => 0,
        _ = lost => {
            eprintln!("troupe energy-node: the clients' node went away");
            1
        }
        _ = tokio::time::sleep(rep_limit(run) * run.reps as u32 + START_LIMIT) => {
            eprintln!("troupe energy-node: the run's deadline passed");
            1
        }
    };
    control.stop();
    node.shutdown();
    Ok(code)
}
