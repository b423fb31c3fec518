//! Statistics of one iot run, computed from its recorded events and schedule alone (the iot
//! peer contract, "Statistics"), so `troupe lab report` can always rebuild them and every
//! runtime is measured by the same code.
//!
//! Definitions:
//! 1. The window is `[start_us, start_us + duration_s)` from the orchestrator's
//!    `ready {what: "window", start_us}`.
//! 2. `reports_per_s`, on the events' one clock: the collector's `throughput {second, count}`
//!    counts the reports completed since its previous one (or since the window start), so the
//!    counts' sum is divided by the time from the window start to the last one's stamp, not by
//!    the number of seconds its timer meant to measure (a late timer never reads high).
//! 3. `mttr_ms`, over every device restart (`restarted` of a `device-k`): the restart is closed
//!    by the first `reconnected {target, ms}` of that device stamped at or after it, less
//!    `conform.rs`' `MTTR_SLACK_MS` (100 ms: a device process may stamp `restarted` a moment
//!    after the new incarnation started, and a fast owner can report it current first, as
//!    conformance rule `iot.6` allows), and before its next restart (less the same slack): the
//!    device's status current and known to every server; the sample is `ms`, from the device's
//!    restart. A restart with none is a sample of at least the time
//!    from it to the run's last event (censored, troupe_lab::stats rules 5-7), and `unrecovered`
//!    when it came at least [`troupe_lab::stats::RECOVERY_GRACE_MS`] before the window's end
//!    (`open_at_end` otherwise): median, p99 (nearest rank), mean, min, max, count (every
//!    restart), `unrecovered`.
//!    A kill whose restart would fall after the window's end is not restarted (the schedule's
//!    doing, counted in `kills_not_restarted`), so it is not a sample.
//! 4. Kills carried out are the `fault_injected` events, by kind; restarts the `restarted`
//!    events; detections the `fault_detected` events; skipped faults, errors and dropped events
//!    are summed over the processes' `run_finished`.
//! 5. Complete: `ready {what: "servers"}` summing to `servers`, `ready {what: "devices"}`
//!    summing to `devices`, the window opened, one `throughput` per window second, a
//!    `run_finished` from every process that wrote `run_started` (a killed server's restart
//!    writes it under the same name) and was not down at the end (a server whose last
//!    `node_kill` came after its last `restarted`: killed too late in the window to be
//!    restarted, it never writes one), no failed process, no dropped event.
//! 6. Degraded (troupe_lab::workload rule 6): unrecovered restarts, planned kills neither carried
//!    out nor reported skipped, skipped kills, errors reported by the processes.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::json;

use super::config::IotConfig;
use super::schedule::NODE_KILL;
use troupe_lab::config::Config;
use troupe_lab::events::Event;
use troupe_lab::schedule::FaultAction;
use troupe_lab::stats::Dist;
use troupe_lab::workload::RunAnalysis;

/// A kill carried out, for the plots.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Mark {
    /// Offset from the window start, s.
    pub at_s: f64,
    /// `device-k` or `server-s`.
    pub target: String,
    /// `kill` or `node_kill`.
    pub kind: String,
}

/// What an iot run measured.
#[derive(Debug, Clone, Serialize)]
pub struct IotStats {
    /// Window start, µs.
    pub window_start_us: Option<i64>,
    /// Window length, s.
    pub duration_s: u64,
    /// (second, reports completed).
    pub seconds: Vec<(u64, u64)>,
    /// Definition 2.
    pub reports_per_s: f64,
    /// Definition 3: every sample, ms, in event order.
    pub mttr_samples: Vec<f64>,
    /// Definition 3.
    pub mttr_ms: Option<Dist>,
    /// Definition 3: device restarts never followed by their `reconnected`, made at least a
    /// second before the window's end.
    pub unrecovered: u64,
    /// Definition 3: the same, made in the window's last second (censored, not a degradation).
    pub open_at_end: u64,
    /// Device kills carried out but not restarted (the restart would fall after the window).
    pub kills_not_restarted: u64,
    /// Device kills carried out.
    pub device_kills: u64,
    /// Server kills carried out.
    pub server_kills: u64,
    /// Kills the schedule planned.
    pub planned_kills: u64,
    /// `restarted` events.
    pub restarts: u64,
    /// `fault_detected` events.
    pub detections: u64,
    /// Summed `skipped_faults`.
    pub skipped_faults: i64,
    /// Summed `errors`.
    pub errors: i64,
    /// Summed `dropped_events`.
    pub dropped_events: i64,
    /// Kills carried out, for the plots.
    pub marks: Vec<Mark>,
    servers_ready: i64,
    devices_ready: i64,
    bad_seconds: u64,
    unfinished_nodes: Vec<String>,
    failed_nodes: Vec<String>,
}

