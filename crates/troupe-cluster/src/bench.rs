//! The cluster benchmarks of `troupe lab micro` (real node processes on loopback, started with
//! a [`Launcher`]; `troupe lab micro` launches itself as `troupe node`):
//! - `cluster-join`: `join_ms`, from starting the first of `nodes` cold processes to the
//!   moment every one of them has reported every member up (each node's `member_up` events).
//! - `cluster-detect`: `detect_ms`, from SIGKILL of one member to the moment every survivor
//!   has reported it `unreachable`, for the fast profile (100 ms heartbeats) and, with
//!   `akka=1`, Akka's defaults (1 s heartbeats, 3 s acceptable pause); and, with `idle_s=N`,
//!   `false_unreachable`: unreachable marks in an idle cluster of `nodes` over N seconds.
//! - `cluster-converge`: the simulator (`sim`), `converge_ms` and `gossip_rounds` of a
//!   membership change (one node leaves) at `sim_nodes` simulated nodes, and the wall time.
//!
//! - `overlay-scale`: [`overlay_scale`].
//!
//! Times are taken when this process reads the line, so they are upper bounds (a line is read
//! within microseconds of being printed; nodes are checked in turn).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use troupe_remote::bench::{median, ChildNode, Launcher, Row};

use crate::config::ClusterConfig;
use crate::error::{Error, ErrorKind};
use crate::sim::{Sim, SimConfig};

const SECRET: &str = "troupe-cluster-bench";
const LIMIT: Duration = Duration::from_secs(120);

/// The `[cluster]` lines of the fast profile ([`ClusterConfig::fast`]).
fn fast_lines() -> String {
    let f = ClusterConfig::fast();
    format!(
        "heartbeat_interval_ms = {}\nacceptable_pause_ms = {}\nmin_std_dev_ms = {}\ngossip_interval_ms = {}\n\
         seed_timeout_ms = {}\njoin_retry_min_ms = {}\njoin_retry_max_ms = {}\n",
        f.heartbeat_interval_ms,
        f.acceptable_pause_ms,
        f.min_std_dev_ms,
        f.gossip_interval_ms,
        f.seed_timeout_ms,
        f.join_retry_min_ms,
        f.join_retry_max_ms
    )
}

fn err(e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::node("the benchmark", e)
}

fn bad(what: &str) -> Error {
    ErrorKind::Node(format!("the benchmark: {what}")).into()
}

fn row(bench: &str, metric: &str, value: f64, unit: &str, params: Value) -> Row {
    Row::of("troupe", bench, metric, value, unit, params)
}

/// A row of the median of `samples`, with their min, max and values.
fn spread_row(bench: &str, metric: &str, samples: Vec<f64>, unit: &str, params: Value) -> Row {
    let mut r = row(bench, metric, median(samples.clone()), unit, params);
    r.min = samples.iter().copied().reduce(f64::min);
    r.max = samples.iter().copied().reduce(f64::max);
    r.samples = samples;
    r
}

fn event_addr(line: &str, ev: &str) -> Option<String> {
    let v: Value = serde_json::from_str(line.strip_prefix("event ")?).ok()?;
    (v["ev"] == ev).then(|| v["addr"].as_str().map(str::to_owned)).flatten()
}

/// Starts `n` nodes (the first starts the cluster, the others join through it) with these
/// `[cluster]` lines; returns them and the time they took to be all up everywhere.
fn form(launcher: &Launcher, n: usize, lines: &str) -> Result<(Vec<ChildNode>, Duration), Error> {
    let t0 = Instant::now();
    let conf = |i: usize, seed: Option<&str>| {
        let seeds = seed.map(|s| format!("seeds = [\"{s}\"]\n")).unwrap_or_default();
        format!("name = \"c{i}\"\nsecret = \"{SECRET}\"\nlisten = \"127.0.0.1:0\"\n[cluster]\n{lines}{seeds}")
    };
    let first = ChildNode::start(launcher, &conf(1, None)).map_err(err)?;
    let seed = first.addr.clone();
    let mut nodes = vec![first];
    for i in 2..=n {
        nodes.push(ChildNode::start(launcher, &conf(i, Some(&seed))).map_err(err)?);
    }
    let all: BTreeSet<String> = nodes.iter().map(|c| c.addr.clone()).collect();
    for c in &mut nodes {
        let mut up = BTreeSet::new();
        while up != all {
            let l = c.wait_line(|l| event_addr(l, "member_up").is_some(), LIMIT).map_err(err)?;
            up.extend(event_addr(&l, "member_up"));
        }
    }
    Ok((nodes, t0.elapsed()))
}

/// `cluster-join`: `nodes` (default 16) cold processes to all up everywhere, `reps` times.
pub fn join(launcher: &Launcher, nodes: usize, reps: u32) -> Result<Vec<Row>, Error> {
    let mut times = Vec::new();
    for _ in 0..reps.max(1) {
        let (cluster, took) = form(launcher, nodes, &fast_lines())?;
        times.push(took.as_secs_f64() * 1e3);
        drop(cluster);
    }
    let params = json!({ "nodes": nodes, "reps": reps.max(1), "profile": "fast" });
    Ok(vec![spread_row("cluster-join", "join_ms", times, "ms", params)])
}

