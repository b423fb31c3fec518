//! The IoT device-report benchmark (workloads.md §3, seed 003 ch. 2.10 and 5) as a lab
//! workload: server processes tracking external devices through `troupe_cluster::devices`,
//! device processes reporting 1..=report_len, a collector polling totals, seeded message drops
//! and delays, device and server kills. Its keys ([`config`]), schedule ([`schedule`]), the
//! Troupe system under test (`sub.rs`: orchestrator, servers, device processes), the collector
//! ([`collector`]), statistics ([`analysis`]) and reports ([`report`], [`grid`]).

pub mod analysis;
pub mod collector;
pub mod config;
mod conform;
pub mod grid;
pub mod report;
pub mod schedule;

mod devices;
mod orchestrator;
mod process;
mod server;
mod sub;

use std::path::Path;
use std::time::Duration;

use analysis::IotStats;
use config::IotConfig;
use troupe_lab::config::{Config, Schema};
use troupe_lab::error::Result;
use troupe_lab::events::Event;
use troupe_lab::manifest::Manifest;
use troupe_lab::report::grid::GridRun;
use troupe_lab::schedule::FaultAction;
use troupe_lab::workload::{Checker, Conform, Faults, Reports, Spec, System};

/// The iot workload (registered in [`crate::registry`]).
pub struct Iot;

/// Set-up time allowed on top of warm-up and window (processes, cluster, first reports).
const SETUP_ALLOWANCE: Duration = Duration::from_secs(120);

impl Spec for Iot {
    fn name(&self) -> &'static str {
        "iot"
    }

    fn about(&self) -> &'static str {
        "iot (seed 003): external devices report to the server the hash ring picks; reports/s and MTTR under drops and kills"
    }

    fn schema(&self) -> &'static Schema {
        &config::SCHEMA
    }

    fn network_layer(&self) -> bool {
        true
    }

    fn net_nodes(&self, cfg: &Config) -> std::result::Result<Vec<String>, String> {
        Ok(process::net_nodes(&IotConfig::from_config(cfg)))
    }
}

impl Faults for Iot {
    fn schedule(&self, cfg: &Config) -> Vec<FaultAction> {
        schedule::iot_schedule(&IotConfig::from_config(cfg))
    }
}

impl System for Iot {
    fn expected_duration(&self, cfg: &Config) -> Duration {
        let c = IotConfig::from_config(cfg);
        Duration::from_secs(c.warmup_s + c.duration_s) + SETUP_ALLOWANCE
    }

    fn roles(&self) -> &'static [&'static str] {
        &["iot", "iot-server", "iot-devices"]
    }

    fn exec(&self, role: &str) -> Result<i32> {
        sub::exec(role)
    }
}

impl Checker for Iot {
    type Analysis = IotStats;

    fn check(&self, cfg: &Config, events: &[Event], sched: &[FaultAction], _: Option<f64>) -> Self::Analysis {
        IotStats::compute(cfg, events, sched)
    }
}

impl Reports for Iot {
    fn run_outputs(&self, dir: &Path, m: &Manifest, cfg: &Config, st: &Self::Analysis) -> Result<()> {
        report::write_run_outputs(dir, m, cfg, st)
    }

    fn sweep_report(&self, dir: &Path) -> Result<usize> {
        // IoT's sweep table names a point by its run folder (repetition included).
        let (_, runs) = troupe_lab::report::grid::sweep_runs(dir)?;
        let runs: Vec<GridRun> = runs.into_iter().map(|r| GridRun { point: r.name.clone(), ..r }).collect();
        grid::write_grid(dir, "sweep.csv", "IoT sweep", &runs)?;
        Ok(runs.len())
    }

    fn compare_report(&self, dir: &Path) -> Result<Vec<String>> {
        let (file, runs) = troupe_lab::report::grid::compare_runs(dir)?;
        grid::write_grid(dir, "compare.csv", &format!("IoT: {} side by side", file.runtimes.join(", ")), &runs)
    }
}

/// Role 6: the behaviour contract of docs/iot.md as checks of a run's trace (`conform.rs`).
impl Conform for Iot {
    fn rules(&self) -> Vec<troupe_lab::conform::Rule> {
        conform::rules()
    }

    fn scenarios(&self) -> Vec<troupe_lab::conform::Scenario> {
        conform::scenarios()
    }
}
