//! The synchronisation primitives whose interleavings the cell's loom models explore
//! (`cell.rs`, "Loom models"), behind one path so the models can swap them.
//!
//! In every ordinary build (the library, its tests, its users) these are re-exports: the cell's
//! spin lock (`spin.rs`, with `parking_lot`'s shape) and `std`'s atomics, so the hot path compiles
//! to exactly what it would without the facade. Only in this crate's own unit tests built with
//! `--cfg troupe_loom` (`scripts/loom.sh`) are they `loom`'s, which record every lock and
//! atomic access and let loom try each interleaving of them. The plain `--cfg loom` is not
//! used: it switches tokio and other dependencies to builds that do not compile here.
//!
//! Only what the cell's races touch goes through here; the scheduler's thread-locals, the
//! sweeper's list and the carriers' docks use their primitives directly (the models stand in
//! for those parts, `cell.rs`, "Loom models").

#[cfg(not(all(test, troupe_loom)))]
pub(crate) mod sync {
    //! The ordinary build: the cell's spin lock (`spin.rs`) and `std`'s atomics.
    pub(crate) use crate::spin::{Mutex, MutexGuard};

    pub(crate) mod atomic {
        //! `std`'s atomics.
        pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    }
}

#[cfg(not(all(test, troupe_loom)))]
pub(crate) mod thread {
    //! The ordinary build: `std`'s yield (the spin lock's wait, `spin.rs`).
    pub(crate) use std::thread::yield_now;
}

#[cfg(all(test, troupe_loom))]
pub(crate) mod thread {
    //! The model build: loom's yield, which lets another model thread run.
    pub(crate) use loom::thread::yield_now;
}

#[cfg(all(test, troupe_loom))]
pub(crate) mod sync {
    //! The model build: loom's primitives, with the spin lock's (and `parking_lot`'s) shape (a
    //! lock that cannot be poisoned, so `lock` returns the guard itself).

    pub(crate) mod atomic {
        //! loom's atomics (orderings are `std`'s).
        pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU32};
        pub(crate) use std::sync::atomic::Ordering;
    }

    pub(crate) use loom::sync::MutexGuard;

    /// loom's mutex, locked as `parking_lot::Mutex` is.
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(loom::sync::Mutex::new(value))
        }

        /// Locks it. A model thread that panicked while holding it has already failed the
        /// model, so a poisoned lock is taken as is.
        pub(crate) fn lock(&self) -> loom::sync::MutexGuard<'_, T> {
            self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
        }
    }
}
