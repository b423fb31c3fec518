//! The distribution benchmarks of `troupe lab micro`: `remote-pingpong`, `remote-latency`,
//! `contention` and `detection` (crate `troupe-remote`, `bench`). The far node is this same
//! binary started as `troupe node`, a separate OS process on loopback. With `--runtimes
//! troupe,erlang`, `remote-pingpong` and `remote-latency` also run on Erlang distribution
//! (`peers/erlang/remote`, built with its own tool, run with a deadline) and the table puts
//! both runtimes side by side with Troupe's ratio. A peer that cannot run (missing toolchain,
//! failure, deadline) is reported the way the local micro-benchmarks report theirs: the other
//! runtimes still run, the table lists it under "not run:", and the exit code says why.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use troupe_remote::bench::{
    contention, detection, remote_latency, remote_pingpong, shape, ContentionParams, DetectionParams, LatencyParams,
    Launcher, PingPongParams, Row,
};

/// The benchmark names this module answers for.
pub(crate) const NAMES: [&str; 4] = ["remote-pingpong", "remote-latency", "contention", "detection"];
/// The ones a peer runtime implements too, and which runtime.
const PEER_NAMES: [&str; 2] = ["remote-pingpong", "remote-latency"];
const PEERS: [&str; 1] = ["erlang"];
/// A peer's build (erlc: seconds; the bound is for a wedged toolchain).
const BUILD_DEADLINE: Duration = Duration::from_secs(10 * 60);
/// Added to the deadline handed to the peer, which kills its own far node at that deadline.
const RUN_GRACE: Duration = Duration::from_secs(60);

/// Why a run stopped: a message, and whether a peer's toolchain is missing (exit 3).
pub(crate) struct Failure {
    pub(crate) message: String,
    pub(crate) missing_toolchain: bool,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure { message, missing_toolchain: false }
    }
}

/// A runtime (and benchmark) that did not run, and why.
struct Problem {
    runtime: String,
    bench: Option<String>,
    failure: Failure,
}

/// The parameters `--set` may change (as `KEY=N` or `BENCH.KEY=N`), per benchmark.
const KEYS: [(&str, &[&str]); 2] =
    [("remote-pingpong", &["messages", "window", "in_flight"]), ("remote-latency", &["samples", "interval_us"])];

/// Runs of each runtime per ping-pong shape when `--reps` is not given.
const PINGPONG_REPS: u32 = 5;

/// One named shape of `remote-pingpong`: pings in flight and messages (pings plus pongs).
#[derive(Clone, Debug, PartialEq)]
struct Shape {
    in_flight: u64,
    messages: u64,
}

/// The shapes to run: both named ones (`in_flight=1000` pipelined with 1,000,000 messages,
/// `in_flight=1` lock-step with 20,000) unless `--set window=N` (or `in_flight=N`) names one;
/// `--set messages=N` applies to every shape run.
fn shapes(set: &[(&str, u64)]) -> Vec<Shape> {
    let get = |k: &str| set.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
    let messages = get("messages");
    match get("in_flight").or_else(|| get("window")) {
        Some(w) => {
            vec![Shape { in_flight: w.max(1), messages: messages.unwrap_or(if w <= 1 { 20_000 } else { 1_000_000 }) }]
        }
        None => vec![
            Shape { in_flight: 1000, messages: messages.unwrap_or(1_000_000) },
            Shape { in_flight: 1, messages: messages.unwrap_or(20_000) },
        ],
    }
}

/// `--set` values that apply to `bench`.
fn params_for(bench: &str, sets: &BTreeMap<String, u64>) -> Vec<(&'static str, u64)> {
    let keys = KEYS.iter().find(|(b, _)| *b == bench).map_or(&[][..], |(_, k)| *k);
    keys.iter().filter_map(|k| sets.get(&format!("{bench}.{k}")).or_else(|| sets.get(*k)).map(|v| (*k, *v))).collect()
}

