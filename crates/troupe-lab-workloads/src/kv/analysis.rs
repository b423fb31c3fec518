//! The statistics of one kv run, from its events alone (rule 4 of [`troupe_lab::workload`]).
//!
//! Rules:
//! 1. A run is complete when it has `run_started`, at least one `op` event, each (client, seq)
//!    once, a `window` event, and `run_finished` with no errors (from the orchestrator, and from
//!    each store node when they wrote events: network faults, `node.rs` rule 5; the network
//!    layer's errors are its faults not carried out, which degrade the run instead). Failed
//!    operations (`ok: false`) do not make a run incomplete: they are counted in `failed_ops`.
//! 2. Latency: the distribution of the successful operations' `latency_us`, in ms: p50
//!    (median, interpolated), p99 (nearest rank), mean, max.
//! 3. Throughput: successful operations / window seconds.
//! 4. `summary.json`: `ops_per_s`, `latency_ms.{p50,p99,mean,max}`, `ops`, `failed_ops`,
//!    `concurrency`, `object_bytes`, `service`, `transport`, plus `window_s`, `gets`, `puts`,
//!    `echoes` and the nodes' anti-entropy and gossip counts when recorded.
//! 5. History check (service kv, when the op events carry their history fields and the run has
//!    its `converged` event): the history and final reads go to the checker ([`super::check`]);
//!    its verdict's keys join `summary.json` (`troupe_lab::history` rule 3: `ok`, `failed`,
//!    `indeterminate`, `lost_acknowledged`, `anomalies`, `converged_ms`, `checker`,
//!    `counterexample`), and a failed check makes the run `failed` with its counterexample.
//! 6. Degraded: a nemesis fault planned and not carried out or not healed
//!    (`troupe_lab::nemesis::missed`).

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::config::KvConfig;
use troupe_lab::config::Config;
use troupe_lab::events::Event;
use troupe_lab::stats::{json_num as num, Dist};
use troupe_lab::workload::RunAnalysis;

/// One operation's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    /// The client.
    pub client: u64,
    /// Its sequence number within the client.
    pub seq: u64,
    /// `get`, `put` or `echo`.
    pub op: String,
    /// First send to completion, µs.
    pub latency_us: u64,
    /// Whether it completed.
    pub ok: bool,
}

/// The statistics of a kv run.
#[derive(Debug, Clone)]
pub struct KvStats {
    /// The typed config.
    pub cfg: KvConfig,
    /// Every operation, in (client, seq) order.
    pub ops: Vec<Op>,
    /// Latency of the successful operations, ms (rule 2).
    pub dist_ms: Option<Dist>,
    /// The window, s.
    pub window_s: Option<f64>,
    /// The nodes' counts, as recorded.
    pub nodes: Option<Value>,
    /// How the client node's sessions ran (`route`, with an overlay).
    pub route: Option<Value>,
    /// The history (rule 5).
    pub history: Vec<troupe_lab::history::Op>,
    /// The checker's verdict (rule 5), when the run was checked.
    pub verdict: Option<troupe_lab::history::Verdict>,
    /// The nemesis's faults not carried out (rule 6).
    pub missed: Vec<String>,
    problems: Vec<String>,
}

impl KvStats {
    /// Computes the statistics of a run from its config and events.
    pub fn compute(cfg: &Config, events: &[Event]) -> KvStats {
        Self::compute_with(cfg, events, &[])
    }

    /// [`KvStats::compute`] with the run's schedule (rule 6).
    pub fn compute_with(cfg: &Config, events: &[Event], actions: &[troupe_lab::schedule::FaultAction]) -> KvStats {
        let c = KvConfig::from_config(cfg);
        let mut problems = Vec::new();
        if !events.iter().any(|e| e.ev == "run_started") {
            problems.push("no run_started event".to_string());
        }
        let mut ops: Vec<Op> = events
            .iter()
            .filter(|e| e.ev == "op")
            .map(|e| Op {
                client: e.int("client") as u64,
                seq: e.int("seq") as u64,
                op: e.raw.get("op").and_then(Value::as_str).unwrap_or("").to_string(),
                latency_us: e.int("latency_us") as u64,
                ok: e.raw.get("ok").and_then(Value::as_bool).unwrap_or(false),
            })
            .collect();
        ops.sort_by_key(|o| (o.client, o.seq));
        let distinct: BTreeSet<(u64, u64)> = ops.iter().map(|o| (o.client, o.seq)).collect();
        if distinct.len() != ops.len() {
            problems.push(format!("{} op events repeat a (client, seq)", ops.len() - distinct.len()));
        }
        if ops.is_empty() {
            problems.push("no op events".to_string());
        }
        let window_s = events.iter().find(|e| e.ev == "window").map(|e| e.int("elapsed_us") as f64 / 1e6);
        if window_s.is_none() {
            problems.push("no window event".to_string());
        }
        let finished: Vec<&Event> = events.iter().filter(|e| e.ev == "run_finished").collect();
        if finished.is_empty() {
            problems.push("no run_finished event".to_string());
        }
        // The network layer's errors are faults it could not carry out: the run is degraded by
        // them (troupe_lab::netfaults::missed), not incomplete.
        for f in finished.iter().filter(|f| f.int("errors") > 0 && f.node != troupe_lab::netlayer::NODE) {
            problems.push(format!("run_finished of {} reports {} errors", f.str("node"), f.int("errors")));
        }
        let mut ms: Vec<f64> = ops.iter().filter(|o| o.ok).map(|o| o.latency_us as f64 / 1000.0).collect();
        let dist_ms = Dist::of(&mut ms);
        let nodes = events.iter().find(|e| e.ev == "nodes").map(Event::own_fields);
        let history = history_of(events);
        let converged = events.iter().find(|e| e.ev == "converged");
        let verdict = (c.service == "kv" && converged.is_some() && !history.is_empty()).then(|| {
            let finals = events
                .iter()
                .filter(|e| e.ev == "final_read")
                .map(|e| {
                    (
                        e.str("key").to_string(),
                        super::check::Final {
                            value: e.raw.get("value").and_then(Value::as_u64),
                            answered: e.raw.get("versions").and_then(Value::as_array).is_none_or(|v| !v.is_empty()),
                        },
                    )
                })
                .collect();
            let ms = converged.and_then(|e| e.raw.get("ms")).and_then(Value::as_u64);
            super::check::check(&history, &finals, ms)
        });
        let missed = troupe_lab::nemesis::missed(actions, events);
        let route = events.iter().find(|e| e.ev == "route").map(Event::own_fields);
        KvStats { cfg: c, ops, dist_ms, window_s, nodes, route, history, verdict, missed, problems }
    }

