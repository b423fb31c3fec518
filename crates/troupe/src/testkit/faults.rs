//! Unreliable delivery on purpose (seed 003 §2.11): a reference that drops each send with a
//! probability and delays the others by a random amount, deterministically from a seed.
//!
//! Rules:
//! 1. Every send draws from one generator seeded by `Faults::seeded(seed)` (splitmix64, written
//!    here so the sequence never changes with a dependency): first whether to drop it, then its
//!    delay. So the n-th send's fate depends only on the seed and n.
//! 2. A dropped send returns `Ok` (as a lost network message would) and is counted.
//! 3. A delayed send returns `Ok` and is sent after its delay by a task on the runtime the
//!    reference was made in (tokio's clock: a paused clock makes it instant and exact). Delayed
//!    messages may overtake each other; a target dead by then loses the message.
//! 4. With no drop and no delay a send goes straight through.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::error::SendError;
use crate::{ActorRef, AnyRef, DynSender};

/// What to do to sends: drop probability, delay range, seed.
#[derive(Clone, Copy, Debug, PartialEq)]
#[must_use]
pub struct Faults {
    seed: u64,
    drop: f64,
    delay: (Duration, Duration),
}

impl Faults {
    /// No faults yet, drawing from `seed`.
    pub fn seeded(seed: u64) -> Self {
        Self { seed, drop: 0.0, delay: (Duration::ZERO, Duration::ZERO) }
    }

    /// Drops each send with probability `p` (0.0..=1.0).
    ///
    /// # Panics
    /// When `p` is outside 0.0..=1.0.
    pub fn drop(mut self, p: f64) -> Self {
        assert!((0.0..=1.0).contains(&p), "Faults::drop: the probability must be within 0.0..=1.0, got {p}");
        self.drop = p;
        self
    }

    /// Delays each send that is not dropped by a random duration in `min..=max`.
    ///
    /// # Panics
    /// When `min > max`.
    pub fn delay(mut self, min: Duration, max: Duration) -> Self {
        assert!(min <= max, "Faults::delay: min ({min:?}) must not exceed max ({max:?})");
        self.delay = (min, max);
        self
    }
}

/// What a [`faulty`] reference did so far.
#[derive(Clone, Debug, Default)]
pub struct FaultStats(Arc<Counts>);

#[derive(Debug, Default)]
struct Counts {
    sent: AtomicU64,
    dropped: AtomicU64,
    delayed: AtomicU64,
}

impl FaultStats {
    /// Sends made through the reference.
    #[must_use]
    pub fn sent(&self) -> u64 {
        self.0.sent.load(Ordering::Relaxed)
    }

    /// Sends dropped.
    #[must_use]
    pub fn dropped(&self) -> u64 {
        self.0.dropped.load(Ordering::Relaxed)
    }

    /// Sends delayed (and sent later).
    #[must_use]
    pub fn delayed(&self) -> u64 {
        self.0.delayed.load(Ordering::Relaxed)
    }
}

/// A reference to `target` whose sends suffer `faults` (rules 1-4), and its counters. It is an
/// `ActorRef<M>` like any other: give it to the code under test in place of `target`.
///
/// # Panics
/// Outside a tokio runtime (delayed sends run on it).
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// use std::time::Duration;
/// use troupe::testkit::{faulty, Faults, TestProbe};
/// let mut probe = TestProbe::<u32>::new();
/// let (lossy, stats) = faulty(probe.actor_ref(), Faults::seeded(7).drop(0.5));
/// for n in 0..100 { lossy.send(n).unwrap(); }
/// let mut got = Vec::new();
/// while let Some(n) = probe.try_recv(Duration::from_millis(10)).await { got.push(n); }
/// assert_eq!(got.len() as u64, 100 - stats.dropped());
/// assert!((30..70).contains(&got.len()), "about half arrive: {}", got.len());
/// # }
/// ```
pub fn faulty<M: Send + 'static>(target: ActorRef<M>, faults: Faults) -> (ActorRef<M>, FaultStats) {
    let stats = FaultStats::default();
    let sender = Faulty {
        target,
        faults,
        rng: Mutex::new(faults.seed),
        stats: stats.clone(),
        rt: tokio::runtime::Handle::current(),
    };
    (ActorRef::from_dyn(Arc::new(sender)), stats)
}

struct Faulty<M> {
    target: ActorRef<M>,
    faults: Faults,
    rng: Mutex<u64>,
    stats: FaultStats,
    rt: tokio::runtime::Handle,
}

/// splitmix64: the next 64 random bits of `state`.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform draw in 0.0..1.0 from the top 53 bits.
fn unit(bits: u64) -> f64 {
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

impl<M: Send + 'static> DynSender<M> for Faulty<M> {
    fn send(&self, msg: M) -> Result<(), SendError<M>> {
        self.stats.0.sent.fetch_add(1, Ordering::Relaxed);
        let (min, max) = self.faults.delay;
        let (drop, delay) = {
            let mut s = self.rng.lock();
            let drop = unit(next(&mut s)) < self.faults.drop;
            let span = (max - min).as_nanos() as f64;
            let delay = min + Duration::from_nanos((unit(next(&mut s)) * span) as u64);
            (drop, delay)
        };
        if drop {
            self.stats.0.dropped.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        if delay.is_zero() {
            return self.target.send(msg);
        }
        self.stats.0.delayed.fetch_add(1, Ordering::Relaxed);
        let target = self.target.clone();
        self.rt.spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = target.send(msg);
        });
        Ok(())
    }

    fn any(&self) -> AnyRef {
        self.target.any()
    }
}

#[cfg(test)]
mod tests {
    use super::{next, unit};

    #[test]
    fn the_generator_is_fixed_and_uniform_enough() {
        let mut s = 1;
        let first: Vec<u64> = (0..3).map(|_| next(&mut s)).collect();
        let mut again = 1;
        assert_eq!(first, (0..3).map(|_| next(&mut again)).collect::<Vec<_>>());
        let mut s = 99;
        let below: usize = (0..10_000).filter(|_| unit(next(&mut s)) < 0.25).count();
        assert!((2_300..2_700).contains(&below), "{below}");
    }
}
