//! The `overlay-scale` workload's keys (workloads.md §5 "Overlay scale", seed 004 §6.3) with
//! their embedded defaults, ranges and cross-key rules, and the typed view of a validated
//! config. A HyParView view size of 0, an unknown overlay and an unknown mode are refused here,
//! naming the key and the allowed values, before anything runs.

use troupe_cluster::overlay::hyparview::HyParViewConfig;
use troupe_cluster::overlay::sim::OverlaySimConfig;
use troupe_cluster::overlay::OverlayKind;

use troupe_lab::config::{cross, Config, CrossIssue, KeySpec, Schema, SEED};
use troupe_lab::{bool_key, choice_key, int_key};

/// The overlays the simulation runs (the values of `overlay`).
pub const OVERLAYS: &[&str] = &["full_mesh", "client_server", "hyparview"];

/// Where the counter runs (the values of `mode`).
pub const MODES: &[&str] = &["sim", "processes"];

/// The `overlay-scale` schema.
pub static SCHEMA: Schema = Schema { workload: "overlay-scale", keys: KEYS, cross_check };

static KEYS: &[KeySpec] = &[
    choice_key!(
        "mode",
        MODES,
        "sim",
        "sim (the deterministic overlay simulator, one OS process) or processes (one real `troupe \
         node` process per node on loopback, running the live overlay and a counter actor; \
         docs/overlay-scale.md, \"Process mode\")"
    ),
    choice_key!(
        "overlay",
        OVERLAYS,
        "hyparview",
        "full_mesh (every node talks to every other, Distributed Erlang's shape), client_server \
         (node 0 is the server; clients talk only to it) or hyparview (HyParView membership, \
         nodes talk to their active view)"
    ),
    bool_key!(
        "routing",
        true,
        "mode=processes: the overlay also routes the runtime's own traffic to non-neighbours \
         (`[overlay] routing`, its link states counted in the bytes); false measures the overlay \
         without it (the simulator has no routing)"
    ),
    int_key!("nodes", 2, 4096, 64, "nodes (seed 004 §6.3 measures 32..1024; node processes in mode=processes)"),
    int_key!(
        "period_ms",
        10,
        600_000,
        5000,
        "every node sends its full counter state to its neighbours every period_ms"
    ),
    int_key!("duration_s", 1, 3600, 60, "time the counter runs after the overlay formed, s (simulated in mode=sim)"),
    int_key!("active_view", 1, 64, 5, "HyParView active view size (hyparview only; 0 is refused)"),
    int_key!("passive_view", 1, 1024, 30, "HyParView passive view size (hyparview only)"),
    int_key!(
        "latency_min_ms",
        0,
        10_000,
        1,
        "smallest one-way link latency of the simulated network, ms (mode=sim only)"
    ),
    int_key!(
        "latency_max_ms",
        0,
        10_000,
        5,
        "largest one-way link latency of the simulated network, ms (mode=sim only)"
    ),
    int_key!("join_gap_ms", 0, 10_000, 10, "simulated time between two HyParView joins, ms (mode=sim only)"),
    SEED,
];

fn cross_check(c: &Config) -> Vec<CrossIssue> {
    let mut out = Vec::new();
    let (lo, hi) = (c.int("latency_min_ms"), c.int("latency_max_ms"));
    if lo > hi {
        out.push(cross(
            &["latency_min_ms", "latency_max_ms"],
            "latency_min_ms+latency_max_ms",
            format!("{lo}+{hi}"),
            "latency_min_ms must not exceed latency_max_ms",
        ));
    }
    if c.str("overlay") == "hyparview" && c.int("active_view") >= c.int("nodes") {
        out.push(cross(
            &["overlay", "active_view", "nodes"],
            "active_view",
            c.int("active_view"),
            format!(
                "a HyParView active view must be smaller than the number of nodes ({}); lower active_view",
                c.int("nodes")
            ),
        ));
    }
    out
}

/// The typed view of a validated `overlay-scale` config.
#[derive(Debug, Clone)]
pub struct OverlayScaleConfig {
    /// Real node processes (`mode=processes`) rather than the simulator.
    pub processes: bool,
    /// The overlay.
    pub overlay: OverlayKind,
    /// The overlay's name as configured.
    pub overlay_name: String,
    /// `routing` (mode=processes).
    pub routing: bool,
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
            processes: c.str("mode") == "processes",
            // The schema allows only OVERLAYS, which all parse.
            overlay: OverlayKind::parse(c.str("overlay")).unwrap_or(OverlayKind::FullMesh),
            overlay_name: c.str("overlay").to_string(),
            routing: c.bool("routing"),
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
