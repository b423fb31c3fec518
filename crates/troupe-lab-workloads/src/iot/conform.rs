//! The iot workload's conformance rules (`troupe lab conform iot`): the behaviour contract of
//! docs/iot.md ("Behaviour contract", rules 1-12) as checks of a run's trace, one [`Rule`] per
//! checked predicate, named after the contract rule it checks (`iot.9a`); a contract rule the
//! events cannot show is a rule whose check is [`not_observable`]. A check fails on the first
//! evidence it finds, quoting the event ([`cite`]).
//!
//! Rules (times on the events' wall clock):
//! 1. `iot.1`: the nodes are `orchestrator`, `server-0` .. `server-(servers-1)` and `devices-0`
//!    .. `devices-(device_processes-1)`, each with a `run_started`, and no other.
//! 2. `iot.6`: every `reconnected {target: "device-k", by: "server-s"}` belongs to a
//!    `restarted` of device k (the latest one stamped before it, or within [`MTTR_SLACK_MS`]
//!    after it), at most one per restart; where it says `acked` and `asked`, every live server
//!    acknowledged (`acked == asked`).
//! 3. `iot.9a`: every `fault_injected` carries a schedule id, once, with its kind; its target
//!    is `device-<group>` (kill) or `server-<group>` (node_kill), and it comes from the device's
//!    process (kill) or the orchestrator (node_kill).
//! 4. `iot.9b`: a kill is stamped no earlier than `start_us + at_ms` (less
//!    [`EARLY_SLACK_MS`]) and at most [`LATE_SLACK_MS`] after it.
//! 5. `iot.9c`: every action of the window is carried out (`fault_injected`) or counted skipped
//!    (`run_finished.skipped_faults`).
//! 6. `iot.9d`: every `restarted` follows a kill of its target by `restart_s` (no sooner, at
//!    most [`LATE_SLACK_MS`] later), `attempt` counting the target's restarts 1, 2, ...; every
//!    kill whose restart falls more than [`LATE_SLACK_MS`] before the window's end was restarted.
//! 7. `iot.9e`: no restart of a kill whose restart instant (`at_ms` + `restart_s`) is at or
//!    after the window's end.
//! 8. `iot.10`: every `fault_detected` has `id: null`, a `server-s` target and a `device-k`
//!    detector, and comes from device k's process.
//! 9. `iot.11a`: one `ready {servers, count: 1}` per server, one `ready {devices, count: n}` per
//!    device process with its n devices, one `ready {window, count: duration_s, start_us}` from
//!    the orchestrator with `start_us` at least `warmup_s` after the last of the others.
//! 10. `iot.11b`: one `throughput` per window second 0 .. duration_s - 1, from the orchestrator,
//!     none stamped before its second ended.
//! 11. `iot.12`: an MTTR sample's `ms` is the time since its restart's event within
//!     [`MTTR_SLACK_MS`] (the device stamps its start and the event a moment apart), for all
//!     but at most [`MTTR_OUTLIERS`] of the samples (a stalled thread stamps some late).
//!
//! A rule whose events the trace does not have (no kill, no restart, no detection) is `n/a`
//! for that trace.

use std::collections::{BTreeMap, BTreeSet};

use troupe_lab::conform::{cite, not_observable, Rule, Scenario, Trace, Verdict};
use troupe_lab::events::Event;
use troupe_lab::netfaults::is_net_kind;
use troupe_lab::schedule::FaultAction;

use super::config::IotConfig;
use super::schedule::{KILL, NODE_KILL};

/// How far an MTTR sample may be from the time since its restart's event (the device stamps
/// its start and the event within a few lines of each other; rounding to whole ms).
pub(crate) const MTTR_SLACK_MS: f64 = 100.0;
/// The share of MTTR samples that may be further off (`iot.12`): on a loaded 2-core machine a
/// JVM thread can be kept from stamping an event long after it took its time (Akka, 3 of 22
/// samples 30-108 ms off while the rest agreed within 1 ms, smoke tests beside five JVMs), so
/// only a systematic difference, another origin of `ms` for most samples, is a failure.
pub(crate) const MTTR_OUTLIERS: f64 = 0.5;
/// How early an action or a restart may be stamped (clock conversions, a kill stamped just
/// after it was issued).
pub(crate) const EARLY_SLACK_MS: i64 = 20;
/// How late an action may be carried out on a loaded machine.
pub(crate) const LATE_SLACK_MS: i64 = 2000;

/// A check's outcome before it becomes a [`Verdict`]: `Ok(None)` passes, `Ok(Some(why))` is
/// not applicable, `Err(evidence)` fails.
type Outcome = Result<Option<&'static str>, String>;

