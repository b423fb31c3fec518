//! The iot orchestrator (rules of `sub.rs`): it hosts the coordinator on its node, starts the
//! server and device processes, opens the window, runs the collector, carries out the server
//! kills and restarts of the schedule, watches every child, and leaves none behind.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::sync::{watch, Notify};
use troupe::{Actor, Ctx, ReplyTo};
use troupe_remote::{Node, NodeConfig};

use super::collector;
use super::config::IotConfig;
use super::process::{
    instant_of, interrupted, Ready, Tally, COORDINATOR, ENV_ATTEMPT, ENV_INDEX, ENV_NODE, ENV_SECRET, ENV_SERVERS,
    SETUP_LIMIT,
};
use super::schedule::NODE_KILL;
use crate::SutError;
use troupe_lab::error::Result;
use troupe_lab::events::writer::{now_us, Emitter};
use troupe_lab::nodes::{self, describe, NodeCmd, NodeProc};
use troupe_lab::schedule::FaultAction;

#[derive(Default)]
struct Coord {
    ready: Vec<(String, String)>,
    waiting: Vec<ReplyTo<i64>>,
    start_us: Option<i64>,
}

struct Coordinator {
    state: Arc<Mutex<Coord>>,
    changed: Arc<Notify>,
}

fn lock(m: &Mutex<Coord>) -> std::sync::MutexGuard<'_, Coord> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Actor for Coordinator {
    type Msg = Ready;

    async fn handle(&mut self, Ready { node, what, reply }: Ready, _: &mut Ctx<Self>) {
        let mut s = lock(&self.state);
        s.ready.push((node, what));
        match s.start_us {
            Some(t) => reply.send(t),
            None => s.waiting.push(reply),
        }
        drop(s);
        self.changed.notify_waiters();
    }
}

/// One child process slot: a server or a device process.
struct Slot {
    name: String,
    role: &'static str,
    index: u32,
    child: Option<NodeProc>,
    attempt: u32,
    restart_at: Option<tokio::time::Instant>,
}

struct Launcher {
    node_addr: String,
    secret: String,
    servers: String,
}

impl Launcher {
    fn start(&self, slot: &mut Slot) -> Result<()> {
        let child = NodeCmd::new(format!("node process {}", slot.name), slot.role)
            .net_node(&slot.name)
            .env(ENV_NODE, &self.node_addr)
            .env(ENV_SECRET, &self.secret)
            .env(ENV_SERVERS, &self.servers)
            .env(ENV_INDEX, slot.index.to_string())
            .env(ENV_ATTEMPT, slot.attempt.to_string())
            .start()
            .map_err(SutError::Node)?;
        slot.child = Some(child);
        Ok(())
    }
}

/// A child that failed: its `failed_nodes` entry, and that entry with its stderr's last lines.
struct Failed {
    entry: String,
    detail: String,
}

/// Reaps children that ended; an end before `ok_after` (or a failure) is returned.
async fn reap(slots: &mut [Slot], ok_after: Option<tokio::time::Instant>) -> Option<Failed> {
    let now = tokio::time::Instant::now();
    for s in slots.iter_mut() {
        let Some(child) = s.child.as_mut() else { continue };
        let entry = match child.try_wait() {
            Ok(None) => continue,
            Ok(Some(st)) => {
                let early = ok_after.is_none_or(|t| now < t);
                if st.success() && !early {
                    s.child = None;
                    continue;
                }
                let what = if st.success() { "exited before the window ended".to_string() } else { describe(st) };
                // It ended: this returns at once, once its stderr is read to the end.
                child.wait_for(nodes::REAP_LIMIT).await;
                format!("{} ({what})", s.name)
            }
            Err(e) => format!("{} (cannot be waited for: {e})", s.name),
        };
        let detail = child.stderr_tail().map_or_else(|| entry.clone(), |t| format!("{entry}; its stderr ends: {t}"));
        s.child = None;
        return Some(Failed { entry, detail });
    }
    None
}

