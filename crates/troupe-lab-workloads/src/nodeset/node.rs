//! The node process of the nemesis workloads (`troupe lab exec crdt-node|cluster-node`): one
//! Troupe cluster node (`troupe_cluster::Cluster`, the fast failure detector), with a
//! `troupe_crdt::Replicator` when the workload asks for one, driven by line commands on stdin.
//!
//! Rules:
//! 1. Start-up: the node listens on and advertises its address from [`super::ENV_ADDRS`]
//!    (entry [`super::ENV_INDEX`]), joins through every address of the run as seeds, and prints
//!    `ready`: once it sees itself a member (joining or up), within [`super::START_LIMIT`]
//!    (otherwise it exits 1 saying so on stderr), when the workload serves clients on it
//!    (`crdt`: a node that is not a member yet would count a majority among itself alone); at
//!    once when the workload observes the join itself (`cluster`: the checker reads it from the
//!    tables, and a join that hangs must not hold up the nemesis).
//! 2. Commands, each answered by one line `r ID ...` and handled concurrently (an answer may
//!    overtake an earlier command's):
//!    - `status ID`: `r ID ok {json}`, the membership table (`troupe_cluster::Status`);
//!    - `incr ID N LEVEL TIMEOUT_MS`: adds N to the GCounter [`COUNTER`]; `r ID ok VALUE` when
//!      the level acknowledged it, `r ID timeout MESSAGE` when it did not in time (the
//!      increment is applied here and keeps spreading: indeterminate), `r ID err MESSAGE` when
//!      it was refused before it was applied;
//!    - `add ID ELEMENT LEVEL TIMEOUT_MS`: adds ELEMENT to the OR-set [`SET`], answered the same
//!      way (`r ID ok SIZE`);
//!    - `read ID`: `r ID ok {"counter": V, "set": [...]}`, this replica's local values;
//!    - `quit`: leaves nothing behind and exits 0 (so does the end of stdin).
//! 3. Cluster events (`troupe_cluster::ClusterEvent`) are printed as `e {json}` when the
//!    workload asks for them.
//! 4. Planted bugs (tests only, the environment variable [`super::ENV_CRDT_BUG`] or
//!    [`super::ENV_CLUSTER_BUG`]): `ack_without_apply` answers every `incr` `ok` with the
//!    current value and applies nothing; `wrong_leader` reports this node as the leader in
//!    every `status`. Neither is set by any run the lab starts by itself.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use troupe_cluster::{Cluster, ClusterConfig, Downing};
use troupe_crdt::{Consistency, ErrorKind, GCounter, Key, ORSet, Replicator, ReplicatorConfig};
use troupe_remote::{Node, NodeConfig};

use super::{Opts, ENV_ADDRS, ENV_CLUSTER_BUG, ENV_CRDT_BUG, ENV_INDEX, ENV_SECRET, START_LIMIT};
use crate::SutError;
use troupe_lab::error::Result;

/// The GCounter key the clients increment.
pub(crate) const COUNTER: &str = "counter";
/// The OR-set key the clients add to.
pub(crate) const SET: &str = "set";

/// What a node process holds.
struct Served {
    cluster: Cluster,
    replicator: Option<Replicator>,
    ack_without_apply: bool,
    wrong_leader: bool,
}

/// The node's cluster section: the fast profile, every address a seed, the workload's
/// downing.
pub(crate) fn cluster_config(opts: &Opts, addrs: &[String]) -> ClusterConfig {
    ClusterConfig {
        name: "troupe-lab".into(),
        seeds: addrs.to_vec(),
        downing: opts.downing,
        rejoin_when_downed: opts.downing != Downing::Off,
        ..ClusterConfig::fast()
    }
}