/// The contract's rules, in its order.
pub(crate) fn rules() -> Vec<Rule> {
    let r = |id, text, check| Rule { id, text, check };
    vec![
        r("iot.1", "the orchestrator, every server and every device process, and no other process", c1),
        r("iot.2", "each server's own view of the live servers; a 128-point ring over it names owners", not_observable),
        r("iot.3", "Hello to a seed, Redirect to the owner, one tracker per device and incarnation", not_observable),
        r("iot.4", "heartbeats answered; phi-accrual on both sides with the contract's parameters", not_observable),
        r("iot.5", "Request/Report, re-asked after report_timeout_ms, each summed at most once", not_observable),
        r("iot.6", "one reconnected per device restart, once every live server acknowledged it", c6),
        r("iot.7", "exactly one tracker per device (stand-down, re-home)", not_observable),
        r("iot.8", "drops and delays on device<->server messages only, seeded per device", not_observable),
        r("iot.9a", "each kill is a schedule action, once, on its target, by the right process", c9a),
        r("iot.9b", "each kill at start_us + at_ms", c9b),
        r("iot.9c", "every action of the window carried out or counted skipped", c9c),
        r("iot.9d", "every restart restart_s after its kill, attempts 1, 2, ...; none missing", c9d),
        r("iot.9e", "no restart whose instant falls at or after the window's end", c9e),
        r("iot.10", "a detection names a server, by a device, from that device's process", c10),
        r("iot.11a", "ready once per server and device process; the window warmup_s after the last", c11a),
        r("iot.11b", "one throughput per window second, from the orchestrator, after the second", c11b),
        r("iot.12", "an MTTR sample's ms is the time since its device's restart", c12),
    ]
}

/// Short configs: device and server kills both in one 10 s window.
pub(crate) fn scenarios() -> Vec<Scenario> {
    vec![Scenario::new(
        "kills",
        &[
            ("servers", "2"),
            ("device_processes", "2"),
            ("devices", "20"),
            ("duration_s", "10"),
            ("warmup_s", "1"),
            ("client_mttf_s", "4"),
            ("server_mttf_s", "6"),
            ("restart_s", "1"),
        ],
    )]
}

fn verdict(o: Outcome) -> Verdict {
    match o {
        Ok(None) => Verdict::Pass,
        Ok(Some(why)) => Verdict::na(why),
        Err(evidence) => Verdict::fail(evidence),
    }
}

fn cfg(t: &Trace<'_>) -> IotConfig {
    IotConfig::from_config(t.config)
}

fn c1(t: &Trace<'_>) -> Verdict {
    verdict(processes(&cfg(t), t.events))
}
fn c6(t: &Trace<'_>) -> Verdict {
    verdict(mttr(t.events, false))
}
fn c9a(t: &Trace<'_>) -> Verdict {
    verdict(kill_targets(&cfg(t), t.events, t.schedule))
}
fn c9b(t: &Trace<'_>) -> Verdict {
    verdict(kill_timing(t.events, t.schedule))
}
fn c9c(t: &Trace<'_>) -> Verdict {
    verdict(kill_accounting(&cfg(t), t.events, t.schedule))
}
fn c9d(t: &Trace<'_>) -> Verdict {
    verdict(restarts(&cfg(t), t.events, t.schedule))
}
fn c9e(t: &Trace<'_>) -> Verdict {
    verdict(no_restart_after_window(&cfg(t), t.events, t.schedule))
}
fn c10(t: &Trace<'_>) -> Verdict {
    verdict(detection(&cfg(t), t.events))
}
fn c11a(t: &Trace<'_>) -> Verdict {
    verdict(ready(&cfg(t), t.events))
}
fn c11b(t: &Trace<'_>) -> Verdict {
    verdict(throughput(&cfg(t), t.events))
}
fn c12(t: &Trace<'_>) -> Verdict {
    verdict(mttr(t.events, true))
}

fn of<'a>(events: &'a [Event], ev: &'a str) -> impl Iterator<Item = &'a Event> + 'a {
    events.iter().filter(move |e| e.ev == ev)
}

/// The `fault_injected` lines of kills (network faults, `[net_faults]`, are the lab's and are
/// not this contract's).
fn injected(events: &[Event]) -> impl Iterator<Item = &Event> {
    events.iter().filter(|e| e.ev == "fault_injected" && !is_net_kind(e.str("kind")))
}

/// The index in a `prefix-N` name.
fn index(name: &str, prefix: &str) -> Option<u64> {
    name.strip_prefix(prefix)?.parse().ok()
}

