//! Erlang distribution as a peer of the distribution benchmarks (`peers/erlang/remote`), run
//! for real at tiny sizes: the rows `troupe lab micro --runtimes erlang --only
//! remote-pingpong,remote-latency --json` prints have the micro format and Troupe's metric
//! names and semantics (busy-poll asks faster than idle), Troupe-only benchmarks say so, a far
//! node that stops answering (SIGSTOP) or a run past its deadline is killed with its epmd, and a
//! missing Erlang toolchain is exit 3 with the install hint while Troupe's rows still come out.
//! The Erlang tests skip loudly without `erl` unless TROUPE_TEST_REQUIRE_ERLANG=1.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;
use support::lab::{alive, assert_success, erlang_or_skip, in_repo, repo_root, text, troupe, wait};

/// Whether `pid` is gone (or a zombie) within `limit`.
fn gone_within(pid: u32, limit: Duration) -> bool {
    wait(limit, || !alive(pid.into()))
}

/// The pids the run script and the first node announce on stderr: (epmd, far node).
fn announced(stderr: &str) -> (Vec<u32>, Vec<u32>) {
    let pid_after = |line: &str| line.rsplit(' ').next().and_then(|p| p.trim().parse::<u32>().ok());
    let epmd = stderr.lines().filter(|l| l.starts_with("remote: epmd on 127.0.0.1:")).filter_map(pid_after).collect();
    let far =
        stderr.lines().filter(|l| l.starts_with("remote: far node far@127.0.0.1 is OS process")).filter_map(pid_after);
    (epmd, far.collect())
}

fn build_peer() {
    let o = Command::new("bash").arg(repo_root().join("peers/erlang/remote/build")).output().expect("build runs");
    assert!(o.status.success(), "build: {}{}", text(&o.stdout), text(&o.stderr));
}

