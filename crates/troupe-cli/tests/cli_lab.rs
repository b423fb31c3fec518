//! `troupe lab` through the real binary: an end-to-end short SCP run on Troupe, config errors,
//! `report` on a folder that is not a run, an unwritable `--out`, peers that crash, write
//! malformed events or lack their toolchain, Ctrl-C, and a sweep that resumes.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support;
use support::lab::{
    alive, assert_code, assert_stderr_has, assert_stdout_has, assert_success, assert_usage_error, fake_project,
    json_lines, manifest, output, read, sets, text, troupe, wait_for, wait_until,
};

/// The injector process's pid, from the SUB's `ready {what: "injector", pid}` event.
fn injector_pid(events: &str) -> Option<u64> {
    events
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["ev"] == "ready" && e["what"] == "injector")
        .and_then(|e| e["pid"].as_u64())
}

#[test]
fn end_to_end_short_scp_run_on_troupe() {
    // The injector on its own node, an OS process (the default), then as an actor of the SUB.
    for (mode, injector_node) in [("node", "injector"), ("in_process", "sub")] {
        end_to_end(mode, injector_node);
    }
}

fn end_to_end(mode: &str, injector_node: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run1");
    let injector = format!("injector={mode}");
    let mut args = vec!["lab", "run", "scp"];
    args.extend(sets(&["duration_s=3", "warmup_s=1", "pairs=16", "supervisors=4", "pattern=uniform", &injector]));
    args.extend(["--out", out.to_str().unwrap()]);
    let o = output(&args, tmp.path());
    assert_success(&o);
    assert_stdout_has(&o, "percent of ceiling");
    assert_stdout_has(&o, "report.html");
    // Not a terminal: progress comes as plain lines, about one per second for a 4 s run.
    let stderr = text(&o.stderr);
    let progress = stderr.lines().filter(|l| l.starts_with("troupe lab: scp on troupe: ")).count();
    assert!(progress >= 2, "periodic progress lines: {stderr}");
    assert!(stderr.contains(" s of about "), "{stderr}");
    let m = manifest(&out);
    assert_eq!(m["status"], "ok");
    assert_eq!(m["interrupted"], false);
    assert_eq!(m["config"]["pairs"], 16);
    assert!(m["machine"]["cores"].as_u64().unwrap() >= 1);
    // The commit the binary was built from, and the machine's load over the run.
    assert_eq!(m["git_commit"].as_str().map(str::len), Some(40), "{m}");
    assert!(m["load"]["busy_pct"].as_f64().is_some_and(|p| (0.0..=100.0).contains(&p)), "{m}");
    assert!(m["load"]["steal_pct"].as_f64().is_some(), "{m}");
    assert!(read(&out.join("report.html")).contains("cpu busy"), "the report states the load");
    for f in ["events.jsonl", "schedule.jsonl", "scp.csv", "report.html", "config.json", "stderr.txt"] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let events = read(&out.join("events.jsonl"));
    let evs = json_lines(&out.join("events.jsonl"));
    let ts: Vec<i64> = evs.iter().map(|e| e["ts_us"].as_i64().unwrap()).collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "events sorted by ts_us");
    let count = |ev: &str| evs.iter().filter(|e| e["ev"] == ev).count();
    assert_eq!(count("throughput"), 3);
    let pairs_ready = evs.iter().filter(|e| e["ev"] == "ready" && e["what"] == "pairs").count();
    assert_eq!(pairs_ready, 1);
    let nodes: std::collections::BTreeSet<&str> = evs.iter().map(|e| e["node"].as_str().unwrap()).collect();
    assert_eq!(count("run_finished"), nodes.len(), "one run_finished per node {nodes:?}");
    assert!(evs.iter().filter(|e| e["ev"] == "fault_injected").all(|e| e["node"] == injector_node), "{mode}");
    assert_eq!(m["config"]["injector"], mode);
    if mode == "node" {
        assert_eq!(nodes.len(), 2, "{nodes:?}");
        let pid = injector_pid(&events).expect("the SUB reports the injector's pid");
        assert!(!alive(pid), "the injector process {pid} outlived the run");
    } else {
        assert_eq!(nodes.len(), 1, "no injector process: {nodes:?}");
        assert!(injector_pid(&events).is_none(), "no injector process to report");
    }
    // 16 pairs at 5%: 4 kills/s, 12 over the window, each one restarted.
    let planned = read(&out.join("schedule.jsonl")).lines().count();
    assert_eq!(planned, 12);
    assert_eq!(count("fault_injected"), planned);
    let restarted = count("restarted");
    assert!(restarted >= planned - 1 && restarted <= planned, "restarts {restarted}");
    // 16 pairs at 200 ms: a ceiling of 80/s, 240 over the window. A kill costs about one
    // exchange; on a loaded 2-core machine late timers cost more (221 was seen beside a
    // release build), so the floor is 85% of the ceiling. Servers left dead would lose about
    // 90 (12 kills, half the window each at 5 exchanges/s), far below it.
    let total: i64 = evs.iter().filter(|e| e["ev"] == "throughput").map(|e| e["count"].as_i64().unwrap()).sum();
    assert!((3 * 80 * 85 / 100..=3 * 80 + 16).contains(&total), "{mode}: total {total}");
    assert!(evs.iter().all(|e| e["run"] == "run1" && e["rt"] == "troupe"));
    // The report rebuilt from the folder carries the same numbers.
    let before = read(&out.join("scp.csv"));
    let o = output(&["lab", "report", out.to_str().unwrap()], tmp.path());
    assert_success(&o);
    assert_eq!(read(&out.join("scp.csv")), before);
    assert!(out.join("summary.json").is_file());
    // Regression: `lab report` said "ok" for a run folder whose events.jsonl is gone.
    std::fs::remove_file(out.join("events.jsonl")).unwrap();
    let o = output(&["lab", "report", out.to_str().unwrap()], tmp.path());
    assert_code(&o, 4);
    assert!(
        text(&o.stderr).contains("no events.jsonl") && text(&o.stdout).contains("no events"),
        "{}",
        text(&o.stdout)
    );
    assert!(!out.join("summary.json").exists(), "no statistics, no summary");
}