fn window_start(events: &[Event]) -> Result<i64, String> {
    of(events, "ready")
        .find(|e| e.str("what") == "window")
        .map(|e| e.int("start_us"))
        .ok_or_else(|| "no ready {what: \"window\"} line".to_string())
}

fn kills(sched: &[FaultAction]) -> BTreeMap<&str, &FaultAction> {
    sched.iter().filter(|a| a.kind == KILL || a.kind == NODE_KILL).map(|a| (a.id.as_str(), a)).collect()
}

fn target_of(a: &FaultAction) -> String {
    if a.kind == KILL {
        format!("device-{}", a.group)
    } else {
        format!("server-{}", a.group)
    }
}

/// Rule 1 (`iot.1`).
pub(crate) fn processes(cfg: &IotConfig, events: &[Event]) -> Outcome {
    let want: BTreeSet<String> = std::iter::once("orchestrator".to_string())
        .chain((0..cfg.servers).map(|s| format!("server-{s}")))
        .chain((0..cfg.device_processes).map(|p| format!("devices-{p}")))
        .collect();
    if let Some(e) = events.iter().find(|e| !want.contains(&e.node)) {
        return Err(format!("{} comes from a node outside this topology", cite(e)));
    }
    let started: BTreeSet<&str> = of(events, "run_started").map(|e| e.node.as_str()).collect();
    if let Some(n) = want.iter().find(|n| !started.contains(n.as_str())) {
        return Err(format!("node {n} wrote no run_started"));
    }
    Ok(None)
}

/// Rules 2 and 11 (`iot.6`, `iot.12` with `clock`). A sample belongs to the device's latest
/// restart stamped before it, or at most [`MTTR_SLACK_MS`] after it: the device process may
/// stamp `restarted` a moment after the new incarnation started, and a fast owner can report it
/// current first.
pub(crate) fn mttr(events: &[Event], clock: bool) -> Outcome {
    let mut restarts: BTreeMap<&str, Vec<(i64, bool)>> = BTreeMap::new();
    for e in of(events, "restarted").filter(|e| e.str("target").starts_with("device-")) {
        restarts.entry(e.str("target")).or_default().push((e.ts_us, false));
    }
    let slack_us = (MTTR_SLACK_MS * 1000.0) as i64;
    let mut samples = 0;
    // (|ms - since|, the sample, since) of each sample further off than the slack.
    let mut off: Vec<(f64, &Event, f64)> = Vec::new();
    for e in of(events, "reconnected") {
        samples += 1;
        let t = e.str("target");
        if !e.str("by").starts_with("server-") {
            return Err(format!("{} is not by a server", cite(e)));
        }
        let rs = restarts.get_mut(t).map(Vec::as_mut_slice).unwrap_or_default();
        let Some((at, closed)) = rs.iter_mut().rev().find(|(at, _)| *at <= e.ts_us + slack_us) else {
            return Err(format!("{} follows no restart of {t}", cite(e)));
        };
        if *closed {
            return Err(format!("{} is a second sample for {t}'s restart at ts_us={at}", cite(e)));
        }
        *closed = true;
        let since = (e.ts_us - *at) as f64 / 1000.0;
        let ms = e.raw.get("ms").and_then(serde_json::Value::as_f64).unwrap_or(-1.0);
        if clock && (ms - since).abs() > MTTR_SLACK_MS {
            off.push(((ms - since).abs(), e, since));
        }
        if let (false, Some(acked), Some(asked)) = (clock, e.raw.get("acked"), e.raw.get("asked")) {
            if acked != asked {
                return Err(format!("{} with acked={acked} of asked={asked}: not every live server had it", cite(e)));
            }
        }
    }
    off.sort_by(|a, b| b.0.total_cmp(&a.0));
    if let Some((_, e, since)) = off.first() {
        if off.len() as f64 > MTTR_OUTLIERS * samples as f64 {
            return Err(format!(
                "{} of {samples} MTTR samples differ from their restart's stamp by more than {MTTR_SLACK_MS} ms; the worst: {} but its restart was stamped {since:.1} ms before",
                off.len(),
                cite(e)
            ));
        }
    }
    Ok((samples == 0).then_some("no device was restarted and reported current in this trace"))
}