/// Runs the named remote benchmarks on `runtimes` (empty: Troupe); prints JSON lines, or a table.
pub(crate) fn run(
    names: &[String],
    runtimes: &[String],
    reps: Option<u32>,
    sets: &BTreeMap<String, u64>,
    json: bool,
    collected: &mut Vec<String>,
) -> Result<(), Failure> {
    let troupe_only = ["troupe".to_owned()];
    let runtimes = if runtimes.is_empty() { &troupe_only[..] } else { runtimes };
    let mut columns: Vec<String> = Vec::new();
    for rt in runtimes {
        if rt != "troupe" && !PEERS.contains(&rt.as_str()) {
            eprintln!(
                "troupe lab micro: the distribution benchmarks have no {rt} implementation (troupe, erlang); skipped"
            );
        } else if !columns.contains(rt) {
            columns.push(rt.clone());
        }
    }
    let mut problems: Vec<Problem> = Vec::new();
    // Build every peer first, as the local micro-benchmarks do: a missing toolchain is known
    // before anything runs, and the other runtimes still run.
    let mut ready: Vec<String> = vec!["troupe".into()];
    for peer in columns.iter().filter(|r| r.as_str() != "troupe") {
        if !names.iter().any(|n| PEER_NAMES.contains(&n.as_str())) {
            ready.push(peer.clone());
            continue;
        }
        match build_peer(peer) {
            Ok(()) => ready.push(peer.clone()),
            Err(failure) => {
                eprintln!("micro: {peer}: {}", failure.message);
                problems.push(Problem { runtime: peer.clone(), bench: None, failure });
            }
        }
    }
    let mut rows: Vec<Row> = Vec::new();
    for name in names {
        if name == "remote-pingpong" {
            let runs = reps.unwrap_or(PINGPONG_REPS).max(1);
            for sh in shapes(&params_for(name, sets)) {
                let got = alternate_pingpong(&sh, &columns, &ready, runs, &mut problems);
                collected.extend(got.iter().map(Row::to_json));
                if json {
                    let mut out = std::io::stdout().lock();
                    for r in &got {
                        let _ = writeln!(out, "{}", r.to_json());
                    }
                    let _ = out.flush();
                }
                rows.extend(got);
            }
            continue;
        }
        for rt in &columns {
            let got = match rt.as_str() {
                "troupe" => troupe(name, reps, &params_for(name, sets)),
                peer if !ready.iter().any(|r| r == peer) => continue,
                peer if PEER_NAMES.contains(&name.as_str()) => peer_rows(peer, name, reps, &params_for(name, sets)),
                peer => {
                    eprintln!(
                        "troupe lab micro: {name} runs on troupe only (no {peer} implementation); skipped for {peer}"
                    );
                    continue;
                }
            };
            match got {
                Ok(got) => {
                    collected.extend(got.iter().map(Row::to_json));
                    if json {
                        let mut out = std::io::stdout().lock();
                        for r in &got {
                            let _ = writeln!(out, "{}", r.to_json());
                        }
                        let _ = out.flush();
                    }
                    rows.extend(got);
                }
                Err(failure) => {
                    eprintln!("micro: {name} on {rt}: {}", failure.message);
                    problems.push(Problem { runtime: rt.clone(), bench: Some(name.clone()), failure });
                }
            }
        }
    }
    if !json {
        let mut out = std::io::stdout().lock();
        for line in table(&rows, &columns, reps.unwrap_or(3).max(1), &problems) {
            let _ = writeln!(out, "{line}");
        }
    }
    summarize(problems)
}

