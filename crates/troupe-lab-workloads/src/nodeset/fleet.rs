//! The orchestrator's handle on its node processes ([`Fleet`]): one driver task per node owns
//! the process, writes the commands of `node.rs` to its stdin and routes the answers back by
//! id, and kills, starts again, pauses and continues it for the nemesis ([`Procs`], a
//! `troupe_lab::nemesis::procs::Target`).
//!
//! Rules:
//! 1. [`Fleet::ask`] is answered exactly once: the node's answer ([`Answer::Ok`],
//!    [`Answer::Timeout`], [`Answer::Err`]); [`Answer::NotSent`] when the command certainly did
//!    not reach a node (none was running: killed and not yet started again); [`Answer::Lost`]
//!    when it was written and no answer can come (the process was killed or ended), or none
//!    came within the caller's limit. A caller never waits longer than its limit.
//! 2. A kill sends SIGKILL to the node process, reaps it, and ends every command waiting on it
//!    with [`Answer::Lost`]. A start again runs the same command with the same environment and
//!    address, and is done when the new process printed `ready` ([`super::START_LIMIT`]).
//!    Commands that arrive meanwhile wait for it and go to the new process.
//! 3. Pause and continue are SIGSTOP and SIGCONT to the node's process id (`NodeProc::id`).
//! 4. Event lines (`e {json}`) go, with the node's index and the time they were read, to the
//!    fleet's event channel when one was asked for.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::sync::{mpsc, oneshot};
use troupe_lab::events::writer::now_us;
use troupe_lab::nemesis::procs::{signal, Target};
use troupe_lab::nodes::{NodeCmd, NodeProc};

use super::START_LIMIT;

/// How a command ended (rule 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// `r ID ok REST`.
    Ok(String),
    /// `r ID timeout REST`: applied on the node, not acknowledged by its level in time.
    Timeout(String),
    /// `r ID err REST`: refused before anything was applied.
    Err(String),
    /// It reached no node.
    NotSent(String),
    /// Written, and no answer came.
    Lost(String),
}

/// An event line a node printed: its index, when it was read (µs) and its JSON.
pub(crate) type NodeEvent = (u32, i64, String);

enum Cmd {
    Ask { line: String, reply: oneshot::Sender<Answer> },
    Kill { reply: oneshot::Sender<Result<(), String>> },
    Restart { reply: oneshot::Sender<Result<(), String>> },
}

/// The node processes of a run.
pub(crate) struct Fleet {
    procs: Procs,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// What the clients and the nemesis hold: cheap to clone.
#[derive(Clone)]
pub(crate) struct Procs {
    txs: Arc<Vec<mpsc::UnboundedSender<Cmd>>>,
    pids: Arc<Vec<AtomicU32>>,
}

/// How to start node `i`.
pub(crate) type Starter = Box<dyn Fn(u32) -> NodeCmd + Send + Sync>;

impl Fleet {
    /// Starts `n` node processes (`starter(i)` each, with stdin and stdout piped) and waits
    /// for every `ready`; `events` receives their event lines (rule 4).
    pub(crate) async fn start(
        n: u32,
        starter: Starter,
        events: Option<mpsc::UnboundedSender<NodeEvent>>,
    ) -> Result<Fleet, String> {
        let starter = Arc::new(starter);
        let pids: Arc<Vec<AtomicU32>> = Arc::new((0..n).map(|_| AtomicU32::new(0)).collect());
        let mut started = Vec::new();
        for i in 0..n {
            started.push(spawn(&starter, i).await?);
        }
        let mut txs = Vec::new();
        let mut tasks = Vec::new();
        for (i, (p, pid)) in started.into_iter().enumerate() {
            pids[i].store(pid, Ordering::Relaxed);
            let (tx, rx) = mpsc::unbounded_channel();
            let d = Driver {
                i: i as u32,
                starter: Arc::clone(&starter),
                proc: Some(p),
                reading: true,
                pids: Arc::clone(&pids),
                pending: HashMap::new(),
                next: 0,
                events: events.clone(),
            };
            txs.push(tx);
            tasks.push(tokio::spawn(d.run(rx)));
        }
        Ok(Fleet { procs: Procs { txs: Arc::new(txs), pids }, tasks })
    }

