//! `troupe lab run|compare latency` through the real binary (real node processes and the
//! lab's relay process on loopback): a short Troupe run per transport writes `summary.json`
//! with the contract's keys and `latency.csv` with one row per message, every byte through
//! the relay, over a full mesh, client-server (node B reached through the hub) and HyParView;
//! the Erlang peer does the same on a full mesh and refuses any transport but
//! `one_connection` and any overlay but `full_mesh`, naming the key; a comparison writes the
//! side-by-side table.
//!
//! These live beside the binary's other tests because they need `troupe` itself (the Troupe
//! program starts node B and the relay as `troupe lab exec` processes). The Erlang tests skip
//! loudly without `erl` unless TROUPE_TEST_REQUIRE_ERLANG=1.

mod support;
use support::lab::{assert_run_failed_naming, ctx, erlang_or_skip, json, read, text, TempLab};

const SHORT: &[&str] = &["--set", "pairs=3", "--set", "messages=12", "--set", "rtt_ms=2"];

/// Runs one short point and checks the run folder against the contract; its summary.
fn short_run(runtime: &str, transport: &str) -> serde_json::Value {
    short_run_over(runtime, transport, "full_mesh")
}

/// [`short_run`] with `overlay`.
fn short_run_over(runtime: &str, transport: &str, overlay: &str) -> serde_json::Value {
    let lab = TempLab::new("run");
    let out = &lab.out;
    let point = [format!("transport={transport}"), format!("overlay={overlay}")];
    let o =
        lab.run(&["lab", "run", "latency", "--runtime", runtime], &[&["--set", &point[0], "--set", &point[1]], SHORT]);
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
    // (1,500 msg/s for 3 pairs at 2 ms; half that through a hub, two legs each way), and
    // Little's law ties throughput to the mean latency (pairs in flight = throughput x
    // latency), up to the window's edges.
    let (tput, mean) = (s["throughput_msgs_per_s"].as_f64().unwrap(), s["latency_ms"]["mean"].as_f64().unwrap());
    let legs = if s["routed_sessions"] == 1 { 2.0 } else { 1.0 };
    assert!(tput > 0.0 && tput <= 3.0 * 1000.0 / 2.0 / legs, "{tput} msg/s against a ceiling of 1500/{legs}: {ctx}");
    if legs == 2.0 {
        assert!(s["latency_ms"]["p50"].as_f64().unwrap() >= 4.0, "two legs, each through the relay: {ctx}");
    }
    let in_flight = tput * mean / 1000.0;
    assert!((0.2 * 3.0..=1.1 * 3.0).contains(&in_flight), "{in_flight} pairs in flight of 3: {ctx}");
    assert!(
        (s["throughput_mb_per_s"].as_f64().unwrap() - tput * 524_288.0 / 1e6).abs() < 1e-6 * tput.max(1.0),
        "{ctx}"
    );
    assert_eq!(s["messages"], 12, "{ctx}");
    assert_eq!(s["rtt_ms"], 2, "{ctx}");
    assert_eq!(s["transport"], transport, "{ctx}");
    assert_eq!(s["overlay"], overlay, "{ctx}");
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
fn troupe_runs_over_client_server_through_the_hub() {
    let s = short_run_over("troupe", "one_connection", "client_server");
    // Node A's sessions: the hub (its server) directly, node B through the hub.
    let peers = s["route"]["peers"].as_object().unwrap_or_else(|| panic!("no route: {s}"));
    assert_eq!(peers.len(), 2, "{s}");
    assert_eq!(s["routed_sessions"], 1, "{s}");
    let hub = peers.iter().find(|(_, v)| *v == "direct").map(|(k, _)| k.clone()).unwrap();
    assert!(peers.values().any(|v| *v == hub.as_str()), "node B is reached through the hub {hub}: {s}");
    // Every payload crossed the relay twice: into the hub, and out of it toward node B.
    assert!(s["relay"]["bytes_up_in"].as_u64().unwrap() >= 2 * 12 * 524_288, "{s}");
}

#[test]
fn troupe_runs_over_hyparview_and_says_how_its_sessions_went() {
    let s = short_run_over("troupe", "parallel_affinity", "hyparview");
    let peers = s["route"]["peers"].as_object().unwrap_or_else(|| panic!("no route: {s}"));
    // Three nodes and an active view of 5: every node ends up a neighbour of every other, but
    // node A may have reached node B through the hub before they were (a session keeps its
    // route): either way the route names a node of the run.
    assert_eq!(peers.len(), 2, "{s}");
    for (addr, via) in peers {
        assert!(via == "direct" || (via.as_str() != Some(addr) && peers.contains_key(via.as_str().unwrap())), "{s}");
    }
    assert!(s["routed_sessions"].as_u64().unwrap() <= 1, "{s}");
}

#[test]
fn erlang_refuses_an_overlay_naming_the_key() {
    if !erlang_or_skip("erlang_refuses_an_overlay_naming_the_key") {
        return;
    }
    let lab = TempLab::new("run");
    let out = &lab.out;
    let o = lab.run(&["lab", "run", "latency", "--runtime", "erlang"], &[&["--set", "overlay=hyparview"], SHORT]);
    assert_run_failed_naming(&o, out, &["config key overlay = \"hyparview\"", "\"full_mesh\""]);
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