#[test]
fn erlang_rows_have_the_micro_shape_and_troupes_metrics() {
    if !erlang_or_skip("erlang_rows_have_the_micro_shape_and_troupes_metrics") {
        return;
    }
    let o = in_repo(&[
        "lab",
        "micro",
        "--runtimes",
        "erlang",
        "--only",
        "remote-pingpong,remote-latency,detection",
        "--json",
        "--reps",
        "1",
        "--set",
        "messages=20000",
        "--set",
        "samples=200",
    ]);
    assert_success(&o);
    let stderr = text(&o.stderr);
    let lines: Vec<String> = text(&o.stdout).lines().map(str::to_owned).collect();
    let rows: Vec<Value> = lines.iter().map(|l| serde_json::from_str(l).expect("each stdout line is JSON")).collect();
    assert_eq!(rows.len(), 8, "2 shapes x 2 ping-pong rows + 2 modes x 2 latency rows:\n{}", lines.join("\n"));
    for (line, r) in lines.iter().zip(&rows) {
        assert!(line.starts_with(r#"{"bench":""#), "field order of the micro format: {line}");
        let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
        // The six fields of the micro format, and for merged runs their min, max and samples.
        let merged = ["min", "max", "samples"].iter().all(|k| keys.contains(k));
        assert_eq!(keys.len(), if merged { 9 } else { 6 }, "{line}");
        for k in ["bench", "runtime", "metric", "value", "unit", "params"] {
            assert!(keys.contains(&k), "{k} missing: {line}");
        }
        assert_eq!(r["runtime"], "erlang", "{line}");
        assert!(r["value"].as_f64().is_some_and(|v| v > 0.0 && v.is_finite()), "{line}");
        assert_eq!(r["params"]["transport"], "erlang distribution, tcp loopback, 2 OS processes", "{line}");
        assert!(r["params"]["otp"].as_str().is_some_and(|v| v.parse::<u32>().is_ok_and(|n| n >= 21)), "{line}");
        assert_eq!(r["params"]["reps"], 1, "--reps reaches the peer: {line}");
    }
    let row = |bench: &str, metric: &str, key: &str, mode: Option<&str>| {
        let found: Vec<&Value> = rows
            .iter()
            .filter(|r| r["bench"] == bench && r["metric"] == metric)
            .filter(|r| mode.is_none_or(|m| r["params"][key] == m))
            .collect();
        assert_eq!(found.len(), 1, "one {bench} {metric} {mode:?} row");
        found[0].clone()
    };
    // Both named shapes, each on its own rows: what the peer ran (`window`) is what the row is
    // named for (`in_flight`, `shape`), the same on the time and the rate row of one run.
    for (shape, in_flight) in [("pipelined", 1000), ("lock-step", 1)] {
        let t = row("remote-pingpong", "time_ms", "shape", Some(shape));
        let m = row("remote-pingpong", "msgs_per_s", "shape", Some(shape));
        assert_eq!((t["unit"].as_str(), m["unit"].as_str()), (Some("ms"), Some("msg/s")));
        assert_eq!(m["params"]["messages"], 20000, "--set messages reaches the peer");
        assert_eq!(t["params"], m["params"], "time_ms and msgs_per_s rows of one run");
        assert_eq!(m["params"]["window"], in_flight, "{shape}: the peer ran {in_flight} in flight: {m}");
        assert_eq!(m["params"]["in_flight"], in_flight, "{shape}: {m}");
        assert_eq!(m["samples"].as_array().map(Vec::len), Some(1), "--reps 1: one run: {m}");
        let implied = 20000.0 / (t["value"].as_f64().unwrap() / 1e3);
        let got = m["value"].as_f64().unwrap();
        assert!((got - implied).abs() / implied < 0.01, "msgs_per_s = messages / time: {got} vs {implied}");
    }
    let pipelined = row("remote-pingpong", "msgs_per_s", "shape", Some("pipelined"))["value"].as_f64().unwrap();
    let lockstep = row("remote-pingpong", "msgs_per_s", "shape", Some("lock-step"))["value"].as_f64().unwrap();
    assert!(pipelined > lockstep, "1000 in flight moves more messages than 1: {pipelined} vs {lockstep}");
    let mut rate = Vec::new();
    for mode in ["idle", "busy-poll"] {
        let p50 = row("remote-latency", "rtt_p50_us", "mode", Some(mode));
        let p99 = row("remote-latency", "rtt_p99_us", "mode", Some(mode));
        assert_eq!(p50["unit"], "us");
        assert!(p99["value"].as_f64() >= p50["value"].as_f64(), "{mode}: p99 >= p50");
        assert_eq!(p50["params"]["samples"], 200, "--set samples reaches the peer");
        assert_eq!(p50["params"]["interval_us"], 200);
        assert_eq!(p50["params"]["payload_bytes"], 16);
        rate.push(p50["params"]["asks_per_s"].as_f64().expect("asks_per_s"));
    }
    // Idle sleeps on a millisecond timer; busy-poll waits only the 200 us interval.
    assert!(rate[1] > 1.5 * rate[0], "busy-poll asks faster than idle: {rate:?}");
    assert!(stderr.contains("detection runs on troupe only"), "{stderr}");
    let (epmd, far) = announced(&stderr);
    assert_eq!(
        (epmd.len(), far.len()),
        (3, 3),
        "each run (2 ping-pong shapes, latency) announces its epmd and far node: {stderr}"
    );
    for pid in epmd.iter().chain(&far) {
        assert!(gone_within(*pid, Duration::from_secs(5)), "process {pid} of the run outlived it");
    }
}

/// Kills (SIGKILL) a process if the test ends early, so a stopped far node never lingers.
struct KillOnDrop(Option<u32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            if alive(pid.into()) {
                let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            }
        }
    }
}

