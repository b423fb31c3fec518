//! ractor: `fjthrput` (many messages to a fixed set of actors) and `fjcreate` (one message to
//! each of many short-lived actors).

use std::time::{Duration, Instant};

use ::ractor::{Actor, ActorProcessingErr, ActorRef};

use super::{sink, spawn, NAME};
use crate::bench::{check, fj_compute, Bench, Params};
use crate::util::{failed, wait};
use crate::Error;

struct Worker;

struct WorkerState {
    expected: u64,
    processed: u64,
    sink: ActorRef<u64>,
}

/// The one message a worker gets, `n` times.
struct Work;

impl Actor for Worker {
    type Msg = Work;
    type State = WorkerState;
    type Arguments = (u64, ActorRef<u64>);

    async fn pre_start(
        &self,
        _: ActorRef<Work>,
        (expected, sink): Self::Arguments,
    ) -> Result<WorkerState, ActorProcessingErr> {
        Ok(WorkerState { expected, processed: 0, sink })
    }

    async fn handle(&self, myself: ActorRef<Work>, _: Work, st: &mut WorkerState) -> Result<(), ActorProcessingErr> {
        st.processed += fj_compute(37.2);
        if st.processed == st.expected {
            st.sink.cast(st.processed)?;
            myself.stop(None);
        }
        Ok(())
    }
}

pub(super) async fn fjthrput(p: &Params) -> Result<Duration, Error> {
    let (n, actors) = (p.get("n"), p.get("actors"));
    let t0 = Instant::now();
    let (sink, rx) = sink(actors).await?;
    let mut workers = Vec::with_capacity(actors as usize);
    for _ in 0..actors {
        workers.push(spawn(Worker, (n, sink.clone())).await?.0);
    }
    for _ in 0..n {
        for w in &workers {
            w.cast(Work).map_err(|e| failed("ractor fjthrput", e))?;
        }
    }
    let total = wait(rx, "ractor fjthrput").await?;
    let elapsed = t0.elapsed();
    check(Bench::FjThrput, NAME, "messages processed", total, n * actors)?;
    Ok(elapsed)
}

struct Ephemeral;

/// The one message a short-lived actor gets.
struct Hello;

impl Actor for Ephemeral {
    type Msg = Hello;
    type State = ActorRef<u64>;
    type Arguments = ActorRef<u64>;

    async fn pre_start(&self, _: ActorRef<Hello>, sink: ActorRef<u64>) -> Result<ActorRef<u64>, ActorProcessingErr> {
        Ok(sink)
    }

    async fn handle(
        &self,
        myself: ActorRef<Hello>,
        _: Hello,
        sink: &mut ActorRef<u64>,
    ) -> Result<(), ActorProcessingErr> {
        sink.cast(fj_compute(37.2))?;
        myself.stop(None);
        Ok(())
    }
}

pub(super) async fn fjcreate(p: &Params) -> Result<Duration, Error> {
    let n = p.get("n");
    let t0 = Instant::now();
    let (sink, rx) = sink(n).await?;
    for _ in 0..n {
        let (a, _) = spawn(Ephemeral, sink.clone()).await?;
        a.cast(Hello).map_err(|e| failed("ractor fjcreate", e))?;
    }
    let total = wait(rx, "ractor fjcreate").await?;
    let elapsed = t0.elapsed();
    check(Bench::FjCreate, NAME, "actors processed", total, n)?;
    Ok(elapsed)
}
