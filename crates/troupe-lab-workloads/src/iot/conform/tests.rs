//! Hand-made iot traces: one that keeps every rule of `conform.rs`, and for each rule one
//! change that breaks it.

use serde_json::{json, Value};

use super::*;

const S: i64 = 2_000_000;

fn cfg() -> IotConfig {
    IotConfig {
        servers: 1,
        device_processes: 2,
        devices: 4,
        duration_s: 4,
        warmup_s: 1,
        report_len: 10,
        report_timeout_ms: 1000,
        heartbeat_ms: 500,
        phi_threshold: 8.0,
        drop_probability: 0.0,
        delay_min_ms: 0,
        delay_max_ms: 0,
        client_mttf_s: 2,
        server_mttf_s: 2,
        restart_s: 1,
        seed: 1,
    }
}

fn action(at_ms: u64, id: &str, kind: &str, group: u32) -> FaultAction {
    FaultAction { at_ms, id: id.into(), kind: kind.into(), group, slot: 0, restart: true, ..FaultAction::default() }
}

/// Device 1 killed at 500 ms, server 0 at 1,500 ms, device 2 at 3,500 ms (its restart would
/// fall after the 4 s window).
fn sched() -> Vec<FaultAction> {
    vec![action(500, "f-0", KILL, 1), action(1500, "f-1", NODE_KILL, 0), action(3500, "f-2", KILL, 2)]
}

fn line(ts: i64, node: &str, kind: &str, extra: Value) -> Event {
    let mut v = json!({"ts_us": ts, "run": "r", "rt": "x", "node": node, "ev": kind});
    if let (Some(o), Some(x)) = (v.as_object_mut(), extra.as_object()) {
        o.extend(x.clone());
    }
    troupe_lab::events::parse_line(&v.to_string()).expect("a valid event line")
}

fn sorted(mut v: Vec<Event>) -> Vec<Event> {
    v.sort_by_key(|e| e.ts_us);
    v
}

fn good() -> Vec<Event> {
    let mut v = Vec::new();
    for (i, n) in ["orchestrator", "server-0", "devices-0", "devices-1"].into_iter().enumerate() {
        v.push(line(1000 + i as i64, n, "run_started", json!({"workload": "iot"})));
        v.push(line(
            S + 5_000_000 + i as i64,
            n,
            "run_finished",
            json!({"skipped_faults": 0, "errors": 0, "dropped_events": 0}),
        ));
    }
    v.push(line(2000, "server-0", "ready", json!({"what": "servers", "count": 1})));
    v.push(line(3000, "devices-0", "ready", json!({"what": "devices", "count": 2})));
    v.push(line(3500, "devices-1", "ready", json!({"what": "devices", "count": 2})));
    v.push(line(4000, "orchestrator", "ready", json!({"what": "window", "count": 4, "start_us": S})));
    v.push(line(
        S + 501_000,
        "devices-1",
        "fault_injected",
        json!({"id": "f-0", "target": "device-1", "kind": "kill"}),
    ));
    v.push(line(S + 1_501_200, "devices-1", "restarted", json!({"target": "device-1", "attempt": 1})));
    v.push(line(S + 1_506_200, "server-0", "reconnected", json!({"target": "device-1", "by": "server-0", "ms": 5.2})));
    v.push(line(
        S + 1_500_500,
        "orchestrator",
        "fault_injected",
        json!({"id": "f-1", "target": "server-0", "kind": "node_kill"}),
    ));
    v.push(line(
        S + 2_800_000,
        "devices-0",
        "fault_detected",
        json!({"id": null, "target": "server-0", "by": "device-2"}),
    ));
    v.push(line(S + 2_501_000, "orchestrator", "restarted", json!({"target": "server-0", "attempt": 1})));
    v.push(line(
        S + 3_500_300,
        "devices-0",
        "fault_injected",
        json!({"id": "f-2", "target": "device-2", "kind": "kill"}),
    ));
    for s in 0..4 {
        v.push(line(S + (s + 1) * 1_000_000 + 1000, "orchestrator", "throughput", json!({"second": s, "count": 100})));
    }
    sorted(v)
}

/// `good()` with the first line matching `pick` replaced (`None` drops it), and sorted again.
fn change(pick: impl Fn(&Event) -> bool, to: Option<Event>) -> Vec<Event> {
    let mut v = good();
    let i = v.iter().position(pick).expect("the line to change is in the trace");
    match to {
        Some(e) => v[i] = e,
        None => {
            v.remove(i);
        }
    }
    sorted(v)
}

