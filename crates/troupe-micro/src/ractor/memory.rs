//! ractor: the `memory` benchmark's actor work: spawn `n` idle actors (each `spawn` returns
//! once the actor has started), then stop them all and wait for their ends. The resident-set
//! bookkeeping is in `crate::memory`.

use std::time::{Duration, Instant};

use ::ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::memory::Probe;
use crate::Error;

struct Idle;

impl Actor for Idle {
    type Msg = ();
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<()>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
}

/// Spawns `n` idle actors between `probe.before()` and `probe.after()`, then stops them all.
/// Returns the spawn time.
pub(crate) fn spawn_idle(n: u64, probe: &mut Probe) -> Result<Duration, Error> {
    let rt = crate::util::tokio_runtime()?;
    rt.block_on(async {
        probe.before();
        let t0 = Instant::now();
        let mut actors = Vec::with_capacity(n as usize);
        for _ in 0..n {
            actors.push(super::spawn(Idle, ()).await?);
        }
        let spawn = t0.elapsed();
        probe.after();
        for (a, _) in &actors {
            a.stop(None);
        }
        for (_, h) in actors {
            let _ = h.await;
        }
        Ok(spawn)
    })
}
