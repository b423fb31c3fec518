//! No leaks: spawning many actors, making them all work, then stopping them all returns the
//! live heap to where it started. Measured with a counting global allocator (live bytes), which,
//! unlike RSS, does not depend on when the allocator hands memory back to the OS.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

use troupe::{Actor, Ctx, ReplyTo};

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

struct Worker(Vec<u8>);

enum Msg {
    Grow,
    Ping(ReplyTo<()>),
}

impl Actor for Worker {
    type Msg = Msg;
    async fn handle(&mut self, m: Msg, _: &mut Ctx<Self>) {
        match m {
            Msg::Grow => self.0.extend_from_slice(&[0u8; 64]),
            Msg::Ping(r) => r.send(()),
        }
    }
}

#[test]
fn spawning_and_stopping_many_actors_leaks_nothing() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        // Warm the runtime's own lazily allocated structures first.
        let w = troupe::spawn(Worker(Vec::new()));
        w.ask(Msg::Ping, Duration::from_secs(10)).await.unwrap();
        w.stop();
        w.terminated().await;
        let before = LIVE.load(Ordering::SeqCst);

        let n = 100_000;
        let mut refs = Vec::with_capacity(n);
        for _ in 0..n {
            let r = troupe::spawn(Worker(Vec::new()));
            r.send(Msg::Grow).ok();
            refs.push(r);
        }
        for r in &refs[..1000] {
            r.ask(Msg::Ping, Duration::from_secs(30)).await.unwrap();
        }
        let peak = LIVE.load(Ordering::SeqCst);
        for (i, r) in refs.iter().enumerate() {
            if i % 2 == 0 {
                r.stop()
            } else {
                r.kill()
            }
        }
        for r in &refs {
            r.terminated().await;
        }
        drop(refs);
        // Activation tasks finish on the workers just after the death is visible; wait for them.
        let metrics = tokio::runtime::Handle::current().metrics();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while metrics.num_alive_tasks() > 0 && tokio::time::Instant::now() < deadline {
            tokio::task::yield_now().await;
        }
        // Cells of actors that once waited are released by the sweeper's next visit (within about
        // a second: it holds a weak reference until then). Wait for that, bounded.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        while LIVE.load(Ordering::SeqCst) - before >= 64 * 1024 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let after = LIVE.load(Ordering::SeqCst);
        let per_actor_at_peak = (peak - before) / n as isize;
        let leaked = after - before;
        eprintln!("live heap: +{per_actor_at_peak} B/actor at peak, {leaked} B after stopping all");
        assert!(per_actor_at_peak > 64, "the measurement saw the actors");
        assert!(leaked < 64 * 1024, "{leaked} bytes still live after stopping {n} actors");
    });
}
