//! `troupe node --config FILE`: runs one node in the foreground. The CLI crate calls
//! [`node_main`]; the `troupe-node` binary of this crate does too (tests start it as an OS
//! process).
//!
//! Protocol on standard output, one line each (logs go to standard error):
//! - `listening on ADDR` once the node listens (the first line);
//! - `event {json}` for each node event (`node_up`, `node_down`, `refused`);
//! - the answers to commands below.
//!
//! Commands on standard input (optional; the node keeps running when input ends):
//! `connect ADDR` (answers `connected NAME ADDR` or `error ...`), `partition ADDR`, `heal ADDR`,
//! `faults PEER|* CHANNEL|* {json FaultConfig}`, `clear-faults`, `stats` (answers
//! `stats {json}`), `echo-ask ADDR TEXT` (a typed ask to the `echo` service at ADDR: answers
//! `echo-answer ADDR TEXT`), `monitor ADDR NAME` (monitors the echo-typed actor NAME at ADDR,
//! answers `monitoring ADDR NAME` once the peer holds the monitor, and prints
//! `event {"ev":"down","addr":ADDR,"name":NAME,"reason":REASON}` when it fires), `quit`, and
//! those of an [`Extension`] (the cluster's, in `troupe-cluster`). The node also stops on SIGINT or SIGTERM, promptly, whether or not
//! its standard input is still open (the blocking stdin reader is never waited for).
//!
//! Peer-supplied strings in these lines are escaped (`logging::Esc`; event lines are JSON,
//! whose strings escape control characters). Logs go to stderr and event lines to stdout
//! through bounded queues and their own threads, so neither stream can block the node when
//! nobody reads it (`logging.rs`); what does not fit is dropped and counted.

use std::future::Future;
use std::io::Write;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncBufReadExt;

use crate::error::Error;
use crate::logging::Esc;
use crate::{services, FaultConfig, Node, NodeConfig};

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Commands and event lines a layer above the node adds to this protocol (the cluster does:
/// `status`, `leave`, `down ADDR`, and its `event` lines).
pub trait Extension: Send + Sync + 'static {
    /// Answers one command line; `None` when it is not one of this extension's commands.
    fn command<'a>(&'a self, line: &'a str) -> Pin<Box<dyn Future<Output = Option<String>> + Send + 'a>>;

    /// Runs when the node is about to stop (`quit`, SIGINT, SIGTERM), before it shuts down:
    /// the cluster leaves gracefully here. It must finish in bounded time.
    fn stop(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async {})
    }
}

/// Writes `event {json}` lines to standard output through the node's bounded event queue.
#[derive(Clone)]
pub struct EventLines(std::sync::mpsc::SyncSender<String>);

impl EventLines {
    /// Queues `event {json}`; dropped (and counted in the log) when stdout is not keeping up.
    pub fn event(&self, json: &str) {
        self.line(&format!("event {json}"));
    }

    /// Queues one line as it is; dropped (and counted in the log) when stdout is not keeping up.
    pub fn line(&self, text: &str) {
        if self.0.try_send(text.to_owned()).is_err() {
            crate::warn_limited!("stdout is not keeping up: an event line was dropped");
        }
    }
}

/// Starts an [`Extension`] once the node is up.
pub type Setup = Box<
    dyn FnOnce(Node, NodeConfig, EventLines) -> Pin<Box<dyn Future<Output = Result<Arc<dyn Extension>, Error>> + Send>>
        + Send,
>;

/// Runs a node from the TOML configuration at `config_path` until `quit`, SIGINT or SIGTERM.
pub fn node_main(config_path: &Path) -> Result<(), Error> {
    node_main_with(config_path, None)
}

/// [`node_main`] with an extension started after the node (see [`Extension`]).
pub fn node_main_with(config_path: &Path, setup: Option<Setup>) -> Result<(), Error> {
    let cfg = NodeConfig::from_file(config_path)?;
    let writer = crate::logging::NonBlockingStderr::new(1024);
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("TROUPE_LOG").unwrap_or_else(|_| "warn".into()))
        .with_writer(writer.clone())
        .try_init();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io("cannot start the tokio runtime", e))?;
    let r = rt.block_on(run(cfg, setup));
    // The stdin reader sits in a blocking read that only new input ends: dropping the runtime
    // would wait for it forever (issue 18: SIGTERM ignored while stdin is open). Leave it.
    rt.shutdown_background();
    writer.drain(Duration::from_millis(500));
    r
}

