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
//!    workload has ([`crate::workload::Workload::net_nodes`]); two partitions of the same node
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

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::config::Config;
use crate::error::{ConfigIssue, Error, ErrorKind, Result};
use crate::schedule::FaultAction;

/// The section's name in TOML, `--set` and the recorded config.
pub const SECTION: &str = "net_faults";
/// The keys of the section.
pub const KEYS: &[&str] = &["drop_pct", "delay_ms", "partitions"];
/// The keys of one partition.
pub const PARTITION_KEYS: &[&str] = &["at_ms", "duration_ms", "nodes"];
/// The largest delay bound, ms.
pub const MAX_DELAY_MS: u64 = 10_000;
/// The `kind` of a drop line (events.md `fault_injected.kind`).
pub const DROP: &str = "drop";
/// The `kind` of a delay line.
pub const DELAY: &str = "delay";
/// The `kind` of a partition line.
pub const PARTITION: &str = "partition";

/// Whether a `fault_injected` kind is a network fault (a workload's analysis skips them when
/// it counts its own faults).
pub fn is_net_kind(kind: &str) -> bool {
    matches!(kind, DROP | DELAY | PARTITION)
}

/// One partition: `nodes` are cut off from the rest from `at_ms` for `duration_ms`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partition {
    /// Offset from the start of the measurement window, ms.
    pub at_ms: u64,
    /// How long the cut lasts, ms.
    pub duration_ms: u64,
    /// Node indices on the cut-off side (they still reach each other).
    pub nodes: Vec<u32>,
}

/// The `[net_faults]` section of a config.
///
/// ```
/// let mut b = troupe_lab::config::ConfigBuilder::new(&troupe_lab::testkit::Noop);
/// b.apply_toml("nodes = 2\n[net_faults]\ndrop_pct = 1.5\ndelay_ms = [1, 20]\n", "my.toml");
/// let cfg = b.build().unwrap();
/// let nf = cfg.net_faults().unwrap();
/// assert_eq!((nf.drop_pct, nf.delay_ms), (1.5, Some([1, 20])));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetFaults {
    /// Probability, in percent, that an inter-node frame is dropped.
    pub drop_pct: f64,
    /// Extra one-way delay per frame, uniform in `[min, max]` ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<[u64; 2]>,
    /// The partition schedule.
    #[serde(default)]
    pub partitions: Vec<Partition>,
}

fn issue(key: &str, value: &Json, problem: impl Into<String>) -> ConfigIssue {
    ConfigIssue { key: key.into(), value: value.to_string(), problem: problem.into() }
}

fn uint(key: &str, v: &Json, max: u64) -> std::result::Result<u64, ConfigIssue> {
    match v.as_u64() {
        Some(n) if n <= max => Ok(n),
        _ => Err(issue(key, v, format!("expected an integer in 0..={max}"))),
    }
}

impl NetFaults {
    /// Sets one key of the section from a JSON value (TOML values are converted to JSON
    /// first); the problem, naming `net_faults.KEY`, when the value is not allowed (rule 2;
    /// node indices are checked against the workload by [`validate`]).
    pub fn set(&mut self, key: &str, v: &Json) -> std::result::Result<(), ConfigIssue> {
        let full = format!("{SECTION}.{key}");
        match key {
            "drop_pct" => match v.as_f64() {
                Some(x) if (0.0..=100.0).contains(&x) => self.drop_pct = x,
                _ => return Err(issue(&full, v, "expected a number in 0..=100 (percent of frames dropped)")),
            },
            "delay_ms" => {
                let pair = v.as_array().filter(|a| a.len() == 2);
                let Some(pair) = pair else {
                    return Err(issue(
                        &full,
                        v,
                        format!("expected [min, max] in ms, 0 <= min <= max <= {MAX_DELAY_MS}"),
                    ));
                };
                let lo = uint(&full, &pair[0], MAX_DELAY_MS)?;
                let hi = uint(&full, &pair[1], MAX_DELAY_MS)?;
                if lo > hi {
                    return Err(issue(&full, v, format!("min {lo} is above max {hi}; write [min, max]")));
                }
                self.delay_ms = Some([lo, hi]);
            }
            "partitions" => {
                let Some(list) = v.as_array() else {
                    return Err(issue(&full, v, "expected a list of { at_ms, duration_ms, nodes = [...] } tables"));
                };
                let mut out = Vec::with_capacity(list.len());
                for (i, p) in list.iter().enumerate() {
                    out.push(partition(&format!("{full}[{i}]"), p)?);
                }
                self.partitions = out;
            }
            other => {
                let hint = crate::did_you_mean(other, KEYS);
                return Err(issue(&full, v, format!("unknown key{hint}; known keys: {}", KEYS.join(", "))));
            }
        }
        Ok(())
    }

