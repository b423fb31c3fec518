//! Chat statistics from recorded events (workloads/chat/analysis.rs definitions 1-6).

use serde_json::json;
use troupe_lab::config::ConfigBuilder;
use troupe_lab::events::{parse_line, Event};
use troupe_lab::workloads::chat::analysis::{ChatStats, Dist};

const T0: i64 = 1_700_000_000_000_000;

fn cfg(sets: &[&str]) -> troupe_lab::config::Config {
    let mut b = ConfigBuilder::new("chat").unwrap();
    for s in ["chats_per_sup=2", "clients_per_server=2", "test_duration_secs=4", "deployment=single"].iter().chain(sets)
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
    assert_eq!(st.detections[0].fault_id, "f-0");
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
