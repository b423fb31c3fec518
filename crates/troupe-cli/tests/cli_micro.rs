//! `troupe lab micro` and the lab's name errors through the real binary: repetitions give
//! min / median / max and every repetition's value in JSON and `median [min-max]` in the table,
//! with each runtime's thread count; a mistyped benchmark lists every benchmark (local and
//! distribution) with a suggestion; mistyped runtimes, workloads and config keys get one too;
//! and an error names its cause once.

use std::process::Command;

mod support;
use support::lab::{assert_stderr_has, assert_success, in_repo, json, json_lines, read, text};

#[test]
fn repetitions_give_min_median_max_and_the_threads_of_each_runtime() {
    let args = ["lab", "micro", "--only", "fib", "--runtimes", "troupe,actix", "--reps", "3", "--set", "fib.n=12"];
    let o = in_repo(&[&args[..], &["--json"]].concat());
    let stderr = text(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    // The runtimes take turns per repetition.
    let turns: Vec<&str> = stderr.lines().filter(|l| l.starts_with("micro: fib rep ")).collect();
    assert_eq!(turns.len(), 6, "{stderr}");
    for (i, l) in turns.iter().enumerate() {
        let rt = ["troupe", "actix"][i % 2];
        assert!(l.contains(&format!("rep {}/3 on {rt} ", i / 2 + 1)), "turn {i}: {l}");
    }
    let rows: Vec<serde_json::Value> = text(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 2, "one time_ms row per runtime");
    for r in &rows {
        let samples: Vec<f64> = r["samples"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        assert_eq!(samples.len(), 3, "{r}");
        assert_eq!(r["params"]["reps"], 3, "{r}");
        let (min, med, max) = (r["min"].as_f64().unwrap(), r["value"].as_f64().unwrap(), r["max"].as_f64().unwrap());
        assert!(min > 0.0 && min <= med && med <= max, "{r}");
        let mut sorted = samples.clone();
        sorted.sort_by(f64::total_cmp);
        assert_eq!((sorted[0], sorted[1], sorted[2]), (min, med, max), "{r}");
        assert!(r["spread_pct"].as_f64().is_some(), "{r}");
    }
    let threads = |rt: &str| rows.iter().find(|r| r["runtime"] == rt).unwrap()["threads"].as_u64();
    assert_eq!(threads("actix"), Some(1), "actix runs every actor on one thread");
    let cores = std::thread::available_parallelism().unwrap().get() as u64;
    assert_eq!(threads("troupe"), Some(cores), "troupe on tokio's default: one worker per core");

    let o = in_repo(&args);
    let table = text(&o.stdout);
    assert_success(&o);
    assert!(table.contains("median [min-max] of 3 measured reps"), "{table}");
    assert!(table.contains("threads: troupe ") && table.contains("actix 1 (actix System"), "{table}");
    let row = table.lines().find(|l| l.starts_with("fib")).unwrap_or_else(|| panic!("{table}"));
    assert_eq!(row.matches(" ms [").count(), 2, "a range per runtime: {row}");
}

#[test]
fn an_unknown_benchmark_lists_every_benchmark_with_a_suggestion() {
    let o = in_repo(&["lab", "micro", "--only", "pingpog"]);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(e.contains("unknown benchmark `pingpog` (did you mean `pingpong`?)"), "{e}");
    for b in ["pingpong", "count", "skynet", "memory", "remote-pingpong", "remote-latency", "contention", "detection"] {
        assert!(e.contains(b), "{b} listed: {e}");
    }
    let o = in_repo(&["lab", "micro", "--only", "remote-pingpon"]);
    assert_stderr_has(&o, "(did you mean `remote-pingpong`?)");
    let o = in_repo(&["lab", "micro", "--only", "fib", "--runtimes", "actx"]);
    assert_eq!(o.status.code(), Some(2));
    assert_stderr_has(&o, "unknown runtime `actx` (did you mean `actix`?)");
}

#[test]
fn mistyped_workloads_keys_values_and_runtimes_get_a_suggestion() {
    let o = in_repo(&["lab", "config", "scpp"]);
    assert_eq!(o.status.code(), Some(2));
    assert_stderr_has(&o, "(did you mean `scp`?)");
    let o = in_repo(&["lab", "config", "scp", "--set", "suprevisors=4", "--set", "pattern=randm"]);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(e.contains("unknown key (did you mean `supervisors`?)"), "{e}");
    assert!(e.contains("(did you mean `random`?)"), "{e}");
    let o = in_repo(&["lab", "run", "scp", "--runtime", "erlnag"]);
    assert_eq!(o.status.code(), Some(2));
    assert_stderr_has(&o, "(did you mean `erlang`?)");
}

#[test]
fn an_error_names_its_cause_once() {
    let o = in_repo(&["lab", "report", "/no/such/folder/anywhere"]);
    assert_eq!(o.status.code(), Some(4));
    let e = text(&o.stderr);
    assert_eq!(e.matches("no such folder").count(), 1, "{e}");
    assert!(e.contains("/no/such/folder/anywhere: no such folder"), "{e}");
}

#[test]
fn a_recorded_run_states_commit_machine_versions_threads_and_load_even_outside_the_checkout() {
    // The binary copied out of the checkout and run from elsewhere still knows its commit.
    let tmp = tempfile::tempdir().unwrap();
    let exe = tmp.path().join("troupe");
    // Copied by `cp`, not std::fs::copy: a file this process holds open for writing is
    // inherited by every child another test thread forks meanwhile, and exec then fails with
    // "Text file busy" (ETXTBSY) until that child execs.
    let cp = Command::new("cp").arg(env!("CARGO_BIN_EXE_troupe")).arg(&exe).status().unwrap();
    assert!(cp.success(), "cp of the troupe binary failed: {cp}");
    let out = tmp.path().join("rec");
    let o = Command::new(&exe)
        .args(["lab", "micro", "--only", "fib,memory", "--runtimes", "troupe", "--reps", "2", "--set", "fib.n=8"])
        .args(["--set", "memory.n=2000", "--out"])
        .arg(&out)
        .current_dir(tmp.path())
        .env_remove("TROUPE_HOME")
        .output()
        .unwrap();
    let stdout = text(&o.stdout);
    assert_success(&o);
    assert!(stdout.contains("load over the run: loadavg "), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("commit: ") && l.len() >= 48), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("fib")), "the table is printed too: {stdout}");
    let lines = read(&out.join("results.jsonl"));
    let rows = json_lines(&out.join("results.jsonl"));
    // fib, and memory measured in a child started with the same command line (which must
    // neither print a table nor overwrite the record).
    // fib (1 line), memory (4: after stop, leaked, per actor, spawn time).
    assert_eq!(rows.len(), 5, "{lines}");
    assert_eq!(rows[0]["samples"].as_array().unwrap().len(), 2);
    // The core-to-core round trip timed before each repetition, one per sample (null where it
    // could not be timed); memory, measured in a child, has none.
    assert_eq!(rows[0]["core_rtt_ns"].as_array().map(Vec::len), Some(2), "{lines}");
    assert!(rows.iter().filter(|r| r["bench"] == "memory").all(|r| r.get("core_rtt_ns").is_none()), "{lines}");
    assert!(rows.iter().any(|r| r["bench"] == "memory" && r["metric"] == "bytes_per_actor"), "{lines}");
    let run = json(&out.join("run.json"));
    assert_eq!(run["git_commit"].as_str().map(str::len), Some(40), "{run}");
    assert!(run["machine"]["cores"].as_u64().is_some_and(|c| c > 0), "{run}");
    assert!(run["load"]["busy_pct"].as_f64().is_some(), "{run}");
    assert!(run["load"]["loadavg_start"].is_string(), "{run}");
    // The core-to-core round trip, where it was timed, is in the record and in the table's
    // load line alike.
    let rtt = run["load"]["core_rtt_start_ns"].as_u64().or(run["load"]["core_rtt_end_ns"].as_u64());
    assert_eq!(rtt.is_some(), stdout.contains("; core-to-core round trip "), "{run}\n{stdout}");
    assert!(run["libraries"].as_str().unwrap().contains("tokio"), "{run}");
    assert!(run["threads"]["troupe"]["threads"].as_u64().is_some(), "{run}");
    assert!(run["command"].as_array().unwrap().iter().any(|a| a == "--out"), "{run}");
}
