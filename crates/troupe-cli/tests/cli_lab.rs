//! `troupe lab` through the real binary: an end-to-end short SCP run on Troupe, config errors,
//! `report` on a folder that is not a run, an unwritable `--out`, peers that crash, write
//! malformed events or lack their toolchain, Ctrl-C, and a sweep that resumes.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn troupe() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_troupe"));
    c.env_remove("TROUPE_HOME");
    c
}

fn run(args: &[&str], cwd: &Path) -> Output {
    troupe().args(args).current_dir(cwd).output().expect("troupe runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn manifest(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap()
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether process `pid` still exists (a zombie counts as gone).
fn alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

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
    // The injector as its own OS process (the default), then on a thread of the SUB.
    for (mode, injector_node) in [("process", "injector"), ("thread", "sub")] {
        end_to_end(mode, injector_node);
    }
}

fn end_to_end(mode: &str, injector_node: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run1");
    let injector = format!("injector={mode}");
    let o = run(
        &[
            "lab",
            "run",
            "scp",
            "--set",
            "duration_s=3",
            "--set",
            "warmup_s=1",
            "--set",
            "pairs=16",
            "--set",
            "supervisors=4",
            "--set",
            "pattern=uniform",
            "--set",
            &injector,
            "--out",
            out.to_str().unwrap(),
        ],
        tmp.path(),
    );
    assert!(o.status.success(), "stdout:\n{}\nstderr:\n{}", text(&o.stdout), text(&o.stderr));
    let stdout = text(&o.stdout);
    assert!(stdout.contains("percent of ceiling") && stdout.contains("report.html"), "{stdout}");
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
    assert!(
        std::fs::read_to_string(out.join("report.html")).unwrap().contains("cpu busy"),
        "the report states the load"
    );
    for f in ["events.jsonl", "schedule.jsonl", "scp.csv", "report.html", "config.json", "stderr.txt"] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let events = std::fs::read_to_string(out.join("events.jsonl")).unwrap();
    let evs: Vec<serde_json::Value> = events.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let ts: Vec<i64> = evs.iter().map(|e| e["ts_us"].as_i64().unwrap()).collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "events sorted by ts_us");
    let count = |ev: &str| evs.iter().filter(|e| e["ev"] == ev).count();
    assert_eq!(count("throughput"), 3);
    let pairs_ready = evs.iter().filter(|e| e["ev"] == "ready" && e["what"] == "pairs").count();
    assert_eq!(pairs_ready, 1);
    let nodes: std::collections::BTreeSet<&str> = evs.iter().map(|e| e["node"].as_str().unwrap()).collect();
    assert_eq!(count("run_finished"), nodes.len(), "one run_finished per node {nodes:?}");
    assert!(evs.iter().filter(|e| e["ev"] == "fault_injected").all(|e| e["node"] == injector_node), "{mode}");
    if mode == "process" {
        assert_eq!(nodes.len(), 2, "{nodes:?}");
        let pid = injector_pid(&events).expect("the SUB reports the injector's pid");
        assert!(!alive(pid), "the injector process {pid} outlived the run");
    }
    // 16 pairs at 5%: 4 kills/s, 12 over the window, each one restarted.
    let planned = std::fs::read_to_string(out.join("schedule.jsonl")).unwrap().lines().count();
    assert_eq!(planned, 12);
    assert_eq!(count("fault_injected"), planned);
    let restarted = count("restarted");
    assert!(restarted >= planned - 1 && restarted <= planned, "restarts {restarted}");
    // 16 pairs at 200 ms: ceiling 80/s; kills cost at most one exchange each.
    let total: i64 = evs.iter().filter(|e| e["ev"] == "throughput").map(|e| e["count"].as_i64().unwrap()).sum();
    assert!((3 * 80 - 12 - 6..=3 * 80 + 16).contains(&total), "total {total}");
    assert!(evs.iter().all(|e| e["run"] == "run1" && e["rt"] == "troupe"));
    // The report rebuilt from the folder carries the same numbers.
    let before = std::fs::read_to_string(out.join("scp.csv")).unwrap();
    let o = run(&["lab", "report", out.to_str().unwrap()], tmp.path());
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(std::fs::read_to_string(out.join("scp.csv")).unwrap(), before);
    assert!(out.join("summary.json").is_file());
    // Regression: `lab report` said "ok" for a run folder whose events.jsonl is gone.
    std::fs::remove_file(out.join("events.jsonl")).unwrap();
    let o = run(&["lab", "report", out.to_str().unwrap()], tmp.path());
    assert_eq!(o.status.code(), Some(4), "{}", text(&o.stdout));
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
    let o = run(
        &[
            "lab",
            "run",
            "scp",
            "--set",
            "pairs=1000",
            "--set",
            "supervisors=64",
            "--set",
            "failure_rate=30",
            "--set",
            "colour=blue",
            "--out",
            out.to_str().unwrap(),
        ],
        tmp.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("3 problem(s)"), "{err}");
    for needle in ["supervisors = 64", "failure_rate = 30", "0..=20", "colour", "unknown key"] {
        assert!(err.contains(needle), "{needle:?} not in {err}");
    }
    assert!(!out.exists(), "nothing may be created for an invalid config");
}

