//! Statistics of one chat run, computed from its recorded events and schedule alone
//! (workloads.md §2 "Outputs"), so `troupe lab report` can always rebuild them.
//!
//! Definitions:
//! 1. The window is `[start_us, start_us + D s)` from the orchestrator's
//!    `ready {what: "window", start_us}`.
//! 2. Throughput, on the events' one clock: each client-group node's `throughput {second,
//!    count}` counts what its clients received since its previous one (or since the window
//!    start), so the count covers the time between the two stamps (`ts_us`), however late the
//!    node's timer fired. A node's rate is its counts' sum over the time from the window start
//!    to its last stamp; the mean is the sum of the nodes' rates; the per-second series is
//!    each count over its own interval, summed over the nodes. The ceiling is
//!    chats x clients x clients x 1000 / send_interval_ms; the reading's resolution is one send
//!    tick of the window (`send_interval_ms / (D x 1000)`, messages in flight at its edges),
//!    and a mean above the ceiling by more than that is not a measurement (degraded).
//! 3. Detection: each `fault_detected` is matched to the latest `fault_injected` on the same
//!    target at or before it; its time is the difference of their stamps. Only faults injected
//!    inside the window count; a detection with no earlier injection on its target is counted
//!    as unmatched. Every crashing fault (`kill`, `error`) injected inside the window is due
//!    one detection from each client of its chat: `expected_detections`. A due detection not
//!    logged is `detections_missed` (it degrades the run) when its fault came at least
//!    [`troupe_lab::stats::RECOVERY_GRACE_MS`] before the window's end, and
//!    `detections_open_at_end` otherwise: the client processes stop at the window's end, so a
//!    chat killed 3 ms before had clients with no time to notice (as definition 4 treats a
//!    rejoin).
//! 4. Reconnection, over every detection (censored, troupe_lab::stats rules 5-7): a detection is
//!    closed by the client's first `reconnected {ms}` stamped at or after it and before the
//!    client's next detection (its sample is `ms`), whenever it was recorded: a fault late in
//!    the window is rejoined after the window's end, while the runtime winds down, on every
//!    runtime alike. A detection with none is a sample of at least the time from it to the
//!    run's last event (never less than the time left in the window); percentiles that fall
//!    among those are shown as `>= X`. It is `unreconnected` when it came at least
//!    [`troupe_lab::stats::RECOVERY_GRACE_MS`] before the window's end, `open_at_end` otherwise (the
//!    client processes stop at the window's end: one that detected a crash 4 ms before had no
//!    time to rejoin).
//! 5. Disconnected time: every reconnection covers `[ts - ms, ts]`; a client's last detection
//!    with no rejoin after it covers up to the window's end. `all_connected_pct` is the share
//!    of the window not covered by any of them.
//! 6. Summaries (detection, reconnection): mean, median, min, max, q1, q3 (linear
//!    interpolation between order statistics), p99 (nearest rank), n.
//! 7. Degraded (troupe_lab::workload rule 6): faults planned but neither carried out nor reported
//!    skipped, skipped faults, fewer detections than expected, unreconnected detections,
//!    clients that gave up, errors reported by the nodes, a throughput above the ceiling.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::config::ChatConfig;
use troupe_lab::config::Config;
use troupe_lab::events::Event;
use troupe_lab::schedule::FaultAction;
use troupe_lab::workload::RunAnalysis;

