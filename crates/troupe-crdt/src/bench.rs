//! The replication benchmark of issue 14: a `GCounter` increment written with `majority` on
//! one of `nodes` `troupe-crdt-node` processes on loopback, timed until every process has
//! it ([`replication`]), and the bytes of a delta against the bytes of the full state
//! ([`sizes`]). Both return JSON rows; `troupe-crdt-bench` prints them, one a line.
//!
//! Visibility is measured with the nodes' own wall clocks (`at_us` of their `crdt_changed`
//! events, all on this machine) from the moment before the benchmark writes the command, so
//! the time includes the command's trip through the writer's standard input but not the trip
//! of the event lines back.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cli::now_us;
use crate::{DeltaCrdt, GCounter, ORMap, ORSet};

/// What [`replication`] runs.
#[derive(Clone, Debug)]
pub struct ReplicationConfig {
    /// The `troupe-crdt-node` binary.
    pub node_bin: PathBuf,
    /// Node processes (default 5).
    pub nodes: usize,
    /// Timed increments (default 500) on the first node, after `warmup` untimed ones
    /// (default 50) written on each node in turn.
    pub updates: usize,
    /// Untimed increments first.
    pub warmup: usize,
}

impl ReplicationConfig {
    /// The defaults, with the node binary next to the running executable.
    #[must_use]
    pub fn new() -> Self {
        let dir = std::env::current_exe().ok().and_then(|p| p.parent().map(Path::to_path_buf)).unwrap_or_default();
        Self { node_bin: dir.join("troupe-crdt-node"), nodes: 5, updates: 500, warmup: 50 }
    }
}

impl Default for ReplicationConfig {
    fn default() -> Self {
        Self::new()
    }
}

struct Proc {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    /// Lines read while waiting for others (an event can arrive before a command's answer).
    backlog: std::collections::VecDeque<String>,
    addr: String,
}

const LIMIT: Duration = Duration::from_secs(30);

