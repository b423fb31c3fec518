//! An iot device process (rules of `sub.rs`): a `troupe-remote` node that is not a cluster
//! member, holding devices k with k % device_processes == p as `troupe_cluster::devices`
//! device actors (reports of 1..=report_len, link faults seeded by `seed + k`), carrying out
//! its devices' kills and restarts, and reporting detections of failed owners.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::Notify;
use troupe_cluster::devices::{Device, DeviceConfig, DeviceEvent, LinkFaults, ReportFn};
use troupe_remote::Node;

use super::config::IotConfig;
use super::process::{env, index, instant_of, interrupted, server_addrs, Tally, ENV_NODE, ENV_SECRET, SETUP_LIMIT};
use super::schedule::KILL;
use super::server::{orphaned, ready, start_node};
use crate::SutError;
use troupe_lab::error::Result;
use troupe_lab::events::writer::{now_us, Emitter};
use troupe_lab::schedule::FaultAction;

struct Counts {
    summed: AtomicU64,
    refused: AtomicU64,
    changed: Notify,
}

struct Fleet {
    node: Node,
    cfg: IotConfig,
    servers: Vec<String>,
    em: Emitter,
    counts: Arc<Counts>,
    report: ReportFn,
    live: HashMap<u64, Device>,
}

impl Fleet {
    fn start(&mut self, k: u64, incarnation: u64) {
        let c = &self.cfg;
        let name = format!("device-{k}");
        let dcfg = DeviceConfig {
            incarnation,
            started_us: now_us(),
            heartbeat_ms: c.heartbeat_ms,
            phi_threshold: c.phi_threshold,
            acceptable_pause_ms: 2 * c.heartbeat_ms,
            hello_retry_ms: c.heartbeat_ms,
            report_len: c.report_len as usize,
            faults: LinkFaults {
                drop_probability: c.drop_probability,
                delay_min_ms: c.delay_min_ms,
                delay_max_ms: c.delay_max_ms,
                seed: c.seed.wrapping_add(k),
            },
            ..DeviceConfig::new(name, self.servers.clone())
        };
        let (em, counts) = (self.em.clone(), Arc::clone(&self.counts));
        let names: HashMap<String, String> =
            self.servers.iter().enumerate().map(|(i, a)| (a.clone(), format!("server-{i}"))).collect();
        let d = Device::start(&self.node, dcfg, Arc::clone(&self.report), move |e| match e {
            DeviceEvent::FirstReportSummed { .. } if incarnation == 0 => {
                counts.summed.fetch_add(1, Ordering::SeqCst);
                counts.changed.notify_waiters();
            }
            DeviceEvent::OwnerFailed { device, owner } => {
                let target = names.get(&owner).cloned().unwrap_or(owner);
                em.emit("fault_detected", json!({"id": null, "target": target, "by": device}));
            }
            DeviceEvent::Disconnected { device, reason } => {
                counts.refused.fetch_add(1, Ordering::Relaxed);
                eprintln!("troupe iot: {device} was disconnected: {reason}");
            }
            _ => {}
        });
        self.live.insert(k, d);
    }
}