pub use troupe_lab::stats::Dist;

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
    /// The reading's resolution in percent of the ceiling (definition 2).
    pub ceiling_resolution_pct: Option<f64>,
    /// Detection times, ms.
    pub detection_ms: Option<Dist>,
    /// Reconnection times, ms.
    pub reconnection_ms: Option<Dist>,
    /// Percent of the window during which every client was connected.
    pub all_connected_pct: f64,
    /// Detection rows.
    #[serde(skip)]
    pub detection_rows: Vec<Detection>,
    /// Reconnection rows.
    #[serde(skip)]
    pub reconnection_rows: Vec<Reconnection>,
    /// Detections of faults injected inside the window (definition 3).
    pub detections: usize,
    /// Detections due: crashing faults injected inside the window x clients of the chat.
    pub expected_detections: u64,
    /// Due detections not logged, of faults injected at least a second before the window's end
    /// (definition 3; they degrade the run).
    pub detections_missed: u64,
    /// Due detections not logged, of faults injected in the window's last second (definition
    /// 3; not a degradation).
    pub detections_open_at_end: u64,
    /// Detections closed by a rejoin before the window's end (definition 4).
    pub reconnections: usize,
    /// Detections never followed by a rejoin, made at least a second before the window's end
    /// (definition 4).
    pub unreconnected: usize,
    /// Detections never followed by a rejoin, made in the window's last second (censored
    /// samples, not a degradation; definition 4).
    pub open_at_end: usize,
    /// Detections with no earlier injection on their chat.
    pub unmatched_detections: usize,
    /// Faults carried out (the same as `injected_faults`; kept for older readers).
    pub injected: u64,
    /// Faults carried out: `fault_injected` events, network faults aside.
    pub injected_faults: u64,
    /// Faults planned.
    pub planned_faults: u64,
    /// Planned faults neither carried out nor reported skipped.
    pub missing_faults: u64,
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

/// The fault kinds that crash a chat, so that each of its clients is due a detection.
const CRASHING_KINDS: &[&str] = &["kill", "error"];

/// Definition 4: closes each detection with the client's first `reconnected` stamped at or
/// after it and before its next detection. Returns the closing reconnections and, for each
/// detection left open, the time from it to `end` (the run's last event), ms.
fn close_detections(detections: &[Detection], reconnected: &[&Event], end: i64) -> (Vec<Reconnection>, Vec<f64>) {
    // Per client: (stamp, (ms, target)) of each rejoin.
    type Rejoin<'a> = (i64, (f64, &'a str));
    let mut rejoins: HashMap<&str, Vec<Rejoin>> = HashMap::new();
    for e in reconnected {
        if let Some(ms) = e.raw.get("ms").and_then(|v| v.as_f64()) {
            rejoins.entry(e.str("by")).or_default().push((e.ts_us, (ms, e.str("target"))));
        }
    }
    for v in rejoins.values_mut() {
        v.sort_unstable_by_key(|r| r.0);
    }
    let mut by_client: HashMap<&str, Vec<i64>> = HashMap::new();
    for d in detections {
        by_client.entry(d.client.as_str()).or_default().push(d.detected_us);
    }
    let (mut closed, mut open) = (Vec::new(), Vec::new());
    for (client, mut dets) in by_client {
        dets.sort_unstable();
        let rj = rejoins.get(client).map(Vec::as_slice).unwrap_or_default();
        for (at, rejoin) in troupe_lab::stats::close_in_order(&dets, rj) {
            match rejoin {
                Some(&(ts, (ms, target))) => closed.push(Reconnection {
                    client: client.to_owned(),
                    target: target.to_owned(),
                    reconnected_us: ts,
                    ms,
                }),
                None => open.push((end - at).max(0) as f64 / 1000.0),
            }
        }
    }
    closed.sort_unstable_by(|a, b| (a.reconnected_us, &a.client).cmp(&(b.reconnected_us, &b.client)));
    (closed, open)
}

/// Definition 2: the per-second series (each count over its own interval, summed over the
/// nodes), the mean rate, and the nodes with fewer or more seconds than the window has.
#[allow(clippy::type_complexity)]
fn throughput(
    per_node: &BTreeMap<&str, BTreeMap<u32, (u64, i64)>>,
    lo: i64,
    d: u64,
) -> (Vec<(u32, u64)>, f64, Vec<(String, usize)>) {
    let mut sums: BTreeMap<u32, f64> = BTreeMap::new();
    let mut short_nodes = Vec::new();
    let mut mean = 0.0;
    for (node, secs) in per_node {
        if secs.len() as u64 != d {
            short_nodes.push(((*node).to_owned(), secs.len()));
        }
        let (mut prev, mut total, mut last) = (lo, 0u64, lo);
        for (&s, &(c, ts)) in secs {
            // A stamp at or before the previous one (clock trouble) counts as one second.
            let span_us = if ts > prev { ts - prev } else { 1_000_000 };
            *sums.entry(s).or_default() += c as f64 * 1e6 / span_us as f64;
            total += c;
            prev = prev.max(ts);
            last = last.max(ts);
        }
        if last > lo {
            mean += total as f64 * 1e6 / (last - lo) as f64;
        } else if !secs.is_empty() {
            mean += total as f64 / secs.len() as f64;
        }
    }
    (sums.into_iter().map(|(s, r)| (s, r.round() as u64)).collect(), mean, short_nodes)
}

