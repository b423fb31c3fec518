//! The leader's actions at convergence (rule 6 of the engine) and the resolution of global
//! name conflicts.

use crate::member::MemberStatus;
use crate::wire::ClusterEvent;

use super::{Engine, Out};

impl Engine {
    pub(super) fn leader_actions(&mut self) {
        if self.leader_gen == self.gen {
            return;
        }
        self.leader_gen = self.gen;
        if !self.gossip.converged() || self.gossip.leader().as_deref() != Some(self.me.addr.as_str()) {
            return;
        }
        let mut next_up = self.gossip.members.values().map(|m| m.up_number).max().unwrap_or(0);
        let mut moves = Vec::new();
        for m in self.gossip.members.values() {
            let to = match m.status {
                MemberStatus::Joining => MemberStatus::Up,
                MemberStatus::Leaving => MemberStatus::Exiting,
                MemberStatus::Exiting | MemberStatus::Down => MemberStatus::Removed,
                MemberStatus::Up | MemberStatus::Removed => continue,
            };
            let up = if to == MemberStatus::Up {
                next_up += 1;
                next_up
            } else {
                m.up_number
            };
            moves.push((m.id.addr.clone(), to, up));
        }
        if moves.is_empty() {
            return;
        }
        let g = gm!(self);
        for (addr, to, up) in moves {
            if let Some(m) = g.members.get_mut(&addr) {
                m.status = to;
                m.up_number = up;
            }
        }
        gm!(self).touched(&self.me.addr);
        self.changed();
    }

    /// The member that keeps a global name ([`crate::Gossip::name_owner`]).
    #[must_use]
    pub fn name_owner(&self, name: &str) -> Option<(String, crate::gossip::Entry)> {
        self.gossip.name_owner(name)
    }

    /// Drops this node's registrations of names another member keeps, and reports each.
    pub(super) fn names_check(&mut self, out: &mut Vec<Out>) {
        let mine: Vec<String> = self.names.keys().cloned().collect();
        for name in mine {
            if let Some((winner, _)) = self.name_owner(&name) {
                if winner != self.me.addr
                    && self.gossip.owned.get(&self.me.addr).is_some_and(|o| o.names.contains_key(&name))
                {
                    self.names.remove(&name);
                    out.push(Out::Event(ClusterEvent::NameConflict { name, winner, loser: self.me.addr.clone() }));
                }
            }
        }
    }
}
