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
//!    and the largest latency, and the kills never matched. A kill the schedule makes
//!    permanent (progressive: `restart: false`) is never restarted and is not a sample.
//! 5. Every other kill never matched is a sample of at least the time from it to the run's
//!    last event (censored, troupe_lab::stats rules 5-7), counted in `n`; statistics it may lie
//!    below are listed in `lower_bounds` and shown as `>= X`. It is `unrestarted` when it came
//!    at least [`troupe_lab::stats::RECOVERY_GRACE_MS`] before that last event (a kill in the
//!    window's last instant, before the SUB stopped, had no time to be restarted). No sample
//!    at all: no summary.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::Serialize;

use troupe_lab::events::Event;
use troupe_lab::schedule::FaultAction;
use troupe_lab::stats::Dist;

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
    /// Kills due a restart that never came, at least a second before the run's end (rule 5),
    /// among `n`.
    pub unrestarted: usize,
    /// The statistics that are lower bounds (rule 5): `p50`, `p99`, `max`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lower_bounds: Vec<&'static str>,
}

impl RestartLatency {
    /// Statistic `name` (`p50`, `p99`, `max`) with `prec` decimals, `>= X` when a bound.
    pub fn show(&self, name: &str, prec: usize) -> String {
        let v = match name {
            "p50" => self.p50,
            "p99" => self.p99,
            _ => self.max,
        };
        troupe_lab::stats::bound_text(v, self.lower_bounds.contains(&name), prec)
    }
}

/// The latencies of every matched (kill, restart) pair, ms, in restart order (rules 1-3), and
/// the number of kills left unmatched.
pub fn latencies(events: &[Event]) -> (Vec<f64>, usize) {
    let (out, pending) = pairs(events);
    (out, pending.len())
}

/// Rules 1-3: the matched latencies, and the kills left unmatched as (id, stamp).
fn pairs(events: &[Event]) -> (Vec<f64>, Vec<(&str, i64)>) {
    let mut evs: Vec<&Event> = events.iter().filter(|e| e.ev == "fault_injected" || e.ev == "restarted").collect();
    // Kills before restarts at the same instant, so a restart stamped in the same microsecond
    // as its kill still matches.
    evs.sort_by_key(|e| (e.ts_us, e.ev != "fault_injected"));
    let mut pending: BTreeMap<&str, VecDeque<(&str, i64)>> = BTreeMap::new();
    let mut out = Vec::new();
    for e in evs {
        let target = e.str("target");
        if e.ev == "fault_injected" {
            pending.entry(target).or_default().push_back((e.str("id"), e.ts_us));
        } else if let Some((_, sent)) = pending.get_mut(target).and_then(VecDeque::pop_front) {
            out.push((e.ts_us - sent) as f64 / 1000.0);
        }
    }
    (out, pending.into_values().flatten().collect())
}

/// The summary of a run's kill-to-restart latencies (rules 4-5); `sched` says which kills are
/// permanent (an id it does not name is due a restart).
pub fn summarise(events: &[Event], sched: &[FaultAction]) -> Option<RestartLatency> {
    let (v, pending) = pairs(events);
    let permanent: BTreeSet<&str> = sched.iter().filter(|a| !a.restart).map(|a| a.id.as_str()).collect();
    let last_us = events.iter().map(|e| e.ts_us).max().unwrap_or(0);
    let open: Vec<f64> = pending
        .iter()
        .filter(|(id, _)| !permanent.contains(id))
        .map(|&(_, at)| (last_us - at).max(0) as f64 / 1000.0)
        .collect();
    let d = Dist::of_censored(&v, &open)?;
    let bound = |k: &'static str, as_name: &'static str| d.lower_bounds.contains(&k).then_some(as_name);
    Some(RestartLatency {
        n: d.n,
        p50: d.median,
        p99: d.p99,
        max: d.max,
        unmatched_kills: pending.len(),
        unrestarted: open.iter().filter(|&&left| !troupe_lab::stats::began_late(left, 0.0)).count(),
        lower_bounds: [bound("median", "p50"), bound("p99", "p99"), bound("max", "max")]
            .into_iter()
            .flatten()
            .collect(),
    })
}