/// `remote-pingpong` in one shape on every runtime, the runtimes alternating run by run (run 1
/// on Troupe, then on Erlang, run 2 on Troupe, ...), each run one warm-up and one measured
/// iteration with a fresh far node; then each runtime's runs merged into one row per metric and
/// transport (median, min, max, samples). TLS is measured in the pipelined shape only. A
/// runtime that fails a run is reported and left out of this shape.
fn alternate_pingpong(
    sh: &Shape,
    columns: &[String],
    ready: &[String],
    runs: u32,
    problems: &mut Vec<Problem>,
) -> Vec<Row> {
    let name = "remote-pingpong";
    let mut going: Vec<String> = columns.iter().filter(|rt| ready.contains(rt)).cloned().collect();
    let mut done: Vec<(String, Vec<Vec<Row>>)> = going.iter().map(|rt| (rt.clone(), Vec::new())).collect();
    let set = [("messages", sh.messages), ("window", sh.in_flight)];
    for run in 1..=runs {
        for rt in going.clone() {
            eprintln!(
                "micro: {name} in_flight={} ({}) run {run}/{runs} on {rt} ...",
                sh.in_flight,
                shape(sh.in_flight)
            );
            let got = if rt == "troupe" { troupe_pingpong(sh, 1) } else { peer_rows(&rt, name, Some(1), &set) };
            match got {
                Ok(mut got) => {
                    for r in &mut got {
                        if let Some(o) = r.params.as_object_mut() {
                            o.insert("in_flight".into(), sh.in_flight.into());
                            o.insert("shape".into(), shape(sh.in_flight).into());
                        }
                    }
                    if let Some((_, v)) = done.iter_mut().find(|(r, _)| *r == rt) {
                        v.push(got);
                    }
                }
                Err(failure) => {
                    eprintln!("micro: {name} on {rt}: {}", failure.message);
                    problems.push(Problem { runtime: rt.clone(), bench: Some(name.into()), failure });
                    going.retain(|r| *r != rt);
                    done.retain(|(r, _)| *r != rt);
                }
            }
        }
    }
    done.iter().flat_map(|(_, runs)| Row::merge(runs)).collect()
}

fn troupe_pingpong(sh: &Shape, reps: u32) -> Result<Vec<Row>, Failure> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the troupe executable: {e}"))?;
    let launcher = Launcher { program: exe, args: vec!["node".into()] };
    let p = PingPongParams { reps, messages: sh.messages, window: sh.in_flight, tls: sh.in_flight > 1 };
    remote_pingpong(&launcher, &p).map_err(|e| Failure::from(format!("remote-pingpong: {e}")))
}

/// One failure for everything that did not run: missing toolchain only if nothing else failed.
fn summarize(problems: Vec<Problem>) -> Result<(), Failure> {
    if problems.is_empty() {
        return Ok(());
    }
    let missing_toolchain = problems.iter().all(|p| p.failure.missing_toolchain);
    let lines: Vec<String> = problems.iter().map(problem_line).collect();
    Err(Failure { message: format!("micro-benchmarks incomplete:\n  {}", lines.join("\n  ")), missing_toolchain })
}

fn problem_line(p: &Problem) -> String {
    match &p.bench {
        Some(b) => format!("{} {b}: {}", p.runtime, p.failure.message),
        None => format!("{}: {}", p.runtime, p.failure.message),
    }
}

fn troupe(name: &str, reps: Option<u32>, set: &[(&str, u64)]) -> Result<Vec<Row>, Failure> {
    let get = |k: &str| set.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the troupe executable: {e}"))?;
    let launcher = Launcher { program: exe, args: vec!["node".into()] };
    eprintln!("micro: {name} on troupe (two OS processes on loopback) ...");
    match name {
        "remote-latency" => {
            let d = LatencyParams::default();
            let p = LatencyParams {
                reps: reps.unwrap_or(d.reps),
                samples: get("samples").map_or(d.samples, |v| v.min(u64::from(u32::MAX)) as u32),
                interval_us: get("interval_us").unwrap_or(d.interval_us),
                ..d
            };
            remote_latency(&launcher, &p)
        }
        "contention" => contention(&launcher, &ContentionParams::default()),
        "detection" => {
            let p = DetectionParams { reps: reps.unwrap_or(DetectionParams::default().reps), ..Default::default() };
            detection(&launcher, &p)
        }
        other => return Err(format!("unknown remote benchmark {other:?}").into()),
    }
    .map_err(|e| Failure::from(format!("{name}: {e}")))
}

fn peer_dir(peer: &str) -> Result<std::path::PathBuf, Failure> {
    let root = troupe_lab::root::project_root().map_err(|e| e.to_string())?;
    Ok(root.join("peers").join(peer).join("remote"))
}

