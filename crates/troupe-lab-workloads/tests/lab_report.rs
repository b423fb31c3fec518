//! Reports rebuilt from recorded folders (run and sweep), and what a folder that is not a run
//! gets.

mod support;

use troupe_lab::manifest::Status;
use troupe_lab::{sweep, ErrorKind};

#[test]
fn run_report_is_rebuilt_from_the_recorded_files() {
    let cfg = support::config(&[
        "pairs=100",
        "supervisors=4",
        "delay_ms=1000",
        "duration_s=20",
        "pattern=progressive",
        "recovery=false",
        "failure_rate=10",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let counts: Vec<u64> = (0..20).map(|s| 100 - 10 * (s / 5)).collect();
    support::write_run(dir.path(), &cfg, &counts, Status::Ok);
    let (m, _, st) = troupe_lab::run_folder::rebuild_run(&troupe_lab_workloads::scp::Scp, dir.path(), None).unwrap();
    assert_eq!(m.run_id, "fixture");
    let st = st.unwrap();
    assert_eq!(troupe_lab_workloads::scp::stats(st.as_ref()).unwrap().mean, 85.0);
    // Every run folder gets summary.json with the run's statistics.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["msg_per_s_mean"], 85.0);
    assert_eq!(summary["workload"], "scp");
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<svg") && html.contains("85.0 exchanges/s") && html.contains("Progressive steps"));
    assert!(html.contains(&m.machine.cpu_model.replace('&', "&amp;")));
    assert!(
        !html.contains("<script") && !html.contains("http://") || html.contains("xmlns=\"http://www.w3.org/2000/svg\""),
        "self-contained: no scripts, nothing fetched"
    );
    let csv = std::fs::read_to_string(dir.path().join("scp.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 21);
    assert!(rows[0].starts_with("run_id,runtime,pattern"));
    assert!(rows[6].contains(",5,90,100.0,90.000,"), "{}", rows[6]);
    assert!(dir.path().join("throughput.svg").is_file());
    // Rebuilding again gives the same bytes (nothing depends on the time of the rebuild).
    troupe_lab::run_folder::rebuild_run(&troupe_lab_workloads::scp::Scp, dir.path(), None).unwrap();
    assert_eq!(std::fs::read_to_string(dir.path().join("report.html")).unwrap(), html);
}

#[test]
fn a_folder_that_is_not_a_run_says_so() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello").unwrap();
    let e = troupe_lab::run_folder::rebuild_run(&troupe_lab_workloads::scp::Scp, dir.path(), None).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NotARun(_)));
    assert!(e.to_string().contains("is not a lab run or sweep folder"));
    let e = sweep::write_report(&troupe_lab_workloads::registry(), dir.path()).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NotARun(_)));
}

#[test]
fn sweep_report_computes_drops_against_the_ratio_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let spec = sweep::SweepSpec {
        workload: &troupe_lab_workloads::scp::Scp,
        config_file: None,
        sets: vec![
            "pairs=10".into(),
            "delay_ms=1000".into(),
            "duration_s=10".into(),
            "supervisors=10,1".into(),
            "failure_rate=0,20".into(),
            "pattern=burst,uniform".into(),
        ],
        runtimes: vec!["troupe".into()],
        reps: 1,
    };
    let grid = sweep::expand(&spec).unwrap();
    // 2 ratios x (1 shared baseline + 2 patterns at 20%) = 6 runs.
    assert_eq!(grid.points.len(), 6, "{:?}", grid.points.iter().map(|p| &p.name).collect::<Vec<_>>());
    std::fs::write(dir.path().join("sweep.json"), serde_json::to_string(&grid.file).unwrap()).unwrap();
    for p in &grid.points {
        let base = p.config.float("failure_rate") == 0.0;
        let counts = if base { vec![10; 10] } else { vec![9; 10] };
        support::write_run(&dir.path().join("runs").join(&p.name), &p.config, &counts, Status::Ok);
    }
    let rows = troupe_lab_workloads::scp::sweep_report::write_report(dir.path()).unwrap();
    let faulty: Vec<_> = rows.iter().filter(|r| r.cfg.as_ref().unwrap().failure_rate > 0.0).collect();
    assert_eq!(faulty.len(), 4);
    for r in faulty {
        assert_eq!(r.baseline, Some(10.0));
        assert!((r.drop_pct.unwrap() - 10.0).abs() < 1e-9);
    }
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains("Throughput vs failure rate, burst failures"));
    assert!(html.contains("Failure pattern comparison at 1:1"));
    assert!(html.contains("relative to the 0% baseline"));
    let csv = std::fs::read_to_string(dir.path().join("sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 7);
}
