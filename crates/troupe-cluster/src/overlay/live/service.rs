//! The peer service contract ([`PeerService`]): what a user-defined overlay implements in its
//! own crate so that [`super::Overlay`] runs it on a real node, selected by name in
//! `[overlay] kind` once it is in an [`super::OverlayRegistry`].
//!
//! A service is a state machine without I/O, like the built-in HyParView: the overlay's task
//! calls it and does the sending, the connecting and the routing of application messages.
//!
//! Rules of the contract:
//! 1. One task owns the service and calls it one method at a time; [`super::Overlay::send`]
//!    also asks [`PeerService::next_hop`] on the caller's thread (under the same lock), so
//!    every method must return quickly and never block. Work that waits (a timer, a retry) is
//!    done in [`PeerService::tick`], called every `tick_ms`.
//! 2. [`PeerService::join`] is called once, at start, with the `[overlay] contacts` entries as
//!    written (`name@host:port` or `host:port`); [`PeerService::leave`] once, at stop, and what
//!    it sends is handed to the node layer before the overlay's actor goes.
//! 3. Messages between services travel through [`Outbox::send`] to the same overlay kind on the
//!    other node, whose [`PeerService::receive`] gets them with the sender's address.
//! 4. Membership events: after every call the task compares [`PeerService::neighbours`] with
//!    the set before it and publishes a `NeighbourUp` or `NeighbourDown`
//!    ([`super::OverlayEvent`]) per change, so events never disagree with `neighbours()`. A
//!    new neighbour is dialled and kept connected; a connection to a node that is not a
//!    neighbour is closed once idle (`driver/mod.rs` rule 4).
//! 5. A neighbour whose connection drops, or a node that does not answer, is reported through
//!    [`PeerService::peer_failed`].
//! 6. Routing: a message for another node goes to [`PeerService::next_hop`]`(to)`; `None` means
//!    no route: at the origin [`super::Overlay::send`] fails with
//!    [`crate::ErrorKind::NoRoute`], on a node in between the message is counted
//!    (`OverlayStatus::unroutable`), logged and published as an `Unroutable` event. A
//!    broadcast goes to [`PeerService::broadcast_to`] (by default every neighbour but the one
//!    it came from); every node handles a message once and stops it after `max_hops`.

use std::collections::BTreeSet;

use super::config::OverlayConfig;

/// What a service asks the overlay's task to send (rule 3).
#[derive(Debug, Default)]
pub struct Outbox {
    pub(crate) sends: Vec<(String, Vec<u8>)>,
}

impl Outbox {
    /// Sends `bytes` to the service of the same overlay on the node at `to` (`host:port`, or
    /// `name@host:port`: the name is dropped); the node is dialled if need be.
    pub fn send(&mut self, to: impl Into<String>, bytes: Vec<u8>) {
        let to: String = to.into();
        let addr = super::config::addr_of(&to).to_owned();
        self.sends.push((addr, bytes));
    }

    /// What was asked so far, in order (for a service's own unit tests).
    #[must_use]
    pub fn sent(&self) -> &[(String, Vec<u8>)] {
        &self.sends
    }
}

/// What a factory is told when the overlay starts on a node.
#[derive(Debug)]
#[non_exhaustive]
pub struct ServiceContext<'a> {
    /// This node's address (`host:port`), as other nodes know it.
    pub me: &'a str,
    /// This node's name.
    pub name: &'a str,
    /// The node's `[overlay]` section (`contacts`, `peers`, `tick_ms`, ...).
    pub config: &'a OverlayConfig,
}

/// The peer service contract of a user-defined overlay: join, leave, neighbours, next hop and
/// (through [`PeerService::neighbours`], rule 4) membership events. Object-safe: the registry
/// holds `Box<dyn PeerService>`; `Send` so the overlay's tokio task can own it. The module's
/// rules say who calls what and when.
///
/// A star: every node talks only to the hub (the first contact); the hub talks to every node
/// that said hello.
///
/// ```
/// use std::collections::BTreeSet;
/// use troupe_cluster::overlay::live::{addr_of, OverlayRegistry, Outbox, PeerService};
///
/// #[derive(Default)]
/// struct Star {
///     hub: Option<String>,
///     spokes: BTreeSet<String>,
/// }
///
/// impl PeerService for Star {
///     fn join(&mut self, seeds: &[String], out: &mut Outbox) {
///         self.hub = seeds.first().map(|s| addr_of(s).to_owned());
///         if let Some(hub) = &self.hub {
///             out.send(hub.clone(), b"hello".to_vec());
///         }
///     }
///     fn receive(&mut self, from: &str, _bytes: &[u8], _out: &mut Outbox) {
///         self.spokes.insert(from.to_owned()); // only the hub hears hellos
///     }
///     fn peer_failed(&mut self, addr: &str, _out: &mut Outbox) {
///         self.spokes.remove(addr);
///     }
///     fn neighbours(&self) -> BTreeSet<String> {
///         self.hub.iter().chain(&self.spokes).cloned().collect()
///     }
///     fn next_hop(&self, to: &str) -> Option<String> {
///         if self.spokes.contains(to) { Some(to.to_owned()) } else { self.hub.clone() }
///     }
/// }
///
/// let mut overlays = OverlayRegistry::new();
/// overlays.register("star", |_ctx| Ok(Box::new(Star::default()) as Box<dyn PeerService>)).unwrap();
/// let t: toml::Table = toml::from_str("kind = \"star\"\ncontacts = [\"hub@127.0.0.1:7000\"]").unwrap();
/// let cfg = troupe_cluster::overlay::live::OverlayConfig::from_table_with(&t, &overlays).unwrap();
/// assert_eq!(cfg.kind, "star");
/// // then: Overlay::start_with(&node, cfg, &overlays).await
/// ```
pub trait PeerService: Send + 'static {
    /// Starts this node's membership from `seeds`, the `[overlay] contacts` (rule 2).
    fn join(&mut self, seeds: &[String], out: &mut Outbox);

    /// Leaves: what it sends (goodbyes) goes out before the overlay stops (rule 2). By
    /// default nothing.
    fn leave(&mut self, out: &mut Outbox) {
        let _ = out;
    }

    /// This node's neighbours now (addresses): the nodes it keeps connections to.
    fn neighbours(&self) -> BTreeSet<String>;

    /// The node to pass a message for `to` (an address, never this node's) to, or `None` when
    /// this node knows no path there (rule 6).
    fn next_hop(&self, to: &str) -> Option<String>;

    /// A message from the service on the node at `from` (rule 3). By default ignored.
    fn receive(&mut self, from: &str, bytes: &[u8], out: &mut Outbox) {
        let _ = (from, bytes, out);
    }

    /// The neighbour (or probed node) at `addr` failed (rule 5). By default ignored.
    fn peer_failed(&mut self, addr: &str, out: &mut Outbox) {
        let _ = (addr, out);
    }

    /// Called every `tick_ms` (rule 1). By default nothing.
    fn tick(&mut self, out: &mut Outbox) {
        let _ = out;
    }

    /// Where a broadcast that came from `from` (`None`: this node sent it) goes next. By
    /// default every neighbour but `from` (flooding; each node handles it once).
    fn broadcast_to(&self, from: Option<&str>) -> Vec<String> {
        self.neighbours().into_iter().filter(|n| Some(n.as_str()) != from).collect()
    }
}