impl IotStats {
    /// Computes the statistics of a run (definitions 1-5).
    pub fn compute(cfg: &Config, events: &[Event], sched: &[FaultAction]) -> IotStats {
        let c = IotConfig::from_config(cfg);
        let window_start_us = events
            .iter()
            .find(|e| e.ev == "ready" && e.str("what") == "window")
            .map(|e| e.raw.get("start_us").and_then(serde_json::Value::as_i64).unwrap_or(e.ts_us));
        let mut per_second: BTreeMap<u64, u64> = BTreeMap::new();
        let mut last_throughput_us = None;
        let mut bad_seconds = 0;
        let (mut servers_ready, mut devices_ready) = (0, 0);
        let mut started = BTreeSet::new();
        let mut finished = BTreeSet::new();
        let mut down = BTreeSet::new();
        let mut st = IotStats {
            window_start_us,
            duration_s: c.duration_s,
            seconds: Vec::new(),
            reports_per_s: 0.0,
            mttr_samples: Vec::new(),
            mttr_ms: None,
            unrecovered: 0,
            open_at_end: 0,
            kills_not_restarted: 0,
            device_kills: 0,
            server_kills: 0,
            planned_kills: sched.iter().filter(|a| !troupe_lab::netfaults::is_net_kind(&a.kind)).count() as u64,
            restarts: 0,
            detections: 0,
            skipped_faults: 0,
            errors: 0,
            dropped_events: 0,
            marks: Vec::new(),
            servers_ready: 0,
            devices_ready: 0,
            bad_seconds: 0,
            unfinished_nodes: Vec::new(),
            failed_nodes: Vec::new(),
        };
        let mut rejoins: BTreeMap<&str, Vec<(i64, f64)>> = BTreeMap::new();
        let mut device_restarts: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
        let last_us = events.iter().map(|e| e.ts_us).max().unwrap_or(0);
        for e in events {
            match e.ev.as_str() {
                "run_started" => {
                    started.insert(e.node.clone());
                }
                "run_finished" => {
                    finished.insert(e.node.clone());
                    st.skipped_faults += e.int("skipped_faults");
                    st.errors += e.int("errors");
                    st.dropped_events += e.int("dropped_events");
                    if let Some(f) = e.raw.get("failed_nodes").and_then(serde_json::Value::as_array) {
                        st.failed_nodes.extend(f.iter().filter_map(|v| v.as_str().map(str::to_owned)));
                    }
                }
                "ready" => match e.str("what") {
                    "servers" => servers_ready += e.int("count"),
                    "devices" => devices_ready += e.int("count"),
                    _ => {}
                },
                "throughput" => {
                    let s = e.int("second");
                    if s < 0 || s as u64 >= c.duration_s || per_second.contains_key(&(s as u64)) {
                        bad_seconds += 1;
                    } else {
                        per_second.insert(s as u64, e.int("count").max(0) as u64);
                        last_throughput_us = last_throughput_us.max(Some(e.ts_us));
                    }
                }
                "reconnected" => {
                    if let Some(ms) = e.raw.get("ms").and_then(serde_json::Value::as_f64) {
                        rejoins.entry(e.str("target")).or_default().push((e.ts_us, ms));
                    }
                }
                // Network faults (`[net_faults]`) are counted by the lab core, not as kills.
                "fault_injected" if troupe_lab::netfaults::is_net_kind(e.str("kind")) => {}
                "fault_injected" => {
                    if e.str("kind") == NODE_KILL {
                        st.server_kills += 1;
                        down.insert(e.str("target").to_string());
                    } else {
                        st.device_kills += 1;
                    }
                    let at_s = window_start_us.map_or(0.0, |w| (e.ts_us - w) as f64 / 1e6);
                    st.marks.push(Mark { at_s, target: e.str("target").into(), kind: e.str("kind").into() });
                }
                "restarted" => {
                    st.restarts += 1;
                    down.remove(e.str("target"));
                    if e.str("target").starts_with("device-") {
                        device_restarts.entry(e.str("target")).or_default().push(e.ts_us);
                    }
                }
                "fault_detected" => st.detections += 1,
                _ => {}
            }
        }
        st.seconds = per_second.into_iter().collect();
        if !st.seconds.is_empty() {
            let total = st.seconds.iter().map(|s| s.1 as f64).sum::<f64>();
            // Definition 2; without a window start (an incomplete run) the timer's seconds.
            st.reports_per_s = match (window_start_us, last_throughput_us) {
                (Some(w), Some(t)) if t > w => total * 1e6 / (t - w) as f64,
                _ => total / c.duration_s as f64,
            };
        }
        // Events come in stamp order, but sort anyway: close_restarts needs both sorted.
        for v in device_restarts.values_mut() {
            v.sort_unstable();
        }
        for v in rejoins.values_mut() {
            v.sort_unstable_by_key(|r| r.0);
        }
        let (samples, open) = close_restarts(&device_restarts, &rejoins, last_us);
        st.mttr_samples = samples;
        // A censored sample runs from its restart to the last event: it came in the window's
        // last second when it is shorter than that second plus the run's tail after the window.
        let hi = window_start_us.map_or(last_us, |w| w + c.duration_s as i64 * 1_000_000);
        let tail_ms = (last_us - hi).max(0) as f64 / 1000.0;
        st.unrecovered = open.iter().filter(|&&left| !troupe_lab::stats::began_late(left, tail_ms)).count() as u64;
        st.open_at_end = open.len() as u64 - st.unrecovered;
        st.kills_not_restarted = st.device_kills.saturating_sub(device_restarts.values().map(|v| v.len() as u64).sum());
        st.mttr_ms = Dist::of_censored(&st.mttr_samples, &open);
        st.servers_ready = servers_ready;
        st.devices_ready = devices_ready;
        st.bad_seconds = bad_seconds;
        st.unfinished_nodes = started.difference(&finished).filter(|n| !down.contains(*n)).cloned().collect();
        st
    }

