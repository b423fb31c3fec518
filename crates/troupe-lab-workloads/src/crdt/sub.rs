//! The crdt program as OS processes (docs/nemesis-crdt.md): `troupe lab exec crdt` is the
//! orchestrator and the clients, and writes the events; it starts the node processes (`troupe
//! lab exec crdt-node`, `nodeset/node.rs`) as its children.
//!
//! Rules:
//! 1. Set-up, outside the window: start `nodes` node processes and wait until every one sees
//!    all of them up (60 s at most).
//! 2. Window: `ready {what: "window", count: duration_s, start_us}`; from then `concurrency`
//!    clients run updates back to back until `duration_s` has passed, each on a node picked
//!    by the seeded PRNG: an increment by 1 of the counter, or (`add_pct` %) an add of the
//!    element `c<client>-<index>` to the OR-set, at `write_consistency` within
//!    `op_timeout_ms`. Each is one `op` event (a `troupe_lab::history::Op`): `ok` when the
//!    node answered that the level acknowledged it; `info` when the level timed out (applied
//!    on that node), or no answer came (the node was killed or paused); `fail` when it
//!    reached no node or was refused before it was applied. At the same time the nemesis's
//!    kills and pauses are carried out (`troupe_lab::nemesis::procs`; its partitions and
//!    losses by the network layer).
//! 3. Final heal: when the window and the nemesis are both done (every node running,
//!    continued and, at the network layer, every rule removed an interval before the window's
//!    end), `healed {at_us}`. Then every node's local values are read every
//!    [`POLL`] until all nodes answered and agree, or `converge_limit_s` passed:
//!    one `final {replica, counter, set}` per node (the last round; `error` for a node that did
//!    not answer) and `converged {ms}` (`null` when not within the bound).
//! 4. A set-up failure or a node process that cannot be started again ends the run with
//!    `run_finished {errors: 1}` and exit status 1; a failed nemesis step is a
//!    `nemesis_error` (the run is degraded), not a failure.

use std::collections::BTreeSet;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use tokio::time::Instant;

use super::config::CrdtConfig;
use crate::nodeset::fleet::{Answer, Fleet, Procs};
use crate::nodeset::{self, node::node_process, Opts};
use troupe_lab::error::Result;
use troupe_lab::events::writer::{now_us, Emitter};
use troupe_lab::history::{Op, Outcome};
use troupe_lab::schedule::FaultAction;
use troupe_lab::subprocess;

/// How often the final values are read (rule 3).
pub(super) const POLL: Duration = Duration::from_millis(200);

/// The node processes' options.
pub(super) const OPTS: Opts = Opts {
    workload: "crdt",
    downing: troupe_cluster::Downing::Off,
    replicator: true,
    events: false,
    ready_when_member: true,
};

/// Runs one role; the exit code.
pub(super) fn exec(role: &str) -> Result<i32> {
    let cfg_value = match subprocess::config_or_exit(&super::Crdt) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    if role == "crdt-node" {
        return subprocess::block_on(node_process(OPTS))?;
    }
    let cfg = CrdtConfig::from_config(&cfg_value);
    let actions = troupe_lab::schedule::from_env()?;
    subprocess::run_events("crdt", &cfg_value, "client", |em| async move {
        (experiment(&cfg, &actions, &em).await, json!({}))
    })
}

async fn experiment(cfg: &CrdtConfig, actions: &[FaultAction], em: &Emitter) -> std::result::Result<(), String> {
    let addrs = nodeset::addresses(cfg.nodes)?;
    let fleet =
        Fleet::start(cfg.nodes, nodeset::starter("crdt-node", troupe_lab::nodes::secret(), &addrs), None).await?;
    let result = run(cfg, actions, em, fleet.procs()).await;
    fleet.close().await;
    result
}

