//! Downing (rule 7 of the engine; Akka's split brain resolver as the reference).
//!
//! Rules:
//! 1. Nothing is downed unless a strategy is configured.
//! 2. A decision is taken only when some live member is unreachable and the set of live
//!    members, their statuses and the set of unreachable ones stayed the same for
//!    `stable_after_ms`.
//! 3. This node's side is the live members it does not see as unreachable (itself included);
//!    the other side is the unreachable ones. keep-majority: the larger side survives; on a
//!    tie, the side holding the smallest address. static-quorum: a side of at least
//!    `quorum_size` survives. keep-oldest: the side holding the oldest member survives; with
//!    `down_if_alone`, an oldest member alone on its side loses to a larger other side.
//! 4. A surviving side's leader marks every member of the other side down. A losing node marks
//!    itself down (each node of the losing side does the same), so the two sides never both
//!    stay up.
//!
//! Each decision that downs someone is a WARN `tracing` event, `downing decision` (target
//! under `troupe_cluster`): `node` (this node), `strategy`, `side` (`surviving`: this side's
//! leader downs the other side; `losing`: this node downs itself), `kept` and `downed`
//! (comma-separated addresses).

use std::collections::BTreeSet;

use crate::config::Downing;
use crate::ring::stable_hash;

use super::Engine;

/// What rule 2 watches.
#[derive(Clone, Debug, Default)]
pub(super) struct Stability {
    fingerprint: u64,
    since: u64,
    /// The content generation the fingerprint was taken at (it depends on content only).
    at_cgen: u64,
    /// Whether some live member was unreachable then.
    any_unreachable: bool,
}

/// Whether this node's side survives (rule 3).
pub(crate) fn survives(
    strategy: Downing,
    mine: &BTreeSet<(u64, String)>,
    other: &BTreeSet<(u64, String)>,
    quorum: usize,
    down_if_alone: bool,
) -> bool {
    match strategy {
        Downing::Off => true,
        Downing::KeepMajority => {
            if mine.len() != other.len() {
                mine.len() > other.len()
            } else {
                let low = |s: &BTreeSet<(u64, String)>| s.iter().map(|(_, a)| a.clone()).min();
                low(mine) < low(other) || other.is_empty()
            }
        }
        Downing::StaticQuorum => mine.len() >= quorum,
        Downing::KeepOldest => {
            let oldest_mine = mine.iter().next();
            let oldest_other = other.iter().next();
            let ours = match (oldest_mine, oldest_other) {
                (Some(a), Some(b)) => a < b,
                (Some(_), None) => true,
                (None, _) => false,
            };
            if down_if_alone && ours && mine.len() == 1 && other.len() >= 2 {
                false
            } else if down_if_alone && !ours && other.len() == 1 && mine.len() >= 2 {
                true
            } else {
                ours
            }
        }
    }
}

impl Engine {
    pub(super) fn downing(&mut self, now: u64) {
        if self.cfg.downing == Downing::Off {
            return;
        }
        if self.stable.at_cgen != self.cgen {
            let unreachable = self.gossip.unreachable();
            let mut fp = String::new();
            for m in self.gossip.live() {
                fp.push_str(&format!("{}/{}/{:?};", m.id.addr, m.id.uid, m.status));
            }
            for u in &unreachable {
                fp.push_str(u);
                fp.push('!');
            }
            let fingerprint = stable_hash(fp.as_bytes());
            if fingerprint != self.stable.fingerprint {
                self.stable.fingerprint = fingerprint;
                self.stable.since = now;
            }
            self.stable.at_cgen = self.cgen;
            self.stable.any_unreachable = !unreachable.is_empty();
        }
        if !self.stable.any_unreachable || now.saturating_sub(self.stable.since) < self.cfg.stable_after_ms {
            return;
        }
        let unreachable = self.gossip.unreachable();
        // Sides as sets of (age, address), so the oldest member comes first.
        let side = |want_unreachable: bool| -> BTreeSet<(u64, String)> {
            self.gossip
                .live()
                .filter(|m| unreachable.contains(&m.id.addr) == want_unreachable)
                .map(|m| (m.age_key().0, m.id.addr.clone()))
                .collect()
        };
        let (mine, other) = (side(false), side(true));
        let list = |s: &BTreeSet<(u64, String)>| {
            let addrs: Vec<&str> = s.iter().map(|(_, a)| a.as_str()).collect();
            troupe_remote::logging::esc(&addrs.join(","))
        };
        if survives(self.cfg.downing, &mine, &other, self.cfg.quorum_size, self.cfg.down_if_alone) {
            if self.gossip.leader().as_deref() == Some(self.me.addr.as_str()) {
                let mut downed = Vec::new();
                for (_, addr) in &other {
                    if self.mark_down(addr) {
                        downed.push(addr.as_str());
                    }
                }
                if !downed.is_empty() {
                    tracing::warn!(
                        node = %self.me.addr,
                        strategy = self.cfg.downing.as_str(),
                        side = "surviving",
                        kept = %list(&mine),
                        downed = %troupe_remote::logging::esc(&downed.join(",")),
                        "downing decision: this side survives; its leader downs the other side"
                    );
                }
                self.leader_actions();
            }
        } else {
            let me = self.me.addr.clone();
            if self.gossip.member(&me).is_some_and(|m| m.status.is_live()) {
                tracing::warn!(
                    node = %me,
                    strategy = self.cfg.downing.as_str(),
                    side = "losing",
                    kept = %list(&other),
                    downed = %list(&mine),
                    "downing decision: this side loses; this node downs itself"
                );
                self.mark_down(&me);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(addrs: &[(u64, &str)]) -> BTreeSet<(u64, String)> {
        addrs.iter().map(|(a, s)| (*a, (*s).to_owned())).collect()
    }

    #[test]
    fn exactly_one_side_survives_a_partition() {
        let a = side(&[(1, "a"), (4, "d"), (5, "e")]);
        let b = side(&[(2, "b"), (3, "c")]);
        for s in [Downing::KeepMajority, Downing::KeepOldest] {
            assert!(survives(s, &a, &b, 0, true) != survives(s, &b, &a, 0, true), "{s:?}");
        }
        assert!(survives(Downing::StaticQuorum, &a, &b, 3, true));
        assert!(!survives(Downing::StaticQuorum, &b, &a, 3, true));
        let (x, y) = (side(&[(1, "b"), (2, "c")]), side(&[(3, "a"), (4, "d")]));
        assert!(
            !survives(Downing::KeepMajority, &x, &y, 0, true),
            "a tie goes to the side holding the smallest address"
        );
        assert!(survives(Downing::KeepMajority, &y, &x, 0, true));
        assert!(survives(Downing::KeepOldest, &x, &y, 0, true), "keep-oldest: b (age 1) is on x");
        let (p, q) = (side(&[(1, "a")]), side(&[(2, "b")]));
        assert!(survives(Downing::KeepOldest, &p, &q, 0, true) && !survives(Downing::KeepOldest, &q, &p, 0, true));
    }

    #[test]
    fn keep_oldest_alone_loses_with_down_if_alone() {
        let alone = side(&[(1, "a")]);
        let rest = side(&[(2, "b"), (3, "c")]);
        assert!(!survives(Downing::KeepOldest, &alone, &rest, 0, true));
        assert!(survives(Downing::KeepOldest, &rest, &alone, 0, true));
        assert!(survives(Downing::KeepOldest, &alone, &rest, 0, false));
        assert!(!survives(Downing::KeepOldest, &rest, &alone, 0, false));
    }
}
