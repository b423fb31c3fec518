//! The crdt checker (docs/nemesis-crdt.md): what the replicator promises about a history of
//! counter increments and OR-set adds and the replicas' final values, read after the final
//! heal.
//!
//! Rules (each a guarantee; a broken one fails the checker with its evidence):
//! 1. Convergence: every node reported a final value within the bound, and all reported the
//!    same counter V and the same set S (`not_converged` otherwise).
//! 2. No lost increment: V >= the sum of the acknowledged (`ok`) increments; the shortfall is
//!    counted in `lost_acknowledged` (`lost_acknowledged`).
//! 3. No phantom increment: V <= the sum of the `ok` and `info` increments (`phantom_increment`).
//! 4. No lost add: every element of an `ok` add is in S; each missing one is counted in
//!    `lost_acknowledged` (`lost_acknowledged`).
//! 5. No phantom element: every element of S was added by an `ok` or `info` add
//!    (`phantom_add`): an element whose add certainly failed, or that nobody added, is one.
//! 6. Expected, counted and not failing: `indeterminate_applied`, the `info` updates whose
//!    effect the final state shows (increments: V minus the `ok` sum; adds: their elements
//!    in S).
//!
//! When the replicas did not agree, rules 2-5 are checked against the most any replica holds
//! (the largest counter, the union of the sets), so a loss is still told apart from slowness.

use std::collections::{BTreeMap, BTreeSet};

use troupe_lab::history::{Op, Outcome, Verdict};

/// One replica's final values (`None`: it did not answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Final {
    /// The node index.
    pub node: u32,
    /// Its counter.
    pub counter: Option<u64>,
    /// Its set.
    pub set: Option<BTreeSet<String>>,
}

fn amount(o: &Op) -> u64 {
    o.value.as_u64().unwrap_or(0)
}

fn element(o: &Op) -> String {
    o.value.as_str().map_or_else(|| o.value.to_string(), str::to_string)
}

