//! The Troupe latency program as OS processes (the latency peer contract of docs/latency.md):
//! `troupe lab exec latency` is node A and writes the events; it starts the lab's relay
//! (`troupe lab exec latency-relay`, [`troupe_lab::relay`]) and node B (`troupe lab exec
//! latency-node`) as its children, and with an overlay the hub (rule 6).
//!
//! Rules:
//! 1. Both nodes advertise a relay address, A's relay forwarding to A and B's to B, so every
//!    connection in both directions (control, data lanes, acks, gossip; B dials A back at A's
//!    advertised address) runs through the relay and pays rtt/2 each way.
//! 2. Set-up, outside the measurement: connect, look up B's control actor, build the partners,
//!    then one unrecorded warm-up message with the full payload per pair, all sent at once and
//!    every ack awaited, so every lane is open and has carried a message of the run's size.
//! 3. Measurement: all pairs start together; a pair's sender sends its share of `messages` in
//!    turn: take t0, send `Data` with the payload (one `SharedBlob` for all), wait for its ack, record
//!    the microseconds since t0. The window runs from the start to the last ack.
//! 4. Events, after the window (none during it), from this process only: `run_started`, then
//!    `msg {pair, seq, latency_us}` per message, `window {elapsed_us, messages, bytes}`,
//!    `relay {connections, bytes_up_in, bytes_up_out, bytes_down_in, bytes_down_out, chunks_piped,
//!    chunks_copied}` (what the relay process answers to `stats`), for
//!    `channels_gossip` `gossip {received, bytes}` (what A's sink got from B), and `run_finished
//!    {errors}`.
//! 5. A config the program cannot run is refused with one stderr line naming the key and the
//!    allowed values, exit 2. A failure (an ack not back in time, a refused send, a child gone)
//!    ends the run with `run_finished {errors: 1}` and exit status 1.
//! 6. Overlay (`overlay`, [`troupe_lab::overlay_net`]): with any but `full_mesh` a third
//!    process, the hub (`latency-node` whose hub address is its own), starts first behind a
//!    relay address of its own, and all three nodes start the overlay (the hub is the server
//!    of `client_server` and the contact of `hyparview`). Node A waits until the overlay's
//!    link states reach both others, then measures as above: every connection, each leg of a
//!    routed one included, runs through the relay, so a route through the hub pays the RTT
//!    twice. After the window, before node B is told to quit, node A writes `route {kind,
//!    peers: {addr: "direct" | hop}}`; the hub is told to quit once node B's process has ended.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::{mpsc, Notify};
use troupe::ActorRef;
use troupe_remote::{send_with, ChannelConfig, Node, NodeConfig, SharedBlob};

use super::actors::{
    gossip_loop, pair_options, AckSink, Control, ControlMsg, Data, GossipCount, GossipSink, DATA_CHANNEL,
    GOSSIP_CHANNEL,
};
use super::config::LatencyConfig;
use crate::SutError;
use troupe_lab::error::Result;
use troupe_lab::events::writer::Emitter;
use troupe_lab::nodes::{self, NodeCmd, NodeProc};
use troupe_lab::overlay_net;
use troupe_lab::subprocess;

/// The name node B exports its control actor under.
const CONTROL: &str = "latency-control";
/// The secret of the run's two nodes, handed to node B in its environment.
const ENV_SECRET: &str = "TROUPE_LATENCY_SECRET";
/// The relay address node B advertises, handed to it in its environment.
const ENV_ADVERTISE: &str = "TROUPE_LATENCY_ADVERTISE";
/// The hub's relay address, handed to node B and the hub in their environment; empty without
/// an overlay (rule 6).
const ENV_HUB: &str = "TROUPE_LATENCY_HUB";
/// Node A's relay address, handed to the children: only its going away ends them.
const ENV_A: &str = "TROUPE_LATENCY_A";
/// How long a child process may take to start and answer.
const START_LIMIT: Duration = Duration::from_secs(60);

/// Runs one role; the exit code.
pub(super) fn exec(role: &str) -> Result<i32> {
    // Rule 5: a bad config is one line naming the key and the allowed values.
    let cfg_value = match subprocess::config_or_exit(&super::Latency) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let cfg = LatencyConfig::from_config(&cfg_value);
    if role == "latency-relay" {
        let one_way = Duration::from_micros(cfg.rtt_ms * 500);
        troupe_lab::relay::serve_lines(one_way, std::io::stdin().lock(), std::io::stdout().lock())
            .map_err(|e| SutError::Process(format!("the relay's standard streams failed: {e}")))?;
        return Ok(0);
    }
    if role == "latency-node" {
        return subprocess::block_on(node_process(&cfg))?;
    }
    subprocess::run_events("latency", &cfg_value, "a", |em| async move { (experiment(&cfg, &em).await, json!({})) })
}