fn err(r: Outcome) -> String {
    r.expect_err("the changed trace breaks the rule")
}

const PASS: Outcome = Ok(None);

#[test]
fn the_good_trace_keeps_every_rule() {
    let (c, e, s) = (cfg(), good(), sched());
    assert_eq!(processes(&c, &e), PASS);
    assert_eq!(mttr(&e, false), PASS);
    assert_eq!(mttr(&e, true), PASS);
    assert_eq!(kill_targets(&c, &e, &s), PASS);
    assert_eq!(kill_timing(&e, &s), PASS);
    assert_eq!(kill_accounting(&c, &e, &s), PASS);
    assert_eq!(restarts(&c, &e, &s), PASS);
    assert_eq!(no_restart_after_window(&c, &e, &s), PASS);
    assert_eq!(detection(&c, &e), PASS);
    assert_eq!(ready(&c, &e), PASS);
    assert_eq!(throughput(&c, &e), PASS);
}

#[test]
fn rule_1_a_missing_or_foreign_process_fails() {
    let missing = change(|e| e.node == "devices-1" && e.ev == "run_started", None);
    assert!(err(processes(&cfg(), &missing)).contains("devices-1 wrote no run_started"));
    let mut foreign = good();
    foreign.push(line(S, "server-7", "run_started", json!({})));
    assert!(err(processes(&cfg(), &foreign)).contains("node=server-7"));
}

#[test]
fn rule_2_an_mttr_sample_without_restart_twice_off_or_not_everywhere_fails() {
    let orphan = change(|e| e.ev == "restarted" && e.str("target") == "device-1", None);
    assert!(err(mttr(&orphan, false)).contains("follows no restart of device-1"));
    let mut twice = good();
    twice.push(line(
        S + 1_600_000,
        "server-0",
        "reconnected",
        json!({"target": "device-1", "by": "server-0", "ms": 99.0}),
    ));
    assert!(err(mttr(&sorted(twice), false)).contains("a second sample"));
    let off = json!({"target": "device-1", "by": "server-0", "ms": 900.0});
    let off = change(|e| e.ev == "reconnected", Some(line(S + 1_506_200, "server-0", "reconnected", off)));
    assert!(err(mttr(&off, true)).contains("ms=900"));
    let partial = json!({"target": "device-1", "by": "server-0", "ms": 5.0, "acked": 1, "asked": 2});
    let partial = change(|e| e.ev == "reconnected", Some(line(S + 1_506_200, "server-0", "reconnected", partial)));
    assert!(err(mttr(&partial, false)).contains("acked=1 of asked=2"));
}

#[test]
fn rule_3_an_unplanned_repeated_or_misdirected_kill_fails() {
    let mut again = good();
    again.push(line(
        S + 501_500,
        "devices-1",
        "fault_injected",
        json!({"id": "f-0", "target": "device-1", "kind": "kill"}),
    ));
    assert!(err(kill_targets(&cfg(), &sorted(again), &sched()))
        .contains("id=f-0 target=device-1 kind=kill]: that id was carried out before"));
    let wrong = json!({"id": "f-0", "target": "device-3", "kind": "kill"});
    let wrong = change(|e| e.str("id") == "f-0", Some(line(S + 501_000, "devices-1", "fault_injected", wrong)));
    assert!(err(kill_targets(&cfg(), &wrong, &sched())).contains("where the schedule says kill of device-1"));
    let by = json!({"id": "f-1", "target": "server-0", "kind": "node_kill"});
    let by = change(|e| e.str("id") == "f-1", Some(line(S + 1_500_500, "server-0", "fault_injected", by)));
    assert!(err(kill_targets(&cfg(), &by, &sched())).contains("(by orchestrator)"));
    assert!(err(kill_targets(&cfg(), &good(), &sched()[..2]))
        .contains("id=f-2 target=device-2 kind=kill]: its id is not in the schedule"));
}

#[test]
fn rule_4_a_kill_early_or_late_fails() {
    let early = json!({"id": "f-0", "target": "device-1", "kind": "kill"});
    let early = change(|e| e.str("id") == "f-0", Some(line(S + 400_000, "devices-1", "fault_injected", early)));
    assert!(err(kill_timing(&early, &sched())).contains("-100 ms"));
    let late = json!({"id": "f-2", "target": "device-2", "kind": "kill"});
    let late = change(|e| e.str("id") == "f-2", Some(line(S + 6_000_000, "devices-0", "fault_injected", late)));
    assert!(err(kill_timing(&late, &sched())).contains("2500 ms"));
}

