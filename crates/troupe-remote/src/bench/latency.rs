//! `remote-latency`: round-trip time of an `ask` to the `echo` service on a node in another OS
//! process, at a light fixed rate (one ask every `interval_us`, never more than one in
//! flight), so queues stay empty and the figure is the transport's own latency. Reports the
//! p50 and p99 of all samples of the median repetition (by p50), in two modes: `idle` (the
//! asker, a task on a multi-threaded runtime, sleeps between asks, so every round trip pays for
//! waking idle threads) and `busy-poll` (a single-threaded asker that yields in a loop between
//! asks, as BEAM schedulers spin before sleeping). The far node is the same in both. Each mode runs
//! with write-through on (the default, rule 3 of `node/lane.rs`) and off, both nodes alike.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{quantile, runtime, ChildNode, Launcher, Row, SECRET};
use crate::error::Error;
use crate::services::Echo;
use crate::{Blob, Node, NodeConfig};

/// Parameters (defaults: 5,000 asks, one every 200 µs, 16-byte payload, 3 reps).
#[derive(Clone, Debug)]
pub struct LatencyParams {
    /// Asks per repetition.
    pub samples: u32,
    /// Pause between asks.
    pub interval_us: u64,
    /// Payload bytes.
    pub payload: usize,
    /// Measured repetitions.
    pub reps: u32,
}

impl Default for LatencyParams {
    fn default() -> Self {
        Self { samples: 5000, interval_us: 200, payload: 16, reps: 3 }
    }
}

/// One repetition. In `idle` mode the asking loop is a task on the runtime, as an asking actor
/// (or an Erlang process on a scheduler) is: an answer read by a worker wakes it on that worker,
/// not a thread parked in `block_on`, which costs a futex wake-up of that thread and an `eventfd`
/// write to wake the I/O driver per round trip that no actor pays (the path, step by step, is in
/// docs/distribution.md). `busy-poll` runs on a current-thread runtime, where the two are the same.
async fn one(echo: &troupe::ActorRef<Echo>, p: &LatencyParams, spin: bool) -> Result<Vec<f64>, Error> {
    if spin {
        return samples(echo, p, true).await;
    }
    let (echo, p) = (echo.clone(), p.clone());
    tokio::spawn(async move { samples(&echo, &p, false).await })
        .await
        .map_err(|e| Error::other("the asking task", e))?
}

async fn samples(echo: &troupe::ActorRef<Echo>, p: &LatencyParams, spin: bool) -> Result<Vec<f64>, Error> {
    let mut v = Vec::with_capacity(p.samples as usize);
    let payload = Blob(vec![7; p.payload]);
    for _ in 0..p.samples {
        let b = payload.clone();
        let t = Instant::now();
        echo.ask(|r| Echo(b, r), Duration::from_secs(10)).await.map_err(|e| Error::other("an echo ask", e))?;
        v.push(t.elapsed().as_secs_f64() * 1e6);
        if spin {
            let until = Instant::now() + Duration::from_micros(p.interval_us);
            while Instant::now() < until {
                tokio::task::yield_now().await;
            }
        } else {
            tokio::time::sleep(Duration::from_micros(p.interval_us)).await;
        }
    }
    v.sort_by(|a, b| a.total_cmp(b));
    Ok(v)
}

/// The node settings compared: (label, write_through, spin_us, tls, modes).
const SETTINGS: [(&str, bool, u64, bool, &[&str]); 4] = [
    ("default", true, 0, false, &["idle", "busy-poll"]),
    ("no-write-through", false, 0, false, &["idle", "busy-poll"]),
    ("spin", true, 1000, false, &["busy-poll"]),
    ("tls", true, 0, true, &["idle", "busy-poll"]),
];

/// Runs `remote-latency`: both modes with the default settings, with write-through off (so its
/// saving shows as a ratio measured in the same run), and busy-poll with both nodes spinning
/// (`spin_us`), BEAM's way of buying latency with CPU; and both modes over mutual TLS.
pub fn remote_latency(launcher: &Launcher, p: &LatencyParams) -> Result<Vec<Row>, Error> {
    let mut rows = Vec::new();
    let certs_dir = std::env::temp_dir().join(format!("troupe-bench-tls-latency-{}", std::process::id()));
    for (setting, write_through, spin_us, tls, modes) in SETTINGS {
        let (near_tls, far_tls) = if tls {
            let mut c = crate::dev_certs_with(&certs_dir, &["asker", "echo"], &["127.0.0.1"], true)?;
            let far = c.pop();
            (c.pop(), far)
        } else {
            (None, None)
        };
        let far_section = far_tls.as_ref().map(crate::toml_section).unwrap_or_default();
        let mut child = ChildNode::start(
            launcher,
            &format!(
                "name = \"echo\"\nsecret = \"{SECRET}\"\nlisten = \"127.0.0.1:0\"\nservices = [\"echo\"]\n\
                 write_through = {write_through}\nspin_us = {spin_us}\n{far_section}"
            ),
        )?;
        for mode in modes {
            let spin = *mode == "busy-poll";
            let rt = if spin {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| Error::io("cannot start a tokio runtime", e))?
            } else {
                runtime()?
            };
            let t = std::time::Instant::now();
            let mut runs = rt.block_on(async {
                let cfg =
                    NodeConfig { write_through, spin_us, tls: near_tls.clone(), ..NodeConfig::new("asker", SECRET) };
                let node = Node::start(cfg).await?;
                let echo = node.lookup::<Echo>(&child.addr, "echo").await?;
                one(&echo, &LatencyParams { samples: p.samples.min(1000), ..p.clone() }, spin).await?;
                let mut runs = Vec::new();
                for _ in 0..p.reps.max(1) {
                    runs.push(one(&echo, p, spin).await?);
                }
                node.shutdown();
                Ok::<_, Error>(runs)
            })?;
            let rate = f64::from(p.samples.min(1000) + p.samples * p.reps.max(1)) / t.elapsed().as_secs_f64();
            runs.sort_by(|a, b| quantile(a, 0.5).total_cmp(&quantile(b, 0.5)));
            let mid = &runs[runs.len() / 2];
            let params = json!({"mode": mode, "setting": setting, "write_through": write_through, "spin_us": spin_us, "samples": p.samples,
                "interval_us": p.interval_us, "asks_per_s": rate.round(), "payload_bytes": p.payload, "reps": p.reps,
                "tls": tls, "transport": if tls { "mutual TLS over tcp loopback, 2 OS processes" } else { "tcp loopback, 2 OS processes" }});
            rows.push(Row::new("remote-latency", "rtt_p50_us", quantile(mid, 0.5), "us", params.clone()));
            rows.push(Row::new("remote-latency", "rtt_p99_us", quantile(mid, 0.99), "us", params));
        }
        let _ = child.cmd("quit");
    }
    let _ = std::fs::remove_dir_all(&certs_dir);
    Ok(rows)
}
