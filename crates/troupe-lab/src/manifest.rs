//! `manifest.json`: what a run was (workload, config, seed, runtime and version), where and
//! when it ran (machine, git commit, start and end), and how it ended (status, reason,
//! interrupted). Written when the run starts and rewritten when it ends.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};
use crate::machine::{CpuTimes, Load, Machine};

/// The manifest's file name in a run folder.
pub const FILE: &str = "manifest.json";

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Still running (or the lab itself died).
    Running,
    /// Completed with a full set of events.
    Ok,
    /// Crashed, hung, wrote malformed events, or was interrupted.
    Failed,
    /// Completed with a full set of events, but its statistics count failures the runtime did
    /// not recover from (faults not carried out, clients never rejoined, devices never
    /// recovered, errors reported): `reason` lists them. Its figures are published with them.
    Degraded,
}

impl Status {
    /// Whether the run completed with a full set of events (`ok` or `degraded`): its
    /// statistics are complete and belong in tables, means and plots.
    pub fn completed(self) -> bool {
        matches!(self, Status::Ok | Status::Degraded)
    }
}

/// A run folder's manifest.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    /// Manifest format version.
    pub format: u32,
    /// The run id given to the child in `TROUPE_RUN_ID`.
    pub run_id: String,
    /// Workload name.
    pub workload: String,
    /// Runtime name.
    pub runtime: String,
    /// Runtime version (for peers, from their `run_started` event when they send one, else
    /// from probing the toolchain).
    pub runtime_version: String,
    /// Settings the runtime ran with (VM flags, threads), one line each.
    #[serde(default)]
    pub settings: Vec<String>,
    /// Version of the lab that ran it.
    pub lab_version: String,
    /// The resolved config.
    pub config: serde_json::Value,
    /// The seed.
    pub seed: u64,
    /// The machine.
    pub machine: Machine,
    /// Git commit of the project, if it is a repository.
    pub git_commit: Option<String>,
    /// Whether the working tree had uncommitted changes.
    pub git_dirty: Option<bool>,
    /// The command line of the lab.
    pub command: Vec<String>,
    /// Start, RFC 3339 UTC.
    pub started_at: String,
    /// End, RFC 3339 UTC.
    pub ended_at: Option<String>,
    /// Whether Ctrl-C stopped it.
    pub interrupted: bool,
    /// How it ended.
    pub status: Status,
    /// Why it failed.
    pub reason: Option<String>,
    /// `/proc/loadavg` when the run started (the machine may be shared).
    #[serde(default)]
    pub loadavg_start: Option<String>,
    /// `/proc/loadavg` when the run ended.
    #[serde(default)]
    pub loadavg_end: Option<String>,
    /// `/proc/stat`'s CPU counters when the run started.
    #[serde(default)]
    pub cpu_start: Option<CpuTimes>,
    /// The core-to-core round trip when the run started, ns (`machine::core_round_trip_ns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_rtt_start_ns: Option<u32>,
    /// The machine's load over the run (load averages, busy and stolen CPU share), written
    /// when it ends.
    #[serde(default)]
    pub load: Option<Load>,
}

impl Manifest {
    /// Writes the manifest into `dir` (via a temporary file and a rename).
    pub fn write(&self, dir: &Path) -> Result<()> {
        let path = dir.join(FILE);
        let tmp = dir.join(".manifest.json.tmp");
        let text =
            serde_json::to_string_pretty(self).map_err(|e| Error::other(format!("cannot encode the manifest: {e}")))?;
        std::fs::write(&tmp, text + "\n").map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))
    }

    /// Reads `dir/manifest.json`; a folder without one is [`ErrorKind::NotARun`].
    pub fn read(dir: &Path) -> Result<Manifest> {
        let path = dir.join(FILE);
        if !path.is_file() {
            return Err(Error::new(ErrorKind::NotARun(dir.to_path_buf())));
        }
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        serde_json::from_str(&text).map_err(|e| Error::malformed(&path, e.to_string()))
    }
}
