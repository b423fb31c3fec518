//! The cluster run's analysis, from its events alone (rule 4 of [`troupe_lab::workload`]): the
//! membership history, its rounds of tables, the checker's verdict ([`super::checker`]) and
//! what the nemesis failed to do.
//!
//! Rules:
//! 1. A run is complete when it has `run_started`, a `ready {what: "window"}`, `converged`,
//!    `final_round` and the orchestrator's `run_finished` with no errors and no dropped events.
//!    A complete run whose checker failed is not complete either: its problem is the
//!    counterexample, so the run is `failed`.
//! 2. Rounds: the `status` ops grouped by their index (the round), each node's table or
//!    `None`, up to the `final_round`.
//! 3. Degradations: `troupe_lab::nemesis::missed` over the schedule and the events.
//! 4. `summary.json`: the verdict's keys (`troupe_lab::history` rule 3) plus `nodes`,
//!    `downing`, `duration_s`, `nemesis`, `faults_injected`, `rounds` and `events` (cluster
//!    events recorded).

use serde_json::{json, Value};

use super::checker::{check, Round};
use super::config::ClusterRunConfig;
use crate::crdt::analysis::{event_problems, ops_of};
use troupe_lab::config::Config;
use troupe_lab::events::Event;
use troupe_lab::history::{Op, Outcome, Verdict};
use troupe_lab::schedule::FaultAction;
use troupe_lab::workload::RunAnalysis;

/// The analysis of a cluster run.
#[derive(Debug, Clone)]
pub struct ClusterAnalysis {
    /// The typed config.
    pub cfg: ClusterRunConfig,
    /// The history: status polls and events.
    pub ops: Vec<Op>,
    /// Rounds read.
    pub rounds: usize,
    /// What the checker found.
    pub verdict: Verdict,
    /// Nemesis lines carried out.
    pub faults_injected: usize,
    problems: Vec<String>,
    missed: Vec<String>,
}

/// Rule 2.
pub(crate) fn rounds_of(ops: &[Op], nodes: u32, last: u64) -> Vec<Round> {
    let mut rounds: Vec<Round> = vec![vec![None; nodes as usize]; (last + 1) as usize];
    for o in ops.iter().filter(|o| o.f == "status" && o.index <= last && o.outcome == Outcome::Ok) {
        if let (Some(r), Ok(s)) = (rounds.get_mut(o.index as usize), serde_json::from_value(o.value.clone())) {
            if let Some(slot) = r.get_mut(o.process as usize) {
                *slot = Some(s);
            }
        }
    }
    rounds
}

impl ClusterAnalysis {
    /// The analysis of a run (rules 1-3).
    pub fn compute(cfg: &Config, events: &[Event], sched: &[FaultAction]) -> ClusterAnalysis {
        let c = ClusterRunConfig::from_config(cfg);
        let mut problems = event_problems(events, "client");
        let ops = ops_of(events);
        let converged = events.iter().find(|e| e.ev == "converged");
        let last = events.iter().find(|e| e.ev == "final_round").map(|e| e.int("round").max(0) as u64);
        if converged.is_none() || last.is_none() {
            problems.push("no converged or final_round event: the final rounds never ended".to_string());
        }
        let rounds = last.map(|l| rounds_of(&ops, c.nodes, l)).unwrap_or_default();
        let converged_ms = converged.and_then(|e| e.raw.get("ms")).and_then(Value::as_f64);
        let verdict = check(&ops, &rounds, c.nodes, converged_ms);
        let faults_injected =
            events.iter().filter(|e| e.ev == "fault_injected" && e.str("id").starts_with("nem-")).count();
        let missed = troupe_lab::nemesis::missed(sched, events);
        ClusterAnalysis { cfg: c, ops, rounds: rounds.len(), verdict, faults_injected, problems, missed }
    }
}

impl RunAnalysis for ClusterAnalysis {
    fn completeness_problem(&self, _cfg: &Config) -> Option<String> {
        self.verdict.run_problem(&self.problems)
    }

    fn degradations(&self, _cfg: &Config) -> Vec<String> {
        self.missed.clone()
    }

    fn summary_rows(&self) -> Vec<(String, String)> {
        let mut rows = vec![
            ("nodes".to_string(), self.cfg.nodes.to_string()),
            ("downing".to_string(), self.cfg.downing.clone()),
            ("nemesis".to_string(), if self.cfg.nemesis.is_empty() { "none".into() } else { self.cfg.nemesis.clone() }),
            ("faults injected".to_string(), self.faults_injected.to_string()),
            ("rounds".to_string(), self.rounds.to_string()),
        ];
        rows.extend(self.verdict.summary_rows());
        rows
    }

    fn summary_json(&self) -> Value {
        let mut v = self.verdict.summary_json();
        let extra = json!({
            "nodes": self.cfg.nodes,
            "downing": self.cfg.downing,
            "duration_s": self.cfg.duration_s,
            "nemesis": self.cfg.nemesis,
            "faults_injected": self.faults_injected,
            "rounds": self.rounds,
            "events": self.ops.iter().filter(|o| o.f == "event").count(),
        });
        if let (Some(o), Value::Object(e)) = (v.as_object_mut(), extra) {
            o.extend(e);
        }
        v
    }

    fn headline(&self) -> String {
        format!(
            "{} rounds, converged {}, checker {}",
            self.rounds,
            self.verdict.converged_ms.map_or("no".into(), |m| format!("in {m:.0} ms")),
            if self.verdict.pass() { "pass" } else { "FAIL" }
        )
    }
}
