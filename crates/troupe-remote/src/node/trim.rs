//! Giving memory back to the operating system after a large session ends (issue 36). Freed
//! memory goes back to the C allocator, which keeps it for reuse: after a peer that held 64 MiB
//! of causal frames was closed, the release `troupe-node` stayed at 69 MiB resident for good.
//!
//! Rules:
//! 1. When a session ends that held at least [`TRIM_BYTES`] bytes (out-of-order or causal
//!    frames, queued replies) or [`TRIM_RELATIONS`] monitors and links, or a connection ends
//!    that held a large frame of that size being received, once they are released the node
//!    asks the allocator to return its free memory: glibc's `malloc_trim(0)`, off the
//!    runtime's workers (a blocking task), at most once per [`TRIM_EVERY`]; a release within
//!    that time is trimmed when it ends, so the last of a quick series of releases is trimmed
//!    too. Other C libraries, and programs with another global allocator (the `troupe` binary
//!    uses mimalloc, which returns memory by itself), are unaffected: nothing is called, or
//!    the call finds little to return.
//! 2. `trims` in the stats counts the calls.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Rule 1: bytes a session must have held for its end to trim.
pub(crate) const TRIM_BYTES: usize = 4 << 20;
/// Rule 1: relations a session must have held for its end to trim.
pub(crate) const TRIM_RELATIONS: usize = 10_000;
/// Rule 1: the shortest time between two trims.
pub(crate) const TRIM_EVERY: Duration = Duration::from_secs(1);

static TRIMS: AtomicU64 = AtomicU64::new(0);
/// Milliseconds after [`epoch`] of the last trim (0: none yet).
static LAST_MS: AtomicU64 = AtomicU64::new(0);
/// Rule 1: a trim is due when the current interval ends.
static DEFERRED: AtomicBool = AtomicBool::new(false);

fn epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Trims done (rule 2), process-wide.
pub(crate) fn trims() -> u64 {
    TRIMS.load(Ordering::Relaxed)
}

/// Rule 1: a session that held `bytes` and `relations` has been released.
pub(crate) fn released(bytes: usize, relations: usize) {
    if bytes < TRIM_BYTES && relations < TRIM_RELATIONS {
        return;
    }
    let now = epoch().elapsed().as_millis() as u64 + 1;
    let last = LAST_MS.load(Ordering::Relaxed);
    let every = TRIM_EVERY.as_millis() as u64;
    if last != 0 && now < last + every {
        // Trimmed when the interval ends, once however many releases come meanwhile.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            if !DEFERRED.swap(true, Ordering::AcqRel) {
                let wait = Duration::from_millis(last + every - now);
                rt.spawn(async move {
                    tokio::time::sleep(wait).await;
                    DEFERRED.store(false, Ordering::Release);
                    released(TRIM_BYTES, 0);
                });
            }
        }
        return;
    }
    if LAST_MS.compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed).is_err() {
        return; // another thread trims now
    }
    TRIMS.fetch_add(1, Ordering::Relaxed);
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => drop(rt.spawn_blocking(trim)),
        Err(_) => trim(),
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    extern "C" {
        fn malloc_trim(pad: usize) -> std::os::raw::c_int;
    }
    // SAFETY: `malloc_trim` takes no pointers and touches only the allocator's own free
    // memory; glibc makes it thread-safe (it locks each arena in turn). Measured to pay: the
    // release `troupe-node` went from 69 MiB to a few MiB resident after a 64 MiB causal
    // flood was closed (docs/distribution.md, "Limits under abuse").
    unsafe {
        malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}
