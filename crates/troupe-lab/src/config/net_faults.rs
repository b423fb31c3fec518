//! The `[net_faults]` section of every config: its keys, its parsing (TOML, `--set
//! net_faults.KEY=VALUE`, the recorded JSON) and its validation (rule 2 of
//! [`crate::netfaults`], which owns the rest: schedule lines, refusals, application).

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::error::ConfigIssue;

/// The section's name in TOML, `--set` and the recorded config.
pub const SECTION: &str = "net_faults";
/// The keys of the section.
pub const KEYS: &[&str] = &["drop_pct", "delay_ms", "partitions", "layer"];
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

/// Where network faults are applied (`net_faults.layer`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// Outside every runtime: each node process in its own network namespace, loss and
    /// partitions as nftables rules in the hub between them ([`crate::netlayer`]); the same
    /// network for every runtime. The default.
    #[default]
    Network,
    /// Troupe's own message-level fault injection (`troupe-remote`, [`crate::netfaults::apply`]):
    /// Troupe only.
    Runtime,
}

impl Layer {
    /// The value as written in configs.
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Network => "network",
            Layer::Runtime => "runtime",
        }
    }
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
    /// Where the faults are applied (`network`, the default, or `runtime`).
    #[serde(default)]
    pub layer: Layer,
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
            "layer" => match v.as_str() {
                Some("network") => self.layer = Layer::Network,
                Some("runtime") => self.layer = Layer::Runtime,
                _ => {
                    return Err(issue(
                        &full,
                        v,
                        "expected \"network\" (network namespaces and nftables, every runtime) or \"runtime\" \
                         (Troupe's own fault injection, troupe only)",
                    ))
                }
            },
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
/// this config refuses the section. `nodes` are the workload's node processes for the config
/// ([`super::Spec::net_nodes`]), or why it has none.
pub fn validate(workload: &str, nodes: std::result::Result<Vec<String>, String>, nf: &NetFaults) -> Vec<ConfigIssue> {
    let nodes = match nodes {
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
