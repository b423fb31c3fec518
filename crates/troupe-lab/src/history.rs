//! Histories and checker verdicts (issue "Nothing lost"): the operations a run's clients made,
//! each an invocation and a completion, as Jepsen records them, and what a workload's checker
//! found in them. The core owns the format (`history.jsonl`) and the `summary.json` keys; each
//! workload owns its checker (what its store or replicator promises).
//!
//! Rules:
//! 1. An operation is invoked by a process (a client) at `invoke_us` and completes at
//!    `complete_us` as `ok` (it took effect and the client knows it), `fail` (it certainly took
//!    no effect) or `info` (indeterminate: it may or may not have taken effect, e.g. a write
//!    that timed out after it was sent). A read that did not complete is `fail`: it has no
//!    effect either way.
//! 2. `history.jsonl` has two lines per operation, in time order (an invocation before a
//!    completion at one instant): `{"process", "index", "type": "invoke", "f", "key", "value",
//!    "time_us"}` and the same with `type` = the outcome; an invoke line carries what was to be
//!    written (a read's is `null`), a completion what was written or read.
//! 3. `summary.json` of a checked run has `ops`, `ok`, `failed`, `indeterminate`,
//!    `lost_acknowledged`, `anomalies {kind: count}`, `converged_ms` (null when the replicas did
//!    not converge in the bound) and `checker` (`pass` or `fail`), with `counterexample` (the
//!    smallest evidence of the first broken guarantee) when it failed. A run whose checker fails
//!    is `failed`, with the counterexample as its reason.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::{Error, Result};

/// How an operation ended (rule 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// It took effect.
    Ok,
    /// It certainly took no effect.
    Fail,
    /// It may or may not have taken effect.
    Info,
}

/// One operation (rule 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Op {
    /// The client that made it.
    pub process: u64,
    /// Its index among the client's operations.
    pub index: u64,
    /// What it did (`put`, `get`, `incr`, `add`, `read`, ...).
    pub f: String,
    /// The key or object it touched.
    pub key: String,
    /// What it wrote, or read when it completed `ok` (a read that failed: `null`).
    pub value: Value,
    /// Invocation, wall-clock µs.
    pub invoke_us: i64,
    /// Completion, wall-clock µs.
    pub complete_us: i64,
    /// How it ended.
    pub outcome: Outcome,
}

impl Op {
    /// Whether this operation completed before `other` was invoked (real-time order).
    pub fn precedes(&self, other: &Op) -> bool {
        self.complete_us < other.invoke_us
    }

    /// A one-line description for counterexamples.
    pub fn describe(&self) -> String {
        format!(
            "client {} op {} {} {} = {} ({:?}, {}..{} µs)",
            self.process, self.index, self.f, self.key, self.value, self.outcome, self.invoke_us, self.complete_us
        )
    }
}

/// Rule 2: the history as JSON Lines.
pub fn to_jsonl(ops: &[Op]) -> String {
    let mut lines: Vec<(i64, u8, String)> = Vec::with_capacity(ops.len() * 2);
    for o in ops {
        let written = if o.f == "put" || o.f == "incr" || o.f == "add" { o.value.clone() } else { Value::Null };
        let base = |ty: &str, v: &Value, t: i64| {
            json!({"process": o.process, "index": o.index, "type": ty, "f": o.f, "key": o.key, "value": v, "time_us": t})
                .to_string()
        };
        lines.push((o.invoke_us, 0, base("invoke", &written, o.invoke_us)));
        let ty = match o.outcome {
            Outcome::Ok => "ok",
            Outcome::Fail => "fail",
            Outcome::Info => "info",
        };
        lines.push((o.complete_us, 1, base(ty, &o.value, o.complete_us)));
    }
    lines.sort_by_key(|l| (l.0, l.1));
    let mut s = String::new();
    for (_, _, l) in lines {
        s.push_str(&l);
        s.push('\n');
    }
    s
}

/// Writes `history.jsonl` into a run folder (rule 2).
pub fn write(dir: &Path, ops: &[Op]) -> Result<()> {
    let p = dir.join("history.jsonl");
    std::fs::write(&p, to_jsonl(ops)).map_err(|e| Error::io(&p, e))
}

/// What a checker found (rule 3).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    /// Operations in the history.
    pub ops: u64,
    /// Completed `ok`.
    pub ok: u64,
    /// Completed `fail`.
    pub failed: u64,
    /// Completed `info`.
    pub indeterminate: u64,
    /// Acknowledged writes the final state does not hold.
    pub lost_acknowledged: u64,
    /// Anomalies by kind: those the store promises not to show (each fails the checker) and
    /// those it is expected to show (counted and named, not failing it).
    pub anomalies: BTreeMap<String, u64>,
    /// From the final heal to replicas that agree, ms (`None`: not within the bound).
    pub converged_ms: Option<f64>,
    /// The first broken guarantee's evidence; `None` when every guarantee held.
    pub counterexample: Option<String>,
}

