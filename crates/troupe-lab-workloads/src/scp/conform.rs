//! The SCP behaviour contract as checks of a run's trace (`troupe lab conform scp`), and the
//! short scenarios they run on. docs/scp.md's "Behaviour contract" marks each of its rules with
//! the checks here that observe it (`*Conformance:* scp.<n>`); a rule no event shows says so
//! there.
//!
//! Rules of this module:
//! 1. Each [`Rule`] is `scp.<n>`; every rule here is observable from events.
//! 2. A kill's target is `g<group>/s<slot>`, the server actually killed; a restart is a
//!    `restarted` of the same target; a restart is matched to the earliest kill of its target
//!    not yet matched and stamped at or before it (as `restart_latency.rs` rule 2).
//! 3. The system's nodes are those that emit what only the system emits: `throughput`,
//!    `restarted`, `ready {what: "pairs"}`. The injector's placement is read from the config's
//!    `injector` key: absent, `node` or `process` put it in its own OS process and node;
//!    `in_process` or `thread` inside the system's.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use troupe_lab::conform::{cite, Rule, Scenario, Trace, Verdict};
use troupe_lab::events::Event;
use troupe_lab::stats::RECOVERY_GRACE_MS;

use super::config::ScpConfig;

/// The SCP scenarios: random kills (single kills and bursts), bursts large enough that targets
/// wrap to the next live slot, and the progressive pattern, whose kills are never restarted.
pub fn scenarios() -> Vec<Scenario> {
    let small: &[(&str, &str)] = &[("pairs", "32"), ("supervisors", "4"), ("duration_s", "3"), ("warmup_s", "1")];
    let with = |more: &[(&'static str, &'static str)]| -> Vec<(&'static str, &'static str)> {
        small.iter().chain(more).copied().collect()
    };
    vec![
        Scenario::new("random", &with(&[("pattern", "random"), ("failure_rate", "5")])),
        Scenario::new("burst", &with(&[("pattern", "burst"), ("failure_rate", "10"), ("burst_size", "12")])),
        Scenario::new(
            "progressive",
            &with(&[("pattern", "progressive"), ("recovery", "false"), ("failure_rate", "10"), ("duration_s", "6")]),
        ),
    ]
}

/// The SCP contract's rules.
pub fn rules() -> Vec<Rule> {
    vec![
        Rule {
            id: "scp.1",
            text: "every scheduled kill is carried out (`fault_injected` with its id) or counted skipped (`run_finished.skipped_faults`)",
            check: troupe_lab::conform::checks::faults_carried_out,
        },
        Rule {
            id: "scp.2",
            text: "a kill names the server it killed in the schedule's supervisor (`g<group>/s<slot>`, slot < pairs / supervisors), kind `kill`",
            check: kills_in_their_group,
        },
        Rule {
            id: "scp.3",
            text: "a kill is stamped before the restart it causes: every `restarted` of a server follows a kill of it not yet restarted",
            check: restart_after_kill,
        },
        Rule {
            id: "scp.4",
            text: "children restart as `recovery` says: with recovery = true every kill the schedule marks restartable is restarted (but those in the run's last second), otherwise none is",
            check: restarts_as_recovery_says,
        },
        Rule {
            id: "scp.5",
            text: "a server's `restarted.attempt` counts up by one with each restart",
            check: attempts_count_up,
        },
        Rule {
            id: "scp.6",
            text: "the `fault_injected` lines come from the injector's process: with `injector` absent or `node` its own node, not one of the system's; with `in_process` the system's node",
            check: injector_placement,
        },
    ]
}

/// `(group, slot)` of a target `g<group>/s<slot>`.
fn parse_target(t: &str) -> Option<(u32, u32)> {
    let (g, s) = t.strip_prefix('g')?.split_once("/s")?;
    Some((g.parse().ok()?, s.parse().ok()?))
}

fn kills<'a>(t: &Trace<'a>) -> impl Iterator<Item = &'a Event> + 'a {
    t.events.iter().filter(|e| e.ev == "fault_injected" && !troupe_lab::netfaults::is_net_kind(e.str("kind")))
}

/// scp.2.
fn kills_in_their_group(t: &Trace<'_>) -> Verdict {
    let c = ScpConfig::from_config(t.config);
    let per = c.pairs / c.supervisors.max(1);
    let plan: HashMap<&str, _> = t.schedule.iter().map(|a| (a.id.as_str(), a)).collect();
    let mut any = false;
    for e in kills(t) {
        let Some(a) = plan.get(e.str("id")) else { continue };
        any = true;
        match parse_target(e.str("target")) {
            Some((g, s)) if g == a.group && s < per && e.str("kind") == "kill" => {}
            _ => {
                return Verdict::fail(format!(
                    "{} should kill a server g{}/s<0..{per}> (the schedule's group {}, slot {})",
                    cite(e),
                    a.group,
                    a.group,
                    a.slot
                ))
            }
        }
    }
    if any {
        Verdict::Pass
    } else {
        Verdict::na("no kill was carried out")
    }
}

