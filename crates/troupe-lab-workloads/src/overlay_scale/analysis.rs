//! The statistics of an `overlay-scale` run, from its recorded events alone (rule 4 of
//! [`troupe_lab::workload`]): total bytes and messages (the sum of the per-second `traffic`), the
//! formation time and the time to convergence. `summary.json` holds `bytes_total`,
//! `messages_total` and `convergence_ms` (null when the counter did not converge in the run),
//! plus the config's `mode`, `overlay`, `nodes` and `seed` so a sweep's report needs no folder
//! names. With `mode=processes` (`processes/mod.rs`) the times are wall-clock, the bytes and
//! messages the node layer's, and the summary adds the processes' figures (`nodes_started`,
//! `nodes_converged`, `rss_kb_total`, `rss_kb_per_node`, `counter_sent`, ...); a node that did
//! not start, died or did not converge, or an overlay that did not form, makes the run
//! `degraded` (rule 6 of `processes/mod.rs`), while in the simulator a counter that did not
//! converge is a result, not a failure.

use std::collections::BTreeMap;

use serde::Serialize;

use super::config::OverlayScaleConfig;
use troupe_lab::config::Config;
use troupe_lab::events::Event;
use troupe_lab::workload::RunAnalysis;

/// What a run of `overlay-scale` measured.
#[derive(Debug, Clone, Serialize)]
pub struct OverlayStats {
    /// `sim` or `processes`.
    pub mode: String,
    /// The overlay simulated.
    pub overlay: String,
    /// Nodes.
    pub nodes: usize,
    /// The seed.
    pub seed: i64,
    /// Every byte sent, membership included.
    pub bytes_total: u64,
    /// Every message sent.
    pub messages_total: u64,
    /// Bytes sent after the overlay formed (the counter's own traffic plus HyParView upkeep).
    pub bytes_after_formed: u64,
    /// Simulated ms at which the overlay formed.
    pub formed_ms: Option<u64>,
    /// Simulated ms from `formed` to every node holding every increment.
    pub convergence_ms: Option<u64>,
    /// Simulated ms the run covered.
    pub sim_ms: Option<u64>,
    /// Wall-clock ms the simulation took.
    pub wall_ms: Option<u64>,
    /// Processes: node processes that started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes_started: Option<u64>,
    /// Processes: nodes whose counter held every increment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes_converged: Option<u64>,
    /// Processes: the resident memory of every node process at the end, summed (kB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rss_kb_total: Option<u64>,
    /// Processes: `rss_kb_total` per node process read (kB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rss_kb_per_node: Option<u64>,
    /// Processes: the largest node process (kB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rss_kb_max: Option<u64>,
    /// Processes: counter states sent (one per neighbour per round), every node summed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counter_sent: Option<u64>,
    /// Processes: counter sends that failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counter_send_failures: Option<u64>,
    /// Processes: what went wrong (failed starts, lost nodes, no formation, no convergence).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// Per simulated second: (second, bytes, messages).
    #[serde(skip)]
    pub seconds: Vec<(u64, u64, u64)>,
    /// `traffic` seconds seen twice.
    #[serde(skip)]
    duplicates: usize,
    #[serde(skip)]
    started: bool,
    #[serde(skip)]
    finished: bool,
    #[serde(skip)]
    summed_up: bool,
}

