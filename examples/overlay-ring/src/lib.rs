//! A ring overlay written outside Troupe with only its public API
//! (`troupe_cluster::overlay::live::PeerService`): the members sorted by node name form a
//! ring; a node's neighbours are its successor and predecessor, and a message for a member
//! that is not a neighbour goes to the successor, which passes it on, hop by hop.
//!
//! Rules of the ring:
//! 1. Members are learned by gossip: a node joining sends the members it knows (itself) to its
//!    seeds; a node that learns a member it did not know sends its list to every member, one
//!    that hears a list lacking some of its members answers with its own, and every
//!    `GOSSIP_TICKS` ticks each node sends its list to its successor (anti-entropy).
//! 2. The ring is the members sorted by (name, address); a node's neighbours are the ones
//!    before and after it (one neighbour in a ring of two, none alone).
//! 3. Next hop toward `to`: `to` itself when it is a neighbour, else the successor; `None`
//!    when `to` is not a member (the send fails with `ErrorKind::NoRoute`).
//! 4. A member that leaves (it says `Leave` to its neighbours) or fails (the overlay reports
//!    it) is removed for good: the lists carry the departed too, so gossip does not bring it
//!    back. A restarted node joins again under a new address (port 0 gives one).
//! 5. While alone, a node re-sends its join to its seeds every `GOSSIP_TICKS` ticks.
//!
//! `tests/ring.rs` checks them on nodes on loopback; `main.rs` shows a run.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;
use troupe_cluster::overlay::live::{
    addr_of, Outbox, Overlay, OverlayConfig, OverlayRegistry, PeerService, ServiceContext,
};
use troupe_cluster::Error;
use troupe_remote::{Node, NodeConfig};

/// The name the ring is registered under (`[overlay] kind = "ring"`).
pub const KIND: &str = "ring";

/// Ticks between two anti-entropy rounds (rule 1) and two joins while alone (rule 5).
pub const GOSSIP_TICKS: u32 = 20;

/// What ring services say to each other.
#[derive(Debug, Serialize, Deserialize)]
enum RingMsg {
    /// The members the sender knows (address -> name), and those that left (rules 1, 4).
    Members { members: BTreeMap<String, String>, left: BTreeSet<String> },
    /// The sender leaves (rule 4).
    Leave,
}

/// One node's ring.
#[derive(Debug)]
pub struct Ring {
    me: String,
    members: BTreeMap<String, String>,
    left: BTreeSet<String>,
    seeds: Vec<String>,
    ticks: u32,
}

impl Ring {
    /// The ring of the node called `name` at `me`, alone so far.
    #[must_use]
    pub fn new(name: &str, me: &str) -> Self {
        let members = BTreeMap::from([(me.to_owned(), name.to_owned())]);
        Self { me: me.to_owned(), members, left: BTreeSet::new(), seeds: Vec::new(), ticks: 0 }
    }

    /// The members' addresses in ring order (rule 2).
    #[must_use]
    pub fn order(&self) -> Vec<String> {
        let mut v: Vec<(&String, &String)> = self.members.iter().map(|(a, n)| (n, a)).collect();
        v.sort();
        v.into_iter().map(|(_, a)| a.clone()).collect()
    }

    fn around(&self) -> Option<(String, String)> {
        let order = self.order();
        if order.len() < 2 {
            return None;
        }
        let i = order.iter().position(|a| *a == self.me)?;
        let succ = order[(i + 1) % order.len()].clone();
        let pred = order[(i + order.len() - 1) % order.len()].clone();
        Some((pred, succ))
    }

    fn list(&self) -> Vec<u8> {
        let m = RingMsg::Members { members: self.members.clone(), left: self.left.clone() };
        serde_json::to_vec(&m).unwrap_or_default()
    }

    fn tell_all(&self, out: &mut Outbox) {
        for a in self.members.keys().filter(|a| **a != self.me) {
            out.send(a.clone(), self.list());
        }
    }

    fn remove(&mut self, addr: &str) {
        if addr != self.me {
            self.members.remove(addr);
            self.left.insert(addr.to_owned());
        }
    }
}

impl PeerService for Ring {
    fn join(&mut self, seeds: &[String], out: &mut Outbox) {
        self.seeds = seeds.iter().map(|s| addr_of(s).to_owned()).filter(|s| *s != self.me).collect();
        for s in &self.seeds {
            out.send(s.clone(), self.list());
        }
    }

    fn leave(&mut self, out: &mut Outbox) {
        for n in self.neighbours() {
            out.send(n, serde_json::to_vec(&RingMsg::Leave).unwrap_or_default());
        }
    }

    fn neighbours(&self) -> BTreeSet<String> {
        self.around().map(|(p, s)| BTreeSet::from([p, s])).unwrap_or_default()
    }

    fn next_hop(&self, to: &str) -> Option<String> {
        if !self.members.contains_key(to) || to == self.me {
            return None;
        }
        let (pred, succ) = self.around()?;
        Some(if to == pred { pred } else { succ })
    }

    fn receive(&mut self, from: &str, bytes: &[u8], out: &mut Outbox) {
        match serde_json::from_slice::<RingMsg>(bytes) {
            Ok(RingMsg::Members { members, left }) => {
                let knew_fewer = self.members.keys().any(|a| !members.contains_key(a))
                    || self.left.iter().any(|a| !left.contains(a));
                let mut learned = false;
                for a in left {
                    if a != self.me && self.left.insert(a.clone()) {
                        self.members.remove(&a);
                        learned = true;
                    }
                }
                for (a, n) in members {
                    if !self.left.contains(&a) && !self.members.contains_key(&a) {
                        self.members.insert(a, n);
                        learned = true;
                    }
                }
                if learned {
                    self.tell_all(out);
                } else if knew_fewer {
                    out.send(from, self.list());
                }
            }
            Ok(RingMsg::Leave) => self.remove(from),
            Err(e) => tracing::warn!("ring: an undecodable message from {from}: {e}"),
        }
    }

