//! Statistics of one chat run, computed from its recorded events and schedule alone
//! (workloads.md §2 "Outputs"), so `troupe lab report` can always rebuild them.
//!
//! Definitions:
//! 1. The window is `[start_us, start_us + D s)` from the orchestrator's
//!    `ready {what: "window", start_us}`.
//! 2. Throughput: each client-group node's `throughput {second, count}` summed per second
//!    over the nodes; the mean is over the window seconds; the ceiling is
//!    chats x clients x clients x 1000 / send_interval_ms.
//! 3. Detection: each `fault_detected` is matched to the latest `fault_injected` on the same
//!    target at or before it; its time is the difference of their stamps. Only faults injected
//!    inside the window count; a detection with no earlier injection on its target is counted
//!    as unmatched.
//! 4. Reconnection: each `reconnected {ms}` whose failure was detected inside the window.
//! 5. Disconnected time: every reconnection covers `[ts - ms, ts]`; a client's last detection
//!    with no rejoin after it covers up to the window's end. `all_connected_pct` is the share
//!    of the window not covered by any of them.
//! 6. Summaries (detection, reconnection): mean, median, min, max, q1, q3 (linear
//!    interpolation between order statistics), p99 (nearest rank), n.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::config::ChatConfig;
use crate::config::Config;
use crate::events::Event;
use crate::schedule::FaultAction;
use crate::workload::RunAnalysis;

pub use crate::stats::Dist;

/// One client's detection of one fault (a row of `chat_detection.csv`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Detection {
    /// The client.
    pub client: String,
    /// The chat.
    pub target: String,
    /// The injected fault's id.
    pub fault_id: String,
    /// When it was injected, µs since the epoch.
    pub injected_us: i64,
    /// When the client detected it.
    pub detected_us: i64,
    /// The difference, ms.
    pub ms: f64,
}

/// One client's rejoin (a row of `chat_reconnection.csv`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Reconnection {
    /// The client.
    pub client: String,
    /// The chat.
    pub target: String,
    /// When the rejoin completed, µs since the epoch.
    pub reconnected_us: i64,
    /// From detection to rejoin, ms.
    pub ms: f64,
}

/// Everything the report says about one chat run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ChatStats {
    /// `test_type`.
    pub test_type: String,
    /// Window start, µs since the epoch.
    pub window_start_us: Option<i64>,
    /// Window length, s.
    pub duration_s: u64,
    /// Messages received per window second, summed over the nodes.
    #[serde(skip)]
    pub seconds: Vec<(u32, u64)>,
    /// Mean messages received per second.
    pub msg_per_s_mean: f64,
    /// The theoretical ceiling (0 when clients do not send).
    pub ceiling: f64,
    /// Mean as percent of the ceiling.
    pub pct_ceiling: Option<f64>,
    /// Detection times, ms.
    pub detection_ms: Option<Dist>,
    /// Reconnection times, ms.
    pub reconnection_ms: Option<Dist>,
    /// Percent of the window during which every client was connected.
    pub all_connected_pct: f64,
    /// Detection rows.
    #[serde(skip)]
    pub detections: Vec<Detection>,
    /// Reconnection rows.
    #[serde(skip)]
    pub reconnections: Vec<Reconnection>,
    /// Detections with no earlier injection on their chat.
    pub unmatched_detections: usize,
    /// Faults carried out.
    pub injected: u64,
    /// Faults planned.
    pub planned_faults: u64,
    /// Chat restarts.
    pub restarts: u64,
    /// Faults skipped (chat not registered at that instant).
    pub skipped_faults: u64,
    /// Clients that gave up rejoining.
    pub gave_up: u64,
    /// Events dropped by writers.
    pub dropped_events: u64,
    /// Errors reported by the nodes.
    pub errors: u64,
    /// Chats that registered (sum of `ready {what: "chats"}`).
    pub chats_ready: Option<i64>,
    /// Clients that joined (sum of `ready {what: "clients"}`).
    pub clients_ready: Option<i64>,
    /// Resident bytes of the processes holding clients, when they were ready.
    pub clients_rss_bytes: u64,
    /// `clients_rss_bytes / clients_ready` (single mode: the whole process per client).
    pub bytes_per_client: Option<f64>,
    /// Nodes that reported throughput.
    pub throughput_nodes: usize,
    /// Node processes the orchestrator reported as failed.
    pub failed_nodes: Vec<String>,
    /// Nodes that emitted events but no `run_finished`.
    pub unfinished_nodes: Vec<String>,
    /// Throughput seconds duplicated or out of range.
    pub bad_seconds: usize,
    /// Nodes that reported fewer or more window seconds than the window has.
    #[serde(skip)]
    pub short_nodes: Vec<(String, usize)>,
    /// Client-group nodes the config implies.
    pub expected_client_nodes: usize,
}

