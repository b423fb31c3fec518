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

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use troupe::ActorRef;

use super::actors::{Discovery, Shared};
use super::config::ChatConfig;
use super::protocol::{DiscoveryMsg, DISCOVERY};
use super::system::{self, now_us};
use troupe_lab::config;
use troupe_lab::error::{Error, Result};
use troupe_lab::events::writer::{Emitter, EventWriter};
use troupe_lab::schedule::{self, FaultAction};

/// Environment variables handing the orchestrator's node to the node processes.
pub(super) const ENV_NODE: &str = "TROUPE_CHAT_NODE";
pub(super) const ENV_SECRET: &str = "TROUPE_CHAT_SECRET";
pub(super) const ENV_GROUP: &str = "TROUPE_CHAT_GROUP";
/// The server nodes' addresses, comma separated, handed to the client groups.
pub(super) const ENV_MEMBERS: &str = "TROUPE_CHAT_MEMBERS";

/// The longest a set-up step may take (starting 50,000 clients on a loaded 2-core machine
/// takes seconds; this bounds a wedged one).
pub(super) const SETUP_LIMIT: Duration = Duration::from_secs(90);

pub(super) use crate::common::Tally;
pub(super) use troupe_lab::nodes::interrupted;

pub(super) fn env(name: &str) -> Result<String> {
    troupe_lab::nodes::env(name, "chat")
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
    let cfg_value = config::from_env(&super::Chat)?;
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
            "chat" if cfg.distributed => super::orchestrator::orchestrate(&cfg, &em).await,
            "chat" => single(&cfg, actions, &em).await,
            "chat-server" => super::nodes::server_group(&cfg, &node_name, &actions, &em).await,
            _ => super::nodes::client_group(&cfg, &node_name, actions, &em).await,
        }
    });
    let tally = tally.unwrap_or_else(|e| {
        eprintln!("troupe chat {node_name}: {e}");
        Tally { errors: 1, ..Tally::default() }
    });
    let (_, write_errors) = writer.finish(tally.finished_json());
    rt.shutdown_timeout(Duration::from_secs(1));
    Ok(if write_errors > 0 || tally.errors > 0 && role != "chat" { 1 } else { 0 })
}

/// Emits the window event and returns its start (rule 2).
pub(super) fn open_window(cfg: &ChatConfig, em: &Emitter) -> i64 {
    let start_us = now_us() + (cfg.warmup_s * 1_000_000) as i64;
    em.emit("ready", json!({"what": "window", "count": cfg.duration_s, "start_us": start_us}));
    start_us
}

/// The whole system in this process (`deployment = "single"`).
async fn single(cfg: &ChatConfig, actions: Vec<FaultAction>, em: &Emitter) -> Result<Tally> {
    let shared = Shared::new(em.clone(), cfg);
    let discovery = troupe::spawn(Discovery::new(std::time::Duration::from_millis(cfg.retry_delay_ms)));
    troupe::register(DISCOVERY, &discovery).map_err(|e| Error::other(format!("cannot register discovery: {e}")))?;
    let found: ActorRef<DiscoveryMsg> = troupe::whereis(DISCOVERY).map_err(|e| Error::other(e.to_string()))?;
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
pub(super) async fn finish_injector(injector: tokio::task::JoinHandle<(u64, u64)>, tally: &mut Tally) {
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