#[test]
fn report_on_a_folder_that_is_not_a_run() {
    let tmp = tempfile::tempdir().unwrap();
    let o = run(&["lab", "report", tmp.path().to_str().unwrap()], tmp.path());
    assert_eq!(o.status.code(), Some(4));
    assert!(text(&o.stderr).contains("is not a lab run or sweep folder"), "{}", text(&o.stderr));
}

#[test]
fn an_unwritable_out_fails_before_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("afile"), "x").unwrap();
    let out = tmp.path().join("afile").join("run");
    let t0 = Instant::now();
    let o = run(&["lab", "run", "scp", "--set", "duration_s=30", "--out", out.to_str().unwrap()], tmp.path());
    assert_eq!(o.status.code(), Some(4), "{}", text(&o.stderr));
    assert!(t0.elapsed() < Duration::from_secs(10), "failed before starting the 30 s run");
}

/// A project root with fake peers whose scripts are given.
fn fake_project(root: &Path, peers: &[(&str, &str, &str)]) {
    std::fs::write(root.join("Cargo.toml"), "[workspace]\n").unwrap();
    for (rt, build, runs) in peers {
        let d = root.join("peers").join(rt).join("scp");
        std::fs::create_dir_all(&d).unwrap();
        for (name, body) in [("build", build), ("run", runs)] {
            let p = d.join(name);
            std::fs::write(&p, format!("#!/bin/bash\n{body}\n")).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
}

#[test]
fn failing_peers_are_failed_runs_with_their_stderr_kept() {
    let tmp = tempfile::tempdir().unwrap();
    fake_project(
        tmp.path(),
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
            .args([
                "lab",
                "run",
                "scp",
                "--runtime",
                rt,
                "--set",
                "duration_s=1",
                "--set",
                "warmup_s=0",
                "--out",
                out.to_str().unwrap(),
            ])
            .env("TROUPE_HOME", tmp.path())
            .output()
            .unwrap();
        (o, out)
    };
    let (o, out) = go("crashy");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let m = manifest(&out);
    assert_eq!(m["status"], "failed");
    assert!(m["reason"].as_str().unwrap().contains("status 1"));
    assert!(std::fs::read_to_string(out.join("stderr.txt")).unwrap().contains("badarith"));

    let (o, out) = go("garbage");
    assert_eq!(o.status.code(), Some(1));
    let reason = manifest(&out)["reason"].as_str().unwrap().to_string();
    assert!(reason.contains("malformed") && reason.contains("line 1"), "{reason}");

    let (o, _) = go("absent");
    assert_eq!(o.status.code(), Some(3));
    assert!(text(&o.stderr).contains("install-absent.sh"), "{}", text(&o.stderr));
}

/// Starts `troupe lab run scp --set ... --out OUT` in the background, output piped.
fn spawn_scp(cwd: &Path, out: &Path, sets: &[&str]) -> std::process::Child {
    let mut c = troupe();
    c.args(["lab", "run", "scp"]);
    for s in sets {
        c.args(["--set", s]);
    }
    c.arg("--out").arg(out).current_dir(cwd).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

#[test]
fn a_killed_injector_process_fails_the_run_and_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("victim");
    let sets = ["duration_s=8", "warmup_s=1", "pairs=16", "supervisors=4", "failure_rate=20", "pattern=uniform"];
    let child = spawn_scp(tmp.path(), &out, &sets);
    let raw = out.join("events.raw.jsonl");
    let read = || std::fs::read_to_string(&raw).unwrap_or_default();
    wait_for("the injector to carry out a kill", || read().contains("\"fault_injected\""));
    let pid = injector_pid(&read()).expect("the SUB reports the injector's pid");
    let k = Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap();
    assert!(k.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let m = manifest(&out);
    assert_eq!(m["status"], "failed");
    let reason = m["reason"].as_str().unwrap();
    assert!(reason.contains("injector"), "{reason}");
    let ev = std::fs::read_to_string(out.join("events.jsonl")).unwrap();
    let fin: serde_json::Value = ev
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["ev"] == "run_finished" && e["node"] == "sub")
        .expect("the SUB still finishes");
    assert!(fin["errors"].as_u64().unwrap() >= 1, "{fin}");
    // 16 pairs at 20%: 16 kills/s over 8 s; most were never carried out.
    assert!(fin["skipped_faults"].as_u64().unwrap() > 16, "{fin}");
    let stderr = std::fs::read_to_string(out.join("stderr.txt")).unwrap();
    assert!(stderr.contains("injector process did not finish"), "{stderr}");
}

#[test]
fn ctrl_c_stops_the_run_and_marks_it_interrupted() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("long");
    let child = spawn_scp(tmp.path(), &out, &["duration_s=120", "warmup_s=1", "pairs=8", "supervisors=2"]);
    let raw = out.join("events.raw.jsonl");
    let read = || std::fs::read_to_string(&raw).unwrap_or_default();
    wait_for("the SUB and its injector to be ready", || injector_pid(&read()).is_some());
    let injector = injector_pid(&read()).unwrap();
    let t0 = Instant::now();
    let k = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(k.success());
    let o = child.wait_with_output().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(20));
    assert_eq!(o.status.code(), Some(130), "{}", text(&o.stderr));
    let m = manifest(&out);
    assert_eq!(m["interrupted"], true);
    assert_eq!(m["status"], "failed");
    assert!(m["ended_at"].is_string());
    // What was recorded is kept, with the SUB's own run_finished (it flushed on SIGTERM).
    let ev = std::fs::read_to_string(out.join("events.jsonl")).unwrap();
    assert!(ev.contains("\"ready\"") && ev.contains("\"run_finished\""), "{ev}");
    assert!(!alive(injector), "the injector process {injector} outlived the interrupted run");
}