impl OverlayStats {
    /// Computes the statistics from a run's events.
    pub fn compute(cfg: &Config, events: &[Event]) -> OverlayStats {
        let typed = OverlayScaleConfig::from_config(cfg);
        let mut per_second: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        let mut st = OverlayStats {
            mode: if typed.processes { "processes" } else { "sim" }.to_string(),
            overlay: typed.overlay_name.clone(),
            nodes: typed.nodes,
            seed: cfg.int("seed"),
            bytes_total: 0,
            messages_total: 0,
            bytes_after_formed: 0,
            formed_ms: None,
            convergence_ms: None,
            sim_ms: None,
            wall_ms: None,
            nodes_started: None,
            nodes_converged: None,
            rss_kb_total: None,
            rss_kb_per_node: None,
            rss_kb_max: None,
            counter_sent: None,
            counter_send_failures: None,
            problems: Vec::new(),
            seconds: Vec::new(),
            duplicates: 0,
            started: false,
            finished: false,
            summed_up: false,
        };
        let mut formation_failed = None;
        let uint = |e: &Event, f: &str| e.raw.get(f).and_then(serde_json::Value::as_u64);
        for e in events {
            match (e.ev.as_str(), e.str("what")) {
                ("run_started", _) => st.started = true,
                ("traffic", _) => {
                    let second = e.int("second").max(0) as u64;
                    let row = (e.int("bytes").max(0) as u64, e.int("messages").max(0) as u64);
                    if per_second.insert(second, row).is_some() {
                        st.duplicates += 1;
                    }
                }
                ("ready", "formed") => st.formed_ms = uint(e, "sim_ms"),
                ("ready", "converged") => st.convergence_ms = uint(e, "ms"),
                ("run_finished", _) => {
                    st.finished = true;
                    st.sim_ms = uint(e, "sim_ms");
                    st.wall_ms = uint(e, "wall_ms");
                }
                ("node_failed", _) => {
                    st.problems.push(format!("node os-{} did not start: {}", e.int("index"), e.str("why")))
                }
                ("node_lost", _) => st.problems.push(format!("node os-{} died: {}", e.int("index"), e.str("why"))),
                ("formation_failed", _) => formation_failed = Some(e.str("why").to_string()),
                ("processes", _) => st.sum_up(e),
                _ => {}
            }
        }
        st.problems.extend(formation_failed);
        if typed.processes && st.summed_up && st.convergence_ms.is_none() {
            let (c, n) = (st.nodes_converged.unwrap_or(0), e_running(events));
            st.problems.push(format!(
                "the counter did not converge within duration_s: {c} of {n} running nodes held every increment"
            ));
        }
        st.seconds = per_second.into_iter().map(|(s, (b, m))| (s, b, m)).collect();
        st.bytes_total = st.seconds.iter().map(|r| r.1).sum();
        st.messages_total = st.seconds.iter().map(|r| r.2).sum();
        let formed_s = st.formed_ms.unwrap_or(0) / 1000;
        st.bytes_after_formed = st.seconds.iter().filter(|r| r.0 >= formed_s).map(|r| r.1).sum();
        st
    }

    /// Reads the `processes` event (rule 5 of `processes/mod.rs`).
    fn sum_up(&mut self, e: &Event) {
        let uint = |f: &str| e.raw.get(f).and_then(serde_json::Value::as_u64);
        self.summed_up = true;
        self.nodes_started = uint("nodes_started");
        self.nodes_converged = uint("nodes_converged");
        self.rss_kb_total = uint("rss_kb_total");
        self.rss_kb_max = uint("rss_kb_max");
        self.rss_kb_per_node = match (self.rss_kb_total, uint("rss_read")) {
            (Some(t), Some(n)) if n > 0 => Some(t / n),
            _ => None,
        };
        self.counter_sent = uint("counter_sent");
        self.counter_send_failures = uint("counter_send_failures");
        let list = |f: &str| -> Vec<String> {
            e.raw.get(f).and_then(|v| v.as_array()).map_or(Vec::new(), |a| {
                a.iter().map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_owned)).collect()
            })
        };
        self.problems.extend(list("command_failures").into_iter().map(|c| format!("a command failed: {c}")));
    }

    /// The seconds the run must report: every simulated second up to `sim_ms`.
    fn expected_seconds(&self) -> Option<u64> {
        self.sim_ms.map(|ms| ms.div_ceil(1000))
    }
}

/// The nodes running at the end, as the `processes` event says.
fn e_running(events: &[Event]) -> u64 {
    events.iter().rev().find(|e| e.ev == "processes").map_or(0, |e| e.int("nodes_running").max(0) as u64)
}

