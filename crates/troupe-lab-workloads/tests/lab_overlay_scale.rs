//! The `overlay-scale` workload: bad input refused before anything runs (unknown overlay, a
//! HyParView view size of 0, latency bounds the wrong way round), and its statistics from
//! recorded events (sums, convergence, completeness).

use serde_json::json;
use troupe_lab::events::{parse_line, Event};
use troupe_lab::workload::RunAnalysis;
use troupe_lab::ErrorKind;
use troupe_lab_workloads::overlay_scale::analysis::OverlayStats;
use troupe_lab_workloads::overlay_scale::config::OverlayScaleConfig;

fn build(sets: &[&str]) -> Result<troupe_lab::config::Config, troupe_lab::Error> {
    let mut b = troupe_lab_workloads::registry().builder("overlay-scale").unwrap();
    for s in sets {
        b.apply_set(s);
    }
    b.build()
}

fn ev(ev: &str, extra: serde_json::Value) -> Event {
    let mut v = json!({"ts_us": 1_700_000_000_000_000i64, "run": "r", "rt": "troupe", "node": "sim", "ev": ev});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    parse_line(&v.to_string()).unwrap()
}

#[test]
fn defaults_are_seed_004s() {
    let c = OverlayScaleConfig::from_config(&build(&[]).unwrap());
    assert_eq!((c.nodes, c.period_ms, c.overlay_name.as_str()), (64, 5000, "hyparview"));
    assert_eq!(c.sim.hyparview.active_size, 5);
}

#[test]
fn unknown_overlay_zero_view_and_reversed_latency_are_refused_naming_the_key() {
    let e = build(&["overlay=ring"]).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("overlay") && text.contains("full_mesh, client_server, hyparview"), "{text}");
    let e = build(&["active_view=0"]).unwrap_err();
    let ErrorKind::InvalidConfig(issues) = e.kind() else { panic!("{e}") };
    assert!(issues.iter().any(|i| i.key == "active_view"), "{e}");
    assert!(e.to_string().contains("1..=64"), "{e}");
    let e = build(&["latency_min_ms=9", "latency_max_ms=2"]).unwrap_err();
    assert!(e.to_string().contains("latency_min_ms must not exceed latency_max_ms"), "{e}");
    let e = build(&["nodes=4", "active_view=5"]).unwrap_err();
    assert!(e.to_string().contains("smaller than the number of nodes"), "{e}");
    assert!(
        build(&["nodes=4", "active_view=5", "overlay=full_mesh"]).is_ok(),
        "the view size only matters to hyparview"
    );
}

fn complete() -> Vec<Event> {
    let mut v = vec![ev("run_started", json!({"workload": "overlay-scale", "config": {}}))];
    for s in 0..3u64 {
        v.push(ev("traffic", json!({"second": s, "bytes": 100 * (s + 1), "messages": s + 1})));
    }
    v.push(ev("ready", json!({"what": "formed", "count": 64, "sim_ms": 1000})));
    v.push(ev("ready", json!({"what": "converged", "count": 64, "ms": 1500})));
    v.push(ev("run_finished", json!({"dropped_events": 0, "errors": 0, "sim_ms": 2500, "wall_ms": 3})));
    v
}

#[test]
fn statistics_sum_the_seconds_and_keep_convergence() {
    let cfg = build(&[]).unwrap();
    let st = OverlayStats::compute(&cfg, &complete());
    assert_eq!(st.completeness_problem(&cfg), None);
    assert_eq!((st.bytes_total, st.messages_total), (600, 6));
    assert_eq!(st.bytes_after_formed, 500, "seconds 1 and 2 are after the overlay formed at 1000 ms");
    assert_eq!((st.formed_ms, st.convergence_ms), (Some(1000), Some(1500)));
    let j = st.summary_json();
    assert_eq!((j["bytes_total"].as_u64(), j["messages_total"].as_u64()), (Some(600), Some(6)));
    assert_eq!(j["convergence_ms"].as_u64(), Some(1500));
    assert_eq!((j["overlay"].as_str(), j["nodes"].as_u64()), (Some("hyparview"), Some(64)));
}

