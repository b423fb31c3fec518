//! The cluster program as OS processes (docs/nemesis-cluster.md): `troupe lab exec cluster` is
//! the orchestrator and writes the events; it starts the node processes (`troupe lab exec
//! cluster-node`, `nodeset/node.rs`, with their cluster events) as its children.
//!
//! Rules:
//! 1. Set-up, outside the window: start `nodes` node processes and wait until every one sees
//!    all of them up (60 s at most).
//! 2. Window: `ready {what: "window", count: duration_s, start_us}`; from then, every
//!    `poll_ms`, a round: every node is asked for its `status` at once, and each answer is one
//!    `op` event (a `troupe_lab::history::Op`, f = `status`, process = the node, index = the
//!    round, value = the table; `ok`, or `fail` with value `null` when no answer came within
//!    the poll period or 1 s, whichever is longer). Every cluster event a node prints is an
//!    `op` with f = `event` (process = the node, value = the event). Meanwhile the nemesis's
//!    kills and pauses are carried out (`troupe_lab::nemesis::procs`; partitions and losses by
//!    the network layer).
//! 3. Final heal: when the window and the nemesis are both done, `healed {at_us}`; rounds go
//!    on until a round in which every node sees all of them up with the same members
//!    (`nodeset::all_up`), or `converge_limit_s` passed; `converged {ms}` (`null` when not
//!    within the bound) and `final_round {round}` (the last round's index) follow it.
//! 4. A set-up failure ends the run with `run_finished {errors: 1}` and exit status 1; a
//!    failed nemesis step is a `nemesis_error` (the run is degraded), not a failure.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::config::ClusterRunConfig;
use crate::nodeset::fleet::{Fleet, NodeEvent, Procs};
use crate::nodeset::{self, node::node_process, Opts};
use troupe_cluster::Status;
use troupe_lab::error::Result;
use troupe_lab::events::writer::{now_us, Emitter};
use troupe_lab::history::{Op, Outcome};
use troupe_lab::schedule::FaultAction;
use troupe_lab::subprocess;

/// Runs one role; the exit code.
pub(super) fn exec(role: &str) -> Result<i32> {
    let cfg_value = match subprocess::config_or_exit(&super::ClusterWorkload) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let cfg = ClusterRunConfig::from_config(&cfg_value);
    if role == "cluster-node" {
        let opts = Opts {
            workload: "cluster",
            downing: cfg.downing(),
            replicator: false,
            events: true,
            ready_when_member: false,
        };
        return subprocess::block_on(node_process(opts))?;
    }
    let actions = troupe_lab::schedule::from_env()?;
    subprocess::run_events("cluster", &cfg_value, "client", |em| async move {
        (experiment(&cfg, &actions, &em).await, json!({}))
    })
}

async fn experiment(cfg: &ClusterRunConfig, actions: &[FaultAction], em: &Emitter) -> std::result::Result<(), String> {
    let addrs = nodeset::addresses(cfg.nodes)?;
    let (tx, rx) = mpsc::unbounded_channel();
    let starter = nodeset::starter("cluster-node", troupe_lab::nodes::secret(), &addrs);
    let fleet = Fleet::start(cfg.nodes, starter, Some(tx)).await?;
    let result = run(cfg, actions, em, fleet.procs(), rx).await;
    fleet.close().await;
    result
}

