//! The unit of the lab: a [`Workload`] is one benchmark (SCP, chat, ...) packaged as a plug-in.
//! The lab core owns what every workload shares (config layering and validation, seeds, run
//! folders, manifest, event writing and collection, sweep grids, comparisons across runtimes,
//! report assembly, progress, Ctrl-C); a workload owns only what is its own: its keys, its
//! fault schedule, its Troupe system under test, and its statistics, tables and plots.
//!
//! Rules:
//! 1. A workload is registered once, in [`crate::workloads::ALL`]; every command finds it by
//!    name there (`troupe lab run|sweep|compare|config <name>`) and its Troupe programs by role
//!    (`troupe lab exec <role>`).
//! 2. A config is parsed and validated once per run, against [`Workload::schema`], into a
//!    [`Config`]; the workload's typed view is built from that value and never re-parsed.
//! 3. The schedule is a pure function of the config (seed included): [`Workload::schedule`].
//! 4. Everything a run reports is computed from its recorded files (events, schedule,
//!    manifest) by [`Workload::analyse`], so `troupe lab report DIR` can rebuild it at any time.
//! 5. Every run folder gets `summary.json`: [`RunAnalysis::summary_json`], written by the core.
//! 6. A run whose events are complete is `ok` only when [`RunAnalysis::degradations`] is
//!    empty; otherwise it is `degraded`, and the lines say what it failed to do. A run is never
//!    made to look better by leaving out what did not recover.
//!
//! Adding a workload: `docs/lab.md`, "Adding a workload".

use std::any::Any;
use std::fmt::Debug;
use std::path::Path;
use std::time::Duration;

use crate::config::{Config, Schema};
use crate::error::Result;
use crate::events::Event;
use crate::manifest::Manifest;
use crate::schedule::FaultAction;

/// A benchmark of the lab (rule 1).
pub trait Workload: Sync + 'static {
    /// The name users type: `scp`, `chat`.
    fn name(&self) -> &'static str;

    /// One line saying what it measures (shown by `troupe lab config`).
    fn about(&self) -> &'static str;

    /// Its keys, defaults, ranges and cross-key rules.
    fn schema(&self) -> &'static Schema;

    /// The canonical form of a config, so points of a grid that run identically compare equal
    /// (SCP: every fault-free pattern is one run). The default is the config itself.
    fn canonical(&self, cfg: &Config) -> Config {
        cfg.clone()
    }

    /// In a comparison, the fault-free run a point is normalised against, if the workload
    /// normalises (SCP does; `None` otherwise).
    fn baseline_of(&self, _cfg: &Config) -> Option<Config> {
        None
    }

    /// Keys that always appear in a comparison point's name, besides the grid's axes.
    fn point_keys(&self) -> &'static [&'static str] {
        &[]
    }

    /// How long the system under test is expected to run (set-up, warm-up and window); the
    /// lab adds its slack to this before it treats a run as hung.
    fn expected_duration(&self, cfg: &Config) -> Duration;

    /// The fault schedule (rule 3); the core merges the `[net_faults]` lines into it
    /// ([`crate::netfaults::merge`]).
    fn schedule(&self, cfg: &Config) -> Vec<FaultAction>;

    /// The node processes of its Troupe system under test for `cfg`, by index, as
    /// `[net_faults]` partitions name them (`server-0`, `devices-1`, ...); or why the workload
    /// cannot apply network faults with this config. The default: it runs in one OS process.
    fn net_nodes(&self, _cfg: &Config) -> std::result::Result<Vec<String>, String> {
        Err("its Troupe system under test runs in one OS process, so there is no inter-node traffic to fault".into())
    }

    /// The `troupe lab exec <role>` programs of its Troupe system under test; the first is
    /// the one `troupe lab run` starts.
    fn roles(&self) -> &'static [&'static str];

    /// Runs one of [`Workload::roles`] from the environment contract; the process exit code.
    fn exec(&self, role: &str) -> Result<i32>;

    /// The statistics of a run from its events and schedule (rule 4). `baseline` is the
    /// throughput of the same point without faults when the caller knows it (sweeps).
    fn analyse(
        &self,
        cfg: &Config,
        events: &[Event],
        sched: &[FaultAction],
        baseline: Option<f64>,
    ) -> Box<dyn RunAnalysis>;

    /// Writes the run's CSV tables, plots and `report.html` into `dir`.
    fn write_run_outputs(&self, dir: &Path, m: &Manifest, cfg: &Config, a: &dyn RunAnalysis) -> Result<()>;

    /// Writes a sweep folder's report (`sweep.csv`, plots, `report.html`); the number of runs.
    fn write_sweep_report(&self, dir: &Path) -> Result<usize>;

    /// Writes a comparison folder's report; the side-by-side table as text lines.
    fn write_compare_report(&self, dir: &Path) -> Result<Vec<String>>;
}

/// What a workload computed about one run.
pub trait RunAnalysis: Any + Debug + Send + Sync {
    /// Why the recorded events are not a complete run, if they are not.
    fn completeness_problem(&self, cfg: &Config) -> Option<String>;

    /// What the run failed to do although its events are complete: faults planned but not
    /// carried out, clients or devices that never recovered, detections missing, errors the
    /// runtime reported. Each non-empty line makes a complete run `degraded` (not `ok`), in
    /// the manifest, `summary.json` (`degraded`) and every table. The default: nothing.
    fn degradations(&self, _cfg: &Config) -> Vec<String> {
        Vec::new()
    }

    /// The lines `troupe lab run` prints and the report shows: (what, value).
    fn summary_rows(&self) -> Vec<(String, String)>;

    /// The run's statistics as one JSON object, written to `summary.json` (rule 5).
    fn summary_json(&self) -> serde_json::Value;

    /// A short line for progress output, e.g. `mean 5110.2/s (99.8% of ceiling)`.
    fn headline(&self) -> String;

    /// For the workload's own code to get its concrete type back.
    fn as_any(&self) -> &dyn Any;
}

/// A workload's own analysis type back from the core's `dyn RunAnalysis` (what every
/// `write_run_outputs` starts with); an error naming the workload if it is another's.
pub fn analysis_of<'a, T: RunAnalysis>(a: &'a dyn RunAnalysis, workload: &str) -> Result<&'a T> {
    a.as_any()
        .downcast_ref::<T>()
        .ok_or_else(|| crate::error::Error::other(format!("not the analysis of a {workload} run")))
}
