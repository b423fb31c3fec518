//! The statistics of one latency run, from its events alone (rule 4 of [`troupe_lab::workload`]).
//!
//! Rules:
//! 1. A run is complete when it has `run_started`, exactly `messages` `msg` events, each
//!    (pair, seq) once, every pair with its share, a `window` event, and `run_finished` with no
//!    errors.
//! 2. Latency: the distribution of the `msg` events' `latency_us`, shown in ms: p50 (median,
//!    interpolated), p99 (nearest rank), mean, max.
//! 3. Throughput: messages / window seconds, and messages x payload bytes / 10^6 / window
//!    seconds (MB/s, decimal).
//! 4. `summary.json`: `latency_ms.{p50,p99,mean,max}`, `throughput_msgs_per_s`,
//!    `throughput_mb_per_s`, `messages`, `rtt_ms`, `transport`, plus `pairs`,
//!    `payload_bytes`, `parallelism`, `window_s` and the relay's counts when recorded; `overlay`,
//!    and with an overlay node A's `route` event (`{kind, peers}`) and `routed_sessions`, the
//!    sessions of node A that ran through another node (1 when node B was reached through
//!    the hub).

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::config::LatencyConfig;
use troupe_lab::config::Config;
use troupe_lab::events::Event;
use troupe_lab::stats::{json_num as num, Dist};
use troupe_lab::workload::RunAnalysis;

/// One message's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// The pair.
    pub pair: u64,
    /// Its sequence number within the pair.
    pub seq: u64,
    /// Send to ack, µs.
    pub latency_us: u64,
}

/// The statistics of a latency run.
#[derive(Debug, Clone)]
pub struct LatencyStats {
    /// The typed config.
    pub cfg: LatencyConfig,
    /// The runtime (`rt` of the events).
    pub runtime: String,
    /// Every message, in (pair, seq) order.
    pub samples: Vec<Sample>,
    /// Latency distribution, ms (rule 2).
    pub dist_ms: Option<Dist>,
    /// The window, s.
    pub window_s: Option<f64>,
    /// The relay's counts, as recorded.
    pub relay: Option<Value>,
    /// Gossip A received (`channels_gossip`).
    pub gossip: Option<Value>,
    /// How node A's sessions ran (`route`, with an overlay).
    pub route: Option<Value>,
    problems: Vec<String>,
}

impl LatencyStats {
    /// Node A's sessions that ran through another node (rule 4), when it wrote its `route`.
    pub fn routed_sessions(&self) -> Option<u64> {
        troupe_lab::overlay_net::routed_sessions(self.route.as_ref()?)
    }

    /// Computes the statistics of a run from its config and events.
    pub fn compute(cfg: &Config, events: &[Event]) -> LatencyStats {
        let c = LatencyConfig::from_config(cfg);
        let mut problems = Vec::new();
        let runtime = events.first().map(|e| e.rt.clone()).unwrap_or_default();
        if !events.iter().any(|e| e.ev == "run_started") {
            problems.push("no run_started event".to_string());
        }
        let mut samples: Vec<Sample> = events
            .iter()
            .filter(|e| e.ev == "msg")
            .map(|e| Sample {
                pair: e.int("pair") as u64,
                seq: e.int("seq") as u64,
                latency_us: e.int("latency_us") as u64,
            })
            .collect();
        samples.sort_by_key(|s| (s.pair, s.seq));
        let distinct: BTreeSet<(u64, u64)> = samples.iter().map(|s| (s.pair, s.seq)).collect();
        if distinct.len() != samples.len() {
            problems.push(format!("{} msg events repeat a (pair, seq)", samples.len() - distinct.len()));
        }
        if samples.len() as u64 != c.messages {
            problems.push(format!("{} of {} messages recorded", samples.len(), c.messages));
        } else {
            for p in 0..c.pairs {
                let got = samples.iter().filter(|s| s.pair == p).count() as u64;
                if got != c.share(p) {
                    problems.push(format!("pair {p} recorded {got} messages, its share is {}", c.share(p)));
                    break;
                }
            }
        }
        let window_s = events.iter().find(|e| e.ev == "window").map(|e| e.int("elapsed_us") as f64 / 1e6);
        if window_s.is_none() {
            problems.push("no window event".to_string());
        }
        match events.iter().find(|e| e.ev == "run_finished") {
            None => problems.push("no run_finished event".to_string()),
            Some(f) if f.int("errors") > 0 => problems.push(format!("run_finished reports {} errors", f.int("errors"))),
            Some(_) => {}
        }
        let mut ms: Vec<f64> = samples.iter().map(|s| s.latency_us as f64 / 1000.0).collect();
        let dist_ms = Dist::of(&mut ms);
        let relay = events.iter().find(|e| e.ev == "relay").map(Event::own_fields);
        let gossip = events.iter().find(|e| e.ev == "gossip").map(Event::own_fields);
        let route = events.iter().find(|e| e.ev == "route").map(Event::own_fields);
        LatencyStats { cfg: c, runtime, samples, dist_ms, window_s, relay, gossip, route, problems }
    }