#[test]
fn a_missing_second_or_end_makes_the_run_incomplete() {
    let cfg = build(&[]).unwrap();
    let mut gap = complete();
    gap.remove(2);
    let p = OverlayStats::compute(&cfg, &gap).completeness_problem(&cfg).expect("a second is missing");
    assert!(p.contains("3 simulated seconds, got 2"), "{p}");
    let mut unfinished = complete();
    unfinished.pop();
    let p = OverlayStats::compute(&cfg, &unfinished).completeness_problem(&cfg).expect("no run_finished");
    assert!(p.contains("run_finished"), "{p}");
    let never: Vec<Event> = complete().into_iter().filter(|e| e.str("what") != "converged").collect();
    let st = OverlayStats::compute(&cfg, &never);
    assert_eq!(st.completeness_problem(&cfg), None, "not converging is a result, not a broken run");
    assert!(st.summary_json()["convergence_ms"].is_null());
}

#[test]
fn a_bogus_mode_is_refused_naming_the_allowed_values() {
    let e = build(&["mode=bogus"]).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("mode") && text.contains("sim, processes"), "{text}");
    let c = OverlayScaleConfig::from_config(&build(&[]).unwrap());
    assert!(!c.processes, "the simulator is the default");
    assert!(OverlayScaleConfig::from_config(&build(&["mode=processes"]).unwrap()).processes);
}

fn processes_run(converged: bool) -> Vec<Event> {
    let mut v = vec![ev("run_started", json!({"workload": "overlay-scale", "config": {}}))];
    for s in 0..3u64 {
        v.push(ev("traffic", json!({"second": s, "at_ms": 1000 * (s + 1), "bytes": 100, "messages": 2})));
    }
    v.push(ev("ready", json!({"what": "formed", "count": 6, "sim_ms": 900})));
    v.push(ev("ready", json!({"what": "go", "count": 6, "at_us": 1})));
    if converged {
        v.push(ev("ready", json!({"what": "converged", "count": 6, "ms": 1200})));
    }
    v.push(ev(
        "processes",
        json!({"nodes_wanted": 6, "nodes_started": 6, "nodes_running": 6,
               "nodes_converged": if converged { 6 } else { 4 }, "command_failures": [],
               "counter_sent": 40, "rss_kb_total": 60_000, "rss_read": 6, "rss_kb_max": 11_000}),
    ));
    v.push(ev("run_finished", json!({"dropped_events": 0, "errors": 0, "wall_ms": 4000})));
    v
}

#[test]
fn a_processes_run_sums_the_samples_and_degrades_when_a_node_does_not_converge() {
    let cfg = build(&["mode=processes", "nodes=6"]).unwrap();
    let st = OverlayStats::compute(&cfg, &processes_run(true));
    assert_eq!(st.completeness_problem(&cfg), None);
    assert_eq!((st.bytes_total, st.messages_total, st.convergence_ms), (300, 6, Some(1200)));
    assert_eq!(st.rss_kb_per_node, Some(10_000));
    assert!(st.degradations(&cfg).is_empty(), "{:?}", st.degradations(&cfg));
    assert_eq!(st.summary_json()["mode"], "processes");
    let st = OverlayStats::compute(&cfg, &processes_run(false));
    let d = st.degradations(&cfg);
    assert!(d.iter().any(|l| l.contains("4 of 6")), "a node that never converged degrades the run: {d:?}");
    let mut failed = processes_run(true);
    failed.insert(1, ev("node_failed", json!({"index": 3, "why": "did not say where it listens"})));
    let d = OverlayStats::compute(&cfg, &failed).degradations(&cfg);
    assert!(d.iter().any(|l| l.contains("os-3 did not start")), "{d:?}");
}
