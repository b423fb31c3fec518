//! The Troupe chat system under test as OS processes (workloads.md §2): `troupe lab exec chat`
//! is the orchestrator; with `deployment = "single"` it runs the whole system itself, with
//! `"distributed"` it hosts discovery on its node and starts one `chat-server` process per
//! supervisor and one `chat-clients` process per client group, watches them, and cleans up.
//!
//! Rules:
//! 1. Set-up order (seed 000 §4.2, "Orchestrator"): discovery, then the server groups (each
//!    ready once every chat registered), then the client groups (each ready once every client
//!    joined); `ready {what: "chats"|"clients", count}` per group, clients with `rss_bytes`.
//! 2. The window starts `warmup_s` after the last group is ready; the orchestrator emits
//!    `ready {what: "window", count: test_duration_secs, start_us}` and every process times the
//!    window from `start_us` (one clock: all processes share the machine's wall clock).
//! 3. Discovery is found by a global name (`chat-discovery`): the troupe registry in one
//!    process, the cluster-wide global registry of `troupe-remote` across nodes; no process is
//!    told the address of an actor. Membership is the orchestrator's: every node connects to
//!    it, and the client groups also to the server nodes it names (`TROUPE_CHAT_MEMBERS`), since
//!    a node honours refs only to nodes it knows.
//! 4. A node process that exits before its time (any status), exits non-zero, or does not exit
//!    by the deadline fails the run: the orchestrator kills the others and reports every such
//!    node by name and exit status in its `run_finished {failed_nodes}`; the analysis turns it
//!    into the run's failure reason. Children die with the orchestrator: they watch its node
//!    and every wait is bounded by the run's length.
//! 5. Client groups end at the window's end; server groups one second later; then the
//!    orchestrator writes `run_finished` and exits. SIGTERM/SIGINT end the run early (children
//!    are killed, `run_finished {interrupted: true}`).

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::process::Command;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::{mpsc, watch, Notify};
use troupe::{Actor, ActorRef, Ctx, ReplyTo};
use troupe_remote::{Node, NodeConfig, NodeEvent};

use super::actors::{Discovery, Shared};
use super::config::ChatConfig;
use super::protocol::{CoordMsg, DiscoveryMsg, COORDINATOR, DISCOVERY};
use super::system::{self, now_us};
use crate::config;
use crate::error::{Error, Result};
use crate::events::writer::{Emitter, EventWriter};
use crate::schedule::{self, FaultAction};

/// Environment variables handing the orchestrator's node to the node processes.
const ENV_NODE: &str = "TROUPE_CHAT_NODE";
const ENV_SECRET: &str = "TROUPE_CHAT_SECRET";
const ENV_GROUP: &str = "TROUPE_CHAT_GROUP";
/// The server nodes' addresses, comma separated, handed to the client groups.
const ENV_MEMBERS: &str = "TROUPE_CHAT_MEMBERS";

/// The longest a set-up step may take (starting 50,000 clients on a loaded 2-core machine
/// takes seconds; this bounds a wedged one).
const SETUP_LIMIT: Duration = Duration::from_secs(90);

/// What a process reports in its `run_finished`.
#[derive(Default)]
struct Tally {
    errors: u64,
    skipped: u64,
    injected: u64,
    interrupted: bool,
    failed_nodes: Vec<String>,
}

fn env(name: &str) -> Result<String> {
    std::env::var(name).map_err(|_| {
        Error::other(format!("{name} is not set; chat node processes are started by `troupe lab exec chat`"))
    })
}

fn runtime(name: &str) -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name(name)
        .build()
        .map_err(|e| Error::other(format!("cannot start the tokio runtime: {e}")))
}

