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
//!    node and the run's collector, is never cut (as the iot orchestrator is not). At the
//!    network layer the store nodes run in their namespaces (`node-<i>`) and this process in
//!    the coordinator's; it emits `ready {what: "window", count, start_us}` as the window
//!    opens (the layer times its faults from it).
//! 6. Nemesis (`nemesis`, docs/kv.md "Nemesis runs"): the schedule's kills and pauses are
//!    carried out on the store nodes during the window (`troupe_lab::nemesis::procs`); a
//!    killed node is started again on its port and wired to its peers (node.rs rule 6); its
//!    partitions and losses are the network layer's. Each op event then also carries its
//!    history fields: `key`, `value`, `outcome`, `invoke_us`, `complete_us` (always written).
//! 7. Settling (service kv): after the window and the final heal, every key written is read
//!    from every replica until they agree (`settle.rs`): one `final_read {key, versions,
//!    value}` per key and `converged {ms, rounds, keys}` (`ms` null when the bound passed).
//! 8. Overlay (`overlay`, [`troupe_lab::overlay_net`]; not with faults): once the nodes are
//!    ready (each joined with node 0 as the hub, `node.rs` rule 7), the client node joins too
//!    and waits until its link states reach all three before it dials them; after the window
//!    it writes `route {kind, peers}` (how its sessions ran), and node 0 is told to quit last.

use std::time::Duration;

use serde_json::json;
use troupe::ActorRef;
use troupe_remote::Node;

use super::actors::Lanes;
use super::actors::{ControlMsg, NodeStats, VnodeMsg};
use super::config::{KvConfig, NODES};
use super::node::{node_config, vnode_name, CONTROL, ENV_INDEX, ENV_PORT, ENV_SECRET, START_LIMIT};
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
    let actions = troupe_lab::schedule::from_env()?;
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
    let listen = format!("{}:{}", troupe_lab::netlayer::host(), nodes::free_port()?);
    let node = Node::start(node_config("client", &secret, cfg, &listen))
        .await
        .map_err(|e| format!("cannot start the client node: {e}"))?;
    let mut procs = Vec::new();
    let result = async {
        for i in 0..NODES {
            procs.push(node_cmd(i, &secret).start()?);
        }
        let mut addrs = Vec::new();
        for p in &mut procs {
            addrs.push(p.line("report its address", START_LIMIT).await?);
        }
        let net = troupe_lab::netfaults::apply::any(actions);
        let mut set = NodeSet { procs: &mut procs, addrs: &addrs, secret: &secret, start_us: None, net };
        run_with_nodes(cfg, em, &node, &mut set, actions).await
    }
    .await;
    for p in procs {
        p.close(Duration::from_secs(10)).await;
    }
    node.shutdown();
    result
}

/// The command of node process `i` (at the network layer it runs in network node `node-<i>`'s
/// namespace).
fn node_cmd(i: usize, secret: &str) -> NodeCmd {
    NodeCmd::new(format!("kv node {i}'s process"), "kv-node")
        .env(ENV_SECRET, secret)
        .env(ENV_INDEX, i.to_string())
        .net_node(&format!("node-{i}"))
        .stdin()
        .stdout()
}

/// The store's node processes as the nemesis acts on them (rule 6).
struct NodeSet<'a> {
    procs: &'a mut Vec<NodeProc>,
    addrs: &'a [String],
    secret: &'a str,
    /// The window start, once told (runtime-layer network faults).
    start_us: Option<i64>,
    /// Whether the nodes apply network faults themselves (rule 5).
    net: bool,
}

impl NodeSet<'_> {
    fn proc(&mut self, i: u32) -> std::result::Result<&mut NodeProc, String> {
        self.procs.get_mut(i as usize).ok_or_else(|| format!("no kv node {i}"))
    }

    fn signal(&mut self, i: u32, sig: nix::sys::signal::Signal) -> std::result::Result<(), String> {
        let pid = self.proc(i)?.id().ok_or_else(|| format!("kv node {i} is not running"))?;
        troupe_lab::nemesis::procs::signal(pid, sig)
    }
}

