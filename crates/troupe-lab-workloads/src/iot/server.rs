//! An iot server process (rules of `sub.rs`): a `troupe-remote` node at its fixed loopback
//! address, a view of the live servers by connectivity, and the device-tracking desk of
//! `troupe_cluster::devices`, whose events become `reconnected` lines (the MTTR samples).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use troupe_cluster::devices::{peer_membership, DeviceServer, ServerConfig, ServerEvent};
use troupe_remote::{Node, NodeConfig};

use super::config::IotConfig;
use super::process::{
    env, index, instant_of, interrupted, server_addrs, Ready, Tally, COORDINATOR, ENV_ATTEMPT, ENV_NODE, ENV_SECRET,
    SETUP_LIMIT,
};
use crate::SutError;
use troupe_lab::error::Result;
use troupe_lab::events::writer::Emitter;
use troupe_lab::schedule::FaultAction;

/// The device-tracking settings of a config (shared with the device processes).
pub(super) fn server_config(cfg: &IotConfig) -> ServerConfig {
    ServerConfig {
        heartbeat_ms: cfg.heartbeat_ms,
        phi_threshold: cfg.phi_threshold,
        acceptable_pause_ms: 2 * cfg.heartbeat_ms,
        report_len: cfg.report_len as usize,
        report_timeout_ms: cfg.report_timeout_ms,
        sync_ms: 1000,
        replicate_timeout_ms: (4 * cfg.heartbeat_ms).max(2000),
        vnodes: 128,
    }
}

/// Resolves when this process's parent, the orchestrator, is gone (the process was
/// re-parented). A session loss alone is not taken as the orchestrator's death: on a loaded
/// machine a heartbeat can stall for seconds while every process is alive.
pub(super) async fn orphaned() {
    let parent = nix::unistd::getppid();
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if nix::unistd::getppid() != parent {
            return;
        }
    }
}

/// Starts a node at `listen`, retrying while the address is still held (a restarted server
/// takes its predecessor's port).
pub(super) async fn start_node(name: &str, listen: &str, secret: &str) -> Result<Node> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let cfg = NodeConfig {
            listen: listen.into(),
            heartbeat_interval_ms: 200,
            heartbeat_timeout_ms: 10_000,
            ..NodeConfig::new(name, secret)
        };
        match Node::start(cfg).await {
            Ok(n) => return Ok(n),
            Err(e) if tokio::time::Instant::now() >= deadline => {
                return Err(SutError::Node(format!("cannot start node {name} at {listen}: {e}")).into());
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Says `Ready` and waits for the window start, or for the orchestrator to go away.
pub(super) async fn ready(node: &Node, orch: &str, name: &str, what: &str) -> Result<i64> {
    let coord = node.remote_ref::<Ready>(orch, COORDINATOR);
    let (n, w) = (name.to_string(), what.to_string());
    tokio::select! {
        r = coord.ask(|reply| Ready { node: n, what: w, reply }, SETUP_LIMIT * 2) => {
            r.map_err(|e| SutError::Setup(format!("the orchestrator did not open the window: {e}")).into())
        }
        _ = orphaned() => Err(SutError::Node("the orchestrator went away during set-up".into()).into()),
    }
}

/// A server process.
pub(super) async fn run(cfg: &IotConfig, name: &str, actions: &[FaultAction], em: &Emitter) -> Result<Tally> {
    let s = index()? as usize;
    let servers = server_addrs()?;
    let me =
        servers.get(s).ok_or_else(|| SutError::Environment(format!("server {s} has no address in the list")))?.clone();
    let attempt: u32 = env(ENV_ATTEMPT)?.parse().unwrap_or(0);
    let (orch, secret) = (env(ENV_NODE)?, env(ENV_SECRET)?);
    let node = start_node(name, &me, &secret).await?;
    node.connect(&orch)
        .await
        .map_err(|e| SutError::Node(format!("cannot reach the orchestrator at {orch}: {}", troupe::error_chain(&e))))?;
    let live = peer_membership(&node, servers.clone(), Duration::from_millis(200));
    let refused = Arc::new(AtomicU64::new(0));
    let (em2, by, count) = (em.clone(), name.to_string(), Arc::clone(&refused));
    let observer = Arc::new(move |e: ServerEvent| match e {
        ServerEvent::StatusCurrent { device, incarnation, ms, acked, asked } if incarnation > 0 => {
            em2.emit(
                "reconnected",
                json!({"target": device, "by": by, "ms": ms, "incarnation": incarnation, "acked": acked, "asked": asked}),
            );
        }
        ServerEvent::StatusNotReplicated { device, incarnation, missing, asked } => {
            count.fetch_add(1, Ordering::Relaxed);
            eprintln!(
                "troupe iot {by}: {device} (incarnation {incarnation}): its status never reached {missing:?} of the {asked} servers asked"
            );
        }
        ServerEvent::Refused { device, reason } => {
            count.fetch_add(1, Ordering::Relaxed);
            em2.emit("device_refused", json!({"target": device, "by": by, "reason": reason}));
        }
        _ => {}
    });
    let desk = DeviceServer::start(&node, server_config(cfg), live.clone(), observer)
        .map_err(|e| SutError::Node(format!("cannot start the device desk: {e}")))?;
    let what = if attempt == 0 {
        // Rule 1: up and in the cluster once it has a session with every other server.
        let mut live = live;
        let all = servers.len();
        tokio::time::timeout(SETUP_LIMIT, live.wait_for(|v| v.len() == all))
            .await
            .map_err(|_| SutError::Setup("the other servers were not reachable in time".into()))?
            .map_err(|_| SutError::Node("the membership view stopped".into()))?;
        em.emit("ready", json!({"what": "servers", "count": 1}));
        "servers"
    } else {
        "restarted"
    };
    let start_us = ready(&node, &orch, name, what).await?;
    let net = super::process::apply_net_faults(cfg, &node, s as u32, name, actions, start_us, em);
    let end = instant_of(start_us) + Duration::from_secs(cfg.duration_s + 1);
    let mut tally = Tally::default();
    tokio::select! {
        _ = tokio::time::sleep_until(end) => {}
        _ = orphaned() => {
            tally.errors += 1;
            eprintln!("troupe iot {name}: the orchestrator went away");
        }
        _ = interrupted() => tally.interrupted = true,
    }
    desk.stop();
    if let Some(task) = net {
        task.abort();
        tally.net = Some(troupe_lab::netfaults::apply::counts(&node));
    }
    node.shutdown();
    tally.errors += refused.load(Ordering::Relaxed);
    Ok(tally)
}
