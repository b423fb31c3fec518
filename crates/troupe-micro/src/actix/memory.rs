//! actix: the `memory` benchmark's actor work: start `n` idle actors on the System's arbiter,
//! wait until every one has run its `started` hook, then stop them all and wait until every
//! one has stopped. The resident-set bookkeeping is in `crate::memory`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ::actix::prelude::*;

use super::Stop;
use crate::memory::Probe;
use crate::util::ITERATION_DEADLINE;
use crate::{Error, ErrorKind};

struct Idle {
    started: Arc<AtomicU64>,
    stopped: Arc<AtomicU64>,
}

impl Actor for Idle {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Context<Self>) {
        self.started.fetch_add(1, Ordering::Relaxed);
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.stopped.fetch_add(1, Ordering::Relaxed);
    }
}

impl Handler<Stop> for Idle {
    type Result = ();
    fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

/// Yields to the arbiter until `counter` reaches `n` (bounded by the iteration deadline).
async fn until(counter: &AtomicU64, n: u64, what: &str) -> Result<(), Error> {
    let deadline = Instant::now() + ITERATION_DEADLINE;
    while counter.load(Ordering::Relaxed) < n {
        if Instant::now() > deadline {
            return Err(Error::new(ErrorKind::Failed, format!("actix memory: {what} timed out")));
        }
        tokio::task::yield_now().await;
    }
    Ok(())
}

/// Spawns `n` idle actors between `probe.before()` and `probe.after()`, then stops them all.
/// Returns the spawn time.
pub(crate) fn spawn_idle(n: u64, probe: &mut Probe) -> Result<Duration, Error> {
    let shared = Arc::new(Mutex::new(std::mem::take(probe)));
    let inner = shared.clone();
    let spawn = super::in_system(move || async move {
        let started = Arc::new(AtomicU64::new(0));
        let stopped = Arc::new(AtomicU64::new(0));
        lock(&inner).before();
        let t0 = Instant::now();
        let actors: Vec<Addr<Idle>> =
            (0..n).map(|_| Idle { started: started.clone(), stopped: stopped.clone() }.start()).collect();
        until(&started, n, "start").await?;
        let spawn = t0.elapsed();
        lock(&inner).after();
        for a in &actors {
            a.do_send(Stop);
        }
        drop(actors);
        until(&stopped, n, "stop").await?;
        Ok(spawn)
    })?;
    *probe = std::mem::take(&mut *lock(&shared));
    Ok(spawn)
}

fn lock(p: &Mutex<Probe>) -> std::sync::MutexGuard<'_, Probe> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}