impl RunAnalysis for OverlayStats {
    fn completeness_problem(&self, _cfg: &Config) -> Option<String> {
        if !self.started {
            return Some("no `run_started` event: the simulation did not start".into());
        }
        if !self.finished {
            return Some("no `run_finished` event: the simulation did not end cleanly (see stderr.txt)".into());
        }
        if self.formed_ms.is_none() {
            return Some("no `ready {what: \"formed\"}` event: the overlay never formed".into());
        }
        if self.mode == "processes" {
            if !self.summed_up {
                return Some("no `processes` event: the node processes' figures were not read (see stderr.txt)".into());
            }
            let contiguous = self.seconds.iter().enumerate().all(|(i, r)| r.0 == i as u64);
            if self.seconds.is_empty() || !contiguous || self.duplicates > 0 {
                return Some(format!(
                    "expected one `traffic` event per second from 0 on, got {} ({} duplicated, contiguous: {contiguous})",
                    self.seconds.len(),
                    self.duplicates
                ));
            }
            return None;
        }
        let want = self.expected_seconds().unwrap_or(0);
        let contiguous = self.seconds.iter().enumerate().all(|(i, r)| r.0 == i as u64);
        if self.seconds.len() as u64 != want || !contiguous || self.duplicates > 0 {
            return Some(format!(
                "expected one `traffic` event for each of the {want} simulated seconds, got {} ({} duplicated)",
                self.seconds.len(),
                self.duplicates
            ));
        }
        None
    }

    fn degradations(&self, _cfg: &Config) -> Vec<String> {
        self.problems.clone()
    }

    fn summary_rows(&self) -> Vec<(String, String)> {
        let conv = self.convergence_ms.map_or("did not converge in the run".to_string(), |ms| format!("{ms} ms"));
        if self.mode == "processes" {
            let mb = |kb: Option<u64>| kb.map_or("-".to_string(), |k| format!("{:.1} MB", k as f64 / 1024.0));
            return vec![
                ("overlay".into(), format!("{} ({} node processes, seed {})", self.overlay, self.nodes, self.seed)),
                (
                    "nodes started / converged".into(),
                    format!("{} / {}", self.nodes_started.unwrap_or(0), self.nodes_converged.unwrap_or(0)),
                ),
                ("bytes_total (node layer)".into(), self.bytes_total.to_string()),
                ("messages_total (frames)".into(), self.messages_total.to_string()),
                ("counter states sent".into(), self.counter_sent.unwrap_or(0).to_string()),
                ("formed at (wall)".into(), format!("{} ms", self.formed_ms.unwrap_or(0))),
                ("convergence_ms (wall, after go)".into(), conv),
                ("resident memory, all nodes".into(), mb(self.rss_kb_total)),
                (
                    "resident memory per node (mean / max)".into(),
                    format!("{} / {}", mb(self.rss_kb_per_node), mb(self.rss_kb_max)),
                ),
                ("wall time".into(), format!("{} ms", self.wall_ms.unwrap_or(0))),
            ];
        }
        vec![
            ("overlay".into(), format!("{} ({} nodes, seed {})", self.overlay, self.nodes, self.seed)),
            ("bytes_total".into(), self.bytes_total.to_string()),
            ("messages_total".into(), self.messages_total.to_string()),
            ("formed at (simulated)".into(), format!("{} ms", self.formed_ms.unwrap_or(0))),
            ("convergence_ms (simulated, after formed)".into(), conv),
            (
                "simulated / wall time".into(),
                format!("{} ms / {} ms", self.sim_ms.unwrap_or(0), self.wall_ms.unwrap_or(0)),
            ),
        ]
    }

    fn summary_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    fn headline(&self) -> String {
        format!(
            "{}{} x{}: {:.1} MB, {} msgs, converged {}",
            if self.mode == "processes" { "processes " } else { "" },
            self.overlay,
            self.nodes,
            self.bytes_total as f64 / 1e6,
            self.messages_total,
            self.convergence_ms.map_or("never".to_string(), |ms| format!("in {ms} ms"))
        )
    }
}
