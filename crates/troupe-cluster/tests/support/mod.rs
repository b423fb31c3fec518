//! Harness for the cluster's multi-process tests: `troupe-cluster-node` OS processes on
//! loopback, their `event {json}` lines collected, commands answered, signals sent. Every
//! wait is bounded; a wait that times out fails with what the node printed.
#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const SECRET: &str = "cluster-test-secret";

/// The cluster settings of the tests: 100 ms heartbeats, with an acceptable pause wide enough
/// that a loaded 2-core machine does not cause false unreachable marks.
pub const PROFILE: &str = "heartbeat_interval_ms = 100\nacceptable_pause_ms = 1000\nmin_std_dev_ms = 50\n\
gossip_interval_ms = 200\nstable_after_ms = 1500\nseed_timeout_ms = 1000\njoin_retry_min_ms = 100\njoin_retry_max_ms = 1000\n";

static N: AtomicU32 = AtomicU32::new(0);

/// A cluster node process.
pub struct Proc {
    pub child: Child,
    pub addr: String,
    pub name: String,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every line read so far.
    pub seen: Vec<String>,
    config: std::path::PathBuf,
}

/// Starts a node named `name` with a `[cluster]` section made of `cluster` (TOML lines) and
/// the node-level `extra` lines, using `secret`.
pub fn start(name: &str, extra: &str, cluster: &str, secret: &str) -> Proc {
    start_in(None, name, "127.0.0.1:0", extra, cluster, secret)
}

/// Like `start`, inside network namespace `ns` (through `ip netns exec`), listening on `listen`.
pub fn start_in(ns: Option<&str>, name: &str, listen: &str, extra: &str, cluster: &str, secret: &str) -> Proc {
    let n = N.fetch_add(1, Ordering::Relaxed);
    let config = std::env::temp_dir().join(format!("troupe-cluster-test-{}-{n}-{name}.toml", std::process::id()));
    let text =
        format!("name = \"{name}\"\nsecret = \"{secret}\"\nlisten = \"{listen}\"\n{extra}\n[cluster]\n{cluster}\n");
    std::fs::write(&config, text).unwrap();
    let bin = env!("CARGO_BIN_EXE_troupe-cluster-node");
    let mut cmd = match ns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns, bin]);
            c
        }
        None => Command::new(bin),
    };
    let mut child = cmd
        .arg("--config")
        .arg(&config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn troupe-cluster-node");
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

/// The `[cluster]` lines of a node joining through `seed` (none: it starts the cluster).
pub fn cluster_lines(seed: Option<&str>, more: &str) -> String {
    let seeds = seed.map(|s| format!("seeds = [\"{s}\"]\n")).unwrap_or_default();
    format!("{PROFILE}{seeds}{more}")
}

impl Proc {
    /// Waits (bounded) for a line matching `pred`, among lines not yet consumed.
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
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return None,
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

    /// Whether an event line `ev` about `addr` was already seen.
    pub fn saw(&self, ev: &str, addr: &str) -> bool {
        self.seen.iter().any(|l| is_event(l, ev, addr))
    }

    /// Waits (bounded) for an event `ev` about `addr` (seen before or arriving).
    pub fn wait_event(&mut self, ev: &str, addr: &str, limit: Duration) {
        if !self.saw(ev, addr) {
            let (ev2, addr2) = (ev.to_owned(), addr.to_owned());
            self.wait_line(move |l| is_event(l, &ev2, &addr2), limit);
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
        self.wait_line(move |l| l.starts_with(&p), Duration::from_secs(20))
    }

    /// The node's view (`status` command).
    pub fn status(&mut self) -> Value {
        let l = self.ask("status", "status ");
        serde_json::from_str(&l["status ".len()..]).unwrap()
    }

    /// Re-reads the status after every line the node prints until `pred` holds (bounded).
    pub fn wait_status(&mut self, what: &str, pred: impl Fn(&Value) -> bool, limit: Duration) -> Value {
        let end = Instant::now() + limit;
        loop {
            let s = self.status();
            if pred(&s) {
                return s;
            }
            if Instant::now() >= end {
                panic!("node {}: {what} not reached within {limit:?}; last status: {s:#}", self.name);
            }
            // Wait for something to happen (an event) before asking again.
            let left = end.saturating_duration_since(Instant::now()).min(Duration::from_millis(500));
            self.try_wait_line(|l| l.starts_with("event "), left);
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid; no memory is involved.
        let r = unsafe { libc::kill(self.pid(), sig) };
        assert_eq!(r, 0, "kill({}, {sig})", self.pid());
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        // SAFETY: as in `signal`; a stopped process must be continued to be reaped.
        unsafe {
            libc::kill(self.pid(), libc::SIGCONT);
        }
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.config);
    }
}

/// Whether `line` is `event {json}` with `"ev": ev` about `addr` (its `addr` field).
pub fn is_event(line: &str, ev: &str, addr: &str) -> bool {
    let Some(json) = line.strip_prefix("event ") else { return false };
    let Ok(v) = serde_json::from_str::<Value>(json) else { return false };
    v["ev"] == ev && (addr.is_empty() || v["addr"] == addr)
}

/// Members with this status in a status answer.
pub fn count(s: &Value, status: &str) -> usize {
    s["members"].as_array().map_or(0, |m| m.iter().filter(|m| m["status"] == status).count())
}

/// Whether a status answer shows `n` members, all up and reachable, converged.
pub fn all_up(s: &Value, n: usize) -> bool {
    let members = s["members"].as_array().cloned().unwrap_or_default();
    s["converged"] == true
        && members.len() == n
        && members.iter().all(|m| m["status"] == "up" && m["reachable"] == true)
}

/// Starts a first node and `n - 1` joining through it.
pub fn cluster(n: usize, more: &str, extra: &str) -> Vec<Proc> {
    let first = start("n1", extra, &cluster_lines(None, more), SECRET);
    let seed = first.addr.clone();
    let mut v = vec![first];
    for i in 2..=n {
        v.push(start(&format!("n{i}"), extra, &cluster_lines(Some(&seed), more), SECRET));
    }
    for p in &mut v {
        p.wait_status("all members up", |s| all_up(s, n), Duration::from_secs(60));
    }
    v
}
