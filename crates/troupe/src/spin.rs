//! The cell's lock: a test-and-test-and-set spin lock that yields its thread after a short
//! spin, behind `lock_api`'s `Mutex` so it has `parking_lot`'s shape (`lock` returns the guard).
//!
//! Why not `parking_lot::Mutex`: its unlock is a compare-and-swap (it must see whether a
//! waiter parked), a locked instruction that drains the store buffer. An actor's message takes
//! the cell's lock two or three times (the send, the receive, the look that finds the mailbox
//! empty), so on one worker those unlocks were a measurable share of a message's cost
//! (`docs/results/micro-spin-2026-12-07/`). Here an unlock is a plain release store.
//!
//! Why a spin lock is sound here: every critical section over a cell is short and never waits (a
//! queue push or pop, a few flags, a waker clone); what the cell drops (queued messages, a parked
//! state) it drops after the unlock, so no user code runs under it. A thread that finds it held
//! spins with a growing pause, then yields its time slice (`std::thread::yield_now`) between looks,
//! so a holder descheduled by the OS or the hypervisor is not fought for the core. The lock is one
//! byte, as `parking_lot`'s is, so a cell's size does not change.

use crate::loom::sync::atomic::{AtomicBool, Ordering};

/// Pauses (doubling each time) before a waiter starts yielding its thread.
const SPINS: u32 = 6;

/// The raw lock (see the module's doc).
pub(crate) struct RawSpin {
    locked: AtomicBool,
}

impl RawSpin {
    /// Takes the lock, waiting for it if held.
    #[inline]
    fn acquire(&self) {
        if self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            self.acquire_contended();
        }
    }

    /// Releases it: a plain store (release), which publishes the holder's writes to the next.
    #[inline]
    fn release(&self) {
        self.locked.store(false, Ordering::Release);
    }

    /// The lock was held: wait for it to look free (reading only, so the line stays shared
    /// while it waits), then try again. Pauses grow from 1 to 2^`SPINS` spin hints; past
    /// that each look yields the thread first.
    #[cold]
    #[inline(never)]
    fn acquire_contended(&self) {
        let mut round = 0u32;
        loop {
            while self.locked.load(Ordering::Relaxed) {
                if cfg!(all(test, troupe_loom)) {
                    // loom needs a spinning thread to yield, or it explores the spin for ever.
                    crate::loom::thread::yield_now();
                } else if round < SPINS {
                    for _ in 0..(1u32 << round) {
                        std::hint::spin_loop();
                    }
                    round += 1;
                } else {
                    crate::loom::thread::yield_now();
                }
            }
            if self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                return;
            }
        }
    }
}

// SAFETY: `lock` returns only once this thread's compare-and-swap moved `locked` from false
// to true (acquire), and `unlock` (release) is called only by the holder, so at most one
// holder exists at a time and each sees the previous holder's writes (the loom model
// `the_spin_lock_publishes_the_holders_writes` checks exactly this).
#[cfg(not(all(test, troupe_loom)))]
unsafe impl lock_api::RawMutex for RawSpin {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawSpin = RawSpin { locked: AtomicBool::new(false) };

    type GuardMarker = lock_api::GuardSend;

    #[inline]
    fn lock(&self) {
        self.acquire();
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.locked.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    #[inline]
    unsafe fn unlock(&self) {
        self.release();
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.locked.load(Ordering::Relaxed)
    }
}

/// A mutex over [`RawSpin`].
#[cfg(not(all(test, troupe_loom)))]
pub(crate) type Mutex<T> = lock_api::Mutex<RawSpin, T>;

/// Its guard.
#[cfg(not(all(test, troupe_loom)))]
pub(crate) type MutexGuard<'a, T> = lock_api::MutexGuard<'a, RawSpin, T>;

/// The lock's own loom model (run with the cell's: `scripts/loom.sh`).
#[cfg(all(test, troupe_loom))]
mod models {
    use super::RawSpin;
    use crate::loom::sync::atomic::AtomicBool;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;

    /// Two threads each take the lock, add one to a plain (unsynchronised) cell, and release
    /// it. loom tracks every access to the cell: were the release store not ordered after the
    /// write (or the take not ordered before the read), it would report the two accesses as a
    /// data race; a lost update would fail the sum.
    #[test]
    fn the_spin_lock_publishes_the_holders_writes() {
        loom::model(|| {
            let lock = Arc::new((RawSpin { locked: AtomicBool::new(false) }, UnsafeCell::new(0u32)));
            let other = lock.clone();
            let t = loom::thread::spawn(move || {
                other.0.acquire();
                // SAFETY: under the lock.
                other.1.with_mut(|v| unsafe { *v += 1 });
                other.0.release();
            });
            lock.0.acquire();
            // SAFETY: under the lock.
            lock.1.with_mut(|v| unsafe { *v += 1 });
            lock.0.release();
            t.join().expect("the model's thread panicked");
            lock.0.acquire();
            // SAFETY: under the lock, the other thread joined.
            let sum = lock.1.with(|v| unsafe { *v });
            lock.0.release();
            assert_eq!(sum, 2);
        });
    }
}

#[cfg(all(test, not(troupe_loom)))]
mod tests {
    use super::Mutex;
    use std::sync::Arc;

    /// Two threads each add to a counter under the lock 100,000 times: every increment
    /// survives, so the lock excludes (a lost update would show as a smaller sum).
    #[test]
    fn the_spin_lock_excludes_two_threads() {
        let m = Arc::new(Mutex::new(0u64));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for _ in 0..100_000 {
                        let mut g = m.lock();
                        // A read and a write apart, so an unexcluded pair would lose one.
                        let v = *g;
                        std::hint::black_box(&v);
                        *g = v + 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("a thread panicked");
        }
        assert_eq!(*m.lock(), 200_000);
    }

    #[test]
    fn the_spin_lock_is_one_byte() {
        assert_eq!(std::mem::size_of::<Mutex<()>>(), 1);
        assert!(m_try_lock_fails_while_held());
    }

    fn m_try_lock_fails_while_held() -> bool {
        let m = Mutex::new(1u8);
        let g = m.lock();
        let refused = m.try_lock().is_none();
        drop(g);
        refused && m.try_lock().is_some()
    }
}