/// How long one ack may take: generous, so a loaded machine is not a failure, and bounded.
pub(super) fn ack_limit(c: &LatencyConfig) -> Duration {
    let in_flight = (c.pairs * c.payload_bytes) as f64;
    Duration::from_secs(60) + Duration::from_secs_f64(in_flight / 5e6) + Duration::from_millis(c.rtt_ms * 20)
}

/// A node of the run with the transport's connections (rule 1).
fn node_config(name: &str, secret: &str, c: &LatencyConfig, listen: &str, advertise: &str) -> NodeConfig {
    let p = c.parallelism.min(u64::from(u16::MAX)) as u16;
    let in_flight = (c.pairs * (c.payload_bytes + 65_536)) as usize;
    let mut n = nodes::bulk_node_config(name, secret, listen, advertise, in_flight * 2 + (64 << 20));
    match c.transport.as_str() {
        "parallel_random" => {
            n.parallelism = p;
            n.affinity = false;
        }
        "parallel_affinity" => {
            n.parallelism = p;
            n.affinity = true;
        }
        "channels_gossip" => {
            n.channels = vec![
                ChannelConfig { name: DATA_CHANNEL.into(), parallelism: p, affinity: true },
                ChannelConfig { name: GOSSIP_CHANNEL.into(), parallelism: 1, affinity: true },
            ];
        }
        _ => n.parallelism = 1,
    }
    n
}

/// The relay process and its line protocol ([`troupe_lab::relay::serve_lines`]).
struct Relay(NodeProc);

impl Relay {
    fn start() -> std::result::Result<Relay, String> {
        NodeCmd::new("the relay process", "latency-relay").stdin().stdout().start().map(Relay)
    }

    async fn cmd(&mut self, line: &str) -> std::result::Result<String, String> {
        self.0.send(line).await?;
        let a = self.0.line(&format!("answer {line:?}"), START_LIMIT).await?;
        if a.starts_with("error") {
            return Err(format!("relay: {a}"));
        }
        Ok(a)
    }

    async fn listen(&mut self) -> std::result::Result<String, String> {
        let a = self.cmd("listen").await?;
        a.strip_prefix("listening ").map(str::to_string).ok_or_else(|| format!("relay: unexpected answer {a:?}"))
    }

    /// The relay's counts as the `relay` event (rule 4), or a line on stderr saying why not.
    async fn emit_stats(&mut self, em: &Emitter) {
        match self.cmd("stats").await.map(|l| l.strip_prefix("stats ").map(str::to_string)) {
            Ok(Some(s)) => match serde_json::from_str::<serde_json::Value>(&s) {
                Ok(v) => {
                    em.emit("relay", v);
                }
                Err(e) => eprintln!("troupe latency: the relay's stats are not JSON: {e}"),
            },
            other => eprintln!("troupe latency: no relay stats: {other:?}"),
        }
    }

    async fn close(mut self) {
        let _ = self.0.send("quit").await;
        self.0.close(Duration::from_secs(5)).await;
    }
}

/// Node A's whole run (rules 1-4, 6); the relay and the children are stopped whatever happens.
async fn experiment(cfg: &LatencyConfig, em: &Emitter) -> std::result::Result<(), String> {
    let mut relay = Relay::start()?;
    let mut children: Vec<NodeProc> = Vec::new();
    let mut node: Option<Node> = None;
    let result = run_nodes(cfg, em, &mut relay, &mut children, &mut node).await;
    // Node B first, then the hub it may route through.
    for c in children.into_iter().rev() {
        c.close(Duration::from_secs(10)).await;
    }
    if let Some(n) = node {
        n.shutdown();
    }
    relay.close().await;
    result
}

/// Starts a `latency-node` process advertising `advertise`, with the hub's address `hub`
/// (empty without an overlay; the hub itself when it equals `advertise`, rule 6) and node A's
/// `a`; the process and the address it listens on.
async fn start_child(
    what: &str,
    secret: &str,
    advertise: &str,
    hub: &str,
    a: &str,
) -> std::result::Result<(NodeProc, String), String> {
    let cmd = NodeCmd::new(what, "latency-node")
        .env(ENV_SECRET, secret)
        .env(ENV_ADVERTISE, advertise)
        .env(ENV_HUB, hub)
        .env(ENV_A, a);
    let mut p = cmd.stdout().start()?;
    match p.line("report its address", START_LIMIT).await {
        Ok(listen) => Ok((p, listen)),
        Err(e) => {
            let e = p.failure(e).await;
            p.close(Duration::from_secs(5)).await;
            Err(e)
        }
    }
}

