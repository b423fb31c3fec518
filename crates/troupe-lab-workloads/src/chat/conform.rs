//! The chat behaviour contract (docs/chat.md, "Behaviour contract", rules 1-8) as checks of a
//! run's trace, for `troupe lab conform chat`; and the short scenarios they are run on.
//!
//! Rules of this module:
//! 1. Each [`Rule`] is `chat.<n>[letter]`, `n` the contract rule it checks; a contract rule
//!    the events cannot show (2: discovery's map; 3: which answer a lookup got) is
//!    [`troupe_lab::conform::not_observable`].
//! 2. Clocks: a timer is early when its event is stamped more than [`EARLY_US`] before its
//!    instant (the wall clock and the monotonic clock a process times with drift apart by
//!    less than that in a run); lateness is not a failure unless the rule bounds it.
//! 3. Each check reads only the events, the config and the schedule; the client `ck` belongs
//!    to chat `k / clients_per_server` (the peer contract's numbering).

use std::collections::{BTreeMap, HashMap};

use troupe_lab::conform::{cite, not_observable, Rule, Scenario, Trace, Verdict};
use troupe_lab::events::Event;
use troupe_lab::stats::RECOVERY_GRACE_MS;

use super::config::{ChatConfig, TestType};

/// How much earlier than its instant an event may be stamped (module rule 2), µs.
pub const EARLY_US: i64 = 20_000;

/// `reconnected.ms` may differ from the stamps' gap by this many ms plus [`MS_SLACK_SHARE`]
/// of the gap (both stamps are taken as the events are emitted, the ms on the client's clock).
pub const MS_SLACK: f64 = 10.0;
/// See [`MS_SLACK`].
pub const MS_SLACK_SHARE: f64 = 0.1;
/// The share of rejoins that may differ by more (chat.8b): on a loaded machine a thread can be
/// kept from stamping its event long after it took its time (seen on 2 cores at a load average
/// of 25-30, Akka: 47 ms, and 1.8 s for 5 of 24 rejoins during a JVM stall), so only a
/// systematic difference, another origin of `ms` for most rejoins, is a failure.
pub const MS_OUTLIERS: f64 = 0.5;

/// The fault kinds that crash a chat.
const CRASHING: &[&str] = &["kill", "error"];

/// The chat scenarios: kills with `lookup = retry`, a kill/error mix with `lookup = park`, kills
/// with a single attempt per rejoin (`retry_max = 1`, so clients give up), all in one process;
/// and the distributed deployment (one server and two client processes), where
/// the injector's placement shows, with one fault per chat 4 s before the window's end (Akka
/// tells remote watchers after 3 s). Every chat fails at the same instants (`aligned`), every
/// client reconnecting at once; clients post every 50 ms, so one send tick is small against the
/// window (rule 1's tolerance).
pub fn scenarios() -> Vec<Scenario> {
    let small: &[(&str, &str)] = &[
        ("num_supervisor", "1"),
        ("chats_per_sup", "4"),
        ("clients_per_server", "5"),
        ("fault_phase", "aligned"),
        ("fault_pause_ms", "1200"),
        ("test_duration_secs", "4"),
        ("warmup_s", "1"),
        ("retry_delay_ms", "50"),
        ("send_interval_ms", "50"),
    ];
    let with = |more: &[(&'static str, &'static str)]| -> Vec<(&'static str, &'static str)> {
        small.iter().chain(more).copied().collect()
    };
    vec![
        Scenario::new("kill-retry", &with(&[("deployment", "single"), ("msg_type", "kill"), ("lookup", "retry")])),
        Scenario::new("mixed-park", &with(&[("deployment", "single"), ("msg_type", "random"), ("lookup", "park")])),
        // One attempt only: a client whose first lookup after a kill finds its chat restarting
        // gives up (rule 4's `gave_up`); whether any does depends on the race, so chat.4b may be
        // n/a here.
        Scenario::new(
            "give-up",
            &with(&[("deployment", "single"), ("msg_type", "kill"), ("lookup", "retry"), ("retry_max", "1")]),
        ),
        Scenario::new(
            "distributed",
            &with(&[
                ("deployment", "distributed"),
                ("clients_per_process", "10"),
                ("msg_type", "error"),
                ("lookup", "retry"),
                ("fault_pause_ms", "4000"),
                ("test_duration_secs", "8"),
            ]),
        ),
    ]
}

