//! The crdt run's analysis, from its events alone (rule 4 of [`troupe_lab::workload`]): the
//! history, the replicas' final values, the checker's verdict ([`super::checker`]) and what the
//! nemesis failed to do.
//!
//! Rules:
//! 1. A run is complete when it has `run_started`, a `ready {what: "window"}`, a `converged`
//!    event, one `final` per node, and the orchestrator's `run_finished` with no errors and no
//!    dropped events (a dropped `op` would make the history lie). A complete run whose checker
//!    failed is not complete either: its problem is the counterexample, so the run is `failed`.
//! 2. Degradations: `troupe_lab::nemesis::missed` over the schedule and the events.
//! 3. `summary.json`: the verdict's keys (`troupe_lab::history` rule 3) plus `nodes`,
//!    `concurrency`, `duration_s`, `write_consistency`, `nemesis`, `faults_injected`,
//!    `ops_per_s` (ok updates per window second) and `final_counter`, `final_set_size`.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::checker::{check, Final};
use super::config::CrdtConfig;
use troupe_lab::config::Config;
use troupe_lab::events::Event;
use troupe_lab::history::{Op, Verdict};
use troupe_lab::schedule::FaultAction;
use troupe_lab::workload::RunAnalysis;

/// The analysis of a crdt run.
#[derive(Debug, Clone)]
pub struct CrdtAnalysis {
    /// The typed config.
    pub cfg: CrdtConfig,
    /// The history, in (client, index) order.
    pub ops: Vec<Op>,
    /// The replicas' final values.
    pub finals: Vec<Final>,
    /// What the checker found.
    pub verdict: Verdict,
    /// Nemesis lines carried out.
    pub faults_injected: usize,
    problems: Vec<String>,
    missed: Vec<String>,
}

/// The ops of a run's `op` events (shared by the cluster workload's history).
pub(crate) fn ops_of(events: &[Event]) -> Vec<Op> {
    let mut ops: Vec<Op> =
        events.iter().filter(|e| e.ev == "op").filter_map(|e| serde_json::from_value(e.raw.clone()).ok()).collect();
    ops.sort_by_key(|o| (o.process, o.index));
    ops
}

/// Rule 1's common part: the problems of the orchestrator's events (`node`).
pub(crate) fn event_problems(events: &[Event], node: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if !events.iter().any(|e| e.ev == "run_started") {
        problems.push("no run_started event".to_string());
    }
    if !events.iter().any(|e| e.ev == "ready" && e.str("what") == "window") {
        problems.push("the window never opened (no ready {what: window})".to_string());
    }
    match events.iter().find(|e| e.ev == "run_finished" && e.node == node) {
        None => problems.push(format!("no run_finished from {node}")),
        Some(f) if f.int("errors") > 0 => problems.push(format!("{node} finished with {} errors", f.int("errors"))),
        Some(f) if f.int("dropped_events") > 0 => {
            problems.push(format!("{} events were dropped: the history is incomplete", f.int("dropped_events")))
        }
        Some(_) => {}
    }
    problems
}

impl CrdtAnalysis {
    /// The analysis of a run (rules 1-2).
    pub fn compute(cfg: &Config, events: &[Event], sched: &[FaultAction]) -> CrdtAnalysis {
        let c = CrdtConfig::from_config(cfg);
        let mut problems = event_problems(events, "client");
        let ops = ops_of(events);
        let finals: Vec<Final> = events
            .iter()
            .filter(|e| e.ev == "final")
            .map(|e| Final {
                node: e.int("replica") as u32,
                counter: e.raw.get("counter").and_then(Value::as_u64),
                set: e
                    .raw
                    .get("set")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect::<BTreeSet<String>>()),
            })
            .collect();
        let converged = events.iter().find(|e| e.ev == "converged");
        if converged.is_none() {
            problems.push("no converged event: the final reads never ended".to_string());
        }
        if finals.len() != c.nodes as usize {
            problems.push(format!("{} final events for {} nodes", finals.len(), c.nodes));
        }
        let converged_ms = converged.and_then(|e| e.raw.get("ms")).and_then(Value::as_f64);
        let verdict = check(&ops, &finals, c.nodes, converged_ms);
        let faults_injected =
            events.iter().filter(|e| e.ev == "fault_injected" && e.str("id").starts_with("nem-")).count();
        let missed = troupe_lab::nemesis::missed(sched, events);
        CrdtAnalysis { cfg: c, ops, finals, verdict, faults_injected, problems, missed }
    }

    fn final_values(&self) -> (Option<u64>, Option<usize>) {
        let f = self.finals.iter().find(|f| f.counter.is_some());
        (f.and_then(|f| f.counter), f.and_then(|f| f.set.as_ref().map(BTreeSet::len)))
    }
}

impl RunAnalysis for CrdtAnalysis {
    fn completeness_problem(&self, _cfg: &Config) -> Option<String> {
        self.verdict.run_problem(&self.problems)
    }

    fn degradations(&self, _cfg: &Config) -> Vec<String> {
        self.missed.clone()
    }

    fn summary_rows(&self) -> Vec<(String, String)> {
        let mut rows = vec![
            ("nodes".to_string(), self.cfg.nodes.to_string()),
            ("consistency".to_string(), self.cfg.write_consistency.clone()),
            ("nemesis".to_string(), if self.cfg.nemesis.is_empty() { "none".into() } else { self.cfg.nemesis.clone() }),
            ("faults injected".to_string(), self.faults_injected.to_string()),
        ];
        rows.extend(self.verdict.summary_rows());
        rows
    }

    fn summary_json(&self) -> Value {
        let mut v = self.verdict.summary_json();
        let (counter, set) = self.final_values();
        let ok = self.verdict.ok as f64;
        let extra = json!({
            "nodes": self.cfg.nodes,
            "concurrency": self.cfg.concurrency,
            "duration_s": self.cfg.duration_s,
            "write_consistency": self.cfg.write_consistency,
            "nemesis": self.cfg.nemesis,
            "faults_injected": self.faults_injected,
            "ops_per_s": ok / self.cfg.duration_s.max(1) as f64,
            "final_counter": counter,
            "final_set_size": set,
        });
        if let (Some(o), Value::Object(e)) = (v.as_object_mut(), extra) {
            o.extend(e);
        }
        v
    }

    fn headline(&self) -> String {
        format!(
            "{} ops, {} ok, lost {}, checker {}",
            self.verdict.ops,
            self.verdict.ok,
            self.verdict.lost_acknowledged,
            if self.verdict.pass() { "pass" } else { "FAIL" }
        )
    }
}
