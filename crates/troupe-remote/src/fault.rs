//! Built-in fault injection (seed 003 §2.11's test kit; Partisan's interposition): per peer
//! and per channel, a seeded drop probability, a delay range, a duplication probability, and
//! partitions injected and healed at run time.
//!
//! Rules:
//! 1. Off by default: with no rule set, the send and receive paths pay one relaxed atomic load.
//! 2. A rule applies to frames this node sends to the peer on the channel; a rule without a
//!    channel applies to every channel except `control` (the runtime's own traffic), which is
//!    affected only by a rule naming it or by a partition.
//! 3. A partition drops every frame to and from the peer, on every channel, heartbeats
//!    included, so a long enough partition makes the peer go down on both sides; healing lets
//!    traffic (and reconnection) resume.
//! 4. Decisions come from one ChaCha8 generator per node seeded by the rule's seed, so a run
//!    with the same sends makes the same decisions.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// What to do to frames matching a rule.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultConfig {
    /// Probability of dropping a frame (0..=1).
    pub drop: f64,
    /// Probability of sending a frame twice (0..=1).
    pub duplicate: f64,
    /// Minimum added delay in microseconds.
    pub delay_min_us: u64,
    /// Maximum added delay in microseconds (a frame is delayed by a uniform draw in the range).
    pub delay_max_us: u64,
    /// Seed of the decisions.
    pub seed: u64,
}

/// The verdict for one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Pass,
    Drop,
    /// Send it `copies` times (1 or 2) after `delay`.
    Send {
        copies: u8,
        delay: Duration,
    },
}

#[derive(Default)]
struct Table {
    rules: HashMap<(Option<String>, Option<String>), FaultConfig>,
    partitioned: HashSet<String>,
    rng: Option<ChaCha8Rng>,
}

/// The node's fault rules.
#[derive(Default)]
pub(crate) struct Faults {
    active: AtomicBool,
    table: Mutex<Table>,
}

impl Faults {
    /// Rule 1: the only cost when off.
    #[inline]
    pub(crate) fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    fn refresh(&self, t: &Table) {
        self.active.store(!t.rules.is_empty() || !t.partitioned.is_empty(), Ordering::Relaxed);
    }

    pub(crate) fn set(&self, peer: Option<String>, channel: Option<String>, cfg: FaultConfig) {
        let mut t = self.table.lock();
        t.rng = Some(ChaCha8Rng::seed_from_u64(cfg.seed));
        t.rules.insert((peer, channel), cfg);
        self.refresh(&t);
    }

    pub(crate) fn clear(&self) {
        let mut t = self.table.lock();
        t.rules.clear();
        t.partitioned.clear();
        self.refresh(&t);
    }

    pub(crate) fn partition(&self, peer: &str, on: bool) {
        let mut t = self.table.lock();
        if on {
            t.partitioned.insert(peer.to_owned());
        } else {
            t.partitioned.remove(peer);
        }
        self.refresh(&t);
    }

    pub(crate) fn is_partitioned(&self, peer: &str) -> bool {
        self.active() && self.table.lock().partitioned.contains(peer)
    }

    /// Rules 2-4 for a frame to `peer` (its address) on `channel`.
    pub(crate) fn verdict(&self, peer: &str, channel: &str) -> Verdict {
        let mut t = self.table.lock();
        if t.partitioned.contains(peer) {
            return Verdict::Drop;
        }
        let keys = [
            (Some(peer.to_owned()), Some(channel.to_owned())),
            (None, Some(channel.to_owned())),
            (Some(peer.to_owned()), None),
            (None, None),
        ];
        let rule = keys
            .iter()
            .enumerate()
            .find_map(|(i, k)| t.rules.get(k).filter(|_| channel != "control" || i < 2).cloned());
        let Some(rule) = rule else {
            return Verdict::Pass;
        };
        let rng = t.rng.get_or_insert_with(|| ChaCha8Rng::seed_from_u64(rule.seed));
        if rule.drop > 0.0 && rng.gen_bool(rule.drop.clamp(0.0, 1.0)) {
            return Verdict::Drop;
        }
        let copies = if rule.duplicate > 0.0 && rng.gen_bool(rule.duplicate.clamp(0.0, 1.0)) { 2 } else { 1 };
        let lo = rule.delay_min_us.min(rule.delay_max_us);
        let hi = rule.delay_min_us.max(rule.delay_max_us);
        let delay = Duration::from_micros(if hi > lo { rng.gen_range(lo..=hi) } else { lo });
        Verdict::Send { copies, delay }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_by_default_and_partition_drops_everything() {
        let f = Faults::default();
        assert!(!f.active());
        f.partition("p", true);
        assert!(f.active());
        assert_eq!(f.verdict("p", "control"), Verdict::Drop);
        assert_eq!(f.verdict("q", "default"), Verdict::Pass);
        f.partition("p", false);
        assert!(!f.active());
    }

    #[test]
    fn drop_rate_is_seeded_and_about_right_and_control_is_spared() {
        let run = || {
            let f = Faults::default();
            f.set(None, None, FaultConfig { drop: 0.2, seed: 42, ..Default::default() });
            let v: Vec<_> = (0..10_000).map(|_| f.verdict("p", "default")).collect();
            assert_eq!(f.verdict("p", "control"), Verdict::Pass);
            v
        };
        let a = run();
        assert_eq!(a, run());
        let drops = a.iter().filter(|v| **v == Verdict::Drop).count();
        assert!((1800..2200).contains(&drops), "{drops}");
    }
}
