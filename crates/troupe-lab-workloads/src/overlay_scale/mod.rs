//! `overlay-scale` (workloads.md §5 "Overlay scale", seed 004 §6.3) as a lab workload: a
//! replicated counter (every node increments once; every node sends its full state to its
//! neighbours every `period_ms`) on the full mesh, client-server and HyParView overlays, in the
//! deterministic overlay simulator of `troupe_cluster::overlay::sim`; metrics: total bytes and
//! messages transmitted and the time to convergence. Same config and seed, same numbers.
//! With `mode=processes` the same counter runs on real `troupe node` processes on loopback,
//! each running the live overlay and a counter actor (`processes/mod.rs`), to calibrate the
//! simulator against real traffic, latency and timers.
//!
//! It has no fault schedule (the simulator's crash tests live with the overlay in
//! `troupe-cluster`) and no peer runtime: Distributed Erlang's shape is the `full_mesh`
//! overlay of the same simulator, which is how seed 004 compares them.

pub mod analysis;
pub mod config;
mod processes;
mod program;
mod report;

use std::path::Path;
use std::time::Duration;

use analysis::OverlayStats;
use config::OverlayScaleConfig;
use troupe_lab::config::{Config, Schema};
use troupe_lab::error::Result;
use troupe_lab::events::Event;
use troupe_lab::manifest::Manifest;
use troupe_lab::schedule::FaultAction;
use troupe_lab::workload::{Checker, Conform, Faults, Reports, Spec, System};

/// The `overlay-scale` workload (registered in [`crate::registry`]).
pub struct OverlayScale;

impl Spec for OverlayScale {
    fn name(&self) -> &'static str {
        "overlay-scale"
    }

    fn about(&self) -> &'static str {
        "overlay-scale (seed 004 §6.3): bytes, messages and convergence of a replicated counter on \
         full mesh, client-server and HyParView, in the deterministic network simulator \
         (mode=sim) or on real node processes on loopback (mode=processes)"
    }

    fn schema(&self) -> &'static Schema {
        &config::SCHEMA
    }

    fn point_keys(&self) -> &'static [&'static str] {
        &["mode", "overlay", "nodes"]
    }

    fn net_nodes(&self, _: &Config) -> std::result::Result<Vec<String>, String> {
        Err("it runs the overlays in a deterministic simulator in one OS process (mode=sim), or on node \
             processes on loopback only (mode=processes)"
            .into())
    }
}

impl Faults for OverlayScale {
    fn schedule(&self, _cfg: &Config) -> Vec<FaultAction> {
        Vec::new()
    }
}

impl System for OverlayScale {
    fn expected_duration(&self, cfg: &Config) -> Duration {
        // The 1,024-node full mesh simulates in about 15 s here; allow for larger and slower.
        let c = OverlayScaleConfig::from_config(cfg);
        if c.processes {
            // Start (sequential), formation bound, the counter phase, reading and closing.
            let n = c.nodes as u64;
            return Duration::from_secs(90 + n / 2 + 30 + n / 10 + c.duration_ms / 1000 + 30);
        }
        let work = (c.nodes as u64).pow(2) * c.simulated_ms() / 60_000 / 20_000;
        Duration::from_secs(60 + work)
    }

    fn roles(&self) -> &'static [&'static str] {
        &["overlay-scale"]
    }

    fn exec(&self, _role: &str) -> Result<i32> {
        program::exec()
    }
}

impl Checker for OverlayScale {
    type Analysis = OverlayStats;

    fn check(&self, cfg: &Config, events: &[Event], _: &[FaultAction], _: Option<f64>) -> Self::Analysis {
        OverlayStats::compute(cfg, events)
    }
}

impl Reports for OverlayScale {
    fn run_outputs(&self, dir: &Path, m: &Manifest, _cfg: &Config, st: &Self::Analysis) -> Result<()> {
        report::write_run_outputs(dir, m, st)
    }

    fn sweep_report(&self, dir: &Path) -> Result<usize> {
        Ok(report::write_grid_report(dir, "overlay-scale sweep")?.1)
    }

    fn compare_report(&self, dir: &Path) -> Result<Vec<String>> {
        Ok(report::write_grid_report(dir, "overlay-scale side by side")?.0)
    }
}

/// Role 6: no conformance rules yet (`troupe lab conform` refuses the workload).
impl Conform for OverlayScale {}