/// Rules 1-6 over a history, the replicas' final values and the convergence time.
pub fn check(ops: &[Op], finals: &[Final], nodes: u32, converged_ms: Option<f64>) -> Verdict {
    let mut v = Verdict::of(ops);
    v.converged_ms = converged_ms;
    // Rule 1.
    let answered: Vec<(&Final, u64, &BTreeSet<String>)> =
        finals.iter().filter_map(|f| Some((f, f.counter?, f.set.as_ref()?))).collect();
    let agree = answered.windows(2).all(|w| w[0].1 == w[1].1 && w[0].2 == w[1].2);
    let all = (0..nodes).all(|i| answered.iter().any(|(f, _, _)| f.node == i));
    if !(agree && all && converged_ms.is_some()) {
        v.converged_ms = None;
        v.broken("not_converged", || {
            let each: Vec<String> = finals
                .iter()
                .map(|f| match (f.counter, &f.set) {
                    (Some(c), Some(s)) => format!("node-{} counter {c}, set of {}", f.node, s.len()),
                    _ => format!("node-{} did not answer", f.node),
                })
                .collect();
            format!("the replicas did not agree within the bound: {}", each.join("; "))
        });
    }
    let value = answered.iter().map(|a| a.1).max().unwrap_or(0);
    let set: BTreeSet<String> = answered.iter().flat_map(|a| a.2.iter().cloned()).collect();
    let incr = |o: Outcome| ops.iter().filter(|x| x.f == "incr" && x.outcome == o).map(amount).sum::<u64>();
    let (sum_ok, sum_info) = (incr(Outcome::Ok), incr(Outcome::Info));
    // Rule 2.
    if value < sum_ok {
        v.lost_acknowledged += sum_ok - value;
        v.broken("lost_acknowledged", || {
            format!("the counter is {value} but acknowledged increments sum to {sum_ok} ({} short)", sum_ok - value)
        });
    }
    // Rule 3.
    if value > sum_ok + sum_info {
        v.broken("phantom_increment", || {
            format!("the counter is {value} but the ok and info increments sum to {}", sum_ok + sum_info)
        });
    }
    if value > sum_ok {
        v.count_n("indeterminate_applied", (value - sum_ok).min(sum_info));
    }
    // Rules 4-5.
    let mut adds: BTreeMap<String, Vec<&Op>> = BTreeMap::new();
    for o in ops.iter().filter(|o| o.f == "add") {
        adds.entry(element(o)).or_default().push(o);
    }
    for (e, os) in &adds {
        if os.iter().any(|o| o.outcome == Outcome::Ok) && !set.contains(e) {
            v.lost_acknowledged += 1;
            let o = os.iter().find(|o| o.outcome == Outcome::Ok).copied();
            v.broken("lost_acknowledged", || {
                format!("{} is in no replica's final set", o.map_or_else(|| e.clone(), |o| o.describe()))
            });
        }
    }
    for e in &set {
        let os = adds.get(e).map(Vec::as_slice).unwrap_or_default();
        if os.iter().any(|o| o.outcome == Outcome::Ok) {
            continue;
        }
        if os.iter().any(|o| o.outcome == Outcome::Info) {
            v.count("indeterminate_applied");
        } else {
            v.broken("phantom_add", || match os.first() {
                Some(o) => format!("{e:?} is in the final set although its add failed: {}", o.describe()),
                None => format!("{e:?} is in the final set and no client added it"),
            });
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn op(process: u64, index: u64, f: &str, value: serde_json::Value, outcome: Outcome) -> Op {
        let t = (index * 10) as i64;
        Op { process, index, f: f.into(), key: f.into(), value, invoke_us: t, complete_us: t + 5, outcome }
    }

    fn finals(counter: u64, set: &[&str], nodes: u32) -> Vec<Final> {
        let set: BTreeSet<String> = set.iter().map(|s| s.to_string()).collect();
        (0..nodes).map(|node| Final { node, counter: Some(counter), set: Some(set.clone()) }).collect()
    }

    fn history() -> Vec<Op> {
        vec![
            op(0, 0, "incr", json!(1), Outcome::Ok),
            op(0, 1, "incr", json!(1), Outcome::Ok),
            op(1, 0, "incr", json!(1), Outcome::Info),
            op(1, 1, "add", json!("a"), Outcome::Ok),
            op(1, 2, "add", json!("b"), Outcome::Info),
            op(2, 0, "add", json!("c"), Outcome::Fail),
        ]
    }

    #[test]
    fn rule1_replicas_that_disagree_or_did_not_answer_fail() {
        let mut f = finals(2, &["a"], 3);
        f[1].counter = Some(1);
        let v = check(&history(), &f, 3, Some(10.0));
        assert!(v.counterexample.as_deref().unwrap().starts_with("not_converged"), "{v:?}");
        assert_eq!(v.converged_ms, None);
        let mut f = finals(2, &["a"], 3);
        f.pop();
        assert!(!check(&history(), &f, 3, Some(10.0)).pass());
        assert!(!check(&history(), &finals(2, &["a"], 3), 3, None).pass(), "no convergence time");
    }

    #[test]
    fn rule2_a_counter_below_the_acknowledged_sum_is_lost_acknowledged() {
        let v = check(&history(), &finals(1, &["a"], 3), 3, Some(5.0));
        assert_eq!(v.lost_acknowledged, 1);
        assert!(v.counterexample.as_deref().unwrap().starts_with("lost_acknowledged"), "{v:?}");
        assert_eq!(v.summary_json()["checker"], "fail");
    }

    #[test]
    fn rule3_a_counter_above_ok_plus_info_is_a_phantom() {
        let v = check(&history(), &finals(4, &["a"], 3), 3, Some(5.0));
        assert!(v.counterexample.as_deref().unwrap().starts_with("phantom_increment"), "{v:?}");
    }

    #[test]
    fn rule4_an_acknowledged_add_missing_from_the_set_is_lost() {
        let v = check(&history(), &finals(2, &["b"], 3), 3, Some(5.0));
        assert_eq!(v.lost_acknowledged, 1);
        assert!(v.counterexample.as_deref().unwrap().contains("op 1 add"), "{v:?}");
    }

    #[test]
    fn rule5_an_element_of_a_failed_add_or_of_nobody_is_a_phantom() {
        let v = check(&history(), &finals(2, &["a", "c"], 3), 3, Some(5.0));
        assert!(v.counterexample.as_deref().unwrap().starts_with("phantom_add"), "{v:?}");
        let v = check(&history(), &finals(2, &["a", "zz"], 3), 3, Some(5.0));
        assert!(v.counterexample.as_deref().unwrap().contains("no client added it"), "{v:?}");
    }

    #[test]
    fn rule6_indeterminate_updates_that_applied_are_counted_and_pass() {
        let v = check(&history(), &finals(3, &["a", "b"], 3), 3, Some(5.0));
        assert!(v.pass(), "{v:?}");
        assert_eq!(v.anomalies.get("indeterminate_applied"), Some(&2));
        assert_eq!((v.ops, v.ok, v.failed, v.indeterminate), (6, 3, 1, 2));
        let v = check(&history(), &finals(2, &["a"], 3), 3, Some(5.0));
        assert!(v.pass() && v.anomalies.is_empty(), "indeterminate updates may also not apply: {v:?}");
    }

    #[test]
    fn rules2_5_are_checked_against_the_most_any_replica_holds_when_they_disagree() {
        let mut f = finals(2, &["a"], 3);
        f[0].counter = Some(0);
        let v = check(&history(), &f, 3, Some(5.0));
        assert_eq!(v.lost_acknowledged, 0, "{v:?}");
        assert_eq!(v.anomalies.get("not_converged"), Some(&1));
    }
}
