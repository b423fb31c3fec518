//! The Troupe SCP SUB (`troupe lab exec scp`): the supervised-communicating-processes system
//! under test of workloads.md §1 written on the Troupe core, driven by the environment
//! contract (TROUPE_CONFIG, TROUPE_SCHEDULE, TROUPE_EVENTS, TROUPE_RUN_ID) exactly as the
//! peers' programs are.
//!
//! Structure: a head supervisor (one_for_one) supervises the aggregator and `supervisors`
//! sub-supervisors (one_for_one, intensity 1,000,000 per 1 s so they never give up); child i
//! of sub-supervisor g is the server of pair (g, i), transient when `recovery` is true,
//! temporary otherwise. Sequence: `run_started`, build the tree, `ready {what: "pairs"}`,
//! warm-up, window (the aggregator's `throughput` per second, the injector's kills), then the
//! tree is stopped and `run_finished {dropped_events, errors, skipped_faults}` written.
//! SIGTERM or SIGINT ends the run early, still writing `run_finished` (with `interrupted`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::oneshot;
use troupe::supervisor::{self, ChildSpec, Restart, Strategy, SupervisorSpec};

use super::actors::{AggMsg, Aggregator, Server, Shared};
use super::config::ScpConfig;
use super::{injector, link};
use crate::SutError;
use troupe_lab::config::ConfigBuilder;
use troupe_lab::error::{Error, Result};
use troupe_lab::events::writer::EventWriter;
use troupe_lab::schedule;

/// Node name in the events.
const NODE: &str = "sub";

pub(super) fn env_path(name: &str) -> Result<PathBuf> {
    std::env::var_os(name).map(PathBuf::from).ok_or_else(|| {
        SutError::Environment(format!("{name} is not set; `troupe lab exec` is started by `troupe lab run`")).into()
    })
}

/// The SCP config named by TROUPE_CONFIG.
pub(super) fn load_config() -> Result<troupe_lab::config::Config> {
    let cfg_path = env_path("TROUPE_CONFIG")?;
    let text = std::fs::read_to_string(&cfg_path).map_err(|e| Error::io(&cfg_path, e))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| Error::malformed(&cfg_path, e.to_string()))?;
    let mut b = ConfigBuilder::new(&super::Scp);
    b.apply_json(&json);
    b.build()
}

/// Runs the SUB from the environment contract; returns the process exit code.
pub(super) fn exec_from_env() -> Result<i32> {
    let config = load_config()?;
    let actions = schedule::read(&env_path("TROUPE_SCHEDULE")?)?;
    let writer = EventWriter::from_env("troupe", NODE)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("troupe-sub")
        .build()
        .map_err(|e| SutError::Process(format!("cannot start the tokio runtime: {e}")))?;
    let cfg_json = config.to_json();
    let scp = ScpConfig::from_config(&config);
    let (errors, skipped, interrupted) = rt.block_on(drive(scp, cfg_json, actions, &writer));
    let (_, write_errors) = writer.finish(json!({
        "errors": errors,
        "skipped_faults": skipped,
        "interrupted": interrupted,
    }));
    rt.shutdown_timeout(Duration::from_secs(1));
    Ok(if write_errors > 0 { 1 } else { 0 })
}

