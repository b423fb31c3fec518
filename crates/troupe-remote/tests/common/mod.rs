//! Test harness for multi-process tests: starts `troupe-node` OS processes on loopback with a
//! generated configuration, reads their stdout protocol (`listening on`, `event {json}`, command
//! answers) with bounded waits, sends them commands, and signals them (SIGKILL, SIGSTOP).
#![allow(dead_code, unreachable_pub)]

pub mod attacker;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

pub const SECRET: &str = "test-secret";

static N: AtomicU32 = AtomicU32::new(0);

/// A node's piped stderr, read by a thread into a buffer the test can wait on: a log line is
/// written after the peer hears its refusal, so a test waits for the line, not for the reply.
pub struct StderrLog {
    text: std::sync::Arc<std::sync::Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl StderrLog {
    /// Starts reading `stderr` until the node closes it.
    pub fn new(stderr: std::process::ChildStderr) -> StderrLog {
        let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = text.clone();
        let reader = std::thread::spawn(move || {
            let mut r = BufReader::new(stderr);
            let mut line = String::new();
            while matches!(r.read_line(&mut line), Ok(n) if n > 0) {
                sink.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        StderrLog { text, reader: Some(reader) }
    }

    /// Waits (bounded by `limit`) until every one of `needles` has been written; true if so.
    pub fn wait_for(&self, needles: &[&str], limit: Duration) -> bool {
        let end = Instant::now() + limit;
        loop {
            if needles.iter().all(|n| self.text.lock().unwrap().contains(n)) {
                return true;
            }
            if Instant::now() >= end {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Everything written, once the node has closed stderr (it has exited).
    pub fn finish(mut self) -> String {
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        self.text.lock().unwrap().clone()
    }
}

/// A `troupe-node` child process.
pub struct NodeProc {
    pub child: Child,
    pub addr: String,
    pub name: String,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    config: std::path::PathBuf,
}

impl NodeProc {
    /// Starts a node named `name` with `extra` TOML lines (services, heartbeat, ...).
    pub fn start(name: &str, extra: &str) -> NodeProc {
        Self::start_with(name, extra, SECRET, &[])
    }

    /// Starts a node, optionally prefixing the command (e.g. `ip netns exec NS`).
    pub fn start_with(name: &str, extra: &str, secret: &str, prefix: &[&str]) -> NodeProc {
        Self::start_full(name, extra, secret, prefix, None)
    }

    /// Starts a node whose stderr is a pipe returned to the caller (who may never read it),
    /// running the binary at `bin` (default: this build's `troupe-node`).
    pub fn start_piped_stderr(name: &str, extra: &str, bin: Option<&str>) -> (NodeProc, std::process::ChildStderr) {
        let default_bin = std::env::var("TROUPE_NODE_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_troupe-node").into());
        let mut p = Self::start_full(name, extra, SECRET, &[], Some(bin.unwrap_or(&default_bin)));
        let err = p.child.stderr.take().expect("stderr piped");
        (p, err)
    }

    /// Starts the `troupe-node` at `bin` (stderr inherited).
    pub fn start_bin(name: &str, extra: &str, bin: &str) -> NodeProc {
        let mut p = Self::start_full(name, extra, SECRET, &[], Some(bin));
        drop(p.child.stderr.take());
        p
    }

    fn start_full(name: &str, extra: &str, secret: &str, prefix: &[&str], piped: Option<&str>) -> NodeProc {
        let n = N.fetch_add(1, Ordering::Relaxed);
        let config = std::env::temp_dir().join(format!("troupe-test-{}-{n}-{name}.toml", std::process::id()));
        let listen = if extra.contains("listen") { String::new() } else { "listen = \"127.0.0.1:0\"\n".into() };
        let text = format!("name = \"{name}\"\nsecret = \"{secret}\"\n{listen}{extra}\n");
        std::fs::write(&config, text).unwrap();
        let default_bin = std::env::var("TROUPE_NODE_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_troupe-node").into());
        let bin = piped.unwrap_or(&default_bin);
        let mut cmd = if prefix.is_empty() {
            Command::new(bin)
        } else {
            let mut c = Command::new(prefix[0]);
            c.args(&prefix[1..]).arg(bin);
            c
        };
        let mut child = cmd
            .arg("--config")
            .arg(&config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if piped.is_some() { Stdio::piped() } else { Stdio::inherit() })
            .spawn()
            .expect("spawn troupe-node");
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
        let mut p = NodeProc { child, addr: String::new(), name: name.into(), stdin, lines: rx, config };
        let first = p.wait_line(|l| l.starts_with("listening on "), Duration::from_secs(20));
        p.addr = first.trim_start_matches("listening on ").to_owned();
        p
    }

    /// Waits (bounded) for a stdout line matching `pred`; panics with the lines seen otherwise.
    pub fn wait_line(&mut self, pred: impl Fn(&str) -> bool, limit: Duration) -> String {
        self.try_wait_line(pred, limit)
            .unwrap_or_else(|| panic!("node {}: expected line not seen within {limit:?}", self.name))
    }

    /// Like `wait_line`, `None` on timeout.
    pub fn try_wait_line(&mut self, pred: impl Fn(&str) -> bool, limit: Duration) -> Option<String> {
        let end = Instant::now() + limit;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if pred(&l) => return Some(l),
                Ok(_) => continue,
                Err(RecvTimeoutError::Timeout) => return None,
                Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// Sends a command line.
    pub fn cmd(&mut self, line: &str) {
        let s = self.stdin.as_mut().unwrap();
        writeln!(s, "{line}").unwrap();
        s.flush().unwrap();
    }

    /// The node's counters (`stats` command).
    pub fn stats(&mut self) -> serde_json::Value {
        self.cmd("stats");
        let l = self.wait_line(|l| l.starts_with("stats "), Duration::from_secs(10));
        serde_json::from_str(&l["stats ".len()..]).unwrap()
    }

    /// Peak resident memory (VmHWM) of the process, in KiB.
    pub fn peak_rss_kib(&self) -> u64 {
        proc_status_kib(self.pid(), "VmHWM:")
    }

    /// Resident memory now (VmRSS), in KiB.
    pub fn rss_kib(&self) -> u64 {
        proc_status_kib(self.pid(), "VmRSS:")
    }

    /// Waits (bounded, polling the exit status) for the process to exit.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let end = Instant::now() + limit;
        loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Some(st);
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
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

impl Drop for NodeProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        // A stopped process must be continued to be reaped promptly.
        // SAFETY: as in `signal`.
        unsafe {
            libc::kill(self.pid(), libc::SIGCONT);
        }
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.config);
    }
}

/// A field of /proc/PID/status in KiB.
pub fn proc_status_kib(pid: i32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    text.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A config for an in-test node.
/// A loopback port that was free a moment ago (bound, read, released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub fn cfg(name: &str) -> troupe_remote::NodeConfig {
    troupe_remote::NodeConfig::new(name, SECRET)
}

/// Waits (bounded) for a node event matching `pred`.
pub async fn wait_event(
    rx: &mut tokio::sync::broadcast::Receiver<troupe_remote::NodeEvent>,
    limit: Duration,
    pred: impl Fn(&troupe_remote::NodeEvent) -> bool,
) -> troupe_remote::NodeEvent {
    tokio::time::timeout(limit, async {
        loop {
            match rx.recv().await {
                Ok(ev) if pred(&ev) => return ev,
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("event stream closed: {e}"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no matching node event within {limit:?}"))
}

/// Monitors `target` and sends the reason of its `Down` to `out`.
pub struct DownWatcher {
    pub target: troupe::AnyRef,
    pub out: tokio::sync::mpsc::UnboundedSender<troupe::ExitReason>,
}

impl troupe::Actor for DownWatcher {
    type Msg = ();
    async fn started(&mut self, ctx: &mut troupe::Ctx<Self>) -> Result<(), troupe::ActorError> {
        ctx.monitor(&self.target);
        Ok(())
    }
    async fn handle(&mut self, _: (), _: &mut troupe::Ctx<Self>) {}
    async fn on_down(&mut self, d: troupe::Down, _: &mut troupe::Ctx<Self>) {
        let _ = self.out.send(d.reason);
    }
}

/// Spawns a [`DownWatcher`] of `target`; its `Down`'s reason arrives on the receiver.
pub fn watch(target: troupe::AnyRef) -> tokio::sync::mpsc::UnboundedReceiver<troupe::ExitReason> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    troupe::spawn(DownWatcher { target, out: tx });
    rx
}
