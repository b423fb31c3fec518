//! The kv history checker (docs/kv.md "Nemesis runs"): what the quorum store (N=3, R+W > N,
//! last writer wins by version, anti-entropy, recovering replicas that refuse until synced)
//! promises, held against a run's history and its final reads.
//!
//! Guarantees (each broken one fails the checker; the first's evidence is the counterexample):
//! 1. `lost_acknowledged`: no acknowledged write is lost. After the final heal a key's final
//!    value (the newest version its replicas hold once they agree) is at least every version
//!    an `ok` put wrote to it; an acknowledged put whose version is newer than the final value
//!    is lost (one count each).
//! 2. `stale_read`: a get that began after a put to its key was acknowledged returns that put's
//!    version or a newer one (quorum intersection). When the put was the reader's own, the
//!    anomaly is counted as `read_your_writes` too.
//! 3. `phantom`: every version read (by a get or in the final reads) was written to that key by
//!    a put that was not certainly refused (`ok` or `info`).
//! 4. `not_converged`: the replicas agree within the settling bound after the final heal.
//!
//! Anomalies the store is expected to show (counted and named; they do not fail it):
//! - `lost_update`: an acknowledged put overwritten by a concurrent put (their invocations and
//!   completions overlap) with a newer version: last writer wins, so one of two concurrent
//!   writers' values is gone, as the docs say.
//! - `read_in_flight`: a get returned a version whose put had not completed `ok` when the get
//!   completed (still in flight, or indeterminate): reads are not isolated from writes.
//! - `non_monotonic_read`: a client read a version older than one it read before from the same
//!   key (no read repair: a version seen on one replica before its put reached W may be missed
//!   by the next quorum).

use std::collections::{BTreeMap, HashMap};

use troupe_lab::history::{Op, Outcome, Verdict};

/// The final read of a key (settle.rs rule 3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Final {
    /// The newest version counter its replicas hold (`None`: none holds it).
    pub value: Option<u64>,
    /// Whether any replica answered in the last round. A key none answered is unknown, not
    /// empty: it is no evidence of a lost write (the run fails `not_converged` instead).
    pub answered: bool,
}

fn version(v: &serde_json::Value) -> Option<u64> {
    v.as_u64()
}