/// Runs the peer directly; `on_far(pid)` is called when the far node is announced. Returns the
/// exit code, stderr, and the announced pids. The whole call is bounded (60 s).
fn run_peer(args: &[&str], on_far: impl Fn(u32)) -> (Option<i32>, String, Vec<u32>, Vec<u32>, KillOnDrop) {
    let mut child = Command::new("bash")
        .arg(repo_root().join("peers/erlang/remote/run"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run starts");
    let err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut stderr = String::new();
    let mut guard = KillOnDrop(None);
    let until = Instant::now() + Duration::from_secs(60);
    let code = loop {
        while let Ok(line) = rx.try_recv() {
            let (_, far) = announced(&line);
            if let Some(&pid) = far.first() {
                guard.0 = Some(pid);
                on_far(pid);
            }
            stderr.push_str(&line);
            stderr.push('\n');
        }
        if let Some(s) = child.try_wait().expect("wait") {
            break s.code();
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the peer did not stop within 60 s:\n{stderr}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    reader.join().unwrap();
    while let Ok(line) = rx.try_recv() {
        stderr.push_str(&line);
        stderr.push('\n');
    }
    let (epmd, far) = announced(&stderr);
    (code, stderr, epmd, far, guard)
}

#[test]
fn a_far_node_that_stops_answering_is_killed_with_its_epmd() {
    if !erlang_or_skip("a_far_node_that_stops_answering_is_killed_with_its_epmd") {
        return;
    }
    build_peer();
    let t = Instant::now();
    let stop = |pid: u32| {
        let _ = Command::new("kill").args(["-STOP", &pid.to_string()]).status();
    };
    let (code, stderr, epmd, far, _guard) =
        run_peer(&["remote-pingpong", "messages=400000000", "reps=1", "stall_ms=2000"], stop);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("far_node_silent_ms"), "{stderr}");
    assert!(t.elapsed() < Duration::from_secs(30), "failed in {:?}", t.elapsed());
    assert_eq!((epmd.len(), far.len()), (1, 1), "{stderr}");
    assert!(gone_within(far[0], Duration::from_secs(5)), "the stopped far node was left behind");
    assert!(gone_within(epmd[0], Duration::from_secs(5)), "the run's epmd was left behind");
}

#[test]
fn a_run_past_its_deadline_is_stopped_with_its_nodes() {
    if !erlang_or_skip("a_run_past_its_deadline_is_stopped_with_its_nodes") {
        return;
    }
    build_peer();
    let t = Instant::now();
    let (code, stderr, epmd, far, _guard) =
        run_peer(&["remote-pingpong", "messages=400000000", "reps=1", "deadline_s=3"], |_| {});
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("did not finish within deadline_s=3"), "{stderr}");
    assert!(t.elapsed() < Duration::from_secs(30), "stopped after {:?}", t.elapsed());
    assert_eq!((epmd.len(), far.len()), (1, 1), "{stderr}");
    assert!(gone_within(far[0], Duration::from_secs(5)), "the far node was left behind");
    assert!(gone_within(epmd[0], Duration::from_secs(5)), "the run's epmd was left behind");
}

#[test]
fn missing_erlang_is_exit_3_with_the_install_hint_and_troupe_still_runs() {
    // A PATH with the shell tools the peer scripts use, and no Erlang.
    let dir = tempfile::tempdir().unwrap();
    for tool in ["bash", "dirname", "ls", "grep", "sort", "find", "cat", "kill", "sleep", "seq", "od", "tr"] {
        let found = Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().unwrap();
        let path = String::from_utf8_lossy(&found.stdout).trim().to_owned();
        if !path.is_empty() {
            std::os::unix::fs::symlink(path, dir.path().join(tool)).unwrap();
        }
    }
    let o = troupe()
        .args(["lab", "micro", "--runtimes", "troupe,erlang", "--only", "remote-pingpong", "--json"])
        .args(["--reps", "1", "--set", "messages=2000"])
        .env("PATH", dir.path())
        .current_dir(repo_root())
        .output()
        .unwrap();
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("erlang: missing toolchain: erlang")
            && stderr.contains("install it with: bash scripts/install-erlang.sh"),
        "{stderr}"
    );
    let rows: Vec<Value> = text(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(
        rows.iter().any(|r| r["runtime"] == "troupe" && r["metric"] == "msgs_per_s"),
        "Troupe's rows still come out"
    );
    assert!(rows.iter().all(|r| r["runtime"] == "troupe"));
}