/// Each restart with the kill it matches (module rule 2), or the first restart with none.
#[allow(clippy::type_complexity)]
fn match_restarts<'a>(t: &Trace<'a>) -> Result<(Vec<(&'a Event, &'a Event)>, Vec<&'a Event>), &'a Event> {
    let mut open: HashMap<&str, VecDeque<&Event>> = HashMap::new();
    let mut pairs = Vec::new();
    for e in t.events {
        if e.ev == "fault_injected" && !troupe_lab::netfaults::is_net_kind(e.str("kind")) {
            open.entry(e.str("target")).or_default().push_back(e);
        } else if e.ev == "restarted" {
            match open.get_mut(e.str("target")).and_then(VecDeque::pop_front) {
                Some(k) => pairs.push((k, e)),
                None => return Err(e),
            }
        }
    }
    let unmatched = open.into_values().flatten().collect();
    Ok((pairs, unmatched))
}

/// scp.3.
fn restart_after_kill(t: &Trace<'_>) -> Verdict {
    match match_restarts(t) {
        Err(r) => Verdict::fail(format!("{} with no kill of that server stamped before it", cite(r))),
        Ok((pairs, _)) if pairs.is_empty() => Verdict::na("no server was restarted"),
        Ok(_) => Verdict::Pass,
    }
}

/// scp.4.
fn restarts_as_recovery_says(t: &Trace<'_>) -> Verdict {
    let c = ScpConfig::from_config(t.config);
    let restartable: BTreeSet<&str> =
        t.schedule.iter().filter(|a| c.recovery && a.restart).map(|a| a.id.as_str()).collect();
    let (pairs, unmatched) = match match_restarts(t) {
        Ok(m) => m,
        Err(r) => return Verdict::fail(format!("{} with no kill of that server stamped before it", cite(r))),
    };
    if let Some((k, r)) = pairs.iter().find(|(k, _)| !restartable.contains(k.str("id"))) {
        return Verdict::fail(format!(
            "{} restarted by {} although {}",
            cite(k),
            cite(r),
            if c.recovery { "the schedule marks it permanent" } else { "recovery = false" }
        ));
    }
    let last = t.events.iter().map(|e| e.ts_us).max().unwrap_or(0);
    let due: Vec<&&Event> = unmatched
        .iter()
        .filter(|k| restartable.contains(k.str("id")) && (last - k.ts_us) as f64 / 1000.0 >= RECOVERY_GRACE_MS)
        .collect();
    if let Some(k) = due.first() {
        return Verdict::fail(format!(
            "{} never followed by a restart of that server ({} such kills)",
            cite(k),
            due.len()
        ));
    }
    if pairs.is_empty() && unmatched.is_empty() {
        Verdict::na("no kill was carried out")
    } else {
        Verdict::Pass
    }
}

/// scp.5.
fn attempts_count_up(t: &Trace<'_>) -> Verdict {
    let mut last: BTreeMap<&str, &Event> = BTreeMap::new();
    for e in t.of_kind("restarted") {
        if let Some(prev) = last.insert(e.str("target"), e) {
            if e.int("attempt") != prev.int("attempt") + 1 {
                return Verdict::fail(format!("{} after {}", cite(e), cite(prev)));
            }
        }
    }
    if last.is_empty() {
        Verdict::na("no server was restarted")
    } else {
        Verdict::Pass
    }
}

/// scp.6.
fn injector_placement(t: &Trace<'_>) -> Verdict {
    let key = match t.config.get("injector") {
        Some(troupe_lab::config::Value::Str(s)) => s.as_str(),
        _ => "node",
    };
    let own_node = match key {
        "node" | "process" => true,
        "in_process" | "thread" => false,
        other => return Verdict::fail(format!("injector = {other:?}: neither node nor in_process")),
    };
    let system: BTreeSet<&str> = t
        .events
        .iter()
        .filter(|e| {
            matches!(e.ev.as_str(), "throughput" | "restarted") || (e.ev == "ready" && e.str("what") == "pairs")
        })
        .map(|e| e.node.as_str())
        .collect();
    if system.is_empty() {
        return Verdict::fail("no event names the system's node (no throughput, restarted or ready pairs)");
    }
    let names = || system.iter().copied().collect::<Vec<_>>().join(", ");
    let mut any = false;
    for k in kills(t) {
        any = true;
        let inside = system.contains(k.node.as_str());
        if own_node && inside {
            return Verdict::fail(format!(
                "injector = {key}: the injector should be its own node, but {} comes from the system's node {}",
                cite(k),
                k.node
            ));
        }
        if !own_node && !inside {
            return Verdict::fail(format!(
                "injector = {key}: the injector should run in the system's node ({}), but {} comes from {}",
                names(),
                cite(k),
                k.node
            ));
        }
    }
    if any {
        Verdict::Pass
    } else {
        Verdict::na("no kill was carried out")
    }
}

#[cfg(test)]
#[path = "conform_tests.rs"]
mod tests;