    /// The handle for clients and the nemesis.
    pub(crate) fn procs(&self) -> Procs {
        self.procs.clone()
    }

    /// Ends every node process (`quit`, then a bounded wait, then SIGKILL) and every driver.
    pub(crate) async fn close(self) {
        let Fleet { procs, tasks } = self;
        drop(procs);
        for t in tasks {
            // Each driver ends once every handle is gone; bounded by the node's close grace.
            let _ = tokio::time::timeout(Duration::from_secs(15), t).await;
        }
    }
}

impl Procs {
    /// Node count.
    pub(crate) fn len(&self) -> u32 {
        self.txs.len() as u32
    }

    /// Sends `VERB ID ARGS` to node `i` and waits at most `limit` for its answer (rule 1).
    pub(crate) async fn ask(&self, i: u32, verb: &str, args: &str, limit: Duration) -> Answer {
        let (reply, rx) = oneshot::channel();
        let line = format!("{verb} {{id}} {args}");
        if self.txs[i as usize].send(Cmd::Ask { line, reply }).is_err() {
            return Answer::NotSent(format!("node-{i}'s driver has ended"));
        }
        match tokio::time::timeout(limit, rx).await {
            Ok(Ok(a)) => a,
            Ok(Err(_)) => Answer::Lost(format!("node-{i}'s driver ended before an answer")),
            Err(_) => Answer::Lost(format!("node-{i} did not answer within {} ms", limit.as_millis())),
        }
    }

    async fn act(&self, i: u32, what: fn(oneshot::Sender<Result<(), String>>) -> Cmd) -> Result<(), String> {
        let (reply, rx) = oneshot::channel();
        self.txs
            .get(i as usize)
            .ok_or(format!("there is no node {i}"))?
            .send(what(reply))
            .map_err(|_| format!("node-{i}'s driver has ended"))?;
        rx.await.map_err(|_| format!("node-{i}'s driver ended"))?
    }

    fn pid(&self, i: u32) -> Result<u32, String> {
        let pid = self.pids.get(i as usize).map_or(0, |p| p.load(Ordering::Relaxed));
        if pid == 0 {
            return Err(format!("node-{i} has no running process"));
        }
        Ok(pid)
    }
}

impl Target for Procs {
    fn name(&self, i: u32) -> String {
        format!("node-{i}")
    }

    async fn kill(&mut self, i: u32) -> Result<(), String> {
        self.act(i, |reply| Cmd::Kill { reply }).await
    }

    async fn restart(&mut self, i: u32) -> Result<(), String> {
        self.act(i, |reply| Cmd::Restart { reply }).await
    }

    fn pause(&mut self, i: u32) -> Result<(), String> {
        signal(self.pid(i)?, Signal::SIGSTOP)
    }

