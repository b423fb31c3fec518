//! Troupe: the `memory` benchmark's actor work: spawn `n` idle actors (Troupe runs the start
//! phase inside `spawn`, so each has started when `spawn` returns), then stop them all and
//! wait for their ends; then the same again, for the leak check. The resident-set bookkeeping is in `crate::memory`.

use std::time::{Duration, Instant};

use troupe::{Actor, ActorRef, Ctx};

use crate::memory::Probe;
use crate::Error;

struct Idle;

impl Actor for Idle {
    type Msg = ();

    async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {}
}

async fn stop_all(actors: Vec<ActorRef<()>>) {
    for a in &actors {
        a.stop();
    }
    for a in &actors {
        a.terminated().await;
    }
}

/// Spawns `n` idle actors between `probe.before()` and `probe.after()`, then stops them all.
/// Returns the spawn time.
pub(crate) fn spawn_idle(n: u64, probe: &mut Probe) -> Result<Duration, Error> {
    let rt = crate::util::tokio_runtime()?;
    rt.block_on(async {
        probe.before();
        let t0 = Instant::now();
        let actors: Vec<ActorRef<()>> = (0..n).map(|_| troupe::spawn(Idle)).collect();
        let spawn = t0.elapsed();
        probe.after();
        stop_all(actors).await;
        probe.released();
        // The leak check's second round (`crate::memory`, rule 5).
        stop_all((0..n).map(|_| troupe::spawn(Idle)).collect()).await;
        probe.released_again();
        Ok(spawn)
    })
}
