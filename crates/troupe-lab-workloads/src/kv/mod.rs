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
mod conform;
pub mod quorum;
pub mod report;

mod actors;
pub mod check;
mod node;
mod settle;
mod sub;

use std::path::Path;
use std::time::Duration;

use analysis::KvStats;
use config::KvConfig;
use troupe_lab::config::{Config, Schema};
use troupe_lab::error::Result;
use troupe_lab::events::Event;
use troupe_lab::manifest::Manifest;
use troupe_lab::schedule::FaultAction;
use troupe_lab::workload::{Checker, Conform, Faults, Reports, Spec, System};

/// The kv workload (registered in [`crate::registry`]).
pub struct Kv;

/// A generous time for the measured part (used for deadlines only): set-up, the window, and the
/// last operations' limit.
pub fn expected_window(c: &KvConfig) -> Duration {
    Duration::from_secs(20 + c.duration_s) + client::op_limit(c)
}

impl Spec for Kv {
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

    fn net_nodes(&self, _cfg: &Config) -> std::result::Result<Vec<String>, String> {
        Ok(node::net_nodes())
    }

    fn network_layer(&self) -> bool {
        true
    }
}

/// The kv workload's own faults are its nemesis's (docs/kv.md "Nemesis runs"), over the window.
impl Faults for Kv {
    fn schedule(&self, cfg: &Config) -> Vec<FaultAction> {
        let c = KvConfig::from_config(cfg);
        troupe_lab::nemesis::schedule(cfg, config::NODES as u32, c.duration_s * 1000)
    }
}

impl System for Kv {
    fn expected_duration(&self, cfg: &Config) -> Duration {
        Duration::from_secs(20) + expected_window(&KvConfig::from_config(cfg))
    }

    fn roles(&self) -> &'static [&'static str] {
        &["kv", "kv-node"]
    }

    fn exec(&self, role: &str) -> Result<i32> {
        sub::exec(role)
    }
}

impl Checker for Kv {
    type Analysis = KvStats;

    fn check(&self, cfg: &Config, events: &[Event], actions: &[FaultAction], _: Option<f64>) -> Self::Analysis {
        KvStats::compute_with(cfg, events, actions)
    }
}

impl Reports for Kv {
    fn run_outputs(&self, dir: &Path, m: &Manifest, cfg: &Config, st: &Self::Analysis) -> Result<()> {
        report::write_run_outputs(dir, m, cfg, st)
    }

    fn sweep_report(&self, dir: &Path) -> Result<usize> {
        report::write_grid(dir, "sweep.csv", "kv sweep").map(|(n, _)| n)
    }

    fn compare_report(&self, dir: &Path) -> Result<Vec<String>> {
        report::write_grid(dir, "compare.csv", "kv: Troupe next to Distributed Erlang").map(|(_, lines)| lines)
    }
}

/// Role 6: the behaviour contract of docs/kv.md as checks of a run's trace (`conform.rs`).
impl Conform for Kv {
    fn rules(&self) -> Vec<troupe_lab::conform::Rule> {
        conform::rules()
    }

    fn scenarios(&self) -> Vec<troupe_lab::conform::Scenario> {
        conform::scenarios()
    }
}
