//! `troupe lab run|compare latency` through the real binary (real node processes and the
//! lab's relay process on loopback): a short Troupe run per transport writes `summary.json`
//! with the contract's keys and `latency.csv` with one row per message, every byte through
//! the relay; the Erlang peer does the same and refuses any transport but `one_connection`
//! naming the key; a comparison writes the side-by-side table.
//!
//! These live beside the binary's other tests because they need `troupe` itself (the Troupe
//! program starts node B and the relay as `troupe lab exec` processes). The Erlang tests skip
//! loudly without `erl` unless TROUPE_TEST_REQUIRE_ERLANG=1.

mod support;
use support::lab::{assert_run_failed_naming, ctx, erlang_or_skip, json, read, text, TempLab};

const SHORT: &[&str] = &["--set", "pairs=3", "--set", "messages=12", "--set", "rtt_ms=2"];

/// Runs one short point and checks the run folder against the contract; its summary.
fn short_run(runtime: &str, transport: &str) -> serde_json::Value {
    let lab = TempLab::new("run");
    let out = &lab.out;
    let o = lab
        .run(&["lab", "run", "latency", "--runtime", runtime], &[&["--set", &format!("transport={transport}")], SHORT]);
    let err = std::fs::read_to_string(out.join("stderr.txt")).unwrap_or_default();
    let ctx = format!("{runtime} {transport}: {}\n{}\n{err}", text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{ctx}");
    assert_eq!(json(&out.join("manifest.json"))["status"], "ok", "{ctx}");
    let s = json(&out.join("summary.json"));
    for k in ["p50", "p99", "mean", "max"] {
        let v = s["latency_ms"][k].as_f64().unwrap_or(-1.0);
        // Every message crossed the relay twice (data, ack): at least the 2 ms RTT.
        assert!(v >= 2.0, "latency_ms.{k} = {v}: {ctx}");
    }
    // Each pair sends its next message only after the ack: the ceiling is pairs / RTT
    // (1,500 msg/s for 3 pairs at 2 ms), and Little's law ties throughput to the mean
    // latency (pairs in flight = throughput x latency), up to the window's edges.
    let (tput, mean) = (s["throughput_msgs_per_s"].as_f64().unwrap(), s["latency_ms"]["mean"].as_f64().unwrap());
    assert!(tput > 0.0 && tput <= 3.0 * 1000.0 / 2.0, "{tput} msg/s against a ceiling of 1500: {ctx}");
    let in_flight = tput * mean / 1000.0;
    assert!((0.2 * 3.0..=1.1 * 3.0).contains(&in_flight), "{in_flight} pairs in flight of 3: {ctx}");
    assert!(
        (s["throughput_mb_per_s"].as_f64().unwrap() - tput * 524_288.0 / 1e6).abs() < 1e-6 * tput.max(1.0),
        "{ctx}"
    );
    assert_eq!(s["messages"], 12, "{ctx}");
    assert_eq!(s["rtt_ms"], 2, "{ctx}");
    assert_eq!(s["transport"], transport, "{ctx}");
    let csv = read(&out.join("latency.csv"));
    assert_eq!(csv.lines().next(), Some("pair,seq,latency_us"), "{csv}");
    assert_eq!(csv.lines().count(), 1 + 12, "{csv}");
    // The payloads went through the relay: at least 12 x 512 KiB counted in and out.
    let relay = &s["relay"];
    let up_in = relay["bytes_up_in"].as_u64().unwrap_or(0);
    assert!(up_in >= 12 * 524_288, "relay counts {relay}: {ctx}");
    assert!(relay["connections"].as_u64().unwrap_or(0) >= 1, "{relay}");
    s
}

#[test]
fn troupe_one_connection_runs_through_the_relay() {
    short_run("troupe", "one_connection");
}

#[test]
fn troupe_parallel_transports_run_through_the_relay() {
    let s = short_run("troupe", "parallel_affinity");
    // 4 data lanes each way plus the control connections: more connections than one.
    assert!(s["relay"]["connections"].as_u64().unwrap() > 2, "{s}");
    short_run("troupe", "parallel_random");
    let s = short_run("troupe", "channels_gossip");
    assert!(s["gossip"]["received"].as_u64().is_some(), "{s}");
}

#[test]
fn erlang_one_connection_runs_through_the_relay() {
    if !erlang_or_skip("erlang_one_connection_runs_through_the_relay") {
        return;
    }
    let s = short_run("erlang", "one_connection");
    assert_eq!(s["relay"]["connections"], 1, "Distributed Erlang: one connection, through the relay: {s}");
}

#[test]
fn erlang_refuses_every_other_transport_naming_the_key() {
    if !erlang_or_skip("erlang_refuses_every_other_transport_naming_the_key") {
        return;
    }
    let lab = TempLab::new("run");
    let out = &lab.out;
    let o =
        lab.run(&["lab", "run", "latency", "--runtime", "erlang"], &[&["--set", "transport=parallel_affinity"], SHORT]);
    assert_run_failed_naming(&o, out, &["config key transport = \"parallel_affinity\"", "\"one_connection\""]);
    assert!(!out.join("latency.csv").exists() || read(&out.join("latency.csv")).lines().count() == 1);
}

#[test]
fn compare_puts_troupe_next_to_erlang() {
    if !erlang_or_skip("compare_puts_troupe_next_to_erlang") {
        return;
    }
    let lab = TempLab::new("cmp");
    let out = &lab.out;
    let o = lab.run(
        &["lab", "compare", "latency", "--runtimes", "troupe,erlang"],
        &[&["--set", "pairs=1,3", "--set", "messages=12", "--set", "rtt_ms=2"]],
    );
    let ctx = ctx(&o);
    assert_eq!(o.status.code(), Some(0), "{ctx}");
    let cmp = read(&out.join("compare.csv"));
    assert_eq!(cmp.lines().count(), 1 + 4, "two points x two runtimes: {cmp}");
    assert_eq!(cmp.matches(",ok,").count(), 4, "{cmp}");
    assert!(text(&o.stdout).contains("erlang p99"), "the side-by-side table is printed: {ctx}");
    assert!(out.join("p99_vs_pairs_524288b_2ms.svg").exists());
    let html = read(&out.join("report.html"));
    assert!(html.contains("troupe one_connection") && html.contains("erlang (one connection)"), "{html}");
}

#[test]
fn sweep_plots_p99_against_pairs_per_transport() {
    let lab = TempLab::new("sweep");
    let out = &lab.out;
    let o = lab.run(
        &["lab", "sweep", "latency"],
        &[
            &["--set", "pairs=1,2", "--set", "transport=one_connection,parallel_affinity"],
            &["--set", "messages=10", "--set", "rtt_ms=0"],
        ],
    );
    let ctx = ctx(&o);
    assert_eq!(o.status.code(), Some(0), "{ctx}");
    let csv = read(&out.join("sweep.csv"));
    assert_eq!(csv.lines().count(), 1 + 4, "{csv}");
    assert_eq!(csv.matches(",ok,").count(), 4, "{csv}");
    let svg = read(&out.join("p99_vs_pairs_524288b_0ms.svg"));
    assert!(svg.contains("troupe one_connection") && svg.contains("troupe parallel_affinity"), "one line each");
}
