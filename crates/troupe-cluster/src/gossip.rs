//! The gossiped state: the membership table, the reachability records of every observer, and
//! each member's own published data (receptionist services, global names).
//!
//! Rules (the convergence rule):
//! 1. The state is a join-semilattice: [`Gossip::merge`] is commutative, associative and
//!    idempotent. Members are merged per address by (incarnation, status, up number);
//!    (ties, which only a malformed peer can produce, are broken by the whole record, so the
//!    order stays total);
//!    reachability records per (observer, subject) by (observer incarnation, version); a
//!    member's published data per owner by (incarnation, version). Only a record's owner
//!    bumps its version, so two nodes that received the same updates hold the same state
//!    whatever the order (the "vector clock or equivalent" of the issue: per-entry versions).
//! 2. Removed members stay as tombstones, so a late merge cannot bring them back; a new
//!    incarnation (larger uid) supersedes them.
//! 3. `seen` is the set of nodes known to hold exactly this content. A local change resets it
//!    to `{self}`; a merge that yields the other side's content takes its `seen` plus self;
//!    one that yields content new to both resets it to `{self}`.
//! 4. Convergence: every live member that is reachable is in `seen`, and no live member other
//!    than an exiting one is unreachable. The leader acts only at convergence, so all live
//!    members agree on what it changes.
//! 5. A member is unreachable when any live observer's record for its current incarnation says
//!    so. Records of down or removed observers, or about older incarnations, count for nothing.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::member::{Member, MemberStatus};

/// One observer's verdict on one subject.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Reach {
    /// The observer's incarnation.
    pub observer_uid: u64,
    /// Bumped by the observer at each change.
    pub version: u64,
    /// The subject's incarnation the verdict is about.
    pub subject_uid: u64,
    /// The verdict.
    pub unreachable: bool,
}

/// A published entry: an exported actor (its name on the owner node) and its message type.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Entry {
    /// The actor's export name on the owner's node.
    pub export: String,
    /// The message type's tag hash.
    pub tag: u64,
    /// The message type's tag.
    pub tag_name: String,
    /// Registration order on the owner (older first), for deterministic conflict resolution.
    pub seq: u64,
}

/// What one member publishes: receptionist services and global names.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Owned {
    /// The owner's incarnation.
    pub uid: u64,
    /// Bumped by the owner at each change.
    pub version: u64,
    /// Service key -> registered actors.
    pub services: BTreeMap<String, Vec<Entry>>,
    /// Global name -> actor.
    pub names: BTreeMap<String, Entry>,
}

/// The gossiped state (rules at the top of the module).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gossip {
    /// Address -> member (tombstones included).
    pub members: BTreeMap<String, Member>,
    /// (observer address, subject address) -> record.
    pub reach: BTreeMap<(String, String), Reach>,
    /// Owner address -> published data.
    pub owned: BTreeMap<String, Owned>,
    /// Addresses known to hold this content (rule 3).
    pub seen: BTreeSet<String>,
}

impl Gossip {
    /// Whether two states have the same content (`seen` aside).
    #[must_use]
    pub fn same_content(&self, other: &Gossip) -> bool {
        self.members == other.members && self.reach == other.reach && self.owned == other.owned
    }

    /// Joins `other` into `self` (rule 1); true when the content changed.
    pub fn merge_content(&mut self, other: &Gossip) -> bool {
        let mut changed = false;
        for (addr, m) in &other.members {
            match self.members.get(addr) {
                Some(mine) if (mine.rank(), mine) >= (m.rank(), m) => {}
                _ => {
                    self.members.insert(addr.clone(), m.clone());
                    changed = true;
                }
            }
        }
        for (k, r) in &other.reach {
            match self.reach.get(k) {
                Some(mine) if (mine.observer_uid, mine.version, mine) >= (r.observer_uid, r.version, r) => {}
                _ => {
                    self.reach.insert(k.clone(), r.clone());
                    changed = true;
                }
            }
        }
        for (k, o) in &other.owned {
            match self.owned.get(k) {
                Some(mine) if (mine.uid, mine.version, mine) >= (o.uid, o.version, o) => {}
                _ => {
                    self.owned.insert(k.clone(), o.clone());
                    changed = true;
                }
            }
        }
        changed
    }

    /// Merges a received state into ours and updates `seen` (rule 3); true when our content
    /// changed.
    pub fn receive(&mut self, other: &Gossip, me: &str) -> bool {
        self.receive_full(other, me).0
    }

