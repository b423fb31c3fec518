//! The runtime's own traffic over the overlay: what this node knows of every overlay node's
//! neighbours (a link-state table the overlay floods), and the [`troupe_remote::Router`] it
//! installs on the node, so that typed sends, asks, monitors and links to a node that is not
//! a neighbour go through neighbours (`troupe_remote`'s routed connections,
//! `node/relay.rs`) instead of a connection of their own.
//!
//! Rules:
//! 1. Every overlay node but full mesh and AMQP (and one with `[overlay] routing = false`,
//!    which reaches non-neighbours directly) announces its neighbours: a [`LinkState`]
//!    numbered by a sequence that only grows (its first is the wall clock in milliseconds, so
//!    a restarted node's announcements supersede its old ones), sent to every neighbour when
//!    its neighbour set changes, at most once per [`ANNOUNCE_GAP`] (the changes in between go
//!    together); a node that receives a newer state than it holds keeps it and
//!    passes it to its other neighbours (flooding, each state once per node). A new neighbour
//!    gets this node's state and a digest of every state it holds (origin, sequence), and
//!    answers with the states the digest lacks or holds older: the two exchange only what
//!    one of them misses, not whole tables.
//! 2. Routes: a neighbour, a node the overlay's own protocol talked to in the last
//!    [`PROTOCOL_WINDOW`] and a node no state mentions are reached directly (joins, neighbour
//!    requests to passive members and shuffles need their connection, which the overlay
//!    closes once idle: `driver/mod.rs` rule 4; the protocol also asks the node layer to dial
//!    its partner directly, `Node::dial_directly`, so a dial that starts late on a loaded
//!    machine is not routed); any other
//!    node through the first hop of a shortest path over the announced links (breadth first,
//!    ties broken by address); a node the states mention but no path reaches has no route
//!    (`NoRoute`). A user-defined overlay routes through its own `PeerService::next_hop`.
//! 3. A node that left or died drops out of its neighbours' states, so no path leads to it
//!    after their next announcement.
//! 4. A routed session stays up while it is used: the overlay closes it once no data, reply
//!    or causal frame crossed it for `max(5 s, 40 ticks)` and no monitor or link crosses it
//!    (`driver/timer.rs`); a session that carries routed connections is not closed while it
//!    does (a former neighbour stays connected until the routed sessions through it end).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use troupe_remote::{Route, Router};

use super::config::LiveKind;
use super::Shared;

/// The least time between two announcements of one node's neighbours (rule 1): changes in
/// between are announced together (a forming HyParView overlay changes its views many times a
/// second, and each announcement reaches every node).
pub const ANNOUNCE_GAP: Duration = Duration::from_secs(1);

/// How long after the overlay's protocol last talked to a node that node is dialled directly:
/// the shortest grace before the overlay closes an idle connection (`driver/mod.rs` rule 4).
pub const PROTOCOL_WINDOW: Duration = Duration::from_millis(500);

/// One node's announced neighbours.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkState {
    /// The node.
    pub origin: String,
    /// Its announcement's number (rule 1).
    pub seq: u64,
    /// Its neighbours then.
    pub neighbours: Vec<String>,
}

/// What one `Links` message carries: states, and, to a new neighbour, a digest of every state
/// the sender holds (origin and sequence), so that the neighbour sends back only what the
/// sender lacks (rule 1).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkBatch {
    /// States newer than the receiver may hold.
    pub states: Vec<LinkState>,
    /// The sender's digest, when it asks for what it lacks.
    pub digest: Option<Vec<(String, u64)>>,
}

/// A batch for a neighbour.
pub(crate) type Outgoing = (String, LinkBatch);

fn batch(states: Vec<LinkState>) -> LinkBatch {
    LinkBatch { states, digest: None }
}

/// The table one node keeps (rules 1-3).
pub(crate) struct LinkTable {
    me: String,
    kind: LiveKind,
    neighbours: BTreeSet<String>,
    protocol: HashMap<String, Instant>,
    states: BTreeMap<String, LinkState>,
    seq: u64,
    synced: BTreeSet<String>,
    /// The neighbours changed since this node last announced them.
    pending: bool,
    /// When it last announced, and the least time between two announcements (rule 1).
    announced: Option<Instant>,
    gap: Duration,
    /// `[overlay] routing`.
    routing: bool,
}

