//! Repetitions and their statistics: Student's t quantiles and the mean's 95% confidence
//! interval on known data ([`troupe_lab::stats`] rules 1-4), repetition folder names and the
//! comparison's round-robin run order (sweep rule 6, compare rule 7), and kill-to-restart
//! latency from synthetic events ([`troupe_lab_workloads::scp::restart_latency`] rules 1-4).

mod support;

use serde_json::json;
use troupe_lab::compare::{self, CompareSpec};
use troupe_lab::events::{self, Event};
use troupe_lab::stats::{show_ci, t95, MeanCi};
use troupe_lab::sweep::{self, rep_name, split_rep};
use troupe_lab_workloads::scp::analysis::RunStats;
use troupe_lab_workloads::scp::restart_latency::{latencies, summarise};

#[test]
fn t_quantiles_match_the_tables() {
    // Two-sided 95% (0.975 one-sided) quantiles of Student's t, from the standard tables.
    for (df, t) in [(1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (29, 2.045), (30, 2.042)] {
        assert_eq!(t95(df), t, "df {df}");
    }
    // Beyond the table: the expansion agrees with the tables to 3 decimals.
    for (df, t) in [(40, 2.021), (60, 2.000), (120, 1.980)] {
        assert!((t95(df) - t).abs() < 1e-3, "df {df}: {} vs {t}", t95(df));
    }
    assert!(t95(31) < t95(30) && t95(31) > t95(40), "monotone across the table's end");
    assert!(t95(0).is_nan());
}

#[test]
fn mean_and_interval_of_known_samples() {
    // 1..=5: mean 3, s = sqrt(2.5), t(4) = 2.776 -> half = 2.776 * 1.5811 / sqrt(5) = 1.9629.
    let ci = MeanCi::of(&[5.0, 1.0, 4.0, 2.0, 3.0]).unwrap();
    assert_eq!((ci.mean, ci.n), (3.0, 5));
    let half = ci.half_width.unwrap();
    assert!((half - 1.9629).abs() < 1e-4, "{half}");
    assert!((ci.lo() - (3.0 - half)).abs() < 1e-12 && (ci.hi() - (3.0 + half)).abs() < 1e-12);
    assert_eq!(ci.show(2), "3.00 ± 1.96");
    // Two samples: t(1) = 12.706, s = |a - b| / sqrt(2) -> half = 12.706 * |a - b| / 2.
    let two = MeanCi::of(&[100.0, 104.0]).unwrap();
    assert!((two.half_width.unwrap() - 25.412).abs() < 1e-9);
    // Identical samples: an interval of width 0, not NaN.
    assert_eq!(MeanCi::of(&[7.0, 7.0, 7.0]).unwrap().half_width, Some(0.0));
}

#[test]
fn one_sample_prints_as_before_and_none_is_a_dash() {
    let one = MeanCi::of(&[5110.25]).unwrap();
    assert_eq!(one.half_width, None);
    assert_eq!((one.lo(), one.hi()), (5110.25, 5110.25));
    // Exactly what a report printed for a single run: the value at the table's precision.
    assert_eq!(one.show(1), format!("{:.1}", 5110.25));
    assert_eq!(show_ci(&[5110.25], 2), format!("{:.2}", 5110.25));
    assert!(MeanCi::of(&[]).is_none());
    assert_eq!(show_ci(&[], 1), "-");
}

#[test]
fn repetition_names_round_trip() {
    assert_eq!(rep_name("troupe_failure_rate-10", 1, 1), "troupe_failure_rate-10");
    for k in 1..=3 {
        let n = rep_name("troupe_failure_rate-10", k, 3);
        assert_eq!(n, format!("troupe_failure_rate-10_rep-{k}"));
        assert_eq!(split_rep(&n), ("troupe_failure_rate-10", k));
    }
    assert_eq!(split_rep("troupe_rep-x"), ("troupe_rep-x", 1));
    assert!(sweep::check_reps(0).is_err() && sweep::check_reps(sweep::MAX_REPS + 1).is_err());
    assert!(sweep::check_reps(1).is_ok());
}

fn spec(runtimes: &[&str], reps: u32) -> CompareSpec {
    CompareSpec {
        workload: &troupe_lab_workloads::scp::Scp,
        config_file: None,
        sets: vec!["pairs=4".into(), "supervisors=1".into(), "pattern=uniform".into(), "failure_rate=10".into()],
        runtimes: runtimes.iter().map(|s| s.to_string()).collect(),
        focus: None,
        reps,
    }
}

#[test]
fn comparison_repetitions_alternate_the_runtimes() {
    let one = compare::plan(&spec(&["troupe", "erlang", "akka"], 1)).unwrap();
    let names: Vec<String> = one.runs().into_iter().map(|p| p.name).collect();
    assert_eq!(
        names,
        [
            "troupe/pattern-none_failure_rate-0",
            "erlang/pattern-none_failure_rate-0",
            "akka/pattern-none_failure_rate-0",
            "troupe/pattern-uniform_failure_rate-10",
            "erlang/pattern-uniform_failure_rate-10",
            "akka/pattern-uniform_failure_rate-10",
        ],
        "without repetitions nothing changes"
    );
    let three = compare::plan(&spec(&["troupe", "erlang", "akka"], 3)).unwrap();
    let runs = three.runs();
    assert_eq!(runs.len(), 2 * 3 * 3);
    let first: Vec<(&str, u32)> = runs[..9].iter().map(|p| (p.runtime.as_str(), p.rep)).collect();
    assert_eq!(
        first,
        [
            ("troupe", 1),
            ("erlang", 1),
            ("akka", 1),
            ("erlang", 2),
            ("akka", 2),
            ("troupe", 2),
            ("akka", 3),
            ("troupe", 3),
            ("erlang", 3),
        ]
    );
    assert_eq!(runs[3].name, "erlang/pattern-none_failure_rate-0_rep-2");
    // Every point keeps its own config (and seed) in every repetition.
    assert!(runs[..9].iter().all(|p| p.config == runs[0].config));
    let json = serde_json::to_value(&three.file).unwrap();
    assert_eq!(json["reps"], 3);
    assert!(serde_json::to_value(&one.file).unwrap().get("reps").is_none(), "N = 1 writes no reps key");
}

fn ev(ts_us: i64, ev: &str, fields: serde_json::Value) -> Event {
    let mut line = json!({"ts_us": ts_us, "run": "r", "rt": "troupe", "node": "sub", "ev": ev});
    for (k, v) in fields.as_object().unwrap() {
        line[k] = v.clone();
    }
    events::parse_line(&line.to_string()).unwrap()
}

fn kill(ts: i64, target: &str) -> Event {
    ev(ts, "fault_injected", json!({"id": format!("f{ts}"), "target": target, "kind": "kill"}))
}

fn restart(ts: i64, target: &str) -> Event {
    ev(ts, "restarted", json!({"target": target, "attempt": 2}))
}

#[test]
fn restart_latency_pairs_each_restart_with_its_own_kill() {
    let evs = vec![
        kill(1_000_000, "g0/s0"),
        kill(1_000_100, "g0/s1"),
        restart(1_000_300, "g0/s1"), // 0.2 ms after its kill
        restart(1_000_500, "g0/s0"), // 0.5 ms
        restart(1_200_000, "g0/s2"), // no kill of g0/s2: not counted (rule 2)
        kill(2_000_000, "g0/s0"),
        restart(2_003_000, "g0/s0"), // 3 ms: the second kill of g0/s0, not the first
        kill(3_000_000, "g1/s0"),    // never restarted
        restart(2_999_000, "g1/s0"), // before that kill: not its restart
    ];
    let (lat, unmatched) = latencies(&evs);
    assert_eq!(lat, vec![0.2, 0.5, 3.0]);
    assert_eq!(unmatched, 1);
    // The kill never restarted is the run's last event: a censored sample of at least 0 ms,
    // so every statistic is a lower bound (rule 5); at the run's very end, it is no
    // `unrestarted` kill (the SUB stopped before it could be restarted).
    let s = summarise(&evs, &[]).unwrap();
    assert_eq!((s.n, s.p50, s.p99, s.max, s.unmatched_kills, s.unrestarted), (4, 0.35, 3.0, 3.0, 1, 0));
    // A second later (the run goes on), it is.
    let mut later = evs.clone();
    later.push(restart(4_000_001, "g9/s9"));
    assert_eq!(summarise(&later, &[]).unwrap().unrestarted, 1);
    assert_eq!(s.lower_bounds, vec!["p50", "p99", "max"]);
    assert_eq!(s.show("p50", 2), ">= 0.35");
    // A permanent (progressive) kill is no sample and makes nothing a bound.
    let permanent = troupe_lab::schedule::FaultAction { id: "f3000000".into(), restart: false, ..Default::default() };
    let s = summarise(&evs, &[permanent]).unwrap();
    assert_eq!((s.n, s.p50, s.p99, s.max, s.unmatched_kills, s.unrestarted), (3, 0.5, 3.0, 3.0, 1, 0));
    assert!(s.lower_bounds.is_empty());
    assert!(summarise(&[], &[]).is_none(), "no kill, no summary");
    // A restart stamped in the same microsecond as its kill still matches.
    assert_eq!(latencies(&[restart(5, "g0/s0"), kill(5, "g0/s0")]).0, vec![0.0]);
}

#[test]
fn restart_latency_reaches_the_run_summary() {
    // The fixture restarts every killed server 1 ms after its kill.
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
    let sched = support::write_run(dir.path(), &cfg, &[10; 10], troupe_lab::manifest::Status::Ok);
    let evs = events::read(&dir.path().join("events.jsonl")).unwrap();
    let st = RunStats::compute(&cfg, &evs, &sched, None);
    let r = st.restart_ms.clone().unwrap();
    assert_eq!((r.n, r.p50, r.p99, r.unmatched_kills), (20, 1.0, 1.0, 0));
    let summary = troupe_lab::workload::RunAnalysis::summary_json(&st);
    assert_eq!(summary["restart_ms"]["p50"], 1.0);
    assert_eq!(summary["restart_ms"]["p99"], 1.0);
}

#[test]
fn with_repetitions_only_a_whole_interval_above_the_baseline_is_flagged() {
    use troupe_lab::manifest::Status;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut s = spec(&["noisy"], 2);
    s.sets = ["pairs=8", "supervisors=8", "duration_s=4", "warmup_s=0", "pattern=uniform", "failure_rate=10,20"]
        .iter()
        .map(|x| x.to_string())
        .collect();
    let plan = compare::plan(&s).unwrap();
    std::fs::write(dir.join(compare::FILE), serde_json::to_string(&plan.file).unwrap()).unwrap();
    // Baseline 30/s twice; at 10% 33/s twice (110% ± 0: flagged); at 20% 27 and 36/s (105%, but
    // the interval reaches far below 100%: not flagged).
    let per_second = |name: &str| match (name.contains("rate-10"), name.contains("rate-20"), name.ends_with("rep-1")) {
        (true, _, _) => 33,
        (_, true, true) => 27,
        (_, true, false) => 36,
        _ => 30,
    };
    for run in plan.runs() {
        support::write_run(&dir.join(&run.name), &run.config, &[per_second(&run.name); 4], Status::Ok);
    }
    let lines = troupe_lab_workloads::scp::compare_report::table(dir).unwrap();
    assert!(lines[0].contains("mean/s ± 95% CI"), "{lines:?}");
    let line = |rate: &str| lines.iter().find(|l| l.contains(&format!(" {rate}  noisy"))).unwrap().clone();
    assert!(line("10").contains("33.0 ± 0.0") && line("10").contains("110.0 ± 0.0"), "{lines:?}");
    // 27 and 36: mean 31.5, s = 6.364, half = 12.706 * 6.364 / sqrt(2) = 57.2.
    assert!(line("20").contains("31.5 ± 57.2") && line("20").contains("2/2"), "{lines:?}");
    troupe_lab_workloads::scp::compare_report::write_report(dir).unwrap();
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("110.0 ± 0.0 (!)"), "the 10% point is flagged");
    assert!(!html.contains("105.0 ± 190.6 (!)") && html.contains("105.0 ± 190.6"), "the 20% point is not");
    let means = std::fs::read_to_string(dir.join("compare-mean.csv")).unwrap();
    let flags: Vec<&str> = means.lines().skip(1).map(|l| l.split(',').nth(15).unwrap()).collect();
    assert_eq!(flags, ["false", "true", "false"], "{means}");
}