/// Builds the tree, runs warm-up and window, tears down. Returns (errors, skipped, interrupted).
async fn drive(
    scp: ScpConfig,
    cfg_json: serde_json::Value,
    actions: Vec<schedule::FaultAction>,
    writer: &EventWriter,
) -> (u64, u64, bool) {
    let em = writer.emitter();
    em.emit(
        "run_started",
        json!({"workload": "scp", "config": cfg_json, "version": format!("troupe {}", env!("CARGO_PKG_VERSION"))}),
    );
    let (mut sigterm, mut sigint) = match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(a), Ok(b)) => (a, b),
        _ => return (1, actions.len() as u64, false),
    };

    // The aggregator handle must exist before `shared`, which the aggregator itself holds.
    let shared_slot: Arc<std::sync::OnceLock<Arc<Shared>>> = Arc::default();
    let slot2 = Arc::clone(&shared_slot);
    let agg_spec = ChildSpec::worker("aggregator", move || {
        Aggregator::new(Arc::clone(slot2.get().expect("shared state is set before the tree starts")))
    })
    .restart(Restart::Permanent);
    let shared = Arc::new(Shared {
        emitter: em.clone(),
        delay: Duration::from_millis(scp.delay_ms),
        payload_bytes: scp.payload_bytes,
        aggregator: agg_spec.handle(),
        errors: AtomicU64::new(0),
    });
    let _ = shared_slot.set(Arc::clone(&shared));

    let restart = if scp.recovery { Restart::Transient } else { Restart::Temporary };
    let pps = scp.pairs_per_supervisor();
    let mut head =
        SupervisorSpec::new(Strategy::OneForOne).intensity(1_000_000, Duration::from_secs(1)).child(agg_spec);
    let mut targets = Vec::with_capacity(scp.supervisors as usize);
    for g in 0..scp.supervisors {
        let mut sub = SupervisorSpec::new(Strategy::OneForOne).intensity(1_000_000, Duration::from_secs(1));
        let mut handles = Vec::with_capacity(pps as usize);
        for i in 0..pps {
            let shared = Arc::clone(&shared);
            let starts = Arc::new(AtomicU32::new(0));
            let spec = ChildSpec::worker(format!("s{i}"), move || Server::new(Arc::clone(&shared), g, i, &starts))
                .restart(restart);
            handles.push(spec.handle());
            sub = sub.child(spec);
        }
        targets.push(handles);
        head = head.child(ChildSpec::supervisor(format!("g{g}"), sub));
    }
    let sup = match supervisor::start(head).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("troupe scp: the supervision tree did not start: {e}");
            return (1, actions.len() as u64, false);
        }
    };
    let targets: injector::Targets = Arc::new(targets);
    // injector = "node": its process, a separate node, runs in every run (a 0% baseline too,
    // so the baseline has the processes of the runs it normalises); the warm-up starts once it
    // is connected (link.rs rule 1).
    let mut link = None;
    let mut interrupted = false;
    if scp.injector_node {
        match link::Link::start(targets.clone(), em.clone()).await {
            Ok(mut l) => {
                tokio::select! {
                    ok = l.wait_ready(Duration::from_secs(60)) => if !ok {
                        eprintln!("troupe scp: the injector process did not say Ready within 60 s (or ended)");
                        shared.errors.fetch_add(1, Ordering::Relaxed);
                    },
                    _ = sigterm.recv() => interrupted = true,
                    _ = sigint.recv() => interrupted = true,
                }
                link = Some(l);
            }
            Err(e) => {
                eprintln!("troupe scp: {e}");
                shared.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    em.emit("ready", json!({"what": "pairs", "count": scp.pairs}));

    if !interrupted {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(scp.warmup_s)) => {}
            _ = sigterm.recv() => interrupted = true,
            _ = sigint.recv() => interrupted = true,
        }
    }
    let mut tally = injector::Tally { killed: 0, skipped: actions.len() as u64 };
    if !interrupted {
        let start = std::time::Instant::now();
        let (done_tx, done_rx) = oneshot::channel();
        let msg = AggMsg::StartWindow {
            start: tokio::time::Instant::from_std(start),
            seconds: scp.duration_s as u32,
            done: done_tx,
        };
        if shared.aggregator.send(msg).is_err() {
            eprintln!("troupe scp: the aggregator is not running");
            shared.errors.fetch_add(1, Ordering::Relaxed);
        }
        let injection = match link.take() {
            Some(l) => {
                l.open_window(troupe_lab::events::writer::now_us());
                Injection::Process(l)
            }
            None if scp.injector_node || actions.is_empty() => Injection::None,
            None => {
                let start = tokio::time::Instant::from_std(start);
                Injection::InProcess(injector::start(actions.clone(), targets.clone(), start, em.clone()))
            }
        };
        tokio::select! {
            _ = done_rx => {}
            _ = sigterm.recv() => interrupted = true,
            _ = sigint.recv() => interrupted = true,
        }
        match injection.finish(interrupted, actions.len() as u64).await {
            Ok(t) => tally = t,
            Err(e) => {
                eprintln!("troupe scp: {e}");
                shared.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    if let Some(l) = link.take() {
        let _ = l.finish(Duration::ZERO, true).await;
    }
    let _ = tokio::time::timeout(Duration::from_secs(30), sup.stop()).await;
    (shared.errors.load(Ordering::Relaxed), tally.skipped, interrupted)
}

/// Where the window's faults come from.
enum Injection {
    /// The injector process (`link.rs`), `injector = "node"`.
    Process(link::Link),
    /// The injector actor (`injector.rs`), `injector = "in_process"`.
    InProcess(injector::InProcess),
    /// No actions to carry out (or the injector could not start: already counted as an error).
    None,
}

impl Injection {
    /// Lets the injector finish the actions due in the window (all of them are), or stops it
    /// when the run was interrupted, and returns its tally; `Err` when it did not finish.
    async fn finish(self, interrupted: bool, planned: u64) -> std::result::Result<injector::Tally, String> {
        let untouched = injector::Tally { killed: 0, skipped: planned };
        match self {
            Injection::None => Ok(untouched),
            Injection::Process(l) => {
                // Every action is due before the window ends; the grace lets the last ones land.
                let (picked, clean) = l.finish(Duration::from_secs(10), interrupted).await;
                let tally = injector::Tally { killed: picked, skipped: planned.saturating_sub(picked) };
                if clean || interrupted {
                    Ok(tally)
                } else {
                    Err(format!(
                        "the injector process did not finish its schedule ({picked} of {planned} actions carried out; \
                         its messages are above)"
                    ))
                }
            }
            // Every action is due before the window ends; the grace lets the last ones land.
            Injection::InProcess(a) => a.finish(interrupted, Duration::from_secs(10)).await,
        }
    }
}
