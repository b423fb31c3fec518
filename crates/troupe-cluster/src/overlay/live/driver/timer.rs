//! The overlay driver's timer work (rules 4, 7 and 10 of `driver/mod.rs`): the protocols'
//! ticks, joining through contacts while alone, the full mesh's anti-entropy `Hello`, and
//! closing connections to non-neighbours; and the status snapshot.

use std::time::{Duration, Instant};

use rand::seq::IteratorRandom;

use super::{Driver, JOIN_RETRY};

/// `links.rs` rule 4: the least time a routed session stays up unused.
const ROUTED_IDLE: Duration = Duration::from_secs(5);
use crate::overlay::live::config::{addr_of, LiveKind};
use crate::overlay::live::wire::OverlayStatus;

impl Driver {
    /// Rules 4, 7 and 10, and the protocols' timers.
    pub(super) fn tick(&mut self) {
        let now = self.now_ms();
        if let Some(hv) = &mut self.hv {
            let mut out = Vec::new();
            hv.tick(now, &mut self.rng, &mut out);
            self.run_hv(out);
        }
        if let Some(pt) = &mut self.pt {
            let mut out = Vec::new();
            pt.tick(now, &mut out);
            self.run_pt(out);
        }
        self.service(|s, out| s.tick(out));
        self.announce();
        let lonely = match self.kind {
            LiveKind::FullMesh => self.members.is_empty(),
            LiveKind::Hyparview => self.hv.as_ref().is_some_and(|h| h.active().is_empty()),
            _ => false,
        };
        let contacts: Vec<String> =
            self.cfg.contacts.iter().map(|c| addr_of(c).to_owned()).filter(|c| *c != self.me).collect();
        if lonely && !contacts.is_empty() && Instant::now() >= self.next_join {
            self.next_join = Instant::now() + JOIN_RETRY;
            let c = contacts[self.contact_next % contacts.len()].clone();
            self.contact_next += 1;
            match &mut self.hv {
                Some(hv) => {
                    let mut out = Vec::new();
                    hv.join(&c, &mut out);
                    self.run_hv(out);
                }
                None => self.hello(&c),
            }
        }
        if self.kind != LiveKind::FullMesh {
            self.sweep();
        } else if Instant::now() >= self.next_gossip {
            self.next_gossip = Instant::now() + Duration::from_millis(self.cfg.shuffle_interval_ms);
            if let Some(m) = self.members.iter().choose(&mut self.rng).cloned() {
                self.hello(&m);
            }
        }
    }

    /// Rule 4.
    fn sweep(&mut self) {
        let grace = Duration::from_millis(self.cfg.tick_ms * 4).max(Duration::from_millis(500));
        let neighbours = self.neighbours();
        let idle = Duration::from_millis(self.cfg.tick_ms * 40).max(ROUTED_IDLE);
        let peers = self.node.peers();
        self.routed_idle.retain(|a, _| peers.iter().any(|p| p.addr == *a && p.via.is_some()));
        for p in peers {
            if neighbours.contains(&p.addr) || self.kept.contains(&p.addr) {
                continue;
            }
            // `links.rs` rule 4: a routed session is closed once unused for `idle`, with no
            // monitor or link across it; a session carrying routed connections stays.
            if p.via.is_some() {
                let busy = self.node.session_use(&p.addr).is_none_or(|(used, relations)| used || relations > 0);
                let since = self.routed_idle.entry(p.addr.clone()).or_insert_with(Instant::now);
                if busy {
                    *since = Instant::now();
                } else if since.elapsed() >= idle {
                    self.routed_idle.remove(&p.addr);
                    if self.node.disconnect(&p.addr) {
                        self.swept += 1;
                    }
                }
                continue;
            }
            if self.node.tunnels_through(&p.addr) > 0 {
                continue;
            }
            if !self.last_used.contains_key(&p.addr) && self.is_overlay_node(&p.addr) {
                // A node of this overlay connected on a session the overlay never talked on
                // (it dialled this node and sent only link states, which do not count, from an
                // active view that still lists this node): its clock starts now, so it is swept
                // too, and that node, seeing the connection go, heals its own view.
                self.last_used.insert(p.addr.clone(), Instant::now());
            }
            if self.last_used.get(&p.addr).is_some_and(|t| t.elapsed() >= grace) {
                self.last_used.remove(&p.addr);
                self.refs.remove(&p.addr);
                if self.node.disconnect(&p.addr) {
                    self.swept += 1;
                }
            }
        }
    }

    /// Rule 4's "overlay node": one in HyParView's passive view, or whose link state this
    /// node holds. A connection from anything else is a non-overlay client's, left alone.
    fn is_overlay_node(&self, addr: &str) -> bool {
        self.hv.as_ref().is_some_and(|h| h.passive().iter().any(|a| a == addr)) || self.links.read().holds(addr)
    }

    pub(super) fn status(&self) -> OverlayStatus {
        let sorted = |v: &mut Vec<String>| v.sort();
        let (routed, direct): (Vec<_>, Vec<_>) = self.node.peers().into_iter().partition(|p| p.via.is_some());
        let mut connected: Vec<String> = direct.into_iter().map(|p| p.addr).collect();
        sorted(&mut connected);
        let mut routed: Vec<String> = routed.into_iter().map(|p| p.addr).collect();
        sorted(&mut routed);
        let mut passive: Vec<String> = self.hv.as_ref().map(|h| h.passive().to_vec()).unwrap_or_default();
        sorted(&mut passive);
        OverlayStatus {
            kind: self.shared.name.clone(),
            me: self.me.clone(),
            neighbours: self.neighbours().into_iter().collect(),
            connected,
            routed,
            link_states: self.links.read().states(),
            reachable: self.links.read().reachable(),
            passive,
            eager: self.pt.as_ref().map(|p| p.eager().iter().cloned().collect()).unwrap_or_default(),
            delivered: self.delivered,
            forwarded: self.forwarded,
            swept: self.swept,
            unroutable: self.shared.unroutable.load(std::sync::atomic::Ordering::Relaxed),
        }
    }
}