/// Rule 3 (`iot.9a`).
pub(crate) fn kill_targets(cfg: &IotConfig, events: &[Event], sched: &[FaultAction]) -> Outcome {
    let planned = kills(sched);
    let mut seen = BTreeSet::new();
    for e in injected(events) {
        let id = e.str("id");
        let Some(a) = planned.get(id) else {
            return Err(format!("{}: its id is not in the schedule", cite(e)));
        };
        if !seen.insert(id) {
            return Err(format!("{}: that id was carried out before", cite(e)));
        }
        let node = if a.kind == KILL {
            format!("devices-{}", u64::from(a.group) % u64::from(cfg.device_processes.max(1)))
        } else {
            "orchestrator".to_string()
        };
        if e.str("kind") != a.kind || e.str("target") != target_of(a) || e.node != node {
            return Err(format!("{} where the schedule says {} of {} (by {node})", cite(e), a.kind, target_of(a)));
        }
    }
    Ok(seen.is_empty().then_some("no kill in this trace"))
}

/// Rule 4 (`iot.9b`).
pub(crate) fn kill_timing(events: &[Event], sched: &[FaultAction]) -> Outcome {
    let start = window_start(events)?;
    let planned = kills(sched);
    let mut n = 0;
    for e in injected(events) {
        let Some(a) = planned.get(e.str("id")) else { continue };
        n += 1;
        let off_ms = (e.ts_us - start - a.at_ms as i64 * 1000) / 1000;
        if !(-EARLY_SLACK_MS..=LATE_SLACK_MS).contains(&off_ms) {
            return Err(format!("{} is {off_ms} ms from its instant (start_us + at_ms {})", cite(e), a.at_ms));
        }
    }
    Ok((n == 0).then_some("no kill in this trace"))
}

/// Rule 5 (`iot.9c`).
pub(crate) fn kill_accounting(cfg: &IotConfig, events: &[Event], sched: &[FaultAction]) -> Outcome {
    let due = kills(sched).values().filter(|a| a.at_ms < cfg.duration_s * 1000).count() as i64;
    if due == 0 {
        return Ok(Some("the schedule has no kill"));
    }
    let done = injected(events).count() as i64;
    let skipped: i64 = of(events, "run_finished").map(|e| e.int("skipped_faults")).sum();
    if done + skipped != due {
        return Err(format!(
            "{due} kills were due in the window; {done} fault_injected and {skipped} counted skipped in run_finished"
        ));
    }
    Ok(None)
}