impl ChatStats {
    /// Computes the statistics of a chat run (definitions 1-7).
    pub fn compute(cfg: &Config, events: &[Event], sched: &[FaultAction]) -> ChatStats {
        let chat = ChatConfig::from_config(cfg);
        let d = chat.duration_s;
        let mut start = None;
        // Per node: second -> (count, stamp).
        let mut per_node: BTreeMap<&str, BTreeMap<u32, (u64, i64)>> = BTreeMap::new();
        let mut bad_seconds = 0;
        let mut injections: HashMap<&str, Vec<(i64, &str)>> = HashMap::new();
        let mut crash_injections: Vec<i64> = Vec::new();
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
                        secs.insert(s as u32, (e.int("count").max(0) as u64, e.ts_us));
                    }
                }
                // Network faults (`[net_faults]`) are counted by the lab core, not as chat faults.
                "fault_injected" if troupe_lab::netfaults::is_net_kind(e.str("kind")) => {}
                "fault_injected" => {
                    injected += 1;
                    injections.entry(e.str("target")).or_default().push((e.ts_us, e.str("id")));
                    if CRASHING_KINDS.contains(&e.str("kind")) {
                        crash_injections.push(e.ts_us);
                    }
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
        let expected_detections = crash_injections.iter().filter(|&&ts| ts >= lo && ts < hi).count() as u64
            * u64::from(chat.clients_per_server);
        // Definition 3: due detections not logged, before and in the window's last second.
        let grace_from = hi - (troupe_lab::stats::RECOVERY_GRACE_MS * 1000.0) as i64;
        let expected_late = crash_injections.iter().filter(|&&ts| ts >= grace_from.max(lo) && ts < hi).count() as u64
            * u64::from(chat.clients_per_server);
        let logged_late = detections.iter().filter(|d| d.injected_us >= grace_from).count() as u64;
        let logged_early = detections.len() as u64 - logged_late;
        let detections_missed = (expected_detections - expected_late).saturating_sub(logged_early);
        let detections_open_at_end = expected_late.saturating_sub(logged_late);
        // Definition 4.
        let end = events.iter().map(|e| e.ts_us).max().unwrap_or(hi).max(hi);
        let (reconnections, unreconnected_left) = close_detections(&detections, &reconnected, end);
        // A censored sample runs from its detection to `end`: it came in the window's last
        // second when it is shorter than that second plus the run's tail after the window.
        let tail_ms = (end - hi).max(0) as f64 / 1000.0;
        let late = |left: &&f64| troupe_lab::stats::began_late(**left, tail_ms);
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
        let (seconds, mean, short_nodes) = throughput(&per_node, lo, d);
        let ceiling = chat.ceiling();
        let mut det_ms: Vec<f64> = detections.iter().map(|x| x.ms).collect();
        let rec_ms: Vec<f64> = reconnections.iter().map(|x| x.ms).collect();
        let planned_faults = sched.iter().filter(|a| !troupe_lab::netfaults::is_net_kind(&a.kind)).count() as u64;
        ChatStats {
            test_type: cfg.str("test_type").to_owned(),
            window_start_us: start,
            duration_s: d,
            msg_per_s_mean: mean,
            ceiling,
            pct_ceiling: (ceiling > 0.0).then(|| 100.0 * mean / ceiling),
            ceiling_resolution_pct: (ceiling > 0.0 && d > 0)
                .then(|| 100.0 * chat.send_interval_ms as f64 / (d as f64 * 1000.0)),
            detection_ms: Dist::of(&mut det_ms),
            reconnection_ms: Dist::of_censored(&rec_ms, &unreconnected_left),
            all_connected_pct,
            detections: detections.len(),
            expected_detections,
            detections_missed,
            detections_open_at_end,
            reconnections: reconnections.len(),
            unreconnected: unreconnected_left.iter().filter(|l| !late(l)).count(),
            open_at_end: unreconnected_left.iter().filter(late).count(),
            detection_rows: detections,
            reconnection_rows: reconnections,
            unmatched_detections: unmatched,
            injected,
            injected_faults: injected,
            planned_faults,
            missing_faults: planned_faults.saturating_sub(injected + skipped),
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

    /// What the run failed to do although its events are complete (definition 7).
    pub fn degradations(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.missing_faults > 0 {
            out.push(format!(
                "{} of {} planned faults were neither carried out nor reported skipped",
                self.missing_faults, self.planned_faults
            ));
        }
        if self.skipped_faults > 0 {
            out.push(format!("{} of {} planned faults skipped", self.skipped_faults, self.planned_faults));
        }
        if self.detections_missed > 0 {
            out.push(format!(
                "{} of {} due detections logged ({} missing of faults injected before the window's last second)",
                self.detections, self.expected_detections, self.detections_missed
            ));
        }
        if self.unreconnected > 0 {
            out.push(format!("{} of {} detections never followed by a rejoin", self.unreconnected, self.detections));
        }
        if self.gave_up > 0 {
            out.push(format!("{} clients gave up rejoining", self.gave_up));
        }
        if self.errors > 0 {
            out.push(format!("{} errors reported by the nodes", self.errors));
        }
        if let (Some(pct), Some(res)) = (self.pct_ceiling, self.ceiling_resolution_pct) {
            if pct > 100.0 + res {
                out.push(format!(
                    "throughput read {pct:.2}% of the ceiling, above it by more than the reading's resolution ({res:.2}%): not a measurement"
                ));
            }
        }
        out
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
            "mean {} ms, median {}, p99 {}, min {}, max {} (n = {}{})",
            d.show("mean", 2),
            d.show("median", 2),
            d.show("p99", 2),
            d.show("min", 2),
            d.show("max", 2),
            d.n,
            if d.censored > 0 { format!(", {} never rejoined", d.censored) } else { String::new() }
        ),
    }
}

