//! The sweeper: one background thread that lets actors idle for about a second give up their
//! tokio task (`cell.rs`, rule 4), so a million actors that once worked and now wait cost no
//! more than a million that never worked.
//!
//! An actor registers itself once when it first waits on an empty mailbox. Every period the
//! sweeper visits each registered actor: one that took a message since the last visit stays
//! registered; one that has only waited is asked to park and leaves the list; idle or dead ones
//! leave the list. The thread sleeps on a condition variable while the list is empty.

use std::sync::{LazyLock, Weak};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// How often the sweeper visits waiting actors.
const PERIOD: Duration = Duration::from_secs(1);

/// An actor the sweeper can visit; returns whether it stays on the list.
pub(crate) trait Sweepable: Send + Sync {
    #[must_use = "false means it leaves the sweeper's list"]
    fn sweep(self: std::sync::Arc<Self>) -> bool;
}

struct Sweeper {
    list: Mutex<Vec<Weak<dyn Sweepable>>>,
    nonempty: Condvar,
}

static SWEEPER: LazyLock<&'static Sweeper> = LazyLock::new(|| {
    let s: &'static Sweeper = Box::leak(Box::new(Sweeper { list: Mutex::new(Vec::new()), nonempty: Condvar::new() }));
    std::thread::Builder::new()
        .name("troupe-sweeper".into())
        .spawn(move || s.run())
        .expect("troupe: cannot start the sweeper thread");
    s
});

pub(crate) fn register(actor: Weak<dyn Sweepable>) {
    // The loom models (`cell.rs`, "Loom models") visit their cells themselves: this thread
    // would touch the cells' loom primitives from outside the model.
    if cfg!(all(test, troupe_loom)) {
        return;
    }
    let s = *SWEEPER;
    let mut list = s.list.lock();
    list.push(actor);
    if list.len() == 1 {
        s.nonempty.notify_one();
    }
}

impl Sweeper {
    fn run(&self) {
        loop {
            {
                let mut list = self.list.lock();
                while list.is_empty() {
                    self.nonempty.wait(&mut list);
                }
            }
            std::thread::sleep(PERIOD);
            let visiting = std::mem::take(&mut *self.list.lock());
            let kept: Vec<_> = visiting.into_iter().filter(|w| w.upgrade().is_some_and(|a| a.sweep())).collect();
            self.list.lock().extend(kept);
        }
    }
}
