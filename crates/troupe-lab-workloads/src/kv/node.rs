//! A kv node process (`troupe lab exec kv-node`, started by the orchestrator, docs/kv.md): holds
//! a replica actor for each vnode the ring gives it, runs anti-entropy and ring gossip.
//!
//! Rules:
//! 1. Start-up: start the node on a free loopback port, spawn and export the vnode replicas
//!    (`kv-vnode-<v>`) and the control actor (`kv-control`), print the listen address; then read
//!    one stdin line `peers <addr0> <addr1> <addr2>`, connect to the other nodes, look up the peer
//!    replicas of its vnodes and the other control actors, and print `ready`.
//! 2. Anti-entropy: every [`AE_EVERY_MS`] each local vnode sends its digest to one of its peer
//!    replicas, taking them in turn (actors.rs rule 2), on the anti-entropy channel.
//! 3. Ring gossip: every [`GOSSIP_EVERY_MS`] the node sends its ring epoch and members to the
//!    other nodes' control actors on the gossip channel.
//! 4. The process ends on the stdin line `quit` (exit 0), or when its stdin closes without it
//!    (the orchestrator is gone) or the run's deadline passes (exit 1). The end comes on stdin,
//!    not as an actor message: a message could arrive after the orchestrator closes the pipe,
//!    and the node would then report a clean run as the orchestrator gone.
//! 5. Network faults (`[net_faults]`, docs/kv.md): when the run's schedule has network lines,
//!    the node writes events as `node-<index>` and, on the stdin line `start <us>` (the window
//!    start, wall-clock microseconds), applies them on its own node (`troupe_lab::netfaults::apply`:
//!    drops and delays on its frames, cuts of its links to the other store nodes); on `calm` it
//!    stops, removes every rule and heals every link, and answers `calm`, so the orchestrator's
//!    count requests after the window are not faulted. Its `run_finished` carries the frames its
//!    node dropped and delayed. Without network lines it writes no events, as before.
//! 6. Nemesis (docs/kv.md "Nemesis runs"): a node process started again after a kill gets the
//!    port it had (`TROUPE_KV_PORT`), listens there, and its replicas recover (actors.rs rule 5).
//!    With `kill` in the nemesis every ref between processes names its actor (`kv-vnode-<v>`,
//!    `kv-control`) rather than its id, so it reaches the new process; the address a node
//!    listens on is its network namespace's at the network layer, loopback otherwise.
//! 7. Overlay (`overlay`, [`troupe_lab::overlay_net`]): with any but `full_mesh`, on the
//!    `peers` line the node starts the overlay with node 0 as its hub (the server of
//!    `client_server`, the contact of `hyparview`) and waits until its link states reach the
//!    other store nodes before it dials them, so its sessions to non-neighbours are routed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use troupe::ActorRef;
use troupe_remote::{send_with, ChannelConfig, Node, NodeConfig};

use super::actors::{
    Control, ControlMsg, Counters, Lanes, RingGossip, Vnode, VnodeMsg, ANTI_ENTROPY, ENV_PLANTED_BUG, GOSSIP, REQUESTS,
};
use super::config::{KvConfig, NODES};
use super::quorum::{Ring, Store};
use crate::SutError;
use troupe_lab::error::Result;
use troupe_lab::events::writer::EventWriter;
use troupe_lab::nodes;
use troupe_lab::schedule::FaultAction;

/// The secret of the run's nodes, handed to the node processes.
pub(super) const ENV_SECRET: &str = "TROUPE_KV_SECRET";
/// A node process's index.
pub(super) const ENV_INDEX: &str = "TROUPE_KV_INDEX";
/// Set for a node process started again after a kill: the port it listened on (rule 6).
pub(super) const ENV_PORT: &str = "TROUPE_KV_PORT";
/// How long a child process may take to start and answer.
pub(super) const START_LIMIT: Duration = Duration::from_secs(60);

/// A node of the run with the transport's connections: `channels` gives requests, anti-entropy
/// and ring gossip their own channels; `one_connection` one connection per node pair.
pub(super) fn node_config(name: &str, secret: &str, c: &KvConfig, listen: &str) -> NodeConfig {
    let p = c.parallelism.min(u64::from(u16::MAX)) as u16;
    let in_flight = (c.concurrency * (c.object_bytes + 65_536) * 3) as usize;
    let mut n = nodes::bulk_node_config(name, secret, listen, listen, in_flight * 4 + (64 << 20));
    if c.transport == "channels" {
        n.channels = vec![
            ChannelConfig { name: REQUESTS.into(), parallelism: p, affinity: true },
            ChannelConfig { name: ANTI_ENTROPY.into(), parallelism: 1, affinity: true },
            ChannelConfig { name: GOSSIP.into(), parallelism: 1, affinity: true },
        ];
    } else {
        n.parallelism = 1;
    }
    n
}

/// The store nodes `[net_faults]` names, by index (rule 5).
pub(super) fn net_nodes() -> Vec<String> {
    (0..NODES).map(|i| format!("node-{i}")).collect()
}

