//! The cluster's command line: `troupe node --config FILE` with a `[cluster]` section
//! ([`node_main`]) and `troupe cluster status|members --node ADDR` ([`status_main`]).
//!
//! On `quit`, SIGINT or SIGTERM a cluster node first leaves the cluster (waiting a bounded
//! time for its removal to be seen), then stops.
//!
//! A cluster node speaks the node protocol of `troupe_remote::cli` (first line
//! `listening on ADDR`, `event {json}` lines, commands on standard input), plus:
//! - `event {json}` lines for every [`crate::ClusterEvent`] (`member_up`, `unreachable`, ...);
//! - commands: `status` (answers `status {json}`), `leave` (answers `leaving`), `down ADDR`
//!   (answers `downed ADDR` or `error ...`), `register SERVICE` (registers an echo actor
//!   under the service key; answers `registered SERVICE`), `find SERVICE` (answers
//!   `found SERVICE N ADDR...`), `register-name NAME` (answers `registered-name NAME` or
//!   `error ...`), `whereis NAME` (answers `whereis NAME ADDR` or `whereis NAME none`).
//!
//! With an `[overlay]` section (with or without `[cluster]`; see docs/cluster.md) the node
//! runs that overlay and also speaks `crate::overlay::live::cli`'s commands and events.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use troupe::{Actor, Ctx};
use troupe_remote::cli::{EventLines, Extension, Setup};
use troupe_remote::services::Echo;
use troupe_remote::{Node, NodeConfig};

use crate::config::ClusterConfig;
use crate::daemon::Cluster;
use crate::error::{Error, ErrorKind};
use crate::overlay::live::cli::OverlayCommands;
use crate::overlay::live::{Overlay, OverlayConfig, OverlayRegistry};
use crate::receptionist::ServiceKey;
use crate::status::Status;
use crate::wire::{ClusterMsg, CLUSTER_ACTOR};

struct EchoActor;

impl Actor for EchoActor {
    type Msg = Echo;
    async fn handle(&mut self, Echo(b, r): Echo, _: &mut Ctx<Self>) {
        r.send(b);
    }
}

