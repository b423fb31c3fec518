//! The example workload end to end: the binary runs itself as the system under test through
//! the lab core, and the run folder holds what the core promises for any workload.

use std::process::Command;

fn example() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_example-custom-workload"));
    c.env_remove("TROUPE_CONFIG").env_remove("TROUPE_EVENTS").env_remove("TROUPE_SCHEDULE");
    c
}

#[test]
fn the_example_workload_runs_end_to_end_and_counts_its_kills_and_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("echo");
    let out = example().arg(&dir).args(["requests=200", "kills=2"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["workload"], "echo");
    assert_eq!(
        (s["planned_kills"].as_u64(), s["kills"].as_u64(), s["restarts"].as_u64()),
        (Some(2), Some(2), Some(2)),
        "{s}"
    );
    assert_eq!(s["replies"].as_u64().unwrap() + s["lost"].as_u64().unwrap(), 200, "{s}");
    // Lost requests would make the run degraded, never silently ok.
    let expect = if s["lost"] == 0 { "ok" } else { "degraded" };
    assert_eq!(s["status"], expect, "{s}");
    let sched = std::fs::read_to_string(dir.join("schedule.jsonl")).unwrap();
    assert_eq!(sched.lines().count(), 2, "{sched}");
    assert!(std::fs::read_to_string(dir.join("report.html")).unwrap().contains("planned"));
}

#[test]
fn a_bad_key_is_refused_with_the_key_named() {
    let tmp = tempfile::tempdir().unwrap();
    let out = example().arg(tmp.path().join("x")).arg("kils=2").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("kils") && stderr.contains("did you mean `kills`?"), "{stderr}");
}
