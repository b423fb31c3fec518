//! Statistics of one SCP run computed from its recorded events and schedule, so a report can
//! always be rebuilt from the run folder alone (workloads.md §1 "Metrics").
//!
//! Definitions:
//! 1. Throughput: the aggregator's `throughput {second, count}` for window seconds 0..D-1;
//!    the mean is over the seconds present; percent of ceiling = mean / (pairs*1000/delay_ms).
//! 2. Kills = `fault_injected` events; restarts = `restarted` events; skipped faults, dropped
//!    events and errors are summed over every node's `run_finished`.
//! 3. A kill's second is its schedule `at_ms / 1000` (looked up by id); a restart's second is
//!    its time since the window start, estimated as the median of
//!    `ts_us(throughput s) - (s+1) s` (the aggregator reports at the end of each second).
//! 4. Recovery after a burst (kills sharing one `at_ms`, at least 2): 0 when the second holding
//!    the burst is within 1% of the baseline mean, else the time from the burst to the start of
//!    the first later second that is; "unrecovered" if none is before the window ends. The
//!    baseline is the same ratio's 0% run when known (sweeps), else the ceiling. Resolution 1 s.
//! 5. In-flight loss model (for patterns with recovery): a kill at a uniformly random phase of
//!    an exchange of `delay_ms` throws away the part already waited, on average half an
//!    exchange; so kills/s x 0.5 is the drop a runtime with instant restarts would show.
//! 6. Progressive steps: step j covers `[5j, 5j+5)` s; its measured mean uses seconds
//!    5j+1..5j+4 (skipping the second the kills land in); expected = step 0's mean times the
//!    fraction of pairs still alive; deviation in points of step 0's mean.
//! 7. Degraded (troupe_lab::workload rule 6): planned kills neither carried out nor reported
//!    skipped, skipped kills, killed servers due a restart that never came
//!    ([`super::restart_latency`] rule 5), errors reported by the workload. Dropped events
//!    fail the run, as in every workload.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::config::{Pattern, ScpConfig};
use super::schedule::PROGRESSIVE_STEP_MS;
use troupe_lab::config::Config;
use troupe_lab::events::Event;
use troupe_lab::schedule::FaultAction;
use troupe_lab::stats::median;
use troupe_lab::workload::RunAnalysis;

/// One window second.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SecondRow {
    /// Second since the window start.
    pub second: u32,
    /// Exchanges completed in it.
    pub count: u64,
    /// Kills carried out in it.
    pub kills: u64,
    /// Restarts in it.
    pub restarts: u64,
}

/// Recovery after bursts (definition 4).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Recovery {
    /// Bursts carried out.
    pub bursts: usize,
    /// Bursts after which throughput came back within 1% before the window ended.
    pub recovered: usize,
    /// Median recovery time of the recovered bursts, ms.
    pub median_ms: f64,
    /// Longest recovery time, ms.
    pub max_ms: f64,
    /// What "baseline" meant: `baseline run` or `ceiling`.
    pub against: String,
}

/// One progressive step (definition 6).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Step {
    /// Step index (0 = before any kill).
    pub index: u32,
    /// Pairs alive during the step.
    pub alive: u64,
    /// Measured mean throughput.
    pub measured: f64,
    /// Expected throughput.
    pub expected: f64,
    /// (measured - expected) / step 0 mean, in percentage points.
    pub deviation_points: f64,
}

/// Everything the report says about one run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RunStats {
    /// Per window second.
    pub seconds: Vec<SecondRow>,
    /// Mean throughput over the window.
    pub mean: f64,
    /// `pairs * 1000 / delay_ms`.
    pub ceiling: f64,
    /// Mean as percent of the ceiling.
    pub pct_ceiling: f64,
    /// Kills carried out.
    pub kills: u64,
    /// Kills planned in the schedule.
    pub planned_kills: u64,
    /// Restarts.
    pub restarts: u64,
    /// Faults the runtime skipped (no live target).
    pub skipped_faults: u64,
    /// Events dropped by the writer.
    pub dropped_events: u64,
    /// Errors reported by the workload.
    pub errors: u64,
    /// `ready` count (pairs set up), if reported.
    pub ready_count: Option<i64>,
    /// Whether every node reported `run_finished`.
    pub finished: bool,
    /// The nodes that emitted events but no `run_finished` (e.g. an injector process that died).
    pub unfinished_nodes: Vec<String>,
    /// Recovery after bursts, for patterns with bursts.
    pub recovery: Option<Recovery>,
    /// Progressive steps.
    pub steps: Vec<Step>,
    /// Exchanges/s lost to in-flight exchanges under definition 5 (0 without kills).
    pub inflight_loss: f64,
    /// Throughput seconds reported more than once or outside the window.
    pub bad_seconds: usize,
    /// Kill-to-restart latency (`restart_ms` in `summary.json`); `None` without a restart
    /// matched to a kill ([`super::restart_latency`]).
    pub restart_ms: Option<super::restart_latency::RestartLatency>,
}

