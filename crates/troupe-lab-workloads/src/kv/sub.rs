//! The Troupe kv program as OS processes (docs/kv.md): `troupe lab exec kv` is the orchestrator
//! and the client process, and writes the events; it starts the three node processes (`troupe
//! lab exec kv-node`, [`super::node`]) as its children.
//!
//! Rules:
//! 1. Set-up, outside the measurement: start the client node and the three node processes, hand
//!    every node the three addresses (stdin `peers ...`), wait for each `ready`, connect and look
//!    up every vnode replica.
//! 2. Measurement: `concurrency` client tasks start together and run operations back to back
//!    until `duration_s` has passed ([`super::client`]); the window runs from the start until the
//!    last client has finished its last operation.
//! 3. Events, after the window (none during it), from this process (with network faults the
//!    store nodes add their own, `node.rs` rule 5): `run_started`, one `op
//!    {client, seq, op, latency_us, ok}` per operation, `window {elapsed_us, ops, failed_ops}`,
//!    `nodes {digests_sent, repairs_applied, gossip_received, objects}` summed over the nodes,
//!    and `run_finished {errors}`; a failed operation is an `op` with `ok: false`, not an error.
//! 4. A config the program cannot run is refused with one stderr line naming the key and the
//!    allowed values, exit 2; a set-up failure or a node process gone ends the run with
//!    `run_finished {errors: 1}` and exit status 1.
//! 5. Network faults: when the schedule has network lines, the orchestrator tells each store
//!    node the window start (`start <us>`) just before the clients start, and `calm` after the
//!    window, waiting for each node's `calm` before it asks for their counts (`node.rs` rule 5).
//!    The store nodes are the fault targets (`node-0`..`node-2`); this process, the clients'
//!    node and the run's collector, is never cut (as the iot orchestrator is not).

use std::time::Duration;

use serde_json::json;
use troupe::ActorRef;
use troupe_remote::Node;

use super::actors::{ControlMsg, NodeStats, VnodeMsg};
use super::config::{KvConfig, NODES};
use super::node::{node_config, vnode_name, CONTROL, ENV_INDEX, ENV_SECRET, START_LIMIT};
use super::quorum::Ring;
use troupe_lab::error::Result;
use troupe_lab::events::writer::{now_us, Emitter};
use troupe_lab::nodes::{self, NodeCmd, NodeProc};
use troupe_lab::schedule::FaultAction;
use troupe_lab::subprocess;

/// Runs one role; the exit code.
pub(super) fn exec(role: &str) -> Result<i32> {
    let cfg_value = match subprocess::config_or_exit(&super::Kv) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let cfg = KvConfig::from_config(&cfg_value);
    let actions = match std::env::var_os("TROUPE_SCHEDULE") {
        Some(path) => troupe_lab::schedule::read(std::path::Path::new(&path))?,
        None => Vec::new(),
    };
    if role == "kv-node" {
        return subprocess::block_on(super::node::node_process(&cfg, &actions))?;
    }
    subprocess::run_events("kv", &cfg_value, "client", |em| async move {
        (experiment(&cfg, &actions, &em).await, json!({}))
    })
}

/// The orchestrator's whole run (rules 1-3, 5); the node processes are stopped whatever happens.
async fn experiment(cfg: &KvConfig, actions: &[FaultAction], em: &Emitter) -> std::result::Result<(), String> {
    let secret = nodes::secret();
    let listen = format!("127.0.0.1:{}", nodes::free_port()?);
    let node = Node::start(node_config("client", &secret, cfg, &listen))
        .await
        .map_err(|e| format!("cannot start the client node: {e}"))?;
    let mut procs = Vec::new();
    let result = async {
        for i in 0..NODES {
            let cmd = NodeCmd::new(format!("kv node {i}'s process"), "kv-node").env(ENV_SECRET, &secret);
            procs.push(cmd.env(ENV_INDEX, i.to_string()).stdin().stdout().start()?);
        }
        let mut addrs = Vec::new();
        for p in &mut procs {
            addrs.push(p.line("report its address", START_LIMIT).await?);
        }
        let net = troupe_lab::netfaults::apply::any(actions);
        run_with_nodes(cfg, em, &node, &mut procs, &addrs, net).await
    }
    .await;
    for p in procs {
        p.close(Duration::from_secs(10)).await;
    }
    node.shutdown();
    result
}