/// The node process (rules 1-4); the exit code.
pub(crate) async fn node_process(opts: Opts) -> Result<i32> {
    let workload = opts.workload;
    let secret = troupe_lab::nodes::env(ENV_SECRET, workload)?;
    let index: usize = troupe_lab::nodes::env(ENV_INDEX, workload)?
        .parse()
        .map_err(|_| SutError::Environment(format!("{ENV_INDEX} is not a node index")))?;
    let addrs: Vec<String> =
        troupe_lab::nodes::env(ENV_ADDRS, workload)?.split_whitespace().map(str::to_string).collect();
    let Some(me) = addrs.get(index).cloned() else {
        return Err(SutError::Environment(format!("{ENV_ADDRS} has no address for node {index}")).into());
    };
    let mut ncfg = NodeConfig::new(&format!("node-{index}"), &secret);
    ncfg.listen = me.clone();
    ncfg.advertise = Some(me.clone());
    let node = Node::start(ncfg)
        .await
        .map_err(|e| SutError::Node(format!("cannot start node {index} on {me}: {}", troupe::error_chain(&e))))?;
    let cluster = Cluster::start(&node, cluster_config(&opts, &addrs))
        .await
        .map_err(|e| SutError::Node(format!("node {index}: cannot start its cluster membership: {e}")))?;
    let replicator = if opts.replicator {
        Some(
            Replicator::start(&cluster, ReplicatorConfig::default())
                .map_err(|e| SutError::Node(format!("node {index}: cannot start its replicator: {e}")))?,
        )
    } else {
        None
    };
    if opts.ready_when_member {
        let joined = cluster.wait_status(|s| s.phase == "member", START_LIMIT).await;
        if let Err(s) = joined {
            let limit = START_LIMIT.as_secs();
            eprintln!("troupe {workload}-node {index}: not a member within {limit} s (phase {})", s.phase);
            node.shutdown();
            return Ok(1);
        }
    }
    let bug = |var: &str, word: &str| std::env::var(var).is_ok_and(|v| v == word);
    let served = Arc::new(Served {
        cluster: cluster.clone(),
        replicator,
        ack_without_apply: bug(ENV_CRDT_BUG, "ack_without_apply"),
        wrong_leader: bug(ENV_CLUSTER_BUG, "wrong_leader"),
    });
    let (out_tx, out_rx) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(write_lines(out_rx));
    let _ = out_tx.send("ready".into());
    if opts.events {
        let (mut events, tx) = (cluster.subscribe(), out_tx.clone());
        tokio::spawn(async move {
            loop {
                match events.recv().await {
                    Ok(ev) => {
                        let _ = tx.send(format!("e {}", serde_json::to_string(&ev).unwrap_or_default()));
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(_) => return,
                }
            }
        });
    }
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    // Bounded by the orchestrator: the loop ends when stdin closes or on `quit`.
    while let Ok(Some(line)) = stdin.next_line().await {
        let line = line.trim().to_string();
        if line == "quit" {
            break;
        }
        let (s, tx) = (Arc::clone(&served), out_tx.clone());
        tokio::spawn(async move {
            if let Some(a) = s.answer(&line).await {
                let _ = tx.send(a);
            }
        });
    }
    if let Some(r) = &served.replicator {
        r.stop();
    }
    drop(out_tx);
    drop(served);
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
    node.shutdown();
    Ok(0)
}

/// Writes whole lines to stdout, one at a time.
async fn write_lines(mut rx: mpsc::UnboundedReceiver<String>) {
    let mut out = tokio::io::stdout();
    while let Some(l) = rx.recv().await {
        if out.write_all(format!("{l}\n").as_bytes()).await.is_err() || out.flush().await.is_err() {
            return;
        }
    }
}

fn timeout_of(ms: &str) -> Duration {
    Duration::from_millis(ms.parse().unwrap_or(2000))
}

/// The answer to a failed update: `timeout` when it was applied here and not acknowledged in
/// time, `err` when it was refused before it was applied.
fn failed_update(id: &str, e: &troupe_crdt::Error) -> String {
    match e.kind {
        ErrorKind::Timeout { .. } => format!("r {id} timeout {e}"),
        _ => format!("r {id} err {e}"),
    }
}

impl Served {
    async fn answer(&self, line: &str) -> Option<String> {
        let p: Vec<&str> = line.split_whitespace().collect();
        let (cmd, id) = (*p.first()?, *p.get(1)?);
        let level = |s: &str| s.parse::<Consistency>();
        Some(match (cmd, &p[2..]) {
            ("status", []) => {
                let mut s = self.cluster.status();
                if self.wrong_leader {
                    s.leader = Some(s.node.clone());
                }
                format!("r {id} ok {}", serde_json::to_string(&s).unwrap_or_default())
            }
            ("incr", [n, lv, ms]) => {
                let (Some(r), Ok(n), Ok(lv)) = (&self.replicator, n.parse::<u64>(), level(lv)) else {
                    return Some(format!("r {id} err usage: incr ID N local|majority|all TIMEOUT_MS"));
                };
                let key = Key::<GCounter>::new(COUNTER);
                if self.ack_without_apply {
                    return Some(match r.get(&key, Consistency::Local, timeout_of(ms)).await {
                        Ok(v) => format!("r {id} ok {}", v.value()),
                        Err(e) => failed_update(id, &e),
                    });
                }
                match r.update(&key, lv, timeout_of(ms), |c, me| c.increment(me, n)).await {
                    Ok(v) => format!("r {id} ok {}", v.value()),
                    Err(e) => failed_update(id, &e),
                }
            }
            ("add", [elem, lv, ms]) => {
                let (Some(r), Ok(lv)) = (&self.replicator, level(lv)) else {
                    return Some(format!("r {id} err usage: add ID ELEMENT local|majority|all TIMEOUT_MS"));
                };
                let e = (*elem).to_string();
                match r.update(&Key::<ORSet<String>>::new(SET), lv, timeout_of(ms), |s, me| s.add(me, e)).await {
                    Ok(s) => format!("r {id} ok {}", s.len()),
                    Err(e) => failed_update(id, &e),
                }
            }
            ("read", []) => {
                let Some(r) = &self.replicator else { return Some(format!("r {id} err this node has no replicator")) };
                let local = Duration::from_secs(1);
                let c = r.get(&Key::<GCounter>::new(COUNTER), Consistency::Local, local).await;
                let s = r.get(&Key::<ORSet<String>>::new(SET), Consistency::Local, local).await;
                match (c, s) {
                    (Ok(c), Ok(s)) => {
                        let set: Vec<&String> = s.iter().collect();
                        format!("r {id} ok {}", serde_json::json!({"counter": c.value(), "set": set}))
                    }
                    (Err(e), _) | (_, Err(e)) => format!("r {id} err {e}"),
                }
            }
            _ => format!("r {id} err unknown command {line:?}"),
        })
    }
}