    /// [`Gossip::receive`], also telling whether our content now equals `other`'s.
    pub fn receive_full(&mut self, other: &Gossip, me: &str) -> (bool, bool) {
        let changed = self.merge_content(other);
        let theirs = self.same_content(other);
        if !changed && theirs {
            self.seen.extend(other.seen.iter().cloned());
        } else if theirs {
            self.seen.clone_from(&other.seen);
        } else if changed {
            self.seen.clear();
        }
        self.seen.insert(me.to_owned());
        (changed, theirs)
    }

    /// Whether receiving `other` would change nothing here: same content, and everything it
    /// has seen we know of.
    #[must_use]
    pub fn absorbs(&self, other: &Gossip) -> bool {
        self.same_content(other) && other.seen.is_subset(&self.seen)
    }

    /// Marks a local change (rule 3).
    pub fn touched(&mut self, me: &str) {
        self.seen.clear();
        self.seen.insert(me.to_owned());
    }

    /// The member at `addr`, tombstones included.
    #[must_use]
    pub fn member(&self, addr: &str) -> Option<&Member> {
        self.members.get(addr)
    }

    /// Live members (neither down nor removed).
    pub fn live(&self) -> impl Iterator<Item = &Member> {
        self.members.values().filter(|m| m.status.is_live())
    }

    /// Whether the member at `addr` is unreachable (rule 5).
    #[must_use]
    pub fn is_unreachable(&self, addr: &str) -> bool {
        let Some(subject) = self.members.get(addr) else { return false };
        self.reach.iter().any(|((obs, sub), r)| sub == addr && self.counts(obs, r, subject))
    }

    fn counts(&self, observer: &str, r: &Reach, subject: &Member) -> bool {
        r.unreachable
            && r.subject_uid == subject.id.uid
            && self.members.get(observer).is_some_and(|o| o.status.is_live() && o.id.uid == r.observer_uid)
    }

    /// Addresses of live unreachable members (one pass over the records).
    #[must_use]
    pub fn unreachable(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for ((obs, sub), r) in &self.reach {
            if !r.unreachable || out.contains(sub) {
                continue;
            }
            if let Some(subject) = self.members.get(sub) {
                if subject.status.is_live() && self.counts(obs, r, subject) {
                    out.insert(sub.clone());
                }
            }
        }
        out
    }

    /// The live members whose current verdict on the member at `addr` is "unreachable", by
    /// address (what a `member unreachable` event names).
    #[must_use]
    pub fn observers_of(&self, addr: &str) -> Vec<String> {
        let Some(subject) = self.members.get(addr) else { return Vec::new() };
        self.reach
            .iter()
            .filter(|((obs, sub), r)| sub == addr && self.counts(obs, r, subject))
            .map(|((obs, _), _)| obs.clone())
            .collect()
    }

    /// Published data of live members, current incarnation only (what still counts).
    pub fn live_owned(&self) -> impl Iterator<Item = (&String, &Owned)> {
        self.owned
            .iter()
            .filter(|(owner, o)| self.members.get(*owner).is_some_and(|m| m.status.is_live() && m.id.uid == o.uid))
    }

