//! Network faults in lab workloads (`[net_faults]`): a drop probability, a delay range and a
//! partition schedule for the traffic between a workload's node processes, applied outside
//! every runtime by the network layer ([`crate::netlayer`], the default) or through
//! `troupe-remote`'s built-in fault injection (`layer = "runtime"`, Troupe only), and
//! recorded in `schedule.jsonl` like the workload's own faults. The lab core owns the section once for every workload: its parsing
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
//! 3. A workload whose Troupe system under test has no inter-node traffic for the config
//!    refuses a config with `net_faults`, naming `net_faults`, the workload and why. By layer
//!    (`net_faults.layer`, [`check_runtime`]): `runtime` (troupe-remote's own injection) is
//!    refused for every peer; `network` (the default, [`crate::netlayer`]) is refused without
//!    root, `ip` or `nft`, for a workload whose Troupe program does not place its node processes
//!    in the layer's namespaces ([`crate::config::Spec::network_layer`]), and for a peer whose
//!    program folder does not declare `netns` in its `features` file, and together with events
//!    through RabbitMQ (the broker on the host's loopback is out of the namespaces' reach).
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
    is_net_kind, Layer, NetFaults, Partition, DELAY, DROP, KEYS, MAX_DELAY_MS, PARTITION, PARTITION_KEYS, SECTION,
};

/// Rule 3 for runtimes: at `layer = "runtime"` only Troupe's own system under test applies
/// network faults; at `layer = "network"` (the default) the host must carry the layer
/// ([`crate::netlayer::check_host`]) and a peer must take it for the workload
/// ([`crate::netlayer::peer_supports`]; `root` is the project root, where peers live).
pub fn check_runtime(cfg: &Config, runtime: &str, root: Option<&std::path::Path>) -> Result<()> {
    let Some(nf) = cfg.net_faults() else { return Ok(()) };
    let refuse = |why: String| Err(Error::new(ErrorKind::Unsupported(why)));
    match nf.layer {
        Layer::Runtime if runtime == "troupe" => Ok(()),
        Layer::Runtime => refuse(format!(
            "net_faults.layer = \"runtime\" is unsupported by runtime {runtime:?} in workload {}: it is troupe-remote's \
             own fault injection, which only the troupe runtime has; use net_faults.layer = \"network\" (network \
             namespaces and nftables, the same for every runtime)",
            cfg.workload()
        )),
        Layer::Network => {
            crate::netlayer::check_host().or_else(&refuse)?;
            if matches!(cfg.get("events"), Some(crate::config::Value::Str(u)) if u.starts_with("amqp://")) {
                return refuse(
                    "events through RabbitMQ (events = \"amqp://...\") and net_faults at layer \"network\" do not \
                     go together yet: the broker listens on the host's loopback, which the run's namespaces cannot \
                     reach; use events = \"file\" with network faults"
                        .into(),
                );
            }
            if runtime == "troupe" && !cfg.spec().network_layer() {
                return refuse(format!(
                    "net_faults at layer \"network\" is not built yet for workload {}'s Troupe program (its node \
                     processes are not placed in the layer's namespaces); set net_faults.layer = \"runtime\" \
                     (Troupe's own injection)",
                    cfg.workload()
                ));
            }
            let supported = runtime == "troupe"
                || root.is_some_and(|r| crate::netlayer::peer_supports(r, runtime, cfg.workload()));
            if supported {
                Ok(())
            } else {
                refuse(format!(
                    "net_faults is unsupported by runtime {runtime:?} in workload {}: its program does not put its node \
                     processes in the lab's network namespaces (peers/{runtime}/{}/features has no line `netns`); remove \
                     the [net_faults] section or leave {runtime} out",
                    cfg.workload(),
                    cfg.workload()
                ))
            }
        }
    }
}

/// Rule 8 of [`crate::netlayer`]: at the network layer, every network line of the schedule that
/// has no `fault_injected` line with its id, one line each (the run is `degraded` by them).
pub fn missed(cfg: &Config, events: &[crate::events::Event]) -> Vec<String> {
    if !crate::netlayer::wanted(cfg) {
        return Vec::new();
    }
    let done: std::collections::HashSet<&str> =
        events.iter().filter(|e| e.ev == "fault_injected").map(|e| e.str("id")).collect();
    let errors: Vec<String> = events
        .iter()
        .filter(|e| e.ev == "net_counters")
        .filter_map(|e| e.raw.get("errors").and_then(Json::as_array))
        .flatten()
        .filter_map(|x| x.as_str().map(String::from))
        .collect();
    let mut out: Vec<String> = schedule_lines(cfg)
        .iter()
        .filter(|a| !done.contains(a.id.as_str()))
        .map(|a| format!("network fault {} ({}) was not carried out", a.id, a.kind))
        .collect();
    out.extend(errors.into_iter().map(|e| format!("network layer: {e}")));
    out
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
    let mut net: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    for e in events {
        match e.ev.as_str() {
            "run_finished" => {
                dropped += e.raw.get("net_dropped_frames").and_then(Json::as_u64).unwrap_or(0);
                delayed += e.raw.get("net_delayed_frames").and_then(Json::as_u64).unwrap_or(0);
            }
            "fault_injected" if is_net_kind(e.str("kind")) => injected += 1,
            "net_counters" => {
                for k in ["packets_seen", "packets_lost", "packets_cut"] {
                    *net.entry(k).or_insert(0) += e.raw.get(k).and_then(Json::as_u64).unwrap_or(0);
                }
            }
            _ => {}
        }
    }
    let mut m = serde_json::Map::new();
    if !net.is_empty() {
        let (lost, cut) = (net["packets_lost"], net["packets_cut"]);
        for (k, v) in net {
            m.insert(format!("net_{k}"), v.into());
        }
        m.insert("net_packets_dropped".into(), (lost + cut).into());
    }
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
