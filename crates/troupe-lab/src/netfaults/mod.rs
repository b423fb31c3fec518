//! Network faults in lab workloads (`[net_faults]`): a drop probability, a delay range and a
//! partition schedule for the frames between a workload's node processes, applied through
//! `troupe-remote`'s built-in fault injection and recorded in `schedule.jsonl` like the
//! workload's own faults. The lab core owns the section once for every workload: its parsing
//! (TOML, `--set net_faults.KEY=VALUE`, the recorded JSON), its validation, its schedule lines,
//! the refusal where it cannot be applied, and (in [`apply`]) what a node process does with it.
//!
//! Rules:
//! 1. No `[net_faults]` section means no network faults: the config, its JSON and the schedule
//!    are byte for byte what they are without this module.
//! 2. `drop_pct` is in 0..=100; `delay_ms = [min, max]` has min <= max <= 10000; a partition
//!    has `at_ms` >= 0, `duration_ms` >= 1 and a non-empty list of distinct node indices the
//!    workload has ([`crate::config::Spec::net_nodes`]); two partitions of the same node
//!    may not overlap in time. Every violation is refused before anything starts, naming the key.
//! 3. A workload whose Troupe system under test has no inter-node traffic for the config, and
//!    every peer runtime, refuse a config with `net_faults`, naming `net_faults`, the workload or
//!    runtime and why ([`check_runtime`]).
//! 4. Schedule lines ([`schedule_lines`]), merged in time order with the workload's own (stable:
//!    at equal `at_ms` the network lines come first): `{"kind":"drop","id":"net-drop",
//!    "drop_pct":P}` and `{"kind":"delay","id":"net-delay","delay_ms":[MIN,MAX]}` at `at_ms` 0
//!    when set (drop only when P > 0, delay only when MAX > 0; group and slot 0), and per
//!    partition k and node n of it, `{"kind":"partition","id":"net-part-K-N","group":N,
//!    "duration_ms":D,"nodes":[...]}` at its `at_ms`; it heals at `at_ms + duration_ms`.

pub mod apply;

use serde_json::Value as Json;

use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::schedule::FaultAction;

pub use crate::config::net_faults::{
    is_net_kind, NetFaults, Partition, DELAY, DROP, KEYS, MAX_DELAY_MS, PARTITION, PARTITION_KEYS, SECTION,
};

/// Rule 3 for runtimes: only Troupe's own system under test applies network faults.
pub fn check_runtime(cfg: &Config, runtime: &str) -> Result<()> {
    if runtime == "troupe" || cfg.net_faults().is_none() {
        return Ok(());
    }
    Err(Error::new(ErrorKind::Unsupported(format!(
        "net_faults is unsupported by runtime {runtime:?} in workload {}: network faults are applied through \
         troupe-remote's fault injection, which only the troupe runtime's node processes have; remove the \
         [net_faults] section or run only runtime troupe",
        cfg.workload()
    ))))
}

/// The schedule lines of a config's network faults (rule 4); empty without the section.
pub fn schedule_lines(cfg: &Config) -> Vec<FaultAction> {
    let Some(nf) = cfg.net_faults() else { return Vec::new() };
    let mut out = Vec::new();
    if nf.drop_pct > 0.0 {
        out.push(FaultAction {
            id: "net-drop".into(),
            kind: DROP.into(),
            drop_pct: Some(nf.drop_pct),
            ..Default::default()
        });
    }
    if let Some(d) = nf.delay_ms.filter(|d| d[1] > 0) {
        out.push(FaultAction { id: "net-delay".into(), kind: DELAY.into(), delay_ms: Some(d), ..Default::default() });
    }
    for (k, p) in nf.partitions.iter().enumerate() {
        for &n in &p.nodes {
            out.push(FaultAction {
                at_ms: p.at_ms,
                id: format!("net-part-{k}-{n}"),
                kind: PARTITION.into(),
                group: n,
                restart: true,
                duration_ms: Some(p.duration_ms),
                nodes: Some(p.nodes.clone()),
                ..Default::default()
            });
        }
    }
    out.sort_by_key(|a| a.at_ms);
    out
}

/// A workload's schedule with the network lines merged in (rule 4): the workload's own
/// actions keep their order and ids.
pub fn merge(cfg: &Config, workload_actions: Vec<FaultAction>) -> Vec<FaultAction> {
    let net = schedule_lines(cfg);
    if net.is_empty() {
        return workload_actions;
    }
    let mut all = net;
    all.extend(workload_actions);
    all.sort_by_key(|a| a.at_ms);
    all
}

/// The run's network-fault figures for `summary.json` from its events: frames dropped and
/// delayed by fault injection, summed over the node processes' `run_finished`
/// (`net_dropped_frames`, `net_delayed_frames`), and the `fault_injected` lines of network
/// kinds (`net_faults_injected`). Processes killed by the schedule never report theirs.
pub fn summary(events: &[crate::events::Event]) -> serde_json::Map<String, Json> {
    let (mut dropped, mut delayed, mut injected) = (0u64, 0u64, 0u64);
    for e in events {
        match e.ev.as_str() {
            "run_finished" => {
                dropped += e.raw.get("net_dropped_frames").and_then(Json::as_u64).unwrap_or(0);
                delayed += e.raw.get("net_delayed_frames").and_then(Json::as_u64).unwrap_or(0);
            }
            "fault_injected" if is_net_kind(e.str("kind")) => injected += 1,
            _ => {}
        }
    }
    let mut m = serde_json::Map::new();
    m.insert("net_dropped_frames".into(), dropped.into());
    m.insert("net_delayed_frames".into(), delayed.into());
    m.insert("net_faults_injected".into(), injected.into());
    m
}

/// What `troupe lab config` shows of the section: the resolved `[net_faults]` table as valid
/// TOML when the config has one, else a comment saying whether and how the workload takes it
/// (its node indices, or why not).
///
/// ```
/// let cfg = troupe_lab::config::ConfigBuilder::new(&troupe_lab::testkit::Noop).build().unwrap();
/// let lines = troupe_lab::netfaults::config_lines(&cfg);
/// assert!(lines.iter().any(|l| l.contains("0 = node-0")), "{lines:?}");
/// ```
pub fn config_lines(cfg: &Config) -> Vec<String> {
    let nodes = cfg.spec().net_nodes(cfg);
    let mut out = Vec::new();
    match (cfg.net_faults(), nodes) {
        (Some(nf), _) => {
            out.push(format!("[{SECTION}]"));
            out.push(format!("drop_pct = {:?}", nf.drop_pct));
            if let Some([lo, hi]) = nf.delay_ms {
                out.push(format!("delay_ms = [{lo}, {hi}]"));
            }
            let parts: Vec<String> = nf
                .partitions
                .iter()
                .map(|p| format!("{{ at_ms = {}, duration_ms = {}, nodes = {:?} }}", p.at_ms, p.duration_ms, p.nodes))
                .collect();
            out.push(format!("partitions = [{}]", parts.join(", ")));
        }
        (None, Ok(nodes)) => {
            let named: Vec<String> = nodes.iter().enumerate().map(|(i, n)| format!("{i} = {n}")).collect();
            out.push(format!(
                "# [{SECTION}] (optional): drop_pct, delay_ms = [min, max], partitions = [{{ at_ms, duration_ms, \
                 nodes }}]; nodes: {}",
                named.join(", ")
            ));
        }
        (None, Err(why)) => out.push(format!("# [{SECTION}] is unsupported here: {why}")),
    }
    out
}
