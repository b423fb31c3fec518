//! The Troupe iot system under test as OS processes (the iot peer contract in docs/iot.md):
//! `troupe lab exec iot` is the orchestrator and collector; it starts `servers` processes
//! `troupe lab exec iot-server` and `device_processes` processes `troupe lab exec iot-devices`,
//! each a `troupe-remote` node on 127.0.0.1 sharing one random secret.
//!
//! Rules:
//! 1. Set-up: the orchestrator picks a free loopback port per server and starts the servers;
//!    each joins the others (`devices::peer_membership`), starts its desk
//!    (`troupe_cluster::devices::DeviceServer`) and says `Ready` to the coordinator once it has
//!    a session with every other server (`ready {what: "servers", count: 1}`). Then the device
//!    processes start; each says `Ready` once every one of its devices had a report summed
//!    (`ready {what: "devices", count: n}`).
//! 2. The window opens `warmup_s` after the last `Ready`: `ready {what: "window", start_us}`
//!    from the orchestrator; every `Ready` is answered with `start_us`, and every process times
//!    the window and its share of the schedule from it.
//! 3. Kills: a device process kills its own devices at their instants (the actor is killed,
//!    `fault_injected`, then after `restart_s` a new incarnation starts, `restarted`); the
//!    orchestrator SIGKILLs server processes (`fault_injected`), and after `restart_s` starts
//!    the server again at the same address (`restarted`). A restarted server says `Ready`
//!    and is answered at once; it does not emit `ready` again.
//! 4. Every process ends at the window's end plus one second (servers) or at the window's end
//!    (device processes), or when the orchestrator is gone (re-parented); the orchestrator waits for
//!    them under a deadline, kills what is left whatever happens, and only then writes its
//!    `run_finished`. A child that exits non-zero or early (other than by a planned kill) fails
//!    the run, named in `run_finished {failed_nodes}`.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;
use troupe::ReplyTo;
use troupe_remote::{Nested, RemoteMessage};

use super::config::IotConfig;
use troupe_lab::config;
use troupe_lab::error::{Error, Result};
use troupe_lab::events::writer::EventWriter;
use troupe_lab::schedule;

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
    env(ENV_INDEX)?.parse().map_err(|_| Error::other(format!("{ENV_INDEX} is not a number")))
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

/// Runs one role from the environment contract; the process exit code.
pub(super) fn exec(role: &str) -> Result<i32> {
    let cfg_value = config::from_env(&super::Iot)?;
    let cfg = IotConfig::from_config(&cfg_value);
    let sched_path = std::env::var_os("TROUPE_SCHEDULE")
        .ok_or_else(|| Error::other("TROUPE_SCHEDULE is not set; `troupe lab exec` is started by `troupe lab run`"))?;
    let actions = schedule::read(std::path::Path::new(&sched_path))?;
    let node_name = match role {
        "iot" => "orchestrator".to_string(),
        "iot-server" => format!("server-{}", index()?),
        _ => format!("devices-{}", index()?),
    };
    let writer = EventWriter::from_env("troupe", &node_name)?;
    let em = writer.emitter();
    em.emit(
        "run_started",
        json!({"workload": "iot", "role": role, "config": cfg_value.to_json(),
               "version": format!("troupe {}", env!("CARGO_PKG_VERSION"))}),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name(node_name.clone())
        .build()
        .map_err(|e| Error::other(format!("cannot start the tokio runtime: {e}")))?;
    let tally = rt.block_on(async {
        match role {
            "iot" => super::orchestrator::orchestrate(&cfg, actions, &em).await,
            "iot-server" => super::server::run(&cfg, &node_name, &actions, &em).await,
            _ => super::devices::run(&cfg, &node_name, actions, &em).await,
        }
    });
    // Counted errors (refused devices) do not fail a process; an error return does.
    let (tally, failed) = match tally {
        Ok(t) => (t, false),
        Err(e) => {
            eprintln!("troupe iot {node_name}: {e}");
            (Tally { errors: 1, ..Tally::default() }, true)
        }
    };
    let (_, write_errors) = writer.finish(tally.finished_json());
    rt.shutdown_timeout(Duration::from_secs(1));
    Ok(if write_errors > 0 || failed { 1 } else { 0 })
}
