//! The `kv` workload's keys (each bad value refused naming its key and what is allowed, r + w > n)
//! and its statistics from recorded events (rules of `workloads/kv/analysis.rs`).

use serde_json::json;
use troupe_lab::config::Config;
use troupe_lab::events::parse_line;
use troupe_lab::workload::RunAnalysis;
use troupe_lab_workloads::kv::analysis::KvStats;
use troupe_lab_workloads::kv::config::KvConfig;

fn build(sets: &[&str]) -> troupe_lab::error::Result<Config> {
    let mut b = troupe_lab_workloads::registry().builder("kv").unwrap();
    for s in sets {
        b.apply_set(s);
    }
    b.build()
}

#[test]
fn defaults_are_the_issues_quick_point() {
    let c = KvConfig::from_config(&build(&[]).unwrap());
    assert_eq!(
        c,
        KvConfig {
            service: "kv".into(),
            object_bytes: 1_048_576,
            concurrency: 8,
            duration_s: 5,
            vnodes: 64,
            n: 3,
            r: 2,
            w: 2,
            parallelism: 4,
            transport: "channels".into(),
            keys: 100,
            read_pct: 50,
            storage_delay_ms: 0,
            seed: 1,
            nemesis: None,
            overlay: "full_mesh".into(),
        }
    );
}

#[test]
fn each_bad_key_is_named_with_what_is_allowed() {
    for (set, key, allowed) in [
        ("service=memcache", "service", "kv, echo"),
        ("object_bytes=0", "object_bytes", "1..=8388608"),
        ("object_bytes=8388609", "object_bytes", "1..=8388608"),
        ("concurrency=0", "concurrency", "1..=256"),
        ("concurrency=257", "concurrency", "1..=256"),
        ("duration_s=3601", "duration_s", "1..=3600"),
        ("n=4", "n", "3..=3"),
        ("transport=parallel_random", "transport", "channels, one_connection"),
        ("overlay=star", "overlay", "full_mesh, client_server, hyparview"),
        ("read_pct=101", "read_pct", "0..=100"),
        ("storage_delay_ms=1001", "storage_delay_ms", "0..=1000"),
        ("keys=x", "keys", "an integer"),
    ] {
        let e = build(&[set]).expect_err(set).to_string();
        assert!(e.contains(key) && e.contains(allowed), "{set}: {e}");
    }
}

#[test]
fn quorums_that_cannot_overlap_are_refused() {
    let e = build(&["r=1", "w=2"]).unwrap_err().to_string();
    assert!(e.contains("r+w") && e.contains("r + w must be greater than n"), "{e}");
    let e = build(&["r=1", "w=1"]).unwrap_err().to_string();
    assert!(e.contains("r+w"), "{e}");
    assert!(build(&["r=1", "w=3"]).is_ok());
    assert!(build(&["r=3", "w=1"]).is_ok());
}

fn line(ev: &str, extra: serde_json::Value) -> troupe_lab::events::Event {
    let mut v = json!({"ts_us": 1_700_000_000_000_000_i64, "run": "t", "rt": "troupe", "node": "client", "ev": ev});
    v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    parse_line(&v.to_string()).unwrap()
}

/// 2 clients x 5 operations, latencies 1..=10 ms, the 10th failed; a 0.5 s window.
fn events(errors: i64) -> Vec<troupe_lab::events::Event> {
    let mut out = vec![line("run_started", json!({"workload": "kv", "config": {}}))];
    let mut n = 0;
    for client in 0..2 {
        for seq in 0..5 {
            n += 1;
            let op = if seq % 2 == 0 { "get" } else { "put" };
            out.push(line(
                "op",
                json!({"client": client, "seq": seq, "op": op, "latency_us": n * 1000, "ok": n != 10}),
            ));
        }
    }
    out.push(line("window", json!({"elapsed_us": 500_000, "ops": 10, "failed_ops": 1})));
    out.push(line("nodes", json!({"digests_sent": 4, "repairs_applied": 1, "gossip_received": 2, "objects": 3})));
    out.push(line("run_finished", json!({"errors": errors, "dropped_events": 0})));
    out
}