#[test]
fn rule_5_a_kill_neither_done_nor_skipped_fails_and_a_counted_skip_passes() {
    let lost = change(|e| e.str("id") == "f-2", None);
    assert!(err(kill_accounting(&cfg(), &lost, &sched())).contains("3 kills were due"));
    let skip = json!({"skipped_faults": 1, "errors": 0, "dropped_events": 0});
    let counted = change(
        |e| e.ev == "run_finished" && e.node == "devices-0",
        Some(line(S + 5_000_002, "devices-0", "run_finished", skip)),
    );
    let counted: Vec<Event> = counted.into_iter().filter(|e| e.str("id") != "f-2").collect();
    assert_eq!(kill_accounting(&cfg(), &counted, &sched()), PASS);
}

#[test]
fn rule_6_a_restart_too_soon_misnumbered_or_missing_fails() {
    let soon = json!({"target": "server-0", "attempt": 1});
    let soon = change(
        |e| e.ev == "restarted" && e.node == "orchestrator",
        Some(line(S + 1_900_000, "orchestrator", "restarted", soon)),
    );
    assert!(err(restarts(&cfg(), &soon, &sched())).contains("comes 399 ms after [node=orchestrator"));
    let numbered = json!({"target": "device-1", "attempt": 2});
    let numbered = change(
        |e| e.ev == "restarted" && e.node == "devices-1",
        Some(line(S + 1_501_200, "devices-1", "restarted", numbered)),
    );
    assert!(err(restarts(&cfg(), &numbered, &sched())).contains("attempt=2] is restart 1"));
    let never = change(|e| e.ev == "restarted" && e.node == "devices-1", None);
    let never: Vec<Event> = never.into_iter().filter(|e| e.ev != "reconnected").collect();
    assert!(err(restarts(&cfg(), &never, &sched())).contains("id=f-0 target=device-1 kind=kill] was never restarted"));
}

#[test]
fn rule_7_a_restart_after_the_window_fails() {
    let mut late = good();
    late.push(line(S + 4_500_400, "devices-0", "restarted", json!({"target": "device-2", "attempt": 1})));
    assert!(err(no_restart_after_window(&cfg(), &sorted(late), &sched()))
        .contains("target=device-2 attempt=1] restarts [node=devices-0"));
}

#[test]
fn rule_8_a_detection_of_no_server_or_from_the_wrong_process_fails() {
    let odd = json!({"id": null, "target": "device-0", "by": "device-2"});
    let odd = change(|e| e.ev == "fault_detected", Some(line(S + 2_800_000, "devices-0", "fault_detected", odd)));
    assert!(err(detection(&cfg(), &odd)).contains("not a server"));
    let from = json!({"id": null, "target": "server-0", "by": "device-2"});
    let from = change(|e| e.ev == "fault_detected", Some(line(S + 2_800_000, "devices-1", "fault_detected", from)));
    assert!(err(detection(&cfg(), &from)).contains("should come from devices-0"));
}

#[test]
fn rule_9_a_repeated_ready_or_an_early_window_fails() {
    let mut again = good();
    again.push(line(S + 2_600_000, "server-0", "ready", json!({"what": "servers", "count": 1})));
    assert!(err(ready(&cfg(), &sorted(again))).contains("unexpected or repeated"));
    let early = json!({"what": "window", "count": 4, "start_us": 500_000});
    let early = change(|e| e.str("what") == "window", Some(line(4000, "orchestrator", "ready", early)));
    assert!(err(ready(&cfg(), &early)).contains("not warmup_s = 1 s after the last ready"));
    let short = change(|e| e.node == "devices-0" && e.ev == "ready", None);
    assert!(err(ready(&cfg(), &short)).contains("no ready from devices-0"));
}

#[test]
fn rule_10_a_missing_or_early_second_fails() {
    let gap = change(|e| e.ev == "throughput" && e.int("second") == 2, None);
    assert!(err(throughput(&cfg(), &gap)).contains("[0, 1, 3]"));
    let early = change(
        |e| e.ev == "throughput" && e.int("second") == 1,
        Some(line(S + 1_500_000, "orchestrator", "throughput", json!({"second": 1, "count": 5}))),
    );
    assert!(err(throughput(&cfg(), &early)).contains("second=1] is stamped before its second ended"));
}

