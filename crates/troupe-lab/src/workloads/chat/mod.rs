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
mod protocol;
mod sub;
mod system;

use std::path::Path;
use std::time::Duration;

use crate::compare::{CompareFile, FILE as COMPARE_FILE};
use crate::config::{Config, Schema};
use crate::error::{Error, Result};
use crate::events::Event;
use crate::manifest::Manifest;
use crate::schedule::FaultAction;
use crate::sweep::SweepFile;
use crate::workload::{RunAnalysis, Workload};
use analysis::ChatStats;
use config::ChatConfig;
use grid_report::GridRun;

/// The chat workload (registered in [`crate::workloads::ALL`]).
pub struct Chat;

/// Set-up time allowed on top of warm-up and window: 50,000 clients take a while to join on
/// a loaded 2-core machine.
const SETUP_ALLOWANCE: Duration = Duration::from_secs(200);

impl Workload for Chat {
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

    fn expected_duration(&self, cfg: &Config) -> Duration {
        let c = ChatConfig::from_config(cfg);
        Duration::from_secs(c.warmup_s + c.duration_s) + SETUP_ALLOWANCE
    }

    fn schedule(&self, cfg: &Config) -> Vec<FaultAction> {
        schedule::chat_schedule(&ChatConfig::from_config(cfg))
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

    fn roles(&self) -> &'static [&'static str] {
        &["chat", "chat-server", "chat-clients"]
    }

    fn exec(&self, role: &str) -> Result<i32> {
        sub::exec(role)
    }

    fn analyse(&self, cfg: &Config, events: &[Event], sched: &[FaultAction], _: Option<f64>) -> Box<dyn RunAnalysis> {
        Box::new(ChatStats::compute(cfg, events, sched))
    }

    fn write_run_outputs(&self, dir: &Path, m: &Manifest, cfg: &Config, a: &dyn RunAnalysis) -> Result<()> {
        let st = crate::workload::analysis_of::<ChatStats>(a, "chat")?;
        report::write_run_outputs(dir, m, cfg, st)
    }

    fn write_sweep_report(&self, dir: &Path) -> Result<usize> {
        let path = dir.join("sweep.json");
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        let file: SweepFile = serde_json::from_str(&text).map_err(|e| Error::malformed(&path, e.to_string()))?;
        let runs: Vec<GridRun> = file
            .points
            .iter()
            .map(|name| (name, crate::sweep::split_rep(name)))
            .map(|(name, (p, rep))| GridRun {
                // A sweep point is named `<sanitised runtime>_<axes>` (sweep::expand).
                runtime: file
                    .runtimes
                    .iter()
                    .find(|rt| {
                        let rt = crate::sweep::sanitize(rt);
                        p == rt || p.starts_with(&format!("{rt}_"))
                    })
                    .cloned()
                    .unwrap_or_default(),
                point: p.to_string(),
                dir: dir.join("runs").join(name),
                rep,
            })
            .collect();
        grid_report::write_grid(dir, "sweep.csv", "Chat sweep", &runs)?;
        Ok(runs.len())
    }

    fn write_compare_report(&self, dir: &Path) -> Result<Vec<String>> {
        let path = dir.join(COMPARE_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        let file: CompareFile = serde_json::from_str(&text).map_err(|e| Error::malformed(&path, e.to_string()))?;
        let runs: Vec<GridRun> = file
            .run_folders()
            .into_iter()
            .map(|f| GridRun { runtime: f.runtime, point: f.point, dir: dir.join(&f.rel), rep: f.rep })
            .collect();
        grid_report::write_grid(dir, "compare.csv", &format!("Chat: {} side by side", file.runtimes.join(", ")), &runs)
    }
}
