//! The network layer of `[net_faults]` (`net_faults.layer = "network"`, the default): network
//! faults applied outside every runtime, so each runtime in a comparison meets the same network.
//! Each node process of a distributed run lives in a Linux network namespace of its own; the
//! namespaces reach each other only through a hub namespace that routes between them, and the
//! faults are nftables rules in the hub.
//!
//! Rules:
//! 1. **Host.** The layer needs root (namespaces and nftables need CAP_SYS_ADMIN and
//!    CAP_NET_ADMIN), `ip` (iproute2) and `nft` (nftables; `bash scripts/install-nftables.sh`).
//!    Without them a run that asks for it is refused before anything starts, naming what is
//!    missing and how to get it ([`check_host`]).
//! 2. **Runtimes.** Troupe takes the layer in every workload whose node processes are
//!    [`crate::nodes::NodeCmd`]s (rule 5). A peer takes it for a workload when its program folder
//!    `peers/<rt>/<workload>/` has a file `features` with a line `netns` (it implements rule 4);
//!    otherwise the run is refused naming the runtime and the workload ([`peer_supports`]).
//! 3. **Topology** ([`ns::Topology`]): per run, a hub `tlab-<tag>-h`, a coordinator `tlab-<tag>-c`
//!    and one namespace `tlab-<tag>-<i>` per network node i, in [`crate::config::Spec::net_nodes`]'s
//!    order. Each is joined to the hub by a veth pair: the coordinator is `10.232.0.2/24`, node i
//!    `10.232.<i+1>.2/24`, the hub's side of each `.1`, the default route through it; the hub
//!    forwards between them. Loopback is up in each. Nothing is attached to the host's own
//!    namespace: these addresses exist only inside the run's namespaces. The namespaces are
//!    removed when the run ends, on every path; namespaces left by a lab process that no longer
//!    lives are removed when the next run starts.
//! 4. **Where processes run.** The system under test's program (Troupe's, or a peer's `run`
//!    script) is started inside the coordinator namespace with `TROUPE_NETNS` = the path of
//!    `netns.json` in the run folder ([`NetFile`]): `{"coordinator": {"netns", "addr"}, "nodes":
//!    [{"index", "name", "netns", "addr"}]}`. The program listens on the coordinator's `addr` and
//!    starts node `name`'s OS process with `ip netns exec <netns> ...`, listening on and
//!    advertising that node's `addr`. It applies no network fault itself: its schedule file
//!    (`TROUPE_SCHEDULE`, `schedule.sut.jsonl`) holds the workload's own lines only; the run
//!    folder's `schedule.jsonl` keeps the whole plan.
//! 5. **Troupe's node processes** find their namespace by name: [`crate::nodes::NodeCmd`] starts
//!    node `name` inside its namespace with `TROUPE_NET_ADDR` set, and [`host`] is the address a
//!    process of the run binds and advertises (its node's, the coordinator's, or 127.0.0.1 when
//!    the run has no network layer).
//! 6. **Rules in the hub** ([`nft`]): table `inet troupe`, chain `lab` on the forward hook. Every
//!    forwarded packet is counted (`seen`, from the window start); loss drops a packet with probability `drop_pct` %
//!    (`numgen random mod 10000 < drop_pct x 100`, counted `lost`); a partition drops every
//!    packet between its side's nodes and the other network nodes, both ways (counted `cut`;
//!    the coordinator is never cut, as in the runtime layer), and is removed at its heal time;
//!    a loss line with a `duration_ms` (the nemesis's `loss`, [`crate::nemesis`]) likewise.
//! 7. **Timing** ([`control`]): steps are timed from the window start, the `start_us` of the first
//!    `ready {what: "window"}` line in the run's events, at `start_us + at_ms`; a partition whose
//!    heal time has passed by then is not applied. Each line carried out gets a
//!    `fault_injected {id, target, kind}` (node `network`, stamped when the rule is in place) in
//!    `events.net.jsonl`, merged with the run's events; a heal gets `net_healed {id}`. Once
//!    the program has ended: `net_counters {packets_seen, packets_lost, packets_cut, errors}`
//!    and `run_finished {dropped_events: 0, errors}` (the layer ends like every event source).
//! 8. **Counted.** `summary.json` gets `net_packets_seen`, `net_packets_lost`, `net_packets_cut`
//!    and `net_packets_dropped` (lost + cut) beside `net_faults_injected`; a network line that was
//!    planned and not carried out (the window never opened, a rule failed) marks the run
//!    `degraded`, naming the line ([`crate::netfaults::missed`]).
//! 9. **Delay** ([`relay`]): with `delay_ms` set (the machines have no netem qdisc), every TCP
//!    connection between the namespaces is redirected in the hub to the lab's relay, which
//!    connects to the original destination and holds each chunk `[min, max]` ms (uniform,
//!    seeded by the config's seed and the connection) once the delay line is due (a line due
//!    at 0, the `[net_faults]` delay, is the network's round trip for the whole run and is in
//!    force from the run's start, before the window opens: the window start reaches the lab
//!    only when the program's `ready` line is flushed, which may be late), never
//!    releasing a chunk before the one read before it. Loss and partitions then also apply on
//!    the relay's client-side legs (input and output chains, matched by the connection's
//!    original addresses), so each packet is faulted once. `net_counters` adds
//!    `relay_connections`, `relay_delayed_chunks` and `relay_failed_connects`.