#[test]
fn a_sweep_resumes_and_refuses_another_grid() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sw");
    let args = [
        "lab",
        "sweep",
        "scp",
        "--set",
        "pairs=4",
        "--set",
        "supervisors=1,4",
        "--set",
        "duration_s=1",
        "--set",
        "warmup_s=0",
        "--set",
        "failure_rate=0,10",
        "--set",
        "pattern=burst",
        "--set",
        "burst_size=2",
        "--out",
        out.to_str().unwrap(),
    ];
    let o = run(&args, tmp.path());
    assert!(o.status.success(), "{}\n{}", text(&o.stdout), text(&o.stderr));
    assert!(text(&o.stdout).contains("4 ok, 0 failed, 0 already complete"), "{}", text(&o.stdout));
    let runs: Vec<_> = std::fs::read_dir(out.join("runs")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(runs.len(), 4);
    assert!(out.join("report.html").is_file() && out.join("sweep.csv").is_file());
    // Simulate an interruption: one run lost its completion; a second sweep redoes only it.
    let victim = runs[0].clone();
    let keep = runs[1].join("manifest.json");
    let keep_before = std::fs::read_to_string(&keep).unwrap();
    let mut m = manifest(&victim);
    m["status"] = "running".into();
    std::fs::write(victim.join("manifest.json"), m.to_string()).unwrap();
    let o = run(&args, tmp.path());
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("1 ok, 0 failed, 3 already complete"), "{}", text(&o.stdout));
    assert_eq!(std::fs::read_to_string(&keep).unwrap(), keep_before, "completed runs are not redone");
    assert_eq!(manifest(&victim)["status"], "ok");
    // Another grid into the same folder is refused.
    let mut other: Vec<&str> = args.to_vec();
    other[6] = "supervisors=1,2";
    let o = run(&other, tmp.path());
    assert_eq!(o.status.code(), Some(4));
    assert!(text(&o.stderr).contains("different grid"), "{}", text(&o.stderr));
}
