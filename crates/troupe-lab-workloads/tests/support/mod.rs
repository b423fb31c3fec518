//! Test support: writes a recorded SCP run folder (manifest, schedule, events) from a config
//! and per-second counts, as a SUB would have left it, so statistics and reports can be
//! checked against known numbers.

#![allow(dead_code, unreachable_pub)]

use std::path::Path;

use serde_json::json;
use troupe_lab::config::Config;
use troupe_lab::machine::Machine;
use troupe_lab::manifest::{Manifest, Status};
use troupe_lab::schedule::{self, FaultAction};

pub const T0: i64 = 1_700_000_000_000_000;

pub fn config(sets: &[&str]) -> Config {
    let mut b = troupe_lab_workloads::registry().builder("scp").unwrap();
    for s in sets {
        b.apply_set(s);
    }
    b.build().unwrap()
}

fn line(ts: i64, ev: &str, extra: serde_json::Value) -> String {
    let mut v = json!({"ts_us": ts, "run": "fixture", "rt": "troupe", "node": "sub", "ev": ev});
    if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
        o.extend(e.clone());
    }
    v.to_string()
}

/// Events of a run whose window starts at `T0`: `counts[s]` exchanges in second s, every
/// scheduled fault carried out at its `at_ms` and (if `restart`) restarted 1 ms later.
pub fn events(cfg: &Config, sched: &[FaultAction], counts: &[u64]) -> String {
    let mut out = vec![
        line(T0 - 2_000_000, "run_started", json!({"workload": "scp", "config": cfg.to_json()})),
        line(T0 - 1_000_000, "ready", json!({"what": "pairs", "count": cfg.int("pairs")})),
    ];
    for a in sched {
        let ts = T0 + a.at_ms as i64 * 1000;
        out.push(line(
            ts,
            "fault_injected",
            json!({"id": a.id, "target": format!("g{}/s{}", a.group, a.slot), "kind": "kill"}),
        ));
        if a.restart {
            out.push(line(
                ts + 1000,
                "restarted",
                json!({"target": format!("g{}/s{}", a.group, a.slot), "attempt": 2}),
            ));
        }
    }
    for (s, c) in counts.iter().enumerate() {
        out.push(line(T0 + (s as i64 + 1) * 1_000_000 + 300, "throughput", json!({"second": s, "count": c})));
    }
    out.push(line(
        T0 + counts.len() as i64 * 1_000_000 + 5000,
        "run_finished",
        json!({"dropped_events": 0, "errors": 0, "skipped_faults": 0}),
    ));
    let mut with_ts: Vec<(i64, String)> = out
        .into_iter()
        .map(|l| (serde_json::from_str::<serde_json::Value>(&l).unwrap()["ts_us"].as_i64().unwrap(), l))
        .collect();
    with_ts.sort_by_key(|p| p.0);
    with_ts.into_iter().map(|p| p.1 + "\n").collect()
}

/// Writes a complete recorded run folder.
pub fn write_run(dir: &Path, cfg: &Config, counts: &[u64], status: Status) -> Vec<FaultAction> {
    std::fs::create_dir_all(dir).unwrap();
    let sched = troupe_lab_workloads::scp::schedule::scp_schedule(
        &troupe_lab_workloads::scp::config::ScpConfig::from_config(cfg),
    );
    schedule::write(&dir.join("schedule.jsonl"), &sched).unwrap();
    std::fs::write(dir.join("events.jsonl"), events(cfg, &sched, counts)).unwrap();
    let m = Manifest {
        format: 1,
        run_id: "fixture".into(),
        workload: "scp".into(),
        runtime: "troupe".into(),
        runtime_version: "troupe 0.1.0".into(),
        settings: Vec::new(),
        lab_version: "0.1.0".into(),
        config: cfg.to_json(),
        seed: cfg.int("seed") as u64,
        machine: Machine::detect(),
        git_commit: None,
        git_dirty: None,
        command: vec!["troupe".into(), "lab".into(), "run".into(), "scp".into()],
        started_at: "2023-11-14T22:13:18.000Z".into(),
        ended_at: Some("2023-11-14T22:13:40.000Z".into()),
        interrupted: false,
        status,
        reason: None,
        loadavg_start: None,
        loadavg_end: None,
        cpu_start: None,
        core_rtt_start_ns: None,
        load: None,
    };
    m.write(dir).unwrap();
    sched
}
