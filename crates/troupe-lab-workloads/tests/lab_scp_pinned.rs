//! SCP moved onto the workload plug-in with the same outputs: the fixtures were written by
//! the lab before the move (commit 5b41050, `troupe lab run scp --set duration_s=12 --set
//! warmup_s=0 --set pairs=64 --set supervisors=8 --set pattern=P --set failure_rate=5 --set
//! seed=7 --set injector=thread`), and today's lab must give the same schedules byte for byte
//! and rebuild the same `scp.csv` from the same recorded run. (`injector = "thread"` is
//! `in_process` today; the recorded manifest keeps the old word, which still reads back.)
//!
//! One change since, on purpose: schedule rule 7 (no two kills of one instant hit one server)
//! moved the kills of the `random` and `burst` fixtures that hit a server already hit at that
//! instant (in `random`, `f-173` and `f-183`), and nothing else.

use std::path::PathBuf;

use troupe_lab::schedule::to_jsonl;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scp-pinned").join(name)
}

fn config(pattern: &str) -> troupe_lab::config::Config {
    let mut b = troupe_lab_workloads::registry().builder("scp").unwrap();
    for s in
        ["duration_s=12", "warmup_s=0", "pairs=64", "supervisors=8", "failure_rate=5", "seed=7", "injector=in_process"]
    {
        b.apply_set(s);
    }
    b.apply_set(&format!("pattern={pattern}"));
    if pattern == "progressive" {
        b.apply_set("recovery=false");
    }
    b.build().unwrap()
}

#[test]
fn scp_schedules_are_byte_for_byte_what_the_lab_wrote_before_the_plugin() {
    for pattern in ["random", "burst", "progressive"] {
        let want = std::fs::read_to_string(fixture(&format!("{pattern}.schedule.jsonl"))).unwrap();
        let got = to_jsonl(&troupe_lab::workload::schedule_of(&troupe_lab_workloads::scp::Scp, &config(pattern)));
        assert!(!want.is_empty());
        if pattern == "progressive" {
            assert_eq!(got, want, "pattern {pattern}");
            continue;
        }
        let (got, want): (Vec<&str>, Vec<&str>) = (got.lines().collect(), want.lines().collect());
        assert_eq!(got.len(), want.len());
        // The old schedule's repeats: a kill whose (instant, group, slot) an earlier kill had.
        let mut seen = std::collections::HashSet::new();
        let repeats: Vec<&str> = want.iter().filter(|l| !seen.insert(target(l))).map(|l| id_of(l)).collect();
        let moved: Vec<&str> = got.iter().zip(&want).filter(|(g, w)| g != w).map(|(_, w)| id_of(w)).collect();
        assert_eq!(moved, repeats, "pattern {pattern}: rule 7 moves exactly the repeats");
        assert!(!moved.is_empty(), "pattern {pattern}: the fixture has repeats to move");
        if pattern == "random" {
            assert_eq!(moved, ["f-173", "f-183"]);
        }
        let mut seen = std::collections::HashSet::new();
        assert!(got.iter().all(|l| seen.insert(target(l))), "pattern {pattern}: no repeats left");
    }
}

/// A kill's (instant, group, slot).
fn target(line: &str) -> (Option<u64>, Option<u64>, Option<u64>) {
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    (v["at_ms"].as_u64(), v["group"].as_u64(), v["slot"].as_u64())
}

fn id_of(line: &str) -> &str {
    line.split("\"id\":\"").nth(1).and_then(|r| r.split('"').next()).unwrap()
}

#[test]
fn scp_csv_rebuilt_from_a_recorded_run_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    for (from, to) in [
        ("random.manifest.json", "manifest.json"),
        ("random.events.jsonl", "events.jsonl"),
        ("random.schedule.jsonl", "schedule.jsonl"),
    ] {
        std::fs::copy(fixture(from), dir.path().join(to)).unwrap();
    }
    troupe_lab::run_folder::rebuild_run(&troupe_lab_workloads::scp::Scp, dir.path(), None).unwrap();
    let want = std::fs::read_to_string(fixture("random.scp.csv")).unwrap();
    let got = std::fs::read_to_string(dir.path().join("scp.csv")).unwrap();
    assert_eq!(got.lines().next(), want.lines().next(), "same columns");
    assert_eq!(got, want, "same rows");
}