/// The chat contract's rules, in the contract's order.
pub fn rules() -> Vec<Rule> {
    vec![
        Rule {
            id: "chat.1",
            text: "a chat sends a post to each member at most once: no client process receives more broadcasts \
                   than its clients' chats can post since it started (its clients x K x 1000 / send_interval_ms a \
                   second, one send tick more; throughput test; a slow machine reads below it, so a shortfall is not \
                   judged)",
            check: posts_reach_every_member,
        },
        Rule { id: "chat.2", text: "discovery maps a topic to the chat that registered last, forgets it on its Down", check: not_observable },
        Rule {
            id: "chat.3",
            text: "a lookup for a restarting chat is answered as `lookup` says (retry: not registered at once; park: held until it registers, at most retry_delay_ms)",
            check: not_observable,
        },
        Rule {
            id: "chat.4a",
            text: "every detection is followed by a rejoin (`reconnected`) of that client before its next detection, or by its `gave_up`, unless it came in the window's last second",
            check: detections_rejoin,
        },
        Rule {
            id: "chat.4b",
            text: "a client gives up only after retry_max attempts in a row (`gave_up.tries` = retry_max) and stays out (no rejoin after it)",
            check: give_up_stays_out,
        },
        Rule {
            id: "chat.5a",
            text: "each chat's `restarted.attempt` counts its restarts: 1, 2, 3, ... in order",
            check: restart_attempts_count_up,
        },
        Rule {
            id: "chat.5b",
            text: "restarts follow crashing faults (kill, error): the n-th restart of chat c comes after the n-th crashing fault on c, and a chat hit before the run's last second restarts (a fault can hit an incarnation already dead, so there may be fewer restarts than faults)",
            check: crashes_restart,
        },
        Rule {
            id: "chat.6a",
            text: "every scheduled fault is carried out (`fault_injected` with its id) or counted skipped (`run_finished.skipped_faults`)",
            check: troupe_lab::conform::checks::faults_carried_out,
        },
        Rule {
            id: "chat.6b",
            text: "each fault hits the schedule's chat with the schedule's kind, at start_us + at_ms: never early (a loaded machine makes it late; lateness is not judged)",
            check: faults_on_time,
        },
        Rule {
            id: "chat.6c",
            text: "the injector of chat c runs in the process holding its first client (distributed: `fault_injected` comes from the node of client c x clients_per_server)",
            check: injector_with_first_client,
        },
        Rule {
            id: "chat.6d",
            text: "a fault is skipped only when its chat is restarting: a planned fault not carried out must come after a crashing fault carried out on its chat (a chat never hurt is registered)",
            check: skips_only_while_restarting,
        },
        Rule {
            id: "chat.7a",
            text: "every client joined to chat c when a crashing fault hits c (before the window's last second) logs a `fault_detected` for c after it",
            check: due_detections_logged,
        },
        Rule {
            id: "chat.7b",
            text: "a `reconnected` closes the client's open detection of the same chat: none without a detection, one per detection",
            check: rejoins_close_detections,
        },
        Rule {
            id: "chat.7c",
            text: "every process holding clients, and only those, emits `throughput` once for each window second 0..D-1, in order, at the end of that second (not early)",
            check: throughput_every_second,
        },
        Rule {
            id: "chat.8a",
            text: "no detection precedes its fault: every `fault_detected` on chat c comes after a crashing `fault_injected` on c",
            check: detection_after_fault,
        },
        Rule {
            id: "chat.8b",
            text: "`reconnected.ms` is the time from the client's detection to its rejoin: at most half the rejoins differ from the gap of the two events' stamps by more than 10 ms + 10%",
            check: reconnect_ms_matches_stamps,
        },
        Rule {
            id: "chat.8c",
            text: "one `ready {what: \"window\", count: D, start_us}`; the window starts warmup_s after the last client group was ready",
            check: window_after_warmup,
        },
    ]
}

/// The chat index of a target `chat-<c>`.
fn chat_index(target: &str) -> Option<u64> {
    target.strip_prefix("chat-")?.parse().ok()
}

fn crashing(e: &Event) -> bool {
    e.ev == "fault_injected" && CRASHING.contains(&e.str("kind"))
}

/// The window's start, from the one `ready {what: "window"}`.
fn window_start(t: &Trace<'_>) -> Option<i64> {
    t.of_kind("ready").find(|e| e.str("what") == "window").and_then(|e| e.raw.get("start_us")?.as_i64())
}

