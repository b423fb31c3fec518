//! `[net_faults]` end to end through the real binary (crate troupe_lab::netfaults). At the
//! runtime layer (`layer = "runtime"`, troupe-remote's own injection): an iot run
//! of real node processes on loopback with frames dropped and delayed and one device process
//! partitioned for a second completes, its node processes emit `fault_injected` with the
//! schedule's ids, and `summary.json` counts the dropped frames; the same for a distributed
//! chat run with a server group partitioned (which may end `degraded`, saying why), and for a kv run with a store node partitioned; a
//! peer runtime given the section is refused before anything starts. At the network layer (the
//! default; crate troupe_lab::netlayer, root needed): a distributed chat run whose node processes
//! sit in their own namespaces, with packets lost and a server group cut off in the hub.

mod support;
use support::lab::{assert_success, events, manifest, sets, summary, text, TempLab};

/// Runs `workload` with `--set` each of `kv`, asserts the run is ok, and returns its events and
/// summary.
fn run_ok(workload: &str, kv: &[&str]) -> (Vec<serde_json::Value>, serde_json::Value) {
    run_completed(workload, kv, false)
}

/// Runs `workload` with `--set` each of `kv`, asserts the run completed (`ok`, or `degraded` with exit 5
/// and its reasons in `summary.json` when `may_degrade`), and returns its events and summary.
fn run_completed(workload: &str, kv: &[&str], may_degrade: bool) -> (Vec<serde_json::Value>, serde_json::Value) {
    let lab = TempLab::new("run");
    let out = &lab.out;
    let o = lab.run(&["lab", "run", workload], &[&sets(kv)]);
    let m = manifest(out);
    let summary = summary(out);
    let ctx = format!("{}\n{}\n{m}", text(&o.stdout), text(&o.stderr));
    if may_degrade && m["status"] == "degraded" {
        assert_eq!(o.status.code(), Some(5), "{ctx}");
        assert!(!summary["degraded"].as_array().unwrap().is_empty(), "{summary}");
    } else {
        assert_eq!(o.status.code(), Some(0), "{ctx}");
        assert_eq!(m["status"], "ok", "{ctx}");
    }
    (events(&out.join("events.jsonl")), summary)
}

const NET: &str = "devices = 20\ndevice_processes = 2\nduration_s = 3\nwarmup_s = 1\n\
                   [net_faults]\nlayer = \"runtime\"\ndrop_pct = 5.0\ndelay_ms = [0, 5]\n\
                   partitions = [ { at_ms = 500, duration_ms = 1000, nodes = [1] } ]\n";

#[test]
fn an_iot_run_with_drops_and_a_partition_completes_and_reports_them() {
    let lab = TempLab::new("run");
    let cfg = lab.path().join("net.toml");
    std::fs::write(&cfg, NET).unwrap();
    let out = &lab.out;
    let o = lab.run(&["lab", "run", "iot", "--config", cfg.to_str().unwrap()], &[]);
    assert_success(&o);
    let m = manifest(out);
    assert_eq!(m["status"], "ok", "{m}");
    assert_eq!(m["config"]["net_faults"]["drop_pct"], 5.0, "{m}");

    // The schedule's network lines: node 1 is devices-0 (servers first, then device processes).
    let sched = events(&out.join("schedule.jsonl"));
    let ids: Vec<&str> = sched.iter().filter_map(|l| l["id"].as_str()).collect();
    assert_eq!(ids, ["net-drop", "net-delay", "net-part-0-1"], "{sched:?}");

    let evs = events(&out.join("events.jsonl"));
    let injected = |id: &str| -> Vec<&serde_json::Value> {
        evs.iter().filter(|e| e["ev"] == "fault_injected" && e["id"] == id).collect()
    };
    // Every node process (server-0, devices-0, devices-1) applied the drop and delay rule.
    for id in ["net-drop", "net-delay"] {
        let mut targets: Vec<&str> = injected(id).iter().filter_map(|e| e["target"].as_str()).collect();
        targets.sort_unstable();
        assert_eq!(targets, ["devices-0", "devices-1", "server-0"], "{id}");
    }
    let part = injected("net-part-0-1");
    assert_eq!(part.len(), 1, "{part:?}");
    assert_eq!((part[0]["kind"].as_str(), part[0]["target"].as_str()), (Some("partition"), Some("devices-0")));
    assert_eq!(part[0]["duration_ms"], 1000);

    let summary = summary(out);
    assert!(summary["net_dropped_frames"].as_u64().unwrap() > 0, "{summary}");
    assert_eq!(summary["net_faults_injected"], 7, "{summary}");
    // The network faults are not counted as the workload's kills.
    assert_eq!(summary["planned_kills"], 0, "{summary}");
}

