//! The SCP fault injector as its own OS process (`troupe lab exec scp-injector`,
//! `injector = "node"`, the default), started by the Troupe SUB (see `link.rs`): a separate
//! Troupe node on loopback, so its timing shares nothing with the measured system but the
//! machine (and the lab's CPU and memory sampling, which follows the SUB's whole process tree). It reads the same schedule, config and events
//! destination as the SUB (TROUPE_SCHEDULE, TROUPE_CONFIG, TROUPE_EVENTS, TROUPE_RUN_ID), and the
//! SUB's node from TROUPE_INJECTOR_NODE / TROUPE_INJECTOR_SECRET.
//!
//! Rules:
//! 1. It connects, says `Ready`, and times every action from the window start the SUB answers.
//! 2. Per action, at `at_ms`: `Pick` the victim across the wire, emit
//!    `fault_injected {id, target: "g<group>/s<slot killed>", kind}` (node `injector`) and
//!    kill it remotely (the event first, so its `ts_us` is the kill-sent instant); an action
//!    with no live server in its group is skipped and counted.
//! 3. It stops when the SUB's node goes away (every wait is also bounded by the run's length),
//!    says `Done {killed, skipped}` when all actions are through, and writes its own
//!    `run_started` / `run_finished` like every node of a run.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::json;
use troupe::ActorRef;
use troupe_remote::{Node, NodeConfig, NodeEvent};

use super::config::ScpConfig;
use super::link::{TargetMsg, Victim, ENV_ADDR, ENV_SECRET, TARGETS};
use super::sub::{env_path, load_config};
use crate::SutError;
use troupe_lab::error::Result;
use troupe_lab::events::writer::{Emitter, EventWriter};
use troupe_lab::schedule::{self, FaultAction};

/// Node name in the events.
const NODE: &str = "injector";

fn env(name: &str) -> Result<String> {
    std::env::var(name)
        .map_err(|_| SutError::Environment(format!("{name} is not set; the injector is started by the SCP SUB")).into())
}

/// Runs the injector process from its environment; returns the process exit code.
pub(super) fn exec_from_env() -> Result<i32> {
    let addr = env(ENV_ADDR)?;
    let secret = env(ENV_SECRET)?;
    let config = load_config()?;
    let scp = ScpConfig::from_config(&config);
    let actions = schedule::read(&env_path("TROUPE_SCHEDULE")?)?;
    let writer = EventWriter::from_env("troupe", NODE)?;
    let em = writer.emitter();
    em.emit(
        "run_started",
        json!({"workload": "scp", "role": "injector", "config": config.to_json(),
               "version": format!("troupe {}", env!("CARGO_PKG_VERSION"))}),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| SutError::Process(format!("cannot start the injector's tokio runtime: {e}")))?;
    // Nothing waits longer than the whole run plus a minute (rule 3).
    let limit = Duration::from_secs(scp.warmup_s + scp.duration_s + 60);
    let outcome = rt.block_on(run(&addr, &secret, &actions, &em, limit));
    let (errors, code) = match &outcome {
        Ok(_) => (0, 0),
        Err(e) => {
            eprintln!("troupe scp-injector: {e}");
            (1, 1)
        }
    };
    let (killed, skipped) = outcome.unwrap_or((0, 0));
    let (_, write_errors) = writer.finish(json!({"errors": errors, "killed": killed, "not_killed": skipped}));
    drop(rt);
    Ok(if write_errors > 0 { 1 } else { code })
}

/// Rules 1-3; returns (killed, skipped).
async fn run(addr: &str, secret: &str, actions: &[FaultAction], em: &Emitter, limit: Duration) -> Result<(u64, u64)> {
    let fail = |what: &str, e: &(dyn std::error::Error + 'static)| {
        SutError::Node(format!("{what}: {}", troupe::error_chain(e)))
    };
    let cfg = NodeConfig { heartbeat_interval_ms: 200, heartbeat_timeout_ms: 2000, ..NodeConfig::new(NODE, secret) };
    let node = Node::start(cfg).await.map_err(|e| fail("cannot start the injector's node", &e))?;
    let mut events = node.subscribe();
    let targets: ActorRef<TargetMsg> =
        node.lookup(addr, TARGETS).await.map_err(|e| fail("cannot reach the SUB's targets", &e))?;
    let start_us = targets
        .ask(|r| TargetMsg::Ready(std::process::id(), r), limit)
        .await
        .map_err(|e| fail("the SUB never opened the window", &e))?;
    let start = window_start(start_us);
    let (mut killed, mut skipped) = (0u64, 0u64);
    for (i, a) in actions.iter().enumerate() {
        let when = tokio::time::Instant::from_std(start + Duration::from_millis(a.at_ms));
        let lost = async {
            loop {
                match events.recv().await {
                    Ok(NodeEvent::NodeDown { addr: down, .. }) if down == addr => return,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                    _ => {}
                }
            }
        };
        tokio::select! {
            _ = tokio::time::sleep_until(when) => {}
            _ = lost => {
                node.shutdown();
                return Err(SutError::Node(format!("the SUB's node went away with {} actions left", actions.len() - i)).into());
            }
        }
        match targets.ask(|reply| TargetMsg::Pick { group: a.group, slot: a.slot, reply }, limit).await {
            Ok(Victim(Some((slot, server)))) => {
                // Stamped just before the kill is sent: the restart latency's start.
                em.emit(
                    "fault_injected",
                    json!({"id": a.id, "target": format!("g{}/s{}", a.group, slot), "kind": a.kind}),
                );
                server.kill();
                killed += 1;
            }
            Ok(Victim(None)) => skipped += 1,
            Err(e) => {
                node.shutdown();
                return Err(fail(&format!("picking the target of {}", a.id), &e).into());
            }
        }
    }
    let said = targets.ask(|reply| TargetMsg::Done { killed, skipped, reply }, Duration::from_secs(10)).await;
    node.shutdown();
    said.map_err(|e| fail("the SUB did not take the final report", &e))?;
    Ok((killed, skipped))
}

/// The window start on this process's monotonic clock, from the SUB's wall-clock instant.
fn window_start(start_us: i64) -> Instant {
    let now_us = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64);
    let ago = Duration::from_micros(now_us.saturating_sub(start_us).max(0) as u64);
    Instant::now().checked_sub(ago).unwrap_or_else(Instant::now)
}
