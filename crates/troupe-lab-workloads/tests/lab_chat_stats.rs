//! Chat statistics from recorded events (workloads/chat/analysis.rs definitions 1-7).

use serde_json::json;
use troupe_lab::events::{parse_line, Event};
use troupe_lab_workloads::chat::analysis::{ChatStats, Dist};

const T0: i64 = 1_700_000_000_000_000;

fn cfg(sets: &[&str]) -> troupe_lab::config::Config {
    let mut b = troupe_lab_workloads::registry().builder("chat").unwrap();
    for s in
        ["chats_per_sup=2", "clients_per_server=2", "test_duration_secs=4", "deployment=single", "send_interval_ms=50"]
            .iter()
            .chain(sets)
    {
        b.apply_set(s);
    }
    b.build().unwrap()
}

fn ev(ts: i64, node: &str, ev: &str, extra: serde_json::Value) -> Event {
    let mut v = json!({"ts_us": ts, "run": "r", "rt": "troupe", "node": node, "ev": ev});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    parse_line(&v.to_string()).unwrap()
}

/// A complete 4-second run: 2 chats x 2 clients, one fault on chat-0 at 1 s detected by both
/// clients after 2 and 4 ms, rejoined 10 and 30 ms later.
fn run(extra: Vec<Event>) -> Vec<Event> {
    let mut v = vec![
        ev(T0 - 10, "chat", "run_started", json!({"workload": "chat", "config": {}})),
        ev(T0 - 9, "chat", "ready", json!({"what": "chats", "count": 2})),
        ev(T0 - 8, "chat", "ready", json!({"what": "clients", "count": 4, "rss_bytes": 4000})),
        ev(T0 - 7, "chat", "ready", json!({"what": "window", "count": 4, "start_us": T0})),
    ];
    for s in 0..4 {
        v.push(ev(T0 + (s + 1) * 1_000_000, "chat", "throughput", json!({"second": s, "count": 100 + s})));
    }
    let f = T0 + 1_000_000;
    v.push(ev(f, "chat", "fault_injected", json!({"id": "f-0", "target": "chat-0", "kind": "kill"})));
    v.push(ev(f + 2_000, "chat", "fault_detected", json!({"id": null, "target": "chat-0", "by": "c0"})));
    v.push(ev(f + 4_000, "chat", "fault_detected", json!({"id": null, "target": "chat-0", "by": "c1"})));
    v.push(ev(f + 12_000, "chat", "reconnected", json!({"target": "chat-0", "by": "c0", "ms": 10.0})));
    v.push(ev(f + 34_000, "chat", "reconnected", json!({"target": "chat-0", "by": "c1", "ms": 30.0})));
    v.extend(extra);
    v.push(ev(T0 + 5_000_000, "chat", "run_finished", json!({"dropped_events": 0, "errors": 0})));
    v.sort_by_key(|e| e.ts_us);
    v
}

#[test]
fn detection_reconnection_and_connected_share() {
    let c = cfg(&[]);
    let st = ChatStats::compute(&c, &run(vec![]), &[]);
    assert_eq!(st.completeness_problem(&c), None);
    let d = st.detection_ms.clone().unwrap();
    assert_eq!((d.n, d.min, d.max, d.mean), (2, 2.0, 4.0, 3.0));
    let r = st.reconnection_ms.clone().unwrap();
    assert_eq!((r.n, r.mean), (2, 20.0));
    assert_eq!(st.detection_rows[0].fault_id, "f-0");
    assert_eq!((st.detections, st.expected_detections, st.reconnections, st.unreconnected), (2, 2, 2, 0));
    assert!(st.degradations().is_empty(), "{:?}", st.degradations());
    // Disconnected from f+2 ms to f+34 ms: 32 ms of a 4 s window.
    assert!((st.all_connected_pct - (100.0 - 100.0 * 0.032 / 4.0)).abs() < 1e-9, "{}", st.all_connected_pct);
    assert_eq!(st.msg_per_s_mean, 101.5);
    assert_eq!(st.bytes_per_client, Some(1000.0));
    let json = troupe_lab::workload::RunAnalysis::summary_json(&st);
    for k in ["mean", "median", "min", "max", "q1", "q3", "p99", "n"] {
        assert!(json["detection_ms"].get(k).is_some() && json["reconnection_ms"].get(k).is_some(), "{k}");
    }
    assert!(
        json.get("all_connected_pct").is_some()
            && json.get("msg_per_s_mean").is_some()
            && json.get("ceiling").is_some()
    );
}

#[test]
fn a_client_that_never_rejoins_is_disconnected_to_the_window_end() {
    let c = cfg(&[]);
    let f = T0 + 3_000_000;
    let extra = vec![
        ev(f, "chat", "fault_injected", json!({"id": "f-1", "target": "chat-1", "kind": "error"})),
        ev(f + 1_000, "chat", "fault_detected", json!({"id": null, "target": "chat-1", "by": "c2"})),
    ];
    let st = ChatStats::compute(&c, &run(extra), &[]);
    // 32 ms plus the last 999 ms of the window.
    let want = 100.0 * (1.0 - (0.032 + 0.999) / 4.0);
    assert!((st.all_connected_pct - want).abs() < 1e-6, "{} vs {want}", st.all_connected_pct);
}

