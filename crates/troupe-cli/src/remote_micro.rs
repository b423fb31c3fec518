//! The distribution benchmarks of `troupe lab micro`: `remote-pingpong`, `remote-latency`,
//! `contention` and `detection` (crate `troupe-remote`, `bench`). The far node is this same
//! binary started as `troupe node`, a separate OS process on loopback. With `--runtimes
//! troupe,erlang`, `remote-pingpong` and `remote-latency` also run on Erlang distribution
//! (`peers/erlang/remote`, built with its own tool) and the table ends with Troupe's ratio.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;
use troupe_remote::bench::{
    contention, detection, remote_latency, remote_pingpong, ContentionParams, DetectionParams, LatencyParams, Launcher,
    PingPongParams, Row,
};

/// The benchmark names this module answers for.
pub(crate) const NAMES: [&str; 4] = ["remote-pingpong", "remote-latency", "contention", "detection"];
/// The ones a peer runtime implements too, and which runtime.
const PEER_NAMES: [&str; 2] = ["remote-pingpong", "remote-latency"];
const PEERS: [&str; 1] = ["erlang"];

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

/// The parameters `--set` may change (as `KEY=N` or `BENCH.KEY=N`), per benchmark.
const KEYS: [(&str, &[&str]); 2] =
    [("remote-pingpong", &["messages", "window"]), ("remote-latency", &["samples", "interval_us"])];

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
) -> Result<(), Failure> {
    let troupe_only = ["troupe".to_owned()];
    let runtimes = if runtimes.is_empty() { &troupe_only[..] } else { runtimes };
    if let Some(rt) = runtimes.iter().find(|r| r.as_str() != "troupe" && !PEERS.contains(&r.as_str())) {
        eprintln!(
            "troupe lab micro: the distribution benchmarks have no {rt} implementation (troupe, erlang); skipped"
        );
    }
    let mut rows: Vec<Row> = Vec::new();
    for name in names {
        for rt in runtimes {
            let got = match rt.as_str() {
                "troupe" => troupe(name, reps, &params_for(name, sets))?,
                peer if PEERS.contains(&peer) && PEER_NAMES.contains(&name.as_str()) => {
                    peer_rows(peer, name, reps, &params_for(name, sets))?
                }
                peer if PEERS.contains(&peer) => {
                    eprintln!("troupe lab micro: {name} runs on troupe only; skipped for {peer}");
                    continue;
                }
                _ => continue,
            };
            for r in &got {
                if json {
                    println!("{}", r.to_json());
                } else {
                    println!(
                        "{:<16} {:<8} {:<12} {:>14.3} {:<6} {}",
                        r.bench, r.runtime, r.metric, r.value, r.unit, r.params
                    );
                }
            }
            rows.extend(got);
        }
    }
    if !json {
        for line in ratios(&rows) {
            println!("{line}");
        }
    }
    Ok(())
}

fn troupe(name: &str, reps: Option<u32>, set: &[(&str, u64)]) -> Result<Vec<Row>, Failure> {
    let get = |k: &str| set.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the troupe executable: {e}"))?;
    let launcher = Launcher { program: exe, args: vec!["node".into()] };
    eprintln!("micro: {name} on troupe (two OS processes on loopback) ...");
    match name {
        "remote-pingpong" => {
            let d = PingPongParams::default();
            let p = PingPongParams {
                reps: reps.unwrap_or(d.reps),
                messages: get("messages").unwrap_or(d.messages),
                window: get("window").unwrap_or(d.window),
            };
            remote_pingpong(&launcher, &p)
        }
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

/// Builds and runs `peers/<peer>/remote` for `name` (peer contract: exit 3 = missing toolchain).
fn peer_rows(peer: &str, name: &str, reps: Option<u32>, set: &[(&str, u64)]) -> Result<Vec<Row>, Failure> {
    let root = troupe_lab::root::project_root().map_err(|e| e.to_string())?;
    let dir = root.join("peers").join(peer).join("remote");
    eprintln!("micro: {name} on {peer} (two OS processes on loopback) ...");
    let build = Command::new(dir.join("build")).output().map_err(|e| format!("{peer}: cannot run its build: {e}"))?;
    if !build.status.success() {
        let err = String::from_utf8_lossy(&build.stderr).trim().to_owned();
        return Err(Failure {
            message: format!("{peer}: build failed: {err}"),
            missing_toolchain: build.status.code() == Some(3),
        });
    }
    let mut cmd = Command::new(dir.join("run"));
    cmd.arg(name);
    if let Some(r) = reps {
        cmd.arg(format!("reps={r}"));
    }
    cmd.args(set.iter().map(|(k, v)| format!("{k}={v}")));
    let out = cmd.output().map_err(|e| format!("{peer}: cannot run it: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr).trim().to_owned();
        return Err(format!("{peer} {name} failed ({}): {err}", out.status).into());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| parse_row(l).ok_or_else(|| Failure::from(format!("{peer} {name}: not a result line: {l:?}"))))
        .collect()
}

fn parse_row(line: &str) -> Option<Row> {
    let v: Value = serde_json::from_str(line).ok()?;
    Some(Row {
        bench: v["bench"].as_str()?.to_owned(),
        runtime: v["runtime"].as_str()?.to_owned(),
        metric: v["metric"].as_str()?.to_owned(),
        value: v["value"].as_f64()?,
        unit: v["unit"].as_str()?.to_owned(),
        params: v["params"].clone(),
    })
}

/// "troupe vs <peer>" per (bench, metric, mode), Troupe's default settings (plaintext, as
/// Erlang distribution is by default) only; above 1 means
/// Troupe is better (more messages per second, or a shorter round trip).
fn ratios(rows: &[Row]) -> Vec<String> {
    let key = |r: &Row| (r.bench.clone(), r.metric.clone(), r.params["mode"].as_str().unwrap_or("").to_owned());
    let mut out = Vec::new();
    for t in rows.iter().filter(|r| r.runtime == "troupe") {
        if t.params.get("setting").is_some_and(|s| s != "default") || t.params["tls"] == true {
            continue;
        }
        for p in rows.iter().filter(|r| r.runtime != "troupe" && key(r) == key(t)) {
            let ratio = if t.unit == "msg/s" { t.value / p.value } else { p.value / t.value };
            if t.unit == "msg/s" || t.unit == "us" {
                let (b, m, mode) = key(t);
                out.push(format!(
                    "troupe vs {:<8} {b} {m}{}: {:.2}x ({:.1} vs {:.1} {})",
                    p.runtime,
                    if mode.is_empty() { String::new() } else { format!(" ({mode})") },
                    ratio,
                    t.value,
                    p.value,
                    t.unit
                ));
            }
        }
    }
    out
}