/// What `troupe node` runs beside the node: the cluster, the overlay, the `[observe]`
/// endpoint (kept here so it lives as long as the node).
struct ClusterCommands(Option<Cluster>, Option<OverlayCommands>, #[allow(dead_code)] Option<Observer>);

#[cfg(feature = "observe")]
type Observer = troupe_observe::Endpoint;
#[cfg(not(feature = "observe"))]
type Observer = std::convert::Infallible;

/// `[observe]`'s `listen` (rule 1 of `crate::observe`).
#[cfg(feature = "observe")]
fn observe_listen(table: &toml::Table) -> Result<String, troupe_remote::Error> {
    crate::observe::listen_of(table).map_err(troupe_remote::Error::config)
}

#[cfg(not(feature = "observe"))]
fn observe_listen(_: &toml::Table) -> Result<String, troupe_remote::Error> {
    Err(troupe_remote::Error::config(
        "[observe] needs a build with troupe-cluster's `observe` feature (the `troupe` binary has it)",
    ))
}

/// Starts the endpoint and says where on stdout (`observe listening on ADDR`).
#[cfg(feature = "observe")]
async fn start_observe(
    listen: &str,
    node: &Node,
    cluster: Option<Cluster>,
    lines: &EventLines,
) -> Result<Observer, troupe_remote::Error> {
    let ep = crate::observe::start(listen, node, cluster).await.map_err(|e| match e {
        troupe_observe::Error::Bind { .. } => troupe_remote::Error::with_source(
            troupe_remote::ErrorKind::Io(format!("cannot start the observe endpoint on {listen}")),
            e,
        ),
        other => troupe_remote::Error::config(other.to_string()),
    })?;
    lines.line(&format!("observe listening on {}", ep.addr()));
    Ok(ep)
}

#[cfg(not(feature = "observe"))]
async fn start_observe(
    _: &str,
    _: &Node,
    _: Option<Cluster>,
    _: &EventLines,
) -> Result<Observer, troupe_remote::Error> {
    unreachable!("observe_listen refuses [observe] without the feature")
}

impl ClusterCommands {
    async fn answer(&self, line: &str) -> Option<String> {
        if let Some(o) = &self.1 {
            if let Some(a) = o.answer(line).await {
                return Some(a);
            }
        }
        let c = self.0.as_ref()?;
        let mut parts = line.split_whitespace();
        let (cmd, arg) = (parts.next()?, parts.next());
        Some(match (cmd, arg) {
            ("status", None) => format!("status {}", serde_json::to_string(&c.status()).unwrap_or_default()),
            ("leave", None) => {
                c.leave();
                "leaving".to_owned()
            }
            ("down", Some(addr)) => match c.down(addr).await {
                Ok(true) => format!("downed {addr}"),
                Ok(false) => format!("error {addr} is not a live member"),
                Err(e) => format!("error {e}"),
            },
            ("register", Some(key)) => match c.register(&ServiceKey::<Echo>::new(key), &troupe::spawn(EchoActor)) {
                Ok(()) => format!("registered {key}"),
                Err(e) => format!("error {e}"),
            },
            ("find", Some(key)) => {
                let key = ServiceKey::<Echo>::new(key);
                let mut owners: Vec<String> = c.entries(&key).into_iter().map(|(o, _)| o).collect();
                owners.dedup();
                let n = c.find(&key).len();
                format!("found {} {n} {}", key.name(), owners.join(" "))
            }
            ("register-name", Some(name)) => match c.register_name(name, &troupe::spawn(EchoActor)) {
                Ok(()) => format!("registered-name {name}"),
                Err(e) => format!("error {e}"),
            },
            ("whereis", Some(name)) => {
                let holder = c.whereis_name::<Echo>(name).ok().flatten().and(c.gossip().name_owner(name));
                format!("whereis {name} {}", holder.map_or_else(|| "none".to_owned(), |(owner, _)| owner))
            }
            _ => return None,
        })
    }
}

impl Extension for ClusterCommands {
    fn command<'a>(&'a self, line: &'a str) -> Pin<Box<dyn Future<Output = Option<String>> + Send + 'a>> {
        Box::pin(self.answer(line))
    }

    /// A node that is told to stop leaves the cluster first (bounded), so the others see it
    /// leave instead of failing (what a Kubernetes rolling update wants).
    fn stop(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            if let Some(o) = &self.1 {
                o.overlay().stop_and_wait(Duration::from_secs(2)).await;
            }
            let Some(c) = &self.0 else { return };
            let limit = Duration::from_millis(4 * c.config().gossip_interval_ms).max(Duration::from_secs(2));
            if let Err(e) = c.leave_and_wait(limit.min(Duration::from_secs(10))).await {
                tracing::warn!("stopping without a completed leave: {e}");
            }
        })
    }
}

/// Runs a node from `config_path` until `quit`, SIGINT or SIGTERM; with a `[cluster]`
/// section it joins the cluster and prints its events, with an `[overlay]` section it runs
/// that overlay (module docs for the protocol).
pub fn node_main(config_path: &Path) -> Result<(), troupe_remote::Error> {
    node_main_with_overlays(config_path, OverlayRegistry::new())
}

