//! The `crdt` workload's keys (docs/nemesis-crdt.md) with their quick defaults, ranges and
//! cross-key rules, and the typed view of a validated config.
//!
//! The defaults are a quick run: 3 node processes, 4 clients, 10 s at `majority`, no
//! nemesis; `troupe lab run crdt` takes well under a minute.

use troupe_lab::config::{Config, CrossIssue, KeySpec, Schema, SEED};
use troupe_lab::nemesis::{NEMESIS, NEMESIS_INTERVAL_MS};
use troupe_lab::{choice_key, int_key};

/// The consistency levels of the clients' updates.
pub const LEVELS: &[&str] = &["local", "majority", "all"];
/// The nemesis kinds this workload carries out.
pub const NEMESIS_KINDS: &[&str] = &["partition", "kill", "pause", "loss"];

/// The crdt schema.
pub static SCHEMA: Schema = Schema { workload: "crdt", keys: KEYS, cross_check };

static KEYS: &[KeySpec] = &[
    int_key!("nodes", 3, 7, 3, "node processes, each a cluster node with a replicator"),
    int_key!("concurrency", 1, 64, 4, "clients, each with one update outstanding at a time"),
    int_key!("duration_s", 1, 3600, 10, "length of the window the clients update in, s"),
    choice_key!(
        "write_consistency",
        LEVELS,
        "majority",
        "the level every update waits for: local (this node), majority (N/2+1 replicas), all"
    ),
    int_key!(
        "op_timeout_ms",
        100,
        30_000,
        1_000,
        "how long an update waits for its level before it is indeterminate, ms"
    ),
    int_key!("add_pct", 0, 100, 50, "percent of the updates that are OR-set adds (the rest are counter increments)"),
    int_key!("converge_limit_s", 1, 600, 30, "after the final heal, how long the replicas may take to agree, s"),
    NEMESIS,
    NEMESIS_INTERVAL_MS,
    SEED,
];

fn cross_check(c: &Config) -> Vec<CrossIssue> {
    troupe_lab::nemesis::cross_check(c, NEMESIS_KINDS)
}

/// A validated crdt config.
#[derive(Debug, Clone, PartialEq)]
pub struct CrdtConfig {
    /// Node processes.
    pub nodes: u32,
    /// Clients.
    pub concurrency: u64,
    /// The window, s.
    pub duration_s: u64,
    /// One of [`LEVELS`].
    pub write_consistency: String,
    /// An update's level timeout, ms.
    pub op_timeout_ms: u64,
    /// Percent adds.
    pub add_pct: u64,
    /// The convergence bound, s.
    pub converge_limit_s: u64,
    /// The `nemesis` value.
    pub nemesis: String,
    /// The run's seed.
    pub seed: u64,
}

impl CrdtConfig {
    /// The typed view of a validated config.
    pub fn from_config(c: &Config) -> CrdtConfig {
        CrdtConfig {
            nodes: c.int("nodes").clamp(1, 64) as u32,
            concurrency: c.int("concurrency").max(1) as u64,
            duration_s: c.int("duration_s").max(1) as u64,
            write_consistency: c.str("write_consistency").to_string(),
            op_timeout_ms: c.int("op_timeout_ms").max(1) as u64,
            add_pct: c.int("add_pct").clamp(0, 100) as u64,
            converge_limit_s: c.int("converge_limit_s").max(1) as u64,
            nemesis: c.str(NEMESIS.name).to_string(),
            seed: c.int("seed").max(0) as u64,
        }
    }
}
