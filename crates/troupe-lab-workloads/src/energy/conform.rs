//! The energy workload's conformance rules (`troupe lab conform energy`): the behaviour
//! contract of docs/energy.md ("Behaviour contract", rules 1-9) as checks of a run's trace, one
//! [`Rule`] per contract rule, named after it (`energy.4`); a contract rule the events cannot
//! show is a rule whose check is [`not_observable`]. A check fails on the first evidence it
//! finds, quoting the event ([`cite`]).
//!
//! Rules:
//! 1. `energy.4`: every repetition's `start_us < end_us`, and its `work` line written at or
//!    after its `end_us`.
//! 2. `energy.5`: repetitions never overlap: rep r + 1 starts at or after rep r ended.
//! 3. `energy.6`: every `result` is clients x msgs (ping workloads) or pi(range) (`prime`), and
//!    `run_finished.errors` is 0.
//! 4. `energy.7`: exactly `reps` `work` lines, reps 0 .. reps - 1 in order, all from the node
//!    that wrote `run_started`, and no line of the program's written inside any repetition's
//!    interval (the lab's own `energy` lines, node `lab`, are not the program's).
//! 5. `energy.9`: every interval lies inside the run on the events' wall clock (after
//!    `run_started`, before `run_finished`).

use troupe_lab::conform::{cite, not_observable, Rule, Scenario, Trace, Verdict};
use troupe_lab::events::Event;

use super::config::EnergyConfig;

/// The contract's rules, in its order.
pub(crate) fn rules() -> Vec<Rule> {
    let r = |id, text, check| Rule { id, text, check };
    vec![
        r("energy.1", "native in one OS process; distributed: the far side in a second, started once", not_observable),
        r(
            "energy.2",
            "one ping in flight per client; round-robin balancer; answers straight to the client",
            not_observable,
        ),
        r("energy.3", "trial division, afresh for every ping", not_observable),
        r("energy.4", "start_us < end_us, the work line written after the interval", c4),
        r("energy.5", "repetitions one after another, never overlapping", c5),
        r("energy.6", "every result clients x msgs or pi(range); no error counted", c6),
        r("energy.7", "one work line per repetition, in order, from the first process, none inside an interval", c7),
        r("energy.8", "each runtime's default scheduler settings", not_observable),
        r("energy.9", "every interval inside the run on the wall clock", c9),
    ]
}

/// Short configs: ping_pong in one process, ping_pong_lb_prime across two, prime.
pub(crate) fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario::new("ping_pong", &[("workload", "ping_pong"), ("clients", "10"), ("msgs", "2000"), ("reps", "2")]),
        Scenario::new(
            "lb_prime_distributed",
            &[
                ("workload", "ping_pong_lb_prime"),
                ("mode", "distributed"),
                ("servers", "2"),
                ("clients", "4"),
                ("msgs", "200"),
                ("range", "100"),
                ("reps", "2"),
            ],
        ),
        Scenario::new("prime", &[("workload", "prime"), ("range", "20000"), ("reps", "2")]),
    ]
}

fn verdict(r: Result<(), String>) -> Verdict {
    r.map_or_else(Verdict::fail, |()| Verdict::Pass)
}

fn c4(t: &Trace<'_>) -> Verdict {
    verdict(interval(t.events))
}
fn c5(t: &Trace<'_>) -> Verdict {
    verdict(between(t.events))
}
fn c6(t: &Trace<'_>) -> Verdict {
    verdict(result(&EnergyConfig::from_config(t.config), t.events))
}
fn c7(t: &Trace<'_>) -> Verdict {
    verdict(counting(&EnergyConfig::from_config(t.config), t.events))
}
fn c9(t: &Trace<'_>) -> Verdict {
    verdict(inside_run(t.events))
}

/// The program's own lines (the lab appends `energy` lines as node `lab` after the run).
fn program(events: &[Event]) -> Vec<&Event> {
    events.iter().filter(|e| e.node != "lab").collect()
}

fn works(events: &[Event]) -> Vec<&Event> {
    events.iter().filter(|e| e.ev == "work").collect()
}

fn first<'a>(events: &'a [Event], ev: &str) -> Result<&'a Event, String> {
    events.iter().find(|e| e.ev == ev).ok_or_else(|| format!("no {ev} line"))
}

