//! `troupe lab run iot` through the real binary, each run small enough for a loaded 2-core
//! machine: a fault-free run (1 server, 2 device processes, 20 devices, 3 s window), a run with
//! device kills whose restarts give MTTR samples, a run with server kills and restarts at the
//! same address, and bad config refused before anything starts. After each run no process of
//! it is left.

use std::path::Path;

mod support;
use support::lab::{assert_success, assert_usage_error, events, manifest, read, sets, summary, TempLab};

fn count(evs: &[serde_json::Value], ev: &str) -> usize {
    evs.iter().filter(|e| e["ev"] == ev).count()
}

/// Processes whose environment names `dir` (the run's events file is under it); zombies excluded.
fn left_behind(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| s.contains(") Z "));
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        if !zombie && String::from_utf8_lossy(&env).contains(&needle) {
            out.push(pid);
        }
    }
    out
}

const SMALL: &[&str] =
    &["--set", "devices=20", "--set", "device_processes=2", "--set", "duration_s=3", "--set", "warmup_s=1"];

/// Runs iot with the small sets and `extra` into `lab.out`; asserts it is ok and left nothing
/// behind; its summary and events.
fn run(lab: &TempLab, extra: &[&str]) -> (serde_json::Value, Vec<serde_json::Value>) {
    let out = &lab.out;
    let o = lab.run(&["lab", "run", "iot"], &[SMALL, extra]);
    assert_success(&o);
    let m = manifest(out);
    assert_eq!(m["status"], "ok", "{m}");
    assert!(left_behind(out).is_empty(), "processes of the run are still alive: {:?}", left_behind(out));
    (summary(out), events(&out.join("events.jsonl")))
}

#[test]
fn a_fault_free_run_reports_per_second_from_every_process() {
    let lab = TempLab::new("run");
    let out = &lab.out;
    let (summary, evs) = run(&lab, &[]);
    assert!(summary["reports_per_s"].as_f64().unwrap() > 0.0, "{summary}");
    assert_eq!(summary["mttr_ms"]["count"], 0);
    let csv = read(&out.join("iot.csv"));
    assert_eq!(csv.lines().count(), 1 + 3, "{csv}");
    for node in ["orchestrator", "server-0", "devices-0", "devices-1"] {
        for ev in ["run_started", "run_finished"] {
            assert!(evs.iter().any(|e| e["node"] == node && e["ev"] == ev), "no {ev} from {node}");
        }
    }
    let ready: Vec<(String, i64)> = evs
        .iter()
        .filter(|e| e["ev"] == "ready")
        .map(|e| (e["what"].as_str().unwrap().to_owned(), e["count"].as_i64().unwrap()))
        .collect();
    assert!(ready.contains(&("servers".into(), 1)) && ready.contains(&("window".into(), 3)), "{ready:?}");
    assert_eq!(ready.iter().filter(|r| r.0 == "devices").map(|r| r.1).sum::<i64>(), 20);
    assert_eq!(count(&evs, "throughput"), 3);
    assert!(out.join("report.html").is_file() && out.join("throughput.svg").is_file());
}

#[test]
fn device_kills_give_reconnected_events_and_mttr_in_the_summary() {
    let lab = TempLab::new("run");
    let out = &lab.out;
    let (summary, evs) = run(&lab, &sets(&["duration_s=6", "client_mttf_s=2", "restart_s=1", "heartbeat_ms=100"]));
    let schedule = events(&out.join("schedule.jsonl"));
    let planned = schedule.len();
    assert!(planned > 0);
    // The schedule makes the counts exact: each kill carried out (a device is only killed
    // after its restart), each restart current on the server again (none unrecovered). A
    // kill restarts 1 s later if that is inside the 6 s window: every kill due by 5.5 s is
    // restarted, none due after 6 s (the half second between is the poll's slack).
    let due_by = |ms: u64| schedule.iter().filter(|a| a["at_ms"].as_u64().unwrap() + 1000 < ms).count();
    assert_eq!(count(&evs, "fault_injected"), planned, "{summary}");
    assert_eq!(summary["skipped_faults"], 0, "{summary}");
    let restarted = count(&evs, "restarted");
    assert!((due_by(5500)..=due_by(6000)).contains(&restarted), "{restarted} restarts: {summary}");
    assert_eq!(summary["kills_not_restarted"], planned - restarted, "{summary}");
    assert_eq!(summary["unrecovered"], 0, "{summary}");
    assert_eq!(summary["errors"], 0, "{summary}");
    assert_eq!(summary["degraded"], serde_json::json!([]), "{summary}");
    let reconnected: Vec<&serde_json::Value> = evs.iter().filter(|e| e["ev"] == "reconnected").collect();
    assert_eq!(reconnected.len(), restarted, "one reconnected per restart");
    for r in &reconnected {
        assert!(r["target"].as_str().unwrap().starts_with("device-") && r["by"] == "server-0", "{r}");
        assert!(r["ms"].as_f64().unwrap() > 0.0, "{r}");
    }
    assert_eq!(summary["mttr_ms"]["count"], reconnected.len());
    let (med, p99) = (summary["mttr_ms"]["median"].as_f64().unwrap(), summary["mttr_ms"]["p99"].as_f64().unwrap());
    assert!(med > 0.0 && p99 >= med, "{summary}");
    assert!(out.join("mttr.svg").is_file());
}

#[test]
fn server_kills_restart_the_server_at_its_address_and_devices_come_back() {
    let lab = TempLab::new("run");
    let extra = sets(&["servers=2", "duration_s=6", "server_mttf_s=3", "restart_s=1", "heartbeat_ms=100"]);
    let (summary, evs) = run(&lab, &extra);
    let kills: Vec<&serde_json::Value> = evs.iter().filter(|e| e["ev"] == "fault_injected").collect();
    assert!(!kills.is_empty() && kills.iter().all(|k| k["kind"] == "node_kill" && k["node"] == "orchestrator"));
    assert!(evs.iter().any(|e| e["ev"] == "restarted" && e["target"].as_str().unwrap().starts_with("server-")));
    // The last window second counts reports again: devices found a live owner.
    let last = evs.iter().filter(|e| e["ev"] == "throughput").max_by_key(|e| e["second"].as_i64()).unwrap();
    assert!(last["count"].as_i64().unwrap() > 0, "no reports in the last second: {summary}");
}

#[test]
fn a_drop_sweep_writes_its_table_and_states_the_expected_shapes() {
    let lab = TempLab::new("sweep");
    let out = &lab.out;
    let o = lab.run(&["lab", "sweep", "iot"], &[SMALL, &["--set", "drop_probability=0,0.5"]]);
    assert_success(&o);
    let csv = read(&out.join("sweep.csv"));
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(csv.starts_with("runtime,point,status,drop_probability"), "{csv}");
    let report = read(&out.join("report.html"));
    assert!(report.contains("reports/s vs drop_probability (2 points): monotone decreasing"), "no shape statement");
    assert!(out.join("iot-drop.svg").is_file());
    assert!(left_behind(out).is_empty());
}

#[test]
fn bad_config_is_refused_before_anything_starts() {
    let lab = TempLab::new("run");
    let o = lab.run(
        &["lab", "run", "iot"],
        &[&["--set", "drop_probability=0.95", "--set", "delay_min_ms=9", "--set", "delay_max_ms=1"]],
    );
    assert_usage_error(&o, &["drop_probability", "0..=0.9"]);
    assert!(!lab.out.join("events.jsonl").exists());
}