impl Verdict {
    /// The counts of a history.
    pub fn of(ops: &[Op]) -> Verdict {
        let n = |o: Outcome| ops.iter().filter(|x| x.outcome == o).count() as u64;
        Verdict {
            ops: ops.len() as u64,
            ok: n(Outcome::Ok),
            failed: n(Outcome::Fail),
            indeterminate: n(Outcome::Info),
            ..Verdict::default()
        }
    }

    /// Counts one anomaly of `kind` (an expected one: it does not fail the checker).
    pub fn count(&mut self, kind: &str) {
        self.count_n(kind, 1);
    }

    /// Counts `n` anomalies of `kind` (expected ones).
    pub fn count_n(&mut self, kind: &str, n: u64) {
        if n > 0 {
            *self.anomalies.entry(kind.to_string()).or_default() += n;
        }
    }

    /// Counts one anomaly of `kind` that breaks a guarantee: the first one's evidence becomes
    /// the counterexample.
    pub fn broken(&mut self, kind: &str, evidence: impl FnOnce() -> String) {
        self.count(kind);
        if self.counterexample.is_none() {
            self.counterexample = Some(format!("{kind}: {}", evidence()));
        }
    }

    /// Whether every guarantee held.
    pub fn pass(&self) -> bool {
        self.counterexample.is_none()
    }

    /// Rule 3 for a workload's `completeness_problem`: its own problems, else the failed
    /// checker's counterexample (`the history checker failed: ...`), else none.
    pub fn run_problem(&self, problems: &[String]) -> Option<String> {
        let mut p = problems.to_vec();
        if let Some(c) = &self.counterexample {
            p.push(format!("the history checker failed: {c}"));
        }
        (!p.is_empty()).then(|| p.join("; "))
    }

    /// The `summary.json` keys (rule 3).
    pub fn summary_json(&self) -> Value {
        let mut v = json!({
            "ops": self.ops,
            "ok": self.ok,
            "failed": self.failed,
            "indeterminate": self.indeterminate,
            "lost_acknowledged": self.lost_acknowledged,
            "anomalies": self.anomalies,
            "converged_ms": self.converged_ms,
            "checker": if self.pass() { "pass" } else { "fail" },
        });
        if let Some(c) = &self.counterexample {
            v["counterexample"] = json!(c);
        }
        v
    }

    /// The rows `troupe lab run` prints.
    pub fn summary_rows(&self) -> Vec<(String, String)> {
        let anomalies = if self.anomalies.is_empty() {
            "none".to_string()
        } else {
            self.anomalies.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
        };
        vec![
            (
                "history".into(),
                format!(
                    "{} ops: {} ok, {} failed, {} indeterminate",
                    self.ops, self.ok, self.failed, self.indeterminate
                ),
            ),
            ("lost acknowledged".into(), self.lost_acknowledged.to_string()),
            ("anomalies".into(), anomalies),
            ("converged".into(), self.converged_ms.map_or("not within the bound".into(), |m| format!("{m:.0} ms"))),
            (
                "checker".into(),
                match &self.counterexample {
                    None => "pass".into(),
                    Some(c) => format!("FAIL: {c}"),
                },
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(process: u64, f: &str, value: Value, t: (i64, i64), outcome: Outcome) -> Op {
        Op { process, index: 0, f: f.into(), key: "k".into(), value, invoke_us: t.0, complete_us: t.1, outcome }
    }

    #[test]
    fn rule2_two_lines_per_op_in_time_order_reads_invoke_with_null() {
        let h = [op(1, "get", json!(3), (5, 9), Outcome::Ok), op(2, "put", json!(3), (1, 6), Outcome::Info)];
        let text = to_jsonl(&h);
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let seen: Vec<(i64, &str)> =
            lines.iter().map(|l| (l["time_us"].as_i64().unwrap(), l["type"].as_str().unwrap())).collect();
        assert_eq!(seen, [(1, "invoke"), (5, "invoke"), (6, "info"), (9, "ok")]);
        assert_eq!(lines[1]["value"], Value::Null, "a read's invocation carries no value");
        assert_eq!(lines[0]["value"], json!(3), "a write's invocation carries what it writes");
    }

    #[test]
    fn rule3_a_broken_guarantee_fails_with_its_first_evidence_an_expected_anomaly_does_not() {
        let mut v = Verdict::of(&[op(1, "get", json!(1), (0, 1), Outcome::Ok)]);
        v.count("lost_update");
        assert!(v.pass());
        assert_eq!(v.summary_json()["checker"], "pass");
        v.broken("stale_read", || "first".into());
        v.broken("stale_read", || "second".into());
        assert!(!v.pass());
        let s = v.summary_json();
        assert_eq!(s["checker"], "fail");
        assert_eq!(s["counterexample"], "stale_read: first");
        assert_eq!(s["anomalies"]["stale_read"], 2);
        assert_eq!(s["ok"], 1);
    }
}
