//! A harness for tests that run cluster nodes as OS processes (`troupe-cluster-node`,
//! `troupe node`, or a crate's own node binary speaking the same line protocol): starts one from
//! a TOML text, collects its stdout lines (`listening on`, `event {json}`, command answers),
//! sends commands, waits (always bounded) for lines, events and statuses, and signals it. A
//! wait that times out panics with the last lines the node printed. The process is killed and
//! reaped when the handle is dropped.
//!
//! ```no_run
//! use std::time::Duration;
//! use troupe_cluster::testproc::NodeProc;
//! let cfg = "name = \"a\"\nsecret = \"s\"\nlisten = \"127.0.0.1:0\"\n[cluster]\n";
//! let mut a = NodeProc::start("target/debug/troupe-cluster-node", &[], cfg);
//! a.wait_status("up", |s| s["members"][0]["status"] == "up", Duration::from_secs(30));
//! ```

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::Value;

static N: AtomicU32 = AtomicU32::new(0);

/// A node process under test.
pub struct NodeProc {
    /// The process.
    pub child: Child,
    /// The address it listens on (from its first line).
    pub addr: String,
    /// Its name (for messages).
    pub name: String,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every line read so far.
    pub seen: Vec<String>,
    config: std::path::PathBuf,
}

impl NodeProc {
    /// Runs `prefix... bin --config FILE` with `toml` as FILE (its `name` key names the
    /// handle), stderr discarded, and waits (30 s at most) for `listening on ADDR`.
    #[must_use]
    pub fn start(bin: &str, prefix: &[&str], toml: &str) -> NodeProc {
        let n = N.fetch_add(1, Ordering::Relaxed);
        let name = toml
            .lines()
            .find_map(|l| l.trim().strip_prefix("name = \"").and_then(|r| r.strip_suffix('"')))
            .unwrap_or("node")
            .to_owned();
        let config = std::env::temp_dir().join(format!("troupe-testproc-{}-{n}-{name}.toml", std::process::id()));
        std::fs::write(&config, toml).expect("write the node's config");
        let mut cmd = match prefix.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(bin);
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
            .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
        let stdout = child.stdout.take().expect("stdout is piped");
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
        let mut p = NodeProc { child, addr: String::new(), name, stdin, lines: rx, seen: Vec::new(), config };
        let first = p.wait_line(|l| l.starts_with("listening on "), Duration::from_secs(30));
        p.addr = first.trim_start_matches("listening on ").to_owned();
        p
    }

    /// Waits (bounded) for a new line matching `pred`; `None` on timeout or exit.
    pub fn try_wait_line(&mut self, pred: impl Fn(&str) -> bool, limit: Duration) -> Option<String> {
        let end = Instant::now() + limit;
        loop {
            match self.lines.recv_timeout(end.saturating_duration_since(Instant::now())) {
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

    /// Whether an `event` line `ev` about `addr` (any, when empty) was already read.
    #[must_use]
    pub fn saw(&self, ev: &str, addr: &str) -> bool {
        self.seen.iter().any(|l| is_event(l, ev, addr))
    }

    /// Waits (bounded) for an event `ev` about `addr` (already read, or arriving).
    pub fn wait_event(&mut self, ev: &str, addr: &str, limit: Duration) {
        if !self.saw(ev, addr) {
            let (ev2, addr2) = (ev.to_owned(), addr.to_owned());
            self.wait_line(move |l| is_event(l, &ev2, &addr2), limit);
        }
    }

    /// Sends a command line.
    pub fn cmd(&mut self, line: &str) {
        let s = self.stdin.as_mut().expect("stdin is piped");
        writeln!(s, "{line}").expect("the node reads its stdin");
        s.flush().expect("the node reads its stdin");
    }

    /// Sends a command and returns its answer (the first new line starting with `prefix`).
    pub fn ask(&mut self, line: &str, prefix: &str) -> String {
        self.cmd(line);
        let p = prefix.to_owned();
        self.wait_line(move |l| l.starts_with(&p), Duration::from_secs(20))
    }

    /// The node's view of the cluster (`status` command), as JSON.
    pub fn status(&mut self) -> Value {
        let l = self.ask("status", "status ");
        serde_json::from_str(&l["status ".len()..]).expect("status answers JSON")
    }

    /// Asks for the status again after every event line until `pred` holds (bounded; panics
    /// with the last status, naming `what`, otherwise).
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
            let left = end.saturating_duration_since(Instant::now()).min(Duration::from_millis(500));
            self.try_wait_line(|l| l.starts_with("event "), left);
        }
    }

    /// Its process id.
    #[must_use]
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Sends it a signal (`libc::SIGKILL`, `SIGSTOP`, ...).
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid; no memory is involved.
        let r = unsafe { libc::kill(self.pid(), sig) };
        assert_eq!(r, 0, "kill({}, {sig})", self.pid());
    }
}

impl Drop for NodeProc {
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

/// Whether `line` is `event {json}` with `"ev": ev` about `addr` (any, when `addr` is empty).
#[must_use]
pub fn is_event(line: &str, ev: &str, addr: &str) -> bool {
    let Some(json) = line.strip_prefix("event ") else { return false };
    let Ok(v) = serde_json::from_str::<Value>(json) else { return false };
    v["ev"] == ev && (addr.is_empty() || v["addr"] == addr)
}

/// Members with this status in a status answer.
#[must_use]
pub fn count(s: &Value, status: &str) -> usize {
    s["members"].as_array().map_or(0, |m| m.iter().filter(|m| m["status"] == status).count())
}

/// Whether a status answer shows exactly `n` members, all up and reachable, converged.
#[must_use]
pub fn all_up(s: &Value, n: usize) -> bool {
    let members = s["members"].as_array().cloned().unwrap_or_default();
    s["converged"] == true
        && members.len() == n
        && members.iter().all(|m| m["status"] == "up" && m["reachable"] == true)
}