impl LinkTable {
    /// The table of node `me` on an overlay of `kind`; with `routing` false it announces
    /// nothing and routes everything directly.
    pub(crate) fn new(me: &str, kind: LiveKind, routing: bool) -> Self {
        let seq = SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_millis() as u64);
        Self {
            me: me.to_owned(),
            kind,
            neighbours: BTreeSet::new(),
            protocol: HashMap::new(),
            states: BTreeMap::new(),
            seq,
            synced: BTreeSet::new(),
            pending: true,
            announced: None,
            gap: ANNOUNCE_GAP,
            routing,
        }
    }

    /// [`LinkTable::new`] whose announcements may follow each other after `gap` (tests).
    #[cfg(test)]
    fn with_gap(me: &str, kind: LiveKind, gap: Duration) -> Self {
        Self { gap, ..Self::new(me, kind, true) }
    }

    /// Whether this overlay announces links at all (rule 1).
    pub(crate) fn active(&self) -> bool {
        self.routing && !matches!(self.kind, LiveKind::FullMesh | LiveKind::Amqp)
    }

    /// The overlay's protocol is about to talk to `addr` (rule 2).
    pub(crate) fn touch(&mut self, addr: &str) {
        self.protocol.insert(addr.to_owned(), Instant::now());
        if self.protocol.len() > 4096 {
            self.protocol.retain(|_, t| t.elapsed() < PROTOCOL_WINDOW);
        }
    }

    /// This node's neighbours now; returns what to send to whom: this node's new state to
    /// every neighbour when the set changed, and to each new neighbour this node's state with
    /// the digest of every state it holds (rule 1).
    pub(crate) fn update(&mut self, neighbours: BTreeSet<String>) -> Vec<Outgoing> {
        let mut out = Vec::new();
        if !self.active() {
            self.neighbours = neighbours;
            return out;
        }
        self.pending |= neighbours != self.neighbours;
        self.neighbours = neighbours;
        self.synced.retain(|n| self.neighbours.contains(n));
        let due = self.announced.is_none_or(|t| t.elapsed() >= self.gap);
        if self.pending && due {
            self.pending = false;
            self.announced = Some(Instant::now());
            self.seq += 1;
            let mine = LinkState {
                origin: self.me.clone(),
                seq: self.seq,
                neighbours: self.neighbours.iter().cloned().collect(),
            };
            self.states.insert(self.me.clone(), mine.clone());
            for n in self.neighbours.iter().filter(|n| self.synced.contains(*n)) {
                out.push((n.clone(), batch(vec![mine.clone()])));
            }
        }
        let fresh: Vec<String> = self.neighbours.iter().filter(|n| !self.synced.contains(*n)).cloned().collect();
        if !fresh.is_empty() {
            let digest: Vec<(String, u64)> = self.states.values().map(|s| (s.origin.clone(), s.seq)).collect();
            let mine: Vec<LinkState> = self.states.get(&self.me).cloned().into_iter().collect();
            for n in fresh {
                self.synced.insert(n.clone());
                out.push((n, LinkBatch { states: mine.clone(), digest: Some(digest.clone()) }));
            }
        }
        out
    }

    /// A batch from `from`: keeps the newer states and returns them with the neighbours to
    /// pass them to; to a digest, answers `from` with the states it lacks or holds older
    /// (rule 1).
    pub(crate) fn receive(&mut self, from: &str, got: LinkBatch) -> Vec<Outgoing> {
        let mut out = Vec::new();
        if let Some(digest) = &got.digest {
            let theirs: std::collections::HashMap<&str, u64> = digest.iter().map(|(o, q)| (o.as_str(), *q)).collect();
            let lacking: Vec<LinkState> = self
                .states
                .values()
                .filter(|s| theirs.get(s.origin.as_str()).is_none_or(|q| *q < s.seq))
                .cloned()
                .collect();
            if !lacking.is_empty() {
                out.push((from.to_owned(), batch(lacking)));
            }
        }
        let newer: Vec<LinkState> = got
            .states
            .into_iter()
            .filter(|s| s.origin != self.me && self.states.get(&s.origin).is_none_or(|k| s.seq > k.seq))
            .collect();
        if newer.is_empty() {
            return out;
        }
        for s in &newer {
            self.states.insert(s.origin.clone(), s.clone());
        }
        out.extend(
            self.neighbours
                .iter()
                .filter(|n| n.as_str() != from && self.synced.contains(*n))
                .map(|n| (n.clone(), batch(newer.clone()))),
        );
        out
    }

    /// How many nodes' states this table holds (its own included).
    pub(crate) fn states(&self) -> u64 {
        self.states.len() as u64
    }

    /// Whether this table holds a state announced by `addr` (a node of this overlay).
    pub(crate) fn holds(&self, addr: &str) -> bool {
        self.states.contains_key(addr)
    }

    /// The nodes this table knows of (its own states' origins and their neighbours).
    #[cfg(test)]
    fn known(&self) -> BTreeSet<&str> {
        self.states.values().flat_map(|s| std::iter::once(&s.origin).chain(&s.neighbours)).map(String::as_str).collect()
    }

    /// Rule 2 for the built-in overlays.
    pub(crate) fn route(&self, to: &str) -> Route {
        if !self.active()
            || self.neighbours.contains(to)
            || self.protocol.get(to).is_some_and(|t| t.elapsed() < PROTOCOL_WINDOW)
        {
            return Route::Direct;
        }
        let mentioned = self.states.values().any(|s| s.origin == to || s.neighbours.iter().any(|n| n == to));
        if !mentioned {
            return Route::Direct;
        }
        match self.first_hops().get(to) {
            Some(hop) => Route::Via((*hop).to_owned()),
            None => Route::None,
        }
    }

    /// Breadth first from this node over the announced links: each node reached, with the
    /// first hop toward it (a neighbour is its own).
    fn first_hops(&self) -> HashMap<&str, &str> {
        let mut first: HashMap<&str, &str> = HashMap::new();
        let mut queue: VecDeque<&str> = VecDeque::new();
        for n in &self.neighbours {
            first.insert(n, n);
            queue.push_back(n);
        }
        while let Some(u) = queue.pop_front() {
            let Some(s) = self.states.get(u) else { continue };
            for v in &s.neighbours {
                if v != &self.me && !first.contains_key(v.as_str()) {
                    let hop = first[u];
                    first.insert(v, hop);
                    queue.push_back(v);
                }
            }
        }
        first
    }

    /// How many other nodes a path over the announced links reaches now (0 when not routing).
    pub(crate) fn reachable(&self) -> u64 {
        if self.active() {
            self.first_hops().len() as u64
        } else {
            0
        }
    }
}

