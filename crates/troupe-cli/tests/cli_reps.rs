//! `--reps N` through the real binary on tiny SCP grids: a sweep and a comparison each run
//! every point twice into `_rep-<k>` folders, write per-run CSVs with a `rep` column and the
//! means with 95% confidence intervals and N (`sweep-mean.csv`, `compare-mean.csv`, the
//! printed table, the report); a sweep with repetitions resumes; every fault run's
//! `summary.json` carries its kill-to-restart latency when it had restarts; a chat sweep with
//! repetitions gets the same means.

use std::path::Path;

mod support;
use support::lab::{
    assert_code, assert_stderr_has, assert_stdout_has, assert_success, csv_rows, json, output, read, summary, troupe,
    TempLab,
};

const TINY: &[&str] = &[
    "--set",
    "pairs=4",
    "--set",
    "supervisors=1",
    "--set",
    "duration_s=1",
    "--set",
    "warmup_s=0",
    "--set",
    "pattern=burst",
    "--set",
    "burst_size=2",
];

/// A fault run's summary: when it restarted servers, its restart latency is there (p50 <= p99).
fn check_restart_summary(run: &Path) {
    let s = summary(run);
    if s["restarts"].as_u64().unwrap_or(0) > 0 {
        let r = &s["restart_ms"];
        let (p50, p99) = (r["p50"].as_f64().unwrap(), r["p99"].as_f64().unwrap());
        assert!(p50 >= 0.0 && p99 >= p50, "{}: {r}", run.display());
        assert!(r["n"].as_u64().unwrap() >= 1);
    }
}

#[test]
fn a_sweep_with_two_repetitions_reports_means_and_resumes() {
    let lab = TempLab::new("sw");
    let out = &lab.out;
    let mut args = vec!["lab", "sweep", "scp", "--reps", "2", "--set", "failure_rate=0,10"];
    args.extend_from_slice(TINY);
    args.extend_from_slice(&["--out", out.to_str().unwrap()]);
    let o = output(&args, lab.path());
    assert_success(&o);
    assert_stdout_has(&o, "4 ok, 0 failed, 0 already complete");
    assert_eq!(json(&out.join("sweep.json"))["reps"], 2);
    let mut names: Vec<String> =
        std::fs::read_dir(out.join("runs")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "troupe_failure_rate-0_rep-1",
            "troupe_failure_rate-0_rep-2",
            "troupe_failure_rate-10_rep-1",
            "troupe_failure_rate-10_rep-2"
        ]
    );
    let runs = csv_rows(&out.join("sweep.csv"));
    assert_eq!(runs.len(), 4);
    assert!(runs.iter().all(|r| r["status"] == "ok" && (r["rep"] == "1" || r["rep"] == "2")), "{runs:?}");
    let means = csv_rows(&out.join("sweep-mean.csv"));
    assert_eq!(means.len(), 2, "{means:?}");
    for m in &means {
        assert_eq!((m["n_ok"].as_str(), m["n_runs"].as_str()), ("2", "2"), "{m:?}");
        let mean: f64 = m["mean"].parse().unwrap();
        let (lo, hi): (f64, f64) = (m["mean_ci95_low"].parse().unwrap(), m["mean_ci95_high"].parse().unwrap());
        assert!(lo <= mean && mean <= hi, "{m:?}");
        // The mean is the mean of the two runs' means.
        let of_runs: Vec<f64> = runs
            .iter()
            .filter(|r| r["run"].starts_with(&format!("{}_rep-", m["point"])))
            .map(|r| r["mean"].parse().unwrap())
            .collect();
        assert_eq!(of_runs.len(), 2);
        assert!((mean - (of_runs[0] + of_runs[1]) / 2.0).abs() < 0.01, "{m:?} vs {of_runs:?}");
    }
    let report = read(&out.join("report.html"));
    assert!(report.contains("Means over 2 repetitions") && report.contains(" ± "), "the report shows the intervals");
    for rep in 1..=2 {
        check_restart_summary(&out.join("runs").join(format!("troupe_failure_rate-10_rep-{rep}")));
    }
    // Resuming: one repetition lost its completion; only it is run again.
    let victim = out.join("runs").join("troupe_failure_rate-10_rep-2");
    let mut m = json(&victim.join("manifest.json"));
    m["status"] = "running".into();
    std::fs::write(victim.join("manifest.json"), m.to_string()).unwrap();
    let o = output(&args, lab.path());
    assert_success(&o);
    assert_stdout_has(&o, "1 ok, 0 failed, 3 already complete");
    // Another number of repetitions is another grid.
    let mut other = args.clone();
    other[4] = "3";
    let o = output(&other, lab.path());
    assert_code(&o, 4);
    let o = output(&["lab", "sweep", "scp", "--reps", "0"], lab.path());
    assert_code(&o, 2);
    assert_stderr_has(&o, "repetitions must be 1..=");
}

