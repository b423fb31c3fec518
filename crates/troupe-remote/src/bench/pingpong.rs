//! `remote-pingpong`: a ping actor on this node and the `pong` service on a node in another
//! OS process, over loopback. The ping side keeps `window` pings in flight (the batching the
//! transport does is what makes throughput); `messages` counts pings plus pongs, so
//! `msgs_per_s = messages / time`. Time runs from the first ping to the last pong. Every row
//! names its shape: `in_flight` (= `window`) and `shape`, `pipelined` (many in flight: a
//! throughput) or `lock-step` (one at a time: round trips back to back). Measured over
//! plain TCP and over mutual TLS, so TLS's cost shows as a ratio from the same run.

use std::time::{Duration, Instant};

use serde_json::json;
use troupe::{Actor, ActorRef, Ctx};

use super::{median, runtime, ChildNode, Launcher, Row, SECRET};
use crate::error::{Error, ErrorKind};
use crate::services::{Pong, PongReply};
use crate::{Node, NodeConfig};

/// Parameters (defaults: 1,000,000 messages, 1,000 in flight, 3 reps, plain TCP and TLS).
#[derive(Clone, Debug)]
pub struct PingPongParams {
    /// Pings plus pongs.
    pub messages: u64,
    /// Pings in flight: 1000 is the pipelined shape (throughput), 1 the lock-step shape
    /// (one round trip at a time).
    pub window: u64,
    /// Measured repetitions.
    pub reps: u32,
    /// Also measure over mutual TLS (after plain TCP).
    pub tls: bool,
}

impl Default for PingPongParams {
    fn default() -> Self {
        Self { messages: 1_000_000, window: 1000, reps: 3, tls: true }
    }
}

/// The name of the shape `window` pings in flight make: `lock-step` for 1, else `pipelined`.
#[must_use]
pub fn shape(window: u64) -> &'static str {
    if window <= 1 {
        "lock-step"
    } else {
        "pipelined"
    }
}

struct Pinger {
    pong: ActorRef<Pong>,
    sent: u64,
    got: u64,
    pings: u64,
    done: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Actor for Pinger {
    type Msg = PongReply;
    async fn handle(&mut self, _: PongReply, _: &mut Ctx<Self>) {
        self.got += 1;
        if self.sent < self.pings {
            self.sent += 1;
            let _ = self.pong.send(Pong::Ping(self.sent));
        }
        if self.got == self.pings {
            if let Some(d) = self.done.take() {
                let _ = d.send(());
            }
        }
    }
}

async fn one(node: &Node, pong: &ActorRef<Pong>, p: &PingPongParams) -> Result<f64, Error> {
    let pings = p.messages / 2;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let w = p.window.min(pings);
    let pinger = troupe::spawn(Pinger { pong: pong.clone(), sent: w, got: 0, pings, done: Some(tx) });
    pong.send(Pong::Hello(pinger.clone())).map_err(|_| Error::from(ErrorKind::Closed))?;
    let t = Instant::now();
    for i in 1..=w {
        let _ = pong.send(Pong::Ping(i));
    }
    tokio::time::timeout(Duration::from_secs(300), rx)
        .await
        .map_err(|_| Error::from(ErrorKind::Timeout("remote ping-pong did not finish in 300 s".into())))?
        .map_err(|_| Error::from(ErrorKind::Closed))?;
    let secs = t.elapsed().as_secs_f64();
    pinger.kill();
    let _ = node;
    Ok(secs)
}

/// Runs `remote-pingpong` over plain TCP, then over mutual TLS (development certificates made
/// for the run in a temporary folder), both nodes alike.
pub fn remote_pingpong(launcher: &Launcher, p: &PingPongParams) -> Result<Vec<Row>, Error> {
    let mut rows = Vec::new();
    let certs_dir = std::env::temp_dir().join(format!("troupe-bench-tls-{}", std::process::id()));
    let transports: &[bool] = if p.tls { &[false, true] } else { &[false] };
    for &tls in transports {
        let (near_tls, far_tls) = if tls {
            let mut c = crate::dev_certs_with(&certs_dir, &["ping", "pong"], &["127.0.0.1"], true)?;
            let far = c.pop();
            (c.pop(), far)
        } else {
            (None, None)
        };
        let far_section = far_tls.as_ref().map(crate::toml_section).unwrap_or_default();
        let mut child = ChildNode::start(
            launcher,
            &format!(
                "name = \"pong\"\nsecret = \"{SECRET}\"\nlisten = \"127.0.0.1:0\"\nservices = [\"pong\"]\n{far_section}"
            ),
        )?;
        let rt = runtime()?;
        let times = rt.block_on(async {
            let node = Node::start(NodeConfig { tls: near_tls, ..NodeConfig::new("ping", SECRET) }).await?;
            let pong = node.lookup::<Pong>(&child.addr, "pong").await?;
            one(&node, &pong, &PingPongParams { messages: p.messages.min(100_000), ..p.clone() }).await?;
            let mut v = Vec::new();
            for _ in 0..p.reps.max(1) {
                v.push(one(&node, &pong, p).await?);
            }
            node.shutdown();
            Ok::<_, Error>(v)
        });
        let _ = child.cmd("quit");
        let times = times?;
        let secs = median(times);
        let transport =
            if tls { "mutual TLS over tcp loopback, 2 OS processes" } else { "tcp loopback, 2 OS processes" };
        let params = json!({
            "messages": p.messages,
            "window": p.window,
            "in_flight": p.window,
            "shape": shape(p.window),
            "reps": p.reps,
            "tls": tls,
            "transport": transport
        });
        rows.push(Row::new("remote-pingpong", "time_ms", secs * 1e3, "ms", params.clone()));
        rows.push(Row::new("remote-pingpong", "msgs_per_s", p.messages as f64 / secs, "msg/s", params));
    }
    let _ = std::fs::remove_dir_all(&certs_dir);
    Ok(rows)
}