/// Checks a history (puts and gets; the value of each is its version counter) against the
/// final reads and the convergence time (guarantees 1-4, anomalies counted).
pub fn check(ops: &[Op], finals: &BTreeMap<String, Final>, converged_ms: Option<u64>) -> Verdict {
    let mut v = Verdict::of(ops);
    v.converged_ms = converged_ms.map(|m| m as f64);
    let mut by_key: HashMap<&str, Vec<&Op>> = HashMap::new();
    for o in ops.iter().filter(|o| o.f == "put" || o.f == "get") {
        by_key.entry(o.key.as_str()).or_default().push(o);
    }
    let mut keys: Vec<&str> = by_key.keys().copied().collect();
    keys.sort_unstable();
    for key in keys {
        let ops = &by_key[key];
        let puts: Vec<&Op> = ops.iter().copied().filter(|o| o.f == "put").collect();
        let written: HashMap<u64, &Op> = puts
            .iter()
            .filter(|p| p.outcome != Outcome::Fail)
            .filter_map(|p| version(&p.value).map(|x| (x, *p)))
            .collect();
        // 1: acknowledged puts newer than the final value (a key no replica answered for in
        // the last round is unknown: not judged here).
        let unknown = finals.get(key).is_some_and(|f| !f.answered);
        let fin = finals.get(key).and_then(|f| f.value);
        for p in puts.iter().filter(|p| p.outcome == Outcome::Ok && !unknown) {
            if version(&p.value).is_some_and(|w| fin.is_none_or(|f| w > f)) {
                v.lost_acknowledged += 1;
                v.broken("lost_acknowledged", || format!("{}; final value of {key} = {fin:?}", p.describe()));
            }
        }
        // 3: the final value was written.
        if let Some(f) = fin.filter(|f| !written.contains_key(f)) {
            v.broken("phantom", || format!("the final value of {key} is version {f}, which no put wrote to it"));
        }
        // 2 and 3 per get, with the acknowledged puts in completion order.
        let mut acked: Vec<(i64, u64, u64)> = puts
            .iter()
            .filter(|p| p.outcome == Outcome::Ok)
            .filter_map(|p| version(&p.value).map(|w| (p.complete_us, w, p.process)))
            .collect();
        acked.sort_unstable();
        // The newest version (and its writer) among the first i + 1 acknowledged, by completion.
        let newest: Vec<(u64, u64)> = acked
            .iter()
            .scan(None::<(u64, u64)>, |m, (_, w, by)| {
                let n = match *m {
                    Some((mw, mb)) if mw >= *w => (mw, mb),
                    _ => (*w, *by),
                };
                *m = Some(n);
                Some(n)
            })
            .collect();
        let mut last_read: HashMap<u64, u64> = HashMap::new();
        let mut gets: Vec<&Op> = ops.iter().copied().filter(|o| o.f == "get" && o.outcome == Outcome::Ok).collect();
        gets.sort_by_key(|g| (g.invoke_us, g.process, g.index));
        for g in gets {
            let read = version(&g.value);
            if let Some(r) = read {
                match written.get(&r) {
                    None => v.broken("phantom", || format!("{} read a version no put wrote to {key}", g.describe())),
                    Some(p) if !(p.outcome == Outcome::Ok && p.complete_us <= g.complete_us) => {
                        v.count("read_in_flight")
                    }
                    Some(_) => {}
                }
            }
            // The newest version acknowledged before the get began, and whose it was.
            let before = acked.partition_point(|(t, _, _)| *t < g.invoke_us);
            if let Some((w, _)) = before.checked_sub(1).map(|i| &newest[i]) {
                if read.is_none_or(|r| r < *w) {
                    v.broken("stale_read", || {
                        format!("{} but version {w} of {key} was acknowledged before it began", g.describe())
                    });
                }
            }
            if let (Some(r), Some(prev)) = (read, last_read.get(&g.process)) {
                if r < *prev {
                    v.count("non_monotonic_read");
                }
            }
            if let Some(r) = read {
                let e = last_read.entry(g.process).or_insert(r);
                *e = (*e).max(r);
            }
        }
        // 2, the reader's own: a client runs one operation at a time, so in its own order each
        // of its gets follows every put it made before.
        let mut mine: Vec<&Op> = ops.to_vec();
        mine.sort_by_key(|o| (o.process, o.index));
        let mut own: Option<(u64, u64)> = None; // (process, newest version it put and saw acked)
        for o in mine {
            if own.is_some_and(|(p, _)| p != o.process) {
                own = None;
            }
            match (o.f.as_str(), o.outcome, version(&o.value)) {
                ("put", Outcome::Ok, Some(w)) => {
                    own = Some((o.process, own.map_or(w, |(_, x)| x.max(w))));
                }
                ("get", Outcome::Ok, read) if own.is_some_and(|(_, w)| read.is_none_or(|r| r < w)) => {
                    v.count("read_your_writes");
                }
                _ => {}
            }
        }
        // Expected: lost updates between overlapping puts.
        let mut sorted: Vec<&Op> = puts.iter().copied().filter(|p| p.outcome != Outcome::Fail).collect();
        sorted.sort_by_key(|p| p.invoke_us);
        // A put that overlaps p began at most the longest put's duration before p did.
        let longest = sorted.iter().map(|q| q.complete_us - q.invoke_us).max().unwrap_or(0);
        for (i, p) in sorted.iter().enumerate() {
            if p.outcome != Outcome::Ok {
                continue;
            }
            let Some(w) = version(&p.value) else { continue };
            let overlaps = |q: &&Op| q.invoke_us < p.complete_us && p.invoke_us < q.complete_us;
            let newer = |q: &&Op| version(&q.value).is_some_and(|x| x > w);
            let after = sorted[i + 1..].iter().take_while(|q| q.invoke_us < p.complete_us);
            let before = sorted[..i].iter().rev().take_while(|q| q.invoke_us >= p.invoke_us - longest);
            if after.chain(before).any(|q| overlaps(q) && newer(q)) {
                v.count("lost_update");
            }
        }
    }
    if converged_ms.is_none() {
        v.broken("not_converged", || {
            "the replicas did not agree within the settling bound after the final heal".into()
        });
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn op(process: u64, f: &str, key: &str, value: Option<u64>, t: (i64, i64), outcome: Outcome) -> Op {
        Op {
            process,
            index: t.0 as u64,
            f: f.into(),
            key: key.into(),
            value: value.map_or(serde_json::Value::Null, |x| json!(x)),
            invoke_us: t.0,
            complete_us: t.1,
            outcome,
        }
    }

    fn finals(pairs: &[(&str, Option<u64>)]) -> BTreeMap<String, Final> {
        pairs.iter().map(|(k, v)| (k.to_string(), Final { value: *v, answered: true })).collect()
    }

    #[test]
    fn a_clean_history_passes() {
        let h = [
            op(1, "put", "a", Some(1), (0, 10), Outcome::Ok),
            op(2, "get", "a", Some(1), (11, 20), Outcome::Ok),
            op(2, "put", "a", Some(2), (21, 30), Outcome::Info),
            op(1, "get", "a", None, (0, 5), Outcome::Fail),
        ];
        let v = check(&h, &finals(&[("a", Some(2))]), Some(40));
        assert!(v.pass(), "{v:?}");
        assert_eq!((v.ok, v.indeterminate, v.failed), (2, 1, 1));
    }

    #[test]
    fn guarantee1_an_acknowledged_put_newer_than_the_final_value_is_lost() {
        let h = [op(1, "put", "a", Some(1), (0, 10), Outcome::Ok), op(1, "put", "a", Some(2), (11, 20), Outcome::Ok)];
        let v = check(&h, &finals(&[("a", Some(1))]), Some(5));
        assert_eq!(v.lost_acknowledged, 1);
        assert!(v.counterexample.as_deref().unwrap().starts_with("lost_acknowledged: client 1"), "{v:?}");
        let gone = check(&h, &finals(&[]), Some(5));
        assert_eq!(gone.lost_acknowledged, 2, "a key the replicas do not hold loses every acked put");
        // A key no replica answered for in the last round is unknown: no loss is claimed; the
        // replicas not agreeing within the bound fails guarantee 4 instead.
        let silent: BTreeMap<String, Final> = [("a".to_string(), Final { value: None, answered: false })].into();
        let v = check(&h, &silent, None);
        assert_eq!(v.lost_acknowledged, 0);
        assert!(v.counterexample.as_deref().unwrap().starts_with("not_converged"), "{v:?}");
    }

    #[test]
    fn guarantee2_a_read_older_than_an_acknowledged_put_is_stale_and_own_is_ryw() {
        let h = [
            op(1, "put", "a", Some(5), (0, 10), Outcome::Ok),
            op(2, "get", "a", None, (11, 20), Outcome::Ok),
            op(1, "get", "a", None, (12, 21), Outcome::Ok),
        ];
        let v = check(&h, &finals(&[("a", Some(5))]), Some(1));
        assert!(!v.pass());
        assert_eq!(v.anomalies["stale_read"], 2);
        assert_eq!(v.anomalies["read_your_writes"], 1);
        // A get concurrent with the put may miss it.
        let ok = [op(1, "put", "a", Some(5), (0, 10), Outcome::Ok), op(2, "get", "a", None, (5, 20), Outcome::Ok)];
        assert!(check(&ok, &finals(&[("a", Some(5))]), Some(1)).pass());
    }

    #[test]
    fn guarantee3_a_version_nobody_wrote_is_a_phantom() {
        let h = [op(1, "put", "a", Some(1), (0, 10), Outcome::Fail), op(2, "get", "a", Some(1), (11, 20), Outcome::Ok)];
        let v = check(&h, &finals(&[("a", None)]), Some(1));
        assert_eq!(v.anomalies["phantom"], 1, "a put certainly refused was read: {v:?}");
    }

    #[test]
    fn guarantee4_no_convergence_fails() {
        let v = check(&[], &finals(&[]), None);
        assert!(v.counterexample.unwrap().starts_with("not_converged"));
    }

    #[test]
    fn expected_anomalies_are_counted_not_failed() {
        let h = [
            op(1, "put", "a", Some(1), (0, 10), Outcome::Ok),
            op(2, "put", "a", Some(2), (5, 15), Outcome::Ok),
            op(3, "get", "a", Some(3), (20, 30), Outcome::Ok),
            op(4, "put", "a", Some(3), (16, 40), Outcome::Info),
            op(3, "get", "a", Some(2), (31, 35), Outcome::Ok),
        ];
        let v = check(&h, &finals(&[("a", Some(3))]), Some(1));
        assert!(v.pass(), "{v:?}");
        assert_eq!(v.anomalies["lost_update"], 1);
        assert_eq!(v.anomalies["read_in_flight"], 1);
        assert_eq!(v.anomalies["non_monotonic_read"], 1);
    }
}
