//! What a workload computed about one run ([`RunAnalysis`]): the core judges the run's status
//! from it and writes `summary.json`, the generic page and the grid tables with it.

use std::any::Any;
use std::fmt::Debug;

use crate::config::Config;

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
}