    fn resume(&mut self, i: u32) -> Result<(), String> {
        signal(self.pid(i)?, Signal::SIGCONT)
    }
}

/// Starts node `i` and waits for its `ready` (rule 2); the process and its id (`ip netns exec`
/// replaces itself with the node, so the child's id is the node's).
async fn spawn(starter: &Starter, i: u32) -> Result<(NodeProc, u32), String> {
    let mut p = starter(i).stdin().stdout().start()?;
    let pid = p.id().ok_or_else(|| format!("{} ended as it started", p.name()))?;
    p.expect("ready", START_LIMIT).await?;
    Ok((p, pid))
}

struct Driver {
    i: u32,
    starter: Arc<Starter>,
    proc: Option<NodeProc>,
    reading: bool,
    pids: Arc<Vec<AtomicU32>>,
    pending: HashMap<u64, oneshot::Sender<Answer>>,
    next: u64,
    events: Option<mpsc::UnboundedSender<NodeEvent>>,
}

enum Ev {
    Cmd(Option<Cmd>),
    Line(Result<String, String>),
}

/// Long enough never to end a wait for the next line by itself.
const FOREVER: Duration = Duration::from_secs(7 * 24 * 3600);

impl Driver {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Cmd>) {
        loop {
            let ev = match self.proc.as_mut() {
                Some(p) if self.reading => tokio::select! {
                    c = rx.recv() => Ev::Cmd(c),
                    l = p.line("answer", FOREVER) => Ev::Line(l),
                },
                _ => Ev::Cmd(rx.recv().await),
            };
            match ev {
                Ev::Cmd(None) => break,
                Ev::Cmd(Some(c)) => self.handle(c).await,
                Ev::Line(Ok(l)) => self.on_line(&l),
                Ev::Line(Err(e)) => {
                    self.reading = false;
                    self.lose_pending(&e);
                }
            }
        }
        if let Some(mut p) = self.proc.take() {
            let _ = p.send("quit").await;
            p.close(Duration::from_secs(5)).await;
        }
        self.lose_pending("the run ended");
    }

    fn lose_pending(&mut self, why: &str) {
        for (_, r) in self.pending.drain() {
            let _ = r.send(Answer::Lost(format!("node-{}: {why}", self.i)));
        }
    }

    fn on_line(&mut self, l: &str) {
        if let Some(json) = l.strip_prefix("e ") {
            if let Some(tx) = &self.events {
                let _ = tx.send((self.i, now_us(), json.to_string()));
            }
            return;
        }
        let mut parts = l.splitn(4, ' ');
        let (Some("r"), Some(id), Some(word)) = (parts.next(), parts.next(), parts.next()) else { return };
        let rest = parts.next().unwrap_or("").to_string();
        let Some(reply) = id.parse::<u64>().ok().and_then(|id| self.pending.remove(&id)) else { return };
        let _ = reply.send(match word {
            "ok" => Answer::Ok(rest),
            "timeout" => Answer::Timeout(rest),
            _ => Answer::Err(rest),
        });
    }

    async fn handle(&mut self, c: Cmd) {
        match c {
            Cmd::Ask { line, reply } => {
                let Some(p) = self.proc.as_mut().filter(|_| self.reading) else {
                    let _ = reply.send(Answer::NotSent(format!("node-{} is not running", self.i)));
                    return;
                };
                self.next += 1;
                let id = self.next;
                match p.send(&line.replacen("{id}", &id.to_string(), 1)).await {
                    Ok(()) => {
                        self.pending.insert(id, reply);
                    }
                    Err(e) => {
                        let _ = reply.send(Answer::Lost(e));
                    }
                }
            }
            Cmd::Kill { reply } => {
                let Some(mut p) = self.proc.take() else {
                    let _ = reply.send(Err(format!("node-{} is not running", self.i)));
                    return;
                };
                self.pids[self.i as usize].store(0, Ordering::Relaxed);
                let ended = p.kill().await;
                self.lose_pending("killed");
                let _ = reply.send(match ended {
                    Some(_) => Ok(()),
                    None => Err(format!("{} did not end after SIGKILL", p.name())),
                });
            }
            Cmd::Restart { reply } => {
                if self.proc.is_some() && self.reading {
                    let _ = reply.send(Err(format!("node-{} is running already", self.i)));
                    return;
                }
                if let Some(mut old) = self.proc.take() {
                    old.kill().await;
                }
                self.lose_pending("it ended");
                let started = spawn(&self.starter, self.i).await;
                let _ = reply.send(started.map(|(p, pid)| {
                    self.pids[self.i as usize].store(pid, Ordering::Relaxed);
                    self.proc = Some(p);
                    self.reading = true;
                }));
            }
        }
    }
}
