//! Losing a node: remote monitors fire `Down { reason: NoConnection }` promptly when the peer
//! is killed with SIGKILL (its sockets close) and within the heartbeat timeout when it is
//! frozen with SIGSTOP; links deliver `NoConnection` exit signals; node-up/node-down events;
//! a configured peer is reconnected after it comes back.

mod common;

use std::time::{Duration, Instant};

use common::{cfg, wait_event, NodeProc};
use troupe::{Actor, ActorRef, AnyRef, Ctx, Down, ExitReason, ExitSignal};
use troupe_remote::services::Echo;
use troupe_remote::{Node, NodeConfig, NodeEvent};

const T: Duration = Duration::from_secs(10);

/// Monitors (or links to) a target and reports what it gets.
struct Watcher {
    target: AnyRef,
    link: bool,
    out: tokio::sync::mpsc::UnboundedSender<(ExitReason, Instant)>,
}

impl Actor for Watcher {
    type Msg = ();
    async fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), troupe::ActorError> {
        if self.link {
            ctx.trap_exit(true);
            ctx.link(&self.target).map_err(|e| troupe::ActorError::new(e.to_string()))?;
        } else {
            ctx.monitor(&self.target);
        }
        Ok(())
    }
    async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {}
    async fn on_down(&mut self, d: Down, _: &mut Ctx<Self>) {
        let _ = self.out.send((d.reason, Instant::now()));
    }
    async fn on_exit(&mut self, s: ExitSignal, _: &mut Ctx<Self>) {
        let _ = self.out.send((s.reason, Instant::now()));
    }
}

fn watch(target: &ActorRef<Echo>, link: bool) -> tokio::sync::mpsc::UnboundedReceiver<(ExitReason, Instant)> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    troupe::spawn(Watcher { target: target.any(), link, out: tx });
    rx
}

fn fast_heartbeat(name: &str) -> NodeConfig {
    NodeConfig { heartbeat_interval_ms: 50, heartbeat_timeout_ms: 300, ..cfg(name) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_fires_remote_monitors_and_links_with_noconnection_promptly() {
    let child = NodeProc::start("b", "services = [\"echo\"]");
    let a = Node::start(cfg("a")).await.unwrap();
    let mut events = a.subscribe();
    let echo = a.lookup::<Echo>(&child.addr, "echo").await.unwrap();
    let mut mon = watch(&echo, false);
    let mut link = watch(&echo, true);
    // Let the monitor and link requests reach the peer (an ask after them on the same
    // connection order proves it).
    let _ = echo.ask(|r| Echo(troupe_remote::Blob(vec![]), r), T).await.unwrap();
    let killed = Instant::now();
    child.signal(libc::SIGKILL);
    let (reason, at) = tokio::time::timeout(T, mon.recv()).await.unwrap().unwrap();
    assert_eq!(reason, ExitReason::NoConnection);
    let ms = at.duration_since(killed).as_secs_f64() * 1e3;
    eprintln!("sigkill -> Down: {ms:.2} ms");
    assert!(ms < 1000.0, "Down took {ms} ms after SIGKILL; the heartbeat timeout (5 s) must not be what fired it");
    let (reason, _) = tokio::time::timeout(T, link.recv()).await.unwrap().unwrap();
    assert_eq!(reason, ExitReason::NoConnection);
    wait_event(&mut events, T, |e| matches!(e, NodeEvent::NodeDown { name, .. } if name == "b")).await;
    // Monitoring it now (node known lost) fires at once.
    let mut late = watch(&echo, false);
    assert_eq!(tokio::time::timeout(T, late.recv()).await.unwrap().unwrap().0, ExitReason::NoConnection);
    a.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigstop_fires_remote_monitors_within_the_heartbeat_timeout() {
    let child = NodeProc::start("b", "services = [\"echo\"]\nheartbeat_interval_ms = 50\nheartbeat_timeout_ms = 300");
    let a = Node::start(fast_heartbeat("a")).await.unwrap();
    let echo = a.lookup::<Echo>(&child.addr, "echo").await.unwrap();
    let mut mon = watch(&echo, false);
    let _ = echo.ask(|r| Echo(troupe_remote::Blob(vec![]), r), T).await.unwrap();
    let stopped = Instant::now();
    child.signal(libc::SIGSTOP);
    let (reason, at) = tokio::time::timeout(T, mon.recv()).await.unwrap().unwrap();
    assert_eq!(reason, ExitReason::NoConnection);
    let ms = at.duration_since(stopped).as_secs_f64() * 1e3;
    eprintln!("sigstop -> Down: {ms:.1} ms (heartbeat 50 ms, timeout 300 ms)");
    assert!((250.0..1500.0).contains(&ms), "Down after {ms} ms; expected about the 300 ms timeout");
    child.signal(libc::SIGCONT);
    a.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_peer_comes_back_up_after_a_restart() {
    let child = NodeProc::start("b", "services = [\"echo\"]");
    let addr = child.addr.clone();
    let a = Node::start(NodeConfig { peers: vec![addr.clone()], reconnect_max_ms: 200, ..cfg("a") }).await.unwrap();
    let mut events = a.subscribe();
    if !a.is_connected(&addr) {
        wait_event(&mut events, T, |e| matches!(e, NodeEvent::NodeUp { .. })).await;
    }
    drop(child); // SIGKILL and reap
    wait_event(&mut events, T, |e| matches!(e, NodeEvent::NodeDown { .. })).await;
    // A new node on the same address (a restart).
    let again = NodeProc::start("b2", &format!("listen = \"{addr}\"\nservices = [\"echo\"]"));
    let up = wait_event(&mut events, T, |e| matches!(e, NodeEvent::NodeUp { .. })).await;
    assert_eq!(up, NodeEvent::NodeUp { name: "b2".into(), addr: again.addr.clone() });
    let echo = a.lookup::<Echo>(&addr, "echo").await.unwrap();
    assert_eq!(echo.ask(|r| Echo(troupe_remote::Blob(vec![9]), r), T).await.unwrap().0, vec![9]);
    a.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_monitor_sees_the_real_exit_reason_of_a_remote_actor() {
    // In-process pair of nodes over real sockets: kill the remote actor, not the node.
    let a = Node::start(cfg("a")).await.unwrap();
    let b = Node::start(cfg("b")).await.unwrap();
    troupe_remote::services::start(&b, &["echo".into()]).unwrap();
    let echo = a.lookup::<Echo>(&b.addr(), "echo").await.unwrap();
    let mut mon = watch(&echo, false);
    let _ = echo.ask(|r| Echo(troupe_remote::Blob(vec![]), r), T).await.unwrap();
    echo.kill();
    assert_eq!(tokio::time::timeout(T, mon.recv()).await.unwrap().unwrap().0, ExitReason::Killed);
    // `terminated()` on a remote ref works through a monitor too; a dead actor answers NoProc.
    assert_eq!(tokio::time::timeout(T, echo.terminated()).await.unwrap(), ExitReason::NoProc);
    a.shutdown();
    b.shutdown();
}