#[test]
fn config_errors_are_all_reported_and_nothing_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("never");
    let mut args = vec!["lab", "run", "scp"];
    args.extend(sets(&["pairs=1000", "supervisors=64", "failure_rate=30", "colour=blue"]));
    args.extend(["--out", out.to_str().unwrap()]);
    let o = output(&args, tmp.path());
    assert_usage_error(
        &o,
        &["3 problem(s)", "supervisors = 64", "failure_rate = 30", "0..=20", "colour", "unknown key"],
    );
    assert!(!out.exists(), "nothing may be created for an invalid config");
}

#[test]
fn report_on_a_folder_that_is_not_a_run() {
    let tmp = tempfile::tempdir().unwrap();
    let o = output(&["lab", "report", tmp.path().to_str().unwrap()], tmp.path());
    assert_eq!(o.status.code(), Some(4));
    assert_stderr_has(&o, "is not a lab run or sweep folder");
}

#[test]
fn an_unwritable_out_fails_before_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("afile"), "x").unwrap();
    let out = tmp.path().join("afile").join("run");
    let t0 = Instant::now();
    let o = output(&["lab", "run", "scp", "--set", "duration_s=30", "--out", out.to_str().unwrap()], tmp.path());
    assert_code(&o, 4);
    assert!(t0.elapsed() < Duration::from_secs(10), "failed before starting the 30 s run");
}

#[test]
fn failing_peers_are_failed_runs_with_their_stderr_kept() {
    let tmp = tempfile::tempdir().unwrap();
    fake_project(
        tmp.path(),
        "scp",
        &[
            ("crashy", "exit 0", "echo 'peer crashed: badarith' >&2; exit 1"),
            ("garbage", "exit 0", "echo 'this is not json' >> \"$TROUPE_EVENTS\"; exit 0"),
            (
                "absent",
                "echo 'missing toolchain: absent; install it with: bash scripts/install-absent.sh' >&2; exit 3",
                "exit 0",
            ),
        ],
    );
    let go = |rt: &str| {
        let out: PathBuf = tmp.path().join(format!("run-{rt}"));
        let o = troupe()
            .args(["lab", "run", "scp", "--runtime", rt])
            .args(sets(&["duration_s=1", "warmup_s=0"]))
            .args(["--out", out.to_str().unwrap()])
            .env("TROUPE_HOME", tmp.path())
            .output()
            .unwrap();
        (o, out)
    };
    let (o, out) = go("crashy");
    assert_code(&o, 1);
    let m = manifest(&out);
    assert_eq!(m["status"], "failed");
    assert!(m["reason"].as_str().unwrap().contains("status 1"));
    assert!(read(&out.join("stderr.txt")).contains("badarith"));

    let (o, out) = go("garbage");
    assert_eq!(o.status.code(), Some(1));
    let reason = manifest(&out)["reason"].as_str().unwrap().to_string();
    assert!(reason.contains("malformed") && reason.contains("line 1"), "{reason}");

    let (o, _) = go("absent");
    assert_eq!(o.status.code(), Some(3));
    assert_stderr_has(&o, "install-absent.sh");
}

