//! The IoT device-report benchmark (workloads.md §3, seed 003 ch. 2.10 and 5) as a lab
//! workload: server processes tracking external devices through `troupe_cluster::devices`,
//! device processes reporting 1..=report_len, a collector polling totals, seeded message drops
//! and delays, device and server kills. Its keys ([`config`]), schedule ([`schedule`]), the
//! Troupe system under test (`sub.rs`: orchestrator, servers, device processes), the collector
//! ([`collector`]), statistics ([`analysis`]) and reports ([`report`], [`grid`]).

pub mod analysis;
pub mod collector;
pub mod config;
pub mod grid;
pub mod report;
pub mod schedule;

mod devices;
mod orchestrator;
mod server;
mod sub;

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
use analysis::IotStats;
use config::IotConfig;
use grid::GridRun;

/// The iot workload (registered in [`crate::workloads::ALL`]).
pub struct Iot;

/// Set-up time allowed on top of warm-up and window (processes, cluster, first reports).
const SETUP_ALLOWANCE: Duration = Duration::from_secs(120);

impl Workload for Iot {
    fn name(&self) -> &'static str {
        "iot"
    }

    fn about(&self) -> &'static str {
        "iot (seed 003): external devices report to the server the hash ring picks; reports/s and MTTR under drops and kills"
    }

    fn schema(&self) -> &'static Schema {
        &config::SCHEMA
    }

    fn expected_duration(&self, cfg: &Config) -> Duration {
        let c = IotConfig::from_config(cfg);
        Duration::from_secs(c.warmup_s + c.duration_s) + SETUP_ALLOWANCE
    }

    fn schedule(&self, cfg: &Config) -> Vec<FaultAction> {
        schedule::iot_schedule(&IotConfig::from_config(cfg))
    }

    fn net_nodes(&self, cfg: &Config) -> std::result::Result<Vec<String>, String> {
        Ok(sub::net_nodes(&IotConfig::from_config(cfg)))
    }

    fn roles(&self) -> &'static [&'static str] {
        &["iot", "iot-server", "iot-devices"]
    }

    fn exec(&self, role: &str) -> Result<i32> {
        sub::exec(role)
    }

    fn analyse(&self, cfg: &Config, events: &[Event], sched: &[FaultAction], _: Option<f64>) -> Box<dyn RunAnalysis> {
        Box::new(IotStats::compute(cfg, events, sched))
    }

    fn write_run_outputs(&self, dir: &Path, m: &Manifest, cfg: &Config, a: &dyn RunAnalysis) -> Result<()> {
        let st = crate::workload::analysis_of::<IotStats>(a, "iot")?;
        report::write_run_outputs(dir, m, cfg, st)
    }

    fn write_sweep_report(&self, dir: &Path) -> Result<usize> {
        let path = dir.join("sweep.json");
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        let file: SweepFile = serde_json::from_str(&text).map_err(|e| Error::malformed(&path, e.to_string()))?;
        let runs: Vec<GridRun> = file
            .points
            .iter()
            .map(|p| GridRun {
                // A sweep point is named `<sanitised runtime>_<axes>` (sweep::expand).
                runtime: file
                    .runtimes
                    .iter()
                    .find(|rt| {
                        let rt = crate::sweep::sanitize(rt);
                        p == &rt || p.starts_with(&format!("{rt}_"))
                    })
                    .cloned()
                    .unwrap_or_default(),
                point: p.clone(),
                dir: dir.join("runs").join(p),
            })
            .collect();
        grid::write_grid(dir, "sweep.csv", "IoT sweep", &runs)?;
        Ok(runs.len())
    }

    fn write_compare_report(&self, dir: &Path) -> Result<Vec<String>> {
        let path = dir.join(COMPARE_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        let file: CompareFile = serde_json::from_str(&text).map_err(|e| Error::malformed(&path, e.to_string()))?;
        let mut runs = Vec::new();
        for p in &file.points {
            for rt in &file.runtimes {
                runs.push(GridRun { runtime: rt.clone(), point: p.clone(), dir: dir.join(rt).join(p) });
            }
        }
        grid::write_grid(dir, "compare.csv", &format!("IoT: {} side by side", file.runtimes.join(", ")), &runs)
    }
}
