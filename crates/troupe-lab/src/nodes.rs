//! The node processes of a workload's Troupe system under test: the `troupe lab exec <role>`
//! processes of this very executable that a workload's program starts as its children (energy's
//! server node, latency's node B and relay, kv's store nodes, chat's and iot's groups, SCP's
//! injector), and what those processes do the same way.
//!
//! Rules:
//! 1. A node process is started as `<this executable> lab exec <role>` (or, for a plain Troupe
//!    node, `<this executable> node --config FILE`: [`NodeCmd::troupe_node`]) with the
//!    environment it is given; its stdin and stdout are pipes when asked for (line commands and answers: an
//!    address, `ready`), `/dev/null` otherwise. Its stderr goes through this process's stderr
//!    unchanged (so it lands in the run's `stderr.txt` as before), and its last lines are kept.
//! 2. Every wait is bounded: a line is waited for at most its limit, an exit at most its grace;
//!    after the grace the process is killed, and a killed process is waited for at most
//!    [`REAP_LIMIT`].
//! 3. A node process never outlives its [`NodeProc`]: dropped on any path, it is killed (and
//!    reaped by tokio); [`NodeProc::close`] and [`NodeProc::kill`] kill and reap it.
//! 5. A process marked as a network node ([`NodeCmd::net_node`]) in a run at the network layer
//!    (`TROUPE_NETNS` set) starts inside that node's namespace with `TROUPE_NET_ADDR`.
//! 4. Every error names the process ([`NodeCmd::new`]'s name), says how it ended when it has
//!    ([`describe`]), and ends with the last lines of its stderr when it wrote any.

use std::collections::VecDeque;
use std::fmt::Display;
use std::io::{Read, Write};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Notify;
use troupe_remote::{NodeConfig, NodeEvent};

/// How long a killed process is waited for (rule 2).
pub const REAP_LIMIT: Duration = Duration::from_secs(5);
/// How many of its stderr's last lines an error quotes (rule 4).
pub const TAIL_LINES: usize = 3;
/// How many of its stderr's last bytes are kept for that.
const TAIL_BYTES: usize = 4096;
/// How long an error waits for the stderr of a process that ended to be read to its end.
const TAIL_SETTLE: Duration = Duration::from_millis(500);

/// What to start: a node process's name, role, environment and pipes (rule 1).
#[derive(Debug, Clone)]
pub struct NodeCmd {
    name: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    stdin: bool,
    stdout: bool,
    net_node: Option<String>,
}

impl NodeCmd {
    /// `troupe lab exec <role>`, called `name` in every message (`node B's process`,
    /// `node process server-0`): stdin and stdout `/dev/null`, no extra environment.
    pub fn new(name: impl Into<String>, role: &str) -> NodeCmd {
        let args = ["lab", "exec", role].map(String::from).to_vec();
        NodeCmd { name: name.into(), args, env: Vec::new(), stdin: false, stdout: false, net_node: None }
    }

    /// `troupe node --config <config>`: a Troupe node of this executable speaking the node line
    /// protocol (`listening on ADDR`, `event {json}`, command answers; docs/distribution.md),
    /// called `name` in every message.
    pub fn troupe_node(name: impl Into<String>, config: &std::path::Path) -> NodeCmd {
        let args = vec!["node".into(), "--config".into(), config.display().to_string()];
        NodeCmd { name: name.into(), args, env: Vec::new(), stdin: false, stdout: false, net_node: None }
    }

    /// Sets an environment variable of the process.
    pub fn env(mut self, key: &str, value: impl Into<String>) -> NodeCmd {
        self.env.push((key.into(), value.into()));
        self
    }

    /// The process is network node `name` (as [`crate::config::Spec::net_nodes`] names it):
    /// in a run at the network layer it starts inside that node's namespace, with its address
    /// in `TROUPE_NET_ADDR` (rule 5; [`crate::netlayer`] rule 5).
    pub fn net_node(mut self, name: &str) -> NodeCmd {
        self.net_node = Some(name.into());
        self
    }

    /// Its stdin is a pipe ([`NodeProc::send`]).
    pub fn stdin(mut self) -> NodeCmd {
        self.stdin = true;
        self
    }

