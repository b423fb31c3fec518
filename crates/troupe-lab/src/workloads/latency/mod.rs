//! `latency` (workloads.md §5, seed 004 §6.1) as a lab workload: two nodes, 1..128 actor pairs;
//! each actor on node A sends a message with a 512 KiB..8 MiB payload to its partner on node B
//! and waits for the ack, in turn, `messages` in all; a simulated RTT is injected by the lab's
//! relay ([`crate::relay`]) on every connection between the nodes. Troupe's transports (one
//! connection, parallel lanes picked at random or by pair, a data channel beside a gossip
//! channel) run next to Distributed Erlang's one connection (`peers/erlang/latency`). Its keys
//! ([`config`]), the Troupe programs (`sub.rs`, `actors.rs`), its statistics ([`analysis`]) and
//! its reports ([`report`]).

pub mod analysis;
pub mod config;
pub mod report;

mod actors;
mod sub;

use std::path::Path;
use std::time::Duration;

use crate::config::{Config, Schema};
use crate::error::Result;
use crate::events::Event;
use crate::manifest::Manifest;
use crate::schedule::FaultAction;
use crate::workload::{RunAnalysis, Workload};
use analysis::LatencyStats;
use config::LatencyConfig;

/// The latency workload (registered in [`crate::workloads::ALL`]).
pub struct Latency;

/// A generous time for the measured part on a slow runtime (used for deadlines only): set-up,
/// 20 MB/s of payload, and each pair's messages one after another at 3 RTTs each.
pub fn expected_window(c: &LatencyConfig) -> Duration {
    let bytes = (c.messages * c.payload_bytes) as f64;
    let per_pair = c.messages.div_ceil(c.pairs) as f64;
    Duration::from_secs(20) + Duration::from_secs_f64(bytes / 20e6 + per_pair * c.rtt_ms as f64 * 3e-3)
}

impl Workload for Latency {
    fn name(&self) -> &'static str {
        "latency"
    }

    fn about(&self) -> &'static str {
        "latency (seed 004 §6.1): ack latency and throughput of large messages between two nodes over a \
         delaying relay, Troupe's transports next to Distributed Erlang"
    }

    fn schema(&self) -> &'static Schema {
        &config::SCHEMA
    }

    fn point_keys(&self) -> &'static [&'static str] {
        &["transport", "pairs"]
    }

    fn expected_duration(&self, cfg: &Config) -> Duration {
        Duration::from_secs(20) + expected_window(&LatencyConfig::from_config(cfg))
    }

    fn schedule(&self, _: &Config) -> Vec<FaultAction> {
        Vec::new()
    }

    fn net_nodes(&self, _: &Config) -> std::result::Result<Vec<String>, String> {
        Err("it measures the fault-free transport between its two node processes (the lab's relay adds only the \
             RTT); network faults are not wired into them"
            .into())
    }

    fn roles(&self) -> &'static [&'static str] {
        &["latency", "latency-node", "latency-relay"]
    }

    fn exec(&self, role: &str) -> Result<i32> {
        sub::exec(role)
    }

    fn analyse(&self, cfg: &Config, events: &[Event], _: &[FaultAction], _: Option<f64>) -> Box<dyn RunAnalysis> {
        Box::new(LatencyStats::compute(cfg, events))
    }

    fn write_run_outputs(&self, dir: &Path, m: &Manifest, cfg: &Config, a: &dyn RunAnalysis) -> Result<()> {
        let st = crate::workload::analysis_of::<LatencyStats>(a, "latency")?;
        report::write_run_outputs(dir, m, cfg, st)
    }

    fn write_sweep_report(&self, dir: &Path) -> Result<usize> {
        report::write_grid(dir, "sweep.csv", "Latency sweep").map(|(n, _)| n)
    }

    fn write_compare_report(&self, dir: &Path) -> Result<Vec<String>> {
        report::write_grid(dir, "compare.csv", "Latency: Troupe's transports next to Distributed Erlang")
            .map(|(_, lines)| lines)
    }
}