#[test]
fn a_comparison_with_two_repetitions_prints_means_with_intervals() {
    let lab = TempLab::new("cmp");
    std::fs::create_dir_all(lab.path().join("peers")).unwrap();
    std::fs::write(lab.path().join("Cargo.toml"), "[workspace]\n").unwrap();
    let out = &lab.out;
    let mut args = vec!["lab", "compare", "scp", "--runtimes", "troupe", "--reps", "2", "--set", "failure_rate=10"];
    args.extend_from_slice(TINY);
    args.extend_from_slice(&["--out", out.to_str().unwrap()]);
    let o = troupe().args(&args).env("TROUPE_HOME", lab.path()).output().unwrap();
    assert_success(&o);
    for needle in ["4 ok, 0 failed", "mean/s ± 95% CI", " ± ", "2/2"] {
        assert_stdout_has(&o, needle);
    }
    assert_eq!(json(&out.join("compare.json"))["reps"], 2);
    for p in ["pattern-none_failure_rate-0", "pattern-burst_failure_rate-10"] {
        for rep in 1..=2 {
            let run = out.join("troupe").join(format!("{p}_rep-{rep}"));
            assert_eq!(json(&run.join("manifest.json"))["status"], "ok", "{}", run.display());
            // Every repetition ran the point's one shared schedule.
            assert_eq!(
                std::fs::read(run.join("schedule.jsonl")).unwrap(),
                std::fs::read(out.join("schedules").join(format!("{p}.jsonl"))).unwrap()
            );
        }
    }
    check_restart_summary(&out.join("troupe").join("pattern-burst_failure_rate-10_rep-1"));
    let runs = csv_rows(&out.join("compare.csv"));
    assert_eq!(runs.len(), 4);
    assert!(runs.iter().any(|r| r["rep"] == "2"));
    for r in &runs {
        // Kill-to-restart latency per run: present exactly when the run restarted servers.
        let restarted = r["restarts"] != "0";
        assert_eq!(r["restart_p50_ms"] != "-", restarted, "{r:?}");
    }
    let means = csv_rows(&out.join("compare-mean.csv"));
    assert_eq!(means.len(), 2);
    assert!(means.iter().all(|m| m["n_ok"] == "2" && !m["mean_ci95_half"].is_empty()), "{means:?}");
    let base = means.iter().find(|m| m["failure_rate"] == "0").unwrap();
    let pct: f64 = base["pct_of_baseline"].parse().unwrap();
    assert!((pct - 100.0).abs() < 1e-6, "the baseline is the mean of its own repetitions: {base:?}");
    let report = read(&out.join("report.html"));
    assert!(report.contains("x 2 repetitions") && report.contains("compare-mean.csv"), "report names the reps");
}

#[test]
fn a_chat_sweep_with_two_repetitions_reports_means() {
    let lab = TempLab::new("chat");
    let out = &lab.out;
    let o = lab
        .troupe(&["lab", "sweep", "chat", "--reps", "2"])
        .args(["--set", "deployment=single", "--set", "chats_per_sup=2", "--set", "clients_per_server=2"])
        .args(["--set", "test_duration_secs=2", "--set", "warmup_s=0", "--set", "fault_pause_ms=500,2000"])
        .current_dir(lab.path())
        .output()
        .unwrap();
    assert_success(&o);
    let runs = csv_rows(&out.join("sweep.csv"));
    assert_eq!(runs.len(), 4);
    assert!(runs.iter().all(|r| r["status"] == "ok"), "{runs:?}");
    let mut reps: Vec<&str> = runs.iter().map(|r| r["rep"].as_str()).collect();
    reps.sort_unstable();
    assert_eq!(reps, ["1", "1", "2", "2"]);
    let means = csv_rows(&out.join("sweep-mean.csv"));
    assert_eq!(means.len(), 2, "one row per point: {means:?}");
    for m in &means {
        assert_eq!(m["n_ok"], "2", "{m:?}");
        let of_runs: Vec<f64> =
            runs.iter().filter(|r| r["point"] == m["point"]).map(|r| r["msg_per_s_mean"].parse().unwrap()).collect();
        assert_eq!(of_runs.len(), 2, "{m:?}");
        let mean: f64 = m["msg_per_s"].parse().unwrap();
        assert!((mean - (of_runs[0] + of_runs[1]) / 2.0).abs() < 0.01, "{m:?} vs {of_runs:?}");
        assert!(!m["msg_per_s_ci95_half"].is_empty(), "{m:?}");
    }
    let html = read(&out.join("report.html"));
    assert!(html.contains("Means over repetitions") && html.contains(" ± "), "the page shows the intervals");
}