/// The union length of `[a, b)` intervals clipped to `[lo, hi)`.
fn covered(mut iv: Vec<(i64, i64)>, lo: i64, hi: i64) -> i64 {
    iv.retain(|&(a, b)| b > lo && a < hi && b > a);
    iv.sort_unstable();
    let (mut total, mut cur): (i64, Option<(i64, i64)>) = (0, None);
    for (a, b) in iv {
        let (a, b) = (a.max(lo), b.min(hi));
        cur = match cur {
            Some((ca, cb)) if a <= cb => Some((ca, cb.max(b))),
            Some((ca, cb)) => {
                total += cb - ca;
                Some((a, b))
            }
            None => Some((a, b)),
        };
    }
    if let Some((ca, cb)) = cur {
        total += cb - ca;
    }
    total
}

impl ChatStats {
    /// Computes the statistics of a chat run (definitions 1-6).
    pub fn compute(cfg: &Config, events: &[Event], sched: &[FaultAction]) -> ChatStats {
        let chat = ChatConfig::from_config(cfg);
        let d = chat.duration_s;
        let mut start = None;
        let mut per_node: BTreeMap<&str, BTreeMap<u32, u64>> = BTreeMap::new();
        let mut bad_seconds = 0;
        let mut injections: HashMap<&str, Vec<(i64, &str)>> = HashMap::new();
        let mut detected: Vec<&Event> = Vec::new();
        let mut reconnected: Vec<&Event> = Vec::new();
        let (mut injected, mut restarts, mut skipped, mut dropped, mut errors, mut gave_up) = (0, 0, 0, 0, 0, 0);
        let (mut chats_ready, mut clients_ready, mut rss) = (None, None, 0u64);
        let mut failed_nodes = Vec::new();
        let mut nodes = BTreeSet::new();
        let mut finished = BTreeSet::new();
        for e in events {
            nodes.insert(e.node.as_str());
            match e.ev.as_str() {
                "ready" => match e.str("what") {
                    "window" => start = e.raw.get("start_us").and_then(|v| v.as_i64()),
                    "chats" => chats_ready = Some(chats_ready.unwrap_or(0) + e.int("count")),
                    "clients" => {
                        clients_ready = Some(clients_ready.unwrap_or(0) + e.int("count"));
                        rss += e.int("rss_bytes").max(0) as u64;
                    }
                    _ => {}
                },
                "throughput" => {
                    let s = e.int("second");
                    let secs = per_node.entry(e.node.as_str()).or_default();
                    if s < 0 || s as u64 >= d || secs.contains_key(&(s as u32)) {
                        bad_seconds += 1;
                    } else {
                        secs.insert(s as u32, e.int("count").max(0) as u64);
                    }
                }
                // Network faults (`[net_faults]`) are counted by the lab core, not as chat faults.
                "fault_injected" if crate::netfaults::is_net_kind(e.str("kind")) => {}
                "fault_injected" => {
                    injected += 1;
                    injections.entry(e.str("target")).or_default().push((e.ts_us, e.str("id")));
                }
                "fault_detected" => detected.push(e),
                "reconnected" => reconnected.push(e),
                "restarted" => restarts += 1,
                "gave_up" => gave_up += 1,
                "run_finished" => {
                    finished.insert(e.node.as_str());
                    dropped += e.int("dropped_events").max(0) as u64;
                    errors += e.int("errors").max(0) as u64;
                    skipped += e.int("skipped_faults").max(0) as u64;
                    if let Some(list) = e.raw.get("failed_nodes").and_then(|v| v.as_array()) {
                        failed_nodes.extend(list.iter().filter_map(|v| v.as_str().map(str::to_owned)));
                    }
                }
                _ => {}
            }
        }
        for v in injections.values_mut() {
            v.sort_unstable();
        }
        let (lo, hi) = match start {
            Some(s) => (s, s + (d as i64) * 1_000_000),
            None => (i64::MIN / 2, i64::MIN / 2),
        };
        // Definition 3.
        let mut detections = Vec::new();
        let mut unmatched = 0;
        for e in &detected {
            let target = e.str("target");
            let inj = injections.get(target).and_then(|v| {
                let i = v.partition_point(|(ts, _)| *ts <= e.ts_us);
                (i > 0).then(|| v[i - 1])
            });
            match inj {
                Some((its, id)) if its >= lo && its < hi => detections.push(Detection {
                    client: e.str("by").to_owned(),
                    target: target.to_owned(),
                    fault_id: id.to_owned(),
                    injected_us: its,
                    detected_us: e.ts_us,
                    ms: (e.ts_us - its) as f64 / 1000.0,
                }),
                Some(_) => {}
                None => unmatched += 1,
            }
        }
        // Definition 4.
        let reconnections: Vec<Reconnection> = reconnected
            .iter()
            .filter_map(|e| {
                let ms = e.raw.get("ms").and_then(|v| v.as_f64())?;
                let lost = e.ts_us - (ms * 1000.0) as i64;
                (lost >= lo && lost < hi).then(|| Reconnection {
                    client: e.str("by").to_owned(),
                    target: e.str("target").to_owned(),
                    reconnected_us: e.ts_us,
                    ms,
                })
            })
            .collect();
        // Definition 5.
        let mut intervals: Vec<(i64, i64)> = Vec::new();
        let mut last: HashMap<&str, (i64, bool)> = HashMap::new();
        for e in detected.iter().chain(reconnected.iter()) {
            let by = e.str("by");
            let is_det = e.ev == "fault_detected";
            let entry = last.entry(by).or_insert((e.ts_us, is_det));
            if e.ts_us >= entry.0 {
                *entry = (e.ts_us, is_det);
            }
            if !is_det {
                let ms = e.raw.get("ms").and_then(|v| v.as_f64()).unwrap_or(0.0);
                intervals.push((e.ts_us - (ms * 1000.0) as i64, e.ts_us));
            }
        }
        intervals.extend(last.values().filter(|(_, det)| *det).map(|&(ts, _)| (ts, hi)));
        let window = (hi - lo).max(1);
        let all_connected_pct =
            if start.is_some() { 100.0 * (1.0 - covered(intervals, lo, hi) as f64 / window as f64) } else { 0.0 };
        // Definition 2.
        let mut sums: BTreeMap<u32, u64> = BTreeMap::new();
        let mut short_nodes = Vec::new();
        for (node, secs) in &per_node {
            if secs.len() as u64 != d {
                short_nodes.push(((*node).to_owned(), secs.len()));
            }
            for (&s, &c) in secs {
                *sums.entry(s).or_default() += c;
            }
        }
        let seconds: Vec<(u32, u64)> = sums.into_iter().collect();
        let mean = if seconds.is_empty() {
            0.0
        } else {
            seconds.iter().map(|&(_, c)| c as f64).sum::<f64>() / seconds.len() as f64
        };
        let ceiling = chat.ceiling();
        let mut det_ms: Vec<f64> = detections.iter().map(|x| x.ms).collect();
        let mut rec_ms: Vec<f64> = reconnections.iter().map(|x| x.ms).collect();
        ChatStats {
            test_type: cfg.str("test_type").to_owned(),
            window_start_us: start,
            duration_s: d,
            msg_per_s_mean: mean,
            ceiling,
            pct_ceiling: (ceiling > 0.0).then(|| 100.0 * mean / ceiling),
            detection_ms: Dist::of(&mut det_ms),
            reconnection_ms: Dist::of(&mut rec_ms),
            all_connected_pct,
            detections,
            reconnections,
            unmatched_detections: unmatched,
            injected,
            planned_faults: sched.iter().filter(|a| !crate::netfaults::is_net_kind(&a.kind)).count() as u64,
            restarts,
            skipped_faults: skipped,
            gave_up,
            dropped_events: dropped,
            errors,
            chats_ready,
            clients_ready,
            clients_rss_bytes: rss,
            bytes_per_client: clients_ready.filter(|&c| c > 0 && rss > 0).map(|c| rss as f64 / c as f64),
            throughput_nodes: per_node.len(),
            failed_nodes,
            unfinished_nodes: nodes.difference(&finished).map(|n| (*n).to_owned()).collect(),
            bad_seconds,
            short_nodes,
            expected_client_nodes: if chat.distributed { chat.client_groups().len() } else { 1 },
            seconds,
        }
    }

