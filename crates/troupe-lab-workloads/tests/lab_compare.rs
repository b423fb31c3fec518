//! Comparisons without running anything: the plan (baselines added, point names, focus
//! checked) and the report computed from recorded run folders with known numbers (each
//! runtime normalised to its own baseline, gaps marked, schedules checked byte for byte).

mod support;

use troupe_lab::compare::{self, CompareSpec};
use troupe_lab::manifest::{Manifest, Status};
use troupe_lab::{schedule, ErrorKind};

fn spec(sets: &[&str], runtimes: &[&str]) -> CompareSpec {
    CompareSpec {
        workload: &troupe_lab_workloads::scp::Scp,
        config_file: None,
        sets: sets.iter().map(|s| s.to_string()).collect(),
        runtimes: runtimes.iter().map(|s| s.to_string()).collect(),
        focus: None,
        reps: 1,
    }
}

#[test]
fn the_plan_adds_each_ratios_baseline_before_its_first_faulty_point() {
    let plan =
        compare::plan(&spec(&["pairs=64", "supervisors=64,1", "failure_rate=5,20", "pattern=random"], &["troupe"]))
            .unwrap();
    let names: Vec<&str> = plan.points.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "supervisors-64_failure_rate-0_pattern-none",
            "supervisors-64_failure_rate-5_pattern-random",
            "supervisors-64_failure_rate-20_pattern-random",
            "supervisors-1_failure_rate-0_pattern-none",
            "supervisors-1_failure_rate-5_pattern-random",
            "supervisors-1_failure_rate-20_pattern-random",
        ]
    );
    // A grid that has its baselines already gets no second copy.
    let with_zero =
        compare::plan(&spec(&["pairs=64", "supervisors=64,1", "failure_rate=0,5,20"], &["troupe"])).unwrap();
    assert_eq!(with_zero.points.len(), 6);
    assert_eq!(plan.file.configs.len(), 6);
    assert_eq!(plan.runs().len(), 6);
}

#[test]
fn a_focus_that_is_not_a_point_is_a_config_error() {
    let mut s = spec(&["failure_rate=5"], &["troupe"]);
    s.focus = Some("elsewhere".into());
    let e = compare::plan(&s).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::InvalidConfig(_)), "{e}");
    s.focus = Some("pattern-random_failure_rate-5".into());
    assert!(compare::plan(&s).is_ok());
}