/// Each client's own events (detections, rejoins, give-ups), in order.
fn by_client<'a>(t: &Trace<'a>) -> BTreeMap<&'a str, Vec<&'a Event>> {
    let mut m: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
    for e in t.events.iter().filter(|e| matches!(e.ev.as_str(), "fault_detected" | "reconnected" | "gave_up")) {
        m.entry(e.str("by")).or_default().push(e);
    }
    m
}

/// chat.1.
fn posts_reach_every_member(t: &Trace<'_>) -> Verdict {
    let c = ChatConfig::from_config(t.config);
    if c.test_type != TestType::Throughput {
        return Verdict::na("clients send only in the throughput test");
    }
    let k = f64::from(c.clients_per_server);
    let mut checked = false;
    for ready in t.of_kind("ready").filter(|e| e.str("what") == "clients") {
        // Broadcasts a second its clients can receive: each gets every post of its chat's K members.
        let share = ready.int("count") as f64 * k * 1000.0 / c.send_interval_ms as f64;
        let secs: Vec<&Event> = t.of_kind("throughput").filter(|e| e.node == ready.node).collect();
        let Some(last) = secs.iter().max_by_key(|e| e.ts_us) else { continue };
        let Some(first) = t.events.iter().filter(|e| e.node == ready.node).map(|e| e.ts_us).min() else { continue };
        checked = true;
        // Posts made during the set-up and warm-up may arrive in the window (a stalled process
        // catches up), so the bound is what could be posted since the process started.
        let alive_s = (last.ts_us - first) as f64 / 1e6;
        let sum: i64 = secs.iter().map(|e| e.int("count").max(0)).sum();
        let most = share * (alive_s + c.send_interval_ms as f64 / 1000.0);
        if sum as f64 > most + 1e-9 {
            return Verdict::fail(format!(
                "node {} received {sum} broadcasts in the window, more than its clients' chats can post in the \
                 {alive_s:.3} s since the process started ({share:.1}/s, {most:.0} with one send tick); up to {}",
                ready.node,
                cite(last)
            ));
        }
    }
    if checked {
        Verdict::Pass
    } else {
        Verdict::na("no client process reported a window second")
    }
}

/// chat.4a.
fn detections_rejoin(t: &Trace<'_>) -> Verdict {
    let c = ChatConfig::from_config(t.config);
    let Some(start) = window_start(t) else { return Verdict::fail("no `ready {what: \"window\"}` event") };
    let end = start + c.duration_s as i64 * 1_000_000;
    let last_event = t.events.iter().map(|e| e.ts_us).max().unwrap_or(end).max(end);
    let tail_ms = (last_event - end) as f64 / 1000.0;
    let mut any = false;
    for evs in by_client(t).values() {
        for (i, d) in evs.iter().enumerate().filter(|(_, e)| e.ev == "fault_detected") {
            any = true;
            match evs.get(i + 1) {
                Some(n) if n.ev == "reconnected" || n.ev == "gave_up" => {}
                Some(n) => {
                    return Verdict::fail(format!("{} is followed by {} with no rejoin between", cite(d), cite(n)))
                }
                None => {
                    let left_ms = (last_event - d.ts_us) as f64 / 1000.0;
                    if !troupe_lab::stats::began_late(left_ms, tail_ms) {
                        return Verdict::fail(format!(
                            "{} never followed by a rejoin or a give-up ({left_ms:.0} ms to the run's last event, more \
                             than {RECOVERY_GRACE_MS} ms before the window's end)",
                            cite(d)
                        ));
                    }
                }
            }
        }
    }
    if any {
        Verdict::Pass
    } else {
        Verdict::na("no client detected a failure")
    }
}

/// chat.4b.
fn give_up_stays_out(t: &Trace<'_>) -> Verdict {
    let c = ChatConfig::from_config(t.config);
    let mut any = false;
    for evs in by_client(t).values() {
        for (i, g) in evs.iter().enumerate().filter(|(_, e)| e.ev == "gave_up") {
            any = true;
            if let Some(tries) = g.raw.get("tries").and_then(|v| v.as_i64()) {
                if tries != i64::from(c.retry_max) {
                    return Verdict::fail(format!(
                        "{} gave up after {tries} tries, retry_max is {}",
                        cite(g),
                        c.retry_max
                    ));
                }
            }
            if let Some(r) = evs[i + 1..].iter().find(|e| e.ev == "reconnected") {
                return Verdict::fail(format!("{} rejoined after giving up: {}", cite(r), cite(g)));
            }
        }
    }
    if any {
        Verdict::Pass
    } else {
        Verdict::na("no client gave up in this run")
    }
}

