//! `latency` (workloads.md §5, seed 004 §6.1) as a lab workload: two nodes, 1..128 actor pairs;
//! each actor on node A sends a message with a 512 KiB..8 MiB payload to its partner on node B
//! and waits for the ack, in turn, `messages` in all; a simulated RTT is injected by the lab's
//! relay ([`troupe_lab::relay`]) on every connection between the nodes. Troupe's transports (one
//! connection, parallel lanes picked at random or by pair, a data channel beside a gossip
//! channel) run next to Distributed Erlang's one connection (`peers/erlang/latency`). Its keys
//! ([`config`]), the Troupe programs (`sub.rs`, `actors.rs`), its statistics ([`analysis`]) and
//! its reports ([`report`]).

pub mod analysis;
pub mod config;
mod conform;
pub mod report;

mod actors;
mod sub;

use std::path::Path;
use std::time::Duration;

use analysis::LatencyStats;
use config::LatencyConfig;
use troupe_lab::config::{Config, Schema};
use troupe_lab::error::Result;
use troupe_lab::events::Event;
use troupe_lab::manifest::Manifest;
use troupe_lab::schedule::FaultAction;
use troupe_lab::workload::{Checker, Conform, Faults, Reports, Spec, System};

/// The latency workload (registered in [`crate::registry`]).
pub struct Latency;

/// A generous time for the measured part on a slow runtime (used for deadlines only): set-up,
/// 20 MB/s of payload, and each pair's messages one after another at 3 RTTs each.
pub fn expected_window(c: &LatencyConfig) -> Duration {
    let bytes = (c.messages * c.payload_bytes) as f64;
    let per_pair = c.messages.div_ceil(c.pairs) as f64;
    Duration::from_secs(20) + Duration::from_secs_f64(bytes / 20e6 + per_pair * c.rtt_ms as f64 * 3e-3)
}

impl Spec for Latency {
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

    fn net_nodes(&self, _: &Config) -> std::result::Result<Vec<String>, String> {
        Err("it measures the fault-free transport between its two node processes (the lab's relay adds only the \
             RTT); network faults are not wired into them"
            .into())
    }
}

impl Faults for Latency {
    fn schedule(&self, _: &Config) -> Vec<FaultAction> {
        Vec::new()
    }
}

impl System for Latency {
    fn expected_duration(&self, cfg: &Config) -> Duration {
        Duration::from_secs(20) + expected_window(&LatencyConfig::from_config(cfg))
    }

    fn roles(&self) -> &'static [&'static str] {
        &["latency", "latency-node", "latency-relay"]
    }

    fn exec(&self, role: &str) -> Result<i32> {
        sub::exec(role)
    }
}

impl Checker for Latency {
    type Analysis = LatencyStats;

    fn check(&self, cfg: &Config, events: &[Event], _: &[FaultAction], _: Option<f64>) -> Self::Analysis {
        LatencyStats::compute(cfg, events)
    }
}

impl Reports for Latency {
    fn run_outputs(&self, dir: &Path, m: &Manifest, cfg: &Config, st: &Self::Analysis) -> Result<()> {
        report::write_run_outputs(dir, m, cfg, st)
    }

    fn sweep_report(&self, dir: &Path) -> Result<usize> {
        report::write_grid(dir, "sweep.csv", "Latency sweep").map(|(n, _)| n)
    }

    fn compare_report(&self, dir: &Path) -> Result<Vec<String>> {
        report::write_grid(dir, "compare.csv", "Latency: Troupe's transports next to Distributed Erlang")
            .map(|(_, lines)| lines)
    }
}

/// Role 6: the behaviour contract of docs/latency.md as checks of a run's trace (`conform.rs`).
impl Conform for Latency {
    fn rules(&self) -> Vec<troupe_lab::conform::Rule> {
        conform::rules()
    }

    fn scenarios(&self) -> Vec<troupe_lab::conform::Scenario> {
        conform::scenarios()
    }
}