/// Runs one role from the environment contract; the process exit code.
pub(super) fn exec(role: &str) -> Result<i32> {
    let cfg_value = config::from_env("chat")?;
    let cfg = ChatConfig::from_config(&cfg_value);
    let sched_path = std::env::var_os("TROUPE_SCHEDULE")
        .ok_or_else(|| Error::other("TROUPE_SCHEDULE is not set; `troupe lab exec` is started by `troupe lab run`"))?;
    let actions = schedule::read(std::path::Path::new(&sched_path))?;
    system::quiet_poison_panics();
    let node_name = match role {
        "chat" if cfg.distributed => "discovery".to_string(),
        "chat" => "chat".to_string(),
        "chat-server" => format!("server-{}", env(ENV_GROUP)?),
        _ => format!("clients-{}", env(ENV_GROUP)?),
    };
    let writer = EventWriter::from_env("troupe", &node_name)?;
    let em = writer.emitter();
    em.emit(
        "run_started",
        json!({"workload": "chat", "role": role, "config": cfg_value.to_json(),
               "version": format!("troupe {}", env!("CARGO_PKG_VERSION"))}),
    );
    let rt = runtime(&node_name)?;
    let tally = rt.block_on(async {
        match role {
            "chat" if cfg.distributed => orchestrate(&cfg, &em).await,
            "chat" => single(&cfg, actions, &em).await,
            "chat-server" => server_group(&cfg, &node_name, &em).await,
            _ => client_group(&cfg, &node_name, actions, &em).await,
        }
    });
    let tally = tally.unwrap_or_else(|e| {
        eprintln!("troupe chat {node_name}: {e}");
        Tally { errors: 1, ..Tally::default() }
    });
    let (_, write_errors) = writer.finish(json!({
        "errors": tally.errors,
        "skipped_faults": tally.skipped,
        "injected": tally.injected,
        "interrupted": tally.interrupted,
        "failed_nodes": tally.failed_nodes,
    }));
    rt.shutdown_timeout(Duration::from_secs(1));
    Ok(if write_errors > 0 || tally.errors > 0 && role != "chat" { 1 } else { 0 })
}