    /// Operations that failed.
    pub fn failed(&self) -> usize {
        self.ops.iter().filter(|o| !o.ok).count()
    }

    /// Successful operations per second over the window (rule 3).
    pub fn ops_per_s(&self) -> Option<f64> {
        let ok = self.ops.len() - self.failed();
        self.window_s.filter(|w| *w > 0.0).map(|w| ok as f64 / w)
    }

    fn count(&self, op: &str) -> usize {
        self.ops.iter().filter(|o| o.op == op).count()
    }

    /// `kv.csv`: `client,seq,op,latency_us,ok`, one row per operation.
    pub fn csv(&self) -> troupe_lab::error::Result<String> {
        troupe_lab::report::csv_text(
            &["client", "seq", "op", "latency_us", "ok"],
            self.ops.iter().map(|o| {
                vec![o.client.to_string(), o.seq.to_string(), o.op.clone(), o.latency_us.to_string(), o.ok.to_string()]
            }),
        )
    }
}

/// The history in the op events (rule 5): the operations that carry their history fields.
fn history_of(events: &[Event]) -> Vec<troupe_lab::history::Op> {
    use troupe_lab::history::{Op as HOp, Outcome};
    events
        .iter()
        .filter(|e| e.ev == "op" && e.raw.get("outcome").is_some())
        .map(|e| HOp {
            process: e.int("client") as u64,
            index: e.int("seq") as u64,
            f: e.str("op").to_string(),
            key: e.str("key").to_string(),
            value: e.raw.get("value").cloned().unwrap_or(Value::Null),
            invoke_us: e.int("invoke_us"),
            complete_us: e.int("complete_us"),
            outcome: match e.str("outcome") {
                "ok" => Outcome::Ok,
                "fail" => Outcome::Fail,
                _ => Outcome::Info,
            },
        })
        .collect()
}

impl RunAnalysis for KvStats {
    fn completeness_problem(&self, _cfg: &Config) -> Option<String> {
        match &self.verdict {
            Some(v) => v.run_problem(&self.problems),
            None => (!self.problems.is_empty()).then(|| self.problems.join("; ")),
        }
    }

    fn degradations(&self, _cfg: &Config) -> Vec<String> {
        self.missed.clone()
    }

    fn summary_rows(&self) -> Vec<(String, String)> {
        let mut rows = vec![
            ("service".into(), format!("{} ({} transport)", self.cfg.service, self.cfg.transport)),
            ("clients x object".into(), format!("{} x {} bytes", self.cfg.concurrency, self.cfg.object_bytes)),
            ("operations".into(), format!("{} ({} failed)", self.ops.len(), self.failed())),
        ];
        rows.extend(Dist::latency_rows(self.dist_ms.as_ref(), &["p50", "p99", "mean"]));
        rows.push(("throughput".into(), self.ops_per_s().map_or("-".to_string(), |x| format!("{x:.3} ops/s"))));
        if let Some(v) = &self.verdict {
            rows.extend(v.summary_rows());
        }
        rows
    }

    fn summary_json(&self) -> Value {
        let mut s = json!({
            "ops_per_s": num(self.ops_per_s()),
            "latency_ms": Dist::latency_json(self.dist_ms.as_ref()),
            "ops": self.ops.len(),
            "failed_ops": self.failed(),
            "concurrency": self.cfg.concurrency,
            "object_bytes": self.cfg.object_bytes,
            "service": self.cfg.service,
            "transport": self.cfg.transport,
            "gets": self.count("get"),
            "puts": self.count("put"),
            "echoes": self.count("echo"),
            "window_s": num(self.window_s),
            "nodes": self.nodes.clone().unwrap_or(Value::Null),
            "overlay": self.cfg.overlay,
            "route": self.route.clone().unwrap_or(Value::Null),
            "routed_sessions": self.route.as_ref().and_then(troupe_lab::overlay_net::routed_sessions),
        });
        // Rule 5: the verdict's keys (its `ops` is the same count).
        if let (Some(v), Value::Object(m)) = (&self.verdict, &mut s) {
            if let Value::Object(vm) = v.summary_json() {
                m.extend(vm);
            }
        }
        s
    }

    fn headline(&self) -> String {
        match &self.dist_ms {
            Some(d) => format!("{}, {:.1} ops/s", d.p50_p99_text(), self.ops_per_s().unwrap_or(f64::NAN)),
            None => "no successful operations".into(),
        }
    }
}
