//! What an idle actor costs, in live heap bytes (a counting global allocator, so the figure does
//! not depend on when the allocator returns pages to the OS): a never-messaged actor (no task,
//! `cell.rs` rule 4), one just after a message (it keeps its task until the sweeper's next
//! visits), and the same one once it has parked again. One test in its own binary, so nothing
//! else allocates while it measures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use troupe::{Actor, ActorRef, Ctx};

struct Counting;
static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        // SAFETY: `p` was allocated by `System.alloc` with layout `l`.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The smallest actor, as the `memory` micro-benchmark spawns; counts the messages it handles.
struct Idle(Arc<AtomicUsize>);

impl Actor for Idle {
    type Msg = ();
    async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {
        self.0.fetch_add(1, Ordering::Release);
    }
}

#[test]
fn idle_actor_bytes_never_messaged_recently_active_and_parked_again() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let handled = Arc::new(AtomicUsize::new(0));
        // Warm the runtime's and the sweeper's lazily allocated structures first.
        let w = troupe::spawn(Idle(handled.clone()));
        w.send(()).unwrap();
        let metrics = tokio::runtime::Handle::current().metrics();
        wait("the warm-up actor to park", || metrics.num_alive_tasks() == 0).await;
        w.kill();
        w.terminated().await;
        handled.store(0, Ordering::Release);

        let n = 20_000;
        let mut refs: Vec<ActorRef<()>> = Vec::with_capacity(n);
        let per = |from: isize| (LIVE.load(Ordering::SeqCst) - from) as f64 / n as f64;
        let before = LIVE.load(Ordering::SeqCst);
        for _ in 0..n {
            refs.push(troupe::spawn(Idle(handled.clone())));
        }
        let never_messaged = per(before);
        assert_eq!(metrics.num_alive_tasks(), 0, "never-messaged actors have no task");
        for r in &refs {
            r.send(()).unwrap();
        }
        wait("every actor to handle its message", || handled.load(Ordering::Acquire) == n).await;
        let recently_active = per(before);
        wait("the actors to park again", || metrics.num_alive_tasks() == 0).await;
        let parked_again = per(before);
        eprintln!(
            "live heap per idle actor ({n} actors): never messaged {never_messaged:.1} B, just after a message \
             {recently_active:.1} B, parked again {parked_again:.1} B"
        );
        assert!(never_messaged < 320.0, "a never-messaged actor costs {never_messaged:.1} B");
        assert!(parked_again < never_messaged + 64.0, "a parked actor costs {parked_again:.1} B");
        assert!(recently_active > never_messaged, "a task costs something: {recently_active:.1} B");
        // Release builds only, where futures have their real sizes (a debug build's are larger).
        // Measured 482 B: the parked state, the activation (152 B) and its carrier's tokio task
        // (128 B since the carrier is a 24-byte future; 256 B before, 602 B in all). 489 B
        // with batches (sched.rs rule 9), when each actor of a batch but the last moved to a
        // carrier of its own to wait there. 369 B since they hand off instead (their
        // activations park in their cells, no task): the parked state and the activation, and
        // for the last actor of each batch of 16 the batch's carrier, which has a dock.
        if !cfg!(debug_assertions) {
            assert!(recently_active < 400.0, "a recently active actor costs {recently_active:.1} B");
        }
        for r in &refs {
            r.kill();
        }
    });
}

/// Waits until `cond` holds (a bounded wait for an event, polling every few milliseconds).
async fn wait(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
