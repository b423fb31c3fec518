//! `troupe lab micro --threads N` and `--scaling 1,2`: the tokio-based runtimes run on the
//! worker count asked for (each line's `threads` says so; actix stays on its one thread), the
//! scaling set writes its CSV, plots and record, and bad counts or benchmarks are refused.

mod support;
use support::lab::{assert_code, assert_stderr_has, assert_success, in_repo, read, text};

#[test]
fn threads_sets_the_workers_of_every_tokio_runtime() {
    let o = in_repo(&[
        "lab",
        "micro",
        "--only",
        "pingpong",
        "--runtimes",
        "troupe,actix,ractor,kameo",
        "--reps",
        "1",
        "--set",
        "n=2000",
        "--threads",
        "3",
        "--json",
    ]);
    assert_success(&o);
    let rows: Vec<serde_json::Value> = text(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 8, "time_ms and msgs_per_s for each runtime: {rows:?}");
    for r in &rows {
        let want = if r["runtime"] == "actix" { 1 } else { 3 };
        assert_eq!(r["threads"], want, "{r}");
    }
}

#[test]
fn scaling_runs_each_count_and_writes_csv_plots_and_record() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("scaling");
    let o = in_repo(&[
        "lab",
        "micro",
        "--only",
        "pingpong,fib",
        "--runtimes",
        "troupe,actix",
        "--reps",
        "1",
        "--set",
        "n=2000",
        "--set",
        "fib.n=10",
        "--scaling",
        "1,2",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = text(&o.stdout);
    assert_success(&o);
    assert!(stdout.contains("value at each worker count"), "{stdout}");
    let csv = read(&out.join("scaling.csv"));
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 8, "2 benchmarks x 2 runtimes x 2 counts:\n{csv}");
    for r in &rows {
        let (runtime, workers, threads) = (r[1], r[4], r[5]);
        let want = if runtime == "actix" { "1" } else { workers };
        assert_eq!(threads, want, "{csv}");
        assert!(r[6].parse::<f64>().unwrap() > 0.0, "{csv}");
    }
    for f in ["scaling-pingpong.svg", "scaling-fib.svg", "results.jsonl", "run.json"] {
        assert!(out.join(f).exists(), "{f} missing");
    }
}

#[test]
fn bad_counts_and_non_throughput_benchmarks_are_refused() {
    let o = in_repo(&["lab", "micro", "--scaling", "0,2", "--only", "pingpong"]);
    assert_code(&o, 2);
    assert_stderr_has(&o, "worker counts of 1 or more");
    let o = in_repo(&["lab", "micro", "--scaling", "1,2", "--only", "memory"]);
    assert_eq!(o.status.code(), Some(2));
    assert_stderr_has(&o, "local throughput benchmarks only");
    let o = in_repo(&["lab", "micro", "--threads", "0"]);
    assert_eq!(o.status.code(), Some(2), "clap refuses 0: {}", text(&o.stderr));
    let o = in_repo(&["lab", "micro", "--threads", "2", "--scaling", "1,2"]);
    assert_eq!(o.status.code(), Some(2), "one or the other: {}", text(&o.stderr));
}