#[test]
fn definition_4_an_unreconnected_client_counts_as_at_least_the_time_to_the_end_and_degrades_the_run() {
    let c = cfg(&[]);
    let f = T0 + 2_000_000;
    let extra = vec![
        ev(f, "chat", "fault_injected", json!({"id": "f-1", "target": "chat-1", "kind": "error"})),
        ev(f + 1_000, "chat", "fault_detected", json!({"id": null, "target": "chat-1", "by": "c2"})),
        // c3 rejoins after the window's end, while the run winds down: still its rejoin.
        ev(f + 2_000, "chat", "fault_detected", json!({"id": null, "target": "chat-1", "by": "c3"})),
        ev(T0 + 4_100_000, "chat", "reconnected", json!({"target": "chat-1", "by": "c3", "ms": 2098.0})),
    ];
    let st = ChatStats::compute(&c, &run(extra), &[]);
    assert_eq!((st.detections, st.expected_detections), (4, 4));
    assert_eq!((st.reconnections, st.unreconnected, st.open_at_end), (3, 1, 0));
    let r = st.reconnection_ms.clone().unwrap();
    // Every detection is a sample: 10, 30, 2098, and c2's at least 2999 ms (from its
    // detection at 2.001 s to the run's last event at 5 s).
    assert_eq!((r.n, r.censored), (4, 1));
    assert_eq!(r.show("min", 1), "10.0");
    assert_eq!(r.show("max", 1), ">= 2999.0");
    assert_eq!(r.show("median", 1), "1064.0");
    assert_eq!(r.show("mean", 1), ">= 1284.2");
    let json = troupe_lab::workload::RunAnalysis::summary_json(&st);
    assert_eq!(json["unreconnected"], 1);
    assert_eq!(json["reconnection_ms"]["censored"], 1);
    assert!(json["reconnection_ms"]["lower_bounds"].as_array().unwrap().iter().any(|v| v == "p99"), "{json}");
    let why = st.degradations().join("; ");
    assert!(why.contains("1 of 4 detections never followed by a rejoin"), "{why}");
}

#[test]
fn definition_4_a_detection_in_the_windows_last_second_is_censored_but_does_not_degrade() {
    let c = cfg(&[]);
    // chat-1 crashes 500 ms before the window's end; its clients' processes stop before they
    // can rejoin.
    let f = T0 + 3_500_000;
    let extra = vec![
        ev(f, "chat", "fault_injected", json!({"id": "f-1", "target": "chat-1", "kind": "kill"})),
        ev(f + 1_000, "chat", "fault_detected", json!({"id": null, "target": "chat-1", "by": "c2"})),
        ev(f + 2_000, "chat", "fault_detected", json!({"id": null, "target": "chat-1", "by": "c3"})),
    ];
    let st = ChatStats::compute(&c, &run(extra), &[]);
    assert_eq!((st.reconnections, st.unreconnected, st.open_at_end), (2, 0, 2));
    assert_eq!(st.reconnection_ms.clone().unwrap().censored, 2, "still in the distribution, as lower bounds");
    assert!(st.degradations().is_empty(), "{:?}", st.degradations());
}

#[test]
fn definition_3_missing_detections_skipped_and_missing_faults_and_errors_degrade_the_run() {
    let c = cfg(&[]);
    let f = T0 + 2_000_000;
    // A second kill nobody detected, one skipped fault, one planned fault never accounted for.
    let extra = vec![
        ev(f, "chat", "fault_injected", json!({"id": "f-1", "target": "chat-1", "kind": "kill"})),
        ev(T0 + 4_900_000, "other", "run_finished", json!({"dropped_events": 0, "errors": 2, "skipped_faults": 1})),
    ];
    let sched: Vec<troupe_lab::schedule::FaultAction> = (0..4)
        .map(|i| troupe_lab::schedule::FaultAction {
            id: format!("f-{i}"),
            at_ms: 1000 * i,
            group: 0,
            kind: "kill".into(),
            ..Default::default()
        })
        .collect();
    let st = ChatStats::compute(&c, &run(extra), &sched);
    assert_eq!((st.injected_faults, st.planned_faults, st.skipped_faults, st.missing_faults), (2, 4, 1, 1));
    assert_eq!((st.detections, st.expected_detections), (2, 4));
    assert_eq!((st.detections_missed, st.detections_open_at_end), (2, 0));
    let why = st.degradations().join("; ");
    for want in [
        "1 of 4 planned faults were neither carried out",
        "1 of 4 planned faults skipped",
        "2 of 4 due detections",
        "2 errors",
    ] {
        assert!(why.contains(want), "{want}: {why}");
    }
    // A stress fault crashes nothing: no detection is due.
    let stress = vec![ev(f, "chat", "fault_injected", json!({"id": "f-1", "target": "chat-1", "kind": "cpu"}))];
    assert_eq!(ChatStats::compute(&c, &run(stress), &[]).expected_detections, 2);
}

