//! The statistics of an `overlay-scale` run, from its recorded events alone (rule 4 of
//! [`troupe_lab::workload`]): total bytes and messages (the sum of the per-second `traffic`), the
//! formation time and the time to convergence. `summary.json` holds `bytes_total`,
//! `messages_total` and `convergence_ms` (null when the counter did not converge in the run),
//! plus the config's `overlay`, `nodes` and `seed` so a sweep's report needs no folder names.

use std::collections::BTreeMap;

use serde::Serialize;

use super::config::OverlayScaleConfig;
use troupe_lab::config::Config;
use troupe_lab::events::Event;
use troupe_lab::workload::RunAnalysis;

/// What a run of `overlay-scale` measured.
#[derive(Debug, Clone, Serialize)]
pub struct OverlayStats {
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
}

impl OverlayStats {
    /// Computes the statistics from a run's events.
    pub fn compute(cfg: &Config, events: &[Event]) -> OverlayStats {
        let typed = OverlayScaleConfig::from_config(cfg);
        let mut per_second: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        let mut st = OverlayStats {
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
            seconds: Vec::new(),
            duplicates: 0,
            started: false,
            finished: false,
        };
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
                _ => {}
            }
        }
        st.seconds = per_second.into_iter().map(|(s, (b, m))| (s, b, m)).collect();
        st.bytes_total = st.seconds.iter().map(|r| r.1).sum();
        st.messages_total = st.seconds.iter().map(|r| r.2).sum();
        let formed_s = st.formed_ms.unwrap_or(0) / 1000;
        st.bytes_after_formed = st.seconds.iter().filter(|r| r.0 >= formed_s).map(|r| r.1).sum();
        st
    }

    /// The seconds the run must report: every simulated second up to `sim_ms`.
    fn expected_seconds(&self) -> Option<u64> {
        self.sim_ms.map(|ms| ms.div_ceil(1000))
    }
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

    fn summary_rows(&self) -> Vec<(String, String)> {
        let conv = self.convergence_ms.map_or("did not converge in the run".to_string(), |ms| format!("{ms} ms"));
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
            "{} x{}: {:.1} MB, {} msgs, converged {}",
            self.overlay,
            self.nodes,
            self.bytes_total as f64 / 1e6,
            self.messages_total,
            self.convergence_ms.map_or("never".to_string(), |ms| format!("in {ms} ms"))
        )
    }
}
