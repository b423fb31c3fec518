//! The `overlay` key of the workloads whose Troupe traffic can ride an overlay (latency, kv;
//! seed 004 §6, Partisan's own evaluation): which overlay a Troupe program's node processes
//! start, where each process sits in it, and the checks around it.
//!
//! Rules:
//! 1. `full_mesh` (the default) starts no overlay: every node dials every other, as
//!    Distributed Erlang does; it is the only value the peers take.
//! 2. `client_server`: the run's hub process is the one server, every other process a
//!    client of it; a client reaches another client through the server (two legs).
//! 3. `hyparview`: every process joins HyParView through the hub (its contact); whether two
//!    processes are neighbours is the protocol's doing (with a few processes and the default
//!    active view of 5 they all are); a non-neighbour is reached over the announced links.
//! 4. Before a program sends its first message it waits until the overlay's link states reach
//!    every other process of the run ([`wait_reachable`]), so no first dial goes straight
//!    past the overlay because the routes were not known yet.
//! 5. After the window a program says how its traffic went ([`route_json`]): for each peer
//!    it had a session with, `direct` or the hop the session runs through.

use std::time::Duration;

use serde_json::{json, Value};
use troupe_cluster::overlay::live::{Overlay, OverlayConfig};
use troupe_remote::Node;

/// The values of the `overlay` key.
pub const OVERLAYS: &[&str] = &["full_mesh", "client_server", "hyparview"];

/// The one value the peer runtimes take (their nodes connect in a full mesh).
pub const FULL_MESH: &str = "full_mesh";

/// The `overlay` key's help text (the same for every workload that has it).
pub const HELP: &str = "the overlay Troupe's node processes put their traffic on: full_mesh (every node dials every \
                        other); client_server (a hub process is the one server, the others its clients, reached \
                        through it); hyparview (every process joins through the hub; non-neighbours reached over \
                        the announced links). Peers: full_mesh only";

/// Whether `kind` needs a hub process (rules 2, 3).
#[must_use]
pub fn needs_hub(kind: &str) -> bool {
    kind != FULL_MESH
}

/// The `[overlay]` section of one process (rules 2, 3): `hub` is the hub's address as the
/// others dial it; `is_hub` says whether this process is the hub. `None` for `full_mesh`.
///
/// ```
/// let c = troupe_lab::overlay_net::config("client_server", "127.0.0.1:7000", false).unwrap().unwrap();
/// assert_eq!((c.role.as_str(), c.servers.clone()), ("client", vec!["127.0.0.1:7000".to_string()]));
/// assert!(troupe_lab::overlay_net::config("full_mesh", "127.0.0.1:7000", false).unwrap().is_none());
/// assert!(troupe_lab::overlay_net::config("ring", "127.0.0.1:7000", false).unwrap_err().contains("full_mesh"));
/// ```
pub fn config(kind: &str, hub: &str, is_hub: bool) -> Result<Option<OverlayConfig>, String> {
    let mut c = OverlayConfig { kind: kind.to_string(), ..OverlayConfig::default() };
    match kind {
        FULL_MESH => return Ok(None),
        "client_server" => {
            c.role = if is_hub { "server" } else { "client" }.into();
            c.servers = vec![hub.to_string()];
        }
        "hyparview" => {
            if !is_hub {
                c.contacts = vec![hub.to_string()];
            }
        }
        other => return Err(format!("overlay {other:?} is not one of {}", OVERLAYS.join(", "))),
    }
    Ok(Some(c))
}

/// Starts this process's overlay on `node` (rules 1-3): `None` for `full_mesh`.
pub async fn start(node: &Node, kind: &str, hub: &str, is_hub: bool) -> Result<Option<Overlay>, String> {
    let Some(c) = config(kind, hub, is_hub)? else { return Ok(None) };
    Overlay::start(node, c).await.map(Some).map_err(|e| format!("cannot start the {kind} overlay: {e}"))
}

/// Rule 4: waits until the overlay's link states reach `others` other processes, at most
/// `limit`; the error names how far they got.
pub async fn wait_reachable(overlay: &Overlay, others: u64, limit: Duration) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + limit;
    let mut events = overlay.events();
    loop {
        let st = overlay.status().await.map_err(|e| format!("the overlay did not answer: {e}"))?;
        // Full mesh and AMQP never route: their neighbours are the whole run.
        let reached = st.reachable.max(st.neighbours.len() as u64);
        if reached >= others {
            return Ok(());
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return Err(format!(
                "the {} overlay reached {reached} of the run's {others} other processes within {} s",
                st.kind,
                limit.as_secs()
            ));
        }
        // Link states arrive on the overlay's tick; an event or a tick is the next look.
        let _ = tokio::time::timeout(left.min(Duration::from_millis(100)), events.recv()).await;
    }
}

/// Rule 5: `{kind, peers: {addr: "direct" | hop}}` for the peers `node` has sessions with.
#[must_use]
pub fn route_json(node: &Node, kind: &str) -> Value {
    let peers: serde_json::Map<String, Value> =
        node.peers().into_iter().map(|p| (p.addr, Value::from(p.via.unwrap_or_else(|| "direct".into())))).collect();
    json!({"kind": kind, "peers": peers})
}

/// Rule 5: how many of the sessions a `route` event lists ran through another node; `None`
/// when `route` is not such an event's fields.
///
/// ```
/// let r = serde_json::json!({"kind": "client_server", "peers": {"a:1": "direct", "b:2": "a:1"}});
/// assert_eq!(troupe_lab::overlay_net::routed_sessions(&r), Some(1));
/// assert_eq!(troupe_lab::overlay_net::routed_sessions(&serde_json::Value::Null), None);
/// ```
#[must_use]
pub fn routed_sessions(route: &Value) -> Option<u64> {
    let peers = route.get("peers")?.as_object()?;
    Some(peers.values().filter(|v| v.as_str() != Some("direct")).count() as u64)
}

/// The name of a Troupe line in a grid's table or plot: its transport, and its overlay when
/// that is not a full mesh. `overlay` is a run folder's `overlay` key, empty in a folder from
/// before the key (a full mesh).
///
/// ```
/// assert_eq!(troupe_lab::overlay_net::variant("channels", "hyparview"), "channels over hyparview");
/// assert_eq!(troupe_lab::overlay_net::variant("channels", "full_mesh"), "channels");
/// assert_eq!(troupe_lab::overlay_net::variant("channels", ""), "channels");
/// ```
#[must_use]
pub fn variant(transport: &str, overlay: &str) -> String {
    if overlay.is_empty() || overlay == FULL_MESH {
        transport.to_string()
    } else {
        format!("{transport} over {overlay}")
    }
}

/// A run folder's `overlay` key as a value of [`OVERLAYS`]: `full_mesh` when it is empty (a
/// folder from before the key).
#[must_use]
pub fn recorded(overlay: String) -> String {
    if overlay.is_empty() {
        FULL_MESH.to_string()
    } else {
        overlay
    }
}