impl troupe_lab::nemesis::procs::Target for NodeSet<'_> {
    fn name(&self, i: u32) -> String {
        format!("node-{i}")
    }

    async fn kill(&mut self, i: u32) -> std::result::Result<(), String> {
        match self.proc(i)?.kill().await {
            Some(_) => Ok(()),
            None => Err(format!("kv node {i} did not end after SIGKILL")),
        }
    }

    async fn restart(&mut self, i: u32) -> std::result::Result<(), String> {
        let addr = self.addrs.get(i as usize).ok_or_else(|| format!("no kv node {i}"))?.clone();
        let port = addr.rsplit(':').next().unwrap_or_default().to_string();
        let mut p = node_cmd(i as usize, self.secret).env(ENV_PORT, port).start()?;
        let got = p.line("report its address", START_LIMIT).await?;
        if got != addr {
            return Err(format!("kv node {i} came back at {got}, not {addr}"));
        }
        p.send(&format!("peers {}", self.addrs.join(" "))).await?;
        p.expect("ready", START_LIMIT).await?;
        if let (true, Some(us)) = (self.net, self.start_us) {
            p.send(&format!("start {us}")).await?;
        }
        self.procs[i as usize] = p;
        Ok(())
    }

    fn pause(&mut self, i: u32) -> std::result::Result<(), String> {
        self.signal(i, nix::sys::signal::Signal::SIGSTOP)
    }

    fn resume(&mut self, i: u32) -> std::result::Result<(), String> {
        self.signal(i, nix::sys::signal::Signal::SIGCONT)
    }
}

/// Writes one line to every node process.
async fn tell(procs: &mut [NodeProc], line: &str) -> std::result::Result<(), String> {
    for p in procs.iter_mut() {
        p.send(line).await?;
    }
    Ok(())
}

/// Tells the node processes to quit (`node.rs` rule 4), the last first, each after the one
/// before it has ended (bounded by [`QUIT_GRACE`]), so node 0, the overlay's hub, ends last.
/// A process that does not end in time is left to `close`, which kills it.
async fn quit(procs: &mut [NodeProc]) {
    for p in procs.iter_mut().rev() {
        if p.send("quit").await.is_ok() {
            let _ = p.wait_for(QUIT_GRACE).await;
        }
    }
}

/// How long a node process may take to end after `quit`.
const QUIT_GRACE: Duration = Duration::from_secs(10);

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
    set: &mut NodeSet<'_>,
    actions: &[FaultAction],
) -> std::result::Result<(), String> {
    let addrs = set.addrs;
    tell(set.procs, &format!("peers {}", addrs.join(" "))).await?;
    hear(set.procs, "ready").await?;
    // Rule 8: this node joins the overlay too, and waits for its routes to every store node.
    let overlay = troupe_lab::overlay_net::start(node, &cfg.overlay, &addrs[0], false).await?;
    if let Some(o) = &overlay {
        troupe_lab::overlay_net::wait_reachable(o, NODES as u64, START_LIMIT).await?;
    }
    let result = measure_with_nodes(cfg, em, node, set, actions).await;
    if let Some(o) = overlay {
        o.stop();
    }
    result
}