    /// Why the recorded events are not a complete run, if they are not.
    pub fn completeness_problem(&self, cfg: &Config) -> Option<String> {
        let chat = ChatConfig::from_config(cfg);
        if !self.failed_nodes.is_empty() {
            return Some(format!("node process failed: {}", self.failed_nodes.join("; ")));
        }
        if self.chats_ready != Some(chat.total_chats() as i64) {
            return Some(format!(
                "{} of {} chats registered (`ready {{what: \"chats\"}}`): the servers never finished setting up",
                self.chats_ready.unwrap_or(0),
                chat.total_chats()
            ));
        }
        if self.clients_ready != Some(chat.total_clients() as i64) {
            return Some(format!(
                "{} of {} clients joined (`ready {{what: \"clients\"}}`): the clients never finished setting up",
                self.clients_ready.unwrap_or(0),
                chat.total_clients()
            ));
        }
        if self.window_start_us.is_none() {
            return Some("no `ready {what: \"window\"}` event: the window never opened".into());
        }
        if self.throughput_nodes != self.expected_client_nodes || !self.short_nodes.is_empty() || self.bad_seconds > 0 {
            return Some(format!(
                "expected {} client node(s) each with one `throughput` event per window second ({}), got {} node(s){}{}",
                self.expected_client_nodes,
                self.duration_s,
                self.throughput_nodes,
                self.short_nodes.iter().map(|(n, c)| format!("; {n} has {c}")).collect::<String>(),
                if self.bad_seconds > 0 { format!("; {} duplicated or out of range", self.bad_seconds) } else { String::new() }
            ));
        }
        if !self.unfinished_nodes.is_empty() {
            return Some(format!(
                "no `run_finished` event from node(s) {}: they did not end cleanly (see stderr.txt)",
                self.unfinished_nodes.join(", ")
            ));
        }
        if self.dropped_events > 0 {
            return Some(format!("{} events were dropped by the writers (buffer full)", self.dropped_events));
        }
        None
    }
}