/// Rule 1 (`energy.4`).
pub(crate) fn interval(events: &[Event]) -> Result<(), String> {
    for w in works(events) {
        let (s, e) = (w.int("start_us"), w.int("end_us"));
        if s >= e {
            return Err(format!("{}: start_us {s} is not before end_us {e}", cite(w)));
        }
        if w.ts_us < e {
            return Err(format!("{} is written {} µs before its end_us", cite(w), e - w.ts_us));
        }
    }
    Ok(())
}

/// Rule 2 (`energy.5`).
pub(crate) fn between(events: &[Event]) -> Result<(), String> {
    for pair in works(events).windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if b.int("start_us") < a.int("end_us") {
            return Err(format!(
                "{} starts at {} before {} (rep {}) ended at {}",
                cite(b),
                b.int("start_us"),
                cite(a),
                a.int("rep"),
                a.int("end_us")
            ));
        }
    }
    Ok(())
}

/// Rule 3 (`energy.6`).
pub(crate) fn result(cfg: &EnergyConfig, events: &[Event]) -> Result<(), String> {
    let want = cfg.expected_result() as i64;
    if let Some(w) = works(events).into_iter().find(|w| w.int("result") != want) {
        return Err(format!("{} (rep {}) has result {} where {want} was due", cite(w), w.int("rep"), w.int("result")));
    }
    let f = first(events, "run_finished")?;
    if f.int("errors") != 0 {
        return Err(format!("{} counts {} errors", cite(f), f.int("errors")));
    }
    Ok(())
}

/// Rule 4 (`energy.7`).
pub(crate) fn counting(cfg: &EnergyConfig, events: &[Event]) -> Result<(), String> {
    let ws = works(events);
    if ws.len() as u64 != cfg.reps {
        return Err(format!("{} work lines for reps = {}", ws.len(), cfg.reps));
    }
    if let Some((i, w)) = ws.iter().enumerate().find(|(i, w)| w.int("rep") != *i as i64) {
        return Err(format!("{} is work line {i} but says rep {}", cite(w), w.int("rep")));
    }
    let own = program(events);
    let node = first(events, "run_started")?.node.as_str();
    if let Some(o) = own.iter().find(|e| e.node != node) {
        return Err(format!("{} is not from the program's first process ({node})", cite(o)));
    }
    for w in &ws {
        let (s, e) = (w.int("start_us"), w.int("end_us"));
        if let Some(o) = own.iter().find(|o| o.ts_us > s && o.ts_us < e) {
            return Err(format!("{} is written inside rep {}'s interval [{s}, {e}]", cite(o), w.int("rep")));
        }
    }
    Ok(())
}