impl RunStats {
    /// Computes the statistics of an SCP run. `baseline` is the mean of the same ratio's 0%
    /// run when known.
    pub fn compute(cfg: &Config, events: &[Event], sched: &[FaultAction], baseline: Option<f64>) -> RunStats {
        let scp = ScpConfig::from_config(cfg);
        let d = scp.duration_s as usize;
        let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
        let mut bad_seconds = 0;
        let mut offsets = Vec::new();
        let (mut kills, mut restarts, mut skipped, mut dropped, mut errors) = (0, 0, 0, 0, 0);
        let mut ready_count = None;
        let mut finished_nodes = std::collections::BTreeSet::new();
        let mut nodes = std::collections::BTreeSet::new();
        let at_by_id: HashMap<&str, u64> = sched.iter().map(|a| (a.id.as_str(), a.at_ms)).collect();
        let mut kill_at: Vec<u64> = Vec::new();
        let mut restart_ts = Vec::new();
        for e in events {
            nodes.insert(e.node.as_str());
            match e.ev.as_str() {
                "throughput" => {
                    let s = e.int("second");
                    if s < 0 || s as usize >= d || counts.contains_key(&(s as u32)) {
                        bad_seconds += 1;
                        continue;
                    }
                    counts.insert(s as u32, e.int("count").max(0) as u64);
                    offsets.push((e.ts_us - (s + 1) * 1_000_000) as f64);
                }
                "fault_injected" => {
                    kills += 1;
                    if let Some(at) = at_by_id.get(e.str("id")) {
                        kill_at.push(*at);
                    }
                }
                "restarted" => {
                    restarts += 1;
                    restart_ts.push(e.ts_us);
                }
                // Other components (the injector process) report ready too; only pairs count here.
                "ready" if e.str("what") == "pairs" => ready_count = Some(ready_count.unwrap_or(0) + e.int("count")),
                "run_finished" => {
                    finished_nodes.insert(e.node.as_str());
                    dropped += e.int("dropped_events").max(0) as u64;
                    errors += e.int("errors").max(0) as u64;
                    skipped += e.int("skipped_faults").max(0) as u64;
                }
                _ => {}
            }
        }
        let window_start = median(&mut offsets);
        let mut seconds: Vec<SecondRow> =
            counts.iter().map(|(&s, &c)| SecondRow { second: s, count: c, kills: 0, restarts: 0 }).collect();
        let index: HashMap<u32, usize> = seconds.iter().enumerate().map(|(i, r)| (r.second, i)).collect();
        for at in &kill_at {
            if let Some(&i) = index.get(&((at / 1000) as u32)) {
                seconds[i].kills += 1;
            }
        }
        if window_start.is_finite() {
            for ts in restart_ts {
                let off = (ts as f64 - window_start) / 1e6;
                if off >= 0.0 {
                    if let Some(&i) = index.get(&(off as u32)) {
                        seconds[i].restarts += 1;
                    }
                }
            }
        }
        let mean = if seconds.is_empty() {
            0.0
        } else {
            seconds.iter().map(|r| r.count as f64).sum::<f64>() / seconds.len() as f64
        };
        let ceiling = scp.ceiling();
        let recovery = match scp.pattern {
            Pattern::Burst | Pattern::Random if !scp.is_baseline() => {
                Some(recovery(&seconds, &kill_at, baseline, ceiling, d))
            }
            _ => None,
        };
        let steps = if scp.pattern == Pattern::Progressive && !scp.is_baseline() {
            progressive_steps(&scp, &seconds, &kill_at)
        } else {
            Vec::new()
        };
        let inflight_loss =
            if scp.recovery && !seconds.is_empty() { kill_at.len() as f64 * 0.5 / seconds.len() as f64 } else { 0.0 };
        RunStats {
            inflight_loss,
            seconds,
            mean,
            ceiling,
            pct_ceiling: 100.0 * mean / ceiling,
            kills,
            planned_kills: sched.len() as u64,
            restarts,
            skipped_faults: skipped,
            dropped_events: dropped,
            errors,
            ready_count,
            finished: !finished_nodes.is_empty() && finished_nodes.len() >= nodes.len(),
            unfinished_nodes: nodes.difference(&finished_nodes).map(|n| (*n).to_owned()).collect(),
            recovery,
            steps,
            bad_seconds,
            restart_ms: super::restart_latency::summarise(events, sched),
        }
    }