#[test]
fn the_report_normalises_each_runtime_to_its_own_baseline_and_marks_gaps() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let sets = ["pairs=8", "supervisors=8", "duration_s=4", "warmup_s=0", "pattern=uniform", "failure_rate=10,20"];
    let plan = compare::plan(&spec(&sets, &["fast", "slow"])).unwrap();
    std::fs::write(dir.join(compare::FILE), serde_json::to_string(&plan.file).unwrap()).unwrap();
    std::fs::create_dir_all(dir.join("schedules")).unwrap();
    for p in &plan.points {
        let sched = troupe_lab::workload::schedule_of(&troupe_lab_workloads::scp::Scp, &p.config);
        schedule::write(&dir.join("schedules").join(format!("{}.jsonl", p.name)), &sched).unwrap();
    }
    // fast: 40 at 0%, 36 at 10%, 30 at 20%. slow: 20 at 0%, 18 at 10%, and its 20% run failed.
    let counts = [("fast", [40, 36, 30]), ("slow", [20, 18, 0])];
    for (rt, c) in counts {
        for (p, n) in plan.points.iter().zip(c) {
            let status = if rt == "slow" && n == 0 { Status::Failed } else { Status::Ok };
            let run = dir.join(rt).join(&p.name);
            support::write_run(&run, &p.config, &[n; 4], status);
            if status == Status::Failed {
                let mut m = Manifest::read(&run).unwrap();
                m.reason = Some("the child exited with status 1".into());
                m.write(&run).unwrap();
                std::fs::write(run.join("stderr.txt"), "boom").unwrap();
            }
        }
    }
    // One folder got another schedule: the report must say so.
    let odd = dir.join("fast").join(&plan.points[1].name).join("schedule.jsonl");
    std::fs::write(&odd, "").unwrap();
    let rows = troupe_lab_workloads::scp::compare_report::write_report(dir).unwrap();
    assert_eq!(rows.len(), 6);
    let get = |rt: &str, i: usize| rows.iter().find(|r| r.runtime == rt && r.point == plan.points[i].name).unwrap();
    assert_eq!(get("fast", 0).pct_baseline, Some(100.0));
    assert_eq!(get("fast", 1).pct_baseline, Some(90.0));
    assert_eq!(get("fast", 2).pct_baseline, Some(75.0));
    assert_eq!(get("slow", 1).pct_baseline, Some(90.0), "slow is normalised to its own 20/s, not to fast's 40/s");
    assert_eq!(get("slow", 1).drop_pct, Some(10.0));
    let gap = get("slow", 2);
    assert!(!gap.ok && gap.mean.is_none() && gap.status.contains("status 1"), "{gap:?}");
    assert_eq!(get("fast", 1).same_schedule, Some(false));
    assert_eq!(get("slow", 1).same_schedule, Some(true));
    // The kills of both runtimes at 10% carry the same ids (the fixture injects the schedule).
    assert_eq!(get("fast", 1).fault_ids, get("slow", 1).fault_ids);
    assert_eq!(get("slow", 1).fault_ids.as_ref().map(|s| s.len()), Some(get("slow", 1).planned_kills as usize));
    assert!(get("slow", 1).planned_kills > 0);
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<h2>Gaps</h2>"));
    assert!(html.contains(&format!("slow/{}/stderr.txt", plan.points[2].name)));
    assert!(html.contains("WARNING: these run folders do not hold their point&#39;s shared schedule"));
    assert!(html.contains("yes ("), "ids agree at the 10% point");
    let csv = std::fs::read_to_string(dir.join("compare.csv")).unwrap();
    assert!(csv
        .lines()
        .any(|l| l.starts_with(&format!("{},slow,", plan.points[1].name)) && l.contains(",90.000,10.000,")));
}

#[test]
fn each_baseline_is_its_own_reference_when_only_the_seed_differs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let plan =
        compare::plan(&spec(&["pairs=8", "supervisors=8", "duration_s=2", "failure_rate=0", "seed=1,2"], &["troupe"]))
            .unwrap();
    assert_eq!(plan.points.len(), 2);
    std::fs::write(dir.join(compare::FILE), serde_json::to_string(&plan.file).unwrap()).unwrap();
    for (p, n) in plan.points.iter().zip([100, 110]) {
        support::write_run(&dir.join("troupe").join(&p.name), &p.config, &[n; 2], Status::Ok);
    }
    let rows = troupe_lab_workloads::scp::compare_report::write_report(dir).unwrap();
    assert_eq!(rows.iter().map(|r| r.pct_baseline).collect::<Vec<_>>(), [Some(100.0), Some(100.0)]);
}

#[test]
fn a_baseline_below_a_fault_run_is_flagged() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let sets = ["pairs=8", "supervisors=8", "duration_s=4", "warmup_s=0", "pattern=uniform", "failure_rate=10,20"];
    let plan = compare::plan(&spec(&sets, &["noisy"])).unwrap();
    std::fs::write(dir.join(compare::FILE), serde_json::to_string(&plan.file).unwrap()).unwrap();
    // 30/s without faults, 33/s with 10% kills (the baseline run was slow), 27/s at 20%.
    for (p, n) in plan.points.iter().zip([30, 33, 27]) {
        support::write_run(&dir.join("noisy").join(&p.name), &p.config, &[n; 4], Status::Ok);
    }
    let rows = troupe_lab_workloads::scp::compare_report::write_report(dir).unwrap();
    let flagged: Vec<bool> = rows.iter().map(|r| r.baseline_below()).collect();
    assert_eq!(flagged, [false, true, false], "only the fault run above its baseline: {rows:?}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("110.0 (!)") && html.contains("Baseline below a fault run: noisy at"),
        "flagged in the report"
    );
    let csv = std::fs::read_to_string(dir.join("compare.csv")).unwrap();
    assert!(
        csv.lines().nth(1).unwrap().contains(",false,")
            && csv.lines().nth(2).unwrap().contains(",110.000,-10.000,true,"),
        "{csv}"
    );
}
