//! Pieces the multi-process Troupe programs of several workloads share (chat, iot): what a node
//! process reports in its `run_finished`, and reading the environment its orchestrator set.

use crate::error::{Error, Result};

/// What a process reports in its `run_finished`.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) errors: u64,
    pub(crate) skipped: u64,
    pub(crate) injected: u64,
    pub(crate) interrupted: bool,
    pub(crate) failed_nodes: Vec<String>,
}

/// The environment variable `name` that `workload`'s orchestrator sets for its node processes.
pub(crate) fn env(name: &str, workload: &str) -> Result<String> {
    std::env::var(name).map_err(|_| {
        Error::other(format!(
            "{name} is not set; {workload} node processes are started by `troupe lab exec {workload}`"
        ))
    })
}