/// The router an overlay installs on its node (rule 2).
pub(crate) struct OverlayRouter {
    pub(crate) table: Arc<RwLock<LinkTable>>,
    pub(crate) shared: Arc<Shared>,
}

impl Router for OverlayRouter {
    fn route(&self, to: &str) -> Route {
        let t = self.table.read();
        if let Some(service) = &self.shared.service {
            if t.neighbours.contains(to) || t.protocol.get(to).is_some_and(|x| x.elapsed() < PROTOCOL_WINDOW) {
                return Route::Direct;
            }
            return match service.lock().next_hop(to) {
                Some(h) if h == to => Route::Direct,
                Some(h) => Route::Via(h),
                None => Route::None,
            };
        }
        t.route(to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    fn state(origin: &str, seq: u64, n: &[&str]) -> LinkState {
        LinkState { origin: origin.into(), seq, neighbours: n.iter().map(|s| (*s).to_owned()).collect() }
    }

    fn states(v: Vec<LinkState>) -> LinkBatch {
        batch(v)
    }

    #[test]
    fn rule_1_a_change_goes_to_every_neighbour_and_a_new_neighbour_swaps_what_it_misses() {
        let mut t = LinkTable::with_gap("a", LiveKind::Hyparview, Duration::ZERO);
        t.receive("x", states(vec![state("z", 5, &["y"])]));
        let out = t.update(set(&["b"]));
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].0, "b");
        assert_eq!(out[0].1.states.len(), 1, "b gets a's own state: {out:?}");
        let digest = out[0].1.digest.clone().expect("and a's digest");
        assert!(digest.contains(&("z".to_owned(), 5)), "{digest:?}");
        // b holds z at 5 too and a newer y: it sends back y only.
        let mut b = LinkTable::new("b", LiveKind::Hyparview, true);
        b.update(set(&["a"]));
        b.receive("c", states(vec![state("z", 5, &["y"]), state("y", 2, &["z"])]));
        let back = b.receive("a", out[0].1.clone());
        let to_a: Vec<&LinkState> = back.iter().filter(|(n, _)| n == "a").flat_map(|(_, m)| &m.states).collect();
        assert!(to_a.iter().any(|s| s.origin == "y") && !to_a.iter().any(|s| s.origin == "z"), "{back:?}");
        let out = t.update(set(&["b", "c"]));
        let to: Vec<&str> = out.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(to, vec!["b", "c"], "b hears the change, c gets the state and the digest");
        assert!(out[0].1.digest.is_none() && out[1].1.digest.is_some(), "{out:?}");
        assert!(t.update(set(&["b", "c"])).is_empty(), "no change, nothing sent");
    }

