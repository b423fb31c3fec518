//! The files a conformance check leaves in its folder: `conform.json` (machine-readable:
//! workload, runtimes, scenarios, every rule's verdict per runtime and per run, the run
//! folders) and `conform.md` (the same for a person: the table, the rules, every failure).

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::driver::ConformOutcome;
use super::{Verdict, FILE};
use crate::error::{Error, Result};

/// The Markdown page's file name.
pub const PAGE: &str = "conform.md";

impl serde::Serialize for Verdict {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        verdict_json(self).serialize(s)
    }
}

/// `{"verdict": "pass"}`, `{"verdict": "fail", "evidence": ..}` or `{"verdict": "n/a", "why": ..}`.
fn verdict_json(v: &Verdict) -> Value {
    match v {
        Verdict::Pass => json!({"verdict": "pass"}),
        Verdict::Fail { evidence } => json!({"verdict": "fail", "evidence": evidence}),
        Verdict::NotApplicable(why) => json!({"verdict": "n/a", "why": why}),
    }
}

/// The relative path of `p` under the check's folder (as recorded), or `p` itself.
fn rel(o: &ConformOutcome, p: &std::path::Path) -> String {
    p.strip_prefix(&o.dir).unwrap_or(p).display().to_string()
}

/// `conform.json`'s content.
pub(super) fn to_json(o: &ConformOutcome) -> Value {
    let plan = &o.plan;
    let rules: Vec<Value> = plan
        .rules
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut per_rt = serde_json::Map::new();
            for rt in &plan.runtimes {
                let mut v = verdict_json(&o.verdict(i, rt));
                let mut by = serde_json::Map::new();
                for run in o.runs.iter().filter(|x| &x.runtime == rt) {
                    if let Some(x) = run.verdicts.get(i) {
                        by.insert(run.scenario.clone(), verdict_json(x));
                    }
                }
                v["scenarios"] = Value::Object(by);
                per_rt.insert(rt.clone(), v);
            }
            json!({"id": r.id, "text": r.text, "runtimes": per_rt})
        })
        .collect();
    let runs: Vec<Value> = o
        .runs
        .iter()
        .map(|r| {
            json!({
                "scenario": r.scenario,
                "runtime": r.runtime,
                "dir": rel(o, &r.dir),
                "status": r.status,
                "reason": r.reason,
            })
        })
        .collect();
    json!({
        "format": 1,
        "workload": plan.workload.name(),
        "runtimes": plan.runtimes,
        "scenarios": plan.scenarios.iter().map(|(s, _)| json!({
            "name": s.name,
            "settings": s.settings.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "passed": o.passed(),
        "interrupted": o.interrupted,
        "rules": rules,
        "runs": runs,
    })
}

/// `conform.md`'s content.
pub(super) fn to_markdown(o: &ConformOutcome) -> String {
    let plan = &o.plan;
    let mut s = String::new();
    let _ = writeln!(s, "# Conformance of {}: {}\n", plan.workload.name(), plan.runtimes.join(", "));
    let _ = writeln!(
        s,
        "{}{}\n",
        if o.passed() { "Every rule passes or is n/a on every runtime." } else { "**Some rules FAIL** (below)." },
        if o.interrupted { " Interrupted: some runs were not made." } else { "" }
    );
    let _ = writeln!(s, "| rule | {} |", plan.runtimes.join(" | "));
    let _ = writeln!(s, "|---|{}", "---|".repeat(plan.runtimes.len()));
    for (i, r) in plan.rules.iter().enumerate() {
        let cells: Vec<&str> = plan.runtimes.iter().map(|rt| o.verdict(i, rt).label()).collect();
        let _ = writeln!(s, "| {} | {} |", r.id, cells.join(" | "));
    }
    let _ = writeln!(s, "\n## Rules\n");
    for r in &plan.rules {
        let _ = writeln!(s, "- `{}`: {}", r.id, r.text);
    }
    let fails = o.failure_lines();
    if !fails.is_empty() {
        let _ = writeln!(s, "\n## Failures\n");
        for f in fails {
            let _ = writeln!(s, "- {f}");
        }
    }
    let na: Vec<String> = plan
        .rules
        .iter()
        .enumerate()
        .flat_map(|(i, r)| {
            plan.runtimes.iter().filter_map(move |rt| match o.verdict(i, rt) {
                Verdict::NotApplicable(why) => Some(format!("{rt} {}: {why}", r.id)),
                _ => None,
            })
        })
        .collect();
    if !na.is_empty() {
        let _ = writeln!(s, "\n## n/a\n");
        for l in na {
            let _ = writeln!(s, "- {l}");
        }
    }
    let _ = writeln!(s, "\n## Scenarios and runs\n");
    for (sc, _) in &plan.scenarios {
        let set: Vec<String> = sc.settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(s, "- `{}`: {}", sc.name, set.join(" "));
        for r in o.runs.iter().filter(|r| r.scenario == sc.name) {
            let _ = writeln!(
                s,
                "  - {}: `{}` {}{}",
                r.runtime,
                rel(o, &r.dir),
                r.status,
                r.reason.as_deref().map(|x| format!(" ({x})")).unwrap_or_default()
            );
        }
    }
    s
}

/// Writes both files into the check's folder.
pub(super) fn write(o: &ConformOutcome) -> Result<()> {
    let path = o.dir.join(FILE);
    let text = serde_json::to_string_pretty(&to_json(o)).map_err(|e| Error::other(e.to_string()))?;
    std::fs::write(&path, text + "\n").map_err(|e| Error::io(&path, e))?;
    let page = o.dir.join(PAGE);
    std::fs::write(&page, to_markdown(o)).map_err(|e| Error::io(&page, e))
}
