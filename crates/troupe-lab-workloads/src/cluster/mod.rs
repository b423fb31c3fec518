//! `cluster` (docs/nemesis-cluster.md) as a lab workload: 3..7 node processes forming a
//! troupe-cluster cluster (fast failure detector, `downing` off or keep-majority, a downed
//! node rejoining as a new incarnation), every node's membership table polled while the
//! nemesis partitions, kills, pauses and drops; after the final heal membership must converge
//! to one cluster of every node, and no two nodes with the same table may report different
//! leaders. Its keys ([`config`]), the orchestrator (`sub.rs`; the node process is the shared
//! `nodeset/node.rs`), the checker ([`checker`]), the analysis ([`analysis`]) and the run's
//! outputs (`report.rs`).

pub mod analysis;
pub mod checker;
pub mod config;
mod report;
mod sub;

use std::path::Path;
use std::time::Duration;

use analysis::ClusterAnalysis;
use config::ClusterRunConfig;
use troupe_lab::config::{Config, Schema};
use troupe_lab::error::Result;
use troupe_lab::events::Event;
use troupe_lab::manifest::Manifest;
use troupe_lab::schedule::FaultAction;
use troupe_lab::workload::{Checker, Conform, Faults, Reports, Spec, System};

/// The cluster workload (registered in [`crate::registry`]).
pub struct ClusterWorkload;

impl Spec for ClusterWorkload {
    fn name(&self) -> &'static str {
        "cluster"
    }

    fn about(&self) -> &'static str {
        "cluster: troupe-cluster membership of 3..7 node processes under a nemesis (partition, kill, pause, \
         loss), checked for convergence after the heal, one leader per view and no surviving split brain"
    }

    fn schema(&self) -> &'static Schema {
        &config::SCHEMA
    }

    fn point_keys(&self) -> &'static [&'static str] {
        &["nodes", "downing", "nemesis"]
    }

    fn net_nodes(&self, cfg: &Config) -> std::result::Result<Vec<String>, String> {
        Ok(crate::nodeset::net_nodes(ClusterRunConfig::from_config(cfg).nodes))
    }

    fn network_layer(&self) -> bool {
        true
    }
}

impl Faults for ClusterWorkload {
    fn schedule(&self, cfg: &Config) -> Vec<FaultAction> {
        let c = ClusterRunConfig::from_config(cfg);
        troupe_lab::nemesis::schedule(cfg, c.nodes, c.duration_s * 1000)
    }
}

impl System for ClusterWorkload {
    fn expected_duration(&self, cfg: &Config) -> Duration {
        let c = ClusterRunConfig::from_config(cfg);
        Duration::from_secs(90 + c.duration_s + c.converge_limit_s)
    }

    fn roles(&self) -> &'static [&'static str] {
        &["cluster", "cluster-node"]
    }

    fn exec(&self, role: &str) -> Result<i32> {
        sub::exec(role)
    }
}

impl Checker for ClusterWorkload {
    type Analysis = ClusterAnalysis;

    fn check(&self, cfg: &Config, events: &[Event], sched: &[FaultAction], _: Option<f64>) -> Self::Analysis {
        ClusterAnalysis::compute(cfg, events, sched)
    }
}

impl Reports for ClusterWorkload {
    fn run_outputs(&self, dir: &Path, m: &Manifest, _cfg: &Config, a: &Self::Analysis) -> Result<()> {
        report::write_run_outputs(dir, m, a)
    }
}

/// No behaviour contract of its own: the checker is its contract.
impl Conform for ClusterWorkload {}
