//! The `overlay-scale` workload's keys (workloads.md §5 "Overlay scale", seed 004 §6.3) with
//! their embedded defaults, ranges and cross-key rules, and the typed view of a validated
//! config. A HyParView view size of 0 and an unknown overlay are refused here, naming the key
//! and the allowed values, before anything runs.

use troupe_cluster::overlay::hyparview::HyParViewConfig;
use troupe_cluster::overlay::sim::OverlaySimConfig;
use troupe_cluster::overlay::OverlayKind;

use troupe_lab::config::{Config, CrossIssue, KeyKind, KeySpec, Schema, Value, SEED};
use troupe_lab::error::ConfigIssue;

/// The overlays the simulation runs (the values of `overlay`).
pub const OVERLAYS: &[&str] = &["full_mesh", "client_server", "hyparview"];

/// The `overlay-scale` schema.
pub static SCHEMA: Schema = Schema { workload: "overlay-scale", keys: KEYS, cross_check };

static KEYS: &[KeySpec] = &[
    KeySpec {
        name: "overlay",
        kind: KeyKind::Choice(OVERLAYS),
        default: || Value::Str("hyparview".into()),
        doc: "full_mesh (every node talks to every other, Distributed Erlang's shape), client_server \
              (node 0 is the server; clients talk only to it) or hyparview (HyParView membership, \
              nodes talk to their active view)",
    },
    KeySpec {
        name: "nodes",
        kind: KeyKind::Int { min: 2, max: 4096 },
        default: || Value::Int(64),
        doc: "simulated nodes (seed 004 §6.3 measures 32..1024)",
    },
    KeySpec {
        name: "period_ms",
        kind: KeyKind::Int { min: 10, max: 600_000 },
        default: || Value::Int(5000),
        doc: "every node sends its full counter state to its neighbours every period_ms (simulated)",
    },
    KeySpec {
        name: "duration_s",
        kind: KeyKind::Int { min: 1, max: 3600 },
        default: || Value::Int(60),
        doc: "simulated time the counter runs after the overlay formed, s",
    },
    KeySpec {
        name: "active_view",
        kind: KeyKind::Int { min: 1, max: 64 },
        default: || Value::Int(5),
        doc: "HyParView active view size (hyparview only; 0 is refused)",
    },
    KeySpec {
        name: "passive_view",
        kind: KeyKind::Int { min: 1, max: 1024 },
        default: || Value::Int(30),
        doc: "HyParView passive view size (hyparview only)",
    },
    KeySpec {
        name: "latency_min_ms",
        kind: KeyKind::Int { min: 0, max: 10_000 },
        default: || Value::Int(1),
        doc: "smallest one-way link latency of the simulated network, ms",
    },
    KeySpec {
        name: "latency_max_ms",
        kind: KeyKind::Int { min: 0, max: 10_000 },
        default: || Value::Int(5),
        doc: "largest one-way link latency of the simulated network, ms",
    },
    KeySpec {
        name: "join_gap_ms",
        kind: KeyKind::Int { min: 0, max: 10_000 },
        default: || Value::Int(10),
        doc: "simulated time between two HyParView joins, ms",
    },
    SEED,
];

fn cross_check(c: &Config) -> Vec<CrossIssue> {
    let mut out = Vec::new();
    let (lo, hi) = (c.int("latency_min_ms"), c.int("latency_max_ms"));
    if lo > hi {
        out.push((
            vec!["latency_min_ms", "latency_max_ms"],
            ConfigIssue {
                key: "latency_min_ms+latency_max_ms".into(),
                value: format!("{lo}+{hi}"),
                problem: "latency_min_ms must not exceed latency_max_ms".into(),
            },
        ));
    }
    if c.str("overlay") == "hyparview" && c.int("active_view") >= c.int("nodes") {
        out.push((
            vec!["overlay", "active_view", "nodes"],
            ConfigIssue {
                key: "active_view".into(),
                value: c.int("active_view").to_string(),
                problem: format!(
                    "a HyParView active view must be smaller than the number of nodes ({}); lower active_view",
                    c.int("nodes")
                ),
            },
        ));
    }
    out
}

/// The typed view of a validated `overlay-scale` config.
#[derive(Debug, Clone)]
pub struct OverlayScaleConfig {
    /// The overlay.
    pub overlay: OverlayKind,
    /// The overlay's name as configured.
    pub overlay_name: String,
    /// Nodes.
    pub nodes: usize,
    /// State propagation period, ms.
    pub period_ms: u64,
    /// Counter phase length, ms.
    pub duration_ms: u64,
    /// The simulator's parameters.
    pub sim: OverlaySimConfig,
}

impl OverlayScaleConfig {
    /// Builds the typed view (the config was validated against [`SCHEMA`]).
    pub fn from_config(c: &Config) -> OverlayScaleConfig {
        let nodes = c.int("nodes").max(2) as usize;
        let hyparview = HyParViewConfig {
            active_size: c.int("active_view").max(1) as usize,
            passive_size: c.int("passive_view").max(1) as usize,
            ..HyParViewConfig::default()
        };
        let sim = OverlaySimConfig {
            nodes,
            seed: c.int("seed") as u64,
            hyparview,
            latency_ms: (c.int("latency_min_ms") as u64, c.int("latency_max_ms") as u64),
            join_gap_ms: c.int("join_gap_ms") as u64,
            ..OverlaySimConfig::default()
        };
        OverlayScaleConfig {
            // The schema allows only OVERLAYS, which all parse.
            overlay: OverlayKind::parse(c.str("overlay")).unwrap_or(OverlayKind::FullMesh),
            overlay_name: c.str("overlay").to_string(),
            nodes,
            period_ms: c.int("period_ms") as u64,
            duration_ms: c.int("duration_s") as u64 * 1000,
            sim,
        }
    }

    /// Simulated milliseconds the run covers: formation (HyParView) plus the counter phase.
    pub fn simulated_ms(&self) -> u64 {
        let formation = match self.overlay {
            OverlayKind::Hyparview => self.nodes as u64 * self.sim.join_gap_ms + 2_000,
            _ => 0,
        };
        formation + self.duration_ms
    }
}
