//! `crdt` (docs/nemesis-crdt.md) as a lab workload: 3..7 node processes, each a Troupe cluster
//! node with a `troupe_crdt::Replicator`; clients in the orchestrator increment a GCounter and
//! add to an OR-set at `write_consistency` while the nemesis partitions, kills, pauses and
//! drops; after the final heal the replicas must agree, keep every acknowledged update and
//! show nothing nobody wrote. Its keys ([`config`]), the orchestrator (`sub.rs`; the node
//! process is the shared `nodeset/node.rs`), the checker ([`checker`]), the analysis
//! ([`analysis`]) and the run's outputs (`report.rs`).
//!
//! What the replicator guarantees under a kill: a killed node is started again fresh (its
//! state is lost) as a new incarnation at the same address, with a new replica id; it
//! re-learns the state from its peers by their full-state gossip (every second, to a random
//! reachable member) and their delta resends. An update acknowledged at `majority` is held by
//! a majority of the replicas when it is acknowledged, so it survives any one kill; it can be
//! lost only if every replica that held it loses its state before passing it on. An update
//! acknowledged at `local` is held by one replica only until it spreads, and a kill of that
//! node before then loses it: the checker then reports it, as it should.

pub mod analysis;
pub mod checker;
pub mod config;
mod report;
mod sub;

use std::path::Path;
use std::time::Duration;

use analysis::CrdtAnalysis;
use config::CrdtConfig;
use troupe_lab::config::{Config, Schema};
use troupe_lab::error::Result;
use troupe_lab::events::Event;
use troupe_lab::manifest::Manifest;
use troupe_lab::schedule::FaultAction;
use troupe_lab::workload::{Checker, Conform, Faults, Reports, Spec, System};

/// The crdt workload (registered in [`crate::registry`]).
pub struct Crdt;

impl Spec for Crdt {
    fn name(&self) -> &'static str {
        "crdt"
    }

    fn about(&self) -> &'static str {
        "crdt: GCounter increments and OR-set adds on 3..7 replicator nodes under a nemesis \
         (partition, kill, pause, loss), checked for lost acknowledged updates, phantoms and convergence"
    }

    fn schema(&self) -> &'static Schema {
        &config::SCHEMA
    }

    fn point_keys(&self) -> &'static [&'static str] {
        &["nodes", "write_consistency", "nemesis"]
    }

    fn net_nodes(&self, cfg: &Config) -> std::result::Result<Vec<String>, String> {
        Ok(crate::nodeset::net_nodes(CrdtConfig::from_config(cfg).nodes))
    }

    fn network_layer(&self) -> bool {
        true
    }
}

impl Faults for Crdt {
    fn schedule(&self, cfg: &Config) -> Vec<FaultAction> {
        let c = CrdtConfig::from_config(cfg);
        troupe_lab::nemesis::schedule(cfg, c.nodes, c.duration_s * 1000)
    }
}

impl System for Crdt {
    fn expected_duration(&self, cfg: &Config) -> Duration {
        let c = CrdtConfig::from_config(cfg);
        // Start-up (60 s bound), the window, the convergence bound, and closing.
        Duration::from_secs(90 + c.duration_s + c.converge_limit_s)
    }

    fn roles(&self) -> &'static [&'static str] {
        &["crdt", "crdt-node"]
    }

    fn exec(&self, role: &str) -> Result<i32> {
        sub::exec(role)
    }
}

impl Checker for Crdt {
    type Analysis = CrdtAnalysis;

    fn check(&self, cfg: &Config, events: &[Event], sched: &[FaultAction], _: Option<f64>) -> Self::Analysis {
        CrdtAnalysis::compute(cfg, events, sched)
    }
}

impl Reports for Crdt {
    fn run_outputs(&self, dir: &Path, m: &Manifest, _cfg: &Config, a: &Self::Analysis) -> Result<()> {
        report::write_run_outputs(dir, m, a)
    }
}

/// No behaviour contract of its own: the checker is its contract.
impl Conform for Crdt {}
