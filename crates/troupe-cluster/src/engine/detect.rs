//! Heartbeats and reachability records (rule 5 of the engine): who this node monitors, its
//! phi-accrual detectors, and its own verdicts in the gossip.
//!
//! A verdict that changes is a `tracing` event, `reachability changed` (target under
//! `troupe_cluster`; WARN when the subject became unreachable, INFO when reachable again):
//! `observer` (this node), `subject`, `reachable`, `phi` and `threshold` (`phi_threshold`).

use troupe_remote::logging::Esc;

use crate::gossip::Reach;
use crate::member::MemberStatus;
use crate::phi::PhiDetector;
use crate::ring::stable_hash;
use crate::wire::Wire;

use super::{Engine, Out};

impl Engine {
    /// The members this node monitors: the `monitored_by` live members after it on the ring;
    /// on an overlay, its neighbours among the live members (rule 9).
    pub(crate) fn monitored(&self) -> Vec<(String, u64)> {
        if self.neighbours.is_some() {
            let me = self.me.addr.as_str();
            let live: Vec<(String, u64)> = self
                .gossip
                .live()
                .filter(|m| m.status != MemberStatus::Removed && m.id.addr != me)
                .map(|m| (m.id.addr.clone(), m.id.uid))
                .collect();
            let near = self.on_overlay(live.iter().map(|(a, _)| a.clone()).collect());
            if near.len() < live.len() {
                return live.into_iter().filter(|(a, _)| near.contains(a) || self.former.contains_key(a)).collect();
            }
        }
        self.ring_monitored()
    }

    fn ring_monitored(&self) -> Vec<(String, u64)> {
        let mut ring: Vec<(u64, &str, u64)> = self
            .gossip
            .live()
            .filter(|m| m.status != MemberStatus::Removed)
            .map(|m| (stable_hash(m.id.addr.as_bytes()), m.id.addr.as_str(), m.id.uid))
            .collect();
        ring.sort_unstable();
        let Some(pos) = ring.iter().position(|(_, a, _)| *a == self.me.addr) else { return Vec::new() };
        let n = ring.len();
        (1..n).take(self.cfg.monitored_by).map(|k| ring[(pos + k) % n]).map(|(_, a, u)| (a.to_owned(), u)).collect()
    }

    pub(super) fn heartbeats(&mut self, now: u64, out: &mut Vec<Out>) {
        if now < self.next_hb {
            return;
        }
        self.next_hb = now + self.cfg.heartbeat_interval_ms;
        // Rule 9: former neighbours are monitored a while, and while unreachable.
        let window = super::FORMER_HEARTBEATS * self.cfg.heartbeat_interval_ms;
        let unreachable = self.gossip.unreachable();
        let live: Vec<String> = self.gossip.live().map(|m| m.id.addr.clone()).collect();
        self.former.retain(|a, since| {
            if *since == 0 {
                *since = now;
            }
            live.contains(a) && (unreachable.contains(a) || now.saturating_sub(*since) < window)
        });
        let subjects = self.monitored();
        // Detectors for members no longer monitored go, and so do our verdicts on them: a
        // verdict nobody keeps up to date must not keep a member unreachable.
        let stale: Vec<String> = self
            .detectors
            .iter()
            .filter(|(a, (u, _))| !subjects.iter().any(|(s, su)| s == *a && su == u))
            .map(|(a, _)| a.clone())
            .collect();
        for a in stale {
            self.detectors.remove(&a);
            if self.set_verdict(&a, false) {
                let observer = self.me.addr.as_str();
                tracing::info!(observer, subject = %Esc(&a), reachable = true, "reachability changed: no longer monitored");
            }
        }
        self.hb_seq += 1;
        for (addr, uid) in subjects {
            let cfg = &self.cfg;
            self.detectors.entry(addr.clone()).or_insert_with(|| {
                let mut d = PhiDetector::new(
                    cfg.heartbeat_interval_ms as f64,
                    cfg.min_std_dev_ms as f64,
                    cfg.acceptable_pause_ms as f64,
                    cfg.max_sample_size,
                );
                // The first answer is expected one interval from now: judge silence from here.
                d.heartbeat(now as f64);
                (uid, d)
            });
            self.stats.heartbeats_out += 1;
            out.push(Out::Send(addr, Wire::Heartbeat { from: self.me.addr.clone(), seq: self.hb_seq }));
        }
    }

    pub(super) fn reachability(&mut self, now: u64) {
        let verdicts: Vec<(String, bool)> = self
            .detectors
            .iter()
            .map(|(a, (_, d))| (a.clone(), !d.is_available(now as f64, self.cfg.phi_threshold)))
            .collect();
        for (addr, unreachable) in verdicts {
            if self.set_verdict(&addr, unreachable) {
                let phi = self.detectors.get(&addr).map_or(0.0, |(_, d)| d.phi(now as f64));
                let threshold = self.cfg.phi_threshold;
                let observer = self.me.addr.as_str();
                if unreachable {
                    tracing::warn!(observer, subject = %Esc(&addr), reachable = false, phi, threshold, "reachability changed");
                } else {
                    tracing::info!(observer, subject = %Esc(&addr), reachable = true, phi, threshold, "reachability changed");
                }
            }
        }
    }

    /// Phi of every member this node monitors at `now` (ms), as (address, name, phi).
    pub(crate) fn phis(&self, now: u64) -> Vec<(String, String, f64)> {
        self.detectors
            .iter()
            .map(|(a, (_, d))| {
                let name = self.gossip.member(a).map(|m| m.id.name.clone()).unwrap_or_default();
                (a.clone(), name, d.phi(now as f64))
            })
            .collect()
    }

    /// Records this node's verdict on `subject` when it differs from the one it published;
    /// true when it did.
    fn set_verdict(&mut self, subject: &str, unreachable: bool) -> bool {
        let Some(sub) = self.gossip.member(subject) else { return false };
        let subject_uid = sub.id.uid;
        let key = (self.me.addr.clone(), subject.to_owned());
        let current = self.gossip.reach.get(&key);
        let mine = current.filter(|r| r.observer_uid == self.me.uid);
        let published = mine.is_some_and(|r| r.unreachable && r.subject_uid == subject_uid);
        if published == unreachable || (mine.is_none() && !unreachable) {
            return false;
        }
        let version = mine.map_or(1, |r| r.version + 1);
        gm!(self).reach.insert(key, Reach { observer_uid: self.me.uid, version, subject_uid, unreachable });
        gm!(self).touched(&self.me.addr);
        self.changed();
        true
    }
}