/// Waits for SIGTERM or SIGINT.
async fn interrupted() {
    match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(mut a), Ok(mut b)) => {
            tokio::select! {
                _ = a.recv() => {}
                _ = b.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}

/// Emits the window event and returns its start (rule 2).
fn open_window(cfg: &ChatConfig, em: &Emitter) -> i64 {
    let start_us = now_us() + (cfg.warmup_s * 1_000_000) as i64;
    em.emit("ready", json!({"what": "window", "count": cfg.duration_s, "start_us": start_us}));
    start_us
}

/// The whole system in this process (`deployment = "single"`).
async fn single(cfg: &ChatConfig, actions: Vec<FaultAction>, em: &Emitter) -> Result<Tally> {
    let shared = Shared::new(em.clone(), cfg);
    let discovery = troupe::spawn(Discovery::new(std::time::Duration::from_millis(cfg.retry_delay_ms)));
    troupe::register(DISCOVERY, &discovery).map_err(|e| Error::other(format!("cannot register discovery: {e}")))?;
    let found: ActorRef<DiscoveryMsg> =
        troupe::whereis(DISCOVERY).ok().flatten().ok_or_else(|| Error::other("discovery is not registered"))?;
    let mut sups = Vec::new();
    for g in 0..cfg.num_supervisor {
        sups.push(system::start_server_group(cfg, g, &found, &shared).await.map_err(Error::other)?);
    }
    if !shared.wait_for(&shared.registered, cfg.total_chats(), SETUP_LIMIT).await {
        return Err(Error::other("the chats did not all register with discovery in time"));
    }
    em.emit("ready", json!({"what": "chats", "count": cfg.total_chats()}));
    let clients = system::spawn_clients(cfg, 0, cfg.total_clients(), &found, &shared);
    if !shared.wait_for(&shared.joined, cfg.total_clients(), SETUP_LIMIT).await {
        return Err(Error::other("the clients did not all join their chats in time"));
    }
    em.emit("ready", json!({"what": "clients", "count": cfg.total_clients(), "rss_bytes": system::rss_bytes()}));
    let start_us = open_window(cfg, em);
    let counter = system::spawn_counter(Arc::clone(&shared), start_us, cfg.duration_s);
    let injector = system::spawn_injector(cfg, actions, found.clone(), Arc::clone(&shared), start_us);
    let mut tally = Tally::default();
    tokio::select! {
        _ = counter => {}
        _ = interrupted() => tally.interrupted = true,
    }
    finish_injector(injector, &mut tally).await;
    for c in &clients {
        c.kill();
    }
    for s in sups {
        let _ = tokio::time::timeout(Duration::from_secs(30), s.stop()).await;
    }
    discovery.kill();
    tally.errors += shared.errors.load(std::sync::atomic::Ordering::Relaxed);
    Ok(tally)
}

/// Collects the injector's tally: its last action is due before the window ends, so it has
/// finished or is finishing (bounded); an interrupted run stops it.
async fn finish_injector(injector: tokio::task::JoinHandle<(u64, u64)>, tally: &mut Tally) {
    if tally.interrupted {
        injector.abort();
    }
    match tokio::time::timeout(Duration::from_secs(10), injector).await {
        Ok(Ok((done, skipped))) => (tally.injected, tally.skipped) = (done, skipped),
        _ if tally.interrupted => {}
        _ => {
            eprintln!("troupe chat: the injector did not finish its schedule");
            tally.errors += 1;
        }
    }
}

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

/// The orchestrator of the distributed mode (rules 1-5).
async fn orchestrate(cfg: &ChatConfig, em: &Emitter) -> Result<Tally> {
    let secret = format!("{:032x}", rand::random::<u128>());
    let node_cfg =
        NodeConfig { heartbeat_interval_ms: 200, heartbeat_timeout_ms: 2000, ..NodeConfig::new("discovery", &secret) };
    let node =
        Node::start(node_cfg).await.map_err(|e| Error::other(format!("cannot start the discovery node: {e}")))?;
    let discovery = troupe::spawn(Discovery::new(std::time::Duration::from_millis(cfg.retry_delay_ms)));
    node.register_global(DISCOVERY, &discovery).map_err(|e| Error::other(format!("cannot register discovery: {e}")))?;
    let state = Arc::new(Mutex::new(Coord::default()));
    let changed = Arc::new(Notify::new());
    let coord = troupe::spawn(Coordinator { state: Arc::clone(&state), changed: Arc::clone(&changed) });
    node.export(COORDINATOR, &coord).map_err(|e| Error::other(format!("cannot export the coordinator: {e}")))?;
    let exe = std::env::current_exe().map_err(|e| Error::other(format!("cannot find the troupe executable: {e}")))?;

    let (exit_tx, mut exit_rx) = mpsc::unbounded_channel::<(String, String, bool)>();
    let (kill_tx, kill_rx) = watch::channel(false);
    let window_end = Arc::new(Mutex::new(None::<tokio::time::Instant>));
    let mut started: Vec<String> = Vec::new();
    let spawn = |role: &str, name: String, g: usize, members: &str| -> Result<String> {
        let mut child = Command::new(&exe)
            .args(["lab", "exec", role])
            .env(ENV_MEMBERS, members)
            .env(ENV_NODE, node.addr())
            .env(ENV_SECRET, &secret)
            .env(ENV_GROUP, g.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| Error::other(format!("cannot start node process {name}: {e}")))?;
        let (tx, mut kill) = (exit_tx.clone(), kill_rx.clone());
        let n = name.clone();
        let end = Arc::clone(&window_end);
        tokio::spawn(async move {
            let killed = tokio::select! {
                st = child.wait() => {
                    let early = match *end.lock().unwrap_or_else(std::sync::PoisonError::into_inner) {
                        Some(t) => tokio::time::Instant::now() < t,
                        None => true,
                    };
                    let (desc, bad) = match st {
                        Ok(s) if s.success() => ("exit status 0".to_string(), early),
                        Ok(s) => (describe(s), true),
                        Err(e) => (format!("cannot be waited for: {e}"), true),
                    };
                    let _ = tx.send((n, if early && desc == "exit status 0" { "exited before the window ended (exit status 0)".into() } else { desc }, bad));
                    return;
                }
                _ = kill.wait_for(|k| *k) => true,
            };
            if killed {
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
        });
        Ok(name)
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
            Some(system::instant_of(start_us) + Duration::from_secs(cfg.duration_s));
        {
            let mut s = lock(&state);
            s.start_us = Some(start_us);
            for r in s.waiting.drain(..) {
                r.send(start_us);
            }
        }
        // Rule 5: every process ends by itself; wait for them under a deadline.
        let deadline = system::instant_of(start_us) + Duration::from_secs(cfg.duration_s + 60);
        let mut left = started.len();
        while left > 0 {
            tokio::select! {
                ended = exit_rx.recv() => match ended {
                    Some((name, status, bad)) => {
                        left -= 1;
                        if bad {
                            tally.failed_nodes.push(format!("{name} ({status})"));
                            return Err(format!("node process {name} failed: {status}"));
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
    let _ = kill_tx.send(true);
    tokio::time::sleep(Duration::from_millis(50)).await;
    drop(started);
    node.shutdown();
    coord.kill();
    discovery.kill();
    Ok(tally)
}

/// Describes an exit status: `exit status N` or `killed by signal N`.
fn describe(s: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "unknown exit".into(),
    }
}

/// Waits until `n` processes said `Ready`, failing when one of them ends first (rule 4).
async fn wait_ready(
    state: &Arc<Mutex<Coord>>,
    changed: &Notify,
    exits: &mut mpsc::UnboundedReceiver<(String, String, bool)>,
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
                if let Some((name, status, _)) = ended {
                    tally.failed_nodes.push(format!("{name} ({status})"));
                    return Err(format!("node process {name} ended during set-up: {status}"));
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

/// Connects a node process to the orchestrator: its node, the coordinator and discovery.
async fn join_run(name: &str) -> Result<(Node, String, ActorRef<CoordMsg>, ActorRef<DiscoveryMsg>)> {
    let addr = env(ENV_NODE)?;
    let secret = env(ENV_SECRET)?;
    let cfg = NodeConfig { heartbeat_interval_ms: 200, heartbeat_timeout_ms: 2000, ..NodeConfig::new(name, &secret) };
    let node = Node::start(cfg).await.map_err(|e| Error::other(format!("cannot start node {name}: {e}")))?;
    node.connect(&addr).await.map_err(|e| Error::other(format!("cannot reach the orchestrator at {addr}: {e}")))?;
    for member in std::env::var(ENV_MEMBERS).unwrap_or_default().split(',').filter(|m| !m.is_empty()) {
        node.connect(member).await.map_err(|e| Error::other(format!("cannot reach server node {member}: {e}")))?;
    }
    let coord: ActorRef<CoordMsg> =
        node.lookup(&addr, COORDINATOR).await.map_err(|e| Error::other(format!("cannot find the coordinator: {e}")))?;
    // Rule 3: discovery by its global name (announced once the session is up).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let discovery = loop {
        match node.whereis_global::<DiscoveryMsg>(DISCOVERY) {
            Ok(Some(d)) => break d,
            Ok(None) if tokio::time::Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(5)).await,
            Ok(None) => return Err(Error::other(format!("no node holds the global name {DISCOVERY}"))),
            Err(e) => return Err(Error::other(format!("{DISCOVERY}: {e}"))),
        }
    };
    Ok((node, addr, coord, discovery))
}

/// Resolves when the orchestrator's node is gone (rule 4).
async fn orchestrator_lost(node: &Node, addr: &str) {
    let mut events = node.subscribe();
    loop {
        match events.recv().await {
            Ok(NodeEvent::NodeDown { addr: down, .. }) if down == addr => return,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            _ => {}
        }
    }
}

/// Says `Ready` and waits for the window start, or for the orchestrator to go away.
async fn ready(node: &Node, addr: &str, coord: &ActorRef<CoordMsg>, name: &str) -> Result<i64> {
    let (n, a) = (name.to_string(), node.addr());
    tokio::select! {
        r = coord.ask(|reply| CoordMsg::Ready { node: n, addr: a, reply }, SETUP_LIMIT * 2) => {
            r.map_err(|e| Error::other(format!("the orchestrator did not open the window: {e}")))
        }
        _ = orchestrator_lost(node, addr) => Err(Error::other("the orchestrator went away during set-up")),
    }
}

/// A server group process: one supervisor and its chats.
async fn server_group(cfg: &ChatConfig, name: &str, em: &Emitter) -> Result<Tally> {
    let g: u32 = env(ENV_GROUP)?.parse().map_err(|_| Error::other(format!("{ENV_GROUP} is not a number")))?;
    let (node, addr, coord, discovery) = join_run(name).await?;
    let shared = Shared::new(em.clone(), cfg);
    let sup = system::start_server_group(cfg, g, &discovery, &shared).await.map_err(Error::other)?;
    if !shared.wait_for(&shared.registered, u64::from(cfg.chats_per_sup), SETUP_LIMIT).await {
        return Err(Error::other("the chats did not all register with discovery in time"));
    }
    em.emit(
        "ready",
        json!({"what": "chats", "count": cfg.chats_per_sup, "rss_bytes": system::rss_bytes(), "pid": std::process::id()}),
    );
    let start_us = ready(&node, &addr, &coord, name).await?;
    let end = system::instant_of(start_us) + Duration::from_secs(cfg.duration_s + 1);
    let mut tally = Tally::default();
    tokio::select! {
        _ = tokio::time::sleep_until(end) => {}
        _ = orchestrator_lost(&node, &addr) => {
            tally.errors += 1;
            eprintln!("troupe chat {name}: the orchestrator went away");
        }
        _ = interrupted() => tally.interrupted = true,
    }
    let _ = tokio::time::timeout(Duration::from_secs(10), sup.stop()).await;
    node.shutdown();
    tally.errors += shared.errors.load(std::sync::atomic::Ordering::Relaxed);
    Ok(tally)
}

/// A client group process: its clients, their chats' injectors and its throughput counter.
async fn client_group(cfg: &ChatConfig, name: &str, actions: Vec<FaultAction>, em: &Emitter) -> Result<Tally> {
    let g: usize = env(ENV_GROUP)?.parse().map_err(|_| Error::other(format!("{ENV_GROUP} is not a number")))?;
    let &(first, count) = cfg
        .client_groups()
        .get(g)
        .ok_or_else(|| Error::other(format!("client group {g} does not exist for this config")))?;
    let (node, addr, coord, discovery) = join_run(name).await?;
    let shared = Shared::new(em.clone(), cfg);
    let clients = system::spawn_clients(cfg, first, count, &discovery, &shared);
    if !shared.wait_for(&shared.joined, count, SETUP_LIMIT).await {
        return Err(Error::other(format!(
            "only {} of {count} clients joined their chats in time",
            shared.joined.load(std::sync::atomic::Ordering::SeqCst)
        )));
    }
    em.emit(
        "ready",
        json!({"what": "clients", "count": count, "rss_bytes": system::rss_bytes(), "pid": std::process::id()}),
    );
    let start_us = ready(&node, &addr, &coord, name).await?;
    let counter = system::spawn_counter(Arc::clone(&shared), start_us, cfg.duration_s);
    let mine = system::actions_for(cfg, &actions, first, count);
    let injector = system::spawn_injector(cfg, mine, discovery, Arc::clone(&shared), start_us);
    let mut tally = Tally::default();
    tokio::select! {
        _ = counter => {}
        _ = orchestrator_lost(&node, &addr) => {
            tally.errors += 1;
            eprintln!("troupe chat {name}: the orchestrator went away");
        }
        _ = interrupted() => tally.interrupted = true,
    }
    finish_injector(injector, &mut tally).await;
    for c in &clients {
        c.kill();
    }
    node.shutdown();
    tally.errors += shared.errors.load(std::sync::atomic::Ordering::Relaxed);
    Ok(tally)
}
