//! The Troupe program of `overlay-scale` (`troupe lab exec overlay-scale`): with `mode=sim`
//! (below) runs the deterministic overlay simulation of `troupe_cluster::overlay::sim` for the
//! config and reports it as events; with `mode=processes` it runs the counter on real node
//! processes instead (`processes/mod.rs`, whose events are its own but use the same `traffic`
//! and `ready` kinds). Simulated time, not wall time: the numbers depend only on the config
//! (seed included), so the same config gives the same events' fields, byte for byte, except
//! `ts_us` and `wall_ms`.
//!
//! Events, in order (docs/overlay-scale.md, "Events and outputs"):
//! 1. `run_started {workload: "overlay-scale", config, version}`;
//! 2. `traffic {second, bytes, messages}` for every simulated second s = 0.. (the bytes and
//!    messages sent during that second, membership included; the last may be partial);
//! 3. `ready {what: "formed", count: nodes, sim_ms}`: when (simulated ms) the overlay had formed
//!    and the counter started (0 for the static overlays);
//! 4. `ready {what: "converged", count: nodes, ms}` when every node holds every increment
//!    (ms of simulated time after `formed`); absent when it did not converge in the run;
//! 5. `run_finished {dropped_events, errors: 0, sim_ms, wall_ms}`.

use std::time::Instant;

use serde_json::json;
use troupe_cluster::overlay::sim::{scale_observed, Traffic};

use super::config::OverlayScaleConfig;
use troupe_lab::config;
use troupe_lab::error::Result;
use troupe_lab::events::writer::EventWriter;

/// Runs the simulation and writes its events; the process exit code.
pub(super) fn exec() -> Result<i32> {
    let cfg = config::from_env(&super::OverlayScale)?;
    let typed = OverlayScaleConfig::from_config(&cfg);
    if typed.processes {
        let seed = cfg.int("seed") as u64;
        return troupe_lab::subprocess::run_events("overlay-scale", &cfg, "orchestrator", |em| async move {
            super::processes::run(&typed, seed, &em).await
        });
    }
    let writer = EventWriter::from_env("troupe", "sim")?;
    let em = writer.emitter();
    em.emit(
        "run_started",
        json!({"workload": "overlay-scale", "config": cfg.to_json(),
               "version": format!("troupe {} (simulated network)", env!("CARGO_PKG_VERSION"))}),
    );
    let started = Instant::now();
    let mut last = Traffic::default();
    let result = scale_observed(typed.overlay, typed.sim.clone(), typed.period_ms, typed.duration_ms, &mut |s, t| {
        em.emit("traffic", json!({"second": s, "bytes": t.bytes - last.bytes, "messages": t.messages - last.messages}));
        last = t.clone();
    });
    em.emit("ready", json!({"what": "formed", "count": typed.nodes, "sim_ms": result.formed_ms}));
    if let Some(ms) = result.convergence_ms {
        em.emit("ready", json!({"what": "converged", "count": typed.nodes, "ms": ms}));
    }
    let wall_ms = started.elapsed().as_millis() as u64;
    let (_, errors) = writer.finish(json!({"errors": 0, "sim_ms": result.end_ms, "wall_ms": wall_ms}));
    Ok(if errors == 0 { 0 } else { 1 })
}
