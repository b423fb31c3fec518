//! Fault schedules (events.md, "The fault schedule"): one [`FaultAction`] per line of
//! `schedule.jsonl`. Each workload computes its schedule as a pure function of (config, seed)
//! from one seeded PRNG, so the same config gives the same file byte for byte and every runtime
//! in a comparison suffers the same faults at the same offsets; this module owns the format.
//! Network faults (`net_faults`, [`crate::netfaults`]) add `drop`, `delay` and `partition`
//! lines with optional parameter fields, left out of every other line, so a schedule without
//! network faults is byte for byte what it was before they existed.

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One planned fault (one line of `schedule.jsonl`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultAction {
    /// Offset from the start of the measurement window, ms.
    pub at_ms: u64,
    /// Identifier, echoed in `fault_injected`.
    pub id: String,
    /// What to do: `kill`, `error`, `cpu`, `ram`, ... (events.md `fault_injected.kind`).
    pub kind: String,
    /// The supervisor (SCP), chat (chat) or server/device index the action targets.
    pub group: u32,
    /// The child index inside the group.
    pub slot: u32,
    /// `false` for permanent (progressive) kills.
    pub restart: bool,
    /// `drop` lines: the probability, in percent, that an inter-node frame is dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop_pct: Option<f64>,
    /// `delay` lines: the extra one-way delay per frame, uniform in `[min, max]` ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<[u64; 2]>,
    /// `partition` lines: how long the cut lasts; it heals at `at_ms + duration_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// `partition` lines: every node index on the cut-off side (`group` is one of them); the
    /// side's nodes still reach each other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<u32>>,
    /// `partition` lines of a bridge (the nemesis's): nodes outside the side that stay
    /// connected to it and to the rest, so only the side and the rest are cut from each other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bridge: Option<Vec<u32>>,
}

/// Renders a schedule as JSON Lines.
pub fn to_jsonl(actions: &[FaultAction]) -> String {
    let mut s = String::with_capacity(actions.len() * 80);
    for a in actions {
        // Serialising a plain struct of strings and integers cannot fail.
        s.push_str(&serde_json::to_string(a).unwrap_or_default());
        s.push('\n');
    }
    s
}

/// The schedule a workload's program was started with: the file `TROUPE_SCHEDULE` names, or
/// none when it is not set (a program started by hand).
pub fn from_env() -> Result<Vec<FaultAction>> {
    match std::env::var_os("TROUPE_SCHEDULE") {
        Some(path) => read(Path::new(&path)),
        None => Ok(Vec::new()),
    }
}

/// Writes a schedule file.
pub fn write(path: &Path, actions: &[FaultAction]) -> Result<()> {
    let mut f = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
    f.write_all(to_jsonl(actions).as_bytes()).map_err(|e| Error::io(path, e))
}

/// Reads a schedule file, failing on the first malformed line.
pub fn read(path: &Path) -> Result<Vec<FaultAction>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| serde_json::from_str(l).map_err(|e| Error::malformed(path, format!("line {}: {e}", n + 1))))
        .collect()
}