    /// Messages per second over the window (rule 3).
    pub fn msgs_per_s(&self) -> Option<f64> {
        self.window_s.filter(|w| *w > 0.0).map(|w| self.samples.len() as f64 / w)
    }

    /// MB (10^6 bytes) per second over the window (rule 3).
    pub fn mb_per_s(&self) -> Option<f64> {
        self.msgs_per_s().map(|r| r * self.cfg.payload_bytes as f64 / 1e6)
    }

    /// `latency.csv`: `pair,seq,latency_us`, one row per message.
    pub fn csv(&self) -> troupe_lab::error::Result<String> {
        troupe_lab::report::csv_text(
            &["pair", "seq", "latency_us"],
            self.samples.iter().map(|s| vec![s.pair.to_string(), s.seq.to_string(), s.latency_us.to_string()]),
        )
    }
}

impl RunAnalysis for LatencyStats {
    fn completeness_problem(&self, _cfg: &Config) -> Option<String> {
        (!self.problems.is_empty()).then(|| self.problems.join("; "))
    }

    fn summary_rows(&self) -> Vec<(String, String)> {
        let overlay = match self.routed_sessions() {
            Some(n) => format!("{} ({n} of node A's sessions routed through another node)", self.cfg.overlay),
            None => self.cfg.overlay.clone(),
        };
        let f = |v: Option<f64>, unit: &str| v.map_or("-".to_string(), |x| format!("{x:.3} {unit}"));
        let mut rows = vec![
            ("transport".into(), self.cfg.transport.clone()),
            ("overlay".into(), overlay),
            (
                "pairs x payload".into(),
                format!("{} x {} KiB, rtt {} ms", self.cfg.pairs, self.cfg.payload_bytes / 1024, self.cfg.rtt_ms),
            ),
            ("messages".into(), self.samples.len().to_string()),
        ];
        rows.extend(Dist::latency_rows(self.dist_ms.as_ref(), &["p50", "p99", "mean", "max"]));
        rows.push(("throughput".into(), f(self.msgs_per_s(), "msg/s")));
        rows.push(("throughput MB/s".into(), f(self.mb_per_s(), "MB/s")));
        rows
    }

    fn summary_json(&self) -> Value {
        json!({
            "latency_ms": Dist::latency_json(self.dist_ms.as_ref()),
            "throughput_msgs_per_s": num(self.msgs_per_s()),
            "throughput_mb_per_s": num(self.mb_per_s()),
            "messages": self.samples.len(),
            "rtt_ms": self.cfg.rtt_ms,
            "transport": self.cfg.transport,
            "pairs": self.cfg.pairs,
            "payload_bytes": self.cfg.payload_bytes,
            "parallelism": self.cfg.data_connections(),
            "window_s": num(self.window_s),
            "relay": self.relay.clone().unwrap_or(Value::Null),
            "gossip": self.gossip.clone().unwrap_or(Value::Null),
            "overlay": self.cfg.overlay,
            "route": self.route.clone().unwrap_or(Value::Null),
            "routed_sessions": self.routed_sessions(),
        })
    }

    fn headline(&self) -> String {
        match &self.dist_ms {
            Some(d) => format!("{}, {:.1} msg/s", d.p50_p99_text(), self.msgs_per_s().unwrap_or(f64::NAN)),
            None => "no messages recorded".into(),
        }
    }
}