/// Starts `troupe lab run scp --set ... --out OUT` in the background, output piped.
fn spawn_scp(cwd: &Path, out: &Path, kv: &[&str]) -> std::process::Child {
    let mut c = troupe();
    c.args(["lab", "run", "scp"]).args(sets(kv));
    c.arg("--out").arg(out).current_dir(cwd).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

#[test]
fn a_killed_injector_process_fails_the_run_and_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("victim");
    let sets = ["duration_s=8", "warmup_s=1", "pairs=16", "supervisors=4", "failure_rate=20", "pattern=uniform"];
    let child = spawn_scp(tmp.path(), &out, &sets);
    let raw = out.join("events.raw.jsonl");
    let events = || std::fs::read_to_string(&raw).unwrap_or_default();
    wait_until("the injector to carry out a kill", Duration::from_secs(60), || events().contains("\"fault_injected\""));
    let pid = injector_pid(&events()).expect("the SUB reports the injector's pid");
    let k = Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap();
    assert!(k.success());
    let o = child.wait_with_output().unwrap();
    assert_code(&o, 1);
    let m = manifest(&out);
    assert_eq!(m["status"], "failed");
    let reason = m["reason"].as_str().unwrap();
    assert!(reason.contains("injector"), "{reason}");
    let fin = json_lines(&out.join("events.jsonl"))
        .into_iter()
        .find(|e| e["ev"] == "run_finished" && e["node"] == "sub")
        .expect("the SUB still finishes");
    assert!(fin["errors"].as_u64().unwrap() >= 1, "{fin}");
    // 16 pairs at 20%: 16 kills/s over 8 s; most were never carried out.
    assert!(fin["skipped_faults"].as_u64().unwrap() > 16, "{fin}");
    let stderr = read(&out.join("stderr.txt"));
    assert!(stderr.contains("injector process did not finish"), "{stderr}");
}

#[test]
fn ctrl_c_stops_the_run_and_marks_it_interrupted() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("long");
    let child = spawn_scp(tmp.path(), &out, &["duration_s=120", "warmup_s=1", "pairs=8", "supervisors=2"]);
    let raw = out.join("events.raw.jsonl");
    let injector = wait_for("the SUB and its injector to be ready", Duration::from_secs(60), || {
        injector_pid(&std::fs::read_to_string(&raw).unwrap_or_default())
    });
    let t0 = Instant::now();
    let k = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(k.success());
    let o = child.wait_with_output().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(20));
    assert_code(&o, 130);
    let m = manifest(&out);
    assert_eq!(m["interrupted"], true);
    assert_eq!(m["status"], "failed");
    assert!(m["ended_at"].is_string());
    // What was recorded is kept, with the SUB's own run_finished (it flushed on SIGTERM).
    let ev = read(&out.join("events.jsonl"));
    assert!(ev.contains("\"ready\"") && ev.contains("\"run_finished\""), "{ev}");
    assert!(!alive(injector), "the injector process {injector} outlived the interrupted run");
}

#[test]
fn a_sweep_resumes_and_refuses_another_grid() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sw");
    let mut args = vec!["lab", "sweep", "scp"];
    args.extend(sets(&[
        "pairs=4",
        "supervisors=1,4",
        "duration_s=1",
        "warmup_s=0",
        "failure_rate=0,10",
        "pattern=burst",
        "burst_size=2",
    ]));
    args.extend(["--out", out.to_str().unwrap()]);
    let o = output(&args, tmp.path());
    assert_success(&o);
    assert_stdout_has(&o, "4 ok, 0 failed, 0 already complete");
    let runs: Vec<_> = std::fs::read_dir(out.join("runs")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(runs.len(), 4);
    assert!(out.join("report.html").is_file() && out.join("sweep.csv").is_file());
    // Simulate an interruption: one run lost its completion; a second sweep redoes only it.
    let victim = runs[0].clone();
    let keep = runs[1].join("manifest.json");
    let keep_before = read(&keep);
    let mut m = manifest(&victim);
    m["status"] = "running".into();
    std::fs::write(victim.join("manifest.json"), m.to_string()).unwrap();
    let o = output(&args, tmp.path());
    assert_success(&o);
    assert_stdout_has(&o, "1 ok, 0 failed, 3 already complete");
    assert_eq!(read(&keep), keep_before, "completed runs are not redone");
    assert_eq!(manifest(&victim)["status"], "ok");
    // Another grid into the same folder is refused.
    let mut other = args.clone();
    let i = other.iter().position(|a| *a == "supervisors=1,4").unwrap();
    other[i] = "supervisors=1,2";
    let o = output(&other, tmp.path());
    assert_eq!(o.status.code(), Some(4));
    assert_stderr_has(&o, "different grid");
}