    #[test]
    fn rule_1_changes_within_the_gap_are_announced_together() {
        let mut t = LinkTable::with_gap("a", LiveKind::Hyparview, Duration::from_secs(3600));
        let first = t.update(set(&["b"]));
        assert_eq!(first.len(), 1, "the first announcement goes at once");
        let out = t.update(set(&["b", "c"]));
        assert!(out.iter().all(|(n, m)| n == "c" && m.digest.is_some()), "only c's sync: {out:?}");
        assert!(t.update(set(&["b", "c", "d"])).iter().all(|(n, _)| n == "d"), "still within the gap");
        assert!(t.pending, "the change waits for the gap");
        t.announced = None;
        let out = t.update(set(&["b", "c", "d"]));
        assert_eq!(out.len(), 3, "one announcement of both changes to all three: {out:?}");
        assert_eq!(out[0].1.states[0].neighbours, vec!["b", "c", "d"]);
    }

    #[test]
    fn rule_1_only_newer_states_are_kept_and_passed_on_but_not_back() {
        let mut t = LinkTable::new("a", LiveKind::Static, true);
        t.update(set(&["b", "c"]));
        let out = t.receive("b", states(vec![state("d", 2, &["b"])]));
        assert_eq!(out, vec![("c".to_owned(), states(vec![state("d", 2, &["b"])]))]);
        assert!(t.receive("c", states(vec![state("d", 2, &["b"])])).is_empty(), "seen already");
        assert!(t.receive("c", states(vec![state("d", 1, &[])])).is_empty(), "older");
        assert!(t.receive("c", states(vec![state("a", 99, &[])])).is_empty(), "nobody tells a about itself");
    }

    #[test]
    fn rule_2_neighbours_direct_others_through_the_first_hop_of_a_shortest_path() {
        // a - b - c - d, and a - e - d: d is two hops through... b-c-d is 3, e-d is 2.
        let mut t = LinkTable::new("a", LiveKind::Hyparview, true);
        t.update(set(&["b", "e"]));
        t.receive(
            "b",
            states(vec![state("b", 1, &["a", "c"]), state("c", 1, &["b", "d"]), state("e", 1, &["a", "d"])]),
        );
        t.receive("e", states(vec![state("d", 1, &["c", "e"])]));
        assert_eq!(t.route("b"), Route::Direct);
        assert_eq!(t.route("c"), Route::Via("b".into()));
        assert_eq!(t.route("d"), Route::Via("e".into()));
        assert_eq!(t.route("p"), Route::Direct, "nobody mentions p");
        assert_eq!(t.route("stranger"), Route::Direct, "nobody mentions it: a contact, say");
        t.touch("d");
        assert_eq!(t.route("d"), Route::Direct, "the protocol is talking to it");
        assert!(t.known().contains("d"));
    }

    #[test]
    fn rule_3_a_node_no_path_reaches_has_no_route() {
        let mut t = LinkTable::new("a", LiveKind::ClientServer, true);
        t.update(set(&["s"]));
        t.receive("s", states(vec![state("s", 1, &["a", "c"])]));
        assert_eq!(t.route("c"), Route::Via("s".into()));
        // c died: s announces without it; c's own last state still names s, but no path
        // leads to c any more.
        t.receive("s", states(vec![state("s", 2, &["a"]), state("c", 1, &["s"])]));
        assert_eq!(t.route("c"), Route::None);
    }

    #[test]
    fn routing_off_routes_everything_directly_and_announces_nothing() {
        let mut t = LinkTable::new("a", LiveKind::Hyparview, false);
        assert!(t.update(set(&["b"])).is_empty());
        assert!(t.receive("b", states(vec![state("b", 1, &["a", "c"])])).is_empty() || t.route("c") == Route::Direct);
        assert_eq!(t.route("c"), Route::Direct);
    }

    #[test]
    fn full_mesh_routes_everything_directly_and_announces_nothing() {
        let mut t = LinkTable::new("a", LiveKind::FullMesh, true);
        assert!(t.update(set(&["b"])).is_empty());
        assert_eq!(t.route("z"), Route::Direct);
    }
}