/// Rules 1, 2 and 6: the nodes, the relay's forwards, the overlay, then the measurement; the
/// children and node A are left in `children` and `node` for the caller to stop.
async fn run_nodes(
    cfg: &LatencyConfig,
    em: &Emitter,
    relay: &mut Relay,
    children: &mut Vec<NodeProc>,
    node: &mut Option<Node>,
) -> std::result::Result<(), String> {
    let ra = relay.listen().await?;
    let rb = relay.listen().await?;
    let secret = nodes::secret();
    let a_listen = format!("127.0.0.1:{}", nodes::free_port()?);
    let a = Node::start(node_config("a", &secret, cfg, &a_listen, &ra))
        .await
        .map_err(|e| format!("cannot start node A: {e}"))?;
    *node = Some(a.clone());
    // Rule 6: the hub first, reachable through its relay before anyone joins it.
    let hub = if overlay_net::needs_hub(&cfg.overlay) {
        let rs = relay.listen().await?;
        let (p, listen) = start_child("the hub's process", &secret, &rs, &rs, &ra).await?;
        children.push(p);
        relay.cmd(&format!("forward {rs} {listen}")).await?;
        Some(rs)
    } else {
        None
    };
    let (p, b_listen) = start_child("node B's process", &secret, &rb, hub.as_deref().unwrap_or(""), &ra).await?;
    children.push(p);
    relay.cmd(&format!("forward {rb} {b_listen}")).await?;
    relay.cmd(&format!("forward {ra} {a_listen}")).await?;
    let overlay = match &hub {
        Some(h) => overlay_net::start(&a, &cfg.overlay, h, false).await?,
        None => None,
    };
    let result = async {
        if let Some(o) = &overlay {
            overlay_net::wait_reachable(o, 2, START_LIMIT).await?;
        }
        let hub_control: Option<ActorRef<ControlMsg>> = match &hub {
            Some(h) => Some(
                a.lookup(h, CONTROL)
                    .await
                    .map_err(|e| format!("cannot find {CONTROL} on the hub: {}", troupe::error_chain(&e)))?,
            ),
            None => None,
        };
        measure(cfg, em, &a, &rb, hub.as_deref()).await?;
        // Rule 6: the hub quits after node B, whose session with node A may run through it.
        if let Some(h) = hub_control {
            if let Some(b) = children.pop() {
                b.close(Duration::from_secs(10)).await;
            }
            let _ = h.send(ControlMsg::Quit);
        }
        Ok(())
    }
    .await;
    let result = match result {
        Ok(()) => Ok(()),
        Err(mut e) => {
            for c in children.iter_mut() {
                e = c.failure(e).await;
            }
            Err(e)
        }
    };
    relay.emit_stats(em).await;
    if let Some(o) = overlay {
        o.stop();
    }
    result
}

/// One pair's recorded messages: (pair, seq, latency µs).
type Rows = Vec<(u64, u64, u64)>;