    /// Its stdout is a pipe ([`NodeProc::line`]).
    pub fn stdout(mut self) -> NodeCmd {
        self.stdout = true;
        self
    }

    /// Starts the process (rule 1); `cannot start NAME: ...` if it cannot be.
    pub fn start(self) -> Result<NodeProc, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find the troupe executable: {e}"))?;
        let name = self.name;
        let fail = |e: &dyn Display| format!("cannot start {name}: {e}");
        let (err_read, err_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| fail(&e))?;
        let pipe_or_null = |piped: bool| if piped { Stdio::piped() } else { Stdio::null() };
        let place = match (&self.net_node, crate::netlayer::NetFile::from_env()) {
            (Some(n), Ok(Some(f))) => {
                Some(f.node(n).cloned().ok_or_else(|| fail(&format!("{n} is not in netns.json")))?)
            }
            (_, Err(e)) => return Err(fail(&e)),
            _ => None,
        };
        let mut cmd = match &place {
            Some(p) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &p.netns]).arg(&exe).env(crate::netlayer::ENV_ADDR, &p.addr);
                c
            }
            None => Command::new(&exe),
        };
        let mut child = cmd
            .args(&self.args)
            .envs(self.env)
            .stdin(pipe_or_null(self.stdin))
            .stdout(pipe_or_null(self.stdout))
            .stderr(Stdio::from(err_write))
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| fail(&e))?;
        // The command (and with it this process's copy of the write end) is gone: the reader
        // sees the end of the pipe when the process and what it started have ended.
        let tail = Arc::new(Mutex::new(VecDeque::with_capacity(TAIL_BYTES)));
        let from = std::fs::File::from(err_read);
        let to = Arc::clone(&tail);
        let forwarder = std::thread::Builder::new()
            .name(format!("stderr {name}"))
            .spawn(move || forward(from, std::io::stderr(), &to))
            .map_err(|e| fail(&e))?;
        let stdin = child.stdin.take();
        let lines = child.stdout.take().map(|s| Box::new(BufReader::new(s).lines()));
        Ok(NodeProc { name, child: Box::new(child), stdin, lines, tail, forwarder })
    }
}

/// Copies a node process's stderr to `to` (this process's stderr), keeping its last bytes;
/// ends when the pipe does (rule 3: the process never outlives its handle).
fn forward(mut from: impl Read, mut to: impl Write, tail: &Mutex<VecDeque<u8>>) {
    let mut buf = [0u8; 4096];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        let _ = to.write_all(&buf[..n]);
        let mut t = tail.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        t.extend(&buf[..n]);
        let over = t.len().saturating_sub(TAIL_BYTES);
        t.drain(..over);
    }
}

/// A running node process (rules 2-4); small, so it can sit in an enum beside lighter things.
#[derive(Debug)]
pub struct NodeProc {
    name: String,
    child: Box<Child>,
    stdin: Option<ChildStdin>,
    lines: Option<Box<Lines<BufReader<ChildStdout>>>>,
    tail: Arc<Mutex<VecDeque<u8>>>,
    forwarder: std::thread::JoinHandle<()>,
}

impl NodeProc {
    /// The name messages call it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its next stdout line, trimmed, waiting at most `limit`; otherwise an error saying that
    /// NAME did not `what` (`report its address`), how it ended and its stderr's tail.
    pub async fn line(&mut self, what: &str, limit: Duration) -> Result<String, String> {
        let read = match self.lines.as_mut() {
            Some(lines) => tokio::time::timeout(limit, lines.next_line()).await,
            None => Ok(Ok(None)),
        };
        match read {
            Ok(Ok(Some(l))) => Ok(l.trim().to_string()),
            Ok(Ok(None)) => Err(self.failure(format!("{} did not {what}: its stdout closed", self.name)).await),
            Ok(Err(e)) => Err(self.failure(format!("{} did not {what}: {e}", self.name)).await),
            Err(_) => Err(self.failure(format!("{} did not {what} within {} s", self.name, limit.as_secs())).await),
        }
    }

    /// Waits at most `limit` for the stdout line `word`; an error when another line or none comes.
    pub async fn expect(&mut self, word: &str, limit: Duration) -> Result<(), String> {
        let got = self.line(&format!("report {word}"), limit).await?;
        if got == word {
            Ok(())
        } else {
            Err(format!("{} answered {got:?}, expected {word}", self.name))
        }
    }

