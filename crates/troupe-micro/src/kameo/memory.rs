//! kameo: the `memory` benchmark's actor work: spawn `n` idle actors with the default mailbox,
//! wait until each has started, then stop them all. The resident-set bookkeeping is in
//! `crate::memory`.

use std::time::{Duration, Instant};

use ::kameo::actor::{ActorRef, Spawn};
use ::kameo::Actor;

use crate::memory::Probe;
use crate::Error;

#[derive(Actor)]
struct Idle;

/// Spawns `n` idle actors between `probe.before()` and `probe.after()` (which read the
/// resident set), then stops them all. Returns the spawn time.
pub(crate) fn spawn_idle(n: u64, probe: &mut Probe) -> Result<Duration, Error> {
    let rt = crate::util::tokio_runtime()?;
    rt.block_on(async {
        probe.before();
        let t0 = Instant::now();
        let actors: Vec<ActorRef<Idle>> = (0..n).map(|_| Idle::spawn(Idle)).collect();
        for a in &actors {
            a.wait_for_startup().await;
        }
        let spawn = t0.elapsed();
        probe.after();
        for a in &actors {
            let _ = a.stop_gracefully().await;
        }
        for a in &actors {
            a.wait_for_shutdown().await;
        }
        Ok(spawn)
    })
}