/// chat.5a.
fn restart_attempts_count_up(t: &Trace<'_>) -> Verdict {
    let mut next: HashMap<&str, i64> = HashMap::new();
    let mut any = false;
    for e in t.of_kind("restarted") {
        any = true;
        let want = next.entry(e.str("target")).or_insert(1);
        if e.int("attempt") != *want {
            return Verdict::fail(format!("{} should have attempt {}", cite(e), *want));
        }
        *want += 1;
    }
    if any {
        Verdict::Pass
    } else {
        Verdict::na("no chat was restarted in this run")
    }
}

/// chat.5b.
fn crashes_restart(t: &Trace<'_>) -> Verdict {
    let mut per_chat: BTreeMap<&str, (Vec<&Event>, Vec<&Event>)> = BTreeMap::new();
    for e in t.events {
        if crashing(e) {
            per_chat.entry(e.str("target")).or_default().0.push(e);
        } else if e.ev == "restarted" {
            per_chat.entry(e.str("target")).or_default().1.push(e);
        }
    }
    let last_event = t.events.iter().map(|e| e.ts_us).max().unwrap_or(0);
    for (faults, restarts) in per_chat.values() {
        for (n, r) in restarts.iter().enumerate() {
            match faults.get(n) {
                None => {
                    return Verdict::fail(format!("restart {} with no crashing fault before it: {}", n + 1, cite(r)))
                }
                Some(f) if f.ts_us > r.ts_us => {
                    return Verdict::fail(format!(
                        "restart {} precedes its fault: {} before {}",
                        n + 1,
                        cite(r),
                        cite(f)
                    ))
                }
                Some(_) => {}
            }
        }
        // A fault can hit an incarnation already dead (discovery had not yet seen its Down), so
        // a chat may restart fewer times than it was hit; but one hit long enough before the end
        // restarts at least once.
        if let (Some(f), true) = (faults.first(), restarts.is_empty()) {
            if (last_event - f.ts_us) as f64 / 1000.0 >= RECOVERY_GRACE_MS {
                return Verdict::fail(format!("{} never followed by a restart of its chat", cite(f)));
            }
        }
    }
    if per_chat.values().any(|(f, _)| !f.is_empty()) {
        Verdict::Pass
    } else {
        Verdict::na("no crashing fault in this run")
    }
}

/// chat.6b.
fn faults_on_time(t: &Trace<'_>) -> Verdict {
    let Some(start) = window_start(t) else { return Verdict::fail("no `ready {what: \"window\"}` event") };
    let plan: HashMap<&str, _> = t.schedule.iter().map(|a| (a.id.as_str(), a)).collect();
    let mut any = false;
    for e in t.of_kind("fault_injected").filter(|e| !troupe_lab::netfaults::is_net_kind(e.str("kind"))) {
        let Some(a) = plan.get(e.str("id")) else { continue };
        any = true;
        if e.str("target") != format!("chat-{}", a.group) || e.str("kind") != a.kind {
            return Verdict::fail(format!("{} should hit chat-{} with {}", cite(e), a.group, a.kind));
        }
        let due = start + a.at_ms as i64 * 1000;
        if e.ts_us < due - EARLY_US {
            return Verdict::fail(format!(
                "{} is {} ms before its instant (at_ms {})",
                cite(e),
                (due - e.ts_us) / 1000,
                a.at_ms
            ));
        }
    }
    if any {
        Verdict::Pass
    } else {
        Verdict::na("no fault was injected")
    }
}

/// chat.6c.
fn injector_with_first_client(t: &Trace<'_>) -> Verdict {
    let c = ChatConfig::from_config(t.config);
    if !c.distributed {
        return Verdict::na("deployment = single: one process holds every chat, client and injector");
    }
    let nodes: HashMap<&str, &str> =
        by_client(t).into_iter().filter_map(|(by, evs)| Some((by, evs.first()?.node.as_str()))).collect();
    let mut checked = false;
    for e in t.of_kind("fault_injected").filter(|e| !troupe_lab::netfaults::is_net_kind(e.str("kind"))) {
        let Some(chat) = chat_index(e.str("target")) else { continue };
        let first = format!("c{}", chat * u64::from(c.clients_per_server));
        let Some(node) = nodes.get(first.as_str()) else { continue };
        checked = true;
        if *node != e.node {
            return Verdict::fail(format!("{} comes from node {}, but {first} is on node {node}", cite(e), e.node));
        }
    }
    if checked {
        Verdict::Pass
    } else {
        Verdict::na("the first client of no hurt chat logged an event, so its node is unknown")
    }
}

