//! The chat fault-tolerance benchmark (workloads.md §2, seed 000 ch. 4-5) as a lab workload:
//! discovery, supervised chats that broadcast, clients that detect failures through monitors
//! and rejoin, one injector per chat. Its keys ([`config`]), its schedule ([`schedule`]), the
//! Troupe system under test in one process or as several node processes (`sub.rs`), its
//! statistics ([`analysis`]) and reports.

pub mod analysis;
pub mod config;
pub mod report;
pub mod schedule;

mod actors;
mod grid_report;
mod nodes;
mod orchestrator;
mod process;
mod protocol;
mod sub;
mod system;

use std::path::Path;
use std::time::Duration;

use analysis::ChatStats;
use config::ChatConfig;
use troupe_lab::config::{Config, Schema};
use troupe_lab::error::Result;
use troupe_lab::events::Event;
use troupe_lab::manifest::Manifest;
use troupe_lab::schedule::FaultAction;
use troupe_lab::workload::{Checker, Conform, Faults, Reports, Spec, System};

/// The chat workload (registered in [`crate::registry`]).
pub struct Chat;

/// Set-up time allowed on top of warm-up and window: 50,000 clients take a while to join on
/// a loaded 2-core machine.
const SETUP_ALLOWANCE: Duration = Duration::from_secs(200);

impl Spec for Chat {
    fn name(&self) -> &'static str {
        "chat"
    }

    fn about(&self) -> &'static str {
        "chat (seed 000): supervised chats broadcasting to clients that detect failures and rejoin"
    }

    fn schema(&self) -> &'static Schema {
        &config::SCHEMA
    }

    fn point_keys(&self) -> &'static [&'static str] {
        &["test_type", "msg_type"]
    }

    fn network_layer(&self) -> bool {
        true
    }

    fn net_nodes(&self, cfg: &Config) -> std::result::Result<Vec<String>, String> {
        let c = ChatConfig::from_config(cfg);
        if !c.distributed {
            return Err(
                "deployment = \"single\" runs the whole system in one OS process; set deployment = \"distributed\" \
                        to fault the traffic between its node processes"
                    .into(),
            );
        }
        Ok(nodes::net_nodes(&c))
    }
}

impl Faults for Chat {
    fn schedule(&self, cfg: &Config) -> Vec<FaultAction> {
        schedule::chat_schedule(&ChatConfig::from_config(cfg))
    }
}

impl System for Chat {
    fn expected_duration(&self, cfg: &Config) -> Duration {
        let c = ChatConfig::from_config(cfg);
        Duration::from_secs(c.warmup_s + c.duration_s) + SETUP_ALLOWANCE
    }

    fn roles(&self) -> &'static [&'static str] {
        &["chat", "chat-server", "chat-clients"]
    }

    fn exec(&self, role: &str) -> Result<i32> {
        sub::exec(role)
    }
}

impl Checker for Chat {
    type Analysis = ChatStats;

    fn check(&self, cfg: &Config, events: &[Event], sched: &[FaultAction], _: Option<f64>) -> Self::Analysis {
        ChatStats::compute(cfg, events, sched)
    }
}

impl Reports for Chat {
    fn run_outputs(&self, dir: &Path, m: &Manifest, cfg: &Config, st: &Self::Analysis) -> Result<()> {
        report::write_run_outputs(dir, m, cfg, st)
    }

    fn sweep_report(&self, dir: &Path) -> Result<usize> {
        let (_, runs) = troupe_lab::report::grid::sweep_runs(dir)?;
        grid_report::write_grid(dir, "sweep.csv", "Chat sweep", &runs)?;
        Ok(runs.len())
    }

    fn compare_report(&self, dir: &Path) -> Result<Vec<String>> {
        let (file, runs) = troupe_lab::report::grid::compare_runs(dir)?;
        grid_report::write_grid(dir, "compare.csv", &format!("Chat: {} side by side", file.runtimes.join(", ")), &runs)
    }
}

/// Role 6: no conformance rules yet (`troupe lab conform` refuses the workload).
impl Conform for Chat {}