#[test]
fn definition_2_throughput_is_measured_on_the_event_clock_not_by_the_timer() {
    let c = cfg(&[]);
    let mut events = run(vec![]);
    // The node's timer fired 400 ms late for the last second: its count covers 1.4 s.
    for e in events.iter_mut().filter(|e| e.ev == "throughput") {
        let s = e.int("second");
        let (ts, count) = if s == 3 { (T0 + 4_400_000, 140) } else { (e.ts_us, 100) };
        *e = ev(ts, "chat", "throughput", json!({"second": s, "count": count}));
    }
    let st = ChatStats::compute(&c, &events, &[]);
    // Counting by the timer's seconds read 110/s; on the clock it is 440 in 4.4 s.
    assert!((st.msg_per_s_mean - 100.0).abs() < 1e-9, "{}", st.msg_per_s_mean);
    assert_eq!(st.seconds.last(), Some(&(3, 100)));
}

#[test]
fn definition_2_a_reading_above_the_ceiling_beyond_its_resolution_degrades_the_run() {
    // 2 chats x 2 x 2 clients every 1000 ms: a ceiling of 8/s, resolution 1000 / 4000 = 25%.
    let c = cfg(&["send_interval_ms=1000"]);
    let mut events = run(vec![]);
    let honest = ChatStats::compute(&c, &events, &[]);
    assert_eq!((honest.ceiling, honest.ceiling_resolution_pct), (8.0, Some(25.0)));
    for e in events.iter_mut().filter(|e| e.ev == "throughput") {
        let s = e.int("second");
        *e = ev(e.ts_us, "chat", "throughput", json!({"second": s, "count": if s == 0 { 10 } else { 8 }}));
    }
    let st = ChatStats::compute(&c, &events, &[]);
    assert!(st.degradations().is_empty(), "106% is within 25%: {:?}", st.degradations());
    for e in events.iter_mut().filter(|e| e.ev == "throughput") {
        let s = e.int("second");
        *e = ev(e.ts_us, "chat", "throughput", json!({"second": s, "count": 11}));
    }
    let why = ChatStats::compute(&c, &events, &[]).degradations().join("; ");
    assert!(why.contains("137.50% of the ceiling") && why.contains("not a measurement"), "{why}");
}

#[test]
fn incomplete_runs_say_what_is_missing() {
    let c = cfg(&[]);
    let mut events = run(vec![]);
    events.retain(|e| !(e.ev == "throughput" && e.int("second") == 3));
    let p = ChatStats::compute(&c, &events, &[]).completeness_problem(&c).unwrap();
    assert!(p.contains("throughput"), "{p}");
    let failed = vec![ev(
        T0 + 4_900_000,
        "orchestrator",
        "run_finished",
        json!({"dropped_events": 0, "errors": 1,
        "failed_nodes": ["clients-1 (killed by signal 9)"]}),
    )];
    let p = ChatStats::compute(&c, &run(failed), &[]).completeness_problem(&c).unwrap();
    assert!(p.contains("clients-1 (killed by signal 9)"), "{p}");
    let dropped = vec![ev(T0 + 4_900_000, "other", "run_finished", json!({"dropped_events": 3, "errors": 0}))];
    let p = ChatStats::compute(&c, &run(dropped), &[]).completeness_problem(&c).unwrap();
    assert!(p.contains("3 events were dropped"), "{p}");
}

#[test]
fn quantiles() {
    let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
    let d = Dist::of(&mut v).unwrap();
    assert_eq!((d.min, d.max, d.median, d.p99, d.n), (1.0, 100.0, 50.5, 99.0, 100));
    assert_eq!((d.q1, d.q3), (25.75, 75.25));
    assert!(Dist::of(&mut []).is_none());
}

/// Definition 3: a chat killed in the window's last second with no detection logged (the client
/// processes stop at the window's end) is open at the end, not a missed detection; one killed
/// earlier and not noticed is missed and degrades the run.
#[test]
fn definition_3_a_kill_in_the_last_second_left_undetected_is_open_at_end_not_missed() {
    let c = cfg(&[]);
    // The window is 4 s: a kill 3 ms before its end, nobody detects it.
    let late =
        vec![ev(T0 + 3_997_000, "chat", "fault_injected", json!({"id": "f-1", "target": "chat-1", "kind": "kill"}))];
    let st = ChatStats::compute(&c, &run(late), &[]);
    assert_eq!((st.detections, st.expected_detections), (2, 4));
    assert_eq!((st.detections_missed, st.detections_open_at_end), (0, 2));
    assert!(st.degradations().iter().all(|d| !d.contains("due detections")), "{:?}", st.degradations());
    // The same kill 1.5 s before the end is missed.
    let early =
        vec![ev(T0 + 2_500_000, "chat", "fault_injected", json!({"id": "f-1", "target": "chat-1", "kind": "kill"}))];
    let st = ChatStats::compute(&c, &run(early), &[]);
    assert_eq!((st.detections_missed, st.detections_open_at_end), (2, 0));
    assert!(
        st.degradations().join("; ").contains("2 of 4 due detections logged (2 missing"),
        "{:?}",
        st.degradations()
    );
}
