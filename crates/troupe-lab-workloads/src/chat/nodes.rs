//! The chat's node processes in the distributed deployment (rules of `sub.rs`): a server
//! group (one supervisor and its chats) and a client group (its clients, their chats'
//! injectors and its throughput counter), each a `troupe-remote` node that joins the run
//! through the orchestrator's node.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use troupe::ActorRef;
use troupe_remote::{Node, NodeConfig, NodeEvent};

use super::actors::Shared;
use super::config::ChatConfig;
use super::process::{
    env, finish_injector, interrupted, Tally, ENV_GROUP, ENV_MEMBERS, ENV_NODE, ENV_SECRET, SETUP_LIMIT,
};
use super::protocol::{CoordMsg, DiscoveryMsg, COORDINATOR, DISCOVERY};
use super::system;
use crate::SutError;
use troupe_lab::error::Result;
use troupe_lab::events::writer::Emitter;
use troupe_lab::schedule::FaultAction;

/// Connects a node process to the orchestrator: its node, the coordinator and discovery.
async fn join_run(name: &str) -> Result<(Node, String, ActorRef<CoordMsg>, ActorRef<DiscoveryMsg>)> {
    let addr = env(ENV_NODE)?;
    let secret = env(ENV_SECRET)?;
    let cfg = NodeConfig {
        heartbeat_interval_ms: 200,
        heartbeat_timeout_ms: 2000,
        listen: troupe_lab::netlayer::listen_any_port(),
        ..NodeConfig::new(name, &secret)
    };
    let node = Node::start(cfg)
        .await
        .map_err(|e| SutError::Node(format!("cannot start node {name}: {}", troupe::error_chain(&e))))?;
    node.connect(&addr)
        .await
        .map_err(|e| SutError::Node(format!("cannot reach the orchestrator at {addr}: {}", troupe::error_chain(&e))))?;
    for member in std::env::var(ENV_MEMBERS).unwrap_or_default().split(',').filter(|m| !m.is_empty()) {
        node.connect(member)
            .await
            .map_err(|e| SutError::Node(format!("cannot reach server node {member}: {}", troupe::error_chain(&e))))?;
    }
    let coord: ActorRef<CoordMsg> = node
        .lookup(&addr, COORDINATOR)
        .await
        .map_err(|e| SutError::Node(format!("cannot find the coordinator: {e}")))?;
    // Rule 3: discovery by its global name (announced once the session is up).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let discovery = loop {
        match node.whereis_global::<DiscoveryMsg>(DISCOVERY) {
            Ok(Some(d)) => break d,
            Ok(None) if tokio::time::Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(5)).await,
            Ok(None) => return Err(SutError::Node(format!("no node holds the global name {DISCOVERY}")).into()),
            Err(e) => return Err(SutError::Node(format!("{DISCOVERY}: {e}")).into()),
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
            r.map_err(|e| SutError::Setup(format!("the orchestrator did not open the window: {e}")).into())
        }
        _ = orchestrator_lost(node, addr) => Err(SutError::Node("the orchestrator went away during set-up".into()).into()),
    }
}

/// The node processes `[net_faults]` partitions name, by index: the server groups, then the
/// client groups (the orchestrator, which hosts discovery and coordinates, is never cut).
pub(super) fn net_nodes(cfg: &ChatConfig) -> Vec<String> {
    let servers = (0..cfg.num_supervisor).map(|g| format!("server-{g}"));
    servers.chain((0..cfg.client_groups().len()).map(|g| format!("clients-{g}"))).collect()
}

/// Starts applying the schedule's network faults on this process's node (node `index`; peers
/// are looked up by name: `troupe_lab::netfaults::apply`).
fn apply_net_faults(
    cfg: &ChatConfig,
    node: &Node,
    index: u32,
    name: &str,
    actions: &[FaultAction],
    start_us: i64,
    em: &Emitter,
) -> Option<tokio::task::JoinHandle<()>> {
    let nodes = net_nodes(cfg);
    let addrs = vec![None; nodes.len()];
    let me = troupe_lab::netfaults::apply::Me { index, name: name.into(), nodes, addrs };
    troupe_lab::netfaults::apply::spawn(node, actions, me, start_us, cfg.seed, em)
}

/// Stops the network-fault task and records what the node dropped and delayed.
fn finish_net_faults(task: Option<tokio::task::JoinHandle<()>>, node: &Node, tally: &mut Tally) {
    if let Some(task) = task {
        task.abort();
        tally.net = Some(troupe_lab::netfaults::apply::counts(node));
    }
}

/// A server group process: one supervisor and its chats.
pub(super) async fn server_group(cfg: &ChatConfig, name: &str, actions: &[FaultAction], em: &Emitter) -> Result<Tally> {
    let g: u32 = env(ENV_GROUP)?.parse().map_err(|_| SutError::Environment(format!("{ENV_GROUP} is not a number")))?;
    let (node, addr, coord, discovery) = join_run(name).await?;
    let shared = Shared::new(em.clone(), cfg);
    let sup = system::start_server_group(cfg, g, &discovery, &shared).await.map_err(SutError::Setup)?;
    if !shared.wait_for(&shared.registered, u64::from(cfg.chats_per_sup), SETUP_LIMIT).await {
        return Err(SutError::Setup("the chats did not all register with discovery in time".into()).into());
    }
    em.emit(
        "ready",
        json!({"what": "chats", "count": cfg.chats_per_sup, "rss_bytes": system::rss_bytes(), "pid": std::process::id()}),
    );
    let start_us = ready(&node, &addr, &coord, name).await?;
    let net = apply_net_faults(cfg, &node, g, name, actions, start_us, em);
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
    finish_net_faults(net, &node, &mut tally);
    node.shutdown();
    tally.errors += shared.errors.load(std::sync::atomic::Ordering::Relaxed);
    Ok(tally)
}

/// A client group process: its clients, their chats' injectors and its throughput counter.
pub(super) async fn client_group(
    cfg: &ChatConfig,
    name: &str,
    actions: Vec<FaultAction>,
    em: &Emitter,
) -> Result<Tally> {
    let g: usize =
        env(ENV_GROUP)?.parse().map_err(|_| SutError::Environment(format!("{ENV_GROUP} is not a number")))?;
    let &(first, count) = cfg
        .client_groups()
        .get(g)
        .ok_or_else(|| SutError::Setup(format!("client group {g} does not exist for this config")))?;
    let (node, addr, coord, discovery) = join_run(name).await?;
    let shared = Shared::new(em.clone(), cfg);
    let clients = system::spawn_clients(cfg, first, count, &discovery, &shared);
    if !shared.wait_for(&shared.joined, count, SETUP_LIMIT).await {
        return Err(SutError::Setup(format!(
            "only {} of {count} clients joined their chats in time",
            shared.joined.load(std::sync::atomic::Ordering::SeqCst)
        ))
        .into());
    }
    em.emit(
        "ready",
        json!({"what": "clients", "count": count, "rss_bytes": system::rss_bytes(), "pid": std::process::id()}),
    );
    let start_us = ready(&node, &addr, &coord, name).await?;
    let index = cfg.num_supervisor + g as u32;
    let net = apply_net_faults(cfg, &node, index, name, &actions, start_us, em);
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
    finish_net_faults(net, &node, &mut tally);
    node.shutdown();
    tally.errors += shared.errors.load(std::sync::atomic::Ordering::Relaxed);
    Ok(tally)
}
