//! The `cluster` workload's keys (docs/nemesis-cluster.md) with their quick defaults, ranges
//! and cross-key rules, and the typed view of a validated config.
//!
//! The defaults are a quick run: 5 node processes, keep-majority downing, 10 s, status polled
//! every 200 ms, no nemesis; `troupe lab run cluster` takes well under a minute.

use troupe_lab::config::{Config, CrossIssue, KeySpec, Schema, SEED};
use troupe_lab::nemesis::{NEMESIS, NEMESIS_INTERVAL_MS};
use troupe_lab::{choice_key, int_key};

/// The downing strategies the workload runs.
pub const DOWNINGS: &[&str] = &["off", "keep-majority"];
/// The nemesis kinds this workload carries out.
pub const NEMESIS_KINDS: &[&str] = &["partition", "kill", "pause", "loss"];

/// The cluster schema.
pub static SCHEMA: Schema = Schema { workload: "cluster", keys: KEYS, cross_check };

static KEYS: &[KeySpec] = &[
    int_key!("nodes", 3, 7, 5, "node processes, each a troupe-cluster member"),
    int_key!("duration_s", 1, 3600, 10, "length of the window the nemesis acts in, s"),
    choice_key!(
        "downing",
        DOWNINGS,
        "keep-majority",
        "how a partition is resolved: off (unreachable members stay), keep-majority (the larger side downs \
         the other; a downed node rejoins as a new incarnation)"
    ),
    int_key!("poll_ms", 50, 10_000, 200, "how often every node's membership table is read, ms"),
    int_key!("converge_limit_s", 1, 600, 30, "after the final heal, how long membership may take to converge, s"),
    NEMESIS,
    NEMESIS_INTERVAL_MS,
    SEED,
];

fn cross_check(c: &Config) -> Vec<CrossIssue> {
    troupe_lab::nemesis::cross_check(c, NEMESIS_KINDS)
}

/// A validated cluster config.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterRunConfig {
    /// Node processes.
    pub nodes: u32,
    /// The window, s.
    pub duration_s: u64,
    /// One of [`DOWNINGS`].
    pub downing: String,
    /// The poll period, ms.
    pub poll_ms: u64,
    /// The convergence bound, s.
    pub converge_limit_s: u64,
    /// The `nemesis` value.
    pub nemesis: String,
}

impl ClusterRunConfig {
    /// The typed view of a validated config.
    pub fn from_config(c: &Config) -> ClusterRunConfig {
        ClusterRunConfig {
            nodes: c.int("nodes").clamp(1, 64) as u32,
            duration_s: c.int("duration_s").max(1) as u64,
            downing: c.str("downing").to_string(),
            poll_ms: c.int("poll_ms").max(1) as u64,
            converge_limit_s: c.int("converge_limit_s").max(1) as u64,
            nemesis: c.str(NEMESIS.name).to_string(),
        }
    }

    /// The cluster's downing strategy.
    pub fn downing(&self) -> troupe_cluster::Downing {
        if self.downing == "off" {
            troupe_cluster::Downing::Off
        } else {
            troupe_cluster::Downing::KeepMajority
        }
    }
}