/// Runs `peers/<peer>/remote/build` (peer contract: exit 3 = missing toolchain, with the
/// install command on stderr).
fn build_peer(peer: &str) -> Result<(), Failure> {
    let dir = peer_dir(peer)?;
    let mut cmd = Command::new("bash");
    cmd.arg(dir.join("build")).stdin(Stdio::null());
    let done = run_bounded(cmd, BUILD_DEADLINE, true)?;
    match done.code {
        Some(0) => Ok(()),
        Some(3) => {
            let said = done.stderr.lines().find(|l| l.contains("missing toolchain")).map(|l| l.trim().to_owned());
            Err(Failure {
                message: said.unwrap_or_else(|| {
                    format!("missing toolchain for {peer}; install it with: bash scripts/install-{peer}.sh")
                }),
                missing_toolchain: true,
            })
        }
        code => Err(format!("build failed ({}): {}", exit_text(code), tail(&done.stderr)).into()),
    }
}

/// The whole-run deadline handed to the peer (it kills its far node and fails past it):
/// generous, from the sizes, as `peers/erlang/remote` computes its own default.
fn peer_deadline_s(name: &str, reps: u64, set: &[(&str, u64)]) -> u64 {
    let get = |k: &str, d: u64| set.iter().find(|(key, _)| *key == k).map_or(d, |(_, v)| *v);
    if name == "remote-pingpong" {
        let m = get("messages", PingPongParams::default().messages);
        60 + (m.min(100_000) + m.saturating_mul(reps)) / 20_000
    } else {
        let d = LatencyParams::default();
        let n = get("samples", u64::from(d.samples));
        let i = get("interval_us", d.interval_us);
        60 + 2 * (n.min(1000) + n.saturating_mul(reps)).saturating_mul(i.saturating_add(5000)) / 1_000_000
    }
}

/// Runs `peers/<peer>/remote/run <name> key=value...` within a deadline and reads its JSON lines.
fn peer_rows(peer: &str, name: &str, reps: Option<u32>, set: &[(&str, u64)]) -> Result<Vec<Row>, Failure> {
    let dir = peer_dir(peer)?;
    eprintln!("micro: {name} on {peer} (two OS processes on loopback) ...");
    let deadline_s = peer_deadline_s(name, u64::from(reps.unwrap_or(3).max(1)), set);
    let mut cmd = Command::new("bash");
    cmd.arg(dir.join("run")).arg(name);
    if let Some(r) = reps {
        cmd.arg(format!("reps={}", r.max(1)));
    }
    cmd.args(set.iter().map(|(k, v)| format!("{k}={v}")));
    cmd.arg(format!("deadline_s={deadline_s}")).stdin(Stdio::null());
    let done = run_bounded(cmd, Duration::from_secs(deadline_s) + RUN_GRACE, false)?;
    if done.code != Some(0) {
        return Err(format!("{peer} {name} failed ({}): {}", exit_text(done.code), tail(&done.stderr)).into());
    }
    let rows = done
        .stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| parse_row(l).ok_or_else(|| Failure::from(format!("{peer} {name}: not a result line: {l:?}"))))
        .collect::<Result<Vec<Row>, Failure>>()?;
    if rows.is_empty() {
        return Err(format!("{peer} {name}: printed no result line").into());
    }
    if let Some(r) = rows.iter().find(|r| r.bench != name || r.runtime != peer) {
        return Err(format!("{peer} {name}: got a row for {} on {}", r.bench, r.runtime).into());
    }
    Ok(rows)
}

