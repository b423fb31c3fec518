//! Conformance (`troupe lab conform`): whether each runtime's implementation of a workload
//! follows the workload's behaviour contract, checked from the event traces of short runs. A
//! comparison of runtimes is fair only when they run the same program; this is its machine
//! check. The core names no workload: a workload hands it [`Rule`]s and [`Scenario`]s through
//! its conformance role ([`crate::workload::Conform`]); [`driver`] runs every runtime on every
//! scenario through the ordinary run machinery and judges every rule on every trace.
//!
//! Rules:
//! 1. A [`Rule`] is named `<workload>.<n>`, `n` the number of the contract rule it checks in
//!    the workload's docs (`chat.3` is rule 3 of docs/chat.md's "Behaviour contract"); a
//!    contract rule checked by several predicates gets one [`Rule`] per predicate with a
//!    letter (`chat.6a`, `chat.6b`).
//! 2. A check reads one run's trace ([`Trace`]: the merged events, the validated config, the
//!    schedule, the scenario) and nothing else; it is a pure function, so the same folder
//!    always gets the same verdict.
//! 3. A [`Verdict`] is [`Verdict::Pass`], [`Verdict::Fail`] with one line of evidence quoting
//!    the offending event(s) ([`cite`]: node, `ts_us`, `ev` and their ids), or
//!    [`Verdict::NotApplicable`] saying why (the scenario does not exercise the rule, or
//!    [`NOT_OBSERVABLE`]: the trace cannot show it).
//! 4. A [`Scenario`] is a short config (seconds, small sizes) given as `key=value` settings on
//!    top of the workload's defaults; its settings are validated like `--set` before any run.
//! 5. Across scenarios a rule's verdict for a runtime is `FAIL` if any scenario failed it, else
//!    `PASS` if any passed it, else `n/a` ([`Verdict::combine`]).

pub mod checks;
pub mod driver;
mod output;

use std::fmt;

use serde::Serialize;

use crate::config::Config;
use crate::events::Event;
use crate::schedule::FaultAction;

pub use driver::{resolve, ConformOutcome, ConformPlan, ConformSpec};
pub use output::PAGE;

/// The reason a contract rule the trace cannot show is `n/a` (rule 3).
pub const NOT_OBSERVABLE: &str = "not observable from events";

/// The file the machine-readable result goes to, in the conformance folder.
pub const FILE: &str = "conform.json";

/// What one rule says of one trace (rule 3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The trace follows the rule.
    Pass,
    /// The trace breaks the rule.
    Fail {
        /// One line quoting the offending event(s) ([`cite`]).
        evidence: String,
    },
    /// The rule says nothing of this trace; why.
    NotApplicable(String),
}

impl Verdict {
    /// A failure with its evidence.
    pub fn fail(evidence: impl Into<String>) -> Verdict {
        Verdict::Fail { evidence: evidence.into() }
    }

    /// Not applicable, with the reason.
    pub fn na(why: impl Into<String>) -> Verdict {
        Verdict::NotApplicable(why.into())
    }

    /// `PASS`, `FAIL` or `n/a`, as the table shows it.
    pub fn label(&self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail { .. } => "FAIL",
            Verdict::NotApplicable(_) => "n/a",
        }
    }

    /// Whether it is a failure.
    pub fn is_fail(&self) -> bool {
        matches!(self, Verdict::Fail { .. })
    }

    /// One verdict from several (rule 5): any failure wins, then any pass, else `n/a` (the
    /// first one's reason; `n/a` with "no trace" when there is none).
    pub fn combine<'a>(all: impl IntoIterator<Item = &'a Verdict>) -> Verdict {
        let all: Vec<&Verdict> = all.into_iter().collect();
        if let Some(f) = all.iter().find(|v| v.is_fail()) {
            return (*f).clone();
        }
        if all.iter().any(|v| **v == Verdict::Pass) {
            return Verdict::Pass;
        }
        all.first().map(|v| (*v).clone()).unwrap_or_else(|| Verdict::na("no trace"))
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Pass => write!(f, "PASS"),
            Verdict::Fail { evidence } => write!(f, "FAIL: {evidence}"),
            Verdict::NotApplicable(why) => write!(f, "n/a: {why}"),
        }
    }
}

/// One run's trace, as a rule's check reads it (rule 2). Built with [`Trace::new`]; fields may
/// be added, so it is not built field by field outside this crate.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Trace<'a> {
    /// The validated config of the run.
    pub config: &'a Config,
    /// The merged events (`events.jsonl`), sorted by `ts_us`.
    pub events: &'a [Event],
    /// The run's fault schedule (`schedule.jsonl`).
    pub schedule: &'a [FaultAction],
    /// The scenario the run was made for.
    pub scenario: &'a Scenario,
}

