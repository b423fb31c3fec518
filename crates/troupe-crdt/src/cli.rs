//! `troupe-crdt-node --config FILE`: a cluster node (the `[cluster]` section, as
//! `troupe-cluster-node`) with a [`Replicator`] and `GCounter` commands on standard input;
//! tests and the benchmark start it as an OS process.
//!
//! It speaks the node protocol of `troupe_remote::cli` (first line `listening on ADDR`,
//! `event {json}` lines for cluster events), plus the commands:
//! - `status`: answers `status {json}` (the membership table);
//! - `incr KEY N LEVEL [TIMEOUT_MS]` (LEVEL: local, majority, all; default timeout 2000 ms):
//!   answers `incr KEY ok VALUE` or `incr KEY error MESSAGE`;
//! - `get KEY LEVEL [TIMEOUT_MS]`: answers `get KEY ok VALUE` or `get KEY error MESSAGE`;
//! - `watch KEY`: answers `watching KEY`, then prints
//!   `event {"ev":"crdt_changed","key":KEY,"value":V,"at_us":T}` on every change (`T`: wall
//!   clock in microseconds, so a benchmark can compare processes on one machine);
//! - `size KEY`: answers `size KEY BYTES` (the encoded full state);
//! - `crdt-stats`: answers `crdt-stats {json}` ([`crate::ReplicatorStats`]).

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use troupe_cluster::{Cluster, ClusterConfig};
use troupe_remote::cli::{EventLines, Extension, Setup};
use troupe_remote::{Node, NodeConfig};

use crate::replicator::{Consistency, Key, Replicator, ReplicatorConfig};
use crate::GCounter;

struct Commands {
    cluster: Cluster,
    r: Replicator,
    lines: EventLines,
}

fn timeout_arg(s: Option<&str>) -> Duration {
    Duration::from_millis(s.and_then(|t| t.parse().ok()).unwrap_or(2000))
}

/// Wall-clock microseconds.
#[must_use]
pub fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

impl Commands {
    async fn answer(&self, line: &str) -> Option<String> {
        let p: Vec<&str> = line.split_whitespace().collect();
        Some(match p.as_slice() {
            ["status"] => format!("status {}", serde_json::to_string(&self.cluster.status()).unwrap_or_default()),
            ["incr", key, n, level, rest @ ..] => {
                let (Ok(n), Ok(level)) = (n.parse::<u64>(), level.parse::<Consistency>()) else {
                    return Some(format!("incr {key} error usage: incr KEY N local|majority|all [TIMEOUT_MS]"));
                };
                let k = Key::<GCounter>::new(key);
                match self.r.update(&k, level, timeout_arg(rest.first().copied()), |c, me| c.increment(me, n)).await {
                    Ok(v) => format!("incr {key} ok {}", v.value()),
                    Err(e) => format!("incr {key} error {e}"),
                }
            }
            ["get", key, level, rest @ ..] => {
                let Ok(level) = level.parse::<Consistency>() else {
                    return Some(format!("get {key} error usage: get KEY local|majority|all [TIMEOUT_MS]"));
                };
                match self.r.get(&Key::<GCounter>::new(key), level, timeout_arg(rest.first().copied())).await {
                    Ok(v) => format!("get {key} ok {}", v.value()),
                    Err(e) => format!("get {key} error {e}"),
                }
            }
            ["watch", key] => match self.r.subscribe(&Key::<GCounter>::new(key)) {
                Ok(mut ch) => {
                    let (lines, key2) = (self.lines.clone(), (*key).to_owned());
                    tokio::spawn(async move {
                        while let Ok(v) = ch.changed().await {
                            let ev = serde_json::json!({"ev": "crdt_changed", "key": key2, "value": v.value(), "at_us": now_us()});
                            lines.event(&ev.to_string());
                        }
                    });
                    format!("watching {key}")
                }
                Err(e) => format!("watching {key} error {e}"),
            },
            ["size", key] => format!("size {key} {}", self.r.state_size(key)),
            ["crdt-stats"] => format!("crdt-stats {}", serde_json::to_string(&self.r.stats()).unwrap_or_default()),
            _ => return None,
        })
    }
}

impl Extension for Commands {
    fn command<'a>(&'a self, line: &'a str) -> Pin<Box<dyn Future<Output = Option<String>> + Send + 'a>> {
        Box::pin(self.answer(line))
    }
}

/// An error of the layers above the node as the node binary reports it (a configuration error,
/// exit code 2), the error kept as the source.
fn config_error(e: impl std::error::Error + Send + Sync + 'static) -> troupe_remote::Error {
    troupe_remote::Error::with_source(troupe_remote::ErrorKind::Config(e.to_string()), e)
}

/// Runs a node from `config_path` (which needs a `[cluster]` section) until `quit`, SIGINT or
/// SIGTERM (module docs for the protocol).
pub fn node_main(config_path: &Path) -> Result<(), troupe_remote::Error> {
    let cfg = NodeConfig::from_file(config_path)?;
    let Some(table) = cfg.cluster.as_ref() else {
        return Err(troupe_remote::Error::config("troupe-crdt-node needs a [cluster] section"));
    };
    let ccfg = ClusterConfig::from_table(table).map_err(config_error)?;
    let setup: Setup = Box::new(move |node: Node, _cfg: NodeConfig, lines: EventLines| {
        Box::pin(async move {
            let cluster = Cluster::start(&node, ccfg).await.map_err(config_error)?;
            let r = Replicator::start(&cluster, ReplicatorConfig::default()).map_err(config_error)?;
            let mut events = cluster.subscribe();
            let ev_lines = lines.clone();
            tokio::spawn(async move {
                loop {
                    match events.recv().await {
                        Ok(ev) => ev_lines.event(&serde_json::to_string(&ev).unwrap_or_default()),
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                        Err(_) => return,
                    }
                }
            });
            Ok(Arc::new(Commands { cluster, r, lines }) as Arc<dyn Extension>)
        })
    });
    troupe_remote::cli::node_main_with(config_path, Some(setup))
}