pub mod control;
pub mod nft;
pub mod ns;
pub mod relay;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::net_faults::Layer;
use crate::config::Config;

/// The environment variable naming the run's `netns.json` (rule 4).
pub const ENV_NETNS: &str = "TROUPE_NETNS";
/// The environment variable giving a Troupe node process its address (rule 5).
pub const ENV_ADDR: &str = "TROUPE_NET_ADDR";
/// The name of the file in the run folder.
pub const FILE: &str = "netns.json";
/// The node name of the layer's own events.
pub const NODE: &str = "network";

/// Whether a config's network faults go through this layer (a `[net_faults]` section with
/// `layer = "network"`).
pub fn wanted(cfg: &Config) -> bool {
    cfg.net_faults().is_some_and(|nf| nf.layer == Layer::Network)
}

/// One namespace and its address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Place {
    /// The namespace's name (`ip netns exec <netns>`).
    pub netns: String,
    /// The address inside it.
    pub addr: String,
}

/// One network node's place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodePlace {
    /// Its index (as `[net_faults]` partitions name it).
    pub index: u32,
    /// Its name (`server-0`, `clients-1`, ...).
    pub name: String,
    /// The namespace's name.
    pub netns: String,
    /// The address inside it.
    pub addr: String,
}

/// The contents of `netns.json` (rule 4).
///
/// ```
/// use troupe_lab::netlayer::NetFile;
/// let f: NetFile = serde_json::from_str(r#"{"coordinator": {"netns": "tlab-1-0-c", "addr": "10.232.0.2"},
///   "nodes": [{"index": 0, "name": "server-0", "netns": "tlab-1-0-0", "addr": "10.232.1.2"}]}"#).unwrap();
/// assert_eq!(f.node("server-0").unwrap().addr, "10.232.1.2");
/// assert!(f.node("server-1").is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetFile {
    /// Where the program the lab starts runs.
    pub coordinator: Place,
    /// The network nodes, by index.
    pub nodes: Vec<NodePlace>,
}

impl NetFile {
    /// The node called `name`.
    pub fn node(&self, name: &str) -> Option<&NodePlace> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// Reads the file `TROUPE_NETNS` names, when it is set; an error names the path.
    pub fn from_env() -> Result<Option<NetFile>, String> {
        let Some(path) = std::env::var_os(ENV_NETNS) else { return Ok(None) };
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("{ENV_NETNS}={}: cannot read it: {e}", Path::new(&path).display()))?;
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| format!("{ENV_NETNS}={}: not a netns.json ({e})", Path::new(&path).display()))
    }
}

/// The address this process binds and advertises (rule 5): `TROUPE_NET_ADDR` (a node process
/// in its namespace), else the coordinator's address when `TROUPE_NETNS` is set, else
/// `127.0.0.1`.
pub fn host() -> String {
    if let Ok(a) = std::env::var(ENV_ADDR) {
        if !a.is_empty() {
            return a;
        }
    }
    match NetFile::from_env() {
        Ok(Some(f)) => f.coordinator.addr,
        _ => "127.0.0.1".into(),
    }
}

/// `host():0`, a listen address on a port the OS picks.
pub fn listen_any_port() -> String {
    format!("{}:0", host())
}

/// Rule 1: root, `ip` and `nft`; `Err(why, with what to do)` otherwise.
pub fn check_host() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err("network faults at the network layer need root (network namespaces and nftables); run as \
                    root, or set net_faults.layer = \"runtime\" (Troupe's own injection, runtime troupe only)"
            .into());
    }
    for (tool, install) in [("ip", "apt-get install iproute2"), ("nft", "bash scripts/install-nftables.sh")] {
        if !on_path(tool) {
            return Err(format!(
                "network faults at the network layer need `{tool}`, which is not on PATH; install it with: {install}"
            ));
        }
    }
    Ok(())
}

fn on_path(tool: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).chain(["/usr/sbin".into(), "/sbin".into()]).any(|d| d.join(tool).is_file())
}

/// Rule 2 for peers: whether `peers/<runtime>/<workload>/features` lists `netns`.
pub fn peer_supports(root: &Path, runtime: &str, workload: &str) -> bool {
    let f = crate::peer::workload_dir(root, runtime, workload).join("features");
    std::fs::read_to_string(f).is_ok_and(|t| t.lines().any(|l| l.trim() == "netns"))
}