    /// Sets one key from the text of `--set net_faults.KEY=TEXT`, read as a TOML value: a
    /// number, `[1, 20]`, `[{ at_ms = 0, duration_ms = 10, nodes = [1] }]`.
    pub fn set_text(&mut self, key: &str, text: &str) -> std::result::Result<(), ConfigIssue> {
        let parsed = format!("v = {text}").parse::<toml::Table>().ok().and_then(|mut t| t.remove("v"));
        let json = match parsed {
            Some(val) => serde_json::to_value(&val).unwrap_or(Json::Null),
            None => Json::String(text.trim().to_string()),
        };
        self.set(key, &json)
    }

    /// Sets every key of a JSON object (the section as a table).
    pub fn set_all(&mut self, obj: &Json) -> Vec<ConfigIssue> {
        let Some(map) = obj.as_object() else {
            return vec![issue(SECTION, obj, format!("expected a table with keys {}", KEYS.join(", ")))];
        };
        map.iter().filter_map(|(k, v)| self.set(k, v).err()).collect()
    }

    /// The section as the recorded config holds it (a JSON object).
    pub fn to_json(&self) -> Json {
        serde_json::to_value(self).unwrap_or(Json::Null)
    }
}

fn partition(key: &str, v: &Json) -> std::result::Result<Partition, ConfigIssue> {
    let Some(map) = v.as_object() else {
        return Err(issue(key, v, "expected a table { at_ms, duration_ms, nodes = [...] }"));
    };
    if let Some(k) = map.keys().find(|k| !PARTITION_KEYS.contains(&k.as_str())) {
        let hint = crate::did_you_mean(k, PARTITION_KEYS);
        return Err(issue(
            &format!("{key}.{k}"),
            &map[k],
            format!("unknown key{hint}; known keys: at_ms, duration_ms, nodes"),
        ));
    }
    let field =
        |name: &str| map.get(name).ok_or_else(|| issue(&format!("{key}.{name}"), &Json::Null, "missing; give it"));
    let at_ms = uint(&format!("{key}.at_ms"), field("at_ms")?, u64::from(u32::MAX))?;
    let duration_ms = uint(&format!("{key}.duration_ms"), field("duration_ms")?, u64::from(u32::MAX))?;
    if duration_ms == 0 {
        return Err(issue(&format!("{key}.duration_ms"), &map["duration_ms"], "must be at least 1 ms"));
    }
    let nkey = format!("{key}.nodes");
    let raw = field("nodes")?;
    let list = raw
        .as_array()
        .filter(|a| !a.is_empty())
        .ok_or_else(|| issue(&nkey, raw, "expected a non-empty list of node indices, e.g. [1]"))?;
    let mut nodes = Vec::with_capacity(list.len());
    for n in list {
        let n = uint(&nkey, n, u64::from(u32::MAX))? as u32;
        if nodes.contains(&n) {
            return Err(issue(&nkey, raw, format!("node {n} is listed twice")));
        }
        nodes.push(n);
    }
    Ok(Partition { at_ms, duration_ms, nodes })
}

/// Rule 2's checks that need the workload: node indices it has, and no two partitions of one
/// node overlapping. Rule 3 for the workload: a workload that cannot apply network faults for
/// this config refuses the section.
pub fn validate(cfg: &Config, nf: &NetFaults) -> Vec<ConfigIssue> {
    let workload = cfg.workload();
    let nodes = match cfg.plugin().net_nodes(cfg) {
        Ok(nodes) => nodes,
        Err(why) => {
            return vec![ConfigIssue {
                key: SECTION.into(),
                value: nf.to_json().to_string(),
                problem: format!("network faults are unsupported in workload {workload}: {why}"),
            }]
        }
    };
    let mut out = Vec::new();
    for (i, p) in nf.partitions.iter().enumerate() {
        for n in &p.nodes {
            if *n as usize >= nodes.len() {
                let named: Vec<String> = nodes.iter().enumerate().map(|(i, n)| format!("{i} = {n}")).collect();
                out.push(ConfigIssue {
                    key: format!("{SECTION}.partitions[{i}].nodes"),
                    value: format!("{:?}", p.nodes),
                    problem: format!(
                        "workload {workload} has no node {n} with this config; its nodes: {}",
                        named.join(", ")
                    ),
                });
            }
        }
        for (j, q) in nf.partitions.iter().enumerate().take(i) {
            let overlap = p.at_ms < q.at_ms + q.duration_ms && q.at_ms < p.at_ms + p.duration_ms;
            if let Some(n) = p.nodes.iter().find(|n| overlap && q.nodes.contains(n)) {
                out.push(ConfigIssue {
                    key: format!("{SECTION}.partitions[{i}]"),
                    value: format!("at_ms = {}, duration_ms = {}", p.at_ms, p.duration_ms),
                    problem: format!(
                        "node {n} is already partitioned by net_faults.partitions[{j}] (at_ms = {}, duration_ms = \
                         {}); partitions of one node may not overlap",
                        q.at_ms, q.duration_ms
                    ),
                });
            }
        }
    }
    out
}

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
    let nodes = cfg.plugin().net_nodes(cfg);
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