    /// The member that keeps a global name: among live members publishing it, the oldest
    /// (smallest age key), then the earliest registration, then the smallest address.
    #[must_use]
    pub fn name_owner(&self, name: &str) -> Option<(String, Entry)> {
        self.live_owned()
            .filter_map(|(owner, o)| {
                let e = o.names.get(name)?;
                Some((self.members.get(owner)?.age_key(), e.seq, owner, e))
            })
            .min_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)))
            .map(|(_, _, owner, e)| (owner.clone(), e.clone()))
    }

    /// Rule 4.
    #[must_use]
    pub fn converged(&self) -> bool {
        let unreachable = self.unreachable();
        self.live().all(|m| {
            if unreachable.contains(&m.id.addr) {
                m.status == MemberStatus::Exiting
            } else {
                self.seen.contains(&m.id.addr)
            }
        })
    }

    /// The leader: the smallest address among reachable live members that are up or leaving,
    /// or, when there is none, among reachable joining ones.
    #[must_use]
    pub fn leader(&self) -> Option<String> {
        let unreachable = self.unreachable();
        let reachable = |m: &&Member| !unreachable.contains(&m.id.addr);
        self.live()
            .filter(reachable)
            .find(|m| matches!(m.status, MemberStatus::Up | MemberStatus::Leaving))
            .or_else(|| self.live().filter(reachable).find(|m| m.status == MemberStatus::Joining))
            .map(|m| m.id.addr.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::member::NodeId;
    use proptest::prelude::*;

    fn member(addr: u8, uid: u64, status: u8, up: u64) -> Member {
        let status = [
            MemberStatus::Joining,
            MemberStatus::Up,
            MemberStatus::Leaving,
            MemberStatus::Exiting,
            MemberStatus::Down,
            MemberStatus::Removed,
        ][usize::from(status % 6)];
        Member { id: NodeId { addr: format!("n{addr}"), name: format!("n{addr}"), uid }, status, up_number: up }
    }

    fn gossip() -> impl Strategy<Value = Gossip> {
        let m = (0u8..4, 1u64..3, 0u8..6, 0u64..3).prop_map(|(a, u, s, up)| member(a, u, s, up));
        let r = (0u8..4, 0u8..4, 1u64..3, 0u64..4, 1u64..3, any::<bool>());
        (proptest::collection::vec(m, 0..6), proptest::collection::vec(r, 0..6)).prop_map(|(ms, rs)| {
            let mut g = Gossip::default();
            for m in ms {
                let mut one = Gossip::default();
                one.members.insert(m.id.addr.clone(), m);
                g.merge_content(&one);
            }
            for (o, s, ou, v, su, un) in rs {
                let mut one = Gossip::default();
                one.reach.insert(
                    (format!("n{o}"), format!("n{s}")),
                    Reach { observer_uid: ou, version: v, subject_uid: su, unreachable: un },
                );
                g.merge_content(&one);
            }
            g
        })
    }

    fn merged(a: &Gossip, b: &Gossip) -> Gossip {
        let mut x = a.clone();
        x.merge_content(b);
        x
    }

    proptest! {
        /// Rule 1: merge is commutative, associative and idempotent.
        #[test]
        fn merge_is_a_semilattice_join(a in gossip(), b in gossip(), c in gossip()) {
            prop_assert!(merged(&a, &b).same_content(&merged(&b, &a)));
            prop_assert!(merged(&merged(&a, &b), &c).same_content(&merged(&a, &merged(&b, &c))));
            prop_assert!(merged(&a, &a).same_content(&a));
        }
    }

    #[test]
    fn seen_follows_rule_3() {
        let mut a = Gossip::default();
        a.members.insert("a".into(), member(0, 1, 1, 1));
        a.touched("a");
        let mut b = a.clone();
        b.seen = ["b".to_owned()].into();
        assert!(!b.receive(&a, "b"), "same content: no change");
        assert_eq!(b.seen.len(), 2, "seen sets are joined");
        let mut c = Gossip::default();
        c.members.insert("c".into(), member(2, 1, 0, 0));
        assert!(b.receive(&c, "b"));
        assert_eq!(b.seen, ["b".to_owned()].into(), "new to both: only self has seen it");
    }

    #[test]
    fn a_tombstone_is_not_resurrected_but_a_new_incarnation_wins() {
        let mut g = Gossip::default();
        g.members.insert("n0".into(), member(0, 1, 5, 1));
        let mut old = Gossip::default();
        old.members.insert("n0".into(), member(0, 1, 1, 1));
        assert!(!g.merge_content(&old));
        let mut new = Gossip::default();
        new.members.insert("n0".into(), member(0, 2, 0, 0));
        assert!(g.merge_content(&new));
        assert_eq!(g.members["n0"].status, MemberStatus::Joining);
    }

    #[test]
    fn unreachable_counts_only_live_observers_and_the_current_incarnation() {
        let mut g = Gossip::default();
        for i in 0..3 {
            g.members.insert(format!("n{i}"), member(i, 1, 1, u64::from(i) + 1));
        }
        let rec = |su| Reach { observer_uid: 1, version: 1, subject_uid: su, unreachable: true };
        g.reach.insert(("n0".into(), "n1".into()), rec(1));
        assert!(g.is_unreachable("n1"));
        g.reach.insert(("n0".into(), "n1".into()), Reach { version: 2, ..rec(0) });
        assert!(!g.is_unreachable("n1"), "about an older incarnation");
        g.reach.insert(("n2".into(), "n1".into()), rec(1));
        g.members.get_mut("n2").unwrap().status = MemberStatus::Down;
        assert!(!g.is_unreachable("n1"), "the observer is down");
        g.members.get_mut("n2").unwrap().status = MemberStatus::Up;
        assert!(g.is_unreachable("n1"));
        g.seen = ["n0".to_owned(), "n2".to_owned()].into();
        assert!(!g.converged(), "an unreachable up member blocks convergence");
        g.members.get_mut("n1").unwrap().status = MemberStatus::Down;
        assert!(g.converged(), "once it is down, the others having seen it is enough");
        assert_eq!(g.leader().as_deref(), Some("n0"));
    }
}