    /// Why the recorded events are not a complete run, if they are not (run rule 3).
    pub fn completeness_problem(&self, cfg: &Config) -> Option<String> {
        let d = cfg.int("duration_s") as usize;
        if self.ready_count.is_none() {
            return Some("no `ready` event: the SUB never finished setting up".into());
        }
        if self.ready_count != Some(cfg.int("pairs")) {
            return Some(format!(
                "`ready` reported {} pairs, the config asked for {}",
                self.ready_count.unwrap_or(0),
                cfg.int("pairs")
            ));
        }
        if self.seconds.len() != d || self.bad_seconds > 0 {
            return Some(format!(
                "expected one `throughput` event for each of the {d} window seconds, got {} \
                 ({} duplicated or out of range)",
                self.seconds.len(),
                self.bad_seconds
            ));
        }
        if self.dropped_events > 0 {
            return Some(format!("{} events were dropped by the writers (buffer full)", self.dropped_events));
        }
        if !self.finished {
            if self.unfinished_nodes.is_empty() {
                return Some("no `run_finished` event: the SUB did not end cleanly".into());
            }
            return Some(format!(
                "no `run_finished` event from node(s) {}: they did not end cleanly (see stderr.txt)",
                self.unfinished_nodes.join(", ")
            ));
        }
        None
    }

    /// What the run failed to do although its events are complete (definition 7).
    pub fn degradations(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.kills + self.skipped_faults < self.planned_kills {
            out.push(format!(
                "{} of {} planned kills were neither carried out nor reported skipped",
                self.planned_kills - self.kills - self.skipped_faults,
                self.planned_kills
            ));
        }
        if self.skipped_faults > 0 {
            out.push(format!("{} of {} planned kills skipped", self.skipped_faults, self.planned_kills));
        }
        if let Some(r) = self.restart_ms.as_ref().filter(|r| r.unrestarted > 0) {
            out.push(format!("{} killed servers were never restarted", r.unrestarted));
        }
        if self.errors > 0 {
            out.push(format!("{} errors reported by the workload", self.errors));
        }
        out
    }
}

impl RunAnalysis for RunStats {
    fn completeness_problem(&self, cfg: &Config) -> Option<String> {
        RunStats::completeness_problem(self, cfg)
    }

    fn degradations(&self, _cfg: &Config) -> Vec<String> {
        RunStats::degradations(self)
    }

    fn summary_rows(&self) -> Vec<(String, String)> {
        summary_rows(self)
    }

    fn summary_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if let serde_json::Value::Object(o) = &mut v {
            // Per-second rows are in scp.csv; the summary keeps the run's numbers.
            o.remove("seconds");
            o.insert("msg_per_s_mean".into(), self.mean.into());
        }
        v
    }

    fn headline(&self) -> String {
        format!("mean {:.1}/s ({:.2}% of ceiling), kills {}", self.mean, self.pct_ceiling, self.kills)
    }
}

fn recovery(rows: &[SecondRow], kill_at: &[u64], baseline: Option<f64>, ceiling: f64, d: usize) -> Recovery {
    let base = baseline.unwrap_or(ceiling);
    let mut groups: BTreeMap<u64, usize> = BTreeMap::new();
    for &at in kill_at {
        *groups.entry(at).or_default() += 1;
    }
    let count_at: HashMap<u32, u64> = rows.iter().map(|r| (r.second, r.count)).collect();
    let mut times = Vec::new();
    let mut bursts = 0;
    for (&at, &n) in &groups {
        if n < 2 {
            continue;
        }
        bursts += 1;
        let s0 = (at / 1000) as u32;
        let ok = |s: u32| count_at.get(&s).is_some_and(|&c| c as f64 >= 0.99 * base);
        if ok(s0) {
            times.push(0.0);
        } else if let Some(s) = (s0 + 1..d as u32).find(|&s| ok(s)) {
            times.push((u64::from(s) * 1000 - at) as f64);
        }
    }
    let recovered = times.len();
    let max_ms = times.iter().cloned().fold(0.0, f64::max);
    Recovery {
        bursts,
        recovered,
        median_ms: if times.is_empty() { f64::NAN } else { median(&mut times) },
        max_ms,
        against: if baseline.is_some() { "baseline run".into() } else { "ceiling".into() },
    }
}

