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
use super::process::{env, finish_injector, interrupted, open_window, Tally, ENV_GROUP, SETUP_LIMIT};
use super::protocol::{DiscoveryMsg, DISCOVERY};
use super::system;
use crate::SutError;
use troupe_lab::config;
use troupe_lab::error::Result;
use troupe_lab::events::writer::{Emitter, EventWriter};
use troupe_lab::schedule::{self, FaultAction};

fn runtime(name: &str) -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name(name)
        .build()
        .map_err(|e| SutError::Process(format!("cannot start the tokio runtime: {e}")).into())
}

/// Runs one role from the environment contract; the process exit code.
pub(super) fn exec(role: &str) -> Result<i32> {
    let cfg_value = config::from_env(&super::Chat)?;
    let cfg = ChatConfig::from_config(&cfg_value);
    let sched_path = std::env::var_os("TROUPE_SCHEDULE").ok_or_else(|| {
        SutError::Environment("TROUPE_SCHEDULE is not set; `troupe lab exec` is started by `troupe lab run`".into())
    })?;
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

/// The whole system in this process (`deployment = "single"`).
async fn single(cfg: &ChatConfig, actions: Vec<FaultAction>, em: &Emitter) -> Result<Tally> {
    let shared = Shared::new(em.clone(), cfg);
    let discovery = troupe::spawn(Discovery::new(cfg.lookup, std::time::Duration::from_millis(cfg.retry_delay_ms)));
    troupe::register(DISCOVERY, &discovery).map_err(|e| SutError::Node(format!("cannot register discovery: {e}")))?;
    let found: ActorRef<DiscoveryMsg> = troupe::whereis(DISCOVERY).map_err(|e| SutError::Node(e.to_string()))?;
    let mut sups = Vec::new();
    for g in 0..cfg.num_supervisor {
        sups.push(system::start_server_group(cfg, g, &found, &shared).await.map_err(SutError::Setup)?);
    }
    if !shared.wait_for(&shared.registered, cfg.total_chats(), SETUP_LIMIT).await {
        return Err(SutError::Setup("the chats did not all register with discovery in time".into()).into());
    }
    em.emit("ready", json!({"what": "chats", "count": cfg.total_chats()}));
    let clients = system::spawn_clients(cfg, 0, cfg.total_clients(), &found, &shared);
    if !shared.wait_for(&shared.joined, cfg.total_clients(), SETUP_LIMIT).await {
        return Err(SutError::Setup("the clients did not all join their chats in time".into()).into());
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