impl<'a> Trace<'a> {
    /// The trace of a run.
    pub fn new(
        config: &'a Config,
        events: &'a [Event],
        schedule: &'a [FaultAction],
        scenario: &'a Scenario,
    ) -> Trace<'a> {
        Trace { config, events, schedule, scenario }
    }

    /// The events of kind `ev`, in order.
    pub fn of_kind<'b>(&'b self, ev: &'b str) -> impl Iterator<Item = &'a Event> + 'b {
        self.events.iter().filter(move |e| e.ev == ev)
    }
}

/// A rule's check (rule 2).
pub type Check = fn(&Trace<'_>) -> Verdict;

/// One checked rule of a workload's behaviour contract (rule 1).
#[derive(Clone, Copy)]
pub struct Rule {
    /// `<workload>.<n>[letter]`, e.g. `chat.3`.
    pub id: &'static str,
    /// What the rule requires, one sentence.
    pub text: &'static str,
    /// The check.
    pub check: Check,
}

impl fmt::Debug for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.id)
    }
}

/// The check of a contract rule that the trace cannot show: always `n/a` with
/// [`NOT_OBSERVABLE`].
pub fn not_observable(_: &Trace<'_>) -> Verdict {
    Verdict::na(NOT_OBSERVABLE)
}

/// A short config that exercises rules (rule 4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Scenario {
    /// Its name (a folder name; `--scenario NAME`).
    pub name: String,
    /// `key=value` settings applied over the workload's defaults, in order.
    pub settings: Vec<(String, String)>,
}

impl Scenario {
    /// A scenario from `(key, value)` pairs.
    pub fn new(name: &str, settings: &[(&str, &str)]) -> Scenario {
        Scenario {
            name: name.into(),
            settings: settings.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect(),
        }
    }

    /// The value this scenario sets for `key`, if it sets one.
    pub fn setting(&self, key: &str) -> Option<&str> {
        self.settings.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// One event quoted as evidence (rule 3): `[node ts_us=.. ev ids]`, the ids being whichever of
/// `id`, `target`, `by`, `kind`, `attempt`, `what`, `second` and `ms` the event carries.
pub fn cite(e: &Event) -> String {
    let mut s = format!("[node={} ts_us={} ev={}", e.node, e.ts_us, e.ev);
    for k in ["id", "target", "by", "kind", "attempt", "what", "second", "ms"] {
        match e.raw.get(k) {
            Some(serde_json::Value::String(v)) => s.push_str(&format!(" {k}={v}")),
            Some(serde_json::Value::Null) | None => {}
            Some(v) => s.push_str(&format!(" {k}={v}")),
        }
    }
    s.push(']');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(line: &str) -> Event {
        crate::events::parse_line(line).unwrap()
    }

    #[test]
    fn rule_3_cite_quotes_node_stamp_kind_and_ids() {
        let e = ev(
            r#"{"ts_us":5,"run":"r","rt":"troupe","node":"n1","ev":"fault_injected","id":"f-1","target":"chat-0","kind":"kill"}"#,
        );
        assert_eq!(cite(&e), "[node=n1 ts_us=5 ev=fault_injected id=f-1 target=chat-0 kind=kill]");
        let e = ev(
            r#"{"ts_us":7,"run":"r","rt":"troupe","node":"n1","ev":"restarted","target":"chat-0","attempt":2,"id":null}"#,
        );
        assert_eq!(cite(&e), "[node=n1 ts_us=7 ev=restarted target=chat-0 attempt=2]");
    }

    #[test]
    fn rule_5_any_failure_wins_then_any_pass_then_na() {
        let (p, f, n) = (Verdict::Pass, Verdict::fail("x"), Verdict::na("why"));
        assert_eq!(Verdict::combine([&p, &f, &n]), f);
        assert_eq!(Verdict::combine([&n, &p]), p);
        assert_eq!(Verdict::combine([&n]), n);
        assert_eq!(Verdict::combine([]).label(), "n/a");
    }

    #[test]
    fn rule_4_the_last_setting_of_a_key_is_the_one_that_counts() {
        let s = Scenario::new("s", &[("lookup", "retry"), ("lookup", "park")]);
        assert_eq!(s.setting("lookup"), Some("park"));
        assert_eq!(s.setting("seed"), None);
    }
}