/// [`node_main`] where `[overlay] kind` may also name an overlay registered in `overlays`:
/// what a program of one's own calls to run `troupe node` with a user-defined overlay.
pub fn node_main_with_overlays(config_path: &Path, overlays: OverlayRegistry) -> Result<(), troupe_remote::Error> {
    let cfg = NodeConfig::from_file(config_path)?;
    let bad = remote_error;
    let ocfg = cfg.overlay.as_ref().map(|t| OverlayConfig::from_table_with(t, &overlays)).transpose().map_err(bad)?;
    if let Some(o) = &ocfg {
        o.check_node(&cfg.peers).map_err(bad)?;
    }
    let ccfg = cfg.cluster.as_ref().map(ClusterConfig::from_table).transpose().map_err(bad)?;
    let observe = cfg.observe.as_ref().map(observe_listen).transpose()?;
    #[cfg(feature = "observe")]
    if observe.is_some() {
        // Before the node and its services start: what they record from their first spawn on
        // reaches the endpoint's recorder (a series recorded before a recorder exists is lost).
        troupe_observe::install().map_err(troupe_remote::Error::config)?;
    } else {
        // Nobody will read them: the node runs as a build without the metrics feature does.
        troupe::set_metrics_recording(false);
    }
    if ocfg.is_none() && ccfg.is_none() && observe.is_none() {
        return troupe_remote::cli::node_main(config_path);
    }
    let setup: Setup = Box::new(move |node: Node, _cfg: NodeConfig, lines: EventLines| {
        Box::pin(async move {
            // The overlay first: its router carries what the cluster sends to non-neighbours.
            let overlay = match ocfg {
                Some(ocfg) => Some(Overlay::start_with(&node, ocfg, &overlays).await.map_err(bad)?),
                None => None,
            };
            let cluster = match ccfg {
                Some(ccfg) => Some(start_cluster(&node, ccfg, lines.clone()).await?),
                None => None,
            };
            if let (Some(c), Some(o)) = (&cluster, &overlay) {
                c.follow_overlay(o); // engine rule 9
            }
            let endpoint = match observe {
                Some(listen) => Some(start_observe(&listen, &node, cluster.clone(), &lines).await?),
                None => None,
            };
            let overlay = overlay.map(|o| OverlayCommands::new(&node, o, lines));
            Ok(Arc::new(ClusterCommands(cluster, overlay, endpoint)) as Arc<dyn Extension>)
        })
    });
    troupe_remote::cli::node_main_with(config_path, Some(setup))
}

/// A cluster error as the node binary reports it (a configuration error, exit code 2), the
/// cluster error kept as the source.
fn remote_error(e: Error) -> troupe_remote::Error {
    troupe_remote::Error::with_source(troupe_remote::ErrorKind::Config(e.to_string()), e)
}

async fn start_cluster(node: &Node, ccfg: ClusterConfig, lines: EventLines) -> Result<Cluster, troupe_remote::Error> {
    let cluster = Cluster::start(node, ccfg).await.map_err(remote_error)?;
    let mut events = cluster.subscribe();
    tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(ev) => lines.event(&serde_json::to_string(&ev).unwrap_or_default()),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!("{n} cluster event lines were dropped (the printer lagged)");
                }
                Err(_) => return,
            }
        }
    });
    Ok(cluster)
}

/// Asks the node at `addr` for its view of the cluster, from a short-lived node of our own
/// that authenticates with `secret`.
pub fn status_main(addr: &str, secret: &str, timeout: Duration) -> Result<Status, Error> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| Error::node("cannot start the tokio runtime", e))?;
    let r = rt.block_on(async {
        let name = format!("troupe-cli-{}", std::process::id());
        let node = Node::start(NodeConfig::new(&name, secret)).await?;
        let conn = tokio::time::timeout(timeout, node.connect(addr)).await;
        let answer = match conn {
            Err(_) => Err(ErrorKind::Timeout(format!("no node answered at {addr} within {timeout:?}")).into()),
            Ok(Err(e)) => Err(Error::node(
                format!("cannot reach the node at {addr} (is it running, and is the secret the cluster's?)"),
                e,
            )),
            Ok(Ok(_)) => {
                let r = node.remote_ref::<ClusterMsg>(addr, CLUSTER_ACTOR);
                r.ask(ClusterMsg::Status, timeout).await.map_err(|e| match e {
                    troupe::AskError::Timeout(after) => ErrorKind::Timeout(format!(
                        "the node at {addr} did not answer a status request within {after:?}; is it overloaded?"
                    ))
                    .into(),
                    e => Error::node(
                        format!(
                            "the node at {addr} did not answer a status request; does it run with a [cluster] section?"
                        ),
                        e,
                    ),
                })
            }
        };
        node.shutdown();
        answer
    });
    rt.shutdown_background();
    r
}
