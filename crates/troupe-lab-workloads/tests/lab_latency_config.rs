//! The `latency` workload's keys (each bad value refused naming its key and what is allowed)
//! and its statistics from recorded events (rules of `workloads/latency/analysis.rs`).

use serde_json::json;
use troupe_lab::config::Config;
use troupe_lab::events::parse_line;
use troupe_lab::workload::RunAnalysis;
use troupe_lab_workloads::latency::analysis::LatencyStats;
use troupe_lab_workloads::latency::config::LatencyConfig;

fn build(sets: &[&str]) -> troupe_lab::error::Result<Config> {
    let mut b = troupe_lab_workloads::registry().builder("latency").unwrap();
    for s in sets {
        b.apply_set(s);
    }
    b.build()
}

#[test]
fn defaults_are_the_issues_quick_point() {
    let c = LatencyConfig::from_config(&build(&[]).unwrap());
    assert_eq!(
        c,
        LatencyConfig {
            pairs: 8,
            payload_bytes: 524_288,
            messages: 1000,
            rtt_ms: 1,
            transport: "one_connection".into(),
            parallelism: 4,
            overlay: "full_mesh".into(),
        }
    );
    assert_eq!(c.data_connections(), 1);
    assert_eq!((0..8).map(|p| c.share(p)).sum::<u64>(), 1000);
}

#[test]
fn each_bad_key_is_named_with_what_is_allowed() {
    for (set, key, allowed) in [
        ("pairs=0", "pairs", "1..=128"),
        ("pairs=129", "pairs", "1..=128"),
        ("payload_bytes=1000", "payload_bytes", "524288..=8388608"),
        ("payload_bytes=8388609", "payload_bytes", "524288..=8388608"),
        ("messages=9", "messages", "10..="),
        ("rtt_ms=201", "rtt_ms", "0..=200"),
        ("transport=two_connections", "transport", "one_connection, parallel_random, parallel_affinity"),
        ("parallelism=0", "parallelism", "1..=64"),
        ("overlay=ring", "overlay", "full_mesh, client_server, hyparview"),
        ("pairs=x", "pairs", "an integer"),
    ] {
        let e = build(&[set]).expect_err(set).to_string();
        assert!(e.contains(key) && e.contains(allowed), "{set}: {e}");
    }
    let e = build(&["pairs=128", "messages=100"]).unwrap_err().to_string();
    assert!(e.contains("messages+pairs") && e.contains("messages must be >= pairs"), "{e}");
    let e = build(&["pairs=128", "paylod_bytes=524288"]).unwrap_err().to_string();
    assert!(e.contains("paylod_bytes") && e.contains("payload_bytes"), "an unknown key is named: {e}");
}

#[test]
fn shares_split_the_messages_evenly() {
    let c = LatencyConfig::from_config(&build(&["pairs=3", "messages=10"]).unwrap());
    assert_eq!((c.share(0), c.share(1), c.share(2)), (4, 3, 3));
    let c = LatencyConfig::from_config(&build(&["transport=parallel_affinity", "parallelism=6"]).unwrap());
    assert_eq!(c.data_connections(), 6);
}

fn line(ev: &str, extra: serde_json::Value) -> troupe_lab::events::Event {
    let mut v = json!({"ts_us": 1_700_000_000_000_000_i64, "run": "t", "rt": "troupe", "node": "a", "ev": ev});
    v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    parse_line(&v.to_string()).unwrap()
}

/// A complete run of 2 pairs x 5 messages: latencies 1..=10 ms, a 0.5 s window.
fn events(drop_last: bool, errors: i64) -> Vec<troupe_lab::events::Event> {
    let mut out = vec![line("run_started", json!({"workload": "latency", "config": {}}))];
    let mut n = 0;
    for pair in 0..2 {
        for seq in 0..5 {
            n += 1;
            if !(drop_last && n == 10) {
                out.push(line("msg", json!({"pair": pair, "seq": seq, "latency_us": n * 1000})));
            }
        }
    }
    out.push(line("window", json!({"elapsed_us": 500_000, "messages": 10, "bytes": 10 * 524_288})));
    out.push(line("relay", json!({"connections": 1, "bytes_up_in": 5, "bytes_up_out": 5})));
    out.push(line("run_finished", json!({"dropped_events": 0, "errors": errors})));
    out
}

#[test]
fn rules_2_to_4_the_summary_from_the_events() {
    let cfg = build(&["pairs=2", "messages=10"]).unwrap();
    let st = LatencyStats::compute(&cfg, &events(false, 0));
    assert_eq!(st.completeness_problem(&cfg), None);
    let s = st.summary_json();
    assert_eq!(s["latency_ms"]["p50"], 5.5);
    assert_eq!(s["latency_ms"]["p99"], 10.0);
    assert_eq!(s["latency_ms"]["mean"], 5.5);
    assert_eq!(s["latency_ms"]["max"], 10.0);
    assert_eq!(s["throughput_msgs_per_s"], 20.0);
    assert_eq!(s["throughput_mb_per_s"], 20.0 * 524_288.0 / 1e6);
    assert_eq!(s["messages"], 10);
    assert_eq!(s["rtt_ms"], 1);
    assert_eq!(s["transport"], "one_connection");
    assert_eq!(s["relay"]["connections"], 1);
    let csv = st.csv().unwrap();
    assert_eq!(csv.lines().next(), Some("pair,seq,latency_us"));
    assert_eq!(csv.lines().count(), 11);
    assert_eq!(csv.lines().nth(6), Some("1,0,6000"));
}

#[test]
fn rule1_a_missing_message_or_an_error_is_incomplete() {
    let cfg = build(&["pairs=2", "messages=10"]).unwrap();
    let p = LatencyStats::compute(&cfg, &events(true, 0)).completeness_problem(&cfg).unwrap();
    assert!(p.contains("9 of 10 messages"), "{p}");
    let p = LatencyStats::compute(&cfg, &events(false, 1)).completeness_problem(&cfg).unwrap();
    assert!(p.contains("1 errors"), "{p}");
    let p = LatencyStats::compute(&cfg, &[]).completeness_problem(&cfg).unwrap();
    assert!(p.contains("no run_started") && p.contains("no window") && p.contains("no run_finished"), "{p}");
}