    /// Writes `line` and a line break to its stdin; `NAME is gone (...)` when it cannot be.
    pub async fn send(&mut self, line: &str) -> Result<(), String> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(format!("{} has no stdin to write {line:?} to", self.name));
        };
        let sent = stdin.write_all(format!("{line}\n").as_bytes()).await;
        if let Err(e) = sent {
            return Err(self.failure(format!("{} is gone ({e})", self.name)).await);
        }
        let _ = stdin.flush().await;
        Ok(())
    }

    /// Its process id, while it runs (for signals: the nemesis's SIGSTOP and SIGCONT).
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// How it ended, if it has (without waiting).
    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Waits for it to end (callers bound this: a `select!` with a deadline, or a timeout);
    /// its stderr is then read to the end ([`NodeProc::stderr_tail`]), within a bound.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let status = self.child.wait().await;
        self.settle().await;
        status
    }

    /// Waits at most `limit` for it to end.
    pub async fn wait_for(&mut self, limit: Duration) -> Option<ExitStatus> {
        tokio::time::timeout(limit, self.wait()).await.ok().and_then(Result::ok)
    }

    /// Gives the stderr forwarder of a process that ended at most [`TAIL_SETTLE`] to reach the
    /// end of the pipe.
    async fn settle(&self) {
        let until = tokio::time::Instant::now() + TAIL_SETTLE;
        while !self.forwarder.is_finished() && tokio::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Sends it SIGKILL without waiting (pair with [`NodeProc::wait_for`]).
    pub fn start_kill(&mut self) {
        let _ = self.child.start_kill();
    }

    /// Kills it and waits at most [`REAP_LIMIT`] for its end.
    pub async fn kill(&mut self) -> Option<ExitStatus> {
        self.start_kill();
        self.wait_for(REAP_LIMIT).await
    }

    /// Closes its stdin (the end-of-input it takes as "the orchestrator is done"), waits at
    /// most `grace` for it to end by itself, then kills and reaps it; how it ended.
    pub async fn close(mut self, grace: Duration) -> Option<ExitStatus> {
        drop(self.stdin.take());
        match self.wait_for(grace).await {
            Some(s) => Some(s),
            None => self.kill().await,
        }
    }

    /// The last lines it wrote to its stderr (at most [`TAIL_LINES`], `" | "` between them);
    /// `None` when it wrote nothing.
    pub fn stderr_tail(&self) -> Option<String> {
        let t = self.tail.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        last_lines(&t.iter().copied().collect::<Vec<u8>>())
    }

    /// `message` with how the process ended, when it has, and its stderr's tail (rule 4).
    pub async fn failure(&mut self, message: impl Display) -> String {
        let mut out = message.to_string();
        if let Ok(Some(status)) = self.try_wait() {
            self.settle().await;
            out.push_str(&format!(" ({} ended: {})", self.name, describe(status)));
        }
        if let Some(tail) = self.stderr_tail() {
            out.push_str(&format!("; its stderr ends: {tail}"));
        }
        out
    }
}

/// The last [`TAIL_LINES`] non-empty lines of `bytes`, trimmed, `" | "` between them.
fn last_lines(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let mut last: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).rev().take(TAIL_LINES).collect();
    last.reverse();
    (!last.is_empty()).then(|| last.join(" | "))
}

/// An exit status in words: `exit status N`, `killed by signal N`.
pub fn describe(s: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "unknown exit".into(),
    }
}

/// A fresh random secret for a run's nodes (32 hex digits).
pub fn secret() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// A free loopback port (for a node to listen on).
pub fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free loopback port: {e}"))
}