/// Set-up, warm-up and the measured window (rules 2-4); B's node is told to quit at the end.
async fn measure(
    cfg: &LatencyConfig,
    em: &Emitter,
    node: &Node,
    rb: &str,
    hub: Option<&str>,
) -> std::result::Result<(), String> {
    node.connect(rb)
        .await
        .map_err(|e| format!("cannot reach node B through the relay at {rb}: {}", troupe::error_chain(&e)))?;
    let control: ActorRef<ControlMsg> = node
        .lookup(rb, CONTROL)
        .await
        .map_err(|e| format!("cannot find {CONTROL} on node B: {}", troupe::error_chain(&e)))?;
    let gossiping = cfg.transport == "channels_gossip";
    let got = Arc::new(GossipCount::default());
    let a_sink = gossiping.then(|| troupe::spawn(GossipSink { count: Arc::clone(&got) }));
    let parts = control
        .ask(|r| ControlMsg::Setup(cfg.pairs, a_sink.clone(), r), START_LIMIT)
        .await
        .map_err(|e| format!("node B did not build the partners: {e}"))?;
    let a_gossip = match (&parts.gossip, gossiping) {
        (Some(g), true) => Some(tokio::spawn(gossip_loop(g.clone()))),
        _ => None,
    };
    let limit = ack_limit(cfg);
    let payload = SharedBlob::from(vec![0xa5_u8; cfg.payload_bytes as usize]);
    // Rule 2: the warm-up messages, full size, not recorded: every pair's at once, then every
    // ack awaited (as the Erlang peer does).
    let mut pairs = Vec::new();
    for (i, partner) in parts.partners.into_iter().enumerate() {
        let i = i as u64;
        let (tx, rx) = mpsc::unbounded_channel();
        let sink = troupe::spawn(AckSink { tx });
        let warm = Data { pair: i, seq: u64::MAX, payload: payload.clone(), ack: sink.clone() };
        send_with(&partner, warm, &pair_options(cfg, i)).map_err(|e| format!("pair {i}: warm-up send refused: {e}"))?;
        pairs.push((i, partner, sink, rx));
    }
    let warm_deadline = tokio::time::Instant::now() + START_LIMIT;
    for (i, _, _, rx) in &mut pairs {
        match tokio::time::timeout_at(warm_deadline, rx.recv()).await {
            Ok(Some(_)) => {}
            _ => return Err(format!("pair {i}: no ack for the warm-up message")),
        }
    }
    let start = Instant::now();
    let tasks: Vec<_> = pairs
        .into_iter()
        .map(|(i, partner, sink, mut rx)| {
            let (n, opts, payload) = (cfg.share(i), pair_options(cfg, i), payload.clone());
            tokio::spawn(async move {
                let mut out: Rows = Vec::with_capacity(n as usize);
                for seq in 0..n {
                    let t0 = Instant::now();
                    let msg = Data { pair: i, seq, payload: payload.clone(), ack: sink.clone() };
                    send_with(&partner, msg, &opts)
                        .map_err(|e| format!("pair {i} message {seq}: send refused: {e}"))?;
                    loop {
                        match tokio::time::timeout(limit, rx.recv()).await {
                            Ok(Some(s)) if s == seq => break,
                            Ok(Some(_)) => {}
                            Ok(None) => return Err(format!("pair {i} message {seq}: the ack sink stopped")),
                            Err(_) => {
                                return Err(format!("pair {i} message {seq}: no ack within {} s", limit.as_secs()))
                            }
                        }
                    }
                    out.push((i, seq, t0.elapsed().as_micros() as u64));
                }
                sink.stop();
                Ok::<Rows, String>(out)
            })
        })
        .collect();
    let mut rows: Rows = Vec::new();
    let mut failure = None;
    for t in tasks {
        match t.await {
            Ok(Ok(r)) => rows.extend(r),
            Ok(Err(e)) => {
                failure.get_or_insert(e);
            }
            Err(e) => {
                failure.get_or_insert(format!("a sender task failed: {e}"));
            }
        }
    }
    let elapsed = start.elapsed();
    if let Some(g) = a_gossip {
        g.abort();
    }
    // Rule 6: how node A's sessions ran, taken before node B is told to quit.
    if hub.is_some() {
        em.emit("route", overlay_net::route_json(node, &cfg.overlay));
    }
    let _ = control.send(ControlMsg::Quit);
    rows.sort_unstable();
    for (pair, seq, us) in &rows {
        em.emit("msg", json!({"pair": pair, "seq": seq, "latency_us": us}));
    }
    em.emit(
        "window",
        json!({"elapsed_us": elapsed.as_micros() as u64, "messages": rows.len(),
               "bytes": rows.len() as u64 * cfg.payload_bytes}),
    );
    if gossiping {
        let (m, b) = (
            got.messages.load(std::sync::atomic::Ordering::Acquire),
            got.bytes.load(std::sync::atomic::Ordering::Acquire),
        );
        em.emit("gossip", json!({"received": m, "bytes": b}));
    }
    failure.map_or(Ok(()), Err)
}

/// Node B's process, or the hub's (rule 6): prints its listen address, serves until told to
/// quit, until node A goes away, or until the run's deadline.
async fn node_process(cfg: &LatencyConfig) -> Result<i32> {
    let secret = nodes::env(ENV_SECRET, "latency")?;
    let advertise = nodes::env(ENV_ADVERTISE, "latency")?;
    let (hub, a) = (nodes::env(ENV_HUB, "latency")?, nodes::env(ENV_A, "latency")?);
    let is_hub = hub == advertise;
    let listen = format!("127.0.0.1:{}", nodes::free_port().map_err(SutError::Process)?);
    let name = if is_hub { "hub" } else { "b" };
    let node = Node::start(node_config(name, &secret, cfg, &listen, &advertise))
        .await
        .map_err(|e| SutError::Node(format!("cannot start node {name}: {e}")))?;
    let overlay = overlay_net::start(&node, &cfg.overlay, &hub, is_hub).await.map_err(SutError::Node)?;
    let quit = Arc::new(Notify::new());
    let control =
        troupe::spawn(Control { cfg: cfg.clone(), partners: Vec::new(), gossip: None, quit: Arc::clone(&quit) });
    node.export(CONTROL, &control).map_err(|e| SutError::Node(format!("cannot export {CONTROL}: {e}")))?;
    let events = node.subscribe();
    println!("{listen}");
    let limit = super::expected_window(cfg) + START_LIMIT;
    let code = nodes::serve_until_quit(events, &quit, limit, "latency-node", ("node A", Some(&a))).await;
    if let Some(o) = overlay {
        o.stop();
    }
    control.stop();
    node.shutdown();
    Ok(code)
}