/// A device process.
pub(super) async fn run(cfg: &IotConfig, name: &str, actions: Vec<FaultAction>, em: &Emitter) -> Result<Tally> {
    let p = index()?;
    let servers = server_addrs()?;
    let (orch, secret) = (env(ENV_NODE)?, env(ENV_SECRET)?);
    let node = start_node(name, &troupe_lab::netlayer::listen_any_port(), &secret).await?;
    node.connect(&orch)
        .await
        .map_err(|e| SutError::Node(format!("cannot reach the orchestrator at {orch}: {}", troupe::error_chain(&e))))?;
    let counts = Arc::new(Counts { summed: AtomicU64::new(0), refused: AtomicU64::new(0), changed: Notify::new() });
    let len = cfg.report_len as i64;
    let report: ReportFn = Arc::new(move |_| (1..=len).collect());
    let mut fleet = Fleet {
        node: node.clone(),
        cfg: cfg.clone(),
        servers,
        em: em.clone(),
        counts: Arc::clone(&counts),
        report,
        live: HashMap::new(),
    };
    let mine: Vec<u64> = cfg.devices_of(p).collect();
    for &k in &mine {
        fleet.start(k, 0);
    }
    // Rule 1: ready once every device had a report summed by its owner.
    let deadline = tokio::time::Instant::now() + SETUP_LIMIT;
    loop {
        let notified = counts.changed.notified();
        let n = counts.summed.load(Ordering::SeqCst);
        if n >= mine.len() as u64 {
            break;
        }
        tokio::select! {
            _ = notified => {}
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            _ = tokio::time::sleep_until(deadline) => {
                return Err(SutError::Setup(format!("only {n} of {} devices had a report summed in time", mine.len())).into());
            }
        }
    }
    em.emit("ready", json!({"what": "devices", "count": mine.len()}));
    let start_us = ready(&node, &orch, name, "devices").await?;
    let net = super::process::apply_net_faults(cfg, &node, cfg.servers + p, name, &actions, start_us, em);
    let mut tally = Tally::default();
    let start = instant_of(start_us);
    let end = start + Duration::from_secs(cfg.duration_s);
    let dp = u64::from(cfg.device_processes);
    let mut kills: VecDeque<&FaultAction> =
        actions.iter().filter(|a| a.kind == KILL && u64::from(a.group) % dp == u64::from(p)).collect();
    let mut restarts: VecDeque<(tokio::time::Instant, u64, u64)> = VecDeque::new();
    let mut attempts: HashMap<u64, u64> = HashMap::new();
    let restart = Duration::from_secs(cfg.restart_s);
    let stop = async {
        tokio::select! {
            _ = orphaned() => true,
            _ = interrupted() => false,
        }
    };
    tokio::pin!(stop);
    // Rule 3: this process's kills and restarts, in time order, until the window ends.
    loop {
        let next_kill = kills.front().map(|a| start + Duration::from_millis(a.at_ms));
        let next_restart = restarts.front().map(|r| r.0);
        let next = [next_kill, next_restart, Some(end)].into_iter().flatten().min().unwrap_or(end);
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            by_loss = &mut stop => {
                if by_loss {
                    tally.errors += 1;
                    eprintln!("troupe iot {name}: the orchestrator went away");
                } else {
                    tally.interrupted = true;
                }
                break;
            }
        }
        let now = tokio::time::Instant::now();
        while let Some(&(at, k, attempt)) = restarts.front() {
            if at > now {
                break;
            }
            restarts.pop_front();
            if now < end {
                // Stamped before the start: the new incarnation can be current on its owner
                // before this task runs again on a loaded machine.
                em.emit("restarted", json!({"target": format!("device-{k}"), "attempt": attempt}));
                fleet.start(k, attempt);
            }
        }
        while kills.front().is_some_and(|a| start + Duration::from_millis(a.at_ms) <= now) {
            let Some(a) = kills.pop_front() else { break };
            let k = u64::from(a.group);
            match fleet.live.remove(&k).filter(Device::is_alive) {
                Some(d) => {
                    d.kill();
                    em.emit("fault_injected", json!({"id": a.id, "target": format!("device-{k}"), "kind": KILL}));
                    tally.injected += 1;
                    let attempt = attempts.entry(k).or_insert(0);
                    *attempt += 1;
                    restarts.push_back((now + restart, k, *attempt));
                }
                None => tally.skipped += 1,
            }
        }
        if now >= end {
            break;
        }
    }
    for d in fleet.live.values() {
        d.kill();
    }
    if let Some(task) = net {
        task.abort();
        tally.net = Some(troupe_lab::netfaults::apply::counts(&node));
    }
    node.shutdown();
    tally.errors += counts.refused.load(Ordering::Relaxed);
    Ok(tally)
}
