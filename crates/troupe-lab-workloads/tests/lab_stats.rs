//! Statistics computed from recorded event files: mean, percent of ceiling, kills and
//! restarts per second, completeness, recovery after bursts, progressive steps.

mod support;

use troupe_lab::events;
use troupe_lab_workloads::scp::analysis::RunStats;

#[test]
fn mean_ceiling_kills_and_restarts() {
    // 10 pairs at 1000 ms: ceiling 10/s. 20% (exchanges) = 2 kills/s, in bursts of 2.
    let cfg = support::config(&[
        "pairs=10",
        "supervisors=2",
        "delay_ms=1000",
        "duration_s=10",
        "warmup_s=0",
        "pattern=burst",
        "failure_rate=20",
        "burst_size=2",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let counts = [10, 9, 10, 10, 8, 10, 10, 10, 10, 9];
    let sched = support::write_run(dir.path(), &cfg, &counts, troupe_lab::manifest::Status::Ok);
    assert_eq!(sched.len(), 20);
    let evs = events::read(&dir.path().join("events.jsonl")).unwrap();
    let st = RunStats::compute(&cfg, &evs, &sched, Some(10.0));
    assert_eq!(st.mean, 9.6);
    assert_eq!(st.ceiling, 10.0);
    assert!((st.pct_ceiling - 96.0).abs() < 1e-9);
    assert_eq!((st.kills, st.planned_kills, st.restarts), (20, 20, 20));
    assert!(st.seconds.iter().all(|r| r.kills == 2 && r.restarts == 2), "{:?}", st.seconds);
    assert_eq!(st.completeness_problem(&cfg), None);
    // Bursts every second; seconds 1, 4 and 9 fall below 99% of the baseline (9.9).
    let r = st.recovery.clone().unwrap();
    assert_eq!(r.bursts, 10);
    assert_eq!(r.recovered, 9, "the burst in the last second never sees a good second");
    assert_eq!(r.max_ms, 1000.0);
    assert_eq!(r.against, "baseline run");
}

#[test]
fn missing_seconds_or_run_finished_make_a_run_incomplete() {
    let cfg = support::config(&["pairs=4", "supervisors=1", "duration_s=5", "pattern=none"]);
    let sched = vec![];
    let text = support::events(&cfg, &sched, &[20, 20, 20]);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("e.jsonl");
    std::fs::write(&p, &text).unwrap();
    let st = RunStats::compute(&cfg, &events::read(&p).unwrap(), &sched, None);
    assert!(st.completeness_problem(&cfg).unwrap().contains("5 window seconds, got 3"));
    let no_finish: String = text.lines().filter(|l| !l.contains("run_finished")).map(|l| format!("{l}\n")).collect();
    let full = support::events(&cfg, &sched, &[20; 5]);
    let full_no_finish: String =
        full.lines().filter(|l| !l.contains("run_finished")).map(|l| format!("{l}\n")).collect();
    std::fs::write(&p, full_no_finish).unwrap();
    let st = RunStats::compute(&cfg, &events::read(&p).unwrap(), &sched, None);
    assert!(st.completeness_problem(&cfg).unwrap().contains("run_finished"));
    std::fs::write(&p, no_finish).unwrap();
    assert!(RunStats::compute(&cfg, &events::read(&p).unwrap(), &sched, None).completeness_problem(&cfg).is_some());
}

#[test]
fn progressive_steps_follow_the_alive_pairs() {
    // 100 pairs at 1000 ms (ceiling 100/s); 10% every 5 s from 5 s on, over 20 s.
    let cfg = support::config(&[
        "pairs=100",
        "supervisors=4",
        "delay_ms=1000",
        "duration_s=20",
        "pattern=progressive",
        "recovery=false",
        "failure_rate=10",
    ]);
    let counts: Vec<u64> = (0..20).map(|s| 100 - 10 * (s / 5)).collect();
    let dir = tempfile::tempdir().unwrap();
    let sched = support::write_run(dir.path(), &cfg, &counts, troupe_lab::manifest::Status::Ok);
    assert_eq!(sched.len(), 30);
    let st = RunStats::compute(&cfg, &events::read(&dir.path().join("events.jsonl")).unwrap(), &sched, None);
    let alive: Vec<u64> = st.steps.iter().map(|s| s.alive).collect();
    assert_eq!(alive, [100, 90, 80, 70]);
    for s in &st.steps {
        assert_eq!(s.measured, s.expected);
        assert_eq!(s.deviation_points, 0.0);
    }
    assert_eq!(st.restarts, 0);
}

#[test]
fn progressive_deviation_is_in_points_of_the_first_step() {
    let cfg = support::config(&[
        "pairs=100",
        "supervisors=1",
        "delay_ms=1000",
        "duration_s=10",
        "pattern=progressive",
        "recovery=false",
        "failure_rate=10",
    ]);
    let counts = [100, 100, 100, 100, 100, 95, 88, 88, 88, 88];
    let dir = tempfile::tempdir().unwrap();
    let sched = support::write_run(dir.path(), &cfg, &counts, troupe_lab::manifest::Status::Ok);
    let st = RunStats::compute(&cfg, &events::read(&dir.path().join("events.jsonl")).unwrap(), &sched, None);
    assert_eq!(st.steps.len(), 2);
    assert_eq!(st.steps[1].expected, 90.0);
    assert_eq!(st.steps[1].measured, 88.0, "the second the kills land in is skipped");
    assert!((st.steps[1].deviation_points + 2.0).abs() < 1e-9);
}
