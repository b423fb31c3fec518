//! `detection`: how fast a remote monitor learns that its node is gone. `sigkill_to_down_ms`:
//! from SIGKILL of the far node's process to `Down { NoConnection }` at a monitor on this
//! node (the kernel closes the dead process's sockets; no timeout involved).
//! `sigstop_to_down_ms`: from SIGSTOP (the process is frozen, its sockets stay open) to the
//! `Down`, which only the heartbeat timeout can produce; the params give the settings.

use std::time::{Duration, Instant};

use serde_json::json;
use troupe::{Actor, AnyRef, Ctx, Down};

use super::{median, runtime, ChildNode, Launcher, Row, SECRET};
use crate::error::{Error, ErrorKind};
use crate::services::Echo;
use crate::{Blob, Node, NodeConfig};

/// Parameters (defaults: heartbeat every 100 ms, timeout 500 ms, 5 reps).
#[derive(Clone, Debug)]
pub struct DetectionParams {
    /// Heartbeat interval for the SIGSTOP case.
    pub heartbeat_interval_ms: u64,
    /// Heartbeat timeout for the SIGSTOP case.
    pub heartbeat_timeout_ms: u64,
    /// Measured repetitions of each case.
    pub reps: u32,
}

impl Default for DetectionParams {
    fn default() -> Self {
        Self { heartbeat_interval_ms: 100, heartbeat_timeout_ms: 500, reps: 5 }
    }
}

struct Monitor {
    target: AnyRef,
    out: Option<tokio::sync::oneshot::Sender<(troupe::ExitReason, Instant)>>,
}

impl Actor for Monitor {
    type Msg = ();
    async fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), troupe::ActorError> {
        ctx.monitor(&self.target);
        Ok(())
    }
    async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {}
    async fn on_down(&mut self, d: Down, _: &mut Ctx<Self>) {
        if let Some(o) = self.out.take() {
            let _ = o.send((d.reason, Instant::now()));
        }
    }
}

fn one(launcher: &Launcher, rt: &tokio::runtime::Runtime, stop: bool, p: &DetectionParams) -> Result<f64, Error> {
    let hb = format!(
        "heartbeat_interval_ms = {}\nheartbeat_timeout_ms = {}\n",
        p.heartbeat_interval_ms, p.heartbeat_timeout_ms
    );
    let mut child = ChildNode::start(
        launcher,
        &format!("name = \"far\"\nsecret = \"{SECRET}\"\nlisten = \"127.0.0.1:0\"\nservices = [\"echo\"]\n{hb}"),
    )?;
    rt.block_on(async {
        let cfg = NodeConfig {
            heartbeat_interval_ms: p.heartbeat_interval_ms,
            heartbeat_timeout_ms: p.heartbeat_timeout_ms,
            ..NodeConfig::new("near", SECRET)
        };
        let node = Node::start(cfg).await?;
        let echo = node.lookup::<Echo>(&child.addr, "echo").await?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        troupe::spawn(Monitor { target: echo.any(), out: Some(tx) });
        // The ask after the monitor request (same control lane order) proves it is in place.
        echo.ask(|r| Echo(Blob(vec![]), r), Duration::from_secs(10))
            .await
            .map_err(|e| Error::other("an echo ask", e))?;
        let t0 = Instant::now();
        if stop {
            child.signal("STOP")?;
        } else {
            child.sigkill()?;
        }
        let (reason, at) = tokio::time::timeout(Duration::from_secs(30), rx)
            .await
            .map_err(|_| Error::from(ErrorKind::Timeout("no Down within 30 s".into())))?
            .map_err(|_| Error::from(ErrorKind::Closed))?;
        node.shutdown();
        if reason != troupe::ExitReason::NoConnection {
            return Err(ErrorKind::Other(format!("Down with {reason}, expected noconnection")).into());
        }
        Ok(at.duration_since(t0).as_secs_f64() * 1e3)
    })
}

/// Runs `detection`.
pub fn detection(launcher: &Launcher, p: &DetectionParams) -> Result<Vec<Row>, Error> {
    let rt = runtime()?;
    let mut rows = Vec::new();
    for (stop, metric) in [(false, "sigkill_to_down_ms"), (true, "sigstop_to_down_ms")] {
        one(launcher, &rt, stop, p)?;
        let mut v = Vec::new();
        for _ in 0..p.reps.max(1) {
            v.push(one(launcher, &rt, stop, p)?);
        }
        let params = json!({"reps": p.reps, "heartbeat_interval_ms": p.heartbeat_interval_ms,
            "heartbeat_timeout_ms": p.heartbeat_timeout_ms, "transport": "tcp loopback, 2 OS processes",
            "min_ms": v.iter().cloned().fold(f64::MAX, f64::min), "max_ms": v.iter().cloned().fold(0.0, f64::max)});
        rows.push(Row::new("detection", metric, median(v), "ms", params));
    }
    Ok(rows)
}