async fn run(cfg: NodeConfig, setup: Option<Setup>) -> Result<(), Error> {
    let node = Node::start(cfg.clone()).await?;
    services::start(&node, &cfg.services)?;
    let mut events = node.subscribe();
    // Both handlers are installed before the first line, so a signal sent as soon as the node
    // says it listens finds them (a default SIGINT would kill the process with no clean stop).
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).map_err(|e| Error::io("cannot install the SIGTERM handler", e))?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| Error::io("cannot install the SIGINT handler", e))?;
    say(&format!("listening on {}", node.addr()));
    // Event lines can be triggered from the network (a peer refusing our messages), so they
    // are written by their own thread through a bounded queue: a stdout nobody reads drops
    // them (counted in the log) instead of blocking a runtime worker.
    let (tx, rx) = std::sync::mpsc::sync_channel::<String>(4096);
    std::thread::Builder::new()
        .name("troupe-events".into())
        .spawn(move || {
            for line in rx {
                say(&line);
            }
        })
        .map_err(|e| Error::io("cannot start the event-line thread", e))?;
    let ext = match setup {
        Some(f) => Some(f(node.clone(), cfg.clone(), EventLines(tx.clone())).await?),
        None => None,
    };
    let tx_cmd = tx.clone();
    tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(ev) => {
                    let line = format!("event {}", serde_json::to_string(&ev).unwrap_or_default());
                    if tx.try_send(line).is_err() {
                        crate::warn_limited!("stdout is not keeping up: an event line was dropped");
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    crate::warn_limited!("{n} event lines were dropped (the event printer lagged)");
                }
                Err(_) => return,
            }
        }
    });
    let ext_stop = ext.clone();
    let stdin_node = node.clone();
    let lines_out = EventLines(tx_cmd);
    let commands = async move {
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let line = line.trim();
            if let Some(ext) = &ext {
                if let Some(answer) = ext.command(line).await {
                    say(&answer);
                    continue;
                }
            }
            if !command(&stdin_node, line, &lines_out).await {
                return;
            }
        }
        std::future::pending::<()>().await;
    };
    tokio::select! {
        () = commands => {}
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
    if let Some(ext) = ext_stop {
        ext.stop().await;
    }
    node.shutdown();
    Ok(())
}

/// Watches a remote actor for `monitor`: prints its `Down` as an event line.
struct DownWatcher {
    target: troupe::AnyRef,
    addr: String,
    name: String,
    lines: EventLines,
    started: Option<tokio::sync::oneshot::Sender<()>>,
}

impl troupe::Actor for DownWatcher {
    type Msg = ();
    async fn started(&mut self, ctx: &mut troupe::Ctx<Self>) -> Result<(), troupe::ActorError> {
        ctx.monitor(&self.target);
        if let Some(s) = self.started.take() {
            let _ = s.send(());
        }
        Ok(())
    }
    async fn handle(&mut self, (): (), _: &mut troupe::Ctx<Self>) {}
    async fn on_down(&mut self, d: troupe::Down, ctx: &mut troupe::Ctx<Self>) {
        let ev = serde_json::json!({"ev": "down", "addr": self.addr, "name": self.name, "reason": format!("{:?}", d.reason)});
        self.lines.event(&ev.to_string());
        ctx.stop(troupe::ExitReason::Normal);
    }
}

/// Runs one command; false to quit.
async fn command(node: &Node, line: &str, lines: &EventLines) -> bool {
    let mut parts = line.splitn(4, ' ');
    match (parts.next().unwrap_or(""), parts.next(), parts.next(), parts.next()) {
        ("", ..) => {}
        ("quit", ..) => return false,
        ("connect", Some(addr), ..) => match node.connect(addr).await {
            Ok(p) => say(&format!("connected {} {}", Esc(&p.name), Esc(&p.addr))),
            Err(e) => say(&format!("error {}", Esc(&troupe::error_chain(&e)))),
        },
        ("partition", Some(addr), ..) => {
            node.partition(addr);
            say(&format!("partitioned {addr}"));
        }
        ("heal", Some(addr), ..) => {
            node.heal(addr);
            say(&format!("healed {addr}"));
        }
        ("faults", Some(peer), Some(channel), Some(json)) => match serde_json::from_str::<FaultConfig>(json) {
            Ok(f) => {
                let p = (peer != "*").then_some(peer);
                let c = (channel != "*").then_some(channel);
                node.set_faults(p, c, f);
                say("faults set");
            }
            Err(e) => say(&format!("error bad fault config: {e}")),
        },
        ("clear-faults", ..) => {
            node.clear_faults();
            say("faults cleared");
        }
        ("stats", ..) => say(&format!("stats {}", serde_json::to_string(&node.stats()).unwrap_or_default())),
        ("echo-ask", Some(addr), text, rest) => {
            let text = [text, rest].into_iter().flatten().collect::<Vec<_>>().join(" ");
            let asked = async {
                let echo = node.lookup::<services::Echo>(addr, "echo").await?;
                let limit = Duration::from_secs(10);
                echo.ask(|r| services::Echo(crate::Blob(text.as_bytes().to_vec()), r), limit)
                    .await
                    .map_err(|e| Error::from(crate::ErrorKind::Other(format!("ask: {e}"))))
            };
            match asked.await {
                Ok(b) => say(&format!("echo-answer {} {}", Esc(addr), Esc(&String::from_utf8_lossy(&b.0)))),
                Err(e) => say(&format!("error echo-ask {}: {}", Esc(addr), Esc(&troupe::error_chain(&e)))),
            }
        }
        ("monitor", Some(addr), Some(name), _) => match node.lookup::<services::Echo>(addr, name).await {
            Ok(target) => {
                let (started, ready) = tokio::sync::oneshot::channel();
                let w = DownWatcher {
                    target: target.any(),
                    addr: addr.to_owned(),
                    name: name.to_owned(),
                    lines: lines.clone(),
                    started: Some(started),
                };
                troupe::spawn(w);
                let _ = ready.await;
                // A lookup after the monitor on the same control lane: once it is answered,
                // the peer has the monitor.
                match node.lookup::<services::Echo>(addr, name).await {
                    Ok(_) => say(&format!("monitoring {} {}", Esc(addr), Esc(name))),
                    Err(e) => say(&format!("error monitor {}: {}", Esc(addr), Esc(&troupe::error_chain(&e)))),
                }
            }
            Err(e) => say(&format!("error monitor {}: {}", Esc(addr), Esc(&troupe::error_chain(&e)))),
        },
        (other, ..) => say(&format!("error unknown command {other:?}")),
    }
    true
}
