//! What the iot system under test's processes share (`sub.rs` dispatches the roles; the
//! orchestrator, the servers, the device processes and the collector use these): the
//! environment handed to node processes, the coordinator's name and `Ready`, the set-up bound,
//! signals, the window's clock, the node list and the network faults of a node.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use troupe::ReplyTo;
use troupe_remote::{Nested, RemoteMessage};

use super::config::IotConfig;
use crate::SutError;
use troupe_lab::error::Result;

/// The orchestrator's node address.
pub(super) const ENV_NODE: &str = "TROUPE_IOT_NODE";
/// The run's node secret.
pub(super) const ENV_SECRET: &str = "TROUPE_IOT_SECRET";
/// The process's index (server s or device process p).
pub(super) const ENV_INDEX: &str = "TROUPE_IOT_INDEX";
/// Every server's address, comma separated, in index order.
pub(super) const ENV_SERVERS: &str = "TROUPE_IOT_SERVERS";
/// 0 for a first start, n for the n-th restart.
pub(super) const ENV_ATTEMPT: &str = "TROUPE_IOT_ATTEMPT";

/// The name of the coordinator actor on the orchestrator's node.
pub(super) const COORDINATOR: &str = "iot-coordinator";

/// The longest a set-up step may take.
pub(super) const SETUP_LIMIT: Duration = Duration::from_secs(120);

/// What a process says to the coordinator; answered with the window start (µs).
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Ready {
    pub(super) node: String,
    /// `servers`, `devices` or `restarted`.
    pub(super) what: String,
    pub(super) reply: ReplyTo<i64>,
}

impl RemoteMessage for Ready {
    const TAG: &'static str = "troupe.lab.iot.ready.v1";
    fn nested(n: &mut Nested) {
        n.add::<i64>();
    }
}

pub(super) use crate::common::Tally;
pub(super) use troupe_lab::nodes::{instant_of, interrupted};

pub(super) fn env(name: &str) -> Result<String> {
    troupe_lab::nodes::env(name, "iot")
}

pub(super) fn index() -> Result<u32> {
    env(ENV_INDEX)?.parse().map_err(|_| SutError::Environment(format!("{ENV_INDEX} is not a number")).into())
}

pub(super) fn server_addrs() -> Result<Vec<String>> {
    Ok(env(ENV_SERVERS)?.split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect())
}

/// The node processes `[net_faults]` partitions name, by index: the servers, then the device
/// processes (the orchestrator, the lab's coordinator and collector, is never cut).
pub(super) fn net_nodes(cfg: &IotConfig) -> Vec<String> {
    (0..cfg.servers)
        .map(|s| format!("server-{s}"))
        .chain((0..cfg.device_processes).map(|p| format!("devices-{p}")))
        .collect()
}

/// Starts applying the schedule's network faults on this process's node: index `index`, the
/// servers' addresses known, the device processes' looked up among its peers
/// (`troupe_lab::netfaults::apply`).
pub(super) fn apply_net_faults(
    cfg: &IotConfig,
    node: &troupe_remote::Node,
    index: u32,
    name: &str,
    actions: &[troupe_lab::schedule::FaultAction],
    start_us: i64,
    em: &troupe_lab::events::writer::Emitter,
) -> Option<tokio::task::JoinHandle<()>> {
    let servers = server_addrs().unwrap_or_default();
    let addrs = (0..cfg.servers as usize)
        .map(|s| servers.get(s).cloned())
        .chain((0..cfg.device_processes).map(|_| None))
        .collect();
    let me = troupe_lab::netfaults::apply::Me { index, name: name.into(), nodes: net_nodes(cfg), addrs };
    troupe_lab::netfaults::apply::spawn(node, actions, me, start_us, cfg.seed, em)
}
