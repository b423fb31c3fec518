//! A workload that measures nothing, for exercising the core without any real workload: the
//! core's own tests run, sweep, compare and rebuild reports with it, and the doc examples use
//! it. Its system under test writes `ticks` events named `tick` between `run_started` and
//! `run_finished`; its statistics count them; a run with fewer ticks than asked for is
//! `degraded`; its reports are the core's defaults. Its behaviour contract, for the
//! conformance driver's tests ([`crate::conform`]): rule 1, ticks are numbered 0, 1, 2, ... in
//! the order they are written (`noop.1`); rule 2, nothing follows a node's `run_finished`
//! (`noop.2`); rule 3, the ticks are written by one thread (`noop.3`: not observable from
//! events).
//!
//! Any program that follows the environment contract can be its system under test (the core's
//! tests use a shell script); [`Noop`]'s own program ([`System::exec`]) writes the same lines
//! through the lab's event writer.
//!
//! ```
//! use troupe_lab::config::ConfigBuilder;
//! use troupe_lab::testkit::Noop;
//! use troupe_lab::workload::Workload;
//!
//! let mut b = ConfigBuilder::new(&Noop);
//! b.apply_set("ticks=5");
//! let cfg = b.build().unwrap();
//! assert_eq!((cfg.workload(), cfg.int("ticks")), ("noop", 5));
//! let st = Noop.analyse(&cfg, &[], &[], None);
//! assert!(st.completeness_problem(&cfg).is_some(), "no run_finished: incomplete");
//! ```

use std::time::Duration;

use serde_json::json;

use crate::config::{Config, CrossIssue, KeyKind, KeySpec, Schema, Value, SEED};
use crate::conform::{Rule, Scenario, Trace, Verdict};
use crate::error::Result;
use crate::events::writer::EventWriter;
use crate::events::Event;
use crate::schedule::FaultAction;
use crate::workload::{Checker, Conform, Faults, Reports, RunAnalysis, Spec, System};

/// The workload that measures nothing (see the module).
#[derive(Debug, Clone, Copy)]
pub struct Noop;

const KEYS: &[KeySpec] = &[
    SEED,
    KeySpec {
        name: "ticks",
        kind: KeyKind::Int { min: 0, max: 1_000_000 },
        default: || Value::Int(3),
        doc: "how many tick events the system under test writes",
    },
    KeySpec {
        name: "nodes",
        kind: KeyKind::Int { min: 1, max: 64 },
        default: || Value::Int(1),
        doc: "how many node processes it says it has (the indices `[net_faults]` partitions name)",
    },
];

fn no_cross_rules(_: &Config) -> Vec<CrossIssue> {
    Vec::new()
}

static SCHEMA: Schema = Schema { workload: "noop", keys: KEYS, cross_check: no_cross_rules };

impl Spec for Noop {
    fn name(&self) -> &'static str {
        "noop"
    }

    fn about(&self) -> &'static str {
        "noop: a system under test that writes tick events and nothing else (the core's tests)"
    }

    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn net_nodes(&self, cfg: &Config) -> std::result::Result<Vec<String>, String> {
        Ok((0..cfg.int("nodes")).map(|i| format!("node-{i}")).collect())
    }
}

impl Faults for Noop {
    fn schedule(&self, _: &Config) -> Vec<FaultAction> {
        Vec::new()
    }
}

impl System for Noop {
    fn roles(&self) -> &'static [&'static str] {
        &["noop"]
    }

    fn exec(&self, _role: &str) -> Result<i32> {
        let cfg = crate::config::from_env(&Noop)?;
        let w = EventWriter::from_env("troupe", "sub")?;
        let em = w.emitter();
        em.emit("run_started", json!({"workload": "noop", "config": cfg.to_json()}));
        for i in 0..cfg.int("ticks") {
            em.emit("tick", json!({ "n": i }));
        }
        let (dropped, errors) = w.finish(json!({"errors": 0}));
        Ok(i32::from(dropped > 0 || errors > 0))
    }

    fn expected_duration(&self, _: &Config) -> Duration {
        Duration::from_secs(5)
    }
}

/// What [`Noop`] counts of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct NoopStats {
    /// `tick` events recorded.
    pub ticks: u64,
    /// `tick` events the config asked for.
    pub expected: u64,
    /// Whether the run wrote `run_finished`.
    pub finished: bool,
}

impl Checker for Noop {
    type Analysis = NoopStats;

    fn check(&self, cfg: &Config, events: &[Event], _: &[FaultAction], _: Option<f64>) -> NoopStats {
        NoopStats {
            ticks: events.iter().filter(|e| e.ev == "tick").count() as u64,
            expected: cfg.int("ticks") as u64,
            finished: events.iter().any(|e| e.ev == "run_finished"),
        }
    }
}

impl Reports for Noop {}

/// Noop's contract `noop.1`: ticks numbered 0, 1, 2, ... in order; `n/a` without ticks.
fn ticks_in_order(t: &Trace<'_>) -> Verdict {
    let mut any = false;
    for (i, e) in t.of_kind("tick").enumerate() {
        any = true;
        if e.int("n") != i as i64 {
            return Verdict::fail(format!("tick {} should be n={i}: {}", i + 1, crate::conform::cite(e)));
        }
    }
    if any {
        Verdict::Pass
    } else {
        Verdict::na("the run wrote no tick")
    }
}

/// Noop's contract `noop.2`: no event after its node's `run_finished`.
fn nothing_after_finish(t: &Trace<'_>) -> Verdict {
    let mut finished: Vec<&Event> = Vec::new();
    for e in t.events {
        if let Some(f) = finished.iter().find(|f| f.node == e.node) {
            return Verdict::fail(format!("{} after {}", crate::conform::cite(e), crate::conform::cite(f)));
        }
        if e.ev == "run_finished" {
            finished.push(e);
        }
    }
    Verdict::Pass
}

/// Role 6: the contract in the module's doc, on two scenarios.
impl Conform for Noop {
    fn rules(&self) -> Vec<Rule> {
        vec![
            Rule { id: "noop.1", text: "ticks are numbered 0, 1, 2, ... in order", check: ticks_in_order },
            Rule { id: "noop.2", text: "no event follows a node's run_finished", check: nothing_after_finish },
            Rule { id: "noop.3", text: "the ticks are written by one thread", check: crate::conform::not_observable },
        ]
    }

    fn scenarios(&self) -> Vec<Scenario> {
        vec![Scenario::new("three", &[("ticks", "3")]), Scenario::new("none", &[("ticks", "0")])]
    }
}

impl RunAnalysis for NoopStats {
    fn completeness_problem(&self, _: &Config) -> Option<String> {
        (!self.finished).then(|| "no run_finished event: the run did not end".to_string())
    }

    fn degradations(&self, _: &Config) -> Vec<String> {
        if self.ticks < self.expected {
            vec![format!("{} of {} ticks missing", self.expected - self.ticks, self.expected)]
        } else {
            Vec::new()
        }
    }

    fn summary_rows(&self) -> Vec<(String, String)> {
        vec![("ticks".into(), format!("{} of {}", self.ticks, self.expected))]
    }

    fn summary_json(&self) -> serde_json::Value {
        json!({"ticks": self.ticks, "expected_ticks": self.expected})
    }

    fn headline(&self) -> String {
        format!("{} ticks", self.ticks)
    }
}
