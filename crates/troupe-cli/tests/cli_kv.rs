//! `troupe lab run|compare kv` through the real binary (three real node processes plus the
//! client process on loopback): a short Troupe run per transport writes `summary.json` with the
//! contract's keys and `kv.csv` with one row per operation, on a full mesh, client-server
//! (node 0 the server) and HyParView; the Erlang peer does the same on a full mesh and refuses
//! any transport but `one_connection` and any overlay but `full_mesh` naming the key; an
//! overlay with faults is refused; a comparison writes the side-by-side table.
//!
//! The Erlang tests skip loudly without `erl` unless TROUPE_TEST_REQUIRE_ERLANG=1.

mod support;
use support::lab::{assert_run_failed_naming, ctx, erlang_or_skip, json, read, text, TempLab};

const SHORT: &[&str] =
    &["--set", "duration_s=1", "--set", "concurrency=2", "--set", "object_bytes=65536", "--set", "vnodes=8"];

/// Runs one short point and checks the run folder against the contract; its summary.
fn short_run(runtime: &str, service: &str, transport: &str) -> serde_json::Value {
    short_run_over(runtime, service, transport, "full_mesh")
}

/// [`short_run`] with `overlay`.
fn short_run_over(runtime: &str, service: &str, transport: &str, overlay: &str) -> serde_json::Value {
    let lab = TempLab::new("run");
    let out = &lab.out;
    let point = [format!("transport={transport}"), format!("service={service}"), format!("overlay={overlay}")];
    let o = lab.run(
        &["lab", "run", "kv", "--runtime", runtime],
        &[&["--set", &point[0], "--set", &point[1], "--set", &point[2]], SHORT],
    );
    let err = std::fs::read_to_string(out.join("stderr.txt")).unwrap_or_default();
    let ctx = format!("{runtime} {service} {transport}: {}\n{}\n{err}", text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{ctx}");
    assert_eq!(json(&out.join("manifest.json"))["status"], "ok", "{ctx}");
    let s = json(&out.join("summary.json"));
    for k in ["p50", "p99", "mean"] {
        assert!(s["latency_ms"][k].as_f64().unwrap_or(-1.0) > 0.0, "latency_ms.{k}: {ctx}");
    }
    let ops = s["ops"].as_u64().unwrap();
    assert!(ops >= 2, "{ctx}");
    assert_eq!(s["failed_ops"], 0, "{ctx}");
    // Closed loop: each of the 2 clients issues its next operation when the last one is
    // answered, so Little's law bounds the reading: clients busy = ops/s x mean latency is
    // at most 2 (plus the window's edges), and well above 0 unless the count is wrong.
    let (ops_s, mean) = (s["ops_per_s"].as_f64().unwrap(), s["latency_ms"]["mean"].as_f64().unwrap());
    let busy = ops_s * mean / 1000.0;
    assert!((0.2 * 2.0..=1.1 * 2.0).contains(&busy), "{ops_s} ops/s x {mean} ms = {busy} clients busy of 2: {ctx}");
    assert_eq!(s["concurrency"], 2, "{ctx}");
    assert_eq!(s["object_bytes"], 65536, "{ctx}");
    assert_eq!(s["service"], service, "{ctx}");
    assert_eq!(s["transport"], transport, "{ctx}");
    assert_eq!(s["overlay"], overlay, "{ctx}");
    let csv = read(&out.join("kv.csv"));
    assert_eq!(csv.lines().next(), Some("client,seq,op,latency_us,ok"), "{csv}");
    assert_eq!(csv.lines().count() as u64, 1 + ops, "{csv}");
    if service == "kv" {
        assert!(s["gets"].as_u64().unwrap() + s["puts"].as_u64().unwrap() == ops, "{s}");
        // Anti-entropy and ring gossip ran between the store nodes during the second.
        assert!(s["nodes"]["digests_sent"].as_u64().unwrap_or(0) > 0, "{s}");
        assert!(s["nodes"]["gossip_received"].as_u64().unwrap_or(0) > 0, "{s}");
    } else {
        assert_eq!(s["echoes"].as_u64().unwrap(), ops, "{s}");
    }
    s
}

#[test]
fn troupe_channels_kv_run_writes_summary_and_csv() {
    short_run("troupe", "kv", "channels");
}

#[test]
fn troupe_one_connection_kv_and_echo_runs() {
    short_run("troupe", "kv", "one_connection");
    short_run("troupe", "echo", "channels");
}

#[test]
fn troupe_kv_runs_over_client_server_through_node_0() {
    let s = short_run_over("troupe", "kv", "channels", "client_server");
    // The client node's sessions: node 0 (the server) directly, nodes 1 and 2 through it.
    let peers = s["route"]["peers"].as_object().unwrap_or_else(|| panic!("no route: {s}"));
    assert_eq!(peers.len(), 3, "{s}");
    assert_eq!(s["routed_sessions"], 2, "{s}");
    let hub = peers.iter().find(|(_, v)| *v == "direct").map(|(k, _)| k.clone()).unwrap();
    assert_eq!(peers.values().filter(|v| **v == hub.as_str()).count(), 2, "{s}");
}

#[test]
fn troupe_kv_runs_over_hyparview() {
    let s = short_run_over("troupe", "echo", "one_connection", "hyparview");
    let peers = s["route"]["peers"].as_object().unwrap_or_else(|| panic!("no route: {s}"));
    assert_eq!(peers.len(), 3, "{s}");
    for (addr, via) in peers {
        assert!(via == "direct" || (via.as_str() != Some(addr) && peers.contains_key(via.as_str().unwrap())), "{s}");
    }
}

#[test]
fn an_overlay_with_faults_is_refused_and_erlang_refuses_any_overlay() {
    let lab = TempLab::new("run");
    let o = lab.run(&["lab", "run", "kv"], &[&["--set", "overlay=hyparview", "--set", "nemesis=kill"], SHORT]);
    assert_eq!(o.status.code(), Some(2), "{}", ctx(&o));
    assert!(text(&o.stderr).contains("overlay"), "{}", ctx(&o));
    if !erlang_or_skip("an_overlay_with_faults_is_refused_and_erlang_refuses_any_overlay") {
        return;
    }
    let lab = TempLab::new("run");
    let out = &lab.out;
    let o = lab.run(
        &["lab", "run", "kv", "--runtime", "erlang"],
        &[&["--set", "overlay=client_server", "--set", "transport=one_connection"], SHORT],
    );
    assert_run_failed_naming(&o, out, &["config key overlay = \"client_server\"", "\"full_mesh\""]);
}

#[test]
fn erlang_kv_and_echo_runs_write_summary_and_csv() {
    if !erlang_or_skip("erlang_kv_and_echo_runs_write_summary_and_csv") {
        return;
    }
    short_run("erlang", "kv", "one_connection");
    short_run("erlang", "echo", "one_connection");
}

#[test]
fn erlang_refuses_channels_naming_the_key() {
    if !erlang_or_skip("erlang_refuses_channels_naming_the_key") {
        return;
    }
    let lab = TempLab::new("run");
    let out = &lab.out;
    let o = lab.run(&["lab", "run", "kv", "--runtime", "erlang"], &[&["--set", "transport=channels"], SHORT]);
    assert_run_failed_naming(&o, out, &["config key transport = \"channels\"", "\"one_connection\""]);
}

#[test]
fn compare_puts_troupe_next_to_erlang() {
    if !erlang_or_skip("compare_puts_troupe_next_to_erlang") {
        return;
    }
    let lab = TempLab::new("cmp");
    let out = &lab.out;
    let o = lab.run(
        &["lab", "compare", "kv", "--runtimes", "troupe,erlang"],
        &[&["--set", "transport=one_connection"], SHORT],
    );
    let ctx = ctx(&o);
    assert_eq!(o.status.code(), Some(0), "{ctx}");
    let cmp = read(&out.join("compare.csv"));
    assert_eq!(cmp.lines().count(), 1 + 2, "one point x two runtimes: {cmp}");
    assert_eq!(cmp.matches(",ok,").count(), 2, "{cmp}");
    let stdout = text(&o.stdout);
    assert!(stdout.contains("troupe one_connection") && stdout.contains("erlang"), "the table is printed: {ctx}");
    assert!(stdout.contains("p99 ms"), "{ctx}");
}