#[test]
fn a_distributed_chat_run_with_drops_and_a_server_partition_at_the_runtime_layer_completes_and_reports_them() {
    let kv = [
        "net_faults.layer=runtime",
        "deployment=distributed",
        "num_supervisor=2",
        "chats_per_sup=3",
        "clients_per_server=3",
        "clients_per_process=9",
        "test_duration_secs=3",
        "warmup_s=1",
        "net_faults.drop_pct=2",
        "net_faults.partitions=[{at_ms=500, duration_ms=1000, nodes=[0]}]",
    ];
    // Cut off for a second, a server group's chats cannot always be reached by their
    // injectors (a skipped fault) nor rejoined in time: the run may be degraded, and says so.
    let (evs, summary) = run_completed("chat", &kv, true);
    let (due, logged) = (summary["expected_detections"].as_u64().unwrap(), summary["detections"].as_u64().unwrap());
    assert!(logged <= due, "{summary}");
    let faults = ["injected_faults", "skipped_faults", "missing_faults"].map(|k| summary[k].as_u64().unwrap());
    assert_eq!(faults.iter().sum::<u64>(), summary["planned_faults"].as_u64().unwrap(), "{summary}");
    // Node 0 is server-0 (server groups first, then client groups); it announces its cut.
    let part: Vec<&serde_json::Value> =
        evs.iter().filter(|e| e["ev"] == "fault_injected" && e["id"] == "net-part-0-0").collect();
    assert_eq!(part.len(), 1, "{part:?}");
    assert_eq!(part[0]["target"], "server-0");
    let drops = evs.iter().filter(|e| e["ev"] == "fault_injected" && e["id"] == "net-drop").count();
    assert_eq!(drops, 4, "server-0, server-1, clients-0 and clients-1 each apply the drop rule");
    assert!(summary["net_dropped_frames"].as_u64().unwrap() > 0, "{summary}");
}

#[test]
fn a_kv_run_with_drops_and_a_store_node_partitioned_completes_and_reports_them() {
    let kv = [
        "duration_s=2",
        "concurrency=2",
        "object_bytes=65536",
        "vnodes=8",
        "net_faults.layer=runtime",
        "net_faults.drop_pct=5",
        "net_faults.delay_ms=[0, 3]",
        "net_faults.partitions=[{at_ms=300, duration_ms=800, nodes=[1]}]",
    ];
    let (evs, summary) = run_ok("kv", &kv);
    let injected = |id: &str| -> Vec<String> {
        let mut t: Vec<String> = evs
            .iter()
            .filter(|e| e["ev"] == "fault_injected" && e["id"] == id)
            .filter_map(|e| e["target"].as_str().map(str::to_string))
            .collect();
        t.sort_unstable();
        t
    };
    // The three store nodes apply the drop and delay rule; the orchestrator (clients) does not.
    for id in ["net-drop", "net-delay"] {
        assert_eq!(injected(id), ["node-0", "node-1", "node-2"], "{id}");
    }
    assert_eq!(injected("net-part-0-1"), ["node-1"], "node 1 announces its cut");
    // Every store node reports what its node dropped; none reports an error.
    let finished: Vec<&serde_json::Value> = evs.iter().filter(|e| e["ev"] == "run_finished").collect();
    assert_eq!(finished.len(), 4, "the orchestrator and three store nodes: {finished:?}");
    assert!(finished.iter().all(|f| f["errors"] == 0), "{finished:?}");
    assert!(summary["net_dropped_frames"].as_u64().unwrap() > 0, "{summary}");
    assert_eq!(summary["net_faults_injected"], 7, "{summary}");
    assert!(summary["ops"].as_u64().unwrap() > 0, "{summary}");
}