fn detect_once(launcher: &Launcher, nodes: usize, lines: &str) -> Result<f64, Error> {
    let (mut cluster, _) = form(launcher, nodes, lines)?;
    let mut victim = cluster.pop().ok_or_else(|| bad("no nodes"))?;
    let addr = victim.addr.clone();
    let t0 = Instant::now();
    victim.sigkill().map_err(err)?;
    for c in &mut cluster {
        c.wait_line(|l| event_addr(l, "unreachable").as_deref() == Some(addr.as_str()), LIMIT).map_err(err)?;
    }
    Ok(t0.elapsed().as_secs_f64() * 1e3)
}

/// `cluster-detect`: SIGKILL of one of `nodes` to unreachable at every survivor, `reps`
/// times, for the fast profile and (with `akka`) Akka's defaults; `idle_s` > 0 adds the
/// false-unreachable count of an idle cluster of `nodes` with the fast profile.
pub fn detect(launcher: &Launcher, nodes: usize, reps: u32, akka: bool, idle_s: u64) -> Result<Vec<Row>, Error> {
    let mut rows = Vec::new();
    let mut profiles = vec![("fast", fast_lines())];
    if akka {
        profiles.push(("akka-default", String::new()));
    }
    for (name, lines) in profiles {
        let mut times = Vec::new();
        for _ in 0..reps.max(1) {
            times.push(detect_once(launcher, nodes, &lines)?);
        }
        let params = json!({ "nodes": nodes, "reps": reps.max(1), "profile": name });
        rows.push(spread_row("cluster-detect", "detect_ms", times, "ms", params));
    }
    if idle_s > 0 {
        let (mut cluster, _) = form(launcher, nodes, &fast_lines())?;
        let end = Instant::now() + Duration::from_secs(idle_s);
        let mut marks = 0u64;
        for c in &mut cluster {
            let left = end.saturating_duration_since(Instant::now());
            while let Ok(_l) = c.wait_line(|l| event_addr(l, "unreachable").is_some(), left) {
                marks += 1;
            }
        }
        let params = json!({ "nodes": nodes, "idle_s": idle_s, "profile": "fast" });
        rows.push(row("cluster-detect", "false_unreachable", marks as f64, "marks", params));
    }
    Ok(rows)
}

/// `overlay-scale` (seed 004 §6.3) in the overlay simulator: for each overlay and node count,
/// the bytes and messages of a replicated counter whose full state every node sends to its
/// neighbours every 5 s for 60 s, and its convergence time; one row per metric.
pub fn overlay_scale(sizes: &[usize], seed: u64) -> Vec<Row> {
    use crate::overlay::{sim::scale, OverlayKind};
    let mut rows = Vec::new();
    for &n in sizes {
        for kind in [OverlayKind::FullMesh, OverlayKind::ClientServer, OverlayKind::Hyparview] {
            let wall = Instant::now();
            let r = scale(kind, n, seed, 5_000, 60_000);
            let params = json!({
                "overlay": kind, "nodes": n, "seed": seed, "period_ms": 5000, "duration_ms": 60000,
                "wall_s": wall.elapsed().as_secs_f64()
            });
            rows.push(row("overlay-scale", "bytes_total", r.bytes_total as f64, "bytes", params.clone()));
            rows.push(row("overlay-scale", "messages_total", r.messages_total as f64, "msgs", params.clone()));
            let conv = r.convergence_ms.map_or(f64::NAN, |c| c as f64);
            rows.push(row("overlay-scale", "convergence_ms", conv, "ms", params));
        }
    }
    rows
}

/// `cluster-converge`: in the simulator, `sim_nodes` nodes form a cluster; then one leaves;
/// reports the time (virtual) and gossip rounds until every node sees it removed, and the
/// wall time of the whole simulation.
pub fn converge(sim_nodes: usize, seed: u64) -> Result<Vec<Row>, Error> {
    let wall = Instant::now();
    let cluster = ClusterConfig { gossip_interval_ms: 1000, ..ClusterConfig::default() };
    let mut sim = Sim::new(SimConfig { nodes: sim_nodes, seed, cluster, tick_ms: 20, ..SimConfig::default() });
    let formed = sim.run_until(600_000, Sim::all_up).ok_or_else(|| bad("the simulated cluster did not form"))?;
    let t0 = sim.now();
    let sent0 = sim.delivered;
    sim.leave(1);
    let leaver = 1;
    let done = sim
        .run_until(600_000, |s| s.everyone_sees(leaver, Some(crate::member::MemberStatus::Removed), None))
        .ok_or_else(|| bad("the leave did not converge"))?;
    let ms = (done - t0) as f64;
    let params = json!({
        "sim_nodes": sim_nodes, "seed": seed, "gossip_interval_ms": 1000,
        "formed_ms": formed, "messages": sim.delivered - sent0, "wall_s": wall.elapsed().as_secs_f64()
    });
    Ok(vec![
        row("cluster-converge", "converge_ms", ms, "ms", params.clone()),
        row("cluster-converge", "gossip_rounds", ms / 1000.0, "rounds", params),
    ])
}