async fn run(
    cfg: &ClusterRunConfig,
    actions: &[FaultAction],
    em: &Emitter,
    procs: Procs,
    mut events: mpsc::UnboundedReceiver<NodeEvent>,
) -> std::result::Result<(), String> {
    nodeset::wait_all_up(&procs, Duration::from_secs(60)).await?;
    // Events of the set-up are not the window's.
    while events.try_recv().is_ok() {}
    let start_us = now_us();
    em.emit("ready", json!({"what": "window", "count": cfg.duration_s, "start_us": start_us}));
    let start = Instant::now();
    let end = start + Duration::from_secs(cfg.duration_s);
    let steps = troupe_lab::nemesis::procs::steps(actions);
    let mut target = procs.clone();
    let nemesis = troupe_lab::nemesis::procs::run(&mut target, &steps, start, em);
    let mut poller = Poller { cfg, procs: &procs, em, round: 0, seqs: vec![0; cfg.nodes as usize] };
    let window = async {
        let mut tick = tokio::time::interval(Duration::from_millis(cfg.poll_ms));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while Instant::now() < end {
            tokio::select! {
                _ = tick.tick() => { poller.round().await; }
                Some(e) = events.recv() => poller.event(e),
            }
        }
    };
    let (_errors, ()) = tokio::join!(nemesis, window);
    let healed = Instant::now();
    em.emit("healed", json!({"at_us": now_us()}));
    let limit = Duration::from_secs(cfg.converge_limit_s);
    loop {
        while let Ok(e) = events.try_recv() {
            poller.event(e);
        }
        let waited = healed.elapsed();
        let last_chance = waited >= limit;
        let round = poller.round().await;
        let n = cfg.nodes as usize;
        let lists: BTreeSet<Vec<(String, u64)>> =
            round.iter().flatten().map(|s| s.members.iter().map(|m| (m.addr.clone(), m.uid)).collect()).collect();
        let done = round.iter().all(|s| s.as_ref().is_some_and(|s| nodeset::all_up(s, n))) && lists.len() == 1;
        if done || last_chance {
            poller.mark_final();
            // Measured to the end of the round that showed it (the round's reads included).
            em.emit("converged", json!({"ms": done.then_some(healed.elapsed().as_secs_f64() * 1000.0)}));
            return Ok(());
        }
        // Membership converges by the nodes' own gossip timers: polled, bounded by `limit`.
        tokio::time::sleep(Duration::from_millis(cfg.poll_ms)).await;
    }
}

/// Reads rounds of tables and records them and the nodes' events (rule 2).
struct Poller<'a> {
    cfg: &'a ClusterRunConfig,
    procs: &'a Procs,
    em: &'a Emitter,
    round: u64,
    seqs: Vec<u64>,
}

impl Poller<'_> {
    /// One round: every node's table, recorded; the tables.
    async fn round(&mut self) -> Vec<Option<Status>> {
        let limit = Duration::from_millis(self.cfg.poll_ms.max(1_000));
        let procs = self.procs;
        let asks = (0..procs.len()).map(|i| async move {
            let invoke_us = now_us();
            let s = nodeset::status(procs, i, limit).await;
            (i, invoke_us, now_us(), s)
        });
        let answers = futures::future::join_all(asks).await;
        let mut out = Vec::new();
        for (i, invoke_us, complete_us, s) in answers {
            let op = Op {
                process: u64::from(i),
                index: self.round,
                f: "status".into(),
                key: format!("node-{i}"),
                value: s.as_ref().map_or(Value::Null, |s| serde_json::to_value(s).unwrap_or_default()),
                invoke_us,
                complete_us,
                outcome: if s.is_some() { Outcome::Ok } else { Outcome::Fail },
            };
            self.emit(&op, json!({"round": self.round}));
            out.push(s);
        }
        self.round += 1;
        out
    }

    /// Marks the last round as the final one.
    fn mark_final(&self) {
        self.em.emit("final_round", json!({"round": self.round.saturating_sub(1)}));
    }

    fn event(&mut self, (i, at_us, json): NodeEvent) {
        let seq = &mut self.seqs[i as usize];
        let op = Op {
            process: u64::from(i),
            // Events are numbered apart from the rounds: from 1e9 on.
            index: 1_000_000_000 + *seq,
            f: "event".into(),
            key: format!("node-{i}"),
            value: serde_json::from_str(&json).unwrap_or(Value::String(json)),
            invoke_us: at_us,
            complete_us: at_us,
            outcome: Outcome::Ok,
        };
        *seq += 1;
        self.emit(&op, json!({}));
    }

    fn emit(&self, op: &Op, extra: Value) {
        let mut fields = serde_json::to_value(op).unwrap_or_default();
        if let (Some(f), Value::Object(e)) = (fields.as_object_mut(), extra) {
            f.extend(e);
        }
        self.em.emit("op", fields);
    }
}
