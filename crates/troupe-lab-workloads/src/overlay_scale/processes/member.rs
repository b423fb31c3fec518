//! One node process of `overlay-scale --set mode=processes` as the orchestrator holds it: a
//! `troupe node --config FILE` child (`troupe_lab::nodes::NodeCmd::troupe_node`) and the task
//! that owns it, speaking the node line protocol (docs/distribution.md; the overlay's commands
//! and the counter's: `troupe_cluster::overlay::live::cli`).
//!
//! Rules:
//! 1. A member is started when its process printed `listening on ADDR` within
//!    [`START_LIMIT`]; otherwise the start fails, naming the process and how it ended.
//! 2. One task owns the process. [`Member::ask`] writes a command and waits at most its limit
//!    for the answer; the node answers every command with exactly one line, in order, so the
//!    task hands each non-event line to the oldest command still waiting (a command whose
//!    caller gave up keeps its place, and its late answer is dropped, never handed to the next).
//!    An answer starting with `error ` is an `Err`.
//! 3. Every `event {json}` line goes, with the member's index and the time it was read, to the
//!    orchestrator's channel ([`Note::Event`]); when the process's stdout ends (it died), a
//!    [`Note::Ended`] says so once, and every command waiting or sent later fails.
//! 4. Dropping every handle of a member ends it: `quit`, then at most [`CLOSE_GRACE`] for the
//!    process to end by itself, then SIGKILL (`NodeProc::close`). [`Member::close`] waits for
//!    that, bounded.

use std::collections::VecDeque;
use std::path::Path;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use troupe_lab::events::writer::now_us;
use troupe_lab::nodes::{NodeCmd, NodeProc};

/// How long a node process may take to say where it listens.
pub(super) const START_LIMIT: Duration = Duration::from_secs(30);
/// How long a node told to quit may take to end before it is killed.
pub(super) const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// What the members tell the orchestrator (rule 3).
#[derive(Debug)]
pub(super) enum Note {
    /// Member `.0` printed `event {json}` (`.1`), read at `.2` (µs since the epoch).
    Event(usize, String, i64),
    /// Member `.0`'s process ended (`.1`: how).
    Ended(usize, String),
}

type Reply = oneshot::Sender<Result<String, String>>;

/// A running node process.
pub(super) struct Member {
    /// Its index in the run (the order it was started in).
    pub(super) index: usize,
    /// The address it listens on.
    pub(super) addr: String,
    /// Its process id (for its resident memory).
    pub(super) pid: Option<u32>,
    tx: mpsc::UnboundedSender<(String, Reply)>,
    task: tokio::task::JoinHandle<()>,
}

/// A handle that sends commands to a member (cheap to clone).
#[derive(Clone)]
pub(super) struct Asker(mpsc::UnboundedSender<(String, Reply)>, usize);

impl Member {
    /// Starts `troupe node --config <config>` as member `index` (rule 1).
    pub(super) async fn start(
        index: usize,
        config: &Path,
        notes: mpsc::UnboundedSender<Note>,
    ) -> Result<Member, String> {
        let mut p = NodeCmd::troupe_node(format!("node process os-{index}"), config).stdin().stdout().start()?;
        let pid = p.id();
        let first = p.line("say where it listens", START_LIMIT).await?;
        let Some(addr) = first.strip_prefix("listening on ").map(str::to_owned) else {
            return Err(format!("node process os-{index} printed {first:?} where `listening on ADDR` was expected"));
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(drive(index, p, rx, notes));
        Ok(Member { index, addr, pid, tx, task })
    }

    /// A handle for commands.
    pub(super) fn asker(&self) -> Asker {
        Asker(self.tx.clone(), self.index)
    }

    /// Ends the member (rule 4) and waits for its task, at most the grace and a reap.
    pub(super) async fn close(self) {
        let Member { tx, task, .. } = self;
        drop(tx);
        let _ = tokio::time::timeout(CLOSE_GRACE + troupe_lab::nodes::REAP_LIMIT + Duration::from_secs(1), task).await;
    }

    /// Its resident memory now, kB (`VmRSS` of /proc/PID/status); `None` when it cannot be read.
    pub(super) fn rss_kb(&self) -> Option<u64> {
        let text = std::fs::read_to_string(format!("/proc/{}/status", self.pid?)).ok()?;
        let line = text.lines().find(|l| l.starts_with("VmRSS:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }
}

impl Asker {
    /// Sends `line` and waits at most `limit` for its answer (rule 2).
    pub(super) async fn ask(&self, line: &str, limit: Duration) -> Result<String, String> {
        let (reply, rx) = oneshot::channel();
        let i = self.1;
        self.0.send((line.to_owned(), reply)).map_err(|_| format!("os-{i} has ended"))?;
        match tokio::time::timeout(limit, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(format!("os-{i} ended before it answered {line:?}")),
            Err(_) => Err(format!("os-{i} did not answer {line:?} within {} ms", limit.as_millis())),
        }
    }

    /// The member's index.
    pub(super) fn index(&self) -> usize {
        self.1
    }
}

/// Long enough never to end a wait for the next line by itself.
const FOREVER: Duration = Duration::from_secs(7 * 24 * 3600);

enum Ev {
    Cmd(Option<(String, Reply)>),
    Line(Result<String, String>),
}

/// The member's task (rules 2-4).
async fn drive(
    i: usize,
    mut p: NodeProc,
    mut rx: mpsc::UnboundedReceiver<(String, Reply)>,
    notes: mpsc::UnboundedSender<Note>,
) {
    let mut waiting: VecDeque<Reply> = VecDeque::new();
    let mut alive = true;
    loop {
        let ev = if alive {
            tokio::select! {
                c = rx.recv() => Ev::Cmd(c),
                l = p.line("answer", FOREVER) => Ev::Line(l),
            }
        } else {
            Ev::Cmd(rx.recv().await)
        };
        match ev {
            Ev::Cmd(None) => break,
            Ev::Cmd(Some((_, reply))) if !alive => {
                let _ = reply.send(Err(format!("os-{i} has ended")));
            }
            Ev::Cmd(Some((line, reply))) => match p.send(&line).await {
                Ok(()) => waiting.push_back(reply),
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
            },
            Ev::Line(Ok(l)) => {
                if let Some(json) = l.strip_prefix("event ") {
                    let _ = notes.send(Note::Event(i, json.to_owned(), now_us()));
                } else if let Some(reply) = waiting.pop_front() {
                    let answer = if l.starts_with("error ") { Err(format!("os-{i}: {l}")) } else { Ok(l) };
                    let _ = reply.send(answer);
                }
            }
            Ev::Line(Err(e)) => {
                alive = false;
                for reply in waiting.drain(..) {
                    let _ = reply.send(Err(e.clone()));
                }
                let _ = notes.send(Note::Ended(i, e));
            }
        }
    }
    if alive {
        let _ = p.send("quit").await;
    }
    p.close(CLOSE_GRACE).await;
}