/// The `troupe-remote` config of a node of a run that moves large payloads between processes on
/// loopback (kv, latency): heartbeats every 500 ms, a peer declared down only after 60 s of
/// silence (a loaded machine is not a failure), 10 s to connect and to shake hands, and a send
/// buffer of `buffer_bytes`; it listens on `listen` and advertises `advertise`. The caller sets
/// its transport (parallelism, channels).
pub fn bulk_node_config(name: &str, secret: &str, listen: &str, advertise: &str, buffer_bytes: usize) -> NodeConfig {
    let mut n = NodeConfig {
        heartbeat_interval_ms: 500,
        heartbeat_timeout_ms: 60_000,
        connect_timeout_ms: 10_000,
        handshake_timeout_ms: 10_000,
        max_buffer_bytes: buffer_bytes,
        ..NodeConfig::new(name, secret)
    };
    n.listen = listen.into();
    n.advertise = Some(advertise.into());
    n
}

/// The environment variable `name` that `workload`'s program sets for its node processes.
pub fn env(name: &str, workload: &str) -> crate::error::Result<String> {
    std::env::var(name).map_err(|_| {
        crate::error::Error::other(format!(
            "{name} is not set; {workload} node processes are started by `troupe lab exec {workload}`"
        ))
    })
}

/// A node process's wait for the end of its run: 0 when `quit` is notified; 1, said on stderr
/// as `troupe ROLE: ...`, when its node loses `peer` (`events`, its node's subscription taken
/// before it announced itself: a node down, or the node closed) or when `limit` passes. With
/// `peer_addr`, only that node's `NodeDown` counts (a node on an overlay has sessions with
/// other nodes that may come and go); without it, any node's.
pub async fn serve_until_quit(
    mut events: tokio::sync::broadcast::Receiver<NodeEvent>,
    quit: &Notify,
    limit: Duration,
    role: &str,
    (peer, peer_addr): (&str, Option<&str>),
) -> i32 {
    let lost = async {
        loop {
            match events.recv().await {
                Ok(NodeEvent::NodeDown { addr, .. }) if peer_addr.is_none_or(|a| a == addr) => return,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                _ => {}
            }
        }
    };
    tokio::select! {
        _ = quit.notified() => 0,
        _ = lost => {
            eprintln!("troupe {role}: {peer} went away");
            1
        }
        _ = tokio::time::sleep(limit) => {
            eprintln!("troupe {role}: the run's deadline passed");
            1
        }
    }
}

/// Waits for SIGTERM or SIGINT (a node process's orchestrator stops it, or Ctrl-C).
pub async fn interrupted() {
    use tokio::signal::unix::{signal, SignalKind};
    match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(mut a), Ok(mut b)) => {
            tokio::select! {
                _ = a.recv() => {}
                _ = b.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}

/// The wall-clock instant `us` (µs since the epoch, as events carry it) as a tokio instant.
pub fn instant_of(us: i64) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    let delta = us - crate::events::writer::now_us();
    if delta >= 0 {
        now + Duration::from_micros(delta as u64)
    } else {
        now.checked_sub(Duration::from_micros(delta.unsigned_abs())).unwrap_or(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_names_the_code_or_the_signal() {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(describe(ExitStatus::from_raw(1 << 8)), "exit status 1");
        assert_eq!(describe(ExitStatus::from_raw(9)), "killed by signal 9");
    }

    #[test]
    fn the_stderr_tail_is_its_last_non_empty_lines() {
        assert_eq!(last_lines(b"one\ntwo\n\n  three \nfour\n\n").as_deref(), Some("two | three | four"));
        assert_eq!(last_lines(b"only").as_deref(), Some("only"));
        assert_eq!(last_lines(b"\n \n"), None);
    }

    #[test]
    fn the_forwarder_keeps_the_last_bytes_until_the_pipe_ends() {
        let tail = Mutex::new(VecDeque::new());
        let mut written = vec![b'x'; TAIL_BYTES];
        written.extend(b"\nlast\n");
        let mut copied = Vec::new();
        forward(&written[..], &mut copied, &tail);
        assert_eq!(copied, written, "the stream is passed on unchanged");
        let bytes: Vec<u8> = tail.into_inner().unwrap().into_iter().collect();
        assert_eq!(bytes.len(), TAIL_BYTES);
        assert!(bytes.ends_with(b"x\nlast\n"));
    }

    #[test]
    fn secrets_are_32_hex_digits_and_ports_free() {
        let s = secret();
        assert_eq!(s.len(), 32);
        assert!(s.chars().all(|c| c.is_ascii_hexdigit()));
        assert!(free_port().unwrap() > 0);
    }
}