/// How often each vnode sends its digest, ms (rule 2).
pub(crate) const AE_EVERY_MS: u64 = 500;
/// How often each node gossips its ring, ms (rule 3).
pub(crate) const GOSSIP_EVERY_MS: u64 = 200;

/// The name a vnode replica is exported under.
pub(crate) fn vnode_name(v: u64) -> String {
    format!("kv-vnode-{v}")
}

/// The name a node's control actor is exported under.
pub(crate) const CONTROL: &str = "kv-control";

/// The node process (rules 1-5); the exit code. `actions` is the run's schedule.
pub(super) async fn node_process(cfg: &KvConfig, actions: &[FaultAction]) -> Result<i32> {
    let secret = nodes::env(ENV_SECRET, "kv")?;
    let index: usize = nodes::env(ENV_INDEX, "kv")?
        .parse()
        .map_err(|_| SutError::Environment(format!("{ENV_INDEX} is not a node index")))?;
    // A node started again after a kill listens where it did before (its peers' refs name it).
    let port = match std::env::var(ENV_PORT) {
        Ok(p) => p.parse::<u16>().map_err(|_| SutError::Environment(format!("{ENV_PORT} is not a port")))?,
        Err(_) => nodes::free_port().map_err(SutError::Process)?,
    };
    let restarted = std::env::var_os(ENV_PORT).is_some();
    let listen = format!("{}:{port}", troupe_lab::netlayer::host());
    let node = Node::start(node_config(&format!("kv-{index}"), &secret, cfg, &listen))
        .await
        .map_err(|e| SutError::Node(format!("cannot start kv node {index}: {e}")))?;
    let ring = Ring::new(NODES, cfg.vnodes, cfg.n as usize);
    let lanes = Lanes { channels: cfg.transport == "channels" };
    let counters = Arc::new(Counters::default());
    let mut local: BTreeMap<u64, ActorRef<VnodeMsg>> = BTreeMap::new();
    let bug = std::env::var(ENV_PLANTED_BUG).unwrap_or_default();
    let planted_bug = bug == "ack_without_store";
    let recover = restarted && bug != "serve_while_recovering";
    for v in ring.vnodes_of(index) {
        // actors.rs rule 5: a restarted replica serves once every peer replica sent its store.
        let peers = ring.replicas(v).iter().filter(|j| **j != index).map(|j| *j as u64).collect();
        let a = troupe::spawn(Vnode {
            store: Store::default(),
            lanes: lanes.clone(),
            counters: Arc::clone(&counters),
            node: index as u64,
            recovering: recover.then_some(peers),
            planted_bug,
            storage_delay: std::time::Duration::from_millis(cfg.storage_delay_ms),
        });
        node.export(&vnode_name(v), &a).map_err(|e| SutError::Node(format!("cannot export vnode {v}: {e}")))?;
        local.insert(v, a);
    }
    let control = troupe::spawn(Control { counters: Arc::clone(&counters) });
    node.export(CONTROL, &control).map_err(|e| SutError::Node(format!("cannot export {CONTROL}: {e}")))?;
    println!("{listen}");
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    let peers_line = match tokio::time::timeout(START_LIMIT, stdin.next_line()).await {
        Ok(Ok(Some(l))) => l,
        _ => return Err(SutError::Setup("kv node: no `peers` line on stdin".into()).into()),
    };
    let addrs: Vec<String> = peers_line.split_whitespace().skip(1).map(str::to_string).collect();
    if addrs.len() != NODES {
        return Err(SutError::Setup(format!("kv node: expected {NODES} peer addresses, got {peers_line:?}")).into());
    }
    // Rule 7: the overlay, and its routes to the other store nodes, before the first dial.
    let overlay =
        troupe_lab::overlay_net::start(&node, &cfg.overlay, &addrs[0], index == 0).await.map_err(SutError::Node)?;
    if let Some(o) = &overlay {
        troupe_lab::overlay_net::wait_reachable(o, NODES as u64 - 1, START_LIMIT).await.map_err(SutError::Setup)?;
    }
    let wiring = wire(&node, &ring, index, &addrs, &local, cfg.by_name()).await.map_err(SutError::Setup)?;
    println!("ready");
    let ae = tokio::spawn(ae_loop(local.clone(), wiring.ae_peers));
    let gossip = tokio::spawn(gossip_loop(index as u64, addrs.clone(), wiring.controls, lanes));
    // Rule 5: events only when there are network faults to report.
    let writer = if troupe_lab::netfaults::apply::any(actions) {
        Some(EventWriter::from_env("troupe", &format!("node-{index}"))?)
    } else {
        None
    };
    let mut faults = Faults { cfg, node: &node, index, addrs: &addrs, actions, writer: writer.as_ref(), task: None };
    let deadline = super::expected_window(cfg) + START_LIMIT;
    let code = tokio::select! {
        // Bounded by the orchestrator: it ends on `quit` or when stdin closes.
        c = async {
            while let Ok(Some(line)) = stdin.next_line().await {
                if line.trim() == "quit" {
                    return 0;
                }
                faults.command(line.trim());
            }
            eprintln!("troupe kv-node: the orchestrator went away");
            1
        } => c,
        _ = tokio::time::sleep(deadline) => {
            eprintln!("troupe kv-node: the run's deadline passed");
            1
        }
    };
    faults.calm();
    if let Some(o) = overlay {
        o.stop();
    }
    ae.abort();
    gossip.abort();
    for a in local.values() {
        a.stop();
    }
    control.stop();
    if let Some(w) = writer {
        let (dropped, delayed) = troupe_lab::netfaults::apply::counts(&node);
        w.finish(serde_json::json!({"errors": code, "net_dropped_frames": dropped, "net_delayed_frames": delayed}));
    }
    node.shutdown();
    Ok(code)
}

