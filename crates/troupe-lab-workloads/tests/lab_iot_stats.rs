//! The iot statistics on synthetic events (workloads/iot/analysis.rs definitions 1-6), the
//! collector's restart rule (collector.rs rule 2) and the sweep's shape checks (grid.rs).

use serde_json::json;
use troupe_lab::events::{parse_line, Event};
use troupe_lab::workload::RunAnalysis;
use troupe_lab_workloads::iot::analysis::IotStats;
use troupe_lab_workloads::iot::collector::{restart_delta, second_count};
use troupe_lab_workloads::iot::grid::{concave_up, monotone_decreasing};

const T0: i64 = 1_700_000_000_000_000;

fn cfg() -> troupe_lab::config::Config {
    let mut b = troupe_lab_workloads::registry().builder("iot").unwrap();
    for s in ["servers=2", "device_processes=2", "devices=4", "duration_s=4"] {
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

/// A complete 4 s run of 2 servers and 2 device processes; device-1 and device-3 killed at
/// 1 s, restarted and current again (40 and 120 ms after their restarts), server-1 killed at
/// 2 s and restarted.
fn run(skip: &[&str]) -> Vec<Event> {
    let nodes = ["orchestrator", "server-0", "server-1", "devices-0", "devices-1"];
    let mut v: Vec<Event> = nodes.iter().map(|n| ev(T0 - 100, n, "run_started", json!({"workload": "iot"}))).collect();
    v.push(ev(T0 - 90, "server-0", "ready", json!({"what": "servers", "count": 1})));
    v.push(ev(T0 - 90, "server-1", "ready", json!({"what": "servers", "count": 1})));
    v.push(ev(T0 - 80, "devices-0", "ready", json!({"what": "devices", "count": 2})));
    v.push(ev(T0 - 80, "devices-1", "ready", json!({"what": "devices", "count": 2})));
    v.push(ev(T0 - 70, "orchestrator", "ready", json!({"what": "window", "count": 4, "start_us": T0})));
    for (s, c) in [(0, 1000), (1, 800), (2, 600), (3, 1000)] {
        v.push(ev(T0 + (s + 1) * 1_000_000, "orchestrator", "throughput", json!({"second": s, "count": c})));
    }
    v.push(ev(
        T0 + 1_000_000,
        "devices-1",
        "fault_injected",
        json!({"id": "f-0", "target": "device-1", "kind": "kill"}),
    ));
    v.push(ev(
        T0 + 1_000_000,
        "devices-1",
        "fault_injected",
        json!({"id": "f-2", "target": "device-3", "kind": "kill"}),
    ));
    v.push(ev(T0 + 2_960_000, "devices-1", "restarted", json!({"target": "device-1", "attempt": 1})));
    v.push(ev(T0 + 2_980_000, "devices-1", "restarted", json!({"target": "device-3", "attempt": 1})));
    v.push(ev(
        T0 + 2_000_000,
        "orchestrator",
        "fault_injected",
        json!({"id": "f-1", "target": "server-1", "kind": "node_kill"}),
    ));
    v.push(ev(
        T0 + 2_500_000,
        "devices-0",
        "fault_detected",
        json!({"id": null, "target": "server-1", "by": "device-0"}),
    ));
    v.push(ev(T0 + 3_000_000, "server-0", "reconnected", json!({"target": "device-1", "by": "server-0", "ms": 40.0})));
    v.push(ev(T0 + 3_100_000, "server-0", "reconnected", json!({"target": "device-3", "by": "server-0", "ms": 120.0})));
    v.push(ev(T0 + 3_200_000, "orchestrator", "restarted", json!({"target": "server-1", "attempt": 1})));
    for n in nodes {
        v.push(ev(T0 + 6_000_000, n, "run_finished", json!({"dropped_events": 0, "errors": 0, "skipped_faults": 0})));
    }
    v.retain(|e| !skip.iter().any(|s| format!("{}:{}", e.node, e.ev) == *s || e.ev == *s));
    v.sort_by_key(|e| e.ts_us);
    v
}

#[test]
fn reports_per_s_is_the_window_mean_and_mttr_comes_from_reconnected() {
    let st = IotStats::compute(&cfg(), &run(&[]), &[]);
    assert_eq!(st.completeness_problem(&cfg()), None);
    assert_eq!(st.reports_per_s, 850.0);
    let m = st.mttr_ms.clone().unwrap();
    assert_eq!((m.median, m.p99, m.n, m.censored), (80.0, 120.0, 2, 0));
    assert_eq!((st.device_kills, st.server_kills, st.restarts, st.detections), (2, 1, 3, 1));
    assert_eq!((st.unrecovered, st.kills_not_restarted), (0, 0));
    assert!(RunAnalysis::degradations(&st, &cfg()).is_empty());
    let j = st.summary_json();
    assert_eq!(j["reports_per_s"], json!(850.0));
    assert_eq!(j["mttr_ms"]["median"], json!(80.0));
    assert_eq!(j["mttr_ms"]["p99"], json!(120.0));
    assert_eq!(j["mttr_ms"]["count"], json!(2));
    assert_eq!(st.marks.len(), 3);
    assert_eq!(st.marks[0].at_s, 1.0);
}

#[test]
fn definition_2_reports_per_s_is_measured_on_the_event_clock_not_by_the_timer() {
    let mut evs = run(&[]);
    // The collector's last tick came 1 s late: its count covers 2 s of reports.
    for e in evs.iter_mut().filter(|e| e.ev == "throughput" && e.int("second") == 3) {
        *e = ev(T0 + 5_000_000, "orchestrator", "throughput", json!({"second": 3, "count": 2000}));
    }
    let st = IotStats::compute(&cfg(), &evs, &[]);
    // Counting the timer's seconds read (1000 + 800 + 600 + 2000) / 4 = 1100/s.
    assert_eq!(st.reports_per_s, 4400.0 / 5.0);
}

#[test]
fn no_restarts_means_no_mttr_and_null_figures() {
    let st = IotStats::compute(&cfg(), &run(&["reconnected", "devices-1:restarted"]), &[]);
    assert!(st.mttr_ms.is_none());
    assert_eq!(st.kills_not_restarted, 2);
    assert_eq!(st.summary_json()["mttr_ms"], json!({"median": null, "p99": null, "count": 0, "unrecovered": 0}));
}

#[test]
fn definition_3_a_restart_never_current_counts_as_at_least_the_time_to_the_end_and_degrades_the_run() {
    let mut evs = run(&[]);
    evs.retain(|e| !(e.ev == "reconnected" && e.str("target") == "device-3"));
    let st = IotStats::compute(&cfg(), &evs, &[]);
    let m = st.mttr_ms.clone().unwrap();
    // device-3 restarted at 2.98 s; the run's last event is at 6 s: at least 3020 ms.
    assert_eq!((m.n, m.censored, st.unrecovered), (2, 1, 1));
    assert_eq!(m.show("max", 0), ">= 3020");
    assert_eq!(m.show("min", 0), "40");
    let j = st.summary_json();
    assert_eq!(j["mttr_ms"]["unrecovered"], json!(1));
    assert_eq!(j["unrecovered"], json!(1));
    let why = RunAnalysis::degradations(&st, &cfg()).join("; ");
    assert!(why.contains("1 device restarts never became current"), "{why}");
}

#[test]
fn definition_3_a_sample_stamped_just_before_its_restart_still_closes_it() {
    // The device process stamped device-3's restart 30 ms after its owner had reported the
    // new incarnation current (a loaded machine): a sample, not an unrecovered restart.
    let mut evs = run(&[]);
    for e in evs.iter_mut().filter(|e| e.ev == "restarted" && e.str("target") == "device-3") {
        *e = ev(T0 + 3_130_000, "devices-1", "restarted", json!({"target": "device-3", "attempt": 1}));
    }
    evs.sort_by_key(|e| e.ts_us);
    let st = IotStats::compute(&cfg(), &evs, &[]);
    let m = st.mttr_ms.clone().unwrap();
    assert_eq!((m.n, m.censored, st.unrecovered), (2, 0, 0));
    assert_eq!(m.p99, 120.0);
    // Further off than the slack (100 ms) it belongs to no restart: device-3's restart stays
    // open (in the window's last second, so open at the end rather than unrecovered).
    for e in evs.iter_mut().filter(|e| e.ev == "restarted" && e.str("target") == "device-3") {
        *e = ev(T0 + 3_250_000, "devices-1", "restarted", json!({"target": "device-3", "attempt": 1}));
    }
    evs.sort_by_key(|e| e.ts_us);
    let st = IotStats::compute(&cfg(), &evs, &[]);
    assert_eq!((st.mttr_ms.unwrap().censored, st.unrecovered, st.open_at_end), (1, 0, 1));
}

#[test]
fn definition_6_skipped_missing_kills_and_errors_degrade_the_run() {
    let mut evs = run(&[]);
    evs.push(ev(
        T0 + 6_100_000,
        "devices-0",
        "run_finished",
        json!({"dropped_events": 0, "errors": 1, "skipped_faults": 1}),
    ));
    let sched: Vec<troupe_lab::schedule::FaultAction> =
        (0..5).map(|i| troupe_lab::schedule::FaultAction { id: format!("f-{i}"), ..Default::default() }).collect();
    let st = IotStats::compute(&cfg(), &evs, &sched);
    let why = RunAnalysis::degradations(&st, &cfg()).join("; ");
    for want in ["1 of 5 planned kills were neither", "1 of 5 planned kills skipped", "1 errors"] {
        assert!(why.contains(want), "{want}: {why}");
    }
}

#[test]
fn incomplete_runs_are_named() {
    let c = cfg();
    let p = IotStats::compute(&c, &run(&["server-1:ready"]), &[]).completeness_problem(&c).unwrap();
    assert!(p.contains("1 of 2 servers"), "{p}");
    let p = IotStats::compute(&c, &run(&["devices-0:ready"]), &[]).completeness_problem(&c).unwrap();
    assert!(p.contains("2 of 4 devices"), "{p}");
    let p = IotStats::compute(&c, &run(&["throughput"]), &[]).completeness_problem(&c).unwrap();
    assert!(p.contains("one `throughput` event per window second"), "{p}");
    let p = IotStats::compute(&c, &run(&["devices-1:run_finished"]), &[]).completeness_problem(&c).unwrap();
    assert!(p.contains("devices-1"), "{p}");
    let mut evs = run(&[]);
    evs.push(ev(T0 + 7_000_000, "orchestrator", "throughput", json!({"second": 2, "count": 5})));
    let p = IotStats::compute(&c, &evs, &[]).completeness_problem(&c).unwrap();
    assert!(p.contains("duplicated"), "{p}");
}

#[test]
fn a_server_killed_too_late_to_restart_owes_no_run_finished_but_a_restarted_one_does() {
    let c = cfg();
    // server-1 killed at 2 s and never restarted: no run_finished from it is expected.
    let p = IotStats::compute(&c, &run(&["restarted", "server-1:run_finished"]), &[]).completeness_problem(&c);
    assert_eq!(p, None);
    // Restarted at 3.2 s, the new server-1 must end cleanly.
    let p = IotStats::compute(&c, &run(&["server-1:run_finished"]), &[]).completeness_problem(&c).unwrap();
    assert!(p.contains("server-1"), "{p}");
    // A server that was never killed still must.
    let p = IotStats::compute(&c, &run(&["server-0:run_finished"]), &[]).completeness_problem(&c).unwrap();
    assert!(p.contains("server-0"), "{p}");
}

#[test]
fn collector_counts_a_restarted_servers_total_as_new() {
    assert_eq!(restart_delta(100, 250), 150);
    assert_eq!(restart_delta(900, 40), 40);
    let mut last = vec![Some(100), Some(500), None];
    // Server 1 restarted (500 -> 30); server 2 answered for the first time.
    assert_eq!(second_count(&mut last, &[Some(160), Some(30), Some(70)]), 60 + 30);
    assert_eq!(last, vec![Some(160), Some(30), Some(70)]);
    // Server 0 does not answer: nothing from it now, counted when it answers again.
    assert_eq!(second_count(&mut last, &[None, Some(50), Some(70)]), 20);
    assert_eq!(second_count(&mut last, &[Some(260), Some(50), Some(70)]), 100);
}

#[test]
fn shape_checks_accept_the_expected_curves_and_refuse_others() {
    // Decreasing and concave up (like 1 / (1 + 10 p)).
    let good: Vec<(f64, f64)> = [0.0, 0.1, 0.2, 0.4, 0.8].iter().map(|&p| (p, 1000.0 / (1.0 + 10.0 * p))).collect();
    assert!(monotone_decreasing(&good, 0.02) && concave_up(&good, 0.02));
    // Decreasing but concave down (a cliff at the end).
    let cliff = vec![(0.0, 1000.0), (0.1, 990.0), (0.2, 970.0), (0.4, 500.0)];
    assert!(monotone_decreasing(&cliff, 0.02) && !concave_up(&cliff, 0.02));
    // A rise beyond the noise allowance is not decreasing; within it, it is.
    assert!(!monotone_decreasing(&[(0.0, 1000.0), (0.1, 1100.0)], 0.02));
    assert!(monotone_decreasing(&[(0.0, 1000.0), (0.1, 1010.0)], 0.02));
    assert!(!concave_up(&[(0.0, 1.0), (1.0, 0.5)], 0.02), "two points show no curvature");
}