fn progressive_steps(scp: &ScpConfig, rows: &[SecondRow], kill_at: &[u64]) -> Vec<Step> {
    let step_s = (PROGRESSIVE_STEP_MS / 1000) as u32;
    let count_at: HashMap<u32, u64> = rows.iter().map(|r| (r.second, r.count)).collect();
    let n_steps = (scp.duration_s as u32).div_ceil(step_s);
    let mut out = Vec::new();
    let mut step0 = f64::NAN;
    for j in 0..n_steps {
        let start = j * step_s;
        let secs: Vec<f64> = (start + 1..start + step_s).filter_map(|s| count_at.get(&s).map(|&c| c as f64)).collect();
        if secs.is_empty() {
            continue;
        }
        let measured = secs.iter().sum::<f64>() / secs.len() as f64;
        let killed = kill_at.iter().filter(|&&at| at <= u64::from(start) * 1000).count() as u64;
        let alive = u64::from(scp.pairs).saturating_sub(killed);
        if j == 0 {
            step0 = measured;
        }
        let expected = step0 * alive as f64 / f64::from(scp.pairs);
        out.push(Step { index: j, alive, measured, expected, deviation_points: 100.0 * (measured - expected) / step0 });
    }
    out
}

/// Formats a recovery summary.
pub fn recovery_text(st: &RunStats) -> String {
    match &st.recovery {
        None => "n/a (no bursts)".into(),
        Some(r) if r.bursts == 0 => "n/a (no bursts of 2 or more kills)".into(),
        Some(r) if r.recovered == 0 => {
            format!("none of {} bursts: no second after them came within 1% of the {}", r.bursts, r.against)
        }
        Some(r) => {
            format!(
                "{}/{} bursts recovered within 1% of the {}; median {} ms, max {} ms (1 s resolution)",
                r.recovered,
                r.bursts,
                r.against,
                if r.median_ms.is_finite() { format!("{:.0}", r.median_ms) } else { "-".into() },
                r.max_ms
            )
        }
    }
}

/// The summary lines of a run's statistics.
pub fn summary_rows(st: &RunStats) -> Vec<(String, String)> {
    vec![
        ("mean throughput".into(), format!("{:.1} exchanges/s", st.mean)),
        ("ceiling".into(), format!("{:.1} exchanges/s", st.ceiling)),
        ("percent of ceiling".into(), format!("{:.2}%", st.pct_ceiling)),
        ("kills carried out / planned".into(), format!("{} / {}", st.kills, st.planned_kills)),
        ("restarts".into(), st.restarts.to_string()),
        (
            "kill to restart".into(),
            st.restart_ms.as_ref().map_or_else(
                || "-".into(),
                |r| {
                    format!(
                        "median {} ms, p99 {} ms, max {} ms over {} kills ({} never restarted though due, {} \
                         not restarted in all)",
                        r.show("p50", 3),
                        r.show("p99", 3),
                        r.show("max", 3),
                        r.n,
                        r.unrestarted,
                        r.unmatched_kills
                    )
                },
            ),
        ),
        ("skipped faults".into(), st.skipped_faults.to_string()),
        ("dropped events".into(), st.dropped_events.to_string()),
        ("errors".into(), st.errors.to_string()),
        ("recovery after bursts".into(), recovery_text(st)),
        (
            "in-flight loss model".into(),
            if st.inflight_loss > 0.0 {
                format!(
                    "{:.1}/s ({:.2}% of ceiling): half an exchange per restarted kill",
                    st.inflight_loss,
                    100.0 * st.inflight_loss / st.ceiling
                )
            } else {
                "n/a (no restarted kills)".into()
            },
        ),
    ]
}
