//! Building blocks of the chat system under test that both deployments share: server groups
//! (one one_for_one supervisor and its chats), client groups, the per-process throughput
//! counter and the injector, the window clock, and the quiet panic hook.
//!
//! Rules:
//! 1. Chat c belongs to supervisor `c / chats_per_sup`; client k belongs to chat
//!    `k / clients_per_server`.
//! 2. The injector of chat c runs in the process that holds client `c * clients_per_server`
//!    (the chat's first client), as seed 000's client groups hold their chats' injectors;
//!    per action it asks discovery for the chat's current incarnation, emits
//!    `fault_injected {id, target, kind}` and then hurts it: a brutal kill (`kill`), the poison
//!    message (`error`), or the stress message (`cpu`, `ram`). An action whose chat is not
//!    registered at that moment (it is restarting) is skipped and counted.
//! 3. The counter emits `throughput {second, count}` at the end of every window second s,
//!    timed from the window start (no drift): the broadcasts this process's clients received
//!    during that second.
//! 4. Supervisors restart chats for ever (intensity 1,000,000 per second, as in SCP): the
//!    benchmark measures recovery, not giving up.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;
use tokio::task::JoinHandle;
use troupe::supervisor::{self, ChildSpec, Restart, Strategy, SupervisorRef, SupervisorSpec};
use troupe::ActorRef;

use super::actors::{topic, Chat, Client, Shared, POISON};
use super::config::ChatConfig;
use super::protocol::{ChatMsg, ClientMsg, DiscoveryMsg, FoundChat};
use troupe_lab::schedule::FaultAction;

/// Starts supervisor `g` with its chats (rules 1, 4).
pub(crate) async fn start_server_group(
    cfg: &ChatConfig,
    g: u32,
    discovery: &ActorRef<DiscoveryMsg>,
    shared: &Arc<Shared>,
) -> Result<SupervisorRef, String> {
    let mut spec = SupervisorSpec::new(Strategy::OneForOne).intensity(1_000_000, Duration::from_secs(1));
    let first = u64::from(g) * u64::from(cfg.chats_per_sup);
    for c in first..first + u64::from(cfg.chats_per_sup) {
        let (discovery, shared) = (discovery.clone(), Arc::clone(shared));
        let starts = Arc::new(AtomicU32::new(0));
        let child = ChildSpec::worker(topic(c), move || {
            Chat::new(c, discovery.clone(), Arc::clone(&shared), Arc::clone(&starts))
        })
        .restart(Restart::Permanent);
        spec = spec.child(child);
    }
    supervisor::start(spec).await.map_err(|e| format!("supervisor {g} did not start: {e}"))
}

/// Spawns clients `first..first+count` (rule 1).
pub(crate) fn spawn_clients(
    cfg: &ChatConfig,
    first: u64,
    count: u64,
    discovery: &ActorRef<DiscoveryMsg>,
    shared: &Arc<Shared>,
) -> Vec<ActorRef<ClientMsg>> {
    let per = u64::from(cfg.clients_per_server);
    (first..first + count)
        .map(|k| troupe::spawn(Client::new(k, k / per, discovery.clone(), Arc::clone(shared))))
        .collect()
}

/// The actions whose injector runs in the process holding clients `first..first+count`
/// (rule 2).
pub(crate) fn actions_for(cfg: &ChatConfig, actions: &[FaultAction], first: u64, count: u64) -> Vec<FaultAction> {
    let per = u64::from(cfg.clients_per_server);
    actions
        .iter()
        .filter(|a| {
            // Network faults are applied by every node process itself (troupe_lab::netfaults::apply).
            if troupe_lab::netfaults::is_net_kind(&a.kind) {
                return false;
            }
            let k = u64::from(a.group) * per;
            k >= first && k < first + count
        })
        .cloned()
        .collect()
}

/// Microseconds since the Unix epoch.
pub(crate) fn now_us() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64)
}

pub(crate) use troupe_lab::nodes::instant_of;

/// The throughput counter (rule 3); ends after the last window second.
pub(crate) fn spawn_counter(shared: Arc<Shared>, start_us: i64, seconds: u64) -> JoinHandle<()> {
    tokio::spawn(async move {
        let start = instant_of(start_us);
        tokio::time::sleep_until(start).await;
        let mut last = shared.received.load(Ordering::Relaxed);
        for s in 0..seconds {
            tokio::time::sleep_until(start + Duration::from_secs(s + 1)).await;
            let now = shared.received.load(Ordering::Relaxed);
            shared.emitter.emit("throughput", json!({"second": s, "count": now - last}));
            last = now;
        }
    })
}

/// The injector of this process's chats (rule 2); returns (carried out, skipped). Each
/// action runs as its own task at its instant, so a slow lookup never delays the next fault
/// (thousands of chats failing every few seconds make thousands of actions per second).
pub(crate) fn spawn_injector(
    cfg: &ChatConfig,
    actions: Vec<FaultAction>,
    discovery: ActorRef<DiscoveryMsg>,
    shared: Arc<Shared>,
    start_us: i64,
) -> JoinHandle<(u64, u64)> {
    let (stress_ms, stress_mb) = (cfg.stress_ms, cfg.stress_mb);
    tokio::spawn(async move {
        let start = instant_of(start_us);
        let mut running = tokio::task::JoinSet::new();
        for a in actions {
            tokio::time::sleep_until(start + Duration::from_millis(a.at_ms)).await;
            let (discovery, shared) = (discovery.clone(), Arc::clone(&shared));
            running.spawn(async move { hurt(a, discovery, shared, stress_ms, stress_mb).await });
            // Reap what is done as we go, so the set stays small.
            while let Some(r) = running.try_join_next() {
                let _ = r;
            }
        }
        while running.join_next().await.is_some() {}
        (shared.injected.load(Ordering::Relaxed), shared.skipped.load(Ordering::Relaxed))
    })
}

/// One action of rule 2.
async fn hurt(a: FaultAction, discovery: ActorRef<DiscoveryMsg>, shared: Arc<Shared>, stress_ms: u64, stress_mb: u64) {
    let target = topic(u64::from(a.group));
    let found =
        discovery.ask(|reply| DiscoveryMsg::Find { topic: target.clone(), reply }, Duration::from_secs(5)).await;
    let Ok(FoundChat(Some(chat))) = found else {
        shared.skipped.fetch_add(1, Ordering::Relaxed);
        return;
    };
    // The event is stamped before the fault, so no detection can precede it.
    shared.emitter.emit("fault_injected", json!({"id": a.id, "target": target, "kind": a.kind}));
    match a.kind.as_str() {
        "kill" => chat.kill(),
        "error" => {
            let _ = chat.send(ChatMsg::Poison);
        }
        "cpu" => {
            let _ = chat.send(ChatMsg::Stress { cpu_ms: stress_ms, ram_mb: 0 });
        }
        _ => {
            let _ = chat.send(ChatMsg::Stress { cpu_ms: 0, ram_mb: stress_mb });
        }
    }
    shared.injected.fetch_add(1, Ordering::Relaxed);
}

/// Resident memory of this process, bytes (`VmRSS` in `/proc/self/status`; 0 where unavailable).
pub(crate) fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Keeps the injected poison panics off stderr (thousands per run); every other panic is
/// reported as before.
pub(crate) fn quiet_poison_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let poison = info.payload().downcast_ref::<&str>().is_some_and(|s| *s == POISON);
        if !poison {
            default(info);
        }
    }));
}
