//! Checks every workload's contract shares, written once on the common events (events.md) so a
//! workload's rule can be one of them: the schedule carried out.
//!
//! Rules:
//! 1. [`faults_carried_out`]: every planned fault of the workload (network faults aside) is
//!    carried out, one `fault_injected` with its id, or counted skipped in the nodes'
//!    `run_finished {skipped_faults}`; no id is injected twice, and none that is not planned.

use std::collections::{BTreeMap, HashSet};

use super::{cite, Trace, Verdict};
use crate::netfaults::is_net_kind;

/// Rule 1.
pub fn faults_carried_out(t: &Trace<'_>) -> Verdict {
    let planned: Vec<_> = t.schedule.iter().filter(|a| !is_net_kind(&a.kind)).collect();
    let ids: HashSet<&str> = planned.iter().map(|a| a.id.as_str()).collect();
    let mut injected: BTreeMap<&str, &crate::events::Event> = BTreeMap::new();
    for e in t.of_kind("fault_injected").filter(|e| !is_net_kind(e.str("kind"))) {
        let id = e.str("id");
        if !ids.contains(id) {
            return Verdict::fail(format!("a fault that is not in the schedule: {}", cite(e)));
        }
        if let Some(first) = injected.insert(id, e) {
            return Verdict::fail(format!("fault {id} injected twice: {} and {}", cite(first), cite(e)));
        }
    }
    let skipped: i64 = t.of_kind("run_finished").map(|e| e.int("skipped_faults").max(0)).sum();
    let missing: Vec<_> = planned.iter().filter(|a| !injected.contains_key(a.id.as_str())).collect();
    if missing.len() as i64 > skipped {
        let a = missing[0];
        return Verdict::fail(format!(
            "{} of {} planned faults neither injected nor counted skipped ({} skipped in run_finished); the first: \
             id={} at_ms={} kind={} group={} slot={}",
            missing.len() as i64 - skipped,
            planned.len(),
            skipped,
            a.id,
            a.at_ms,
            a.kind,
            a.group,
            a.slot
        ));
    }
    if planned.is_empty() {
        return Verdict::na("the schedule plans no fault");
    }
    Verdict::Pass
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conform::Scenario;
    use crate::schedule::FaultAction;
    use crate::testkit::Noop;

    fn ev(line: &str) -> crate::events::Event {
        crate::events::parse_line(line).unwrap()
    }

    fn action(id: &str) -> FaultAction {
        FaultAction { id: id.into(), kind: "kill".into(), ..FaultAction::default() }
    }

    fn judge(events: &[&str], sched: &[FaultAction]) -> Verdict {
        let cfg = crate::config::ConfigBuilder::new(&Noop).build().unwrap();
        let evs: Vec<_> = events.iter().map(|l| ev(l)).collect();
        let sc = Scenario::new("s", &[]);
        faults_carried_out(&Trace::new(&cfg, &evs, sched, &sc))
    }

    const F1: &str =
        r#"{"ts_us":1,"run":"r","rt":"x","node":"inj","ev":"fault_injected","id":"f-1","target":"t","kind":"kill"}"#;
    const FIN0: &str = r#"{"ts_us":9,"run":"r","rt":"x","node":"sub","ev":"run_finished","dropped_events":0,"errors":0,"skipped_faults":0}"#;
    const FIN1: &str = r#"{"ts_us":9,"run":"r","rt":"x","node":"sub","ev":"run_finished","dropped_events":0,"errors":0,"skipped_faults":1}"#;

    #[test]
    fn rule_1_every_planned_fault_is_injected_or_counted_skipped() {
        let sched = [action("f-1"), action("f-2")];
        assert_eq!(judge(&[F1, FIN1], &sched), Verdict::Pass);
        match judge(&[F1, FIN0], &sched) {
            Verdict::Fail { evidence } => assert!(evidence.contains("id=f-2 at_ms=0"), "{evidence}"),
            v => panic!("{v}"),
        }
        match judge(&[F1, F1, FIN1], &sched) {
            Verdict::Fail { evidence } => assert!(evidence.contains("f-1 injected twice"), "{evidence}"),
            v => panic!("{v}"),
        }
        match judge(&[F1, FIN1], &[action("f-2")]) {
            Verdict::Fail { evidence } => assert!(evidence.contains("not in the schedule: [node=inj"), "{evidence}"),
            v => panic!("{v}"),
        }
        assert_eq!(judge(&[FIN0], &[]).label(), "n/a");
    }
}