async fn measure_with_nodes(
    cfg: &KvConfig,
    em: &Emitter,
    node: &Node,
    set: &mut NodeSet<'_>,
    actions: &[FaultAction],
) -> std::result::Result<(), String> {
    let addrs = set.addrs;
    let ring = Ring::new(NODES, cfg.vnodes, cfg.n as usize);
    let mut controls: Vec<ActorRef<ControlMsg>> = Vec::new();
    let mut table: Vec<Vec<Option<ActorRef<VnodeMsg>>>> = vec![vec![None; NODES]; cfg.vnodes as usize];
    for (i, a) in addrs.iter().enumerate() {
        node.connect(a).await.map_err(|e| format!("cannot reach kv node {i} at {a}: {}", troupe::error_chain(&e)))?;
        let c = node
            .lookup(a, CONTROL)
            .await
            .map_err(|e| format!("no control on kv node {i}: {}", troupe::error_chain(&e)))?;
        controls.push(if cfg.by_name() { node.remote_ref(a, CONTROL) } else { c });
        for v in ring.vnodes_of(i) {
            let r = node
                .lookup(a, &vnode_name(v))
                .await
                .map_err(|e| format!("no vnode {v} on kv node {i}: {}", troupe::error_chain(&e)))?;
            // node.rs rule 6: under a killing nemesis the ref names the replica.
            table[v as usize][i] = Some(if cfg.by_name() { node.remote_ref(a, &vnode_name(v)) } else { r });
        }
    }
    let replicas: Vec<Vec<ActorRef<VnodeMsg>>> = (0..cfg.vnodes)
        .map(|v| ring.replicas(v).iter().filter_map(|j| table[v as usize][*j].clone()).collect())
        .collect();
    // Rule 6: the network layer and the nemesis time their faults from the window start.
    let start_us = now_us();
    if troupe_lab::netlayer::NetFile::from_env().ok().flatten().is_some() || cfg.nemesis.is_some() {
        em.emit("ready", json!({"what": "window", "count": cfg.concurrency, "start_us": start_us}));
    }
    if set.net {
        tell(set.procs, &format!("start {start_us}")).await?;
        set.start_us = Some(start_us);
    }
    let steps = troupe_lab::nemesis::procs::steps(actions);
    let start = troupe_lab::nodes::instant_of(start_us);
    let ((rows, elapsed), nemesis_errors) = tokio::join!(
        super::client::run_clients(cfg, &ring, &replicas),
        troupe_lab::nemesis::procs::run(set, &steps, start, em),
    );
    if set.net {
        tell(set.procs, "calm").await?;
        hear(set.procs, "calm").await?;
    }
    // Rule 7: every key written, read from every replica until they agree.
    let settled = if cfg.service == "kv" {
        let keys: std::collections::BTreeSet<String> =
            rows.iter().filter(|r| r.op == "put").map(|r| r.key.clone()).collect();
        let keys: Vec<String> = keys.into_iter().collect();
        let lanes = Lanes { channels: cfg.transport == "channels" };
        Some(super::settle::final_reads(&keys, &ring, &replicas, &lanes).await)
    } else {
        None
    };
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
    }
    // Rule 8: how this node's sessions ran, before the nodes quit; node 0, the overlay's
    // hub, quits last.
    if cfg.overlay != troupe_lab::overlay_net::FULL_MESH {
        em.emit("route", troupe_lab::overlay_net::route_json(node, &cfg.overlay));
    }
    quit(set.procs).await;
    let failed = rows.iter().filter(|r| !r.ok).count();
    for r in &rows {
        em.emit(
            "op",
            json!({"client": r.client, "seq": r.seq, "op": r.op, "latency_us": r.latency_us, "ok": r.ok,
                   "key": r.key, "value": r.value, "outcome": r.outcome, "invoke_us": r.invoke_us,
                   "complete_us": r.complete_us}),
        );
    }
    em.emit("window", json!({"elapsed_us": elapsed.as_micros() as u64, "ops": rows.len(), "failed_ops": failed}));
    if let Some((reads, converged_ms, rounds)) = settled {
        for f in &reads {
            em.emit("final_read", json!({"key": f.key, "versions": f.versions, "value": f.value}));
        }
        em.emit("converged", json!({"ms": converged_ms, "rounds": rounds, "keys": reads.len()}));
    }
    em.emit(
        "nodes",
        json!({"digests_sent": totals.digests_sent, "repairs_applied": totals.repairs_applied,
               "gossip_received": totals.gossip_received, "objects": totals.objects}),
    );
    if !nemesis_errors.is_empty() {
        eprintln!("troupe kv: the nemesis could not carry out {} step(s)", nemesis_errors.len());
    }
    stats_err.map_or(Ok(()), Err)
}