#[test]
fn rule_2_a_sample_stamped_just_before_its_restart_event_belongs_to_it() {
    // A fast owner reports the new incarnation current 2 ms before the device process stamps
    // its `restarted`.
    let early = json!({"target": "device-1", "by": "server-0", "ms": 1.5});
    let early = change(|e| e.ev == "reconnected", Some(line(S + 1_499_200, "server-0", "reconnected", early)));
    assert_eq!(mttr(&early, false), PASS);
    assert_eq!(mttr(&early, true), PASS);
}

#[test]
fn rules_whose_events_the_trace_lacks_are_not_applicable() {
    let quiet: Vec<Event> = good()
        .into_iter()
        .filter(|e| !["fault_injected", "restarted", "reconnected", "fault_detected"].contains(&e.ev.as_str()))
        .collect();
    assert!(matches!(mttr(&quiet, false), Ok(Some(_))));
    assert!(matches!(kill_targets(&cfg(), &quiet, &[]), Ok(Some(_))));
    assert!(matches!(kill_timing(&quiet, &[]), Ok(Some(_))));
    assert!(matches!(kill_accounting(&cfg(), &quiet, &[]), Ok(Some(_))));
    assert!(matches!(restarts(&cfg(), &quiet, &[]), Ok(Some(_))));
    assert!(matches!(no_restart_after_window(&cfg(), &quiet, &[]), Ok(Some(_))));
    assert!(matches!(detection(&cfg(), &quiet), Ok(Some(_))));
}

#[test]
fn every_contract_rule_has_a_rule_and_ids_are_unique() {
    let ids: Vec<&str> = rules().iter().map(|r| r.id).collect();
    let unique: BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len());
    for n in 1..=12 {
        let n = format!("iot.{n}");
        assert!(ids.iter().any(|id| id.trim_end_matches(|c: char| c.is_ascii_lowercase()) == n), "{n} has no rule");
    }
}

#[test]
fn the_scenario_sets_valid_keys() {
    for s in scenarios() {
        let mut b = troupe_lab::config::ConfigBuilder::new(&super::super::Iot);
        for (k, v) in &s.settings {
            b.apply_set(&format!("{k}={v}"));
        }
        assert!(b.build().is_ok(), "scenario {} has a setting the keys refuse", s.name);
    }
}

#[test]
fn network_fault_lines_are_not_kills() {
    let mut v = good();
    v.push(line(S + 700_000, "server-0", "fault_injected", json!({"id": "n-0", "target": "server-0", "kind": "drop"})));
    let v = sorted(v);
    let mut s = sched();
    s.push(FaultAction { at_ms: 700, id: "n-0".into(), kind: "drop".into(), ..FaultAction::default() });
    assert_eq!(kill_targets(&cfg(), &v, &s), PASS);
    assert_eq!(kill_timing(&v, &s), PASS);
    assert_eq!(kill_accounting(&cfg(), &v, &s), PASS);
    assert_eq!(restarts(&cfg(), &v, &s), PASS);
}

#[test]
fn rule_11_a_few_samples_stamped_late_pass_but_a_systematic_origin_fails() {
    // Three more devices restarted and reported current, 10 ms after their restart.
    let with = |ms: [f64; 3]| {
        let mut v = good();
        for (i, ms) in ms.into_iter().enumerate() {
            let (d, at) = (format!("device-{}", 10 + i), S + 3_000_000 + 100_000 * i as i64);
            v.push(line(at, "devices-0", "restarted", json!({"target": d, "attempt": 1})));
            v.push(line(at + 10_000, "server-0", "reconnected", json!({"target": d, "by": "server-0", "ms": ms})));
        }
        sorted(v)
    };
    assert_eq!(mttr(&with([10.0, 10.1, 9.9]), true), PASS);
    // One of four stamped 150 ms late (a stalled thread): still the restart's origin.
    assert_eq!(mttr(&with([160.0, 10.1, 9.9]), true), PASS);
    // Three of four from another origin (the kill, 1 s earlier): a failure naming the worst.
    let e = err(mttr(&with([1010.0, 1010.0, 1200.0]), true));
    assert!(e.contains("3 of 4 MTTR samples") && e.contains("ms=1200"), "{e}");
}
