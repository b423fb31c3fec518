//! Kill-to-restart latency of an SCP run, from its events alone.
//!
//! Rules (the tests check each):
//! 1. A kill is a `fault_injected` event; its `ts_us` is the instant the injector sent the kill
//!    (Troupe's injectors stamp the event just before they kill, as the Erlang peer does), and
//!    its `target` (`g<group>/s<slot>`) names the server actually killed.
//! 2. A restart is a `restarted` event of the same `target`. Each restart is matched to the
//!    earliest kill of its target that is not yet matched and was sent at or before it; a
//!    restart with no such kill (a restart the schedule did not cause) is not counted.
//! 3. The latency of a matched pair is `restarted.ts_us - fault_injected.ts_us`, in ms.
//! 4. The summary gives the count, the median (`p50`, interpolated), the nearest-rank `p99`
//!    and the largest latency, and the kills never matched (a progressive kill is never
//!    restarted, nor is a kill at the very end of the window); no matched pair: no summary.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use crate::events::Event;

/// Kill-to-restart latency of a run (rule 4), `restart_ms` in `summary.json`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RestartLatency {
    /// Matched (kill, restart) pairs.
    pub n: usize,
    /// Median latency, ms.
    pub p50: f64,
    /// 99th percentile (nearest rank), ms.
    pub p99: f64,
    /// Largest latency, ms.
    pub max: f64,
    /// Kills with no matching restart.
    pub unmatched_kills: usize,
}

/// The latencies of every matched (kill, restart) pair, ms, in restart order (rules 1-3), and
/// the number of kills left unmatched.
pub fn latencies(events: &[Event]) -> (Vec<f64>, usize) {
    let mut evs: Vec<&Event> = events.iter().filter(|e| e.ev == "fault_injected" || e.ev == "restarted").collect();
    // Kills before restarts at the same instant, so a restart stamped in the same microsecond
    // as its kill still matches.
    evs.sort_by_key(|e| (e.ts_us, e.ev != "fault_injected"));
    let mut pending: BTreeMap<&str, VecDeque<i64>> = BTreeMap::new();
    let mut out = Vec::new();
    for e in evs {
        let target = e.str("target");
        if e.ev == "fault_injected" {
            pending.entry(target).or_default().push_back(e.ts_us);
        } else if let Some(sent) = pending.get_mut(target).and_then(VecDeque::pop_front) {
            out.push((e.ts_us - sent) as f64 / 1000.0);
        }
    }
    (out, pending.values().map(VecDeque::len).sum())
}

/// The summary of a run's kill-to-restart latencies (rule 4).
pub fn summarise(events: &[Event]) -> Option<RestartLatency> {
    let (mut v, unmatched_kills) = latencies(events);
    if v.is_empty() {
        return None;
    }
    troupe::stats::sort(&mut v);
    Some(RestartLatency {
        n: v.len(),
        p50: troupe::stats::quantile_sorted(&v, 0.5),
        p99: troupe::stats::nearest_rank(&v, 0.99),
        max: v[v.len() - 1],
        unmatched_kills,
    })
}