/// Each restart with the kill it follows (by target, in time order).
fn restarts_with_kills<'a>(
    events: &'a [Event],
    sched: &'a [FaultAction],
) -> Result<Vec<(&'a Event, &'a Event, &'a FaultAction)>, String> {
    let planned = kills(sched);
    let mut pending: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        match e.ev.as_str() {
            "fault_injected" if !is_net_kind(e.str("kind")) => pending.entry(e.str("target")).or_default().push(e),
            "restarted" => {
                let t = e.str("target");
                let Some(k) = pending.get_mut(t).and_then(|v| (!v.is_empty()).then(|| v.remove(0))) else {
                    return Err(format!("{} follows no kill of {t}", cite(e)));
                };
                let a =
                    planned.get(k.str("id")).ok_or_else(|| format!("{}: its id is not in the schedule", cite(k)))?;
                out.push((e, k, *a));
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Rule 6 (`iot.9d`).
pub(crate) fn restarts(cfg: &IotConfig, events: &[Event], sched: &[FaultAction]) -> Outcome {
    let restart_ms = cfg.restart_s as i64 * 1000;
    let mut count: BTreeMap<&str, i64> = BTreeMap::new();
    let mut restarted = BTreeSet::new();
    for (r, k, _) in restarts_with_kills(events, sched)? {
        let n = count.entry(r.str("target")).or_insert(0);
        *n += 1;
        if r.int("attempt") != *n {
            return Err(format!("{} is restart {n} of its target", cite(r)));
        }
        let after = (r.ts_us - k.ts_us) / 1000;
        if after < restart_ms - EARLY_SLACK_MS || after > restart_ms + LATE_SLACK_MS {
            return Err(format!("{} comes {after} ms after {} (restart_s = {})", cite(r), cite(k), cfg.restart_s));
        }
        restarted.insert(k.str("id"));
    }
    let start = window_start(events)?;
    let last = events.last().map_or(start, |e| e.ts_us);
    let end_ms = (cfg.duration_s * 1000) as i64;
    let planned = kills(sched);
    let mut due = 0;
    for k in injected(events) {
        let Some(a) = planned.get(k.str("id")).copied() else { continue };
        let due_ms = a.at_ms as i64 + restart_ms;
        let observed = start + (due_ms + LATE_SLACK_MS) * 1000 <= last;
        if due_ms + LATE_SLACK_MS < end_ms && observed {
            due += 1;
            if !restarted.contains(k.str("id")) {
                return Err(format!("{} was never restarted (due {due_ms} ms into the window)", cite(k)));
            }
        }
    }
    Ok((due == 0 && restarted.is_empty()).then_some("no restart was due in this trace"))
}

/// Rule 7 (`iot.9e`).
pub(crate) fn no_restart_after_window(cfg: &IotConfig, events: &[Event], sched: &[FaultAction]) -> Outcome {
    let end_ms = cfg.duration_s * 1000;
    let late: Vec<&FaultAction> =
        kills(sched).into_values().filter(|a| a.at_ms + cfg.restart_s * 1000 >= end_ms).collect();
    if late.is_empty() {
        return Ok(Some("no kill's restart falls after the window in this schedule"));
    }
    for (r, k, a) in restarts_with_kills(events, sched)? {
        if late.iter().any(|l| l.id == a.id) {
            return Err(format!(
                "{} restarts {} although at_ms {} + restart_s is at or after the window's end ({end_ms} ms)",
                cite(r),
                cite(k),
                a.at_ms
            ));
        }
    }
    Ok(None)
}

/// Rule 8 (`iot.10`).
pub(crate) fn detection(cfg: &IotConfig, events: &[Event]) -> Outcome {
    let mut n = 0;
    for e in of(events, "fault_detected") {
        n += 1;
        let server = index(e.str("target"), "server-").filter(|&s| s < u64::from(cfg.servers));
        let device = index(e.str("by"), "device-").filter(|&k| k < cfg.devices);
        let (Some(_), Some(k)) = (server, device) else {
            return Err(format!("{} is not a server found failed by a device", cite(e)));
        };
        let node = format!("devices-{}", k % u64::from(cfg.device_processes.max(1)));
        if !e.raw.get("id").is_some_and(serde_json::Value::is_null) || e.node != node {
            return Err(format!("{} should come from {node} with id null", cite(e)));
        }
    }
    Ok((n == 0).then_some("no detection in this trace"))
}

/// Rule 9 (`iot.11a`).
pub(crate) fn ready(cfg: &IotConfig, events: &[Event]) -> Outcome {
    let mut want: BTreeMap<String, (&str, i64)> =
        (0..cfg.servers).map(|s| (format!("server-{s}"), ("servers", 1))).collect();
    for p in 0..cfg.device_processes {
        want.insert(format!("devices-{p}"), ("devices", cfg.devices_of(p).count() as i64));
    }
    let mut last = i64::MIN;
    let mut window = None;
    for e in of(events, "ready") {
        if e.str("what") == "window" {
            if window.replace(e).is_some() || e.node != "orchestrator" {
                return Err(format!("{} is a second window, or not the orchestrator's", cite(e)));
            }
            continue;
        }
        match want.remove(&e.node) {
            Some((what, n)) if e.str("what") == what && e.int("count") == n => last = last.max(e.ts_us),
            _ => return Err(format!("{} (count {}) is unexpected or repeated", cite(e), e.int("count"))),
        }
    }
    if let Some(n) = want.keys().next() {
        return Err(format!("no ready from {n}"));
    }
    let w = window.ok_or("no ready {what: \"window\"} line")?;
    let warm = (cfg.warmup_s * 1_000_000) as i64;
    if w.int("count") != cfg.duration_s as i64 || w.int("start_us") < last + warm {
        return Err(format!(
            "{} with count {} and start_us {}: not duration_s, or not warmup_s = {} s after the last ready (ts_us={last})",
            cite(w),
            w.int("count"),
            w.int("start_us"),
            cfg.warmup_s
        ));
    }
    Ok(None)
}

/// Rule 10 (`iot.11b`).
pub(crate) fn throughput(cfg: &IotConfig, events: &[Event]) -> Outcome {
    let start = window_start(events)?;
    let mut seconds = Vec::new();
    for e in of(events, "throughput") {
        let s = e.int("second");
        if e.node != "orchestrator" {
            return Err(format!("{} is not the orchestrator's", cite(e)));
        }
        if e.ts_us < start + (s + 1) * 1_000_000 - EARLY_SLACK_MS * 1000 {
            return Err(format!("{} is stamped before its second ended", cite(e)));
        }
        seconds.push(s);
    }
    if seconds != (0..cfg.duration_s as i64).collect::<Vec<_>>() {
        return Err(format!("throughput seconds {seconds:?}, not 0..{} once each in order", cfg.duration_s));
    }
    Ok(None)
}

#[cfg(test)]
mod tests;