#[test]
fn statistics_count_failed_ops_apart_from_latency() {
    let cfg = build(&[]).unwrap();
    let st = KvStats::compute(&cfg, &events(0));
    assert_eq!(st.completeness_problem(&cfg), None);
    let s = st.summary_json();
    assert_eq!(s["ops"], 10);
    assert_eq!(s["failed_ops"], 1);
    // 9 successful operations over 0.5 s.
    assert!((s["ops_per_s"].as_f64().unwrap() - 18.0).abs() < 1e-9, "{s}");
    // The latency is over the 9 successful ones: 1..=9 ms.
    assert!((s["latency_ms"]["mean"].as_f64().unwrap() - 5.0).abs() < 1e-9, "{s}");
    assert!((s["latency_ms"]["p50"].as_f64().unwrap() - 5.0).abs() < 1e-9, "{s}");
    assert!((s["latency_ms"]["p99"].as_f64().unwrap() - 9.0).abs() < 1e-9, "{s}");
    for k in ["concurrency", "object_bytes", "service", "transport"] {
        assert!(!s[k].is_null(), "{k}: {s}");
    }
    assert_eq!(s["nodes"]["repairs_applied"], 1);
    let csv = st.csv().unwrap();
    assert_eq!(csv.lines().next(), Some("client,seq,op,latency_us,ok"));
    assert_eq!(csv.lines().count(), 11);
    assert!(csv.contains("1,4,get,10000,false"), "{csv}");
}

#[test]
fn a_run_with_errors_is_incomplete() {
    let cfg = build(&[]).unwrap();
    let st = KvStats::compute(&cfg, &events(1));
    assert!(st.completeness_problem(&cfg).unwrap().contains("errors"));
}

#[test]
fn the_network_layers_errors_degrade_a_run_naming_the_fault_not_carried_out_rather_than_fail_it() {
    let cfg = build(&["nemesis=partition", "nemesis_interval_ms=1000", "duration_s=10"]).unwrap();
    let actions = troupe_lab::workload::Faults::schedule(&troupe_lab_workloads::kv::Kv, &cfg);
    let mut evs = events(0);
    let mut net = line("run_finished", json!({"errors": 1, "dropped_events": 0}));
    net.node = troupe_lab::netlayer::NODE.to_string();
    evs.push(net);
    let st = KvStats::compute_with(&cfg, &evs, &actions);
    assert_eq!(st.completeness_problem(&cfg), None);
    let d = st.degradations(&cfg);
    assert_eq!(d.len(), actions.len(), "every partition line was not carried out: {d:?}");
    assert!(d[0].contains("nem-part-0-") && d[0].contains("not carried out"), "{d:?}");
}

#[test]
fn a_nemesis_clock_an_unknown_or_repeated_kind_and_an_echo_nemesis_are_refused_naming_the_key() {
    for (set, why) in [
        (&["nemesis=clock"][..], "clock source"),
        (&["nemesis=kill,flood"][..], "unknown kind \"flood\""),
        (&["nemesis=kill,kill"][..], "given twice"),
        (&["nemesis=kill", "service=echo"][..], "use service = \"kv\""),
    ] {
        let e = build(set).expect_err(why).to_string();
        assert!(e.contains("nemesis") && e.contains(why), "{set:?}: {e}");
    }
    assert!(build(&["nemesis=partition, kill,pause ,loss"]).is_ok());
}

#[test]
fn a_nemesis_with_network_kinds_brings_the_network_layer_and_its_lines_end_before_the_window() {
    let cfg = build(&["nemesis=partition,kill", "nemesis_interval_ms=1000", "duration_s=10"]).unwrap();
    let nf = cfg.net_faults().expect("partition needs the network-fault machinery");
    assert_eq!(nf.layer, troupe_lab::netfaults::Layer::Network);
    assert_eq!(nf.drop_pct, 0.0);
    let lines = troupe_lab::workload::Faults::schedule(&troupe_lab_workloads::kv::Kv, &cfg);
    assert!(!lines.is_empty());
    assert!(lines.iter().all(|a| a.id.starts_with("nem-") && a.at_ms + a.duration_ms.unwrap() <= 9_000), "{lines:?}");
    assert!(lines.iter().any(|a| a.kind == "kill") && lines.iter().any(|a| a.kind == "partition"));
    // Kills and pauses alone need no network layer.
    assert!(build(&["nemesis=kill,pause"]).unwrap().net_faults().is_none());
    assert!(troupe_lab::workload::Faults::schedule(&troupe_lab_workloads::kv::Kv, &build(&[]).unwrap()).is_empty());
}
