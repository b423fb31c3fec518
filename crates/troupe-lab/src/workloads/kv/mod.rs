//! `kv` (workloads.md §5, seed 004 §6.2) as a lab workload: an echo service and a quorum
//! key-value store (N=3, R=W=2) on a ring of virtual nodes over 3 node processes, driven by
//! `concurrency` clients in the orchestrator process with 1 B .. 8 MiB objects. Troupe's
//! transports (requests, anti-entropy and ring gossip on their own channels, or one connection)
//! run next to the same store on Distributed Erlang (`peers/erlang/kv`). Its keys ([`config`]),
//! the quorum logic ([`quorum`]), the Troupe programs (`sub.rs`, `node.rs`, `client.rs`,
//! `actors.rs`), its statistics ([`analysis`]) and its reports ([`report`]).

pub mod analysis;
pub mod client;
pub mod config;
pub mod quorum;
pub mod report;

mod actors;
mod node;
mod sub;

use std::path::Path;
use std::time::Duration;

use crate::config::{Config, Schema};
use crate::error::Result;
use crate::events::Event;
use crate::manifest::Manifest;
use crate::schedule::FaultAction;
use crate::workload::{RunAnalysis, Workload};
use analysis::KvStats;
use config::KvConfig;

/// The kv workload (registered in [`crate::workloads::ALL`]).
pub struct Kv;

/// A generous time for the measured part (used for deadlines only): set-up, the window, and the
/// last operations' limit.
pub fn expected_window(c: &KvConfig) -> Duration {
    Duration::from_secs(20 + c.duration_s) + client::op_limit(c)
}

impl Workload for Kv {
    fn name(&self) -> &'static str {
        "kv"
    }

    fn about(&self) -> &'static str {
        "kv (seed 004 §6.2): an echo service and a quorum key-value store (N=3, R=W=2) over 3 node \
         processes, throughput and latency per concurrency level, Troupe next to Distributed Erlang"
    }

    fn schema(&self) -> &'static Schema {
        &config::SCHEMA
    }

    fn point_keys(&self) -> &'static [&'static str] {
        &["service", "transport", "concurrency"]
    }

    fn expected_duration(&self, cfg: &Config) -> Duration {
        Duration::from_secs(20) + expected_window(&KvConfig::from_config(cfg))
    }

    fn schedule(&self, _: &Config) -> Vec<FaultAction> {
        Vec::new()
    }

    fn net_nodes(&self, _cfg: &Config) -> std::result::Result<Vec<String>, String> {
        Ok(sub::net_nodes())
    }

    fn roles(&self) -> &'static [&'static str] {
        &["kv", "kv-node"]
    }

    fn exec(&self, role: &str) -> Result<i32> {
        sub::exec(role)
    }

    fn analyse(&self, cfg: &Config, events: &[Event], _: &[FaultAction], _: Option<f64>) -> Box<dyn RunAnalysis> {
        Box::new(KvStats::compute(cfg, events))
    }

    fn write_run_outputs(&self, dir: &Path, m: &Manifest, cfg: &Config, a: &dyn RunAnalysis) -> Result<()> {
        let st = crate::workload::analysis_of::<KvStats>(a, "kv")?;
        report::write_run_outputs(dir, m, cfg, st)
    }

    fn write_sweep_report(&self, dir: &Path) -> Result<usize> {
        report::write_grid(dir, "sweep.csv", "kv sweep").map(|(n, _)| n)
    }

    fn write_compare_report(&self, dir: &Path) -> Result<Vec<String>> {
        report::write_grid(dir, "compare.csv", "kv: Troupe next to Distributed Erlang").map(|(_, lines)| lines)
    }
}