fn dist_text(d: &Option<Dist>) -> String {
    match d {
        None => "n/a (no samples)".into(),
        Some(d) => format!(
            "mean {:.2} ms, median {:.2}, p99 {:.2}, min {:.2}, max {:.2} (n = {})",
            d.mean, d.median, d.p99, d.min, d.max, d.n
        ),
    }
}

impl RunAnalysis for ChatStats {
    fn completeness_problem(&self, cfg: &Config) -> Option<String> {
        ChatStats::completeness_problem(self, cfg)
    }

    fn summary_rows(&self) -> Vec<(String, String)> {
        let mut rows = vec![("test type".into(), self.test_type.clone())];
        if self.ceiling > 0.0 {
            rows.push(("mean throughput".into(), format!("{:.1} msg/s", self.msg_per_s_mean)));
            rows.push((
                "ceiling".into(),
                format!("{:.1} msg/s ({:.2}% reached)", self.ceiling, self.pct_ceiling.unwrap_or(0.0)),
            ));
        }
        rows.push(("detection".into(), dist_text(&self.detection_ms)));
        rows.push(("reconnection".into(), dist_text(&self.reconnection_ms)));
        rows.push(("all clients connected".into(), format!("{:.3}% of the window", self.all_connected_pct)));
        rows.push((
            "faults carried out / planned".into(),
            format!("{} / {} ({} skipped)", self.injected, self.planned_faults, self.skipped_faults),
        ));
        rows.push(("chat restarts".into(), self.restarts.to_string()));
        if let Some(b) = self.bytes_per_client {
            rows.push(("resident bytes per client".into(), format!("{b:.0} B")));
        }
        rows.push(("clients that gave up".into(), self.gave_up.to_string()));
        rows.push(("dropped events / errors".into(), format!("{} / {}", self.dropped_events, self.errors)));
        rows
    }

    fn summary_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    fn headline(&self) -> String {
        let mut s = String::new();
        if self.ceiling > 0.0 {
            s.push_str(&format!(
                "{:.1} msg/s ({:.2}% of ceiling)",
                self.msg_per_s_mean,
                self.pct_ceiling.unwrap_or(0.0)
            ));
        }
        if let Some(d) = &self.detection_ms {
            s.push_str(&format!("{}detection p99 {:.1} ms", if s.is_empty() { "" } else { ", " }, d.p99));
        }
        if let Some(r) = &self.reconnection_ms {
            s.push_str(&format!(", reconnection mean {:.1} ms", r.mean));
        }
        if s.is_empty() {
            s = format!("faults {}", self.injected);
        }
        s
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
