//! SCP, supervised communicating processes (workloads.md §1, seed 001) as a lab workload: its
//! keys ([`config`]), its fault schedule ([`schedule`]), the Troupe system under test
//! (`sub`, with its injector: its own process and node, `injector_process` over `link`, or an
//! actor inside the SUB, `injector`), its statistics ([`analysis`]) and its run, sweep and
//! comparison reports.

pub mod analysis;
pub mod compare_report;
pub mod config;
pub mod conform;
pub mod report;
pub mod restart_latency;
pub mod schedule;
pub mod sweep_report;

mod actors;
mod injector;
mod injector_process;
mod link;
mod sub;

use std::path::Path;
use std::time::Duration;

use crate::SutError;
use analysis::RunStats;
use config::ScpConfig;
use troupe_lab::config::{Config, Schema, Value};
use troupe_lab::error::Result;
use troupe_lab::events::Event;
use troupe_lab::manifest::Manifest;
use troupe_lab::schedule::FaultAction;
use troupe_lab::workload::{Checker, Conform, Faults, Reports, RunAnalysis, Spec, System};

/// The SCP workload (registered in [`crate::registry`]).
pub struct Scp;

impl Spec for Scp {
    fn name(&self) -> &'static str {
        "scp"
    }

    fn about(&self) -> &'static str {
        "SCP (seed 001): supervised server/client pairs exchanging payloads while servers are killed"
    }

    fn schema(&self) -> &'static Schema {
        &config::SCHEMA
    }

    fn canonical(&self, cfg: &Config) -> Config {
        config::canonical(cfg)
    }

    fn baseline_of(&self, cfg: &Config) -> Option<Config> {
        Some(config::baseline_of(cfg))
    }

    fn point_keys(&self) -> &'static [&'static str] {
        &["pattern", "failure_rate"]
    }

    fn recorded_value(&self, key: &str, value: &Value) -> Option<Value> {
        config::recorded_value(key, value)
    }

    fn net_nodes(&self, _: &Config) -> std::result::Result<Vec<String>, String> {
        Err("its servers and clients run in one OS process; the only link is the fault injector's, which \
             must stay exact for the schedule to be carried out"
            .into())
    }
}

impl Faults for Scp {
    fn schedule(&self, cfg: &Config) -> Vec<FaultAction> {
        schedule::scp_schedule(&ScpConfig::from_config(cfg))
    }
}

impl System for Scp {
    fn expected_duration(&self, cfg: &Config) -> Duration {
        Duration::from_secs((cfg.int("warmup_s") + cfg.int("duration_s")) as u64)
    }

    fn roles(&self) -> &'static [&'static str] {
        &["scp", "scp-injector"]
    }

    fn exec(&self, role: &str) -> Result<i32> {
        match role {
            "scp" => sub::exec_from_env(),
            "scp-injector" => injector_process::exec_from_env(),
            other => Err(SutError::Role(format!("scp has no program {other:?}")).into()),
        }
    }
}

impl Checker for Scp {
    type Analysis = RunStats;

    fn check(&self, cfg: &Config, events: &[Event], sched: &[FaultAction], baseline: Option<f64>) -> Self::Analysis {
        RunStats::compute(cfg, events, sched, baseline)
    }
}

impl Reports for Scp {
    fn run_outputs(&self, dir: &Path, m: &Manifest, cfg: &Config, st: &Self::Analysis) -> Result<()> {
        report::write_run_outputs(dir, m, cfg, st)
    }

    fn sweep_report(&self, dir: &Path) -> Result<usize> {
        Ok(sweep_report::write_report(dir)?.len())
    }

    fn compare_report(&self, dir: &Path) -> Result<Vec<String>> {
        compare_report::write_report(dir)?;
        compare_report::table(dir)
    }
}

/// Role 6: the SCP contract as checks of a run's trace ([`conform`]).
impl Conform for Scp {
    fn rules(&self) -> Vec<troupe_lab::conform::Rule> {
        conform::rules()
    }

    fn scenarios(&self) -> Vec<troupe_lab::conform::Scenario> {
        conform::scenarios()
    }
}

/// The SCP statistics inside a [`RunAnalysis`] (an analysis of another workload is an error).
pub fn stats(a: &dyn RunAnalysis) -> Result<&RunStats> {
    let any: &dyn std::any::Any = a;
    any.downcast_ref::<RunStats>().ok_or_else(|| SutError::Analysis("not the analysis of a scp run".into()).into())
}