/// The servers' addresses: at the network layer each server's own namespace address (port
/// 7100: the namespace is the server's alone); otherwise free loopback ports (bound together,
/// then released for the servers).
fn free_addrs(n: u32) -> Result<Vec<String>> {
    let net = troupe_lab::netlayer::NetFile::from_env().map_err(SutError::Process)?;
    if let Some(f) = net {
        return (0..n)
            .map(|s| {
                let name = format!("server-{s}");
                f.node(&name)
                    .map(|p| format!("{}:7100", p.addr))
                    .ok_or_else(|| SutError::Process(format!("{name} is not in netns.json")).into())
            })
            .collect();
    }
    let listeners: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<_>>()
        .map_err(|e| SutError::Process(format!("cannot find a free loopback port for the servers: {e}")))?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.to_string()))
        .collect::<std::io::Result<_>>()
        .map_err(|e| SutError::Process(format!("cannot read a loopback port: {e}")).into())
}

/// Waits until `n` processes said `Ready` with `what`, reaping children meanwhile.
async fn wait_ready(
    state: &Mutex<Coord>,
    changed: &Notify,
    slots: &mut [Slot],
    what: &str,
    n: usize,
    tally: &mut Tally,
    sig: &mut watch::Receiver<bool>,
) -> std::result::Result<(), String> {
    let deadline = tokio::time::Instant::now() + SETUP_LIMIT;
    loop {
        let notified = changed.notified();
        if lock(state).ready.iter().filter(|(_, w)| w == what).count() >= n {
            return Ok(());
        }
        if let Some(failed) = reap(slots, None).await {
            tally.failed_nodes.push(failed.entry);
            return Err(format!("node process {} ended during set-up", failed.detail));
        }
        tokio::select! {
            _ = notified => {}
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            _ = tokio::time::sleep_until(deadline) => {
                return Err(format!("set-up ({what}) took longer than {} s", SETUP_LIMIT.as_secs()));
            }
            _ = sig.wait_for(|v| *v) => {
                tally.interrupted = true;
                return Err("interrupted during set-up".into());
            }
        }
    }
}

/// The orchestrator (rules 1-4 of `sub.rs`).
pub(super) async fn orchestrate(cfg: &IotConfig, actions: Vec<FaultAction>, em: &Emitter) -> Result<Tally> {
    let secret = nodes::secret();
    let node_cfg = NodeConfig {
        listen: troupe_lab::netlayer::listen_any_port(),
        heartbeat_interval_ms: 200,
        heartbeat_timeout_ms: 10_000,
        ..NodeConfig::new("orchestrator", &secret)
    };
    let node = Node::start(node_cfg)
        .await
        .map_err(|e| SutError::Node(format!("cannot start the orchestrator's node: {e}")))?;
    let state = Arc::new(Mutex::new(Coord::default()));
    let changed = Arc::new(Notify::new());
    let coord = troupe::spawn(Coordinator { state: Arc::clone(&state), changed: Arc::clone(&changed) });
    node.export(COORDINATOR, &coord).map_err(|e| SutError::Node(format!("cannot export the coordinator: {e}")))?;
    let servers = free_addrs(cfg.servers)?;
    let launcher = Launcher { node_addr: node.addr(), secret, servers: servers.join(",") };
    let mut slots: Vec<Slot> = (0..cfg.servers)
        .map(|s| (format!("server-{s}"), "iot-server", s))
        .chain((0..cfg.device_processes).map(|p| (format!("devices-{p}"), "iot-devices", p)))
        .map(|(name, role, index)| Slot { name, role, index, child: None, attempt: 0, restart_at: None })
        .collect();
    let mut tally = Tally::default();
    // One signal listener for the whole run (a SIGTERM between two waits is not lost).
    let (sig_tx, mut sig) = watch::channel(false);
    let listener = tokio::spawn(async move {
        interrupted().await;
        let _ = sig_tx.send(true);
    });
    let ctx = RunCtx { cfg, actions: &actions, em, node: &node, servers: &servers, launcher: &launcher };
    let outcome = run(&ctx, &mut slots, &state, &changed, &mut tally, &mut sig).await;
    listener.abort();
    if let Err(reason) = outcome {
        eprintln!("troupe iot: {reason}");
        tally.errors += 1;
        if tally.failed_nodes.is_empty() && !tally.interrupted {
            tally.failed_nodes.push(reason);
        }
    }
    // Rule 4: nothing outlives the orchestrator.
    for s in &mut slots {
        if let Some(mut c) = s.child.take() {
            c.kill().await;
        }
    }
    node.shutdown();
    coord.kill();
    Ok(tally)
}