/// Writes one line to every node process.
async fn tell(procs: &mut [NodeProc], line: &str) -> std::result::Result<(), String> {
    for p in procs.iter_mut() {
        p.send(line).await?;
    }
    Ok(())
}

/// Waits for the line `word` from every node process.
async fn hear(procs: &mut [NodeProc], word: &str) -> std::result::Result<(), String> {
    for p in procs.iter_mut() {
        p.expect(word, START_LIMIT).await?;
    }
    Ok(())
}

async fn run_with_nodes(
    cfg: &KvConfig,
    em: &Emitter,
    node: &Node,
    procs: &mut [NodeProc],
    addrs: &[String],
    net: bool,
) -> std::result::Result<(), String> {
    tell(procs, &format!("peers {}", addrs.join(" "))).await?;
    hear(procs, "ready").await?;
    let ring = Ring::new(NODES, cfg.vnodes, cfg.n as usize);
    let mut controls: Vec<ActorRef<ControlMsg>> = Vec::new();
    let mut table: Vec<Vec<Option<ActorRef<VnodeMsg>>>> = vec![vec![None; NODES]; cfg.vnodes as usize];
    for (i, a) in addrs.iter().enumerate() {
        node.connect(a).await.map_err(|e| format!("cannot reach kv node {i} at {a}: {e}"))?;
        controls.push(node.lookup(a, CONTROL).await.map_err(|e| format!("no control on kv node {i}: {e}"))?);
        for v in ring.vnodes_of(i) {
            let r = node.lookup(a, &vnode_name(v)).await.map_err(|e| format!("no vnode {v} on kv node {i}: {e}"))?;
            table[v as usize][i] = Some(r);
        }
    }
    let replicas: Vec<Vec<ActorRef<VnodeMsg>>> = (0..cfg.vnodes)
        .map(|v| ring.replicas(v).iter().filter_map(|j| table[v as usize][*j].clone()).collect())
        .collect();
    if net {
        tell(procs, &format!("start {}", now_us())).await?;
    }
    let (rows, elapsed) = super::client::run_clients(cfg, &ring, &replicas).await;
    if net {
        tell(procs, "calm").await?;
        hear(procs, "calm").await?;
    }
    let mut totals = NodeStats::default();
    let mut stats_err = None;
    for (i, c) in controls.iter().enumerate() {
        match c.ask(ControlMsg::Stats, Duration::from_secs(30)).await {
            Ok(s) => {
                totals.digests_sent += s.digests_sent;
                totals.repairs_applied += s.repairs_applied;
                totals.gossip_received += s.gossip_received;
                totals.objects += s.objects;
            }
            Err(e) => {
                stats_err.get_or_insert(format!("kv node {i} did not report its counts: {e}"));
            }
        }
        let _ = c.send(ControlMsg::Quit);
    }
    let failed = rows.iter().filter(|r| !r.ok).count();
    for r in &rows {
        em.emit("op", json!({"client": r.client, "seq": r.seq, "op": r.op, "latency_us": r.latency_us, "ok": r.ok}));
    }
    em.emit("window", json!({"elapsed_us": elapsed.as_micros() as u64, "ops": rows.len(), "failed_ops": failed}));
    em.emit(
        "nodes",
        json!({"digests_sent": totals.digests_sent, "repairs_applied": totals.repairs_applied,
               "gossip_received": totals.gossip_received, "objects": totals.objects}),
    );
    stats_err.map_or(Ok(()), Err)
}
