//! `contention` (workloads.md §5, after Partisan's ATC'19 experiment): N sender tasks on this
//! node each send one payload to the `ack` service on a node in another OS process and wait
//! for the acknowledgement, repeatedly; an injected one-way delay on the request path (1 ms by
//! default) stands for the RTT. Configurations: one connection; parallelism P with random
//! lane choice; parallelism P with affinity (each sender hashes to its own lane). Reports the
//! latency p50/p99 and the throughput per payload and concurrency.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{quantile, runtime, ChildNode, Launcher, Row, SECRET};
use crate::error::Error;
use crate::services::Put;
use crate::{Blob, FaultConfig, Node, NodeConfig, SendOptions};

/// Parameters.
#[derive(Clone, Debug)]
pub struct ContentionParams {
    /// Payload sizes in bytes (default 512 KiB and 8 MiB).
    pub payloads: Vec<usize>,
    /// Sender counts (default 1, 4, 16, 64).
    pub concurrency: Vec<usize>,
    /// Parallelism of the parallel configurations (default 4).
    pub parallelism: u16,
    /// Injected one-way delay on requests, in microseconds (default 1000).
    pub delay_us: u64,
    /// Payload bytes per experiment; messages = max(2 x concurrency, this / payload).
    pub budget_bytes: usize,
}

impl Default for ContentionParams {
    fn default() -> Self {
        Self {
            payloads: vec![512 << 10, 8 << 20],
            concurrency: vec![1, 4, 16, 64],
            parallelism: 4,
            delay_us: 1000,
            budget_bytes: 256 << 20,
        }
    }
}

fn config_toml(name: &str, parallelism: u16, affinity: bool) -> String {
    format!(
        "name = \"{name}\"\nsecret = \"{SECRET}\"\nlisten = \"127.0.0.1:0\"\nservices = [\"ack\"]\nparallelism = {parallelism}\n\
         affinity = {affinity}\nmax_frame_bytes = {}\nmax_buffer_bytes = {}\n",
        64 << 20,
        4u64 << 30
    )
}

async fn experiment(
    node: &Node,
    addr: &str,
    payload: usize,
    conc: usize,
    total: usize,
) -> Result<(Vec<f64>, f64), Error> {
    let per = total.div_ceil(conc);
    let mut tasks = Vec::new();
    let t = Instant::now();
    for i in 0..conc {
        let opts = SendOptions::new().sender(troupe::ActorId::new(0, 1 + i as u64));
        let r = node.remote_ref_with::<Put>(addr, "ack", opts);
        tasks.push(tokio::spawn(async move {
            let blob = Blob(vec![i as u8; payload]);
            let mut lat = Vec::with_capacity(per);
            for _ in 0..per {
                let b = blob.clone();
                let s = Instant::now();
                r.ask(|x| Put(b, x), Duration::from_secs(120)).await.map_err(|e| Error::other("an ack ask", e))?;
                lat.push(s.elapsed().as_secs_f64() * 1e3);
            }
            Ok::<_, Error>(lat)
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.map_err(|e| Error::other("an asking task", e))??);
    }
    let wall = t.elapsed().as_secs_f64();
    all.sort_by(|a, b| a.total_cmp(b));
    let n = all.len() as f64;
    Ok((all, n / wall))
}

/// Runs `contention`: one row per (configuration, payload, concurrency, metric).
pub fn contention(launcher: &Launcher, p: &ContentionParams) -> Result<Vec<Row>, Error> {
    let rt = runtime()?;
    let mut rows = Vec::new();
    let configs =
        [("single", 1u16, true), ("parallel-random", p.parallelism, false), ("parallel-affinity", p.parallelism, true)];
    for (label, par, aff) in configs {
        let mut child = ChildNode::start(launcher, &config_toml("far", par, aff))?;
        let near: NodeConfig = toml::from_str(&config_toml("near", par, aff)).map_err(Error::config)?;
        let near = NodeConfig { services: vec![], ..near };
        let out = rt.block_on(async {
            let node = Node::start(near).await?;
            node.connect(&child.addr).await?;
            if p.delay_us > 0 {
                let f = FaultConfig { delay_min_us: p.delay_us, delay_max_us: p.delay_us, ..Default::default() };
                node.set_faults(Some(&child.addr), Some("default"), f);
            }
            // Baseline: the injected RTT as a 64-byte ask sees it.
            let (base, _) = experiment(&node, &child.addr, 64, 1, 50).await?;
            let mut out = vec![(0usize, 1usize, base, 0.0)];
            for &payload in &p.payloads {
                for &conc in &p.concurrency {
                    let total = (p.budget_bytes / payload.max(1)).max(2 * conc);
                    let (lat, tput) = experiment(&node, &child.addr, payload, conc, total).await?;
                    out.push((payload, conc, lat, tput));
                }
            }
            node.shutdown();
            Ok::<_, Error>(out)
        })?;
        let _ = child.cmd("quit");
        for (payload, conc, lat, tput) in out {
            let params = json!({"config": label, "parallelism": par, "affinity": aff, "payload_bytes": payload,
                "concurrency": conc, "messages": lat.len(), "injected_one_way_delay_us": p.delay_us,
                "transport": "tcp loopback, 2 OS processes"});
            rows.push(Row::new("contention", "latency_p50_ms", quantile(&lat, 0.5), "ms", params.clone()));
            rows.push(Row::new("contention", "latency_p99_ms", quantile(&lat, 0.99), "ms", params.clone()));
            if payload > 0 {
                rows.push(Row::new("contention", "msgs_per_s", tput, "msg/s", params));
            }
        }
    }
    Ok(rows)
}