    /// Why the events are not a complete run (definition 5), if they are not.
    pub fn completeness_problem(&self, cfg: &Config) -> Option<String> {
        let c = IotConfig::from_config(cfg);
        if !self.failed_nodes.is_empty() {
            return Some(format!("node process failed: {}", self.failed_nodes.join("; ")));
        }
        if self.servers_ready != i64::from(c.servers) {
            return Some(format!(
                "{} of {} servers said `ready {{what: \"servers\"}}`: the cluster never formed",
                self.servers_ready, c.servers
            ));
        }
        if self.devices_ready != c.devices as i64 {
            return Some(format!(
                "{} of {} devices were ready (`ready {{what: \"devices\"}}`): not every device had a report summed",
                self.devices_ready, c.devices
            ));
        }
        if self.window_start_us.is_none() {
            return Some("no `ready {what: \"window\"}` event: the window never opened".into());
        }
        if self.seconds.len() as u64 != c.duration_s || self.bad_seconds > 0 {
            return Some(format!(
                "expected one `throughput` event per window second (0..{}), got {} distinct{}",
                c.duration_s,
                self.seconds.len(),
                if self.bad_seconds > 0 {
                    format!(" and {} duplicated or out of range", self.bad_seconds)
                } else {
                    String::new()
                }
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

    /// The MTTR summary as `summary.json` holds it: median, p99, mean, min, max, count (every
    /// restart), `unrecovered`, and the statistics that are lower bounds.
    pub fn mttr_json(&self) -> serde_json::Value {
        match &self.mttr_ms {
            None => json!({"median": null, "p99": null, "count": 0, "unrecovered": 0}),
            Some(d) => json!({
                "median": d.median, "p99": d.p99, "mean": d.mean, "min": d.min, "max": d.max, "count": d.n,
                "unrecovered": self.unrecovered, "open_at_end": self.open_at_end, "lower_bounds": d.lower_bounds,
            }),
        }
    }

    /// What the run failed to do although its events are complete (definition 6).
    pub fn degradations(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.unrecovered > 0 {
            out.push(format!("{} device restarts never became current on the servers", self.unrecovered));
        }
        let accounted = self.device_kills + self.server_kills + self.skipped_faults.max(0) as u64;
        if accounted < self.planned_kills {
            out.push(format!(
                "{} of {} planned kills were neither carried out nor reported skipped",
                self.planned_kills - accounted,
                self.planned_kills
            ));
        }
        if self.skipped_faults > 0 {
            out.push(format!("{} of {} planned kills skipped", self.skipped_faults, self.planned_kills));
        }
        if self.errors > 0 {
            out.push(format!("{} errors reported by the processes (refused devices, lost orchestrator)", self.errors));
        }
        out
    }
}

/// Definition 3: closes each device restart with the device's first `reconnected` at or after
/// it and before its next restart (both lists sorted). Returns the samples (ms) and, for each restart left open,
/// the time from it to `last_us`, ms.
fn close_restarts(
    restarts: &BTreeMap<&str, Vec<i64>>,
    rejoins: &BTreeMap<&str, Vec<(i64, f64)>>,
    last_us: i64,
) -> (Vec<f64>, Vec<f64>) {
    let slack_us = (super::conform::MTTR_SLACK_MS * 1000.0) as i64;
    let (mut closed, mut open) = (Vec::new(), Vec::new());
    for (device, starts) in restarts {
        let rj = rejoins.get(device).map(Vec::as_slice).unwrap_or_default();
        // Definition 3: a sample stamped up to the slack before its restart still closes it.
        let early: Vec<i64> = starts.iter().map(|at| at - slack_us).collect();
        for (at, rejoin) in troupe_lab::stats::close_in_order(&early, rj) {
            match rejoin {
                Some(&(_, ms)) => closed.push(ms),
                None => open.push((last_us - (at + slack_us)).max(0) as f64 / 1000.0),
            }
        }
    }
    (closed, open)
}

fn ms_text(d: &Option<Dist>) -> String {
    match d {
        None => "no samples".into(),
        Some(d) => format!(
            "median {} ms, p99 {} ms (mean {}, n = {}{})",
            d.show("median", 1),
            d.show("p99", 1),
            d.show("mean", 1),
            d.n,
            if d.censored > 0 { format!(", {} never recovered", d.censored) } else { String::new() }
        ),
    }
}

impl RunAnalysis for IotStats {
    fn completeness_problem(&self, cfg: &Config) -> Option<String> {
        IotStats::completeness_problem(self, cfg)
    }

    fn degradations(&self, _cfg: &Config) -> Vec<String> {
        IotStats::degradations(self)
    }

    fn summary_rows(&self) -> Vec<(String, String)> {
        vec![
            ("reports/s".into(), format!("{:.1}", self.reports_per_s)),
            ("MTTR (restarted device current on every server)".into(), ms_text(&self.mttr_ms)),
            (
                "kills carried out / planned".into(),
                format!("{} devices + {} servers / {}", self.device_kills, self.server_kills, self.planned_kills),
            ),
            ("restarts".into(), self.restarts.to_string()),
            ("owner failures detected by devices".into(), self.detections.to_string()),
            ("skipped faults".into(), self.skipped_faults.to_string()),
            ("errors (refused devices, lost orchestrator)".into(), self.errors.to_string()),
        ]
    }

    fn summary_json(&self) -> serde_json::Value {
        json!({
            "reports_per_s": self.reports_per_s,
            "mttr_ms": self.mttr_json(),
            "seconds": self.seconds.len(),
            "device_kills": self.device_kills,
            "server_kills": self.server_kills,
            "planned_kills": self.planned_kills,
            "kills_not_restarted": self.kills_not_restarted,
            "unrecovered": self.unrecovered,
            "open_at_end": self.open_at_end,
            "restarts": self.restarts,
            "detections": self.detections,
            "skipped_faults": self.skipped_faults,
            "errors": self.errors,
            "dropped_events": self.dropped_events,
        })
    }

    fn headline(&self) -> String {
        match &self.mttr_ms {
            Some(d) => {
                format!(
                    "{:.1} reports/s, MTTR median {} ms (p99 {})",
                    self.reports_per_s,
                    d.show("median", 1),
                    d.show("p99", 1)
                )
            }
            None => format!("{:.1} reports/s", self.reports_per_s),
        }
    }
}