impl RunAnalysis for ChatStats {
    fn completeness_problem(&self, cfg: &Config) -> Option<String> {
        ChatStats::completeness_problem(self, cfg)
    }

    fn degradations(&self, _cfg: &Config) -> Vec<String> {
        ChatStats::degradations(self)
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
        rows.push((
            "detections logged / due".into(),
            format!("{} / {} ({} unmatched)", self.detections, self.expected_detections, self.unmatched_detections),
        ));
        rows.push(("reconnection".into(), dist_text(&self.reconnection_ms)));
        rows.push(("all clients connected".into(), format!("{:.3}% of the window", self.all_connected_pct)));
        rows.push((
            "detections rejoined / never rejoined".into(),
            format!(
                "{} / {} (+ {} in the window's last second)",
                self.reconnections, self.unreconnected, self.open_at_end
            ),
        ));
        rows.push((
            "faults carried out / planned".into(),
            format!(
                "{} / {} ({} skipped, {} missing)",
                self.injected_faults, self.planned_faults, self.skipped_faults, self.missing_faults
            ),
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
            s.push_str(&format!("{}detection p99 {} ms", if s.is_empty() { "" } else { ", " }, d.show("p99", 1)));
        }
        if let Some(r) = &self.reconnection_ms {
            s.push_str(&format!(", reconnection mean {} ms", r.show("mean", 1)));
        }
        if s.is_empty() {
            s = format!("faults {}", self.injected);
        }
        s
    }
}