struct Finished {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `cmd` to completion within `deadline`. Stdout is captured (or, with
/// `stdout_to_stderr`, forwarded to stderr); stderr is forwarded as it comes and also kept.
/// Past the deadline the child gets SIGTERM (the peer's run script then stops its nodes and
/// its epmd), and SIGKILL 10 s later.
fn run_bounded(mut cmd: Command, deadline: Duration, stdout_to_stderr: bool) -> Result<Finished, Failure> {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Failure::from(format!("cannot start {what}: {e}")))?;
    let mut so = child.stdout.take().expect("piped");
    let se = child.stderr.take().expect("piped");
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        if stdout_to_stderr {
            for line in BufReader::new(so).lines().map_while(Result::ok) {
                eprintln!("{line}");
            }
        } else {
            let _ = so.read_to_string(&mut s);
        }
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut kept = String::new();
        for line in BufReader::new(se).lines().map_while(Result::ok) {
            eprintln!("{line}");
            kept.push_str(&line);
            kept.push('\n');
        }
        kept
    });
    let until = Instant::now() + deadline;
    let mut termed: Option<Instant> = None;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => match termed {
                None => {
                    eprintln!("micro: {what} passed its {} s deadline; stopping it", deadline.as_secs());
                    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
                    termed = Some(Instant::now());
                }
                Some(t) if t.elapsed() < Duration::from_secs(10) => std::thread::sleep(Duration::from_millis(50)),
                Some(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
            },
            Err(e) => return Err(format!("cannot wait for {what}: {e}").into()),
        }
    };
    let stdout = out_t.join().unwrap_or_default();
    let stderr = err_t.join().unwrap_or_default();
    match status {
        Some(s) if termed.is_none() => Ok(Finished { code: s.code(), stdout, stderr }),
        _ => Err(format!("{what} did not finish within {} s; stopped", deadline.as_secs()).into()),
    }
}