struct RunCtx<'a> {
    cfg: &'a IotConfig,
    actions: &'a [FaultAction],
    em: &'a Emitter,
    node: &'a Node,
    servers: &'a [String],
    launcher: &'a Launcher,
}

async fn run(
    ctx: &RunCtx<'_>,
    slots: &mut [Slot],
    state: &Mutex<Coord>,
    changed: &Notify,
    tally: &mut Tally,
    sig: &mut watch::Receiver<bool>,
) -> std::result::Result<(), String> {
    let RunCtx { cfg, actions, em, node, servers, launcher } = *ctx;
    let ns = cfg.servers as usize;
    for s in slots[..ns].iter_mut() {
        launcher.start(s).map_err(|e| e.to_string())?;
    }
    wait_ready(state, changed, slots, "servers", ns, tally, sig).await?;
    for s in slots[ns..].iter_mut() {
        launcher.start(s).map_err(|e| e.to_string())?;
    }
    wait_ready(state, changed, slots, "devices", cfg.device_processes as usize, tally, sig).await?;
    // Rule 2.
    let start_us = now_us() + (cfg.warmup_s * 1_000_000) as i64;
    em.emit("ready", json!({"what": "window", "count": cfg.duration_s, "start_us": start_us}));
    {
        let mut s = lock(state);
        s.start_us = Some(start_us);
        for r in s.waiting.drain(..) {
            r.send(start_us);
        }
    }
    let collector =
        tokio::spawn(collector::collect(node.clone(), servers.to_vec(), start_us, cfg.duration_s, em.clone()));
    let start = instant_of(start_us);
    let window_end = start + Duration::from_secs(cfg.duration_s);
    let deadline = window_end + Duration::from_secs(30);
    let mut kills = actions.iter().filter(|a| a.kind == NODE_KILL).peekable();
    let restart = Duration::from_secs(cfg.restart_s);
    // Rule 3 and 4: kills, restarts and children, on a 20 ms tick.
    loop {
        let now = tokio::time::Instant::now();
        while let Some(a) = kills.next_if(|a| start + Duration::from_millis(a.at_ms) <= now) {
            let Some(slot) = slots.get_mut(a.group as usize).filter(|_| (a.group as usize) < ns) else {
                tally.skipped += 1;
                continue;
            };
            match slot.child.take() {
                Some(mut c) => {
                    c.start_kill();
                    em.emit("fault_injected", json!({"id": a.id, "target": slot.name, "kind": NODE_KILL}));
                    c.wait_for(nodes::REAP_LIMIT).await;
                    tally.injected += 1;
                    slot.restart_at = Some(now + restart);
                }
                None => tally.skipped += 1,
            }
        }
        for slot in slots[..ns].iter_mut() {
            if slot.restart_at.is_some_and(|t| t <= now) {
                slot.restart_at = None;
                if now < window_end {
                    slot.attempt += 1;
                    launcher.start(slot).map_err(|e| e.to_string())?;
                    em.emit("restarted", json!({"target": slot.name, "attempt": slot.attempt}));
                }
            }
        }
        if let Some(failed) = reap(slots, Some(window_end)).await {
            tally.failed_nodes.push(failed.entry);
            return Err(format!("node process {} failed", failed.detail));
        }
        if now >= window_end && slots.iter().all(|s| s.child.is_none()) {
            break;
        }
        if now >= deadline {
            let left: Vec<&str> = slots.iter().filter(|s| s.child.is_some()).map(|s| s.name.as_str()).collect();
            return Err(format!("node process(es) {} did not end by the deadline", left.join(", ")));
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
            _ = sig.wait_for(|v| *v) => {
                tally.interrupted = true;
                collector.abort();
                return Ok(());
            }
        }
    }
    match tokio::time::timeout(Duration::from_secs(10), collector).await {
        Ok(Ok(_)) => Ok(()),
        _ => Err("the collector did not finish its window".into()),
    }
}
