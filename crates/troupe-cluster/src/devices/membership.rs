//! Views of the live servers for device tracking. [`cluster_membership`] follows a gossip
//! [`Cluster`]'s members. [`peer_membership`] works without one, by connectivity:
//! this node plus every listed server it has a session with. A background task keeps trying to
//! connect to the listed servers it lacks (a restarted server comes back at the same address)
//! and republishes on every session change, so desks re-check ownership (rule 10).

use std::time::Duration;

use tokio::sync::watch;
use troupe_remote::{Node, NodeEvent};

use crate::{Cluster, MemberStatus};

fn view(node: &Node, servers: &[String]) -> Vec<String> {
    let me = node.addr();
    let mut live: Vec<String> = servers.iter().filter(|a| **a == me || node.is_connected(a)).cloned().collect();
    if !live.contains(&me) {
        live.push(me);
    }
    live.sort();
    live
}

/// The live servers among `servers` as `node` sees them (itself always included), updated on
/// session changes and every `retry` (when it also tries to connect to the missing ones). The
/// task ends with the node (its event stream closes) or when every receiver is dropped.
pub fn peer_membership(node: &Node, servers: Vec<String>, retry: Duration) -> watch::Receiver<Vec<String>> {
    let (tx, rx) = watch::channel(view(node, &servers));
    let node = node.clone();
    let mut events = node.subscribe();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(retry.max(Duration::from_millis(10)));
        loop {
            tokio::select! {
                ev = events.recv() => match ev {
                    Ok(NodeEvent::NodeUp { .. } | NodeEvent::NodeDown { .. })
                    | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Ok(_) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                },
                _ = tick.tick() => {
                    let me = node.addr();
                    for addr in servers.iter().filter(|a| **a != me && !node.is_connected(a)) {
                        let (n, a) = (node.clone(), addr.clone());
                        tokio::spawn(async move {
                            let _ = tokio::time::timeout(Duration::from_secs(2), n.connect(&a)).await;
                        });
                    }
                }
            }
            let now = view(&node, &servers);
            if *tx.borrow() != now && tx.send(now).is_err() {
                return;
            }
            if tx.is_closed() {
                return;
            }
        }
    });
    rx
}

fn cluster_view(c: &Cluster) -> Vec<String> {
    let mut v: Vec<String> = c
        .status()
        .members
        .into_iter()
        .filter(|m| m.status == MemberStatus::Up && m.reachable)
        .map(|m| m.addr)
        .collect();
    v.sort();
    v
}

/// The live servers as a gossip [`Cluster`] sees them: the members that are up and reachable
/// (this node only once it is up itself), updated on every cluster event and checked every
/// `recheck`. A member that is unreachable leaves the view at once, so its devices re-home
/// (rule 10) without waiting for it to be downed. The task ends when the cluster's event
/// stream closes or every receiver is dropped.
pub fn cluster_membership(cluster: &Cluster, recheck: Duration) -> watch::Receiver<Vec<String>> {
    let (tx, rx) = watch::channel(cluster_view(cluster));
    let c = cluster.clone();
    let mut events = c.subscribe();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(recheck.max(Duration::from_millis(10)));
        loop {
            tokio::select! {
                ev = events.recv() => {
                    if let Err(tokio::sync::broadcast::error::RecvError::Closed) = ev {
                        return;
                    }
                }
                _ = tick.tick() => {}
            }
            let now = cluster_view(&c);
            if (*tx.borrow() != now && tx.send(now).is_err()) || tx.is_closed() {
                return;
            }
        }
    });
    rx
}