/// Rule 5: the node's network faults, started and stopped by the orchestrator's stdin lines.
struct Faults<'a> {
    cfg: &'a KvConfig,
    node: &'a Node,
    index: usize,
    addrs: &'a [String],
    actions: &'a [FaultAction],
    writer: Option<&'a EventWriter>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Faults<'_> {
    /// `start <us>` or `calm`; anything else is ignored (the line only says the orchestrator is
    /// there).
    fn command(&mut self, line: &str) {
        if let Some(us) = line.strip_prefix("start ").and_then(|u| u.trim().parse::<i64>().ok()) {
            let Some(w) = self.writer else { return };
            let me = troupe_lab::netfaults::apply::Me {
                index: self.index as u32,
                name: format!("node-{}", self.index),
                nodes: net_nodes(),
                addrs: self.addrs.iter().cloned().map(Some).collect(),
            };
            self.task =
                troupe_lab::netfaults::apply::spawn(self.node, self.actions, me, us, self.cfg.seed, &w.emitter());
        } else if line == "calm" {
            self.calm();
            println!("calm");
        }
    }

    /// Stops applying faults, removes every rule and heals every link.
    fn calm(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
        self.node.clear_faults();
    }
}

/// The peers a node talks to.
struct Wiring {
    /// Per local vnode, its peer replicas.
    ae_peers: BTreeMap<u64, Vec<ActorRef<VnodeMsg>>>,
    /// The other nodes' control actors.
    controls: Vec<ActorRef<ControlMsg>>,
}

/// Rule 1's second half: connect and look up.
async fn wire(
    node: &Node,
    ring: &Ring,
    index: usize,
    addrs: &[String],
    local: &BTreeMap<u64, ActorRef<VnodeMsg>>,
    by_name: bool,
) -> std::result::Result<Wiring, String> {
    let mut controls = Vec::new();
    for (j, a) in addrs.iter().enumerate() {
        if j == index {
            continue;
        }
        node.connect(a)
            .await
            .map_err(|e| format!("kv node {index}: cannot reach node {j} at {a}: {}", troupe::error_chain(&e)))?;
        let c = node
            .lookup(a, CONTROL)
            .await
            .map_err(|e| format!("kv node {index}: no control on node {j}: {}", troupe::error_chain(&e)))?;
        controls.push(if by_name { node.remote_ref(a, CONTROL) } else { c });
    }
    let mut ae_peers = BTreeMap::new();
    for v in local.keys() {
        let mut peers = Vec::new();
        for &j in ring.replicas(*v).iter().filter(|j| **j != index) {
            let r = node
                .lookup(&addrs[j], &vnode_name(*v))
                .await
                .map_err(|e| format!("kv node {index}: no vnode {v} on node {j}: {e}"))?;
            peers.push(if by_name { node.remote_ref(&addrs[j], &vnode_name(*v)) } else { r });
        }
        ae_peers.insert(*v, peers);
    }
    Ok(Wiring { ae_peers, controls })
}

/// Rule 2.
async fn ae_loop(local: BTreeMap<u64, ActorRef<VnodeMsg>>, peers: BTreeMap<u64, Vec<ActorRef<VnodeMsg>>>) {
    let mut tick = tokio::time::interval(Duration::from_millis(AE_EVERY_MS));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut round = 0usize;
    loop {
        tick.tick().await;
        for (v, me) in &local {
            if let Some(ps) = peers.get(v).filter(|p| !p.is_empty()) {
                let _ = me.send(VnodeMsg::AeTick { peer: ps[round % ps.len()].clone() });
            }
        }
        round += 1;
    }
}

/// Rule 3.
async fn gossip_loop(index: u64, members: Vec<String>, controls: Vec<ActorRef<ControlMsg>>, lanes: Lanes) {
    let mut tick = tokio::time::interval(Duration::from_millis(GOSSIP_EVERY_MS));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        for c in &controls {
            let g = RingGossip { from: index, epoch: 1, members: members.clone() };
            let _ = send_with(c, ControlMsg::Gossip(g), &lanes.gossip());
        }
    }
}