#[test]
fn a_peer_runtime_given_net_faults_is_refused_before_anything_starts() {
    let lab = TempLab::new("run");
    let cfg = lab.path().join("net.toml");
    std::fs::write(&cfg, NET).unwrap();
    let out = &lab.out;
    let o = lab.run(&["lab", "run", "iot", "--runtime", "akka", "--config", cfg.to_str().unwrap()], &[]);
    assert_ne!(o.status.code(), Some(0));
    let err = text(&o.stderr);
    assert!(err.contains("net_faults") && err.contains("akka") && err.contains("unsupported"), "{err}");
    assert!(!out.exists(), "a refused run made its folder");
}

/// Whether this host can run the network layer; a loud SKIPPED line otherwise, or a failure
/// when TROUPE_TEST_REQUIRE_NETNS=1 (scripts/test.sh sets it when it runs as root).
fn netns_host(test: &str) -> bool {
    match troupe_lab::netlayer::check_host() {
        Ok(()) => true,
        Err(why) => {
            assert!(std::env::var("TROUPE_TEST_REQUIRE_NETNS").as_deref() != Ok("1"), "{test}: {why}");
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "\n*** SKIPPED {test}: {why} ***\n");
            false
        }
    }
}

#[test]
fn a_distributed_chat_run_at_the_network_layer_loses_packets_and_cuts_a_server_group_in_the_hub() {
    if !netns_host("chat at the network layer") {
        return;
    }
    let kv = [
        "deployment=distributed",
        "num_supervisor=2",
        "chats_per_sup=3",
        "clients_per_server=3",
        "clients_per_process=9",
        "test_duration_secs=3",
        "warmup_s=1",
        "net_faults.drop_pct=2",
        "net_faults.partitions=[{at_ms=500, duration_ms=1000, nodes=[0]}]",
    ];
    let lab = TempLab::new("run");
    let out = &lab.out;
    let o = lab.run(&["lab", "run", "chat"], &[&sets(&kv)]);
    let m = manifest(out);
    let summary = summary(out);
    let ctx = format!("{}\n{}\n{m}", text(&o.stdout), text(&o.stderr));
    // A server group cut off for a second may leave detections undone: degraded, saying so.
    assert!(m["status"] == "ok" || m["status"] == "degraded", "{ctx}");
    let evs = events(&out.join("events.jsonl"));
    // Rule 4: every node process ran in its own namespace, at its own address.
    let netns: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("netns.json")).unwrap()).unwrap();
    let names: Vec<&str> = netns["nodes"].as_array().unwrap().iter().map(|n| n["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["server-0", "server-1", "clients-0", "clients-1"]);
    assert_eq!(netns["nodes"][0]["addr"], "10.232.1.2");
    // Rule 7: the layer itself carried out the lines, once each, stamped by node `network`.
    let by_layer = |id: &str| {
        evs.iter().filter(|e| e["ev"] == "fault_injected" && e["id"] == id && e["node"] == "network").count()
    };
    assert_eq!((by_layer("net-drop"), by_layer("net-part-0-0")), (1, 1), "{ctx}");
    let part = evs.iter().find(|e| e["id"] == "net-part-0-0").unwrap();
    assert_eq!(part["target"], "server-0");
    // No node process applied runtime-level faults: the program's schedule had no network lines.
    assert!(!evs.iter().any(|e| e["ev"] == "fault_injected" && e["node"] != "network" && e["kind"] == "partition"));
    assert_eq!(summary["net_dropped_frames"], 0, "{summary}");
    // Rule 8: counted at the hub.
    let n = |k: &str| summary[k].as_u64().unwrap_or_else(|| panic!("{k} missing: {summary}"));
    assert!(n("net_packets_seen") > 0 && n("net_packets_lost") > 0 && n("net_packets_cut") > 0, "{summary}");
    assert_eq!(n("net_packets_dropped"), n("net_packets_lost") + n("net_packets_cut"));
    // Rule 3: the namespaces are gone once the run ended.
    let list = std::process::Command::new("ip").args(["netns", "list"]).output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    let coord = netns["coordinator"]["netns"].as_str().unwrap();
    assert!(!list.lines().any(|l| l.split_whitespace().next() == Some(coord)), "{coord} is still there:\n{list}");
}

#[test]
fn an_iot_run_at_the_network_layer_restarts_killed_servers_in_their_own_namespaces() {
    if !netns_host("iot at the network layer") {
        return;
    }
    let kv = [
        "servers=2",
        "devices=20",
        "device_processes=2",
        "duration_s=5",
        "warmup_s=1",
        "server_mttf_s=2",
        "restart_s=1",
        "net_faults.partitions=[{at_ms=500, duration_ms=800, nodes=[2]}]",
    ];
    // No loss here: a restarted server whose handshake packets are lost may give up, which is
    // the network's doing, not what this test pins (loss is pinned by the chat test above).
    let (evs, summary) = run_completed("iot", &kv, true);
    // A killed server starts again inside its namespace, at its fixed address there.
    let starts = |node: &str| evs.iter().filter(|e| e["ev"] == "run_started" && e["node"] == node).count();
    assert!(starts("server-0") + starts("server-1") > 2, "no server was restarted: {summary}");
    let part = evs.iter().find(|e| e["ev"] == "fault_injected" && e["id"] == "net-part-0-2").expect("the cut");
    assert_eq!((part["node"].as_str(), part["target"].as_str()), (Some("network"), Some("devices-0")));
    let n = |k: &str| summary[k].as_u64().unwrap_or_else(|| panic!("{k} missing: {summary}"));
    assert!(n("net_packets_seen") > 0 && n("net_packets_cut") > 0, "{summary}");
    assert_eq!(n("net_packets_lost"), 0, "{summary}");
}

/// Rule 9 of the network layer: a delay due at 0 is the network's round trip for the whole run,
/// in force before the window opens (the window start reaches the lab only when the program's
/// `ready` line is flushed, which may be late). Every operation of a kv echo run with 10 ms each
/// way takes at least the 20 ms round trip; before this, the first half second ran undelayed.
#[test]
fn a_kv_run_at_the_network_layer_pays_the_round_trip_on_every_operation() {
    if !netns_host("kv delay at the network layer") {
        return;
    }
    let kv = [
        "service=echo",
        "duration_s=2",
        "concurrency=1",
        "object_bytes=1024",
        "vnodes=8",
        "net_faults.delay_ms=[10, 10]",
    ];
    let (evs, summary) = run_ok("kv", &kv);
    let lat: Vec<i64> = evs.iter().filter(|e| e["ev"] == "op").filter_map(|e| e["latency_us"].as_i64()).collect();
    assert!(lat.len() >= 20, "{summary}");
    let fast: Vec<&i64> = lat.iter().filter(|&&us| us < 20_000).collect();
    assert!(fast.is_empty(), "{} of {} operations beat the 20 ms round trip: {fast:?}", fast.len(), lat.len());
    let delay = evs.iter().find(|e| e["ev"] == "fault_injected" && e["id"] == "net-delay").expect("a delay line");
    assert_eq!(delay["node"], "network");
}
