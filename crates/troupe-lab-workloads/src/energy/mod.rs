//! The energy benchmark (workloads.md §4, seed 002 ch. 3-5) as a lab workload: four programs
//! (`prime`, `ping_pong`, `ping_pong_lb`, `ping_pong_lb_prime`), each native or distributed,
//! run for `reps` repetitions in one child process; the lab's meter (`troupe_lab::meter`) turns each
//! repetition's `work` interval into an `energy` event. Its keys ([`config`]), the Troupe
//! programs (`sub.rs`, `actors.rs`), its statistics ([`analysis`]), the seed's rows and
//! post-processing ([`post`]) and its reports.

pub mod analysis;
pub mod config;
mod conform;
pub mod post;
pub mod primes;

mod actors;
pub mod grid;
pub mod report;
mod sub;

use std::path::Path;
use std::time::Duration;

use analysis::EnergyStats;
use config::EnergyConfig;
use troupe_lab::config::{Config, Schema};
use troupe_lab::error::Result;
use troupe_lab::events::Event;
use troupe_lab::manifest::Manifest;
use troupe_lab::schedule::FaultAction;
use troupe_lab::workload::{Checker, Conform, Faults, Reports, Spec, System};

/// The energy workload (registered in [`crate::registry`]).
pub struct Energy;

/// A generous time for one repetition on a slow runtime (used for deadlines only): set-up,
/// 20 µs per round trip in one process and 1 ms across processes (seed 002's distributed CAF
/// ran at about 0.25 ms), and 200 ns per trial division for the primes.
pub fn expected_rep(c: &EnergyConfig) -> Duration {
    let range = c.range as f64;
    // Trial divisions to count the primes <= range: about pi(range) x sqrt(range).
    let divisions = range.powf(1.5) / range.ln().max(1.0);
    let prime_s = divisions * 200e-9;
    let per_trip = if c.distributed { 1e-3 } else { 20e-6 };
    let secs = match c.workload.as_str() {
        "prime" => prime_s,
        "ping_pong_lb_prime" => c.round_trips() as f64 * (per_trip + prime_s),
        _ => c.round_trips() as f64 * per_trip,
    };
    Duration::from_secs_f64(2.0 + secs.min(1e7))
}

impl Spec for Energy {
    fn name(&self) -> &'static str {
        "energy"
    }

    fn about(&self) -> &'static str {
        "energy (seed 002): joules and time of prime counting and ping-pong, native and distributed"
    }

    fn schema(&self) -> &'static Schema {
        &config::SCHEMA
    }

    fn point_keys(&self) -> &'static [&'static str] {
        &["workload", "mode"]
    }

    fn net_nodes(&self, cfg: &Config) -> std::result::Result<Vec<String>, String> {
        Err(if EnergyConfig::from_config(cfg).distributed {
            "network faults are not wired into its distributed mode (it measures the energy of fault-free work)"
        } else {
            "mode = \"native\" runs in one OS process, so there is no inter-node traffic to fault"
        }
        .into())
    }
}

impl Faults for Energy {
    fn schedule(&self, _: &Config) -> Vec<FaultAction> {
        Vec::new()
    }
}

impl System for Energy {
    fn expected_duration(&self, cfg: &Config) -> Duration {
        let c = EnergyConfig::from_config(cfg);
        Duration::from_secs(20) + expected_rep(&c) * c.reps as u32
    }

    fn roles(&self) -> &'static [&'static str] {
        &["energy", "energy-node"]
    }

    fn exec(&self, role: &str) -> Result<i32> {
        sub::exec(role)
    }
}

impl Checker for Energy {
    type Analysis = EnergyStats;

    fn check(&self, cfg: &Config, events: &[Event], _: &[FaultAction], _: Option<f64>) -> Self::Analysis {
        EnergyStats::compute(cfg, events)
    }
}

impl Reports for Energy {
    fn run_outputs(&self, dir: &Path, m: &Manifest, cfg: &Config, st: &Self::Analysis) -> Result<()> {
        report::write_run_outputs(dir, m, cfg, st)
    }

    fn sweep_report(&self, dir: &Path) -> Result<usize> {
        grid::write_grid(dir, "sweep.csv", "Energy sweep")?;
        let n =
            std::fs::read_to_string(dir.join("sweep.csv")).map(|t| t.lines().count().saturating_sub(1)).unwrap_or(0);
        Ok(n)
    }

    fn compare_report(&self, dir: &Path) -> Result<Vec<String>> {
        grid::write_grid(dir, "compare.csv", "Energy: runtimes side by side")
    }
}

/// Role 6: the behaviour contract of docs/energy.md as checks of a run's trace (`conform.rs`).
impl Conform for Energy {
    fn rules(&self) -> Vec<troupe_lab::conform::Rule> {
        conform::rules()
    }

    fn scenarios(&self) -> Vec<troupe_lab::conform::Scenario> {
        conform::scenarios()
    }
}
