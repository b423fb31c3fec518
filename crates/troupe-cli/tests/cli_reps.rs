//! `--reps N` through the real binary on tiny SCP grids: a sweep and a comparison each run
//! every point twice into `_rep-<k>` folders, write per-run CSVs with a `rep` column and the
//! means with 95% confidence intervals and N (`sweep-mean.csv`, `compare-mean.csv`, the
//! printed table, the report); a sweep with repetitions resumes; every fault run's
//! `summary.json` carries its kill-to-restart latency when it had restarts; a chat sweep with
//! repetitions gets the same means.

use std::path::Path;
use std::process::Command;

fn troupe() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_troupe"));
    c.env_remove("TROUPE_HOME");
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn json(p: &Path) -> serde_json::Value {
    let t = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&t).unwrap()
}

/// The CSV's rows as header -> value maps.
fn csv_rows(p: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let t = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut lines = t.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines.map(|l| header.iter().map(|h| h.to_string()).zip(l.split(',').map(str::to_string)).collect()).collect()
}

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
    let s = json(&run.join("summary.json"));
    if s["restarts"].as_u64().unwrap_or(0) > 0 {
        let r = &s["restart_ms"];
        let (p50, p99) = (r["p50"].as_f64().unwrap(), r["p99"].as_f64().unwrap());
        assert!(p50 >= 0.0 && p99 >= p50, "{}: {r}", run.display());
        assert!(r["n"].as_u64().unwrap() >= 1);
    }
}

#[test]
fn a_sweep_with_two_repetitions_reports_means_and_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sw");
    let mut args = vec!["lab", "sweep", "scp", "--reps", "2", "--set", "failure_rate=0,10"];
    args.extend_from_slice(TINY);
    args.extend_from_slice(&["--out", out.to_str().unwrap()]);
    let o = troupe().args(&args).current_dir(tmp.path()).output().unwrap();
    assert!(o.status.success(), "{}\n{}", text(&o.stdout), text(&o.stderr));
    assert!(text(&o.stdout).contains("4 ok, 0 failed, 0 already complete"), "{}", text(&o.stdout));
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
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.contains("Means over 2 repetitions") && report.contains(" ± "), "the report shows the intervals");
    for rep in 1..=2 {
        check_restart_summary(&out.join("runs").join(format!("troupe_failure_rate-10_rep-{rep}")));
    }
    // Resuming: one repetition lost its completion; only it is run again.
    let victim = out.join("runs").join("troupe_failure_rate-10_rep-2");
    let mut m = json(&victim.join("manifest.json"));
    m["status"] = "running".into();
    std::fs::write(victim.join("manifest.json"), m.to_string()).unwrap();
    let o = troupe().args(&args).current_dir(tmp.path()).output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("1 ok, 0 failed, 3 already complete"), "{}", text(&o.stdout));
    // Another number of repetitions is another grid.
    let mut other = args.clone();
    other[4] = "3";
    let o = troupe().args(&other).current_dir(tmp.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(4), "{}", text(&o.stderr));
    let o = troupe().args(["lab", "sweep", "scp", "--reps", "0"]).current_dir(tmp.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("repetitions must be 1..="), "{}", text(&o.stderr));
}

#[test]
fn a_comparison_with_two_repetitions_prints_means_with_intervals() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("peers")).unwrap();
    std::fs::write(tmp.path().join("Cargo.toml"), "[workspace]\n").unwrap();
    let out = tmp.path().join("cmp");
    let mut args = vec!["lab", "compare", "scp", "--runtimes", "troupe", "--reps", "2", "--set", "failure_rate=10"];
    args.extend_from_slice(TINY);
    args.extend_from_slice(&["--out", out.to_str().unwrap()]);
    let o = troupe().args(&args).env("TROUPE_HOME", tmp.path()).output().unwrap();
    assert!(o.status.success(), "{}\n{}", text(&o.stdout), text(&o.stderr));
    let stdout = text(&o.stdout);
    assert!(stdout.contains("4 ok, 0 failed"), "{stdout}");
    assert!(stdout.contains("mean/s ± 95% CI") && stdout.contains(" ± ") && stdout.contains("2/2"), "{stdout}");
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
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.contains("x 2 repetitions") && report.contains("compare-mean.csv"), "report names the reps");
}

#[test]
fn a_chat_sweep_with_two_repetitions_reports_means() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("chat");
    let o = troupe()
        .args(["lab", "sweep", "chat", "--reps", "2", "--out", out.to_str().unwrap()])
        .args(["--set", "deployment=single", "--set", "chats_per_sup=2", "--set", "clients_per_server=2"])
        .args(["--set", "test_duration_secs=2", "--set", "warmup_s=0", "--set", "fault_pause_ms=500,2000"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}\n{}", text(&o.stdout), text(&o.stderr));
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
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("Means over repetitions") && html.contains(" ± "), "the page shows the intervals");
}