    fn peer_failed(&mut self, addr: &str, _out: &mut Outbox) {
        self.remove(addr);
    }

    fn tick(&mut self, out: &mut Outbox) {
        self.ticks += 1;
        if self.ticks < GOSSIP_TICKS {
            return;
        }
        self.ticks = 0;
        match self.around() {
            Some((_, succ)) => out.send(succ, self.list()),
            None => {
                for s in &self.seeds {
                    out.send(s.clone(), self.list());
                }
            }
        }
    }
}

/// Registers the ring as `kind = "ring"` in `overlays`.
pub fn register(overlays: &mut OverlayRegistry) -> Result<(), Error> {
    overlays
        .register(KIND, |ctx: &ServiceContext<'_>| Ok(Box::new(Ring::new(ctx.name, ctx.me)) as Box<dyn PeerService>))?;
    Ok(())
}

/// A node called `name` on loopback running the ring, joining through `seed` (none: the first).
pub async fn start_member(name: &str, secret: &str, seed: Option<&str>) -> Result<(Node, Overlay), Error> {
    let mut overlays = OverlayRegistry::new();
    register(&mut overlays)?;
    let node = Node::start(NodeConfig::new(name, secret)).await?;
    let contacts = seed.map(|s| format!("\"{s}\"")).unwrap_or_default();
    let text = format!("kind = \"{KIND}\"\ncontacts = [{contacts}]\ntick_ms = 50");
    let table: toml::Table = toml::from_str(&text).expect("the section is TOML");
    let cfg = OverlayConfig::from_table_with(&table, &overlays)?;
    let overlay = Overlay::start_with(&node, cfg, &overlays).await?;
    Ok((node, overlay))
}

/// Waits (at most `limit`) until `overlay`'s neighbours are `want`, woken by its neighbour
/// events; returns the last neighbours seen either way.
pub async fn wait_neighbours(
    overlay: &Overlay,
    want: &BTreeSet<String>,
    limit: Duration,
) -> Result<Vec<String>, Error> {
    let mut events = overlay.events();
    let end = tokio::time::Instant::now() + limit;
    loop {
        let now = overlay.neighbours().await?;
        if now.iter().cloned().collect::<BTreeSet<_>>() == *want || tokio::time::Instant::now() >= end {
            return Ok(now);
        }
        match tokio::time::timeout_at(end, events.recv()).await {
            Ok(Ok(_) | Err(broadcast::error::RecvError::Lagged(_))) | Err(_) => {}
            Ok(Err(broadcast::error::RecvError::Closed)) => return Ok(now),
        }
    }
}

/// The neighbours each of `addrs` should have once they all form one ring, in their order
/// (the names sort as the addresses are given).
#[must_use]
pub fn expected_neighbours(addrs: &[String]) -> Vec<BTreeSet<String>> {
    let n = addrs.len();
    (0..n)
        .map(|i| {
            if n < 2 {
                BTreeSet::new()
            } else {
                BTreeSet::from([addrs[(i + n - 1) % n].clone(), addrs[(i + 1) % n].clone()])
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring_of(me: &str, members: &[(&str, &str)]) -> Ring {
        let mut r = Ring::new(members.iter().find(|(_, a)| *a == me).map_or("?", |(n, _)| n), me);
        for (n, a) in members {
            r.members.insert((*a).to_owned(), (*n).to_owned());
        }
        r
    }

    const FOUR: [(&str, &str); 4] = [("n1", "h:4"), ("n2", "h:3"), ("n3", "h:2"), ("n4", "h:1")];

    #[test]
    fn rule_2_the_ring_is_in_name_order_and_neighbours_are_both_sides() {
        let r = ring_of("h:4", &FOUR);
        assert_eq!(r.order(), ["h:4", "h:3", "h:2", "h:1"], "by name, not by address");
        assert_eq!(r.neighbours(), BTreeSet::from(["h:1".to_owned(), "h:3".to_owned()]));
        assert!(Ring::new("alone", "h:9").neighbours().is_empty());
    }

    #[test]
    fn rule_3_next_hop_is_the_neighbour_itself_else_the_successor_and_none_for_strangers() {
        let r = ring_of("h:4", &FOUR);
        assert_eq!(r.next_hop("h:3").as_deref(), Some("h:3"));
        assert_eq!(r.next_hop("h:1").as_deref(), Some("h:1"));
        assert_eq!(r.next_hop("h:2").as_deref(), Some("h:3"), "n3 is two hops on, through n2");
        assert_eq!(r.next_hop("h:7"), None);
    }

    #[test]
    fn rule_4_a_member_that_left_is_not_gossiped_back() {
        let mut r = ring_of("h:4", &FOUR);
        let mut out = Outbox::default();
        r.receive("h:3", &serde_json::to_vec(&RingMsg::Leave).unwrap(), &mut out);
        assert_eq!(r.next_hop("h:3"), None);
        let stale = ring_of("h:1", &FOUR);
        r.receive("h:1", &stale.list(), &mut out);
        assert!(!r.members.contains_key("h:3"), "the stale list does not bring it back");
        assert!(!out.sent().is_empty(), "the sender knew of no departure: it is told (rule 1)");
    }
}