async fn run(cfg: &CrdtConfig, actions: &[FaultAction], em: &Emitter, procs: Procs) -> std::result::Result<(), String> {
    nodeset::wait_all_up(&procs, Duration::from_secs(60)).await?;
    let start_us = now_us();
    em.emit("ready", json!({"what": "window", "count": cfg.duration_s, "start_us": start_us}));
    let start = Instant::now();
    let end = start + Duration::from_secs(cfg.duration_s);
    let steps = troupe_lab::nemesis::procs::steps(actions);
    let mut target = procs.clone();
    let nemesis = troupe_lab::nemesis::procs::run(&mut target, &steps, start, em);
    // The clients borrow the config and the emitter: joined in place, not spawned.
    let clients = futures::future::join_all((0..cfg.concurrency).map(|c| client(cfg, &procs, c, end, em)));
    let (_errors, _) = tokio::join!(nemesis, clients);
    // Rule 3: the nemesis has healed what it did; the network layer's last heal was an
    // interval before the window's end.
    tokio::time::sleep_until(end).await;
    let healed = Instant::now();
    em.emit("healed", json!({"at_us": now_us()}));
    let limit = Duration::from_secs(cfg.converge_limit_s);
    loop {
        let round = read_all(&procs).await;
        let agree = round.iter().all(|r| r.is_some()) && round.windows(2).all(|w| w[0] == w[1]);
        let waited = healed.elapsed();
        if agree || waited >= limit {
            for (i, r) in round.iter().enumerate() {
                match r {
                    Some((c, s)) => em.emit("final", json!({"replica": i, "counter": c, "set": s})),
                    None => em.emit("final", json!({"replica": i, "error": "no answer"})),
                };
            }
            let ms = agree.then_some(waited.as_secs_f64() * 1000.0);
            em.emit("converged", json!({"ms": ms}));
            return Ok(());
        }
        // Replicas converge by gossip timers of their own: polled, bounded by `limit`.
        tokio::time::sleep(POLL).await;
    }
}

type Values = (u64, BTreeSet<String>);

/// Every node's local values (`None`: no answer).
async fn read_all(procs: &Procs) -> Vec<Option<Values>> {
    let mut out = Vec::new();
    for i in 0..procs.len() {
        let v = match procs.ask(i, "read", "", Duration::from_secs(2)).await {
            Answer::Ok(json) => serde_json::from_str::<serde_json::Value>(&json).ok().and_then(|v| {
                let c = v["counter"].as_u64()?;
                let s = v["set"].as_array()?.iter().filter_map(|e| e.as_str().map(str::to_string)).collect();
                Some((c, s))
            }),
            _ => None,
        };
        out.push(v);
    }
    out
}

/// One client (rule 2).
async fn client(cfg: &CrdtConfig, procs: &Procs, c: u64, end: Instant, em: &Emitter) {
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed ^ (0x6372_6474 + c));
    let limit = Duration::from_millis(cfg.op_timeout_ms + 2_000);
    let mut index = 0u64;
    while Instant::now() < end {
        let node = rng.gen_range(0..procs.len());
        let add = rng.gen_range(0..100) < cfg.add_pct;
        let (f, value, args) = if add {
            let e = format!("c{c}-{index}");
            ("add", json!(e), format!("{e} {} {}", cfg.write_consistency, cfg.op_timeout_ms))
        } else {
            ("incr", json!(1), format!("1 {} {}", cfg.write_consistency, cfg.op_timeout_ms))
        };
        let invoke_us = now_us();
        let answer = procs.ask(node, f, &args, limit).await;
        let outcome = match &answer {
            Answer::Ok(_) => Outcome::Ok,
            Answer::Timeout(_) | Answer::Lost(_) => Outcome::Info,
            Answer::Err(_) | Answer::NotSent(_) => Outcome::Fail,
        };
        let op = Op {
            process: c,
            index,
            f: f.into(),
            key: if add { nodeset::node::SET } else { nodeset::node::COUNTER }.into(),
            value,
            invoke_us,
            complete_us: now_us(),
            outcome,
        };
        let mut fields = serde_json::to_value(&op).unwrap_or_default();
        fields["node_index"] = json!(node);
        em.emit("op", fields);
        index += 1;
        if matches!(answer, Answer::NotSent(_)) {
            // That node is down: pace the retries rather than spin on it.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