fn exit_text(code: Option<i32>) -> String {
    match code {
        Some(c) => format!("exit code {c}"),
        None => "a signal".into(),
    }
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

fn parse_row(line: &str) -> Option<Row> {
    let v: Value = serde_json::from_str(line).ok()?;
    Some(Row::of(
        v["runtime"].as_str()?,
        v["bench"].as_str()?,
        v["metric"].as_str()?,
        v["value"].as_f64()?,
        v["unit"].as_str()?,
        v["params"].clone(),
    ))
}

/// What tells apart rows of one benchmark and metric: the transport for ping-pong, the asker's
/// mode and Troupe's node setting for latency, the configuration for contention.
fn variant(r: &Row) -> String {
    let p = &r.params;
    let tls = p["tls"] == true;
    let mut parts: Vec<String> = Vec::new();
    match r.bench.as_str() {
        "remote-pingpong" => {
            parts.push(if tls { "tls" } else { "plaintext" }.into());
            if let Some(w) = p["in_flight"].as_u64().or_else(|| p["window"].as_u64()) {
                parts.push(format!("in_flight={w} ({})", shape(w)));
            }
        }
        "contention" => {
            if let Some(c) = p["config"].as_str() {
                parts.push(c.to_owned());
            }
            if let Some(b) = p["payload_bytes"].as_u64() {
                parts.push(format!("{b} B"));
            }
            if let Some(c) = p["concurrency"].as_u64() {
                parts.push(format!("x{c}"));
            }
        }
        _ => {
            if let Some(m) = p["mode"].as_str() {
                parts.push(m.to_owned());
            }
            let setting = p["setting"].as_str().unwrap_or("default");
            if setting != "default" {
                parts.push(setting.to_owned());
            }
            if tls && setting != "tls" {
                parts.push("tls".into());
            }
        }
    }
    parts.join(" ")
}

/// Above 1 means Troupe is better: more messages per second, or less time.
fn ratio(troupe: &Row, peer: &Row) -> Option<f64> {
    if troupe.value <= 0.0 || peer.value <= 0.0 || troupe.unit != peer.unit {
        return None;
    }
    match troupe.unit.as_str() {
        "msg/s" => Some(troupe.value / peer.value),
        "us" | "ms" => Some(peer.value / troupe.value),
        _ => None,
    }
}

/// The value, and `[min-max]` when several runs were merged.
fn fmt_value(r: &Row) -> String {
    let v = fmt_number(r.value, &r.unit);
    match (r.min, r.max) {
        (Some(lo), Some(hi)) if r.samples.len() > 1 => {
            format!("{v} [{}-{}]", fmt_number(lo, &r.unit).trim_end_matches("/s"), fmt_number(hi, &r.unit))
        }
        _ => v,
    }
}

fn fmt_number(v: f64, unit: &str) -> String {
    match unit {
        "msg/s" if v >= 1e6 => format!("{:.2}M/s", v / 1e6),
        "msg/s" if v >= 1e3 => format!("{:.1}k/s", v / 1e3),
        "msg/s" => format!("{v:.0}/s"),
        "ms" if v < 10.0 => format!("{v:.2} ms"),
        u => format!("{v:.1} {u}"),
    }
}

/// The human form: a header, one line per benchmark, metric and variant with a value per
/// runtime and "troupe vs <peer>" per peer, then what did not run, then Troupe's ratios again
/// as sentences.
fn table(rows: &[Row], columns: &[String], reps: u32, problems: &[Problem]) -> Vec<String> {
    let peers: Vec<&String> = if columns.iter().any(|c| c == "troupe") {
        columns.iter().filter(|c| *c != "troupe").collect()
    } else {
        vec![]
    };
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for r in rows {
        let k = (r.bench.clone(), r.metric.clone(), variant(r));
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    // Grouped by benchmark, then metric, each in order of first appearance.
    let bench_at = |b: &String| keys.iter().position(|k| &k.0 == b);
    let metric_at = |m: &String| keys.iter().position(|k| &k.1 == m);
    let mut order = keys.clone();
    order.sort_by_key(|k| (bench_at(&k.0), metric_at(&k.1)));
    let cell = |k: &(String, String, String), rt: &str| {
        rows.iter().find(|r| r.runtime == rt && r.bench == k.0 && r.metric == k.1 && variant(r) == k.2)
    };
    let mut grid: Vec<Vec<String>> = Vec::new();
    let mut header = vec!["bench".to_owned(), "metric".to_owned(), "variant".to_owned()];
    header.extend(columns.iter().cloned());
    header.extend(peers.iter().map(|p| format!("troupe vs {p}")));
    grid.push(header);
    let mut sentences = Vec::new();
    for k in &order {
        let mut line = vec![k.0.clone(), k.1.clone(), k.2.clone()];
        line.extend(columns.iter().map(|rt| cell(k, rt).map_or("-".into(), fmt_value)));
        for p in &peers {
            let x = cell(k, "troupe").zip(cell(k, p)).and_then(|(t, o)| Some((t, o, ratio(t, o)?)));
            line.push(x.map_or("-".into(), |(_, _, x)| format!("{x:.2}x")));
            if let Some((t, o, x)) = x {
                let mode = t.params["mode"]
                    .as_str()
                    .map(str::to_owned)
                    .or_else(|| t.params["in_flight"].as_u64().map(|w| format!("{}, in_flight={w}", shape(w))))
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default();
                sentences.push(format!(
                    "troupe vs {:<8} {} {}{mode}: {x:.2}x ({} vs {})",
                    p,
                    k.0,
                    k.1,
                    fmt_value(t),
                    fmt_value(o)
                ));
            }
        }
        grid.push(line);
    }
    let mut out = vec![
        format!(
            "distribution benchmarks: two OS processes on loopback per runtime; median of {reps} measured reps after 1 warm-up \
             (remote-pingpong: median [min-max] of its runs, the runtimes alternating run by run, each run 1 warm-up + 1 \
             measured with a fresh far node; pipelined = in_flight=1000 is a throughput, lock-step = in_flight=1 is one \
             round trip at a time); ratio > 1: Troupe better"
        ),
        format!("machine: {}", machine()),
    ];
    if let Some(otp) = rows.iter().find_map(|r| r.params["otp"].as_str()) {
        out.push(format!("erlang: OTP {otp}, distribution over TCP (default VM flags, 2 nodes)"));
    }
    out.extend(aligned(&grid));
    if !problems.is_empty() {
        out.push("not run:".into());
        out.extend(problems.iter().map(|p| format!("  {}", problem_line(p))));
    }
    out.extend(sentences);
    out
}

fn aligned(grid: &[Vec<String>]) -> Vec<String> {
    let cols = grid.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> =
        (0..cols).map(|c| grid.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0)).collect();
    let mut out = Vec::new();
    for (i, row) in grid.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, s)| if c < 3 { format!("{s:<w$}", w = widths[c]) } else { format!("{s:>w$}", w = widths[c]) })
            .collect();
        out.push(cells.join("  ").trim_end().to_owned());
        if i == 0 {
            out.push(widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  "));
        }
    }
    out
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZeroUsize::get);
    format!("{cpu}, {cores} cores available, {} {}", std::env::consts::OS, std::env::consts::ARCH)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(rt: &str, bench: &str, metric: &str, value: f64, unit: &str, params: Value) -> Row {
        Row::of(rt, bench, metric, value, unit, params)
    }

    #[test]
    fn ratio_above_one_means_troupe_is_better() {
        let t = row("troupe", "remote-pingpong", "msgs_per_s", 6e6, "msg/s", json!({}));
        let e = row("erlang", "remote-pingpong", "msgs_per_s", 2e5, "msg/s", json!({}));
        assert_eq!(ratio(&t, &e), Some(30.0));
        let t = row("troupe", "remote-latency", "rtt_p50_us", 80.0, "us", json!({}));
        let e = row("erlang", "remote-latency", "rtt_p50_us", 60.0, "us", json!({}));
        assert_eq!(ratio(&t, &e), Some(0.75));
        let zero = row("erlang", "remote-latency", "rtt_p50_us", 0.0, "us", json!({}));
        assert_eq!(ratio(&t, &zero), None);
    }

    #[test]
    fn both_named_shapes_unless_one_is_set() {
        assert_eq!(
            shapes(&[]),
            vec![Shape { in_flight: 1000, messages: 1_000_000 }, Shape { in_flight: 1, messages: 20_000 }]
        );
        assert_eq!(shapes(&[("messages", 500)]).iter().map(|s| s.messages).collect::<Vec<_>>(), vec![500, 500]);
        assert_eq!(shapes(&[("window", 1)]), vec![Shape { in_flight: 1, messages: 20_000 }]);
        assert_eq!(shapes(&[("in_flight", 64)]), vec![Shape { in_flight: 64, messages: 1_000_000 }]);
    }

    #[test]
    fn runs_merge_into_median_min_max_per_transport() {
        let run = |plain: f64, tls: f64| {
            vec![
                row("troupe", "remote-pingpong", "msgs_per_s", plain, "msg/s", json!({"tls": false, "reps": 1})),
                row("troupe", "remote-pingpong", "msgs_per_s", tls, "msg/s", json!({"tls": true, "reps": 1})),
            ]
        };
        let m = Row::merge(&[run(6e6, 5e6), run(7e6, 4e6), run(6.5e6, 4.5e6)]);
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].value, m[0].min, m[0].max), (6.5e6, Some(6e6), Some(7e6)));
        assert_eq!(m[1].samples, vec![5e6, 4e6, 4.5e6]);
        assert_eq!(m[0].params["reps"], 3);
        assert_eq!(fmt_value(&m[0]), "6.50M/s [6.00M-7.00M/s]");
    }

    #[test]
    fn only_matching_variants_are_compared() {
        let rows = vec![
            row("troupe", "remote-pingpong", "msgs_per_s", 6e6, "msg/s", json!({"tls": false})),
            row("troupe", "remote-pingpong", "msgs_per_s", 5e6, "msg/s", json!({"tls": true})),
            row("troupe", "remote-latency", "rtt_p50_us", 50.0, "us", json!({"mode": "idle", "setting": "default"})),
            row("troupe", "remote-latency", "rtt_p50_us", 40.0, "us", json!({"mode": "idle", "setting": "spin"})),
            row("erlang", "remote-pingpong", "msgs_per_s", 2e5, "msg/s", json!({"otp": "25"})),
            row("erlang", "remote-latency", "rtt_p50_us", 100.0, "us", json!({"mode": "idle"})),
        ];
        let cols = vec!["troupe".to_owned(), "erlang".to_owned()];
        let lines = table(&rows, &cols, 3, &[]);
        let find = |s: &str| lines.iter().find(|l| l.contains(s)).unwrap_or_else(|| panic!("{s}: {lines:#?}")).clone();
        assert!(find("plaintext").ends_with("30.00x"));
        assert!(find(" tls ").trim_end().ends_with('-'));
        assert!(find("idle ").trim_end().ends_with("2.00x"));
        assert!(find("idle spin").trim_end().ends_with('-'));
        assert!(lines
            .iter()
            .any(|l| l == "troupe vs erlang   remote-latency rtt_p50_us (idle): 2.00x (50.0 us vs 100.0 us)"));
        assert!(find("erlang: OTP 25").starts_with("erlang:"));
    }
}