/// chat.6d.
fn skips_only_while_restarting(t: &Trace<'_>) -> Verdict {
    let injected: HashMap<&str, &Event> = t
        .of_kind("fault_injected")
        .filter(|e| !troupe_lab::netfaults::is_net_kind(e.str("kind")))
        .map(|e| (e.str("id"), e))
        .collect();
    let planned: Vec<_> = t.schedule.iter().filter(|a| !troupe_lab::netfaults::is_net_kind(&a.kind)).collect();
    let mut any = false;
    for a in planned.iter().filter(|a| !injected.contains_key(a.id.as_str())) {
        any = true;
        let hurt_before = planned.iter().any(|b| {
            b.group == a.group && b.at_ms < a.at_ms && injected.get(b.id.as_str()).is_some_and(|e| crashing(e))
        });
        if !hurt_before {
            return Verdict::fail(format!(
                "fault id={} at_ms={} on chat-{} was not carried out, but no crashing fault hit that chat before it \
                 (it was registered)",
                a.id, a.at_ms, a.group
            ));
        }
    }
    if any {
        Verdict::Pass
    } else {
        Verdict::na("every planned fault was carried out")
    }
}

/// chat.7a.
fn due_detections_logged(t: &Trace<'_>) -> Verdict {
    let c = ChatConfig::from_config(t.config);
    let Some(start) = window_start(t) else { return Verdict::fail("no `ready {what: \"window\"}` event") };
    let due_before = start + c.duration_s as i64 * 1_000_000 - (RECOVERY_GRACE_MS * 1000.0) as i64;
    let per = u64::from(c.clients_per_server);
    let clients = by_client(t);
    let mut any = false;
    for f in t.events.iter().filter(|e| crashing(e) && e.ts_us < due_before) {
        let Some(chat) = chat_index(f.str("target")) else { continue };
        any = true;
        for k in chat * per..(chat + 1) * per {
            let evs = clients.get(format!("c{k}").as_str()).map(Vec::as_slice).unwrap_or_default();
            // Joined when hit: its last own event before the fault is a rejoin, or it has none.
            let joined = evs.iter().rev().find(|e| e.ts_us < f.ts_us).is_none_or(|e| e.ev == "reconnected");
            let logged = evs
                .iter()
                .any(|e| e.ev == "fault_detected" && e.str("target") == f.str("target") && e.ts_us >= f.ts_us);
            if joined && !logged {
                return Verdict::fail(format!(
                    "client c{k}, joined to chat-{chat}, logged no detection of {}",
                    cite(f)
                ));
            }
        }
    }
    if any {
        Verdict::Pass
    } else {
        Verdict::na("no crashing fault before the window's last second")
    }
}

/// chat.7b.
fn rejoins_close_detections(t: &Trace<'_>) -> Verdict {
    let mut any = false;
    for evs in by_client(t).values() {
        let mut open: Option<&Event> = None;
        for e in evs {
            match e.ev.as_str() {
                "fault_detected" => open = Some(e),
                "reconnected" => {
                    any = true;
                    match open.take() {
                        Some(d) if d.str("target") == e.str("target") => {}
                        Some(d) => return Verdict::fail(format!("{} closes {} of another chat", cite(e), cite(d))),
                        None => return Verdict::fail(format!("{} with no open detection before it", cite(e))),
                    }
                }
                _ => open = None,
            }
        }
    }
    if any {
        Verdict::Pass
    } else {
        Verdict::na("no client rejoined in this run")
    }
}

/// chat.7c.
fn throughput_every_second(t: &Trace<'_>) -> Verdict {
    let c = ChatConfig::from_config(t.config);
    let Some(start) = window_start(t) else { return Verdict::fail("no `ready {what: \"window\"}` event") };
    let holders: Vec<&str> = t
        .of_kind("ready")
        .filter(|e| e.str("what") == "clients" && e.int("count") > 0)
        .map(|e| e.node.as_str())
        .collect();
    let mut seen: BTreeMap<&str, i64> = BTreeMap::new();
    for e in t.of_kind("throughput") {
        if !holders.contains(&e.node.as_str()) {
            return Verdict::fail(format!("{} from a node that holds no clients", cite(e)));
        }
        let want = seen.entry(e.node.as_str()).or_insert(0);
        if e.int("second") != *want {
            return Verdict::fail(format!("{} should be second {}", cite(e), *want));
        }
        let due = start + (*want + 1) * 1_000_000;
        if e.ts_us < due - EARLY_US {
            return Verdict::fail(format!("{} is {} ms before its second ends", cite(e), (due - e.ts_us) / 1000));
        }
        *want += 1;
    }
    for node in &holders {
        let n = seen.get(node).copied().unwrap_or(0);
        if n != c.duration_s as i64 {
            return Verdict::fail(format!("node {node} emitted {n} of {} throughput seconds", c.duration_s));
        }
    }
    Verdict::Pass
}