/// Rule 5 (`energy.9`).
pub(crate) fn inside_run(events: &[Event]) -> Result<(), String> {
    let started = first(events, "run_started")?;
    let finished = first(events, "run_finished")?;
    for w in works(events) {
        let (s, e) = (w.int("start_us"), w.int("end_us"));
        if s < started.ts_us || e > finished.ts_us {
            return Err(format!(
                "{}: [{s}, {e}] is not inside the run ({} .. {})",
                cite(w),
                cite(started),
                cite(finished)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn ev(v: Value) -> Event {
        troupe_lab::events::parse_line(&v.to_string()).expect("a valid event line")
    }

    fn cfg(reps: u64) -> EnergyConfig {
        EnergyConfig {
            workload: "ping_pong".into(),
            distributed: false,
            clients: 2,
            msgs: 10,
            servers: 1,
            range: 100,
            reps,
        }
    }

    fn line(ts: i64, kind: &str, extra: Value) -> Event {
        let mut v = json!({"ts_us": ts, "run": "r", "rt": "x", "node": "main", "ev": kind});
        if let (Some(o), Some(x)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(x.clone());
        }
        ev(v)
    }

    /// Two repetitions of 2 x 10 round trips, written as the contract says.
    fn good() -> Vec<Event> {
        vec![
            line(100, "run_started", json!({"workload": "energy"})),
            line(300, "work", json!({"rep": 0, "start_us": 200, "end_us": 300, "result": 20})),
            line(500, "work", json!({"rep": 1, "start_us": 400, "end_us": 500, "result": 20})),
            line(600, "run_finished", json!({"errors": 0, "dropped_events": 0})),
        ]
    }

    #[test]
    fn rule_1_interval_holds_and_a_work_line_before_its_end_fails() {
        assert_eq!(interval(&good()), Ok(()));
        let mut bad = good();
        bad[1] = line(250, "work", json!({"rep": 0, "start_us": 200, "end_us": 300, "result": 20}));
        assert!(interval(&bad).unwrap_err().contains("written 50 µs before its end_us"));
        let mut empty = good();
        empty[1] = line(300, "work", json!({"rep": 0, "start_us": 300, "end_us": 300, "result": 20}));
        assert!(interval(&empty).unwrap_err().contains("is not before end_us"));
    }

    #[test]
    fn rule_5_an_interval_outside_the_run_fails() {
        assert_eq!(inside_run(&good()), Ok(()));
        let mut outside = good();
        outside[2] = line(700, "work", json!({"rep": 1, "start_us": 400, "end_us": 700, "result": 20}));
        assert!(inside_run(&outside).unwrap_err().contains("not inside the run"));
        let mut early = good();
        early[1] = line(300, "work", json!({"rep": 0, "start_us": 50, "end_us": 300, "result": 20}));
        assert!(inside_run(&early).unwrap_err().contains("[50, 300]"));
    }

    #[test]
    fn every_contract_rule_has_a_rule_and_the_scenarios_set_valid_keys() {
        let ids: Vec<&str> = rules().iter().map(|r| r.id).collect();
        assert_eq!(ids, (1..=9).map(|n| format!("energy.{n}")).collect::<Vec<_>>());
        for s in scenarios() {
            let mut b = troupe_lab::config::ConfigBuilder::new(&super::super::Energy);
            for (k, v) in &s.settings {
                b.apply_set(&format!("{k}={v}"));
            }
            assert!(b.build().is_ok(), "scenario {} has a setting the keys refuse", s.name);
        }
    }

    #[test]
    fn rule_2_overlapping_repetitions_fail() {
        assert_eq!(between(&good()), Ok(()));
        let mut bad = good();
        bad[2] = line(500, "work", json!({"rep": 1, "start_us": 250, "end_us": 500, "result": 20}));
        assert!(between(&bad).unwrap_err().contains("(rep 0) ended at 300"));
    }

    #[test]
    fn rule_3_a_wrong_result_or_counted_errors_fail() {
        assert_eq!(result(&cfg(2), &good()), Ok(()));
        let mut bad = good();
        bad[2] = line(500, "work", json!({"rep": 1, "start_us": 400, "end_us": 500, "result": 19}));
        assert!(result(&cfg(2), &bad).unwrap_err().contains("has result 19 where 20"));
        let mut errs = good();
        errs[3] = line(600, "run_finished", json!({"errors": 3, "dropped_events": 0}));
        assert!(result(&cfg(2), &errs).unwrap_err().contains("3 errors"));
        let prime = EnergyConfig { workload: "prime".into(), ..cfg(1) };
        let p = vec![
            line(100, "run_started", json!({})),
            line(300, "work", json!({"rep": 0, "start_us": 200, "end_us": 300, "result": 25})),
            line(400, "run_finished", json!({"errors": 0, "dropped_events": 0})),
        ];
        assert_eq!(result(&prime, &p), Ok(()));
    }

    #[test]
    fn rule_4_missing_reps_other_nodes_and_lines_inside_an_interval_fail() {
        assert_eq!(counting(&cfg(2), &good()), Ok(()));
        assert!(counting(&cfg(3), &good()).unwrap_err().contains("2 work lines for reps = 3"));
        let mut inside = good();
        inside.insert(2, line(450, "note", json!({})));
        assert!(counting(&cfg(2), &inside).unwrap_err().contains("ev=note] is written inside rep 1's interval"));
        let mut other = good();
        other.insert(3, ev(json!({"ts_us": 550, "run": "r", "rt": "x", "node": "far", "ev": "note"})));
        assert!(counting(&cfg(2), &other).unwrap_err().contains("[node=far"));
        // The lab's own energy lines are not the program's.
        let mut lab = good();
        lab.push(ev(json!({"ts_us": 450, "run": "r", "rt": "x", "node": "lab", "ev": "energy"})));
        assert_eq!(counting(&cfg(2), &lab), Ok(()));
    }
}