impl Proc {
    fn start(bin: &Path, name: &str, seed: Option<&str>, dir: &Path) -> Result<Proc, String> {
        let config = dir.join(format!("{name}.toml"));
        let seeds = seed.map(|s| format!("seeds = [\"{s}\"]\n")).unwrap_or_default();
        let text = format!(
            "name = \"{name}\"\nsecret = \"crdt-bench\"\nlisten = \"127.0.0.1:0\"\n[cluster]\n\
             heartbeat_interval_ms = 100\nacceptable_pause_ms = 1000\ngossip_interval_ms = 200\n\
             stable_after_ms = 1500\njoin_retry_min_ms = 100\n{seeds}"
        );
        std::fs::write(&config, text).map_err(|e| format!("{}: {e}", config.display()))?;
        let mut child = Command::new(bin)
            .arg("--config")
            .arg(&config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                format!("cannot start {} ({e}); build it with `cargo build --release -p troupe-crdt`", bin.display())
            })?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut p = Proc { child, stdin, lines: rx, backlog: Default::default(), addr: String::new() };
        p.addr = p.wait(|l| l.starts_with("listening on "))?.trim_start_matches("listening on ").to_owned();
        Ok(p)
    }

    fn wait(&mut self, pred: impl Fn(&str) -> bool) -> Result<String, String> {
        if let Some(i) = self.backlog.iter().position(|l| pred(l)) {
            return Ok(self.backlog.remove(i).unwrap_or_default());
        }
        let end = Instant::now() + LIMIT;
        loop {
            let l = self
                .lines
                .recv_timeout(end.saturating_duration_since(Instant::now()))
                .map_err(|_| format!("node {}: no expected line within {LIMIT:?}", self.addr))?;
            if pred(&l) {
                return Ok(l);
            }
            if self.backlog.len() >= 4096 {
                self.backlog.pop_front();
            }
            self.backlog.push_back(l);
        }
    }

    fn ask(&mut self, line: &str, prefix: &str) -> Result<String, String> {
        writeln!(self.stdin, "{line}").and_then(|()| self.stdin.flush()).map_err(|e| e.to_string())?;
        self.wait(|l| l.starts_with(prefix))
    }

    fn up(&mut self, n: usize) -> Result<(), String> {
        let end = Instant::now() + Duration::from_secs(60);
        while Instant::now() < end {
            let s: Value =
                serde_json::from_str(&self.ask("status", "status ")?["status ".len()..]).map_err(|e| e.to_string())?;
            let m = s["members"].as_array().cloned().unwrap_or_default();
            if s["converged"] == true && m.len() == n && m.iter().all(|m| m["status"] == "up" && m["reachable"] == true)
            {
                return Ok(());
            }
            // Wait for the next line (or 200 ms) before asking again.
            if let Ok(l) = self.lines.recv_timeout(Duration::from_millis(200)) {
                self.backlog.push_back(l);
            }
        }
        Err(format!("the cluster of {n} did not form within 60 s"))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn changed_at(line: &str, min: u64) -> Option<u64> {
    let v: Value = serde_json::from_str(line.strip_prefix("event ")?).ok()?;
    (v["ev"] == "crdt_changed" && v["value"].as_u64()? >= min).then(|| v["at_us"].as_u64()).flatten()
}

fn pct(sorted: &[u64], p: f64) -> u64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Runs the replication benchmark; one JSON row.
pub fn replication(cfg: &ReplicationConfig) -> Result<Value, String> {
    let dir = std::env::temp_dir().join(format!("troupe-crdt-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut procs = vec![Proc::start(&cfg.node_bin, "b1", None, &dir)?];
    let seed = procs[0].addr.clone();
    for i in 2..=cfg.nodes {
        procs.push(Proc::start(&cfg.node_bin, &format!("b{i}"), Some(&seed), &dir)?);
    }
    for p in &mut procs {
        p.up(cfg.nodes)?;
        p.ask("watch bench", "watching bench")?;
        p.backlog.clear();
    }
    let (mut visible, mut acked) = (Vec::new(), Vec::new());
    for i in 1..=(cfg.warmup + cfg.updates) as u64 {
        let t0 = now_us();
        let start = Instant::now();
        // Warm-up writes go round every node, so the counter has an entry per node (its
        // full state is then the size the figure compares a delta with).
        let writer = if i <= cfg.warmup as u64 { (i as usize - 1) % procs.len() } else { 0 };
        let answer = procs[writer].ask("incr bench 1 majority 2000", "incr bench ")?;
        let ack = start.elapsed().as_micros() as u64;
        if answer != format!("incr bench ok {i}") {
            return Err(format!("increment {i}: {answer}"));
        }
        let mut last = 0;
        for p in &mut procs {
            p.backlog.retain(|l| changed_at(l, i).is_some());
            let l = p.wait(|l| changed_at(l, i).is_some())?;
            last = last.max(changed_at(&l, i).unwrap_or(0));
        }
        if i > cfg.warmup as u64 {
            visible.push(last.saturating_sub(t0));
            acked.push(ack);
        }
    }
    let stats: Value = serde_json::from_str(&procs[0].ask("crdt-stats", "crdt-stats ")?["crdt-stats ".len()..])
        .map_err(|e| e.to_string())?;
    let size: u64 = procs[0].ask("size bench", "size bench ")?["size bench ".len()..].parse().unwrap_or(0);
    drop(procs);
    let _ = std::fs::remove_dir_all(&dir);
    visible.sort_unstable();
    acked.sort_unstable();
    let deltas = stats["deltas_sent"].as_u64().unwrap_or(0).max(1);
    Ok(json!({
        "bench": "crdt-replication",
        "crdt": "gcounter",
        "level": "majority",
        "nodes": cfg.nodes,
        "updates": cfg.updates,
        "visible_on_all_p50_us": pct(&visible, 0.5),
        "visible_on_all_p99_us": pct(&visible, 0.99),
        "visible_on_all_max_us": pct(&visible, 1.0),
        "majority_ack_p50_us": pct(&acked, 0.5),
        "majority_ack_p99_us": pct(&acked, 0.99),
        "delta_bytes_per_message": stats["delta_bytes_sent"].as_u64().unwrap_or(0) / deltas,
        "full_state_bytes": size,
        "delta_messages": stats["deltas_sent"],
        "state_messages": stats["states_sent"],
    }))
}

fn row<T: DeltaCrdt>(name: &str, elements: usize, mut state: T, update: impl FnOnce(&mut T)) -> Value {
    let _ = state.take_delta();
    update(&mut state);
    let delta = state.take_delta().map_or(0, |d| troupe_remote::codec::encode(&d).map_or(0, |b| b.len()));
    let full = troupe_remote::codec::encode(&state).map_or(0, |b| b.len());
    json!({"bench": "crdt-sizes", "crdt": name, "elements": elements, "delta_bytes": delta, "full_state_bytes": full})
}

/// Delta bytes of one update against the full state's bytes, for a few shapes (replica ids
/// as the replicator makes them: `ADDR#UID`, 28 bytes).
#[must_use]
pub fn sizes() -> Vec<Value> {
    let id = |i: usize| format!("127.0.0.1:{}#{:020}", 40000 + i, i);
    let mut g = GCounter::default();
    (0..5).for_each(|i| g.increment(&id(i), 1000));
    let mut s = ORSet::default();
    (0..1000u64).for_each(|e| s.add(&id((e % 5) as usize), e));
    let mut m: ORMap<u64, GCounter> = ORMap::default();
    (0..1000u64).for_each(|k| m.update(&id((k % 5) as usize), k, |c| c.increment(&id((k % 5) as usize), 1)));
    vec![
        row("gcounter", 5, g, |g| g.increment(&id(0), 1)),
        row("orset<u64>", 1000, s, |s| s.add(&id(0), 5000)),
        row("ormap<u64,gcounter>", 1000, m, |m| m.update(&id(0), 7, |c| c.increment(&id(0), 1))),
    ]
}
