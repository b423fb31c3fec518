//! Where a routed [`Envelope`] goes next, per overlay: a pure function of the overlay's
//! kind, this node's neighbours and the envelope, so the rules can be tested without I/O.
//!
//! Rules (`from` is the previous hop; `None` at the origin):
//! 1. Full mesh: the origin sends a unicast straight to its destination and a broadcast
//!    straight to every member; nobody forwards.
//! 2. Static: a unicast whose destination is a neighbour goes straight there; otherwise (and
//!    every broadcast) it floods to every neighbour but `from`.
//! 3. Client-server, client: the origin hands everything to one server (its first connected
//!    one, else its first listed one); a client never forwards.
//! 4. Client-server, server: a unicast goes straight to its destination when that is one of
//!    its clients or servers, else to every other server but `from`; a broadcast goes to
//!    every neighbour (clients and servers) but `from` and the origin.
//! 5. HyParView: only unicasts to an active neighbour travel as envelopes (straight there);
//!    everything else rides Plumtree (see `driver/mod.rs`). AMQP routes nothing itself: the
//!    broker does (`amqp.rs`).
//! 6. A user-defined overlay routes through its own `PeerService` (`driver/mod.rs` rule 12),
//!    not here: this function gives it no hop.
//!
//! Loops end because every node handles an envelope once and drops it after `max_hops`
//! (`driver/mod.rs` rule 9).

use std::collections::BTreeSet;

use super::config::LiveKind;
use super::wire::{Body, Envelope};

/// What the router knows about this node.
pub struct View<'a> {
    /// The overlay.
    pub kind: LiveKind,
    /// Whether this node is a client-server server.
    pub server: bool,
    /// This node's address.
    pub me: &'a str,
    /// Its neighbours.
    pub neighbours: &'a BTreeSet<String>,
    /// Client-server: the servers (addresses), in configuration order.
    pub servers: &'a [String],
    /// Client-server: the servers this node is connected to now.
    pub connected_servers: &'a BTreeSet<String>,
}

/// The next hops of `env`, which arrived from `from` (rules 1 to 5).
#[must_use]
pub fn next_hops(v: &View<'_>, from: Option<&str>, env: &Envelope) -> Vec<String> {
    let others = |skip: &[&str]| -> Vec<String> {
        v.neighbours.iter().filter(|n| !skip.contains(&n.as_str()) && n.as_str() != v.me).cloned().collect()
    };
    let from_s = from.unwrap_or("");
    match (v.kind, &env.body) {
        (LiveKind::FullMesh | LiveKind::Hyparview, Body::Unicast { to, .. }) => {
            if from.is_none() && to != v.me {
                vec![to.clone()]
            } else {
                Vec::new()
            }
        }
        (LiveKind::FullMesh, Body::Broadcast { .. }) => {
            if from.is_none() {
                others(&[])
            } else {
                Vec::new()
            }
        }
        (LiveKind::Hyparview, Body::Broadcast { .. }) | (LiveKind::Amqp | LiveKind::Registered, _) => Vec::new(),
        (LiveKind::Static, Body::Unicast { to, .. }) if v.neighbours.contains(to) => vec![to.clone()],
        (LiveKind::Static, _) => others(&[from_s]),
        (LiveKind::ClientServer, _) if !v.server => {
            if from.is_some() {
                return Vec::new();
            }
            let pick = v.servers.iter().find(|s| v.connected_servers.contains(*s)).or_else(|| v.servers.first());
            pick.filter(|s| s.as_str() != v.me).cloned().into_iter().collect()
        }
        (LiveKind::ClientServer, Body::Unicast { to, .. }) => {
            if v.neighbours.contains(to) {
                vec![to.clone()]
            } else {
                let servers: BTreeSet<&String> = v.servers.iter().collect();
                others(&[from_s]).into_iter().filter(|n| servers.contains(n)).collect()
            }
        }
        (LiveKind::ClientServer, Body::Broadcast { .. }) => others(&[from_s, env.id.0.as_str()]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    fn uni(origin: &str, to: &str) -> Envelope {
        Envelope {
            id: (origin.into(), 1),
            hops: 0,
            body: Body::Unicast { to: to.into(), actor: "x".into(), bytes: vec![] },
        }
    }

    fn bc(origin: &str) -> Envelope {
        Envelope { id: (origin.into(), 1), hops: 0, body: Body::Broadcast { topic: "t".into(), bytes: vec![] } }
    }

    fn view<'a>(kind: LiveKind, server: bool, me: &'a str, n: &'a BTreeSet<String>, s: &'a [String]) -> View<'a> {
        static EMPTY: BTreeSet<String> = BTreeSet::new();
        View { kind, server, me, neighbours: n, servers: s, connected_servers: &EMPTY }
    }

    #[test]
    fn rule_1_full_mesh_sends_straight_and_never_forwards() {
        let n = set(&["b", "c"]);
        let v = view(LiveKind::FullMesh, false, "a", &n, &[]);
        assert_eq!(next_hops(&v, None, &uni("a", "z")), vec!["z"]);
        assert_eq!(next_hops(&v, None, &bc("a")), vec!["b", "c"]);
        assert!(next_hops(&v, Some("b"), &bc("b")).is_empty());
    }

    #[test]
    fn rule_2_static_goes_straight_to_a_neighbour_and_floods_otherwise() {
        let n = set(&["b", "c"]);
        let v = view(LiveKind::Static, false, "a", &n, &[]);
        assert_eq!(next_hops(&v, Some("b"), &uni("b", "c")), vec!["c"]);
        assert_eq!(next_hops(&v, Some("b"), &uni("b", "z")), vec!["c"]);
        assert_eq!(next_hops(&v, None, &bc("a")), vec!["b", "c"]);
    }

    #[test]
    fn rule_3_a_client_hands_everything_to_one_server_and_never_forwards() {
        let n = set(&["s1", "s2"]);
        let servers = vec!["s1".to_owned(), "s2".to_owned()];
        let connected = set(&["s2"]);
        let v = View {
            kind: LiveKind::ClientServer,
            server: false,
            me: "c1",
            neighbours: &n,
            servers: &servers,
            connected_servers: &connected,
        };
        assert_eq!(next_hops(&v, None, &uni("c1", "c2")), vec!["s2"]);
        assert_eq!(next_hops(&v, None, &bc("c1")), vec!["s2"]);
        assert!(next_hops(&v, Some("s2"), &bc("c3")).is_empty());
    }

    #[test]
    fn rule_4_a_server_delivers_to_its_clients_and_asks_the_other_servers() {
        let n = set(&["c1", "c2", "s2"]);
        let servers = vec!["s1".to_owned(), "s2".to_owned()];
        let v = view(LiveKind::ClientServer, true, "s1", &n, &servers);
        assert_eq!(next_hops(&v, Some("c1"), &uni("c1", "c2")), vec!["c2"]);
        assert_eq!(next_hops(&v, Some("c1"), &uni("c1", "c9")), vec!["s2"]);
        assert_eq!(next_hops(&v, Some("c1"), &bc("c1")), vec!["c2", "s2"]);
    }

    #[test]
    fn rule_5_hyparview_routes_only_direct_unicasts() {
        let n = set(&["b"]);
        let v = view(LiveKind::Hyparview, false, "a", &n, &[]);
        assert_eq!(next_hops(&v, None, &uni("a", "b")), vec!["b"]);
        assert!(next_hops(&v, None, &bc("a")).is_empty());
    }
}