/// chat.8a.
fn detection_after_fault(t: &Trace<'_>) -> Verdict {
    let mut first_crash: HashMap<&str, i64> = HashMap::new();
    let mut any = false;
    for e in t.events {
        if crashing(e) {
            first_crash.entry(e.str("target")).or_insert(e.ts_us);
        } else if e.ev == "fault_detected" {
            any = true;
            if first_crash.get(e.str("target")).is_none_or(|&ts| ts > e.ts_us) {
                return Verdict::fail(format!("{} with no crashing fault on its chat before it", cite(e)));
            }
        }
    }
    if any {
        Verdict::Pass
    } else {
        Verdict::na("no client detected a failure")
    }
}

/// chat.8b.
fn reconnect_ms_matches_stamps(t: &Trace<'_>) -> Verdict {
    // (|gap - ms|, allowed, the rejoin, its detection) of every rejoin after a detection.
    let mut off: Vec<(f64, f64, &Event, &Event)> = Vec::new();
    let mut n = 0usize;
    for evs in by_client(t).values() {
        let mut detected: Option<&Event> = None;
        for e in evs {
            match e.ev.as_str() {
                "fault_detected" => detected = Some(e),
                "reconnected" => {
                    let (Some(d), Some(ms)) = (detected.take(), e.raw.get("ms").and_then(|v| v.as_f64())) else {
                        continue;
                    };
                    n += 1;
                    let gap = (e.ts_us - d.ts_us) as f64 / 1000.0;
                    let allowed = MS_SLACK + MS_SLACK_SHARE * gap;
                    if (gap - ms).abs() > allowed {
                        off.push(((gap - ms).abs(), allowed, e, d));
                    }
                }
                _ => {}
            }
        }
    }
    if n == 0 {
        return Verdict::na("no client rejoined after a detection");
    }
    off.sort_by(|a, b| b.0.total_cmp(&a.0));
    match off.first() {
        Some((dev, _, e, d)) if off.len() as f64 > MS_OUTLIERS * n as f64 => Verdict::fail(format!(
            "{} of {n} rejoins differ from their stamps by more than {MS_SLACK} ms + {}%; the worst, by {dev:.1} ms: {} after {}",
            off.len(),
            MS_SLACK_SHARE * 100.0,
            cite(e),
            cite(d)
        )),
        _ => Verdict::Pass,
    }
}

/// chat.8c.
fn window_after_warmup(t: &Trace<'_>) -> Verdict {
    let c = ChatConfig::from_config(t.config);
    let windows: Vec<&Event> = t.of_kind("ready").filter(|e| e.str("what") == "window").collect();
    let w = match windows.as_slice() {
        [w] => *w,
        [] => return Verdict::fail("no `ready {what: \"window\"}` event"),
        [a, b, ..] => return Verdict::fail(format!("two window events: {} and {}", cite(a), cite(b))),
    };
    let Some(start) = w.raw.get("start_us").and_then(|v| v.as_i64()) else {
        return Verdict::fail(format!("{} carries no start_us", cite(w)));
    };
    if w.int("count") != c.duration_s as i64 {
        return Verdict::fail(format!("{} should count {} window seconds", cite(w), c.duration_s));
    }
    if let Some(last) = t.of_kind("ready").filter(|e| e.str("what") == "clients").max_by_key(|e| e.ts_us) {
        let due = last.ts_us + c.warmup_s as i64 * 1_000_000;
        if start < due - EARLY_US {
            return Verdict::fail(format!(
                "the window starts at {start}, {} ms before warmup_s ({}) after the last group was ready: {}",
                (due - start) / 1000,
                c.warmup_s,
                cite(last)
            ));
        }
    }
    Verdict::Pass
}

#[cfg(test)]
#[path = "conform_tests.rs"]
mod tests;
