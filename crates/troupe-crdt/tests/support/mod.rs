//! Harness for the multi-process tests: `troupe-crdt-node` OS processes on loopback, their
//! lines collected, commands answered, signals sent. Every wait is bounded; a wait that times
//! out fails with what the node printed. (The shape of `troupe-cluster`'s test harness.)
#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const SECRET: &str = "crdt-test-secret";

/// 100 ms heartbeats with a pause wide enough for a loaded 2-core machine; no downing.
pub const PROFILE: &str = "heartbeat_interval_ms = 100\nacceptable_pause_ms = 1000\nmin_std_dev_ms = 50\n\
gossip_interval_ms = 200\nstable_after_ms = 1500\nseed_timeout_ms = 1000\njoin_retry_min_ms = 100\njoin_retry_max_ms = 1000\n";

static N: AtomicU32 = AtomicU32::new(0);

/// A node process.
pub struct Proc {
    pub child: Child,
    pub addr: String,
    pub name: String,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    pub seen: Vec<String>,
    config: std::path::PathBuf,
}

/// Starts `bin` named `name`, joining through `seed` (none: it starts the cluster).
pub fn start(bin: &str, name: &str, seed: Option<&str>) -> Proc {
    let n = N.fetch_add(1, Ordering::Relaxed);
    let config = std::env::temp_dir().join(format!("troupe-crdt-test-{}-{n}-{name}.toml", std::process::id()));
    let seeds = seed.map(|s| format!("seeds = [\"{s}\"]\n")).unwrap_or_default();
    let text =
        format!("name = \"{name}\"\nsecret = \"{SECRET}\"\nlisten = \"127.0.0.1:0\"\n[cluster]\n{PROFILE}{seeds}");
    std::fs::write(&config, text).unwrap();
    let mut child = Command::new(bin)
        .arg("--config")
        .arg(&config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the node binary");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let stdin = child.stdin.take();
    let mut p = Proc { child, addr: String::new(), name: name.into(), stdin, lines: rx, seen: Vec::new(), config };
    let first = p.wait_line(|l| l.starts_with("listening on "), Duration::from_secs(30));
    p.addr = first.trim_start_matches("listening on ").to_owned();
    p
}

impl Proc {
    /// Waits (bounded) for a new line matching `pred`.
    pub fn try_wait_line(&mut self, pred: impl Fn(&str) -> bool, limit: Duration) -> Option<String> {
        let end = Instant::now() + limit;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    self.seen.push(l.clone());
                    if pred(&l) {
                        return Some(l);
                    }
                }
                Err(_) => return None,
            }
        }
    }

    /// Like `try_wait_line`; panics with the last lines seen on timeout.
    pub fn wait_line(&mut self, pred: impl Fn(&str) -> bool, limit: Duration) -> String {
        match self.try_wait_line(pred, limit) {
            Some(l) => l,
            None => {
                let tail: Vec<&String> = self.seen.iter().rev().take(25).collect();
                panic!(
                    "node {}: expected line not seen within {limit:?}; last lines (newest first): {tail:#?}",
                    self.name
                )
            }
        }
    }

    /// Sends a command line.
    pub fn cmd(&mut self, line: &str) {
        let s = self.stdin.as_mut().unwrap();
        writeln!(s, "{line}").unwrap();
        s.flush().unwrap();
    }

    /// Sends a command and returns its answer (the first line starting with `prefix`).
    pub fn ask(&mut self, line: &str, prefix: &str) -> String {
        self.cmd(line);
        let p = prefix.to_owned();
        self.wait_line(move |l| l.starts_with(&p), Duration::from_secs(30))
    }

    /// Waits (bounded) until a `crdt_changed` event for `key` shows `value` (or already did).
    pub fn wait_value(&mut self, key: &str, value: u64, limit: Duration) {
        let hit = |l: &str| {
            l.strip_prefix("event ")
                .and_then(|j| serde_json::from_str::<Value>(j).ok())
                .is_some_and(|v| v["ev"] == "crdt_changed" && v["key"] == key && v["value"] == value)
        };
        if !self.seen.iter().any(|l| hit(l)) {
            self.wait_line(hit, limit);
        }
    }

    /// Re-reads the status after every line the node prints until `pred` holds (bounded).
    pub fn wait_status(&mut self, pred: impl Fn(&Value) -> bool, limit: Duration) {
        let end = Instant::now() + limit;
        loop {
            let l = self.ask("status", "status ");
            let s: Value = serde_json::from_str(&l["status ".len()..]).unwrap();
            if pred(&s) {
                return;
            }
            assert!(Instant::now() < end, "node {}: status not reached within {limit:?}: {s:#}", self.name);
            let left = end.saturating_duration_since(Instant::now()).min(Duration::from_millis(300));
            self.try_wait_line(|l| l.starts_with("event "), left);
        }
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill(); // SIGKILL
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.config);
    }
}

/// Whether a status answer shows `n` members, all up and reachable, converged.
pub fn all_up(s: &Value, n: usize) -> bool {
    let members = s["members"].as_array().cloned().unwrap_or_default();
    s["converged"] == true
        && members.len() == n
        && members.iter().all(|m| m["status"] == "up" && m["reachable"] == true)
}

/// Starts `n` nodes of `bin` (the first one the seed) and waits until all see all up.
pub fn cluster(bin: &str, n: usize) -> Vec<Proc> {
    let first = start(bin, "n1", None);
    let seed = first.addr.clone();
    let mut v = vec![first];
    for i in 2..=n {
        v.push(start(bin, &format!("n{i}"), Some(&seed)));
    }
    for p in &mut v {
        p.wait_status(|s| all_up(s, n), Duration::from_secs(60));
    }
    v
}
